//! The rules a request must follow, read back from the OpenAPI schema utoipa generates for its
//! type: what the document states is exactly what is enforced, so the two cannot drift.
//!
//! The subset of JSON Schema checked: `type` (with `null`), `enum`, `minLength`, `maxLength`,
//! `pattern`, `format` (see [`super::formats`]), `minimum`, `maximum`, `minItems`,
//! `maxItems`, `items`, `maxProperties`, `properties`, `required`, `additionalProperties`, `oneOf`, `anyOf`,
//! `allOf`, `if`/`then`/`else` and local `$ref`s. A `null` member of an object with declared properties is
//! removed first: null means absent (unless the object says `additionalProperties: true`,
//! as a merge patch does, where null deletes a key).
//!
//! Objects are closed: a member that no part of the object's schema declares (its
//! `properties`, those of every `allOf` part, `oneOf`/`anyOf` variant and `if`/`then`/`else`
//! branch) is refused, naming it and the declared name it was probably meant to be. An object
//! whose schema declares no properties, or says `additionalProperties: true` or gives a schema
//! for them (a map), is free-form and keeps any key.

use std::any::TypeId;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

use regex::Regex;
use serde_json::{Map, Value, json};
use utoipa::openapi::path::ParameterIn;
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiError;
use crate::openapi::schemas::{COMPONENT_REF, referenced_names};

mod check;
mod keywords;
#[cfg(test)]
mod tests;
mod unbounded;
mod unknown;

use check::{collect_patterns, field_error, is_null_type, primary_type};
use keywords::Keywords;
pub use unbounded::unbounded_request_strings;
pub use unknown::{refuse_unknown, unknown_field};

/// The pattern of a string that must not be blank: it holds a character that is neither
/// Unicode white space (what `str::trim` removes) nor a byte-order mark. Spelled out rather
/// than `\S` because documents are read with ECMA-262's `\s`, which leaves out U+0085 and
/// takes in U+FEFF: with this class both dialects agree on every character. Route attributes
/// repeat it literally (utoipa takes only literals there).
pub const NOT_BLANK: &str = r"[^\s\x85\uFEFF]";

/// The pattern of one line of text that is not blank: no control character (C0, DEL, C1)
/// but the white space trimming removes at its ends (Unicode White_Space, spelled out: the
/// dialects' `\s` differ). Route attributes repeat it literally.
pub const ONE_LINE_NOT_BLANK: &str = r"^[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*[^\x00-\x1f\x7f-\x9f]*[^\s\x85\uFEFF\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$";

/// How a value outside an `enum` is refused (the allowed values follow).
const ENUM_PROBLEM: &str = "must be one of: ";

/// A request type's schema with the schemas it refers to and its compiled patterns.
#[derive(Debug)]
pub struct Rules {
    root: Value,
    components: Map<String, Value>,
    patterns: HashMap<String, Regex>,
    /// [`Rules::property_names`], worked out at first use.
    names: OnceLock<Vec<String>>,
}

type Cache = RwLock<HashMap<TypeId, &'static Rules>>;

/// The rules of a type, built once per process and kept for its life (a type's schema never
/// changes). Each thread remembers those it used, so a request touches no lock or counter
/// another core writes.
fn cached(id: TypeId, build: impl FnOnce() -> Rules) -> &'static Rules {
    thread_local! {
        static SEEN: RefCell<HashMap<TypeId, &'static Rules>> = RefCell::default();
    }
    if let Some(rules) = SEEN.with(|seen| seen.borrow().get(&id).copied()) {
        return rules;
    }
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Cache::default);
    let known = cache
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(&id)
        .copied();
    let rules = known.unwrap_or_else(|| {
        let built = build();
        *cache
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .entry(id)
            .or_insert_with(|| Box::leak(Box::new(built)))
    });
    SEEN.with(|seen| seen.borrow_mut().insert(id, rules));
    rules
}

/// The rules of a JSON body of type `T`.
pub fn of_body<T: ToSchema + 'static>() -> &'static Rules {
    cached(TypeId::of::<T>(), || {
        let mut nested = Vec::new();
        T::schemas(&mut nested);
        let mut components = Map::new();
        for (name, schema) in nested {
            components.insert(name, to_value(&schema));
        }
        let root = to_value(&T::schema());
        components.insert(T::name().into_owned(), root.clone());
        Rules::new(root, components)
    })
}

/// The rules of a query string read into `T`, as an object of its parameters.
pub fn of_query<T: IntoParams + 'static>() -> &'static Rules {
    cached(TypeId::of::<T>(), || {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for param in T::into_params(|| Some(ParameterIn::Query)) {
            let param = to_value(&param);
            let Some(name) = param["name"].as_str().map(str::to_owned) else {
                continue;
            };
            if param["required"] == Value::Bool(true) {
                required.push(Value::String(name.clone()));
            }
            properties.insert(name, param.get("schema").cloned().unwrap_or(json!({})));
        }
        let root = json!({ "type": "object", "properties": properties, "required": required });
        Rules::new(root, Map::new())
    })
}

