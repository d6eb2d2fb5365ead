//! The JSON Schema of segment rules, as the OpenAPI document states it and every request is
//! checked against it (`http_kit::Json`): what each field takes, and the limits. Groups are
//! spelled out level by level (`SegmentRules`, then `SegmentGroup2` to `SegmentGroup4`), so the
//! nesting bound is the schema's own. Which operators and values a field takes depends on the
//! field: `if`/`then`/`else`, so a refusal names the member at fault (`rules.any[1].op`).

use http_kit::ApiError;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::openapi::extensions::Extensions;
use utoipa::openapi::schema::{
    AdditionalProperties, AllOfBuilder, ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema,
    SchemaType, Type,
};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use super::segment_rules::{
    Compiled, Group, MAX_CONDITIONS, MAX_DAYS, MAX_DEPTH, MAX_EVENT_CHARS, MAX_FIELD_CHARS,
    MAX_GROUP_ITEMS, MAX_SCORE, MAX_TAG_CHARS, MAX_VALUE_CHARS, Op,
};

const CONDITION: &str = "SegmentCondition";

/// Segment rules: a group of conditions and nested groups.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SegmentRules(pub Group);

impl SegmentRules {
    /// The rules as a predicate (see [`Group::compile`]); `at` names them in the request.
    pub fn compile(&self, at: &str) -> Result<Compiled, ApiError> {
        self.0.compile(at)
    }

    /// The stored form.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl PartialSchema for SegmentRules {
    fn schema() -> RefOr<Schema> {
        group(1).into()
    }
}

impl ToSchema for SegmentRules {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((CONDITION.to_owned(), condition().into()));
        for level in 2..=MAX_DEPTH {
            schemas.push((group_name(level), group(level).into()));
        }
    }
}

fn group_name(level: usize) -> String {
    if level == 1 {
        "SegmentRules".to_owned()
    } else {
        format!("SegmentGroup{level}")
    }
}

fn component(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// Keywords utoipa has no builder for (`if`, `then`, `else`), written as extensions.
fn keywords(pairs: &[(&str, Value)]) -> Option<Extensions> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect(),
    )
}

/// The group at nesting `level` (1 is the rules object).
fn group(level: usize) -> Schema {
    let item: RefOr<Schema> = if level < MAX_DEPTH {
        // An item with a `field` is a condition, any other a group one level down.
        ObjectBuilder::new()
            .extensions(keywords(&[
                ("if", json!({ "required": ["field"] })),
                ("then", component(CONDITION)),
                ("else", component(&group_name(level + 1))),
            ]))
            .build()
            .into()
    } else {
        Ref::from_schema_name(CONDITION).into()
    };
    // Null is absent, as for every optional member.
    let items = |which: &str| {
        ArrayBuilder::new()
            .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
            .items(item.clone())
            .min_items(Some(1))
            .max_items(Some(MAX_GROUP_ITEMS))
            .description(Some(format!(
                "1 to {MAX_GROUP_ITEMS} items: conditions{} ({which}).",
                if level < MAX_DEPTH {
                    " and nested groups"
                } else {
                    " only (groups go no deeper)"
                }
            )))
    };
    let mut description = format!(
        "A group at nesting level {level} of {MAX_DEPTH}: exactly one of `all` (every item \
         holds) and `any` (at least one does)."
    );
    if level == 1 {
        description.push_str(&format!(
            " Segment rules: groups nest at most {MAX_DEPTH} deep (this object is the first \
             level), a group holds 1 to {MAX_GROUP_ITEMS} items, and all the groups together \
             hold at most {MAX_CONDITIONS} conditions (more answer 400 naming `rules`). Rules \
             see only the project's own contacts and their events, emails and subscriptions. \
             A refused part answers 400 naming its path (`rules.any[1].op`)."
        ));
    }
    let group = ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(description))
        .property("all", items("every item holds"))
        .property("any", items("at least one item holds"))
        .additional_properties(Some(AdditionalProperties::FreeForm(false)));
    let array = || ObjectBuilder::new().schema_type(Type::Array);
    exactly_one_of(group, ("all", array()), ("any", array()))
}

