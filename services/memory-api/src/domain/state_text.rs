//! The text a product state is searched by: the product's name, then each member as
//! `key: value` (documented keys first, in their documented order, then the rest by name).

use serde_json::{Map, Value};

const DOCUMENTED: [&str; 5] = [
    "status",
    "what_works",
    "what_is_blocked",
    "open_questions",
    "next_session_starts_here",
];

pub fn render(product_name: &str, state: &Map<String, Value>) -> String {
    let mut text = product_name.to_owned();
    for (key, value) in members(state) {
        text.push('\n');
        text.push_str(&key);
        text.push_str(": ");
        text.push_str(&value);
    }
    text
}

/// The state's non-empty members as (`key` with spaces for underscores, value on one line),
/// documented keys first in their documented order, then the rest by name.
pub fn members(state: &Map<String, Value>) -> Vec<(String, String)> {
    let mut keys: Vec<&String> = state.keys().collect();
    keys.sort_by_key(|k| {
        let rank = DOCUMENTED
            .iter()
            .position(|d| d == k)
            .unwrap_or(DOCUMENTED.len());
        (rank, k.as_str())
    });
    keys.into_iter()
        .map(|key| (key.replace('_', " "), render_value(&state[key])))
        .filter(|(_, value)| !value.is_empty())
        .collect()
}

fn render_value(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.trim().to_owned(),
        Value::Array(items) => items
            .iter()
            .map(render_value)
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("; "),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn documented_keys_first_then_by_name() {
        let state = json!({
            "zeta": 1,
            "open_questions": ["pricing?", "", "launch date?"],
            "status": " beta ",
            "alpha": {"x": true},
            "empty": null,
        });
        let text = render("billing", state.as_object().unwrap());
        assert_eq!(
            text,
            "billing\nstatus: beta\nopen questions: pricing?; launch date?\nalpha: {\"x\":true}\nzeta: 1"
        );
    }
}
