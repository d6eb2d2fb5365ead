//! Checking a value against a schema: types, ranges, strings, arrays, objects and
//! compositions.

use std::collections::HashMap;
use std::fmt::Write as _;

use regex::Regex;
use serde_json::{Map, Value};

use super::super::formats;
use super::keywords::Keywords;
use super::{ENUM_PROBLEM, NOT_BLANK, ONE_LINE_NOT_BLANK, Rules, unknown_field};
use crate::error::ApiError;

impl Rules {
    /// Checks one value; on failure `path` is left at the offending field.
    pub(super) fn check_at(
        &self,
        schema: &Value,
        value: &mut Value,
        path: &mut String,
    ) -> Result<(), String> {
        let (schema, keywords) = self.keywords(schema);
        if !schema.is_object() {
            return Ok(());
        }
        for part in Keywords::parts(keywords.all_of) {
            self.check_at(part, value, path)?;
        }
        for composition in [keywords.one_of, keywords.any_of] {
            if let Some(variants) = composition.and_then(Value::as_array) {
                self.check_variants(variants, value, path)?;
            }
        }
        if let Some(types) = keywords.types {
            check_type(types, schema, value)?;
            integral_as_integer(types, value);
        }
        if !value.is_null() {
            if let Some(allowed) = keywords.allowed.and_then(Value::as_array)
                && !allowed.contains(value)
            {
                let names: Vec<String> = allowed.iter().map(display).collect();
                return Err(format!("{ENUM_PROBLEM}{}", names.join(", ")));
            }
            match value {
                Value::String(s) => self.check_string(&keywords, s),
                Value::Number(_) => check_range(schema, &keywords, value),
                Value::Array(items) => self.check_array(&keywords, items, path),
                Value::Object(members) => self.check_object(&keywords, members, path),
                Value::Bool(_) | Value::Null => Ok(()),
            }?;
        }
        self.check_conditional(&keywords, value, path)
    }

    /// `if`/`then`/`else`, after the schema's own rules: `then` applies to a value that passes
    /// `if`, `else` to one that does not. A rule that depends on another member (which
    /// operators a field takes) so names the member at fault, as no `oneOf` could.
    fn check_conditional(
        &self,
        keywords: &Keywords<'_>,
        value: &mut Value,
        path: &mut String,
    ) -> Result<(), String> {
        let Some(condition) = keywords.condition else {
            return Ok(());
        };
        let len = path.len();
        let holds = self.check_at(condition, &mut value.clone(), path).is_ok();
        path.truncate(len);
        match if holds {
            keywords.then
        } else {
            keywords.otherwise
        } {
            Some(branch) => self.check_at(branch, value, path),
            None => Ok(()),
        }
    }

    fn check_variants(
        &self,
        variants: &[Value],
        value: &mut Value,
        path: &mut String,
    ) -> Result<(), String> {
        // utoipa's optional reference, `oneOf: [{type: null}, X]`: null is the first, anything
        // else can only be X, checked in place (no copy to fall back on is needed).
        if let [first, only] = variants
            && is_null_type(self.resolve(first))
        {
            return if value.is_null() {
                Ok(())
            } else {
                self.check_at(only, value, path)
            };
        }
        let len = path.len();
        // A variant whose enum refuses a member (e.g. `type: drip` against `triggered`) is
        // not the one the request meant: another variant's problem says more.
        let mut first_error = None;
        let mut first_enum_error = None;
        for variant in variants {
            let mut candidate = value.clone();
            match self.check_at(variant, &mut candidate, path) {
                Ok(()) => {
                    *value = candidate;
                    return Ok(());
                }
                Err(problem) => {
                    if !is_null_type(self.resolve(variant)) {
                        let slot = if problem.starts_with(ENUM_PROBLEM) {
                            &mut first_enum_error
                        } else {
                            &mut first_error
                        };
                        slot.get_or_insert_with(|| (path.clone(), problem));
                    }
                    path.truncate(len);
                }
            }
        }
        let (at, problem) = first_error
            .or(first_enum_error)
            .unwrap_or_else(|| (path.clone(), "is not allowed".into()));
        *path = at;
        Err(problem)
    }

