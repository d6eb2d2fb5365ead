//! What the generated document states beyond what utoipa writes, so that it says what the
//! server enforces and code generators and linters read it right:
//!
//! - a free-form object (`type: object` and nothing else: a kernel, `properties`, `metadata`)
//!   says `additionalProperties: true`: it takes any member of any value (a bare object is
//!   read by some generators as an object with no members at all);
//! - an array with no `items` says `items: {}` (any item);
//! - an object a request carries that declares its members says `additionalProperties:
//!   false` (one composed with `allOf`/`oneOf`/`anyOf` says `unevaluatedProperties: false`,
//!   which sees through the composition; one that picks an `if`/`then`/`else` branch leaves
//!   it to the branch's own schema): unknown members are
//!   refused (400 naming them), as the server's reader does;
//! - the document's server is the origin it is served from (`servers: [{url: "/"}]`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

/// The prefix of a `$ref` to one of the document's component schemas.
pub const COMPONENT_REF: &str = "#/components/schemas/";
/// Request bodies a standard keeps open: RFC 7591 client metadata (the server "MUST ignore any
/// client metadata sent by the client that it does not understand").
const OPEN_BY_STANDARD: [&str; 1] = ["RegistrationRequest"];
const COMPOSITIONS: [&str; 3] = ["allOf", "oneOf", "anyOf"];
const CONDITIONALS: [&str; 4] = ["if", "then", "else", "not"];

pub fn state_what_is_enforced(document: &mut Value) {
    if document
        .get("servers")
        .is_none_or(|s| s.as_array().is_none_or(Vec::is_empty))
    {
        document["servers"] = json!([{
            "url": "/",
            "description": "The origin this document is served from"
        }]);
    }
    let requests = request_components(document);
    let parts = composition_parts(document);
    let components = document
        .pointer("/components/schemas")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(schemas) = document
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    {
        for (name, schema) in schemas.iter_mut() {
            if OPEN_BY_STANDARD.contains(&name.as_str()) {
                schema["additionalProperties"] = Value::Bool(true);
            } else if requests.contains(name) {
                close(schema, !parts.contains(name), &components, &BTreeSet::new());
            }
        }
    }
    if let Some(paths) = document.get_mut("paths").and_then(Value::as_object_mut) {
        for operation in paths.values_mut().filter_map(Value::as_object_mut) {
            for operation in operation.values_mut() {
                if let Some(content) = operation
                    .pointer_mut("/requestBody/content")
                    .and_then(Value::as_object_mut)
                {
                    for media in content.values_mut() {
                        if let Some(schema) = media.get_mut("schema") {
                            close(schema, true, &components, &BTreeSet::new());
                        }
                    }
                }
            }
        }
    }
    open_free_form(document);
}

/// `additionalProperties: true` on every bare object, `items: {}` on every array without.
fn open_free_form(value: &mut Value) {
    match value {
        Value::Object(members) => {
            let types = |t: &str| match members.get("type") {
                Some(Value::String(s)) => s == t,
                Some(Value::Array(ts)) => ts.iter().any(|x| x == t),
                _ => false,
            };
            let (object, array) = (types("object"), types("array"));
            let bare = object
                && !members.contains_key("properties")
                && !members.contains_key("additionalProperties")
                && !members.contains_key("$ref")
                && !COMPOSITIONS.iter().any(|k| members.contains_key(*k))
                && !CONDITIONALS.iter().any(|k| members.contains_key(*k));
            if bare {
                members.insert("additionalProperties".into(), Value::Bool(true));
            }
            if array && !members.contains_key("items") && !members.contains_key("prefixItems") {
                members.insert("items".into(), json!({}));
            }
            members.values_mut().for_each(open_free_form);
        }
        Value::Array(items) => items.iter_mut().for_each(open_free_form),
        _ => {}
    }
}

