//! The identity kernel: what its documented keys must hold, the injection block rendered from
//! it, and how confident the service is in it.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::tokens;

/// The injection block may be at most this many o200k_base tokens.
pub const TOKEN_BUDGET: usize = 4000;

/// The documented sections, in the order the block renders them.
const SECTIONS: [(&str, &str); 4] = [
    ("identity", "Identity"),
    ("products", "Products"),
    ("constraints", "Constraints"),
    ("model_preferences", "Model preferences"),
];

/// Checks the documented keys' types: identity and model_preferences objects, products an
/// array, constraints an array of strings. `Err` names the key (a 422).
pub fn check_types(kernel: &Map<String, Value>) -> Result<(), String> {
    let wrong = |key: &str, what: &str| Err(format!("{key} must be {what}"));
    if kernel.get("identity").is_some_and(|v| !v.is_object()) {
        return wrong("identity", "an object");
    }
    if kernel.get("products").is_some_and(|v| !v.is_array()) {
        return wrong("products", "an array");
    }
    if let Some(constraints) = kernel.get("constraints") {
        let all_strings = constraints
            .as_array()
            .is_some_and(|items| items.iter().all(Value::is_string));
        if !all_strings {
            return wrong("constraints", "an array of strings");
        }
    }
    if kernel
        .get("model_preferences")
        .is_some_and(|v| !v.is_object())
    {
        return wrong("model_preferences", "an object");
    }
    Ok(())
}

/// The compact Markdown an AI tool injects into its prompt. Deterministic: sections in a fixed
/// order, then the other keys sorted; object members sorted; `None` for an empty kernel.
pub fn injection_block(kernel: &Map<String, Value>) -> Option<String> {
    let mut out = String::new();
    for (key, title) in SECTIONS {
        if let Some(value) = kernel.get(key).filter(|v| !is_empty(v)) {
            section(&mut out, title, value);
        }
    }
    let mut others: Vec<(&String, &Value)> = kernel
        .iter()
        .filter(|(k, v)| !SECTIONS.iter().any(|(s, _)| s == k) && !is_empty(v))
        .collect();
    others.sort_by(|a, b| a.0.cmp(b.0));
    for (key, value) in others {
        section(&mut out, key, value);
    }
    (!out.is_empty()).then(|| out.trim_end().to_owned())
}

fn section(out: &mut String, title: &str, value: &Value) {
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str("## ");
    out.push_str(title);
    out.push('\n');
    match value {
        Value::Object(members) => {
            let mut members: Vec<_> = members.iter().filter(|(_, v)| !is_empty(v)).collect();
            members.sort_by(|a, b| a.0.cmp(b.0));
            for (key, value) in members {
                out.push_str(&format!("- {key}: {}\n", inline(value)));
            }
        }
        Value::Array(items) => {
            for item in items.iter().filter(|v| !is_empty(v)) {
                out.push_str(&format!("- {}\n", inline(item)));
            }
        }
        other => {
            out.push_str(&inline(other));
            out.push('\n');
        }
    }
}

/// A value on one line: strings bare, everything else as compact JSON with sorted keys.
fn inline(value: &Value) -> String {
    match value {
        Value::String(s) => s.split_whitespace().collect::<Vec<_>>().join(" "),
        other => sorted(other).to_string(),
    }
}

fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(members) => {
            let mut keys: Vec<_> = members.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&members[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(items) => items.iter().all(is_empty),
        Value::Object(members) => members.values().all(is_empty),
        _ => false,
    }
}

/// The block and its token count.
pub struct Rendered {
    pub block: Option<String>,
    pub token_count: usize,
}

pub fn render(kernel: &Map<String, Value>) -> Rendered {
    let block = injection_block(kernel);
    let token_count = block.as_deref().map_or(0, tokens::count);
    Rendered { block, token_count }
}

/// How far the kernel can be trusted as a description of the user.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct Confidence {
    /// 0..1: completeness of the documented sections (80 %) and freshness (20 %).
    pub score: f64,
    /// One short imperative.
    pub recommendation: String,
    /// What lowers the score: `missing_<section>`, `stale`, `near_token_budget`.
    pub flags: Vec<String>,
}

/// A kernel untouched this long is `stale`; freshness falls to 0 at `STALE_AFTER_DAYS * 2`.
const STALE_AFTER_DAYS: f64 = 90.0;

