//! A tool's input schema as MCP clients take it: one object at the top (`type: object`,
//! `properties`, `additionalProperties: false`), no `allOf`/`oneOf`/`anyOf` there, and every
//! `$ref` resolved inside the schema (under `$defs`). The arguments are still read under the
//! rules of their type ([`http_kit::request::rules`]): the alternatives a flattened `oneOf`
//! stated are enforced by the server and said in the schema's description.

use std::sync::OnceLock;

use http_kit::openapi::schemas::referenced_names;
use serde_json::{Map, Value, json};

const DEFS: &str = "#/$defs/";
const COMPONENTS: &str = "#/components/schemas/";

/// The schema a client is shown for arguments whose rules are `schema` (self-contained, its
/// references under `$defs`).
pub fn for_tool(mut schema: Value) -> Value {
    let mut defs = match schema.as_object_mut().and_then(|s| s.remove("$defs")) {
        Some(Value::Object(defs)) => defs,
        _ => Map::new(),
    };
    let mut flat = Flat {
        description: schema
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned),
        ..Flat::default()
    };
    flatten(&schema, &defs, &mut flat, true, 0);
    let mut out = Map::new();
    out.insert("type".into(), json!("object"));
    let mut description = flat.description.unwrap_or_default();
    for forms in &flat.alternatives {
        if !description.is_empty() {
            description.push(' ');
        }
        description.push_str(forms);
    }
    if !description.is_empty() {
        out.insert("description".into(), Value::String(description));
    }
    out.insert("properties".into(), Value::Object(flat.properties));
    if !flat.required.is_empty() {
        out.insert(
            "required".into(),
            Value::Array(flat.required.into_iter().map(Value::String).collect()),
        );
    }
    out.insert("additionalProperties".into(), Value::Bool(false));
    let mut out = Value::Object(out);
    point_components_at_defs(&mut out);
    carry_defs(&mut out, &mut defs);
    out
}

/// A top-level object being assembled from the parts of a composed schema.
#[derive(Default)]
struct Flat {
    properties: Map<String, Value>,
    required: Vec<String>,
    description: Option<String>,
    /// Sentences saying which alternatives a flattened `oneOf`/`anyOf` allowed.
    alternatives: Vec<String>,
}

fn resolve<'a>(schema: &'a Value, defs: &'a Map<String, Value>) -> &'a Value {
    let mut schema = schema;
    for _ in 0..8 {
        match schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix(DEFS).or_else(|| r.strip_prefix(COMPONENTS)))
            .and_then(|name| defs.get(name))
        {
            Some(target) => schema = target,
            None => break,
        }
    }
    schema
}

fn is_null(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

/// Adds what `schema` says of the top-level object to `flat`. `binding`: its `required`
/// members hold whatever else is given (not so in one alternative of several).
fn flatten(
    schema: &Value,
    defs: &Map<String, Value>,
    flat: &mut Flat,
    binding: bool,
    depth: usize,
) {
    let schema = resolve(schema, defs);
    if depth > 8 {
        return;
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            merge_property(&mut flat.properties, name, property);
        }
    }
    if binding {
        for name in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(name) = name.as_str()
                && !flat.required.iter().any(|r| r == name)
            {
                flat.required.push(name.to_owned());
            }
        }
    }
    for part in schema
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        flatten(part, defs, flat, binding, depth + 1);
    }
    for (key, how) in [("oneOf", "Exactly one"), ("anyOf", "At least one")] {
        let variants: Vec<&Value> = schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|v| resolve(v, defs))
            .filter(|v| !is_null(v))
            .collect();
        if variants.is_empty() {
            continue;
        }
        let mut forms = Vec::new();
        let mut common: Option<Vec<String>> = None;
        for variant in &variants {
            let mut part = Flat::default();
            flatten(variant, defs, &mut part, true, depth + 1);
            forms.push(form(&part));
            common = Some(match common {
                None => part.required.clone(),
                Some(c) => c
                    .into_iter()
                    .filter(|n| part.required.contains(n))
                    .collect(),
            });
            for (name, property) in part.properties {
                merge_property(&mut flat.properties, &name, &property);
            }
            flat.alternatives.extend(part.alternatives);
        }
        if binding {
            for name in common.unwrap_or_default() {
                if !flat.required.contains(&name) {
                    flat.required.push(name);
                }
            }
        }
        forms.dedup();
        if forms.len() > 1 {
            flat.alternatives.push(format!(
                "{how} of these forms is accepted (the server refuses the others): {}.",
                forms.join("; or ")
            ));
        }
    }
    for key in ["if", "then", "else"] {
        if let Some(branch) = schema.get(key) {
            flatten(branch, defs, flat, false, depth + 1);
        }
    }
}