/// `base` holding exactly one of two members: each variant requires its member (as `schema`
/// says, so not null) and leaves the other absent (null is absent), so no object passes both.
pub fn exactly_one_of(
    base: impl Into<RefOr<Schema>>,
    (a, a_schema): (&str, ObjectBuilder),
    (b, b_schema): (&str, ObjectBuilder),
) -> Schema {
    let only = |given: &str, schema: ObjectBuilder, absent: &str| {
        ObjectBuilder::new()
            .title(Some(given))
            .required(given)
            .property(given, schema)
            .property(absent, ObjectBuilder::new().schema_type(Type::Null))
    };
    let variants = OneOfBuilder::new()
        .item(only(a, a_schema, b))
        .item(only(b, b_schema, a));
    AllOfBuilder::new()
        .item(base)
        .item(Schema::OneOf(variants.build()))
        .into()
}

fn schema_of(value: Value) -> RefOr<Schema> {
    serde_json::from_value(value).expect("a schema written here deserializes")
}

/// The fields a condition may name: the contact's own, then `properties.<path>`.
const FIELD_PATTERN: &str = "^(email|first_name|last_name|tag|event|site_id|opened_within_days|\
                             clicked_within_days|created_within_days|score|properties\\.[^.]+(\\.[^.]+)*)$";

fn ops(ops: &[Op]) -> Value {
    json!({ "enum": ops.iter().map(|op| op.as_str()).collect::<Vec<_>>() })
}

fn text(max: usize) -> Value {
    json!({ "type": "string", "minLength": 1, "maxLength": max })
}

fn days() -> Value {
    json!({ "type": "integer", "minimum": 1, "maximum": MAX_DAYS })
}

/// `then` of a field kind: its operators, and its value by operator (`exists` takes a
/// boolean, the others `value`).
fn kind(allowed: &[Op], value: Value) -> Value {
    json!({
        "properties": { "op": ops(allowed) },
        "if": { "properties": { "op": { "enum": ["exists"] } } },
        "then": { "properties": { "value": { "type": "boolean" } } },
        "else": { "properties": { "value": value } }
    })
}

fn field_is(names: &[&str]) -> Value {
    json!({ "properties": { "field": { "enum": names } } })
}

/// The rules by field, as one `if`/`then`/`else` chain.
fn by_field() -> Value {
    use Op::{Contains, Eq, Exists, Gt, Lt, Neq};
    let property = json!({
        "properties": { "op": ops(&Op::ALL) },
        "if": { "properties": { "op": { "enum": ["exists"] } } },
        "then": { "properties": { "value": { "type": "boolean" } } },
        "else": {
            "if": { "properties": { "op": { "enum": ["gt", "lt"] } } },
            "then": { "properties": { "value": {
                "type": ["string", "number"], "minLength": 1, "maxLength": MAX_VALUE_CHARS } } },
            "else": {
                "if": { "properties": { "op": { "enum": ["contains"] } } },
                "then": { "properties": { "value": { "minLength": 1 } } }
            }
        }
    });
    let chain = [
        (
            field_is(&["email", "first_name", "last_name"]),
            kind(&[Eq, Neq, Contains, Exists], text(MAX_VALUE_CHARS)),
        ),
        (
            field_is(&["tag"]),
            kind(&[Eq, Neq, Contains, Exists], text(MAX_TAG_CHARS)),
        ),
        (
            field_is(&["event"]),
            kind(&[Eq, Neq, Contains, Exists], text(MAX_EVENT_CHARS)),
        ),
        (
            field_is(&["site_id"]),
            kind(
                &[Eq, Neq, Exists],
                json!({ "type": "string", "format": "uuid" }),
            ),
        ),
        (
            field_is(&["opened_within_days", "clicked_within_days"]),
            kind(&[Eq, Neq, Exists], days()),
        ),
        (field_is(&["created_within_days"]), kind(&[Eq, Neq], days())),
        (
            field_is(&["score"]),
            kind(
                &[Gt, Lt],
                json!({ "type": "number", "minimum": -MAX_SCORE, "maximum": MAX_SCORE }),
            ),
        ),
    ];
    chain.into_iter().rev().fold(
        property,
        |otherwise, (condition, then)| json!({ "if": condition, "then": then, "else": otherwise }),
    )
}

