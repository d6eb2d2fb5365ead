//! While rows are re-embedded after a model upgrade, a row not re-embedded yet is searched with
//! its previous model's vector against the previous model's query vector. That cosine is on
//! the previous model's scale; [`Translation`] carries it onto the new model's, so that both
//! kinds of rows are ranked (and thresholded) in one answer.
//!
//! The map is the piecewise-linear one through the two models' calibration anchors
//! ([`embed::Calibration`]): 0 stays 0, the previous model's `unrelated` anchor goes to the new
//! model's `unrelated`, its `paraphrase` to the new `paraphrase`, and 1 stays 1, linear in
//! between; a negative cosine is kept as it is. A translated cosine therefore has, under the
//! new calibration, the similarity the previous calibration gave the original one: a typical
//! paraphrase still scores 0.5 and unrelated text still at most 0.2. The map is monotone, so
//! the order of the previous model's own ranking is kept.

use embed::Calibration;

/// The map of the previous model's raw cosines onto the new model's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Translation {
    /// The previous model's anchors.
    pub from: Calibration,
    /// The new model's anchors.
    pub to: Calibration,
}

impl Translation {
    /// The knots of the map, as (previous cosine, new cosine), ascending.
    fn knots(&self) -> [(f64, f64); 4] {
        let (f, t) = (self.from, self.to);
        [
            (0.0, 0.0),
            (f64::from(f.unrelated), f64::from(t.unrelated)),
            (f64::from(f.paraphrase), f64::from(t.paraphrase)),
            (1.0, 1.0),
        ]
    }

    /// The new model's cosine for the previous model's `cosine`.
    pub fn cosine(&self, cosine: f64) -> f64 {
        if cosine <= 0.0 {
            return cosine;
        }
        let knots = self.knots();
        for pair in knots.windows(2) {
            let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
            if cosine <= x1 {
                return y0 + (cosine - x0) * (y1 - y0) / (x1 - x0);
            }
        }
        // Above 1 (rounding): the last piece, extended.
        let ((x0, y0), (x1, y1)) = (knots[2], knots[3]);
        y0 + (cosine - x0) * (y1 - y0) / (x1 - x0)
    }

    /// [`Self::cosine`] as a SQL `float8` expression of `x`, a SQL expression of the previous
    /// model's cosine (NULL gives NULL).
    pub fn sql(&self, x: &str) -> String {
        let [_, (u0, u1), (p0, p1), _] = self.knots();
        let (a, b, c) = (u1 / u0, (p1 - u1) / (p0 - u0), (1.0 - p1) / (1.0 - p0));
        format!(
            "(CASE WHEN ({x}) <= 0 THEN ({x}) \
                   WHEN ({x}) <= {u0:?} THEN ({x}) * {a:?} \
                   WHEN ({x}) <= {p0:?} THEN {u1:?} + (({x}) - {u0:?}) * {b:?} \
                   ELSE {p1:?} + (({x}) - {p0:?}) * {c:?} END)::float8"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINILM_TO_MPNET: Translation = Translation {
        from: Calibration::LOCAL_MINILM,
        to: Calibration::LOCAL_MPNET,
    };

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[test]
    fn anchors_go_to_anchors_and_ends_stay() {
        let t = MINILM_TO_MPNET;
        assert!(close(t.cosine(0.0), 0.0));
        assert!(close(t.cosine(1.0), 1.0));
        assert!(close(
            t.cosine(f64::from(t.from.unrelated)),
            f64::from(t.to.unrelated)
        ));
        assert!(close(
            t.cosine(f64::from(t.from.paraphrase)),
            f64::from(t.to.paraphrase)
        ));
        assert!(close(t.cosine(-0.3), -0.3));
    }

    #[test]
    fn is_monotone() {
        let t = MINILM_TO_MPNET;
        let mut last = f64::NEG_INFINITY;
        for i in -20..=105 {
            let y = t.cosine(f64::from(i) / 100.0);
            assert!(y >= last, "at {i}");
            last = y;
        }
    }

    #[test]
    fn keeps_the_calibrated_similarity() {
        let t = MINILM_TO_MPNET;
        for i in 1..100 {
            let raw = f64::from(i) / 100.0;
            let before = t.from.score(raw as f32);
            let after = t.to.score(t.cosine(raw) as f32);
            assert!(
                (before - after).abs() < 1e-4,
                "raw {raw}: {before} vs {after}"
            );
        }
    }

    #[test]
    fn one_model_onto_itself_is_the_identity() {
        let t = Translation {
            from: Calibration::LOCAL_MPNET,
            to: Calibration::LOCAL_MPNET,
        };
        for i in -10..=100 {
            let x = f64::from(i) / 100.0;
            assert!(close(t.cosine(x), x), "{x}");
        }
    }

    #[test]
    fn the_sql_names_its_input_and_every_knot() {
        let sql = MINILM_TO_MPNET.sql("c");
        assert!(sql.starts_with("(CASE WHEN (c) <= 0"), "{sql}");
        assert!(sql.ends_with("END)::float8"), "{sql}");
        assert!(!sql.contains("NaN") && !sql.contains("inf"), "{sql}");
    }
}
