//! Calibrated similarity: a provider's raw cosine mapped onto a score in 0..1 where a typical
//! paraphrase scores at least 0.5 and unrelated text at most 0.2.
//!
//! Small sentence-embedding models give true paraphrases low cosines (all-MiniLM-L6-v2: a
//! question and the decision it asks about, sharing no key word, often land between 0.2 and
//! 0.5), so a threshold such as 0.5 means nothing on the raw value. Each provider is measured
//! on the paraphrase set kept in `calibration/paraphrases.json` ([`measure`]); the two anchors
//! found there define a monotone piecewise-linear map:
//!
//! | raw cosine            | score              |
//! |-----------------------|--------------------|
//! | ≤ 0                   | 0                  |
//! | 0 … `unrelated`       | 0 … 0.2            |
//! | `unrelated` … `paraphrase` | 0.2 … 0.5     |
//! | `paraphrase` … 1      | 0.5 … 1            |

use serde::Deserialize;

use crate::{EmbedError, Embedder, cosine};

/// The score unrelated text stays under.
pub const UNRELATED_SCORE: f32 = 0.2;
/// The score a typical paraphrase reaches.
pub const PARAPHRASE_SCORE: f32 = 0.5;
/// The share of the set's paraphrases whose cosine reaches the `paraphrase` anchor (so they
/// score at least 0.5).
pub const PARAPHRASE_SHARE: f64 = 0.8;
/// The share of the set's unrelated pairs whose cosine stays under the `unrelated` anchor (so
/// they score at most 0.2). Not all of them: pairs drawn from different decisions still share
/// a topic now and then (backups and snapshots, prices and billing).
pub const UNRELATED_SHARE: f64 = 0.95;

/// The two anchors of a provider's map, in raw cosine.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct Calibration {
    /// The raw cosine unrelated text stays under (maps to 0.2).
    pub unrelated: f32,
    /// The raw cosine a typical paraphrase reaches (maps to 0.5).
    pub paraphrase: f32,
}

impl Calibration {
    /// all-MiniLM-L6-v2 (the local provider), as measured on the repository's set by
    /// `cargo run -p embed --example calibrate` and checked by `tests/calibration.rs`.
    pub const LOCAL_MINILM: Calibration = Calibration {
        unrelated: 0.227,
        paraphrase: 0.258,
    };

    /// all-mpnet-base-v2 (the local provider's MPNet directory), measured the same way: full
    /// precision gives about 0.226 / 0.308, int8 weights 0.222 / 0.296; these anchors sit
    /// between.
    pub const LOCAL_MPNET: Calibration = Calibration {
        unrelated: 0.224,
        paraphrase: 0.302,
    };

    /// The identity map: for providers not measured yet, the raw cosine is the score.
    pub const IDENTITY: Calibration = Calibration {
        unrelated: UNRELATED_SCORE,
        paraphrase: PARAPHRASE_SCORE,
    };

    /// Anchors must satisfy 0 < unrelated < paraphrase < 1.
    pub fn new(unrelated: f32, paraphrase: f32) -> Result<Self, EmbedError> {
        if !(unrelated > 0.0 && unrelated < paraphrase && paraphrase < 1.0) {
            return Err(EmbedError::Config(format!(
                "calibration anchors must satisfy 0 < unrelated < paraphrase < 1 (got {unrelated} and {paraphrase})"
            )));
        }
        Ok(Self {
            unrelated,
            paraphrase,
        })
    }

    /// The calibrated score of a raw cosine.
    pub fn score(&self, cosine: f32) -> f32 {
        let c = cosine.clamp(0.0, 1.0);
        let (u, p) = (self.unrelated, self.paraphrase);
        let score = if c <= u {
            UNRELATED_SCORE * c / u
        } else if c <= p {
            UNRELATED_SCORE + (PARAPHRASE_SCORE - UNRELATED_SCORE) * (c - u) / (p - u)
        } else {
            PARAPHRASE_SCORE + (1.0 - PARAPHRASE_SCORE) * (c - p) / (1.0 - p)
        };
        score.clamp(0.0, 1.0)
    }

    /// The lowest raw cosine whose score is at least `score` (the inverse of [`Self::score`]),
    /// so a threshold can be applied to the raw value inside the database. A score of 0 lets
    /// every cosine through, negative ones included.
    pub fn raw_threshold(&self, score: f32) -> f32 {
        let s = score.clamp(0.0, 1.0);
        let (u, p) = (self.unrelated, self.paraphrase);
        if s <= 0.0 {
            -1.0
        } else if s <= UNRELATED_SCORE {
            u * s / UNRELATED_SCORE
        } else if s <= PARAPHRASE_SCORE {
            u + (p - u) * (s - UNRELATED_SCORE) / (PARAPHRASE_SCORE - UNRELATED_SCORE)
        } else {
            p + (1.0 - p) * (s - PARAPHRASE_SCORE) / (1.0 - PARAPHRASE_SCORE)
        }
    }
}

