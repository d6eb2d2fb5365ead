//! The local model's committed calibration is what the repository's paraphrase set measures,
//! and does what the calibration promises on it. Needs `EMBED_MODEL_DIR` (`scripts/models.sh`
//! prints it); `make test` sets it, and under CI a missing model fails the test.

use embed::calibration::{self, PARAPHRASE_SCORE, ParaphraseSet, UNRELATED_SCORE};
use embed::{Calibration, LocalMiniLm};

fn model() -> Option<LocalMiniLm> {
    let Some(dir) = std::env::var_os("EMBED_MODEL_DIR") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "EMBED_MODEL_DIR must be set under CI"
        );
        eprintln!("SKIPPED: EMBED_MODEL_DIR is unset");
        return None;
    };
    Some(LocalMiniLm::load(&dir).expect("the local model loads"))
}

#[tokio::test]
async fn committed_local_anchors_match_the_measurement() {
    let Some(model) = model() else { return };
    let measured = calibration::measure(&model, &ParaphraseSet::repository())
        .await
        .unwrap();
    let fresh = measured.calibration().unwrap();
    let committed = Calibration::LOCAL_MINILM;
    assert!(
        (fresh.unrelated - committed.unrelated).abs() < 0.005
            && (fresh.paraphrase - committed.paraphrase).abs() < 0.005,
        "measured {fresh:?}, committed {committed:?}: update Calibration::LOCAL_MINILM"
    );

    let share = |values: &[f32], keep: &dyn Fn(f32) -> bool| {
        values.iter().filter(|c| keep(committed.score(**c))).count() as f64 / values.len() as f64
    };
    let paraphrases_through = share(&measured.paraphrase, &|s| s >= PARAPHRASE_SCORE);
    let unrelated_low = share(&measured.unrelated, &|s| s <= UNRELATED_SCORE);
    assert!(paraphrases_through >= 0.79, "{paraphrases_through}");
    assert!(unrelated_low >= 0.94, "{unrelated_low}");
    // The median paraphrase, a "typical" one, clears 0.5; the median unrelated pair is near 0.
    let median = |v: &[f32]| committed.score(calibration::quantile(v, 0.5));
    assert!(median(&measured.paraphrase) >= PARAPHRASE_SCORE);
    assert!(median(&measured.unrelated) <= 0.1);
}
