//! The HTTP kit shared by both APIs: one error type, the two documented error envelopes, the
//! handlers that put every framework failure into the service's envelope, pagination, health,
//! and the pages a browser finds without a credential (landing page, API reference).

pub mod envelope;
pub mod error;
pub mod extract;
pub mod health;
pub mod nul;
pub mod openapi;
pub mod pages;
pub mod pagination;
pub mod request;
pub mod routes;

pub use envelope::MailKindCode;
pub use envelope::{Flavor, envelope_middleware};
pub use error::{ApiError, ErrorCode, ErrorKind, RateLimitInfo};
pub use extract::{
    Json, Query, QueryParameters, json_config, path_config, payload_config, query_config,
    read_body, read_params, reject_nul_in_uri,
};
pub use pagination::{Cursor, Page, PageParams};
pub use request::Validate;
pub use routes::Route;

/// Request bodies above this size answer 400 (ruled: neither document lists 413).
pub const MAX_JSON_BODY: usize = 1024 * 1024;
/// Upload routes take up to this much.
pub const MAX_UPLOAD_BODY: usize = 10 * 1024 * 1024;

#[doc(hidden)]
pub use pastey as __pastey;
