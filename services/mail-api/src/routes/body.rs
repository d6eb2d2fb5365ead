//! What mail request bodies share: the tag list's rules and email normalization. Bodies are
//! read with `http_kit::Json`, which enforces the rules their schemas state; unknown fields
//! are ignored (ruled).

use http_kit::ApiError;
use utoipa::openapi::schema::Array;

use crate::domain::email;

/// Longest tag, and most tags in one request.
pub const TAG_MAX: usize = 100;
pub const TAGS_MAX: usize = 100;

/// Tags: at most [`TAGS_MAX`] of 1..=[`TAG_MAX`] characters, not blank. Stored trimmed,
/// repeats dropped (`http_kit::request::trim_and_dedupe`).
pub fn tags_schema() -> Array {
    http_kit::request::text_list(Some(TAGS_MAX), TAG_MAX)
}

/// Replaces an address (already checked against `format: email`) by its stored form.
pub fn normalize_email(field: &str, value: &mut String) -> Result<(), ApiError> {
    *value = email::normalize(value)
        .ok_or_else(|| ApiError::invalid_field(field, "is not a valid email address"))?;
    Ok(())
}
