//! Rendered files (documents, videos) in an object store, and the time-limited signed URLs
//! that download them.
//!
//! The store is a local directory by default, or any S3-compatible bucket by configuration
//! (`<PREFIX>_OBJECTS__BACKEND=s3`, see [`ObjectSettings`]). A download URL carries its object
//! key, its expiry and an HMAC-SHA256 over both: the signature is the credential, so the route
//! serving it needs no bearer token.

mod key;
mod signing;
mod store;

pub use key::{ObjectKey, content_type};
pub use signing::{SignedQuery, UrlSigner, VerifyError};
pub use store::{Backend, ObjectSettings, Objects, ObjectsError, S3Settings};