pub const CONDITION_DESCRIPTION: &str = "A condition on a contact of the project. By `field`:\n\
- `email`, `first_name`, `last_name`: `eq`/`neq` (ignoring case; a contact without the name \
is `neq` any value), `contains` (ignoring case), `exists` (set and not empty); value text.\n\
- `tag`: `eq`/`neq` (has the tag, exactly), `contains` (a tag holds the text, ignoring \
case), `exists` (has any tag).\n\
- `event`: `eq`/`neq` (has recorded the event of exactly that name at `/events`), \
`contains` (an event name holds the text, ignoring case), `exists` (any event).\n\
- `site_id`: `eq`/`neq` (subscribed to that site of the project, not unsubscribed; another \
project's or an unknown site answers 404 `SITE_NOT_FOUND`), `exists` (subscribed to any \
site).\n\
- `opened_within_days`, `clicked_within_days`: value N days (1..=3650): `eq` opened \
(clicked) an email within the last N days, `neq` did not (never included); `exists` (value \
true/false) has ever opened (clicked). A click counts as an open.\n\
- `created_within_days`: `eq` the contact was created within the last N days, `neq` before.\n\
- `score`: the engagement score now (see the scoring rules; a contact without engagement \
scores 0): `gt`/`lt` a number (-1000000..=1000000).\n\
- `properties.<path>`: a key of `properties`, dots stepping into nested objects \
(`properties.plan.tier`). `eq`/`neq` compare as JSON (a number equals only a number; a \
contact without the key is `neq` any value), `contains` (a string holding the text, ignoring \
case, or an array with the element), `exists` (the key is there), `gt`/`lt` (a value of the \
same JSON type: numbers by value, strings in text order, so ISO dates compare as dates).\n\
`exists` takes `true` or `false` (false: the opposite).";

fn condition() -> Schema {
    let mut schema = ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(CONDITION_DESCRIPTION))
        .property(
            "field",
            schema_of(json!({
                "type": "string",
                "maxLength": MAX_FIELD_CHARS,
                "pattern": FIELD_PATTERN,
                "description": "`email`, `first_name`, `last_name`, `tag`, `event`, `site_id`, \
                    `opened_within_days`, `clicked_within_days`, `created_within_days`, \
                    `score` or `properties.<path>`."
            })),
        )
        .property(
            "op",
            schema_of(json!({ "type": "string" }).merged(ops(&Op::ALL))),
        )
        .property(
            "value",
            schema_of(json!({
                "type": ["string", "number", "boolean"],
                "maxLength": MAX_VALUE_CHARS,
                "description": "What the field is compared with; its type depends on the field \
                    and the operator."
            })),
        )
        .required("field")
        .required("op")
        .required("value")
        .additional_properties(Some(AdditionalProperties::FreeForm(false)))
        .build();
    schema.extensions = Some(
        by_field()
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    );
    schema.into()
}

/// Merging two JSON objects' members (for short schema literals).
trait Merged {
    fn merged(self, other: Value) -> Value;
}

