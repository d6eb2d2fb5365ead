//! Connector intake: what an intake's outcome is, and what approving its proposal records.
//! The content is never interpreted: it is stored, shown, and on approval copied verbatim
//! into free-form memory.

use super::mif::CONTENT_MAX;

/// What an intake call answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A pending proposal waits for a first-party decision.
    Proposed,
    /// A lead capability: recorded in the ledger, no proposal.
    LeadQueued,
}

impl Outcome {
    /// Ruled: a `requested_capability` starting with `lead` (in any case) queues a lead;
    /// anything else, or none, is a proposal.
    pub fn of(requested_capability: Option<&str>) -> Self {
        let lead = requested_capability
            .and_then(|c| c.get(..4))
            .is_some_and(|prefix| prefix.eq_ignore_ascii_case("lead"));
        if lead {
            Self::LeadQueued
        } else {
            Self::Proposed
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Proposed => "proposed",
            Self::LeadQueued => "lead_queued",
        }
    }
}

/// The free-form entries an approved proposal's content becomes: consecutive parts of at most
/// [`CONTENT_MAX`] characters (an intake holds up to 32,000, an entry 10,000), in order.
pub fn memory_parts(content: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut rest = content;
    while !rest.is_empty() {
        let cut = rest
            .char_indices()
            .nth(CONTENT_MAX)
            .map_or(rest.len(), |(i, _)| i);
        let (part, tail) = rest.split_at(cut);
        parts.push(part);
        rest = tail;
    }
    parts
}

/// Characters of the content quoted in the feed.
const SUMMARY_QUOTE_CHARS: usize = 200;

/// The feed line of an approval: who proposed what, and the start of the content.
pub fn approval_summary(ai_vendor: &str, capability: Option<&str>, content: &str) -> String {
    let quote = quote(content);
    match capability {
        Some(capability) => {
            format!("Approved a {ai_vendor} connector proposal ({capability}): {quote}")
        }
        None => format!("Approved a {ai_vendor} connector proposal: {quote}"),
    }
}

/// The `signal_type` of the producer signal a queued lead writes.
pub const LEAD_SIGNAL_TYPE: &str = "lead_queued";

/// The producer signal announcing a queued lead.
pub struct LeadSignal {
    pub source: String,
    /// One per lead: a lead never collapses into another.
    pub dedup_key: String,
    pub title: String,
    pub description: String,
    pub payload: serde_json::Value,
}

/// The producer signal of lead `lead_id` (intake `ledger_id`).
pub fn lead_signal(
    lead_id: uuid::Uuid,
    ledger_id: uuid::Uuid,
    ai_vendor: &str,
    capability: Option<&str>,
    content: &str,
) -> LeadSignal {
    let capability_part = capability.map(|c| format!(" ({c})")).unwrap_or_default();
    let mut title = format!("A {ai_vendor} connector queued a lead{capability_part}");
    if title.chars().count() > SIGNAL_TITLE_MAX {
        title = title.chars().take(SIGNAL_TITLE_MAX - 1).collect::<String>() + "…";
    }
    LeadSignal {
        source: format!("connector:{ai_vendor}"),
        dedup_key: format!("lead:{lead_id}"),
        title,
        description: quote(content),
        payload: serde_json::json!({
            "lead_id": lead_id,
            "ledger_id": ledger_id,
            "ai_vendor": ai_vendor,
            "requested_capability": capability,
        }),
    }
}

/// A producer signal's longest title.
const SIGNAL_TITLE_MAX: usize = 500;

/// The feed line of an accepted lead.
pub fn lead_accepted_summary(ai_vendor: &str, capability: Option<&str>, content: &str) -> String {
    let quote = quote(content);
    match capability {
        Some(capability) => {
            format!("Accepted a {ai_vendor} connector lead ({capability}): {quote}")
        }
        None => format!("Accepted a {ai_vendor} connector lead: {quote}"),
    }
}

/// The start of `content`, marked when cut.
fn quote(content: &str) -> String {
    let mut quote: String = content.chars().take(SUMMARY_QUOTE_CHARS).collect();
    if quote.len() < content.len() {
        quote.push('…');
    }
    quote
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lead_capabilities_queue_a_lead_and_anything_else_proposes() {
        assert_eq!(Outcome::of(Some("lead")), Outcome::LeadQueued);
        assert_eq!(Outcome::of(Some("lead.capture")), Outcome::LeadQueued);
        assert_eq!(Outcome::of(Some("LEAD_enrich")), Outcome::LeadQueued);
        assert_eq!(Outcome::of(Some("memory.write")), Outcome::Proposed);
        assert_eq!(Outcome::of(Some("lea")), Outcome::Proposed);
        assert_eq!(Outcome::of(Some("misleading")), Outcome::Proposed);
        assert_eq!(Outcome::of(Some("é")), Outcome::Proposed);
        assert_eq!(Outcome::of(None), Outcome::Proposed);
    }

    #[test]
    fn content_is_split_into_entries_on_character_boundaries() {
        assert_eq!(memory_parts("short"), vec!["short"]);
        let long = "é".repeat(CONTENT_MAX) + &"x".repeat(CONTENT_MAX) + "tail";
        let parts = memory_parts(&long);
        assert_eq!(parts.len(), 3);
        assert!(parts.iter().all(|p| p.chars().count() <= CONTENT_MAX));
        assert_eq!(parts.concat(), long);
        assert_eq!(parts[2], "tail");
    }

    #[test]
    fn a_lead_signal_is_its_own_and_names_the_connector() {
        let lead = uuid::Uuid::now_v7();
        let signal = lead_signal(
            lead,
            uuid::Uuid::nil(),
            "claude",
            Some("lead.capture"),
            "Ada",
        );
        assert_eq!(signal.dedup_key, format!("lead:{lead}"));
        assert_eq!(signal.source, "connector:claude");
        assert_eq!(
            signal.title,
            "A claude connector queued a lead (lead.capture)"
        );
        assert_eq!(signal.description, "Ada");
        assert_eq!(signal.payload["lead_id"], lead.to_string());
        let capability = "x".repeat(600);
        let long = lead_signal(lead, lead, "custom", Some(capability.as_str()), "Ada");
        assert_eq!(long.title.chars().count(), SIGNAL_TITLE_MAX);
    }

    #[test]
    fn the_summary_quotes_the_start_of_the_content() {
        let summary = approval_summary("claude", Some("memory.write"), &"a".repeat(300));
        assert!(summary.starts_with("Approved a claude connector proposal (memory.write): aaa"));
        assert!(summary.ends_with("a…"));
        assert_eq!(
            approval_summary("custom", None, "hello"),
            "Approved a custom connector proposal: hello"
        );
    }
}
