//! What the request bodies of both doors share: the tag list's rules, the optional site and
//! reply-to schemas, and email normalization. Bodies are read with `http_kit::Json` (or a
//! tool's reader), which enforces the rules their schemas state.

use http_kit::ApiError;
use utoipa::openapi::schema::{Array, KnownFormat, Schema, SchemaType, Type};

use crate::domain::email;

/// Longest tag, and most tags in one request.
pub const TAG_MAX: usize = 100;
pub const TAGS_MAX: usize = 100;

/// Tags: at most [`TAGS_MAX`] of 1..=[`TAG_MAX`] characters, not blank. Stored trimmed,
/// repeats dropped (`http_kit::request::trim_and_dedupe`). Null is absent (no tags), as for
/// every optional member.
pub fn tags_schema() -> Array {
    let mut tags = http_kit::request::text_list(Some(TAGS_MAX), TAG_MAX);
    tags.schema_type = SchemaType::from_iter([Type::Array, Type::Null]);
    tags
}

/// The optional `site_id` of `/identify` and `POST /contacts`.
pub fn optional_site_schema() -> Schema {
    http_kit::request::nullable_format(
        KnownFormat::Uuid,
        "A site of the project (404 `SITE_NOT_FOUND` otherwise): the contact is subscribed to \
         it (an existing subscription keeps its status); a contact created by the call is \
         enrolled in the site's signup campaigns, that is its active drip campaigns.",
    )
}

/// The optional `reply_to` of `/send`.
pub fn reply_to_schema() -> Schema {
    http_kit::request::nullable_format(
        KnownFormat::Email,
        "Reply-To address (stored trimmed and lowercased); absent: none.",
    )
}

/// Replaces an address (already checked against `format: email`) by its stored form.
pub fn normalize_email(field: &str, value: &mut String) -> Result<(), ApiError> {
    *value = email::normalize(value)
        .ok_or_else(|| ApiError::invalid_field(field, "is not a valid email address"))?;
    Ok(())
}
