//! Inbox drafts: how thread ids are compared, and which of the three answers a lookup gives.
//!
//! Ruled: the lookup prefers `thread_perm_id`, then `legacy_thread_id`; no stored set is
//! `no_draft`; a stored set whose latest message is not older than the caller's is
//! `draft_available`, an older one `no_draft`; no `latest_message_at` given, or the two ids
//! matching different stored sets, is `indeterminate`. Freshness is compared by message time,
//! never by message id.

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// Longest hexadecimal id stored.
pub const HEX_ID_MAX: usize = 64;

/// A hexadecimal id as stored: lowercase, without leading zeros (`0` for zero), so that the
/// same number written two ways is one id. `None` when it is not 1..=64 hexadecimal digits.
pub fn normalize_hex(id: &str) -> Option<String> {
    if id.is_empty() || id.len() > HEX_ID_MAX || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let digits = id.trim_start_matches('0');
    Some(if digits.is_empty() {
        "0".to_owned()
    } else {
        digits.to_ascii_lowercase()
    })
}

/// The stored thread id a permanent thread id names: Gmail's `thread-f:<decimal>` is the
/// thread whose hexadecimal id is that number; a permanent id written in hexadecimal names
/// itself. Other forms (such as `thread-a:…`) name no stored thread.
pub fn thread_of_perm_id(perm_id: &str) -> Option<String> {
    if let Some(decimal) = perm_id.strip_prefix("thread-f:") {
        if decimal.is_empty() || !decimal.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        return decimal.parse::<u128>().ok().map(|n| format!("{n:x}"));
    }
    normalize_hex(perm_id)
}

/// Which of the caller's ids an answer is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchedOn {
    ThreadPermId,
    LegacyThreadId,
}

/// A stored set a thread id found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    pub id: Uuid,
    pub latest_message_at: DateTime<Utc>,
}

/// The answer's state and which set, if any, it shows (the one `matched_on` found).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    DraftAvailable(MatchedOn),
    NoDraft(MatchedOn),
    /// `show`: the matched set is shown, for the caller to judge.
    Indeterminate {
        matched_on: Option<MatchedOn>,
        show: bool,
    },
}

/// Decides the answer from what each id found. `perm_asked`: the caller gave a permanent id
/// (a `no_draft` then says it was looked up first).
pub fn decide(
    perm_asked: bool,
    by_perm: Option<Stored>,
    by_legacy: Option<Stored>,
    latest_message_at: Option<DateTime<Utc>>,
) -> Verdict {
    if let (Some(p), Some(l)) = (by_perm, by_legacy)
        && p.id != l.id
    {
        return Verdict::Indeterminate {
            matched_on: None,
            show: false,
        };
    }
    let found = by_perm
        .map(|s| (MatchedOn::ThreadPermId, s))
        .or_else(|| by_legacy.map(|s| (MatchedOn::LegacyThreadId, s)));
    let Some((matched_on, stored)) = found else {
        return Verdict::NoDraft(if perm_asked {
            MatchedOn::ThreadPermId
        } else {
            MatchedOn::LegacyThreadId
        });
    };
    match latest_message_at {
        None => Verdict::Indeterminate {
            matched_on: Some(matched_on),
            show: true,
        },
        Some(asked) if asked <= stored.latest_message_at => Verdict::DraftAvailable(matched_on),
        Some(_) => Verdict::NoDraft(matched_on),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn stored(time: &str) -> Stored {
        Stored {
            id: Uuid::now_v7(),
            latest_message_at: at(time),
        }
    }

    #[test]
    fn hex_ids_are_compared_as_numbers() {
        assert_eq!(normalize_hex("18C2F3A4").as_deref(), Some("18c2f3a4"));
        assert_eq!(normalize_hex("0018c2").as_deref(), Some("18c2"));
        assert_eq!(normalize_hex("000").as_deref(), Some("0"));
        assert_eq!(normalize_hex(""), None);
        assert_eq!(normalize_hex("xyz"), None);
        assert_eq!(normalize_hex(&"a".repeat(65)), None);
    }

    #[test]
    fn gmail_permanent_ids_name_their_hexadecimal_thread() {
        // thread-f:1781234567890123456 is 0x18b83766f0bcbac0.
        assert_eq!(
            thread_of_perm_id("thread-f:1781234567890123456").as_deref(),
            Some("18b83766f0bcbac0")
        );
        assert_eq!(thread_of_perm_id("18B85B7E").as_deref(), Some("18b85b7e"));
        assert_eq!(thread_of_perm_id("thread-a:r-123"), None);
        assert_eq!(thread_of_perm_id("thread-f:"), None);
        assert_eq!(thread_of_perm_id("thread-f:12x"), None);
    }

    #[test]
    fn the_three_answers() {
        let set = stored("2026-01-02T00:00:00Z");
        let other = stored("2026-01-02T00:00:00Z");
        let same = Some(at("2026-01-02T00:00:00Z"));
        let newer = Some(at("2026-01-03T00:00:00Z"));
        let older = Some(at("2026-01-01T00:00:00Z"));
        use MatchedOn::*;
        assert_eq!(
            decide(true, None, None, same),
            Verdict::NoDraft(ThreadPermId)
        );
        assert_eq!(
            decide(false, None, None, same),
            Verdict::NoDraft(LegacyThreadId)
        );
        assert_eq!(
            decide(true, Some(set), None, same),
            Verdict::DraftAvailable(ThreadPermId)
        );
        assert_eq!(
            decide(true, Some(set), None, older),
            Verdict::DraftAvailable(ThreadPermId)
        );
        assert_eq!(
            decide(true, None, Some(set), same),
            Verdict::DraftAvailable(LegacyThreadId)
        );
        assert_eq!(
            decide(true, Some(set), Some(set), newer),
            Verdict::NoDraft(ThreadPermId)
        );
        assert_eq!(
            decide(true, Some(set), None, None),
            Verdict::Indeterminate {
                matched_on: Some(ThreadPermId),
                show: true
            }
        );
        assert_eq!(
            decide(true, Some(set), Some(other), same),
            Verdict::Indeterminate {
                matched_on: None,
                show: false
            }
        );
    }
}
