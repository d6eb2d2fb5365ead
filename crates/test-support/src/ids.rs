//! Ids in JSON answers.

use std::collections::BTreeSet;

use serde_json::Value;

/// The string member `field` of `answer`; panics naming the answer when there is none.
pub fn id_of(answer: &Value, field: &str) -> String {
    answer[field]
        .as_str()
        .unwrap_or_else(|| panic!("no {field}: {answer}"))
        .to_owned()
}

/// Every string under an id-like member (`id`, `…_id`, `…Id`, or a `…_ids` array), anywhere in
/// `value`.
pub fn collect_ids(value: &Value, ids: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, member) in map {
                let id_like = key == "id" || key.ends_with("_id") || key.ends_with("Id");
                match member {
                    Value::String(s) if id_like => {
                        ids.insert(s.clone());
                    }
                    Value::Array(items) if key.ends_with("_ids") => {
                        ids.extend(items.iter().filter_map(|i| i.as_str().map(str::to_owned)));
                    }
                    _ => {}
                }
                collect_ids(member, ids);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_ids(v, ids)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_are_found_at_any_depth() {
        let mut ids = BTreeSet::new();
        let answer = json!({"id": "a", "data": [{"site_id": "b", "runId": "c",
            "email_log_ids": ["d"], "name": "not an id"}]});
        collect_ids(&answer, &mut ids);
        assert_eq!(ids, BTreeSet::from(["a", "b", "c", "d"].map(str::to_owned)));
    }
}