    fn check_string(&self, keywords: &Keywords<'_>, s: &str) -> Result<(), String> {
        let min = keywords.min_length.and_then(Value::as_u64);
        let max = keywords.max_length.and_then(Value::as_u64);
        let len = if min.is_some() || max.is_some() {
            s.chars().count() as u64
        } else {
            0
        };
        if min.is_some_and(|m| len < m) || max.is_some_and(|m| len > m) {
            return Err(match (min, max) {
                (Some(min), Some(max)) => format!("must be {min} to {max} characters"),
                (Some(min), None) => format!("must be at least {min} characters"),
                (None, Some(max)) => format!("must be at most {max} characters"),
                (None, None) => unreachable!("a length limit was exceeded"),
            });
        }
        if let Some(pattern) = keywords.pattern.and_then(Value::as_str)
            && let Some(regex) = self.patterns.get(pattern)
            && !regex.is_match(s)
        {
            return Err(if pattern == NOT_BLANK {
                "must not be blank".to_owned()
            } else if pattern == ONE_LINE_NOT_BLANK {
                "must not be blank, and must be one line without control characters".to_owned()
            } else {
                format!("must match the pattern {pattern}")
            });
        }
        if let Some(format) = keywords.format.and_then(Value::as_str)
            && !formats::conforms(format, s)
        {
            return Err(formats::problem(format));
        }
        Ok(())
    }

    fn check_array(
        &self,
        keywords: &Keywords<'_>,
        items: &mut [Value],
        path: &mut String,
    ) -> Result<(), String> {
        let count = items.len() as u64;
        if let Some(max) = keywords.max_items.and_then(Value::as_u64)
            && count > max
        {
            return Err(format!("must have at most {max} items"));
        }
        if let Some(min) = keywords.min_items.and_then(Value::as_u64)
            && count < min
        {
            return Err(format!("must have at least {min} items"));
        }
        let Some(item_schema) = keywords.items else {
            return Ok(());
        };
        for (i, item) in items.iter_mut().enumerate() {
            let len = path.len();
            write!(path, "[{i}]").expect("writing to a String");
            self.check_at(item_schema, item, path)?;
            path.truncate(len);
        }
        Ok(())
    }

    fn check_object(
        &self,
        keywords: &Keywords<'_>,
        members: &mut Map<String, Value>,
        path: &mut String,
    ) -> Result<(), String> {
        let empty = Map::new();
        let properties = keywords.properties.and_then(Value::as_object);
        let additional = keywords.additional;
        // A free-form object (`additionalProperties: true`, such as a merge patch) keeps its
        // null members: there a null says something (delete the key).
        if properties.is_some() && additional != Some(&Value::Bool(true)) {
            members.retain(|_, v| !v.is_null());
        }
        let properties = properties.unwrap_or(&empty);
        if let Some(max) = keywords.max_properties.and_then(Value::as_u64)
            && members.len() as u64 > max
        {
            return Err(format!("must have at most {max} members"));
        }
        for name in keywords
            .required
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(name) = name.as_str() else { continue };
            if !members.contains_key(name) {
                push_key(path, name);
                return Err("is required".to_owned());
            }
        }
        for (name, member) in members.iter_mut() {
            let len = path.len();
            push_key(path, name);
            match (properties.get(name), additional) {
                (Some(property), _) => self.check_at(property, member, path)?,
                (None, Some(Value::Bool(false))) => {
                    return Err(unknown_field(name, properties.keys().map(String::as_str)));
                }
                (None, Some(extra @ Value::Object(_))) => self.check_at(extra, member, path)?,
                (None, _) => {}
            }
            path.truncate(len);
        }
        Ok(())
    }
}

pub(super) fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

pub(super) fn field_error(path: &str, problem: &str) -> ApiError {
    ApiError::invalid_field(if path.is_empty() { "body" } else { path }, problem)
}

