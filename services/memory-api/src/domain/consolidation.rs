//! Consolidation: which of the memories read in a run are duplicate or stale candidates.
//! Items are read newest first; the newest of a group of duplicates is the one kept, each
//! older one is a candidate pointing at it.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;

/// Raw cosine at or above which two items are duplicates.
pub const DUPLICATE_SIMILARITY: f64 = 0.92;
/// Raw cosine at or above which a newer decision on the same product supersedes an older one.
pub const SUPERSEDED_SIMILARITY: f64 = 0.85;
/// A decision older than this, never referenced by a signal, is stale.
pub const STALE_AFTER_DAYS: i64 = 180;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ItemKind {
    Decision,
    Corpus,
}

impl ItemKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Decision => "decision",
            Self::Corpus => "corpus",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "decision" => Some(Self::Decision),
            "corpus" => Some(Self::Corpus),
            _ => None,
        }
    }
}

pub type ItemRef = (ItemKind, Uuid);

/// One memory read by the run.
#[derive(Debug, Clone)]
pub struct ReadItem {
    pub item: ItemRef,
    /// `text::normalize` of the decision text or the entry's content.
    pub normalized: String,
    /// The product of a decision.
    pub product: Option<String>,
    pub at: DateTime<Utc>,
    /// Whether a signal references it (decisions only).
    pub referenced: bool,
}

/// Two read items whose embeddings are at least [`SUPERSEDED_SIMILARITY`] alike.
#[derive(Debug, Clone, Copy)]
pub struct Pair {
    pub a: ItemRef,
    pub b: ItemRef,
    pub similarity: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    SameNormalizedText,
    EmbeddingSimilarity,
    Superseded,
    OldUnreferenced,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SameNormalizedText => "same_normalized_text",
            Self::EmbeddingSimilarity => "embedding_similarity",
            Self::Superseded => "superseded",
            Self::OldUnreferenced => "old_unreferenced",
        }
    }

    /// `duplicate` or `stale`.
    pub fn kind(self) -> &'static str {
        match self {
            Self::SameNormalizedText | Self::EmbeddingSimilarity => "duplicate",
            Self::Superseded | Self::OldUnreferenced => "stale",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub rule: Rule,
    pub item: ItemRef,
    /// The newer item it duplicates or that supersedes it.
    pub other: Option<ItemRef>,
    pub similarity: Option<f64>,
}

/// How many of `tokens` (item sizes, newest first) fit in `budget`, and their sum. Reading
/// stops at the first item that does not fit.
pub fn within_budget(tokens: &[usize], budget: usize) -> (usize, usize) {
    let mut used = 0;
    for (i, &t) in tokens.iter().enumerate() {
        if used + t > budget {
            return (i, used);
        }
        used += t;
    }
    (tokens.len(), used)
}

