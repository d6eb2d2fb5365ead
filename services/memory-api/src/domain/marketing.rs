//! Autonomous marketing plans: the actions of a completed run's plan that become pending
//! proposals, the decision an approved one records, and the body of its outbound hook. The
//! plan is the model's: every field is read defensively and nothing of it is executed.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

/// Actions of one plan that become proposals (the rest stay in the run's `result`).
pub const MAX_ACTIONS: usize = 50;
/// A proposal's longest action text (the ledger's `raw_content`).
const ACTION_MAX: usize = 32_000;
const CHANNEL_MAX: usize = 100;
const RATIONALE_MAX: usize = 4_000;
/// The channel of an action the model gave none.
const NO_CHANNEL: &str = "unspecified";

/// The event type of an approved action's hook.
pub const HOOK_EVENT: &str = "marketing.action.approved";
/// The product a decision of an approved action is recorded under.
pub const DECISION_PRODUCT: &str = "marketing";

/// One action of a plan, as a proposal holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedAction {
    pub channel: String,
    pub action: String,
    pub rationale: Option<String>,
    /// 1 (first) to 5; `None` when the model gave no usable one.
    pub priority: Option<i32>,
}

/// The actions of `plan` (`{"actions": [{"channel", "action", "rationale", "priority"}]}`):
/// each object with a non-blank `action`, in order, at most [`MAX_ACTIONS`]; texts trimmed
/// and cut to their columns' lengths, a priority outside 1..=5 dropped.
pub fn planned_actions(plan: &Value) -> Vec<PlannedAction> {
    let Some(actions) = plan.get("actions").and_then(Value::as_array) else {
        return Vec::new();
    };
    actions
        .iter()
        .filter_map(|a| {
            let action = text(a.get("action"), ACTION_MAX)?;
            Some(PlannedAction {
                channel: text(a.get("channel"), CHANNEL_MAX)
                    .unwrap_or_else(|| NO_CHANNEL.to_owned()),
                action,
                rationale: text(a.get("rationale"), RATIONALE_MAX),
                priority: a
                    .get("priority")
                    .and_then(Value::as_i64)
                    .filter(|p| (1..=5).contains(p))
                    .and_then(|p| i32::try_from(p).ok()),
            })
        })
        .take(MAX_ACTIONS)
        .collect()
}

/// A non-blank string, trimmed and cut to `max` characters.
fn text(value: Option<&Value>, max: usize) -> Option<String> {
    let text = value?.as_str()?.trim();
    (!text.is_empty()).then(|| text.chars().take(max).collect())
}

/// The ledger's `requested_capability` of an action on `channel`.
pub fn capability(channel: &str) -> String {
    let capability = format!("marketing.{channel}");
    capability.chars().take(200).collect()
}

/// The decision an approval records: its words and its reasoning (naming the run).
pub fn decision_text(
    channel: &str,
    priority: Option<i32>,
    action: &str,
    rationale: Option<&str>,
    run_id: Uuid,
) -> (String, String) {
    let priority = priority
        .map(|p| format!(", priority {p}"))
        .unwrap_or_default();
    let decision = format!("Approved marketing action ({channel}{priority}): {action}");
    let decision: String = decision.chars().take(DECISION_MAX).collect();
    let reasoning = match rationale {
        Some(rationale) => format!("{rationale}\n\nProposed by autonomous marketing run {run_id}."),
        None => format!("Proposed by autonomous marketing run {run_id}."),
    };
    (decision, reasoning)
}

/// A decision's longest text.
const DECISION_MAX: usize = 10_000;

/// What an approved action's hook carries.
pub struct HookData<'a> {
    pub proposal_id: Uuid,
    pub run_id: Uuid,
    pub decision_id: Uuid,
    pub environment: &'a str,
    pub workspace_id: Option<Uuid>,
    pub channel: &'a str,
    pub action: &'a str,
    pub rationale: Option<&'a str>,
    pub priority: Option<i32>,
    pub approved_at: DateTime<Utc>,
}

/// The hook's JSON body, as mail's outbound webhooks shape theirs: `type`, `created_at`,
/// `data`.
pub fn hook_body(data: &HookData<'_>) -> Value {
    json!({
        "type": HOOK_EVENT,
        "created_at": data.approved_at.to_rfc3339_opts(SecondsFormat::Millis, true),
        "data": {
            "proposal_id": data.proposal_id,
            "run_id": data.run_id,
            "decision_id": data.decision_id,
            "environment": data.environment,
            "workspace_id": data.workspace_id,
            "channel": data.channel,
            "action": data.action,
            "rationale": data.rationale,
            "priority": data.priority,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_actions_with_words_become_proposals_read_defensively() {
        let plan = json!({"summary": "s", "actions": [
            {"channel": " email ", "action": " Send a digest ", "rationale": "It works", "priority": 1},
            {"channel": "blog", "action": "   "},
            "not an object",
            {"action": "Post it", "priority": 9},
            {"channel": 3, "action": "Talk", "priority": "high", "rationale": ""},
        ]});
        let actions = planned_actions(&plan);
        assert_eq!(
            actions,
            vec![
                PlannedAction {
                    channel: "email".into(),
                    action: "Send a digest".into(),
                    rationale: Some("It works".into()),
                    priority: Some(1),
                },
                PlannedAction {
                    channel: "unspecified".into(),
                    action: "Post it".into(),
                    rationale: None,
                    priority: None,
                },
                PlannedAction {
                    channel: "unspecified".into(),
                    action: "Talk".into(),
                    rationale: None,
                    priority: None,
                },
            ]
        );
        assert!(planned_actions(&json!({"actions": "none"})).is_empty());
        let many: Vec<Value> = (0..80)
            .map(|i| json!({"action": format!("a{i}")}))
            .collect();
        assert_eq!(
            planned_actions(&json!({"actions": many})).len(),
            MAX_ACTIONS
        );
    }

    #[test]
    fn the_decision_names_the_action_and_the_run() {
        let run = Uuid::nil();
        let (decision, reasoning) = decision_text("email", Some(2), "Send", Some("Why"), run);
        assert_eq!(
            decision,
            "Approved marketing action (email, priority 2): Send"
        );
        assert_eq!(
            reasoning,
            format!("Why\n\nProposed by autonomous marketing run {run}.")
        );
    }
}
