//! `dependency_up{dependency}` in `/metrics`: every health check, required or not, run in the
//! background so a scrape never waits on a dependency.

use std::time::Duration;

use http_kit::health::Readiness;
use prometheus::{IntGaugeVec, Opts};
use telemetry::Metrics;
use tokio::sync::watch;

/// How often the checks run for the gauge.
const PERIOD: Duration = Duration::from_secs(2);

/// Registers the gauge in `metrics` and keeps it current until `shutdown` turns true.
pub fn spawn_gauge(readiness: Readiness, metrics: &Metrics, mut shutdown: watch::Receiver<bool>) {
    let gauge = IntGaugeVec::new(
        Opts::new(
            "dependency_up",
            "1 when the dependency answers its health check, 0 when it does not",
        ),
        &["dependency"],
    )
    .expect("static metric definition");
    metrics.register(Box::new(gauge.clone()));
    tokio::spawn(async move {
        loop {
            for result in readiness.check(true).await {
                gauge
                    .with_label_values(&[result.name])
                    .set(i64::from(result.ok));
            }
            tokio::select! {
                _ = shutdown.changed() => break,
                () = tokio::time::sleep(PERIOD) => {}
            }
            if *shutdown.borrow() {
                break;
            }
        }
    });
}
