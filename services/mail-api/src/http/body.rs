//! What mail request bodies share, now in [`crate::ops::input`] (both doors read them); kept
//! here under its old path for the routes that name it.

pub use crate::ops::input::{
    TAG_MAX, TAGS_MAX, normalize_email, optional_site_schema, reply_to_schema, tags_schema,
};
