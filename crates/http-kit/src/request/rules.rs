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
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, OnceLock, RwLock};

use regex::Regex;
use serde_json::{Map, Value, json};
use utoipa::openapi::path::ParameterIn;
use utoipa::{IntoParams, ToSchema};

use super::formats;
use crate::error::ApiError;
use crate::openapi::schemas::{COMPONENT_REF, referenced_names};

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
}

type Cache = RwLock<HashMap<TypeId, Arc<Rules>>>;

fn cached(id: TypeId, build: impl FnOnce() -> Rules) -> Arc<Rules> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Cache::default);
    if let Some(rules) = cache.read().unwrap_or_else(|e| e.into_inner()).get(&id) {
        return rules.clone();
    }
    let rules = Arc::new(build());
    cache
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id, rules.clone());
    rules
}

/// The rules of a JSON body of type `T`.
pub fn of_body<T: ToSchema + 'static>() -> Arc<Rules> {
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
pub fn of_query<T: IntoParams + 'static>() -> Arc<Rules> {
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
        match schema.get("$ref").and_then(Value::as_str) {
            Some(reference) => reference
                .rsplit('/')
                .next()
                .and_then(|name| self.components.get(name))
                .unwrap_or(&Value::Bool(true)),
            None => schema,
        }
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
    fn expand<'a>(&'a self, schema: &'a Value, into: &mut Vec<&'a Value>, depth: usize) {
        let schema = self.resolve(schema);
        into.push(schema);
        if depth > 16 {
            return;
        }
        for key in ["allOf", "oneOf", "anyOf"] {
            for part in schema
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                self.expand(part, into, depth + 1);
            }
        }
        for key in ["then", "else"] {
            if let Some(branch) = schema.get(key) {
                self.expand(branch, into, depth + 1);
            }
        }
    }

    /// Records, in document order, every object in `value` with members that none of the
    /// `schemas` describing it declares. A member's schemas are those of every part that
    /// declares it: a part of a composition alone may describe a nested object partly.
    fn find_unknown(
        &self,
        schemas: &[&Value],
        value: &Value,
        path: &mut String,
        found: &mut Vec<Unknown>,
    ) {
        let mut parts = Vec::new();
        for schema in schemas {
            self.expand(schema, &mut parts, 0);
        }
        match value {
            Value::Object(members) => {
                let mut shape = Shape::default();
                for part in &parts {
                    self.collect_shape(part, &mut shape);
                }
                if shape.closed && !shape.open {
                    let unknown: Vec<&String> = members
                        .keys()
                        .filter(|name| !shape.names.contains(name))
                        .collect();
                    if !unknown.is_empty() {
                        let (name, problem) = unknown_members(&unknown, &shape.names);
                        let len = path.len();
                        push_key(path, name);
                        found.push(Unknown {
                            path: path.clone(),
                            misspelled: closest(name, shape.names.iter().map(String::as_str))
                                .is_some(),
                            problem,
                        });
                        path.truncate(len);
                    }
                }
                for (name, member) in members {
                    let member_schemas: Vec<&Value> = parts
                        .iter()
                        .filter_map(|part| {
                            part.get("properties")
                                .and_then(|p| p.get(name))
                                .or_else(|| {
                                    part.get("additionalProperties").filter(|a| a.is_object())
                                })
                        })
                        .collect();
                    if !member_schemas.is_empty() {
                        let len = path.len();
                        push_key(path, name);
                        self.find_unknown(&member_schemas, member, path, found);
                        path.truncate(len);
                    }
                }
            }
            Value::Array(items) => {
                let item_schemas: Vec<&Value> =
                    parts.iter().filter_map(|part| part.get("items")).collect();
                if !item_schemas.is_empty() {
                    for (i, item) in items.iter().enumerate() {
                        let len = path.len();
                        write!(path, "[{i}]").expect("writing to a String");
                        self.find_unknown(&item_schemas, item, path, found);
                        path.truncate(len);
                    }
                }
            }
            _ => {}
        }
    }

    /// What one part of an object's schema says of its members' names (the parts come from
    /// [`Self::expand`]).
    fn collect_shape(&self, schema: &Value, shape: &mut Shape) {
        let Some(members) = self.resolve(schema).as_object() else {
            shape.open = true;
            return;
        };
        let takes_object = match members.get("type") {
            None => true,
            Some(Value::String(t)) => t == "object",
            Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
            Some(_) => true,
        };
        if !takes_object {
            return;
        }
        let composed = ["allOf", "oneOf", "anyOf", "if", "then", "else"]
            .iter()
            .any(|key| members.contains_key(*key));
        if let Some(properties) = members.get("properties").and_then(Value::as_object) {
            shape.names.extend(properties.keys().cloned());
            shape.closed = true;
        }
        match members.get("additionalProperties") {
            Some(Value::Bool(false)) => shape.closed = true,
            Some(Value::Bool(true) | Value::Object(_)) => shape.open = true,
            _ => {
                shape.open |= !members.contains_key("properties")
                    && !composed
                    && members.contains_key("type");
            }
        }
        // An `if` is a condition: the names it tests are known, but it closes nothing.
        if let Some(tested) = members
            .get("if")
            .and_then(|condition| self.resolve(condition).get("properties"))
            .and_then(Value::as_object)
        {
            shape.names.extend(tested.keys().cloned());
        }
    }

    /// The declared members of the top-level object (a query string's parameters).
    pub fn property_names(&self) -> Vec<String> {
        let mut parts = Vec::new();
        self.expand(&self.root, &mut parts, 0);
        let mut shape = Shape::default();
        for part in parts {
            self.collect_shape(part, &mut shape);
        }
        shape.names
    }

    /// Checks one value; on failure `path` is left at the offending field.
    fn check_at(&self, schema: &Value, value: &mut Value, path: &mut String) -> Result<(), String> {
        let schema = self.resolve(schema);
        if !schema.is_object() {
            return Ok(());
        }
        if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
            for part in all {
                self.check_at(part, value, path)?;
            }
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(variants) = schema.get(key).and_then(Value::as_array) {
                self.check_variants(variants, value, path)?;
            }
        }
        if let Some(types) = schema.get("type") {
            check_type(types, schema, value)?;
            integral_as_integer(types, value);
        }
        if !value.is_null() {
            if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
                && !allowed.contains(value)
            {
                let names: Vec<String> = allowed.iter().map(display).collect();
                return Err(format!("{ENUM_PROBLEM}{}", names.join(", ")));
            }
            match value {
                Value::String(s) => self.check_string(schema, s),
                Value::Number(_) => check_range(schema, value),
                Value::Array(items) => self.check_array(schema, items, path),
                Value::Object(members) => self.check_object(schema, members, path),
                Value::Bool(_) | Value::Null => Ok(()),
            }?;
        }
        self.check_conditional(schema, value, path)
    }

    /// `if`/`then`/`else`, after the schema's own rules: `then` applies to a value that passes
    /// `if`, `else` to one that does not. A rule that depends on another member (which
    /// operators a field takes) so names the member at fault, as no `oneOf` could.
    fn check_conditional(
        &self,
        schema: &Value,
        value: &mut Value,
        path: &mut String,
    ) -> Result<(), String> {
        let Some(condition) = schema.get("if") else {
            return Ok(());
        };
        let len = path.len();
        let holds = self.check_at(condition, &mut value.clone(), path).is_ok();
        path.truncate(len);
        match schema.get(if holds { "then" } else { "else" }) {
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

    fn check_string(&self, schema: &Value, s: &str) -> Result<(), String> {
        let min = schema.get("minLength").and_then(Value::as_u64);
        let max = schema.get("maxLength").and_then(Value::as_u64);
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
        if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
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
        if let Some(format) = schema.get("format").and_then(Value::as_str)
            && !formats::conforms(format, s)
        {
            return Err(formats::problem(format));
        }
        Ok(())
    }

    fn check_array(
        &self,
        schema: &Value,
        items: &mut [Value],
        path: &mut String,
    ) -> Result<(), String> {
        let count = items.len() as u64;
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
            && count > max
        {
            return Err(format!("must have at most {max} items"));
        }
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
            && count < min
        {
            return Err(format!("must have at least {min} items"));
        }
        let Some(item_schema) = schema.get("items") else {
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
        schema: &Value,
        members: &mut Map<String, Value>,
        path: &mut String,
    ) -> Result<(), String> {
        let empty = Map::new();
        let properties = schema.get("properties").and_then(Value::as_object);
        let additional = schema.get("additionalProperties");
        // A free-form object (`additionalProperties: true`, such as a merge patch) keeps its
        // null members: there a null says something (delete the key).
        if properties.is_some() && additional != Some(&Value::Bool(true)) {
            members.retain(|_, v| !v.is_null());
        }
        let properties = properties.unwrap_or(&empty);
        if let Some(max) = schema.get("maxProperties").and_then(Value::as_u64)
            && members.len() as u64 > max
        {
            return Err(format!("must have at most {max} members"));
        }
        for name in schema
            .get("required")
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

/// An object's members that its schema does not declare, as a refusal.
struct Unknown {
    path: String,
    problem: String,
    /// The member named looks like a misspelling of a declared one.
    misspelled: bool,
}

/// What an object's schema says of its members' names.
#[derive(Default)]
struct Shape {
    names: Vec<String>,
    /// Some part declares its members (or says `additionalProperties: false`).
    closed: bool,
    /// Some part lets any member in (free-form, a map, `additionalProperties: true`).
    open: bool,
}

/// The problem of a member `name` that is not among `known`: "is not a known field", and the
/// known name it was probably meant to be, when one is close.
pub fn unknown_field<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    match closest(name, known) {
        Some(meant) => format!("is not a known field; did you mean `{meant}`?"),
        None => "is not a known field".to_owned(),
    }
}

/// The known name closest to `name`, when it is close: the same but for case, separators
/// (`_`, `-`) or an edit or two (one for short names; a swap of neighbours is one edit).
fn closest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let folded = |s: &str| -> Vec<char> {
        s.chars()
            .filter(|c| !matches!(c, '_' | '-'))
            .flat_map(char::to_lowercase)
            .collect()
    };
    let wanted = folded(name);
    let budget = if wanted.len() <= 4 { 1 } else { 2 };
    known
        .into_iter()
        .map(|candidate| (edit_distance(&wanted, &folded(candidate)), candidate))
        .filter(|(distance, _)| *distance <= budget)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Optimal string alignment distance: insertions, deletions, substitutions and swaps of
/// neighbouring characters each count one.
fn edit_distance(a: &[char], b: &[char]) -> usize {
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for i in 0..=a.len() {
        d[i * width] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(width) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = best;
        }
    }
    d[a.len() * width + b.len()]
}

/// The member to name of the `unknown` ones, and the problem: the first that is close to a
/// known name (a misspelling says most), else the first; the others are listed after it.
fn unknown_members<'a>(unknown: &[&'a String], known: &[String]) -> (&'a str, String) {
    let candidates = || known.iter().map(String::as_str);
    let named = unknown
        .iter()
        .find(|name| closest(name, candidates()).is_some())
        .or(unknown.first())
        .map_or("", |name| name.as_str());
    let mut problem = unknown_field(named, candidates());
    let others: Vec<String> = unknown
        .iter()
        .filter(|name| name.as_str() != named)
        .map(|name| format!("`{name}`"))
        .collect();
    if !others.is_empty() {
        write!(problem, " (also unknown: {})", others.join(", ")).expect("writing to a String");
    }
    (named, problem)
}

