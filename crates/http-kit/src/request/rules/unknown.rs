//! Members an object's schema does not declare: found, and named with the declared name they
//! were probably meant to be.

use std::fmt::Write as _;

use serde_json::Value;

use super::Rules;
use super::check::{field_error, push_key};
use super::keywords::Keywords;
use crate::error::ApiError;

impl Rules {
    /// Records, in document order, every object in `value` with members that none of the
    /// `schemas` describing it declares. A member's schemas are those of every part that
    /// declares it: a part of a composition alone may describe a nested object partly.
    pub(super) fn find_unknown<'a>(
        &'a self,
        schemas: &[&'a Value],
        value: &Value,
        path: &mut String,
        found: &mut Vec<Unknown>,
    ) {
        // Only objects have members, and only arrays and objects hold objects.
        if value.is_object() || value.is_array() {
            self.find_unknown_in(&self.view(schemas), value, path, found);
        }
    }

    /// What `schemas` say of a value: their parts, and the names an object may have.
    fn view<'a>(&'a self, schemas: &[&'a Value]) -> View<'a> {
        let mut parts = Vec::new();
        for schema in schemas {
            self.expand(schema, &mut parts, 0);
        }
        let mut shape = Shape::default();
        for (part, keywords) in &parts {
            self.collect_shape(part, keywords, &mut shape);
        }
        View { parts, shape }
    }

    /// [`Self::find_unknown`] with the schemas' view worked out: an array's items share
    /// theirs.
    fn find_unknown_in<'a>(
        &'a self,
        view: &View<'a>,
        value: &Value,
        path: &mut String,
        found: &mut Vec<Unknown>,
    ) {
        match value {
            Value::Object(members) => {
                let shape = &view.shape;
                if shape.closed && !shape.open {
                    let unknown: Vec<&String> = members
                        .keys()
                        .filter(|name| !shape.names.contains(&name.as_str()))
                        .collect();
                    if !unknown.is_empty() {
                        let (name, problem) = unknown_members(&unknown, &shape.names);
                        let len = path.len();
                        push_key(path, name);
                        found.push(Unknown {
                            path: path.clone(),
                            misspelled: closest(name, shape.names.iter().copied()).is_some(),
                            problem,
                        });
                        path.truncate(len);
                    }
                }
                for (name, member) in members {
                    if !(member.is_object() || member.is_array()) {
                        continue;
                    }
                    let member_schemas: Vec<&Value> = view
                        .parts
                        .iter()
                        .filter_map(|(_, keywords)| {
                            keywords
                                .properties
                                .and_then(|p| p.get(name))
                                .or_else(|| keywords.additional.filter(|a| a.is_object()))
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
                let item_schemas: Vec<&Value> = view
                    .parts
                    .iter()
                    .filter_map(|(_, keywords)| keywords.items)
                    .collect();
                if item_schemas.is_empty() {
                    return;
                }
                let item_view = self.view(&item_schemas);
                for (i, item) in items.iter().enumerate() {
                    if !(item.is_object() || item.is_array()) {
                        continue;
                    }
                    let len = path.len();
                    write!(path, "[{i}]").expect("writing to a String");
                    self.find_unknown_in(&item_view, item, path, found);
                    path.truncate(len);
                }
            }
            _ => {}
        }
    }

    /// What one part of an object's schema says of its members' names (the parts come from
    /// [`Self::expand`]).
    fn collect_shape<'a>(&'a self, schema: &Value, keywords: &Keywords<'a>, shape: &mut Shape<'a>) {
        if !schema.is_object() {
            shape.open = true;
            return;
        }
        let takes_object = match keywords.types {
            None => true,
            Some(Value::String(t)) => t == "object",
            Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
            Some(_) => true,
        };
        if !takes_object {
            return;
        }
        let composed = [
            keywords.all_of,
            keywords.one_of,
            keywords.any_of,
            keywords.condition,
            keywords.then,
            keywords.otherwise,
        ]
        .iter()
        .any(Option::is_some);
        if let Some(properties) = keywords.properties.and_then(Value::as_object) {
            shape.names.extend(properties.keys().map(String::as_str));
            shape.closed = true;
        }
        match keywords.additional {
            Some(Value::Bool(false)) => shape.closed = true,
            Some(Value::Bool(true) | Value::Object(_)) => shape.open = true,
            _ => {
                shape.open |=
                    keywords.properties.is_none() && !composed && keywords.types.is_some();
            }
        }
        // An `if` is a condition: the names it tests are known, but it closes nothing.
        if let Some(tested) = keywords
            .condition
            .and_then(|condition| self.keywords(condition).1.properties)
            .and_then(Value::as_object)
        {
            shape.names.extend(tested.keys().map(String::as_str));
        }
    }

    /// The declared members of the top-level object (a query string's parameters).
    pub fn property_names(&self) -> &[String] {
        self.names.get_or_init(|| {
            let view = self.view(&[&self.root]);
            view.shape.names.into_iter().map(str::to_owned).collect()
        })
    }
}

/// An object's members that its schema does not declare, as a refusal.
pub(super) struct Unknown {
    pub(super) path: String,
    pub(super) problem: String,
    /// The member named looks like a misspelling of a declared one.
    pub(super) misspelled: bool,
}

/// The parts of the schemas describing one value, and what they say of its members' names.
struct View<'a> {
    parts: Vec<(&'a Value, Keywords<'a>)>,
    shape: Shape<'a>,
}

/// What an object's schema says of its members' names.
#[derive(Default)]
struct Shape<'a> {
    names: Vec<&'a str>,
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
pub(super) fn closest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
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
fn unknown_members<'a>(unknown: &[&'a String], known: &[&str]) -> (&'a str, String) {
    let candidates = || known.iter().copied();
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
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    let (name, problem) = unknown_members(&unknown, &known);
    Err(field_error(name, &problem))
}