impl Merged for Value {
    fn merged(mut self, other: Value) -> Value {
        if let (Value::Object(ours), Value::Object(theirs)) = (&mut self, other) {
            ours.extend(theirs);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use http_kit::Validate;

    use super::*;

    #[derive(Debug, Deserialize, ToSchema)]
    struct Body {
        rules: SegmentRules,
    }

    impl Validate for Body {}

    /// The 400 of reading `rules` as a request body would: `path: problem`.
    fn refused(rules: Value) -> String {
        let err = http_kit::read_body::<Body>(json!({ "rules": rules })).unwrap_err();
        let field = err.details().unwrap()["field"].as_str().unwrap().to_owned();
        format!("{field}: {}", err.message.split_once(": ").unwrap().1)
    }

    fn accepted(rules: Value) -> SegmentRules {
        let body = http_kit::read_body::<Body>(json!({ "rules": rules.clone() }))
            .unwrap_or_else(|e| panic!("{rules}: {}", e.message));
        body.rules.compile("rules").unwrap();
        body.rules
    }

    #[test]
    fn valid_rules_pass_and_compile() {
        let site = uuid::Uuid::now_v7();
        accepted(json!({"all": [
            {"field": "email", "op": "contains", "value": "@example.com"},
            {"field": "tag", "op": "exists", "value": false},
            {"field": "event", "op": "neq", "value": "purchase"},
            {"field": "site_id", "op": "eq", "value": site.to_string()},
            {"field": "opened_within_days", "op": "eq", "value": 30.0},
            {"field": "created_within_days", "op": "neq", "value": 7},
            {"field": "score", "op": "gt", "value": -2.5},
            {"any": [
                {"field": "properties.plan", "op": "eq", "value": false},
                {"field": "properties.score", "op": "gt", "value": 2.5},
                {"field": "properties.since", "op": "lt", "value": "2025-01-01"},
                {"field": "properties.a.b c", "op": "contains", "value": 3},
                {"all": [{"any": [{"field": "tag", "op": "eq", "value": "deep"}]}]},
            ]},
        ]}));
    }

    #[test]
    fn a_refusal_names_the_part_at_fault() {
        let cases = [
            (
                json!({"any": [{"field": "tag", "op": "eq", "value": "a"},
                               {"field": "tag", "op": "gt", "value": "b"}]}),
                "rules.any[1].op: must be one of: eq, neq, contains, exists",
            ),
            (
                json!({"all": [{"field": "phone", "op": "eq", "value": "1"}]}),
                "rules.all[0].field: must match the pattern",
            ),
            (
                json!({"all": [{"field": "tag", "op": "like", "value": "1"}]}),
                "rules.all[0].op: must be one of: eq, neq, contains, exists, gt, lt",
            ),
            (
                json!({"all": [{"field": "tag", "op": "exists", "value": "yes"}]}),
                "rules.all[0].value: must be a boolean",
            ),
            (
                json!({"all": [{"any": [{"field": "opened_within_days", "op": "eq", "value": 0}]}]}),
                "rules.all[0].any[0].value: must be an integer between 1 and 3650",
            ),
            (
                json!({"all": [{"field": "site_id", "op": "eq", "value": "nope"}]}),
                "rules.all[0].value: must be a UUID",
            ),
            (
                json!({"all": [{"field": "created_within_days", "op": "exists", "value": true}]}),
                "rules.all[0].op: must be one of: eq, neq",
            ),
            (
                json!({"all": [{"field": "score", "op": "eq", "value": 3}]}),
                "rules.all[0].op: must be one of: gt, lt",
            ),
            (
                json!({"all": [{"field": "score", "op": "gt", "value": 2000000}]}),
                "rules.all[0].value: must be a number between -1000000 and 1000000",
            ),
            (
                json!({"all": [{"field": "properties.x", "op": "gt", "value": true}]}),
                "rules.all[0].value: must be a string",
            ),
            (
                json!({"all": [{"field": "tag", "op": "eq"}]}),
                "rules.all[0].value: is required",
            ),
            (json!({"all": []}), "rules.all: must have at least 1 items"),
            (json!({}), "rules.all: is required"),
            (
                json!({"all": [{"field": "tag", "op": "exists", "value": true}],
                       "any": [{"field": "tag", "op": "exists", "value": true}]}),
                "rules.any: must be absent",
            ),
            (
                json!({"all": [{"all": [{"all": [{"all": [{"all": [
                    {"field": "tag", "op": "exists", "value": true}]}]}]}]}]}),
                "rules.all[0].all[0].all[0].all[0].field: is required",
            ),
        ];
        for (rules, expected) in cases {
            let problem = refused(rules.clone());
            assert!(
                problem.starts_with(expected),
                "{rules}: {problem} (expected {expected})"
            );
        }
    }

    #[test]
    fn the_stored_form_reads_back_the_same() {
        let rules = accepted(json!({"any": [{"field": "tag", "op": "eq", "value": "a"},
                                            {"all": [{"field": "event", "op": "exists", "value": true}]}]}));
        let again: SegmentRules = serde_json::from_value(rules.to_json()).unwrap();
        assert_eq!(again, rules);
    }
}