/// Refuses the members of `members` not among `known` (400 naming one and, when one is
/// close, the known name it probably meant).
pub fn refuse_unknown<'a>(
    members: impl IntoIterator<Item = &'a String>,
    known: &[String],
) -> Result<(), ApiError> {
    let unknown: Vec<&String> = members
        .into_iter()
        .filter(|name| !known.contains(name))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let (name, problem) = unknown_members(&unknown, known);
    Err(field_error(name, &problem))
}

fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

fn field_error(path: &str, problem: &str) -> ApiError {
    ApiError::invalid_field(if path.is_empty() { "body" } else { path }, problem)
}

fn collect_patterns(schema: &Value, into: &mut HashMap<String, Regex>) {
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

fn is_null_type(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

fn primary_type(schema: &Value) -> Option<&str> {
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

fn check_type(types: &Value, schema: &Value, value: &Value) -> Result<(), String> {
    let names: Vec<&str> = match types {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return Ok(()),
    };
    if names.iter().any(|t| type_matches(t, value)) {
        return Ok(());
    }
    let expected = names
        .iter()
        .copied()
        .find(|t| *t != "null")
        .unwrap_or("null");
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

fn check_range(schema: &Value, value: &Value) -> Result<(), String> {
    let n = value.as_f64().unwrap_or(f64::NAN);
    let below = schema
        .get("minimum")
        .and_then(Value::as_f64)
        .is_some_and(|min| n < min);
    let above = schema
        .get("maximum")
        .and_then(Value::as_f64)
        .is_some_and(|max| n > max);
    let below_exclusive = schema
        .get("exclusiveMinimum")
        .and_then(Value::as_f64)
        .is_some_and(|min| n <= min);
    let above_exclusive = schema
        .get("exclusiveMaximum")
        .and_then(Value::as_f64)
        .is_some_and(|max| n >= max);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_blank_means_something_besides_white_space_and_byte_order_marks() {
        let regex = Regex::new(NOT_BLANK).unwrap();
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            let blank = c.is_whitespace() || c == '\u{FEFF}';
            assert_eq!(regex.is_match(&c.to_string()), !blank, "U+{:04X}", c as u32);
        }
    }

    #[test]
    fn unbounded_strings_are_listed_by_operation_and_field() {
        let document = json!({
            "paths": {"/x": {"post": {
                "operationId": "make",
                "parameters": [
                    {"name": "q", "in": "query", "schema": {"type": "string"}},
                    {"name": "id", "in": "query", "schema": {"type": "string", "format": "uuid"}},
                    {"name": "h", "in": "header", "schema": {"type": "string"}}
                ],
                "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Make"}}}}
            }}},
            "components": {"schemas": {
                "Make": {"type": "object", "properties": {
                    "name": {"type": "string", "maxLength": 5},
                    "note": {"type": ["string", "null"]},
                    "slug": {"type": "string", "pattern": "^[a-z]+$"},
                    "kind": {"type": "string", "enum": ["a"]},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "inner": {"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/Inner"}]}
                }},
                "Inner": {"type": "object", "properties": {"text": {"type": "string"}}}
            }}
        });
        assert_eq!(
            unbounded_request_strings(&document),
            ["make.inner.text", "make.note", "make.q", "make.tags[]"]
        );
    }

    #[test]
    fn if_then_else_applies_the_branch_the_condition_picks_and_names_its_member() {
        let schema = json!({
            "type": "object",
            "properties": {"kind": {"enum": ["a", "b"]}, "n": {"type": "integer"}},
            "if": {"properties": {"kind": {"enum": ["a"]}}},
            "then": {"properties": {"n": {"maximum": 5}}},
            "else": {"required": ["n"]}
        });
        let rules = Rules::new(schema, Map::new());
        let problem = |mut body: Value| rules.check(&mut body).unwrap_err().message;
        assert!(rules.check(&mut json!({"kind": "a", "n": 5})).is_ok());
        assert!(rules.check(&mut json!({"kind": "a"})).is_ok());
        assert_eq!(
            problem(json!({"kind": "a", "n": 6})),
            "n: must be a number of at most 5"
        );
        assert_eq!(problem(json!({"kind": "b"})), "n: is required");
        assert!(rules.check(&mut json!({"kind": "b", "n": 60})).is_ok());
        // The schema's own rules come first.
        assert_eq!(problem(json!({"kind": "c"})), "kind: must be one of: a, b");
    }

    #[test]
    fn an_unknown_member_is_refused_with_the_name_it_probably_meant() {
        let base = json!({"type": "object", "properties": {"name": {"type": "string"}}});
        let schema = json!({
            "allOf": [
                {"$ref": "#/components/schemas/Base"},
                {"type": "object", "properties": {"status": {"type": "string"}}}
            ],
            "oneOf": [
                {"type": "object", "properties": {"site_id": {"type": "string"}}},
                {"type": "object", "properties": {"site_ids": {"type": "array"}}}
            ]
        });
        let rules = Rules::new(schema, Map::from_iter([("Base".to_owned(), base)]));
        let problem = |mut body: Value| rules.check(&mut body).unwrap_err().message;
        assert!(
            rules
                .check(&mut json!({"name": "x", "status": "active", "site_id": "s"}))
                .is_ok()
        );
        assert_eq!(
            problem(json!({"colour": "red", "nmae": "x"})),
            "nmae: is not a known field; did you mean `name`? (also unknown: `colour`)"
        );
        assert_eq!(
            problem(json!({"color": "red", "nmae": "x", "size": 1})),
            "nmae: is not a known field; did you mean `name`? (also unknown: `color`, `size`)"
        );
        assert_eq!(
            problem(json!({"Site-ID": "x"})),
            "Site-ID: is not a known field; did you mean `site_id`?"
        );
        assert_eq!(
            problem(json!({"colour": "red"})),
            "colour: is not a known field"
        );
    }

    #[test]
    fn free_form_objects_and_maps_keep_any_key_but_typed_ones_nested_do_not() {
        let schema = json!({"type": "object", "properties": {
            "properties": {"type": "object"},
            "patch": {"type": "object", "properties": {"a": {}}, "additionalProperties": true},
            "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
            "any": {},
            "inner": {"oneOf": [{"type": "null"}, {"type": "object", "properties": {"limit": {}}}]}
        }});
        let rules = Rules::new(schema, Map::new());
        let mut body = json!({
            "properties": {"plan": "pro"}, "patch": {"b": 1}, "counts": {"x": 1},
            "any": {"whatever": true}, "inner": {"limit": 1}
        });
        assert!(rules.check(&mut body).is_ok());
        let err = rules
            .check(&mut json!({"inner": {"limt": 1}}))
            .unwrap_err()
            .message;
        assert_eq!(
            err,
            "inner.limt: is not a known field; did you mean `limit`?"
        );
    }

    #[test]
    fn a_part_that_describes_a_nested_object_partly_does_not_close_it() {
        let row = json!({"type": "object", "properties": {"id": {}}, "additionalProperties": true});
        let keyed = json!({"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}}});
        let schema = json!({"allOf": [
            {"type": "object", "properties": {"rows": {"type": "array", "items": row}}},
            {"anyOf": [{"properties": {"rows": {"items": keyed}}}]}
        ]});
        let rules = Rules::new(schema, Map::new());
        assert!(
            rules
                .check(&mut json!({"rows": [{"id": 1, "v": "x"}]}))
                .is_ok()
        );
        let err = rules
            .check(&mut json!({"rows": [], "rwos": 1}))
            .unwrap_err();
        assert_eq!(
            err.message,
            "rwos: is not a known field; did you mean `rows`?"
        );
    }

    #[test]
    fn an_unknown_member_without_a_close_name_yields_to_the_schemas_own_problem() {
        let schema = json!({"type": "object", "required": ["field"],
            "properties": {"field": {"type": "string"}}});
        let rules = Rules::new(schema, Map::new());
        let problem = |mut body: Value| rules.check(&mut body).unwrap_err().message;
        assert_eq!(problem(json!({"all": []})), "field: is required");
        assert_eq!(
            problem(json!({"field": "x", "all": []})),
            "all: is not a known field"
        );
        assert_eq!(
            problem(json!({"feild": "x"})),
            "feild: is not a known field; did you mean `field`?"
        );
        // Null means absent for a declared member, not for an unknown one.
        assert_eq!(
            problem(json!({"field": "x", "extra": null})),
            "extra: is not a known field"
        );
    }

    #[test]
    fn close_names_are_an_edit_or_two_away() {
        let known = ["name", "limit", "subject", "site_id"];
        assert_eq!(closest("nmae", known), Some("name"));
        assert_eq!(closest("limt", known), Some("limit"));
        assert_eq!(closest("subjcet", known), Some("subject"));
        assert_eq!(closest("siteId", known), Some("site_id"));
        assert_eq!(closest("nope", known), None);
        assert_eq!(closest("x", known), None);
    }

    #[test]
    fn a_variant_refused_by_an_enum_yields_to_another_variants_problem() {
        let keyed = json!({"oneOf": [
            {"type": "object", "properties": {"kind": {"enum": ["a"]}, "extra": {"type": "null"}}},
            {"type": "object", "required": ["kind", "extra"],
                "properties": {"kind": {"enum": ["b"]}, "extra": {"type": "string"}}}
        ]});
        let rules = Rules::new(keyed, Map::new());
        let problem = |mut body: Value| rules.check(&mut body).unwrap_err().message;
        assert_eq!(problem(json!({"kind": "b"})), "extra: is required");
        assert_eq!(problem(json!({"extra": "x"})), "extra: must be absent");
        assert!(rules.check(&mut json!({"kind": "b", "extra": "x"})).is_ok());
        assert!(rules.check(&mut json!({"extra": null})).is_ok());
    }
}
