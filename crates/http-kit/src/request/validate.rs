//! The one validation step after the schema's rules: what a schema cannot say (one field or
//! another, rules across fields) and the normalizing every service does the same way.

use serde_json::Value;
use utoipa::openapi::schema::{
    Array, ArrayBuilder, KnownFormat, ObjectBuilder, OneOfBuilder, Schema, SchemaFormat,
    SchemaType, Type,
};

use super::rules::NOT_BLANK;
use crate::error::ApiError;

/// Runs after a request was read and its documented rules held. The default does nothing.
pub trait Validate {
    /// Top-level members (arrays or objects) the type carries on as parsed, such as a batch's
    /// items read one by one later. The body's rules check them; the rest is deserialized with
    /// an empty one in their place, and each is then handed to [`Validate::restore`]: moved,
    /// where deserializing would have rebuilt it value by value.
    const VERBATIM: &'static [&'static str] = &[];

    /// Takes back a member named in [`Validate::VERBATIM`].
    fn restore(&mut self, _name: &str, _value: Value) {}

    fn validate(&mut self) -> Result<(), ApiError> {
        Ok(())
    }
}

/// A free-form document: no rule beyond being JSON.
impl Validate for Value {}

/// Trims `value` in place.
pub fn trim(value: &mut String) {
    let trimmed = value.trim();
    if trimmed.len() != value.len() {
        *value = trimmed.to_owned();
    }
}

/// Trims `value`; a blank string becomes `None`.
pub fn trim_optional(value: &mut Option<String>) {
    if let Some(text) = value {
        trim(text);
        if text.is_empty() {
            *value = None;
        }
    }
}

/// Trims each item and drops repeats, keeping the first occurrence's place.
pub fn trim_and_dedupe(values: &mut Vec<String>) {
    let mut seen: Vec<String> = Vec::with_capacity(values.len());
    for mut value in values.drain(..) {
        trim(&mut value);
        if !seen.contains(&value) {
            seen.push(value);
        }
    }
    *values = seen;
}

/// The schema of an optional list of (at most `max_items`) non-blank strings of at most
/// `max_len` characters (for `#[schema(schema_with = …)]`; the rules are read back from it).
/// Null is allowed: a null member is read as an absent one.
pub fn text_list(max_items: Option<usize>, max_len: usize) -> Array {
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(max_len))
                .pattern(Some(NOT_BLANK)),
        )
        .max_items(max_items)
        .build()
}

/// An optional string of a known `format`, described: `oneOf: [null, {string, format}]` (for
/// `#[schema(schema_with = …)]`). It means what utoipa's `type: [string, null]` means, but a
/// type list beside a format is read by some request generators as "any string", so the
/// documents would invite values the format refuses.
pub fn nullable_format(format: KnownFormat, description: &str) -> Schema {
    let schema = OneOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .item(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .format(Some(SchemaFormat::KnownFormat(format))),
        )
        .description(Some(description))
        .build();
    Schema::OneOf(schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimming_and_dedupe() {
        let mut v = Some("  ".to_owned());
        trim_optional(&mut v);
        assert_eq!(v, None);
        let mut v = Some(" x ".to_owned());
        trim_optional(&mut v);
        assert_eq!(v.as_deref(), Some("x"));
        let mut tags = vec![
            " b ".to_owned(),
            "a".into(),
            "b".into(),
            "a".into(),
            "c".into(),
        ];
        trim_and_dedupe(&mut tags);
        assert_eq!(tags, ["b", "a", "c"]);
    }
}
