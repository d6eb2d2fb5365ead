//! `/healthz` (the process is up) and `/readyz` (its dependencies answer). No credential.

use std::sync::Arc;
use std::time::Duration;

use actix_web::{HttpResponse, web};
use futures_util::future::{BoxFuture, join_all};
use serde_json::{Map, Value, json};

/// One dependency check: `Ok(())` when it is reachable.
pub type Probe = Arc<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// The named checks `/readyz` runs, each bounded by `timeout`.
#[derive(Clone)]
pub struct Readiness {
    probes: Vec<(&'static str, Probe)>,
    timeout: Duration,
}

impl Readiness {
    pub fn new(timeout: Duration) -> Self {
        Self {
            probes: Vec::new(),
            timeout,
        }
    }

    pub fn with(mut self, name: &'static str, probe: Probe) -> Self {
        self.probes.push((name, probe));
        self
    }

    /// Runs every check. The answer says only `ok` or `failed` per check: a client error
    /// names hosts, users and databases, so it goes to the log, not to whoever asks.
    async fn check(&self) -> (bool, Map<String, Value>) {
        let results = join_all(self.probes.iter().map(|(name, probe)| async move {
            let outcome = match tokio_timeout(self.timeout, probe()).await {
                Some(outcome) => outcome,
                None => Err("timed out".to_owned()),
            };
            if let Err(error) = &outcome {
                tracing::warn!(check = *name, %error, "readiness check failed");
            }
            (*name, outcome.is_ok())
        }))
        .await;
        let ready = results.iter().all(|(_, ok)| *ok);
        let checks = results
            .into_iter()
            .map(|(name, ok)| {
                (
                    name.to_owned(),
                    Value::from(if ok { "ok" } else { "failed" }),
                )
            })
            .collect();
        (ready, checks)
    }
}

async fn tokio_timeout<F: std::future::Future>(limit: Duration, fut: F) -> Option<F::Output> {
    actix_web::rt::time::timeout(limit, fut).await.ok()
}

/// Registers `/healthz` and `/readyz`.
pub fn configure(cfg: &mut web::ServiceConfig, readiness: Readiness) {
    cfg.app_data(web::Data::new(readiness))
        .service(web::resource("/healthz").route(web::get().to(healthz)))
        .service(web::resource("/readyz").route(web::get().to(readyz)));
}

/// Liveness: the process is up.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "operations",
    responses((status = 200, description = "The process is up"))
)]
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({ "status": "ok" }))
}

/// Readiness: the database and the broker answer.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "operations",
    responses(
        (status = 200, description = "Every dependency answers"),
        (status = 503, description = "A dependency does not answer; `checks` names each check `ok` or `failed` (the cause is logged, never answered)"),
    )
)]
pub async fn readyz(readiness: web::Data<Readiness>) -> HttpResponse {
    let (ready, checks) = readiness.check().await;
    let body = json!({ "status": if ready { "ready" } else { "unavailable" }, "checks": checks });
    if ready {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}
