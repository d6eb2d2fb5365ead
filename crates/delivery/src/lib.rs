//! Outgoing email, from a validated request to a provider's acceptance:
//!
//! - [`OutgoingEmail`]: what one send is made of;
//! - [`mime`]: the RFC 5322 message (text and HTML alternatives, custom headers, Message-ID);
//! - [`dkim`]: the per-domain RSA key, its DNS record and the message's signature;
//! - [`tracking`]: signed open, click and unsubscribe links, and their injection into HTML;
//! - [`providers`]: SMTP (pooled, STARTTLS), Resend's `POST /emails`, and `.eml` files for
//!   development, behind one trait whose errors say whether a retry can help;
//! - [`public_host`]: the check that keeps a project's SMTP host off internal addresses;
//! - [`safe_http`]: the HTTP client for project-chosen URLs (webhook endpoints, chat alerts);
//! - [`sigv4`] and [`sns`]: Amazon SES's request signatures and its SNS event deliveries.

pub mod dkim;
pub mod mime;
pub mod provider_webhooks;
pub mod providers;
pub mod public_host;
pub mod safe_http;
pub mod sigv4;
pub mod sns;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tracking;

mod email;

pub use email::{
    EmailError, HEADER_VALUE_MAX_CHARS, OutgoingEmail, check_custom_headers, is_settable_header,
    settable_header_pattern,
};
pub use providers::{Accepted, DefaultProviderConfig, Provider, ProviderConfig, SendError};
