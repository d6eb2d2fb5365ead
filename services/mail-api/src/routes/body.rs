//! Reading JSON request bodies field by field, so that every 400 names its field (serde's own
//! errors do not say which field had the wrong type). Unknown fields are ignored (ruled).

use http_kit::ApiError;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::domain::email;

/// Longest tag, and most tags in one request.
pub const TAG_MAX: usize = 100;
pub const TAGS_MAX: usize = 100;

pub struct Fields(Map<String, Value>);

impl Fields {
    pub fn new(body: Value) -> Result<Self, ApiError> {
        match body {
            Value::Object(map) => Ok(Self(map)),
            _ => Err(ApiError::bad_request(
                "the request body must be a JSON object",
            )),
        }
    }

    /// A field that is absent or `null` is `None`.
    fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(name).filter(|v| !v.is_null())
    }

    pub fn string(&self, name: &str) -> Result<Option<String>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(ApiError::invalid_field(name, "must be a string")),
        }
    }

    pub fn required_string(&self, name: &str) -> Result<String, ApiError> {
        self.string(name)?
            .ok_or_else(|| ApiError::invalid_field(name, "is required"))
    }

    /// A required, trimmed, non-empty string of at most `max` characters.
    pub fn text(&self, name: &str, max: usize) -> Result<String, ApiError> {
        let value = self.required_string(name)?;
        check_text(name, &value, max).map(str::to_owned)
    }

    /// An optional string of at most `max` characters, trimmed; blank is `None`.
    pub fn optional_text(&self, name: &str, max: usize) -> Result<Option<String>, ApiError> {
        let Some(value) = self.string(name)? else {
            return Ok(None);
        };
        let trimmed = value.trim();
        if trimmed.is_empty() {
            return Ok(None);
        }
        check_text(name, trimmed, max).map(|t| Some(t.to_owned()))
    }

    /// A required email address, normalized (trimmed, lowercased).
    pub fn email(&self, name: &str) -> Result<String, ApiError> {
        let raw = self.required_string(name)?;
        email::normalize(&raw)
            .ok_or_else(|| ApiError::invalid_field(name, "is not a valid email address"))
    }

    /// A free-form JSON object.
    pub fn object(&self, name: &str) -> Result<Option<Value>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(v @ Value::Object(_)) => Ok(Some(v.clone())),
            Some(_) => Err(ApiError::invalid_field(name, "must be a JSON object")),
        }
    }

    pub fn number(&self, name: &str) -> Result<Option<f64>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_f64()
                .filter(|f| f.is_finite())
                .map(Some)
                .ok_or_else(|| ApiError::invalid_field(name, "must be a finite number")),
            Some(_) => Err(ApiError::invalid_field(name, "must be a number")),
        }
    }

    pub fn uuid(&self, name: &str) -> Result<Option<Uuid>, ApiError> {
        self.string(name)?
            .map(|s| {
                Uuid::parse_str(s.trim())
                    .map_err(|_| ApiError::invalid_field(name, "must be a UUID"))
            })
            .transpose()
    }

    /// Tags: trimmed, non-empty, at most [`TAG_MAX`] characters each and [`TAGS_MAX`] in all,
    /// duplicates dropped (first occurrence kept).
    pub fn tags(&self, name: &str) -> Result<Vec<String>, ApiError> {
        let items = match self.get(name) {
            None => return Ok(Vec::new()),
            Some(Value::Array(items)) => items,
            Some(_) => return Err(ApiError::invalid_field(name, "must be an array of strings")),
        };
        if items.len() > TAGS_MAX {
            return Err(ApiError::invalid_field(name, "has more than 100 tags"));
        }
        let mut tags: Vec<String> = Vec::with_capacity(items.len());
        for item in items {
            let Value::String(tag) = item else {
                return Err(ApiError::invalid_field(name, "must be an array of strings"));
            };
            let tag = check_text(name, tag, TAG_MAX).map_err(|_| {
                ApiError::invalid_field(name, "each tag must be 1 to 100 characters")
            })?;
            if !tags.iter().any(|t| t == tag) {
                tags.push(tag.to_owned());
            }
        }
        Ok(tags)
    }
}

/// `value` trimmed, when it is 1..=`max` characters.
pub fn check_text<'a>(name: &str, value: &'a str, max: usize) -> Result<&'a str, ApiError> {
    let trimmed = value.trim();
    if trimmed.is_empty() || trimmed.chars().count() > max {
        return Err(ApiError::invalid_field(
            name,
            &format!("must be 1 to {max} characters"),
        ));
    }
    Ok(trimmed)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fields(v: Value) -> Fields {
        Fields::new(v).unwrap()
    }

    fn field_of(err: ApiError) -> String {
        err.details().unwrap()["field"].as_str().unwrap().to_owned()
    }

    #[test]
    fn errors_name_the_field() {
        let f = fields(json!({"a": 1, "tags": ["x", 2], "o": [], "u": "nope", "n": "1"}));
        assert_eq!(field_of(f.string("a").unwrap_err()), "a");
        assert_eq!(
            field_of(f.required_string("missing").unwrap_err()),
            "missing"
        );
        assert_eq!(field_of(f.tags("tags").unwrap_err()), "tags");
        assert_eq!(field_of(f.object("o").unwrap_err()), "o");
        assert_eq!(field_of(f.uuid("u").unwrap_err()), "u");
        assert_eq!(field_of(f.number("n").unwrap_err()), "n");
        assert!(Fields::new(json!([1])).is_err());
    }

    #[test]
    fn tags_are_trimmed_and_deduplicated_in_order() {
        let f = fields(json!({"tags": [" b ", "a", "b", "a", "c"]}));
        assert_eq!(f.tags("tags").unwrap(), ["b", "a", "c"]);
        assert!(fields(json!({"tags": [" "]})).tags("tags").is_err());
        assert!(
            fields(json!({"tags": ["x".repeat(101)]}))
                .tags("tags")
                .is_err()
        );
        let many: Vec<String> = (0..101).map(|i| i.to_string()).collect();
        assert!(fields(json!({ "tags": many })).tags("tags").is_err());
        assert_eq!(
            fields(json!({"tags": null})).tags("tags").unwrap(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn null_is_absent_and_blank_optional_text_is_none() {
        let f = fields(json!({"a": null, "b": "  ", "c": " x "}));
        assert_eq!(f.string("a").unwrap(), None);
        assert_eq!(f.optional_text("b", 5).unwrap(), None);
        assert_eq!(f.optional_text("c", 5).unwrap().as_deref(), Some("x"));
        assert!(f.text("b", 5).is_err());
    }
}