/// The candidates among `items` (newest first). Each item is at most one duplicate candidate
/// (same text before similarity) and each decision at most one stale candidate (superseded
/// before old).
pub fn candidates(items: &[ReadItem], pairs: &[Pair], now: DateTime<Utc>) -> Vec<Candidate> {
    let position: HashMap<ItemRef, usize> = items
        .iter()
        .enumerate()
        .map(|(i, item)| (item.item, i))
        .collect();
    // For each item, its most similar newer item (and the most similar newer decision on the
    // same product).
    let mut best_newer: HashMap<ItemRef, (ItemRef, f64)> = HashMap::new();
    let mut best_superseding: HashMap<ItemRef, (ItemRef, f64)> = HashMap::new();
    for pair in pairs {
        let (Some(&pa), Some(&pb)) = (position.get(&pair.a), position.get(&pair.b)) else {
            continue;
        };
        let (newer, older) = if pa < pb { (pa, pb) } else { (pb, pa) };
        let (newer, older) = (&items[newer], &items[older]);
        let better = |slot: Option<&(ItemRef, f64)>| slot.is_none_or(|s| pair.similarity > s.1);
        if pair.similarity >= DUPLICATE_SIMILARITY && better(best_newer.get(&older.item)) {
            best_newer.insert(older.item, (newer.item, pair.similarity));
        }
        let same_product = older.item.0 == ItemKind::Decision
            && newer.item.0 == ItemKind::Decision
            && older.product.is_some()
            && older.product == newer.product;
        if same_product
            && pair.similarity >= SUPERSEDED_SIMILARITY
            && better(best_superseding.get(&older.item))
        {
            best_superseding.insert(older.item, (newer.item, pair.similarity));
        }
    }
    let stale_before = now - Duration::days(STALE_AFTER_DAYS);
    let mut first_with_text: HashMap<&str, ItemRef> = HashMap::new();
    let mut out = Vec::new();
    for item in items {
        let same_text = if item.normalized.is_empty() {
            None
        } else {
            match first_with_text.get(item.normalized.as_str()) {
                Some(&first) => Some(first),
                None => {
                    first_with_text.insert(&item.normalized, item.item);
                    None
                }
            }
        };
        if let Some(first) = same_text {
            out.push(Candidate {
                rule: Rule::SameNormalizedText,
                item: item.item,
                other: Some(first),
                similarity: None,
            });
        } else if let Some(&(other, similarity)) = best_newer.get(&item.item) {
            out.push(Candidate {
                rule: Rule::EmbeddingSimilarity,
                item: item.item,
                other: Some(other),
                similarity: Some(similarity),
            });
        }
        if item.item.0 != ItemKind::Decision {
            continue;
        }
        if let Some(&(other, similarity)) = best_superseding.get(&item.item) {
            out.push(Candidate {
                rule: Rule::Superseded,
                item: item.item,
                other: Some(other),
                similarity: Some(similarity),
            });
        } else if item.at < stale_before && !item.referenced {
            out.push(Candidate {
                rule: Rule::OldUnreferenced,
                item: item.item,
                other: None,
                similarity: None,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(kind: ItemKind, text: &str, product: Option<&str>, days_ago: i64) -> ReadItem {
        ReadItem {
            item: (kind, Uuid::now_v7()),
            normalized: crate::domain::text::normalize(text),
            product: product.map(str::to_owned),
            at: Utc::now() - Duration::days(days_ago),
            referenced: false,
        }
    }

    #[test]
    fn budget_stops_at_the_first_item_that_does_not_fit() {
        assert_eq!(within_budget(&[3, 4, 5], 7), (2, 7));
        assert_eq!(within_budget(&[3, 4, 5], 6), (1, 3));
        assert_eq!(within_budget(&[3, 4], 100), (2, 7));
        assert_eq!(within_budget(&[9], 5), (0, 0));
    }

    #[test]
    fn duplicates_point_at_the_newest_and_stale_decisions_are_found() {
        use ItemKind::*;
        let items = vec![
            item(Corpus, "Prefers tea!", None, 0),
            item(Corpus, "prefers   TEA", None, 1),
            item(Decision, "Use Postgres for billing", Some("billing"), 2),
            item(Decision, "Use MySQL for billing", Some("billing"), 3),
            item(Decision, "Ship weekly", Some("web"), 400),
            item(Corpus, "Likes long walks", None, 5),
        ];
        let pairs = [
            Pair {
                a: items[3].item,
                b: items[2].item,
                similarity: 0.87,
            },
            Pair {
                a: items[0].item,
                b: items[5].item,
                similarity: 0.95,
            },
        ];
        let found = candidates(&items, &pairs, Utc::now());
        assert_eq!(
            found,
            vec![
                Candidate {
                    rule: Rule::SameNormalizedText,
                    item: items[1].item,
                    other: Some(items[0].item),
                    similarity: None,
                },
                Candidate {
                    rule: Rule::Superseded,
                    item: items[3].item,
                    other: Some(items[2].item),
                    similarity: Some(0.87),
                },
                Candidate {
                    rule: Rule::OldUnreferenced,
                    item: items[4].item,
                    other: None,
                    similarity: None,
                },
                Candidate {
                    rule: Rule::EmbeddingSimilarity,
                    item: items[5].item,
                    other: Some(items[0].item),
                    similarity: Some(0.95),
                },
            ]
        );
    }
}