/// Says that `schema` (when `instance`: it describes a whole value, not a part of a
/// composition) and the objects nested in it are closed. `shared` names the members that one
/// part of an enclosing composition opens while another lists some of their keys: each part
/// sees only some of such a member's rules, so none of them closes it.
fn close(
    schema: &mut Value,
    instance: bool,
    components: &Map<String, Value>,
    shared: &BTreeSet<String>,
) {
    let closed = instance && closed_object(schema, components, 0);
    let Some(members) = schema.as_object_mut() else {
        return;
    };
    let optional = optional_variant(members).is_some();
    let composed = !optional
        && (COMPOSITIONS.iter().any(|k| members.contains_key(*k))
            || CONDITIONALS.iter().any(|k| members.contains_key(*k)));
    // A conditional (`if`/`then`/`else`) picks a branch whose own schema states its members;
    // `unevaluatedProperties` beside one is also what request generators cannot read.
    let conditional = CONDITIONALS.iter().any(|k| members.contains_key(*k));
    if closed && !members.contains_key("additionalProperties") {
        if composed && !conditional {
            members.insert("unevaluatedProperties".into(), Value::Bool(false));
        } else if members.get("properties").is_some_and(Value::is_object) {
            members.insert("additionalProperties".into(), Value::Bool(false));
        }
    }
    let none = BTreeSet::new();
    if let Some(properties) = members.get_mut("properties").and_then(Value::as_object_mut) {
        for (name, property) in properties.iter_mut() {
            close(property, !shared.contains(name), components, &none);
        }
    }
    if let Some(items) = members.get_mut("items") {
        close(items, instance, components, &none);
    }
    if let Some(extra @ Value::Object(_)) = members.get_mut("additionalProperties") {
        close(extra, instance, components, &none);
    }
    let mut in_parts = shared.clone();
    if composed {
        let mut described = BTreeMap::new();
        part_members(&Value::Object(members.clone()), &mut described);
        // A member one part opens (its objects take any key) while another lists some of
        // its keys: the part that lists them has only some of its rules.
        in_parts.extend(
            described
                .into_iter()
                .filter(|(_, schemas)| {
                    schemas.iter().any(|s| *s != schemas[0]) && schemas.iter().any(opens)
                })
                .map(|(name, _)| name),
        );
    }
    for key in COMPOSITIONS {
        if let Some(Value::Array(variants)) = members.get_mut(key) {
            // In `oneOf: [null, X]` (an optional X), X is the whole value.
            variants
                .iter_mut()
                .for_each(|v| close(v, optional, components, &in_parts));
        }
    }
}

/// Whether `schema` (or its items) says its objects take any member.
fn opens(schema: &Value) -> bool {
    matches!(
        schema.get("additionalProperties"),
        Some(Value::Bool(true) | Value::Object(_))
    ) || schema.get("items").is_some_and(opens)
}

/// The schemas each member has in the parts of the composition `schema` (its parts' own
/// compositions and conditional branches included).
fn part_members(schema: &Value, into: &mut BTreeMap<String, Vec<Value>>) {
    let Some(members) = schema.as_object() else {
        return;
    };
    let parts = COMPOSITIONS
        .iter()
        .filter_map(|k| members.get(*k).and_then(Value::as_array))
        .flatten()
        .chain(["then", "else"].iter().filter_map(|k| members.get(*k)));
    for part in parts {
        for (name, property) in part
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            into.entry(name.clone()).or_default().push(property.clone());
        }
        part_members(part, into);
    }
}

/// The `X` of `oneOf: [{type: null}, X]` (utoipa's optional reference).
fn optional_variant(members: &Map<String, Value>) -> Option<&Value> {
    let variants = members.get("oneOf")?.as_array()?;
    match variants.as_slice() {
        [a, b] if a.get("type") == Some(&json!("null")) => Some(b),
        [a, b] if b.get("type") == Some(&json!("null")) => Some(a),
        _ => None,
    }
}

fn resolve<'a>(schema: &'a Value, components: &'a Map<String, Value>) -> Option<&'a Value> {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => components.get(reference.strip_prefix(COMPONENT_REF)?),
        None => Some(schema),
    }
}

/// Whether an object `schema` describes has a closed set of members: some part declares
/// them, and no part takes any (free-form, a map, `additionalProperties: true`). What the
/// server's reader holds objects to.
fn closed_object(schema: &Value, components: &Map<String, Value>, depth: usize) -> bool {
    fn walk(schema: &Value, c: &Map<String, Value>, depth: usize, declared: &mut bool) -> bool {
        let Some(members) = resolve(schema, c).and_then(Value::as_object) else {
            return false;
        };
        if depth > 16 {
            return false;
        }
        let takes_object = match members.get("type") {
            None => true,
            Some(Value::String(t)) => t == "object",
            Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
            Some(_) => true,
        };
        if !takes_object {
            return true;
        }
        let composed = COMPOSITIONS.iter().any(|k| members.contains_key(*k))
            || CONDITIONALS.iter().any(|k| members.contains_key(*k));
        match members.get("additionalProperties") {
            Some(Value::Bool(true) | Value::Object(_)) => return false,
            Some(Value::Bool(false)) => *declared = true,
            _ => {}
        }
        if members.get("properties").is_some_and(Value::is_object) {
            *declared = true;
        } else if !composed
            && members.contains_key("type")
            && !members.contains_key("additionalProperties")
        {
            return false;
        }
        let parts = COMPOSITIONS
            .iter()
            .filter_map(|k| members.get(*k).and_then(Value::as_array))
            .flatten()
            .chain(["then", "else"].iter().filter_map(|k| members.get(*k)));
        for part in parts {
            if !walk(part, c, depth + 1, declared) {
                return false;
            }
        }
        true
    }
    let mut declared = false;
    walk(schema, components, depth, &mut declared) && declared
}

