//! Producible documents: the document tree (`ir`) render jobs are given, checked the way the
//! contract rules (`{"title", "blocks": [...]}`), with errors that name the failing path
//! (`blocks[3].rows[0][1]`). The JSON Schema of the same tree is
//! `proto-docs/producible-ir.schema.json` (a test keeps the two in agreement).

pub mod fonts;
pub mod images;
mod ir;
pub mod spreadsheet;
mod validate;

pub use ir::{Block, Document, Format, Run, Runs, plain};
pub use validate::{IrError, LIMITS, Limits, parse};

/// The JSON Schema of the tree, as committed.
pub const SCHEMA: &str = include_str!("../../../proto-docs/producible-ir.schema.json");

/// The JSON Schema of the tree with every `$ref` expanded in place and `const` written as a
/// one-value `enum` (for documents, such as OpenAPI's, that cannot hold its `$defs`).
pub fn inline_schema() -> serde_json::Value {
    let schema: serde_json::Value =
        serde_json::from_str(SCHEMA).expect("the committed schema is JSON");
    let defs = schema["$defs"].clone();
    let mut root = schema;
    if let Some(map) = root.as_object_mut() {
        for key in ["$defs", "$schema", "$id", "title"] {
            map.remove(key);
        }
    }
    inline(root, &defs)
}

fn inline(value: serde_json::Value, defs: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref")
                && let Some(name) = r.strip_prefix("#/$defs/")
            {
                return inline(defs[name].clone(), defs);
            }
            if let Some(c) = map.get("const") {
                return serde_json::json!({"type": "string", "enum": [c]});
            }
            Value::Object(map.into_iter().map(|(k, v)| (k, inline(v, defs))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(|v| inline(v, defs)).collect()),
        other => other,
    }
}
