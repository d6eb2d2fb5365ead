//! The keywords of one schema object, found in one pass over its members.
//!
//! A check reads a dozen keywords of every schema it meets, most of them absent. Looked up one
//! by one, each lookup hashed its keyword again (a schema's members are a hashed map), at every
//! value of every request: with a batch of 50 signals that was 41% of memory-api's CPU on the
//! route. One walk over the few members a schema has finds them all.

use serde_json::Value;

/// The keywords [`super::Rules`] reads; `None` when the schema does not say it.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Keywords<'a> {
    pub(super) reference: Option<&'a Value>,
    pub(super) all_of: Option<&'a Value>,
    pub(super) one_of: Option<&'a Value>,
    pub(super) any_of: Option<&'a Value>,
    pub(super) types: Option<&'a Value>,
    pub(super) allowed: Option<&'a Value>,
    pub(super) condition: Option<&'a Value>,
    pub(super) then: Option<&'a Value>,
    pub(super) otherwise: Option<&'a Value>,
    pub(super) min_length: Option<&'a Value>,
    pub(super) max_length: Option<&'a Value>,
    pub(super) pattern: Option<&'a Value>,
    pub(super) format: Option<&'a Value>,
    pub(super) minimum: Option<&'a Value>,
    pub(super) maximum: Option<&'a Value>,
    pub(super) exclusive_minimum: Option<&'a Value>,
    pub(super) exclusive_maximum: Option<&'a Value>,
    pub(super) min_items: Option<&'a Value>,
    pub(super) max_items: Option<&'a Value>,
    pub(super) items: Option<&'a Value>,
    pub(super) properties: Option<&'a Value>,
    pub(super) required: Option<&'a Value>,
    pub(super) additional: Option<&'a Value>,
    pub(super) max_properties: Option<&'a Value>,
}

impl<'a> Keywords<'a> {
    /// The keywords of `schema` (none when it is not an object, such as `true`).
    pub(super) fn of(schema: &'a Value) -> Self {
        let mut found = Self::default();
        let Value::Object(members) = schema else {
            return found;
        };
        for (name, value) in members {
            let slot = match name.as_str() {
                "$ref" => &mut found.reference,
                "allOf" => &mut found.all_of,
                "oneOf" => &mut found.one_of,
                "anyOf" => &mut found.any_of,
                "type" => &mut found.types,
                "enum" => &mut found.allowed,
                "if" => &mut found.condition,
                "then" => &mut found.then,
                "else" => &mut found.otherwise,
                "minLength" => &mut found.min_length,
                "maxLength" => &mut found.max_length,
                "pattern" => &mut found.pattern,
                "format" => &mut found.format,
                "minimum" => &mut found.minimum,
                "maximum" => &mut found.maximum,
                "exclusiveMinimum" => &mut found.exclusive_minimum,
                "exclusiveMaximum" => &mut found.exclusive_maximum,
                "minItems" => &mut found.min_items,
                "maxItems" => &mut found.max_items,
                "items" => &mut found.items,
                "properties" => &mut found.properties,
                "required" => &mut found.required,
                "additionalProperties" => &mut found.additional,
                "maxProperties" => &mut found.max_properties,
                _ => continue,
            };
            *slot = Some(value);
        }
        found
    }

    /// The parts of a composition (`allOf`, `oneOf`, `anyOf`): its array, or nothing.
    pub(super) fn parts(keyword: Option<&'a Value>) -> &'a [Value] {
        keyword.and_then(Value::as_array).map_or(&[], Vec::as_slice)
    }
}
