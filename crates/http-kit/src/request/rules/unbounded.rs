//! The strings a document lets a request carry at any length.

use serde_json::{Map, Value};

use super::Rules;
use super::check::primary_type;

/// Where a document lets a request carry a string of any length: every string property of a
/// request body (nested ones included) and every string query parameter that states no
/// `maxLength`, `enum`, bounded `format` or `pattern`, as `operationId.field`. A contract
/// test pins this list, so a new unbounded string is a decision, not an accident.
pub fn unbounded_request_strings(document: &Value) -> Vec<String> {
    let empty = Map::new();
    let components = document["components"]["schemas"]
        .as_object()
        .unwrap_or(&empty);
    let rules = Rules::new(Value::Null, components.clone());
    let mut found = Vec::new();
    for methods in document["paths"].as_object().unwrap_or(&empty).values() {
        for operation in methods.as_object().unwrap_or(&empty).values() {
            let Some(id) = operation["operationId"].as_str() else {
                continue;
            };
            for param in operation["parameters"].as_array().into_iter().flatten() {
                if param["in"] == "query" {
                    let name = format!("{id}.{}", param["name"].as_str().unwrap_or_default());
                    rules.collect_unbounded(&param["schema"], &name, &mut found, 0);
                }
            }
            if let Some(schema) =
                operation["requestBody"]["content"]["application/json"].get("schema")
            {
                rules.collect_unbounded(schema, id, &mut found, 0);
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

impl Rules {
    fn collect_unbounded(&self, schema: &Value, path: &str, found: &mut Vec<String>, depth: usize) {
        let schema = self.resolve(schema);
        if depth > 8 || !schema.is_object() {
            return;
        }
        for key in ["oneOf", "anyOf", "allOf"] {
            for part in schema
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                self.collect_unbounded(part, path, found, depth + 1);
            }
        }
        for key in ["then", "else"] {
            if let Some(branch) = schema.get(key) {
                self.collect_unbounded(branch, path, found, depth + 1);
            }
        }
        if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
            for (name, property) in properties {
                self.collect_unbounded(property, &format!("{path}.{name}"), found, depth + 1);
            }
        }
        if let Some(items) = schema.get("items") {
            self.collect_unbounded(items, &format!("{path}[]"), found, depth + 1);
        }
        let bounded_format = matches!(
            schema.get("format").and_then(Value::as_str),
            Some("uuid" | "date-time" | "email" | "date")
        );
        let anchored = schema
            .get("pattern")
            .and_then(Value::as_str)
            .is_some_and(|p| p.starts_with('^') && p.ends_with('$'));
        if primary_type(schema) == Some("string")
            && schema.get("maxLength").is_none()
            && schema.get("enum").is_none()
            && !bounded_format
            && !anchored
        {
            found.push(path.to_owned());
        }
    }
}
