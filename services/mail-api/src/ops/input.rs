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

/// 400 `TEMPLATE_SYNTAX` for the first of `sources` (field name, source) whose template syntax
/// does not compile: the message and `details` name the field, line and column.
pub fn check_template_syntax(sources: &[(&str, Option<&str>)]) -> Result<(), ApiError> {
    for (field, source) in sources {
        let Some(source) = source else { continue };
        if let Err(err) = crate::domain::personalize::check(field, source) {
            return Err(ApiError::bad_request(err.to_string())
                .with_code(crate::domain::error_code::MailErrorCode::TemplateSyntax)
                .with_details(serde_json::json!({
                    "field": err.field,
                    "line": err.line,
                    "column": err.column,
                })));
        }
    }
    Ok(())
}

/// `data` of `POST /send` and the preview: an object of at most 50 members (any JSON values),
/// read by template syntax as `data.*`; null is absent.
pub fn template_data_schema() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::ObjectBuilder;
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
        .description(Some(
            "Values the subject, HTML and text read as `data.*` (`{{ data.order_id }}`, see \
             Personalization): an object of at most 50 members, any JSON values.",
        ))
        .max_properties(Some(DATA_MAX_MEMBERS))
        .build()
}

/// Most members of a `data` object.
pub const DATA_MAX_MEMBERS: usize = 50;
