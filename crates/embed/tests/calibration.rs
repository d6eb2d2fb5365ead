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

/// all-mpnet-base-v2's committed anchors, at full precision and with int8 weights. Needs
/// `EMBED_MPNET_DIR` and `EMBED_ONNXRUNTIME_LIBRARY` (`scripts/run-tests.sh` sets both).
#[tokio::test]
async fn committed_mpnet_anchors_match_the_measurement() {
    let (Some(dir), Some(library)) = (
        std::env::var_os("EMBED_MPNET_DIR"),
        std::env::var_os("EMBED_ONNXRUNTIME_LIBRARY"),
    ) else {
        eprintln!("SKIPPED: EMBED_MPNET_DIR or EMBED_ONNXRUNTIME_LIBRARY is unset");
        return;
    };
    let committed = Calibration::LOCAL_MPNET;
    for quantized in [false, true] {
        let model = embed::build(&embed::EmbedConfig {
            provider: embed::Provider::Local,
            model_dir: Some(dir.clone().into()),
            onnxruntime_library: Some(library.clone().into()),
            quantized,
            ..Default::default()
        })
        .expect("all-mpnet-base-v2 loads");
        let measured = calibration::measure(model.as_ref(), &ParaphraseSet::repository())
            .await
            .unwrap();
        let fresh = measured.calibration().unwrap();
        assert!(
            (fresh.unrelated - committed.unrelated).abs() < 0.008
                && (fresh.paraphrase - committed.paraphrase).abs() < 0.008,
            "int8 {quantized}: measured {fresh:?}, committed {committed:?}: update \
             Calibration::LOCAL_MPNET"
        );
        let median = |v: &[f32]| committed.score(calibration::quantile(v, 0.5));
        assert!(median(&measured.paraphrase) >= PARAPHRASE_SCORE);
        assert!(median(&measured.unrelated) <= 0.1);
    }
}