pub(super) fn collect_patterns(schema: &Value, into: &mut HashMap<String, Regex>) {
    match schema {
        Value::Object(members) => {
            if let Some(Value::String(pattern)) = members.get("pattern")
                && let Ok(regex) = Regex::new(pattern)
            {
                into.insert(pattern.clone(), regex);
            }
            members.values().for_each(|v| collect_patterns(v, into));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_patterns(v, into)),
        _ => {}
    }
}

pub(super) fn is_null_type(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

pub(super) fn primary_type(schema: &Value) -> Option<&str> {
    match schema.get("type")? {
        Value::String(t) => Some(t),
        Value::Array(types) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null"),
        _ => None,
    }
}

fn type_matches(name: &str, value: &Value) -> bool {
    match name {
        "null" => value.is_null(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => true,
    }
}

/// JSON Schema counts `96.0` as an integer; serde's integer types do not, so where only an
/// integer is allowed an integral float is rewritten as one before the value is deserialized.
fn integral_as_integer(types: &Value, value: &mut Value) {
    let declares = |name: &str| match types {
        Value::String(t) => t == name,
        Value::Array(ts) => ts.iter().any(|t| t == name),
        _ => false,
    };
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53: every integer below is exact in f64
    if let Value::Number(n) = value
        && n.is_f64()
        && declares("integer")
        && !declares("number")
        && let Some(f) = n.as_f64()
        && f.fract() == 0.0
        && f.abs() < EXACT
    {
        #[allow(clippy::cast_possible_truncation)]
        let integer = f as i64;
        *value = Value::from(integer);
    }
}

/// The names a `type` keyword gives (one, or an array of them).
fn type_names(types: &Value) -> impl Iterator<Item = &str> {
    let (one, many) = match types {
        Value::String(t) => (Some(t.as_str()), &[][..]),
        Value::Array(ts) => (None, ts.as_slice()),
        _ => (None, &[][..]),
    };
    one.into_iter().chain(many.iter().filter_map(Value::as_str))
}

fn check_type(types: &Value, schema: &Value, value: &Value) -> Result<(), String> {
    if !matches!(types, Value::String(_) | Value::Array(_))
        || type_names(types).any(|t| type_matches(t, value))
    {
        return Ok(());
    }
    let expected = type_names(types).find(|t| *t != "null").unwrap_or("null");
    Err(match expected {
        "integer" | "number" => number_problem(expected, schema),
        // Null is absent, so a member that may only be null may only be left out.
        "null" => "must be absent".to_owned(),
        "array" => "must be an array".to_owned(),
        "object" => "must be a JSON object".to_owned(),
        other => format!("must be a {other}"),
    })
}

/// "must be an integer between 1 and 100", with whichever bounds the schema has.
fn number_problem(kind: &str, schema: &Value) -> String {
    let noun = if kind == "integer" {
        "an integer"
    } else {
        "a number"
    };
    match (schema.get("minimum"), schema.get("maximum")) {
        (Some(min), Some(max)) => format!("must be {noun} between {min} and {max}"),
        (Some(min), None) => format!("must be {noun} of at least {min}"),
        (None, Some(max)) => format!("must be {noun} of at most {max}"),
        (None, None) => format!("must be {noun}"),
    }
}

fn check_range(schema: &Value, keywords: &Keywords<'_>, value: &Value) -> Result<(), String> {
    let n = value.as_f64().unwrap_or(f64::NAN);
    let bound = |keyword: Option<&Value>| keyword.and_then(Value::as_f64);
    let below = bound(keywords.minimum).is_some_and(|min| n < min);
    let above = bound(keywords.maximum).is_some_and(|max| n > max);
    let below_exclusive = bound(keywords.exclusive_minimum).is_some_and(|min| n <= min);
    let above_exclusive = bound(keywords.exclusive_maximum).is_some_and(|max| n >= max);
    if below || above {
        let kind = primary_type(schema).unwrap_or("number");
        return Err(number_problem(kind, schema));
    }
    if below_exclusive || above_exclusive || !n.is_finite() {
        return Err("is out of range".to_owned());
    }
    Ok(())
}

fn display(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