fn point_refs_at_defs(schema: &mut Value) {
    match schema {
        Value::Object(members) => {
            if let Some(Value::String(reference)) = members.get_mut("$ref")
                && let Some(name) = reference.strip_prefix(COMPONENT_REF)
            {
                *reference = format!("#/$defs/{name}");
            }
            members.values_mut().for_each(point_refs_at_defs);
        }
        Value::Array(items) => items.iter_mut().for_each(point_refs_at_defs),
        _ => {}
    }
}

fn to_value(schema: &impl serde::Serialize) -> Value {
    serde_json::to_value(schema).unwrap_or(Value::Null)
}

impl Rules {
    fn new(root: Value, components: Map<String, Value>) -> Self {
        let mut patterns = HashMap::new();
        collect_patterns(&root, &mut patterns);
        for schema in components.values() {
            collect_patterns(schema, &mut patterns);
        }
        Self {
            root,
            components,
            patterns,
            names: OnceLock::new(),
        }
    }

    /// Checks `value`, removing the `null` members of typed objects; the 400 names the field.
    ///
    /// Unknown members are found first, over the value as given: one that looks like a
    /// misspelling of a declared member is named before any other problem (which the
    /// misspelling may have caused, as a missing required member); other unknown members
    /// after the schema's rules.
    pub fn check(&self, value: &mut Value) -> Result<(), ApiError> {
        let mut unknown = Vec::new();
        self.find_unknown(&[&self.root], value, &mut String::new(), &mut unknown);
        let misspelled = unknown.iter().position(|u| u.misspelled);
        if let Some(found) = misspelled.map(|i| &unknown[i]) {
            return Err(field_error(&found.path, &found.problem));
        }
        let mut path = String::new();
        self.check_at(&self.root, value, &mut path)
            .map_err(|problem| field_error(&path, &problem))?;
        match unknown.first() {
            Some(found) => Err(field_error(&found.path, &found.problem)),
            None => Ok(()),
        }
    }

    /// The rules as one self-contained JSON Schema (2020-12): the schemas it refers to under
    /// `$defs`. What an MCP client is shown as a tool's input schema is what is enforced.
    pub fn json_schema(&self) -> Value {
        let mut schema = self.root.clone();
        let mut used = Map::new();
        let mut pending = Vec::new();
        referenced_names(&schema, COMPONENT_REF, &mut pending);
        while let Some(name) = pending.pop() {
            if used.contains_key(&name) {
                continue;
            }
            if let Some(component) = self.components.get(&name) {
                referenced_names(component, COMPONENT_REF, &mut pending);
                used.insert(name, component.clone());
            }
        }
        if let Value::Object(members) = &mut schema
            && !used.is_empty()
        {
            members.insert("$defs".to_owned(), Value::Object(used));
        }
        point_refs_at_defs(&mut schema);
        schema
    }

    /// The declared type of the query parameter (or top-level property) `name`.
    pub fn property_type(&self, name: &str) -> Option<&str> {
        let schema = self.resolve(self.root.get("properties")?.get(name)?);
        primary_type(self.non_null_variant(schema))
    }

    fn resolve<'a>(&'a self, schema: &'a Value) -> &'a Value {
        match schema.get("$ref") {
            Some(reference) => self.referenced(reference),
            None => schema,
        }
    }

    /// `schema` with its references followed (a few in a row at most), and its keywords.
    fn keywords<'a>(&'a self, mut schema: &'a Value) -> (&'a Value, Keywords<'a>) {
        let mut keywords = Keywords::of(schema);
        for _ in 0..8 {
            let Some(reference) = keywords.reference else {
                break;
            };
            schema = self.referenced(reference);
            keywords = Keywords::of(schema);
        }
        (schema, keywords)
    }

    /// The schema a `$ref` names (`true`, anything, when it names none).
    fn referenced<'a>(&'a self, reference: &'a Value) -> &'a Value {
        reference
            .as_str()
            .and_then(|reference| reference.rsplit('/').next())
            .and_then(|name| self.components.get(name))
            .unwrap_or(&Value::Bool(true))
    }

    /// For `oneOf: [{type: null}, X]` (utoipa's optional reference), `X`.
    fn non_null_variant<'a>(&'a self, schema: &'a Value) -> &'a Value {
        let Some(variants) = schema.get("oneOf").and_then(Value::as_array) else {
            return schema;
        };
        variants
            .iter()
            .map(|v| self.resolve(v))
            .find(|v| !is_null_type(v))
            .unwrap_or(schema)
    }

    /// `schema` and every part of it that applies to the same value (its `allOf` parts,
    /// `oneOf`/`anyOf` variants and `then`/`else` branches), references resolved.
    fn expand<'a>(
        &'a self,
        schema: &'a Value,
        into: &mut Vec<(&'a Value, Keywords<'a>)>,
        depth: usize,
    ) {
        let (schema, keywords) = self.keywords(schema);
        into.push((schema, keywords));
        if depth > 16 {
            return;
        }
        for composition in [keywords.all_of, keywords.one_of, keywords.any_of] {
            for part in Keywords::parts(composition) {
                self.expand(part, into, depth + 1);
            }
        }
        for branch in [keywords.then, keywords.otherwise].into_iter().flatten() {
            self.expand(branch, into, depth + 1);
        }
    }
}
