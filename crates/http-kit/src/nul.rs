//! PostgreSQL stores no U+0000 in `text` or `jsonb`, so a request carrying one is refused at
//! the edge (ruled: 400 naming the field) instead of failing in the database as a 500.

use actix_web::http::Uri;
use serde_json::Value;

use crate::error::ApiError;

const PROBLEM: &str = "must not contain the NUL character (\\u0000)";

/// The JSON path (`properties.nickname`, `data.items[2].name`) of the first string, key or
/// value, that contains U+0000; `None` when there is none.
pub fn first_nul_path(value: &Value) -> Option<String> {
    let mut path = String::new();
    find(value, &mut path).then_some(path)
}

fn find(value: &Value, path: &mut String) -> bool {
    match value {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().enumerate().any(|(i, item)| {
            let len = path.len();
            path.push_str(&format!("[{i}]"));
            let found = find(item, path);
            if !found {
                path.truncate(len);
            }
            found
        }),
        Value::Object(members) => members.iter().any(|(key, member)| {
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(&key.replace('\0', "\\u0000"));
            let found = key.contains('\0') || find(member, path);
            if !found {
                path.truncate(len);
            }
            found
        }),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

/// The 400 for a JSON body holding U+0000 somewhere.
pub fn check_json(value: &Value) -> Result<(), ApiError> {
    match first_nul_path(value) {
        None => Ok(()),
        Some(path) if path.is_empty() => Err(ApiError::invalid_field("body", PROBLEM)),
        Some(path) => Err(ApiError::invalid_field(&path, PROBLEM)),
    }
}

/// The 400 for a path or query string with an encoded U+0000 (`%00`): the query parameter it
/// is in, or `path`.
pub fn check_uri(uri: &Uri) -> Result<(), ApiError> {
    if uri.path().contains("%00") {
        return Err(ApiError::invalid_field("path", PROBLEM));
    }
    let Some(query) = uri.query() else {
        return Ok(());
    };
    match query.split('&').find(|pair| pair.contains("%00")) {
        None => Ok(()),
        Some(pair) => {
            let name = decode_component(pair.split('=').next().unwrap_or_default());
            Err(ApiError::invalid_field(&name, PROBLEM))
        }
    }
}

/// `application/x-www-form-urlencoded` decoding of one name, for the error message only.
fn decode_component(raw: &str) -> String {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(0) => out.extend_from_slice(b"\\u0000"),
                    Ok(byte) => out.push(byte),
                    Err(_) => out.extend_from_slice(&bytes[i..i + 3]),
                }
                i += 2;
            }
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_the_first_offending_string() {
        assert_eq!(first_nul_path(&json!({"a": "ok", "b": [1, "x"]})), None);
        assert_eq!(
            first_nul_path(&json!({"properties": {"nickname": "a\u{0}b"}})).as_deref(),
            Some("properties.nickname")
        );
        assert_eq!(
            first_nul_path(&json!({"data": {"items": [{}, {}, {"name": "\u{0}"}]}})).as_deref(),
            Some("data.items[2].name")
        );
        assert_eq!(
            first_nul_path(&json!({"tags": ["a", "b\u{0}"]})).as_deref(),
            Some("tags[1]")
        );
        assert_eq!(
            first_nul_path(&json!({"meta": {"k\u{0}": 1}})).as_deref(),
            Some("meta.k\\u0000")
        );
        assert_eq!(first_nul_path(&json!("\u{0}")).as_deref(), Some(""));
    }

    #[test]
    fn an_escaped_backslash_is_not_a_nul() {
        let value: Value = serde_json::from_str(r#"{"a": "\\u0000"}"#).unwrap();
        assert_eq!(first_nul_path(&value), None);
    }

    #[test]
    fn finds_encoded_nul_in_query_and_path() {
        let uri: Uri = "/x?limit=5&q=a%00b".parse().unwrap();
        let err = check_uri(&uri).unwrap_err();
        assert_eq!(err.details().unwrap()["field"], "q");
        let uri: Uri = "/x/a%00b".parse().unwrap();
        let err = check_uri(&uri).unwrap_err();
        assert_eq!(err.details().unwrap()["field"], "path");
        let uri: Uri = "/x?q=%2500".parse().unwrap();
        assert!(check_uri(&uri).is_ok());
        let uri: Uri = "/x?a+b%5B%5D=%00".parse().unwrap();
        assert_eq!(
            check_uri(&uri).unwrap_err().details().unwrap()["field"],
            "a b[]"
        );
    }
}
