//! JSON in one canonical form: every object's keys sorted, so that equal arguments hash
//! equally (confirmation tokens and approvals are bound to such a hash).

use serde_json::{Map, Value};

/// `value` with every object's keys sorted.
pub fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(members) => {
            let mut keys: Vec<&String> = members.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for key in keys {
                out.insert(key.clone(), canonical(&members[key]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}