/// One alternative in words: its required members and the values it fixes.
fn form(part: &Flat) -> String {
    let mut words: Vec<String> = Vec::new();
    for (name, property) in &part.properties {
        let fixed = property.get("const").cloned().or_else(|| {
            match property.get("enum").and_then(Value::as_array) {
                Some(values) if values.len() == 1 => Some(values[0].clone()),
                _ => None,
            }
        });
        if let Some(value) = fixed {
            words.push(format!("`{name}` = {value}"));
        }
    }
    for name in &part.required {
        if !words.iter().any(|w| w.starts_with(&format!("`{name}` ="))) {
            words.push(format!("`{name}`"));
        }
    }
    if words.is_empty() {
        let names: Vec<String> = part.properties.keys().map(|n| format!("`{n}`")).collect();
        return format!("any of {}", names.join(", "));
    }
    words.join(" with ")
}

/// Adds `property` under `name`; a name two parts declare differently takes either (enums
/// of one type are joined).
fn merge_property(properties: &mut Map<String, Value>, name: &str, property: &Value) {
    let Some(existing) = properties.get_mut(name) else {
        properties.insert(name.to_owned(), property.clone());
        return;
    };
    if existing == property {
        return;
    }
    if let (Some(ours), Some(theirs)) = (
        existing.get("enum").and_then(Value::as_array).cloned(),
        property.get("enum").and_then(Value::as_array),
    ) && existing.get("type") == property.get("type")
    {
        let mut joined = ours;
        for value in theirs {
            if !joined.contains(value) {
                joined.push(value.clone());
            }
        }
        existing["enum"] = Value::Array(joined);
        return;
    }
    let only_alternatives = existing.as_object().is_some_and(|e| e.len() == 1);
    if only_alternatives && let Some(Value::Array(variants)) = existing.get_mut("anyOf") {
        if !variants.contains(property) {
            variants.push(property.clone());
        }
        return;
    }
    *existing = json!({ "anyOf": [existing.clone(), property.clone()] });
}

fn point_components_at_defs(schema: &mut Value) {
    match schema {
        Value::Object(members) => {
            if let Some(Value::String(reference)) = members.get_mut("$ref")
                && let Some(name) = reference.strip_prefix(COMPONENTS)
            {
                *reference = format!("{DEFS}{name}");
            }
            members.values_mut().for_each(point_components_at_defs);
        }
        Value::Array(items) => items.iter_mut().for_each(point_components_at_defs),
        _ => {}
    }
}

/// Puts under `$defs` every schema the flattened schema refers to, directly or not: from the
/// type's own definitions, else from the service's OpenAPI components (a query parameter's
/// type is not carried by its parameter list).
fn carry_defs(schema: &mut Value, defs: &mut Map<String, Value>) {
    let mut carried = Map::new();
    let mut pending = Vec::new();
    referenced_names(schema, DEFS, &mut pending);
    while let Some(name) = pending.pop() {
        if carried.contains_key(&name) {
            continue;
        }
        let found = defs
            .remove(&name)
            .or_else(|| components().get(&name).cloned());
        if let Some(mut component) = found {
            point_components_at_defs(&mut component);
            referenced_names(&component, DEFS, &mut pending);
            carried.insert(name, component);
        }
    }
    if !carried.is_empty() {
        schema["$defs"] = Value::Object(carried);
    }
}

