use super::unknown::closest;
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
    let keyed =
        json!({"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}}});
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