pub fn confidence(
    kernel: &Map<String, Value>,
    token_count: usize,
    updated_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Confidence {
    let mut flags = Vec::new();
    let mut present = 0usize;
    for (key, _) in SECTIONS {
        if kernel.get(key).is_some_and(|v| !is_empty(v)) {
            present += 1;
        } else {
            flags.push(format!("missing_{key}"));
        }
    }
    let age_days = (now - updated_at).num_seconds().max(0) as f64 / 86_400.0;
    if age_days > STALE_AFTER_DAYS {
        flags.push("stale".to_owned());
    }
    if token_count * 10 > TOKEN_BUDGET * 8 {
        flags.push("near_token_budget".to_owned());
    }
    let completeness = present as f64 / SECTIONS.len() as f64;
    let freshness =
        (1.0 - (age_days - 30.0).max(0.0) / (STALE_AFTER_DAYS * 2.0 - 30.0)).clamp(0.0, 1.0);
    let score = ((0.8 * completeness + 0.2 * freshness) * 1000.0).round() / 1000.0;
    let recommendation = match flags.first().map(String::as_str) {
        Some("missing_identity") => "Describe who the user is under identity.",
        Some("missing_products") => "List the products the user works on.",
        Some("missing_constraints") => "Add the constraints an assistant must respect.",
        Some("missing_model_preferences") => "Record the user's model preferences.",
        Some("stale") => "Review the kernel: it has not changed in months.",
        Some(_) => "Trim the kernel: it is close to its token budget.",
        None => "Keep the kernel current as things change.",
    };
    Confidence {
        score,
        recommendation: recommendation.to_owned(),
        flags,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn documented_keys_are_type_checked() {
        assert!(check_types(&map(json!({"identity": {}, "products": [], "constraints": ["a"], "model_preferences": {}, "x": 1}))).is_ok());
        for (bad, key) in [
            (json!({"identity": "me"}), "identity"),
            (json!({"products": {}}), "products"),
            (json!({"constraints": "be nice"}), "constraints"),
            (json!({"constraints": ["ok", 3]}), "constraints"),
            (json!({"model_preferences": []}), "model_preferences"),
        ] {
            assert!(check_types(&map(bad)).unwrap_err().starts_with(key));
        }
    }

    #[test]
    fn the_block_is_deterministic_and_ordered() {
        let kernel = map(json!({
            "zeta": "last",
            "constraints": ["No weekend deploys", "  Reply   in English "],
            "identity": {"role": "founder", "name": "Ada", "empty": ""},
            "products": ["memory-api", {"name": "mail-api", "stage": "beta"}],
            "alpha": {"b": 2, "a": 1},
        }));
        let block = injection_block(&kernel).unwrap();
        assert_eq!(
            block,
            "## Identity\n- name: Ada\n- role: founder\n\n\
             ## Products\n- memory-api\n- {\"name\":\"mail-api\",\"stage\":\"beta\"}\n\n\
             ## Constraints\n- No weekend deploys\n- Reply in English\n\n\
             ## alpha\n- a: 1\n- b: 2\n\n\
             ## zeta\nlast"
        );
        assert_eq!(injection_block(&map(json!({}))), None);
        assert_eq!(injection_block(&map(json!({"identity": {}}))), None);
    }

    #[test]
    fn confidence_reflects_completeness_freshness_and_budget() {
        let now = Utc::now();
        let full = map(json!({
            "identity": {"name": "Ada"},
            "products": ["x"],
            "constraints": ["c"],
            "model_preferences": {"default": "m"},
        }));
        let c = confidence(&full, 100, now, now);
        assert_eq!(c.score, 1.0);
        assert!(c.flags.is_empty());
        let c = confidence(&map(json!({"identity": {"name": "Ada"}})), 100, now, now);
        assert_eq!(c.score, 0.4);
        assert_eq!(
            c.flags,
            [
                "missing_products",
                "missing_constraints",
                "missing_model_preferences"
            ]
        );
        assert!(c.recommendation.contains("products"));
        let old = now - chrono::Duration::days(200);
        let c = confidence(&full, 3500, old, now);
        assert_eq!(c.flags, ["stale", "near_token_budget"]);
        assert_eq!(c.score, 0.8);
    }
}