/// The component schemas of the service's OpenAPI document ([`crate::openapi_document`]).
fn components() -> &'static Map<String, Value> {
    static COMPONENTS: OnceLock<Map<String, Value>> = OnceLock::new();
    COMPONENTS.get_or_init(|| {
        let document = serde_json::to_value(crate::openapi_document()).unwrap_or_default();
        match &document["components"]["schemas"] {
            Value::Object(schemas) => schemas.clone(),
            _ => Map::new(),
        }
    })
}

/// Where `schema` breaks what MCP clients require of an input schema (empty when nowhere).
pub fn problems(schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    if schema["type"] != "object" {
        found.push("the top level is not `type: object`".to_owned());
    }
    if !schema["properties"].is_object() {
        found.push("the top level has no `properties`".to_owned());
    }
    if schema["additionalProperties"] != false {
        found.push("the top level does not say `additionalProperties: false`".to_owned());
    }
    for key in ["allOf", "oneOf", "anyOf", "not", "if", "then", "else"] {
        if schema.get(key).is_some() {
            found.push(format!("the top level has `{key}`"));
        }
    }
    let mut refs = Vec::new();
    collect_all_refs(schema, &mut refs);
    for reference in refs {
        let resolved = reference
            .strip_prefix("#/")
            .map(|pointer| format!("/{pointer}"))
            .is_some_and(|pointer| schema.pointer(&pointer).is_some());
        if !resolved {
            found.push(format!(
                "`$ref` {reference} does not resolve inside the schema"
            ));
        }
    }
    found
}

fn collect_all_refs(schema: &Value, refs: &mut Vec<String>) {
    match schema {
        Value::Object(members) => {
            if let Some(reference) = members.get("$ref").and_then(Value::as_str) {
                refs.push(reference.to_owned());
            }
            members.values().for_each(|v| collect_all_refs(v, refs));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_all_refs(v, refs)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_composed_schema_becomes_one_closed_object_with_its_alternatives_described() {
        let schema = json!({
            "allOf": [{"$ref": "#/$defs/Base"}],
            "oneOf": [
                {"type": "object", "required": ["kind", "email"],
                    "properties": {"kind": {"type": "string", "enum": ["a"]}, "email": {"type": "string"}}},
                {"type": "object", "required": ["kind", "contact_id"],
                    "properties": {"kind": {"type": "string", "enum": ["b"]}, "contact_id": {"$ref": "#/$defs/Id"}}}
            ],
            "$defs": {
                "Base": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
                "Id": {"type": "string", "format": "uuid"},
                "Unused": {"type": "string"}
            }
        });
        let flat = for_tool(schema);
        assert_eq!(problems(&flat), Vec::<String>::new(), "{flat:#}");
        assert_eq!(flat["required"], json!(["name", "kind"]));
        assert_eq!(flat["properties"]["kind"]["enum"], json!(["a", "b"]));
        assert_eq!(
            flat["$defs"],
            json!({"Id": {"type": "string", "format": "uuid"}})
        );
        let description = flat["description"].as_str().unwrap();
        assert!(
            description
                .contains("`kind` = \"a\" with `email`; or `kind` = \"b\" with `contact_id`"),
            "{description}"
        );
    }

    #[test]
    fn a_reference_to_a_component_is_carried() {
        let flat = for_tool(json!({"type": "object", "properties": {
            "x": {"$ref": "#/components/schemas/MailError"}
        }}));
        assert_eq!(problems(&flat), Vec::<String>::new(), "{flat:#}");
        assert!(flat["$defs"]["MailError"].is_object());
    }
}
