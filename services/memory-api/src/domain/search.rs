//! Search helpers: vectors as pgvector literals, and reciprocal rank fusion of the semantic and
//! keyword rankings (exact names and identifiers that the keyword ranking finds stay on top).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::OnceLock;

use serde::Deserialize;

/// The search settings (`MEMORY_SEARCH__…`): how the semantic and keyword rankings are fused
/// (an item scores Σ weight / (rrf_k + rank) over the rankings it appears in), how decisions
/// are embedded, and whether queries are rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Fusion {
    /// The constant of reciprocal rank fusion (the usual 60): smaller lets the top ranks of
    /// each ranking count for more.
    pub rrf_k: f64,
    /// The weight of the semantic ranking.
    pub semantic_weight: f64,
    /// The weight of the keyword ranking (0: the keyword ranking only adds items the semantic
    /// one lacks, after them). Default 0.5: measured on the hard retrieval set
    /// (tests/fixtures/retrieval-hard), 1 let keyword matches on a same-topic decision push
    /// the answer down (R@1 0.48 against cosine's 0.50), 0.5 loses nothing to plain cosine
    /// while a row both rankings find still comes first.
    pub keyword_weight: f64,
    /// The weight of a decision's own words, against its words with its reasoning, in its
    /// vector (0..=1; 0: the whole text alone). See [`embed::passage`]: measured on the hard
    /// set, 0.5 wins over 0 (recall@1 +0.04, recall@5 +0.03). A change re-embeds every row.
    pub lead_weight: f32,
    /// Search queries are restated by the caller's own model before they are embedded (see
    /// [`crate::query_rewrite`]); off by default.
    pub llm_rewrite: bool,
}

impl Default for Fusion {
    fn default() -> Self {
        Self {
            rrf_k: 60.0,
            semantic_weight: 1.0,
            keyword_weight: 0.5,
            lead_weight: embed::DEFAULT_LEAD_WEIGHT,
            llm_rewrite: false,
        }
    }
}

impl Fusion {
    pub fn check(&self) -> Result<(), String> {
        let finite = [self.rrf_k, self.semantic_weight, self.keyword_weight]
            .iter()
            .all(|x| x.is_finite() && *x >= 0.0);
        if !finite || self.rrf_k < 1.0 || self.semantic_weight + self.keyword_weight <= 0.0 {
            return Err(format!(
                "search: rrf_k must be at least 1 and the weights non-negative, not both 0 ({self:?})"
            ));
        }
        if !(0.0..=1.0).contains(&self.lead_weight) {
            return Err(format!(
                "search: lead_weight must be between 0 and 1, not {}",
                self.lead_weight
            ));
        }
        Ok(())
    }

    /// What the stored vectors are recorded as made with: the model, and the lead weight when
    /// there is one (vectors made with another weight are not comparable either).
    pub fn vectors_name(&self, model: &str) -> String {
        if self.lead_weight > 0.0 {
            format!("{model}; lead {}", self.lead_weight)
        } else {
            model.to_owned()
        }
    }

    /// The weight of ranking `i` of [`fuse`]'s (0 semantic, 1 keyword). A zero weight still
    /// adds a vanishing score so that the ranking's items stay in the result, after the others.
    fn weight(&self, i: usize) -> f64 {
        let w = if i == 0 {
            self.semantic_weight
        } else {
            self.keyword_weight
        };
        if w > 0.0 { w } else { 1e-9 }
    }

    /// The SQL expression of one ranking's contribution at position `pos` (1-based; NULL when
    /// the ranking lacks the item), in `float8` as [`fuse_scored`] computes it.
    pub fn sql_term(&self, i: usize, pos: &str) -> String {
        format!(
            "({:?}::float8 / ({:?}::float8 + {pos}))",
            self.weight(i),
            self.rrf_k
        )
    }
}

static FUSION: OnceLock<Fusion> = OnceLock::new();

/// Sets the fusion of every search for the life of the process (at start-up; a second call is
/// ignored).
pub fn configure(fusion: Fusion) {
    let _ = FUSION.set(fusion);
}

/// The fusion in force.
pub fn fusion() -> Fusion {
    FUSION.get().copied().unwrap_or_default()
}

/// `[0.1,0.2,…]`, the text form pgvector casts to `vector`.
pub fn vector_literal(vector: &[f32]) -> String {
    let parts: Vec<String> = vector.iter().map(|x| format!("{x}")).collect();
    format!("[{}]", parts.join(","))
}

/// Merges rankings (best first; the semantic one first, then the keyword one) into one: each
/// item scores Σ weight/(rrf_k + rank) over the rankings it appears in (see [`Fusion`]); ties
/// keep the order of first appearance.
pub fn fuse<T: Clone + Eq + Hash>(rankings: &[Vec<T>]) -> Vec<T> {
    fuse_scored(rankings)
        .into_iter()
        .map(|(item, _)| item)
        .collect()
}

/// [`fuse`], with each item's fused score.
pub fn fuse_scored<T: Clone + Eq + Hash>(rankings: &[Vec<T>]) -> Vec<(T, f64)> {
    let fusion = fusion();
    let mut scores: HashMap<T, (f64, usize)> = HashMap::new();
    let mut seen = 0;
    for (i, ranking) in rankings.iter().enumerate() {
        for (rank, item) in ranking.iter().enumerate() {
            let entry = scores.entry(item.clone()).or_insert_with(|| {
                seen += 1;
                (0.0, seen)
            });
            entry.0 += fusion.weight(i) / (fusion.rrf_k + rank as f64 + 1.0);
        }
    }
    let mut fused: Vec<(T, (f64, usize))> = scores.into_iter().collect();
    fused.sort_by(|a, b| b.1.0.total_cmp(&a.1.0).then(a.1.1.cmp(&b.1.1)));
    fused
        .into_iter()
        .map(|(item, (score, _))| (item, score))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_in_both_rankings_win() {
        let semantic = vec!["a", "b", "c"];
        let keyword = vec!["c", "d"];
        assert_eq!(fuse(&[semantic, keyword]), ["c", "a", "b", "d"]);
    }

    #[test]
    fn literal_format() {
        assert_eq!(vector_literal(&[0.5, -1.0, 0.25]), "[0.5,-1,0.25]");
    }
}
