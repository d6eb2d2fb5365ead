//! The OAuth 2.0 authorization server both services mount: authorization code with PKCE
//! (S256 only), rotating refresh tokens, RFC 7009 revocation, RFC 8414 and RFC 9728 metadata,
//! RFC 7591 dynamic registration and RFC 8707 resource indicators, plus the first-party sign-in
//! and consent pages people approve on.
//!
//! Every token, code, session and client secret is stored as its SHA-256 only. Access tokens
//! are ordinary bearer credentials of the service (`auth::CredentialKind`), looked up by the
//! service's credential store in `oauth_tokens`; the table's triggers send the
//! `credential_changed` notification, so a revocation is refused by every replica at once.

pub mod account;
pub mod config;
pub mod db;
pub mod error;
pub mod flow;
pub mod metadata;
pub mod openapi;
pub mod origin;
pub mod pages;
pub mod password;
pub mod pkce;
pub mod routes;
pub mod schema;
pub mod web_util;

pub use config::{OAuth, OAuthConfig, OAuthHost, OAuthSettings, Paths};
pub use error::OAuthError;

/// 32 random bytes as 64 lowercase hex digits.
pub fn random_hex() -> String {
    use ring::rand::{SecureRandom as _, SystemRandom};
    let mut bytes = [0u8; 32];
    SystemRandom::new()
        .fill(&mut bytes)
        .expect("the system random source is available");
    hex::encode(bytes)
}

/// A secret of the form `<prefix><64 hex digits>` and its SHA-256.
pub fn new_secret(prefix: &str) -> (String, [u8; 32]) {
    let plaintext = format!("{prefix}{}", random_hex());
    let hash = store::sha256(plaintext.as_bytes());
    (plaintext, hash)
}

/// The path of a resource URL (`https://mail.example.com/mcp` → `/mcp`), under which the
/// tokens of a grant for it may be used; an unparsable resource gives a path nothing is under.
pub fn resource_path(resource: &str) -> String {
    match url::Url::parse(resource) {
        Ok(url) => url.path().to_owned(),
        Err(_) => "\u{0}".to_owned(),
    }
}
