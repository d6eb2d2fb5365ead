//! Canonical JSON: object members sorted by key (byte order), no whitespace, strings and
//! numbers as serde_json writes them. The MIF checksum is the SHA-256 of the document without
//! `provenance` in this form.

use serde_json::Value;

/// Appends the canonical form of `value` to `out`.
pub fn write(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(members) => {
            let mut keys: Vec<&String> = members.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                scalar(&Value::String(key.clone()), out);
                out.push(b':');
                write(&members[key], out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(item, out);
            }
            out.push(b']');
        }
        other => scalar(other, out),
    }
}

fn scalar(value: &Value, out: &mut Vec<u8>) {
    serde_json::to_writer(out, value).expect("a JSON scalar serializes");
}

/// The canonical form as a string.
pub fn to_string(value: &Value) -> String {
    let mut out = Vec::new();
    write(value, &mut out);
    String::from_utf8(out).expect("JSON is UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_sorted_at_every_depth_without_whitespace() {
        let value = json!({"b": [1, {"z": null, "a": "x\"y"}], "a": 1.5, "é": true});
        assert_eq!(
            to_string(&value),
            r#"{"a":1.5,"b":[1,{"a":"x\"y","z":null}],"é":true}"#
        );
    }
}