/// A paraphrase set: decisions and plain-language questions that ask for them.
#[derive(Debug, Clone, Deserialize)]
pub struct ParaphraseSet {
    pub pairs: Vec<ParaphrasePair>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ParaphrasePair {
    pub decision: String,
    pub question: String,
}

impl ParaphraseSet {
    /// The set kept in the repository.
    pub fn repository() -> Self {
        serde_json::from_str(include_str!("../calibration/paraphrases.json"))
            .expect("calibration/paraphrases.json is a valid paraphrase set")
    }
}

/// Raw cosines of a provider on a paraphrase set, and the anchors they give.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// Each question against its own decision, ascending.
    pub paraphrase: Vec<f32>,
    /// Each question against every other decision, ascending.
    pub unrelated: Vec<f32>,
}

impl Measurement {
    /// `unrelated`: the cosine [`UNRELATED_SHARE`] of the unrelated pairs stay under.
    /// `paraphrase`: the cosine [`PARAPHRASE_SHARE`] of the paraphrases reach.
    pub fn calibration(&self) -> Result<Calibration, EmbedError> {
        Calibration::new(
            quantile(&self.unrelated, UNRELATED_SHARE),
            quantile(&self.paraphrase, 1.0 - PARAPHRASE_SHARE),
        )
    }
}

/// The `q` quantile (nearest rank) of ascending `values`.
pub fn quantile(values: &[f32], q: f64) -> f32 {
    if values.is_empty() {
        return 0.0;
    }
    let rank = ((values.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize;
    values[rank]
}

/// Embeds the set with `embedder` (decisions as passages, questions as queries, each with the
/// model's instruction) and returns the raw cosines.
pub async fn measure(
    embedder: &dyn Embedder,
    set: &ParaphraseSet,
) -> Result<Measurement, EmbedError> {
    let decisions: Vec<String> = set.pairs.iter().map(|p| p.decision.clone()).collect();
    let decisions = embedder.embed_passages(&decisions).await?;
    let mut questions = Vec::with_capacity(set.pairs.len());
    for pair in &set.pairs {
        questions.push(embedder.embed_query(&pair.question).await?);
    }
    let mut paraphrase = Vec::new();
    let mut unrelated = Vec::new();
    for (i, question) in questions.iter().enumerate() {
        for (j, decision) in decisions.iter().enumerate() {
            let c = cosine(question, decision);
            if i == j {
                paraphrase.push(c);
            } else {
                unrelated.push(c);
            }
        }
    }
    paraphrase.sort_by(f32::total_cmp);
    unrelated.sort_by(f32::total_cmp);
    Ok(Measurement {
        paraphrase,
        unrelated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_map_to_their_scores() {
        let c = Calibration::new(0.15, 0.3).unwrap();
        assert!((c.score(0.15) - 0.2).abs() < 1e-6);
        assert!((c.score(0.3) - 0.5).abs() < 1e-6);
        assert_eq!(c.score(-0.4), 0.0);
        assert_eq!(c.score(1.0), 1.0);
        assert!((c.score(0.65) - 0.75).abs() < 1e-6);
    }

    #[test]
    fn score_is_monotone_and_inverted_by_raw_threshold() {
        let c = Calibration::LOCAL_MINILM;
        let mut last = -1.0;
        for i in 1..=100 {
            let raw = i as f32 / 100.0;
            let s = c.score(raw);
            assert!(s >= last);
            last = s;
            assert!((c.raw_threshold(s) - raw).abs() < 1e-4, "raw {raw}");
        }
        assert_eq!(c.raw_threshold(0.0), -1.0);
    }

    #[test]
    fn identity_is_the_identity() {
        for raw in [0.0, 0.1, 0.2, 0.35, 0.5, 0.9, 1.0] {
            assert!((Calibration::IDENTITY.score(raw) - raw).abs() < 1e-6);
        }
    }

    #[test]
    fn bad_anchors_are_refused() {
        assert!(Calibration::new(0.3, 0.2).is_err());
        assert!(Calibration::new(0.0, 0.2).is_err());
        assert!(Calibration::new(0.2, 1.0).is_err());
    }

    #[test]
    fn the_repository_set_loads() {
        assert!(ParaphraseSet::repository().pairs.len() >= 30);
    }
}
