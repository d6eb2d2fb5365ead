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
    let mut quote: String = content.chars().take(SUMMARY_QUOTE_CHARS).collect();
    if quote.len() < content.len() {
        quote.push('…');
    }
    match capability {
        Some(capability) => {
            format!("Approved a {ai_vendor} connector proposal ({capability}): {quote}")
        }
        None => format!("Approved a {ai_vendor} connector proposal: {quote}"),
    }
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