/// The names of the schemas `schema` refers to at any depth with a `$ref` that starts with
/// `prefix` (the document's components, or a tool schema's `$defs`), in the order met.
pub fn referenced_names(schema: &Value, prefix: &str, into: &mut impl Extend<String>) {
    match schema {
        Value::Object(members) => {
            if let Some(name) = members
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix(prefix))
            {
                into.extend([name.to_owned()]);
            }
            members
                .values()
                .for_each(|v| referenced_names(v, prefix, into));
        }
        Value::Array(items) => items.iter().for_each(|v| referenced_names(v, prefix, into)),
        _ => {}
    }
}

/// The components `roots` reach, directly or through other components.
fn reach(document: &Value, roots: &[&Value]) -> BTreeSet<String> {
    let empty = Map::new();
    let schemas = document
        .pointer("/components/schemas")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut found = BTreeSet::new();
    roots
        .iter()
        .for_each(|root| referenced_names(root, COMPONENT_REF, &mut found));
    let mut pending: Vec<String> = found.iter().cloned().collect();
    while let Some(name) = pending.pop() {
        let mut more = BTreeSet::new();
        if let Some(schema) = schemas.get(&name) {
            referenced_names(schema, COMPONENT_REF, &mut more);
        }
        for name in more {
            if found.insert(name.clone()) {
                pending.push(name);
            }
        }
    }
    found
}

/// Components that request bodies reach.
fn request_components(document: &Value) -> BTreeSet<String> {
    let mut requests = Vec::new();
    for item in document["paths"]
        .as_object()
        .into_iter()
        .flat_map(Map::values)
    {
        for operation in item.as_object().into_iter().flat_map(Map::values) {
            if let Some(body) = operation.get("requestBody") {
                requests.push(body);
            }
        }
    }
    reach(document, &requests)
}

/// Components that are referred to as a part of an `allOf`, `oneOf` or `anyOf`, or from a
/// conditional.
fn composition_parts(document: &Value) -> BTreeSet<String> {
    fn walk(value: &Value, into: &mut BTreeSet<String>) {
        match value {
            Value::Object(members) => {
                let optional = optional_variant(members);
                for key in COMPOSITIONS {
                    for part in members
                        .get(key)
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        if optional.is_some_and(|o| std::ptr::eq(o, part)) {
                            continue;
                        }
                        if let Some(name) = part
                            .get("$ref")
                            .and_then(Value::as_str)
                            .and_then(|r| r.strip_prefix(COMPONENT_REF))
                        {
                            into.insert(name.to_owned());
                        }
                    }
                }
                for key in CONDITIONALS {
                    if let Some(branch) = members.get(key) {
                        referenced_names(branch, COMPONENT_REF, into);
                    }
                }
                members.values().for_each(|v| walk(v, into));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, into)),
            _ => {}
        }
    }
    let mut found = BTreeSet::new();
    walk(document, &mut found);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_objects_are_closed_free_form_ones_open_and_shared_ones_left_alone() {
        let mut document = json!({
            "paths": {"/x": {"post": {
                "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/In"}}}},
                "responses": {"200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Out"}}}}}
            }}},
            "components": {"schemas": {
                "In": {"type": "object", "properties": {
                    "meta": {"type": "object"},
                    "inner": {"type": "object", "properties": {"a": {"type": "array"}}},
                    "out": {"$ref": "#/components/schemas/Out"},
                    "part": {"allOf": [{"$ref": "#/components/schemas/Part"}, {"type": "object", "properties": {"b": {}}}]}
                }},
                "Part": {"type": "object", "properties": {"p": {}}},
                "Out": {"type": "object", "properties": {"o": {}}},
                "Unused": {"type": "object", "properties": {"u": {}}}
            }}
        });
        state_what_is_enforced(&mut document);
        let schemas = &document["components"]["schemas"];
        assert_eq!(schemas["In"]["additionalProperties"], false);
        assert_eq!(
            schemas["In"]["properties"]["meta"]["additionalProperties"],
            true
        );
        assert_eq!(
            schemas["In"]["properties"]["inner"]["additionalProperties"],
            false
        );
        assert_eq!(
            schemas["In"]["properties"]["inner"]["properties"]["a"]["items"],
            json!({})
        );
        let part = &schemas["In"]["properties"]["part"];
        assert_eq!(part["unevaluatedProperties"], false);
        assert!(part["allOf"][1].get("additionalProperties").is_none());
        assert!(schemas["Part"].get("additionalProperties").is_none());
        assert_eq!(schemas["Out"]["additionalProperties"], false);
        assert!(schemas["Unused"].get("additionalProperties").is_none());
        assert_eq!(document["servers"][0]["url"], "/");
    }
}
