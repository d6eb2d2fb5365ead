//! Search helpers: vectors as pgvector literals, and reciprocal rank fusion of the semantic and
//! keyword rankings (exact names and identifiers that the keyword ranking finds stay on top).

use std::collections::HashMap;
use std::hash::Hash;

/// The constant of reciprocal rank fusion (the usual 60).
const RRF_K: f64 = 60.0;

/// `[0.1,0.2,…]`, the text form pgvector casts to `vector`.
pub fn vector_literal(vector: &[f32]) -> String {
    let parts: Vec<String> = vector.iter().map(|x| format!("{x}")).collect();
    format!("[{}]", parts.join(","))
}

/// Merges rankings (best first) into one: each item scores Σ 1/(60 + rank) over the rankings
/// it appears in; ties keep the order of first appearance.
pub fn fuse<T: Clone + Eq + Hash>(rankings: &[Vec<T>]) -> Vec<T> {
    fuse_scored(rankings)
        .into_iter()
        .map(|(item, _)| item)
        .collect()
}

/// [`fuse`], with each item's fused score.
pub fn fuse_scored<T: Clone + Eq + Hash>(rankings: &[Vec<T>]) -> Vec<(T, f64)> {
    let mut scores: HashMap<T, (f64, usize)> = HashMap::new();
    let mut seen = 0;
    for ranking in rankings {
        for (rank, item) in ranking.iter().enumerate() {
            let entry = scores.entry(item.clone()).or_insert_with(|| {
                seen += 1;
                (0.0, seen)
            });
            entry.0 += 1.0 / (RRF_K + rank as f64 + 1.0);
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
