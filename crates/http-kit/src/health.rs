//! `/healthz` (the process is up), `/readyz` (what it cannot work without answers) and
//! `/healthz/details` (every dependency, for operators). No credential.

use std::sync::Arc;
use std::time::Duration;

use actix_web::{HttpResponse, web};
use futures_util::future::{BoxFuture, join_all};
use serde_json::{Map, Value, json};

/// One dependency check: `Ok(())` when it is reachable.
pub type Probe = Arc<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// A fact read at each request (e.g. a progress the process updates as it goes); it must
/// answer at once, from what the process holds, never by asking a dependency.
pub type LiveFact = Arc<dyn Fn() -> Value + Send + Sync>;

/// The named checks `/readyz` runs, each bounded by `timeout`, and the informational ones
/// only `/healthz/details` adds.
#[derive(Clone)]
pub struct Readiness {
    probes: Vec<(&'static str, Probe, Need)>,
    timeout: Duration,
    /// What the process runs with, answered beside the checks (memory-api: the embedding
    /// model it loaded).
    facts: Map<String, Value>,
    /// Facts read at each request (memory-api: the re-embedding's progress).
    live_facts: Vec<(String, LiveFact)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Need {
    /// `/readyz` fails without it.
    Required,
    /// Reported, never a reason to stop sending traffic.
    Informational,
}

impl Readiness {
    pub fn new(timeout: Duration) -> Self {
        Self {
            probes: Vec::new(),
            timeout,
            facts: Map::new(),
            live_facts: Vec::new(),
        }
    }

    /// A fact `/readyz` and `/healthz/details` answer beside the checks, e.g.
    /// `embedding_model`. Never a secret nor an address.
    pub fn with_fact(mut self, name: &str, value: Value) -> Self {
        self.facts.insert(name.to_owned(), value);
        self
    }

    /// A fact `/readyz` and `/healthz/details` answer beside the checks, read from `fact` at
    /// each request, e.g. memory-api's `reembedding`. Never a secret nor an address.
    pub fn with_live_fact(mut self, name: &str, fact: LiveFact) -> Self {
        self.live_facts.push((name.to_owned(), fact));
        self
    }

    /// A check `/readyz` fails without.
    pub fn with(mut self, name: &'static str, probe: Probe) -> Self {
        self.probes.push((name, probe, Need::Required));
        self
    }

    /// A check only reported (`/healthz/details`, the `dependency_up` gauge).
    pub fn informational(mut self, name: &'static str, probe: Probe) -> Self {
        self.probes.push((name, probe, Need::Informational));
        self
    }

    /// Runs the required checks, or every check with `all`: each name, whether it is
    /// required, and whether it answered. A client error names hosts, users and databases,
    /// so it goes to the log, never to whoever asks.
    pub async fn check(&self, all: bool) -> Vec<CheckResult> {
        let probes = self
            .probes
            .iter()
            .filter(|(_, _, need)| all || *need == Need::Required);
        join_all(probes.map(|(name, probe, need)| async move {
            let outcome = match tokio_timeout(self.timeout, probe()).await {
                Some(outcome) => outcome,
                None => Err("timed out".to_owned()),
            };
            if let Err(error) = &outcome {
                tracing::warn!(check = *name, %error, "health check failed");
            }
            CheckResult {
                name,
                required: *need == Need::Required,
                ok: outcome.is_ok(),
            }
        }))
        .await
    }
}

/// One check's outcome.
#[derive(Debug, Clone, Copy)]
pub struct CheckResult {
    pub name: &'static str,
    pub required: bool,
    pub ok: bool,
}

fn checks_map(results: &[CheckResult]) -> Map<String, Value> {
    results
        .iter()
        .map(|r| {
            (
                r.name.to_owned(),
                Value::from(if r.ok { "ok" } else { "failed" }),
            )
        })
        .collect()
}

async fn tokio_timeout<F: std::future::Future>(limit: Duration, fut: F) -> Option<F::Output> {
    actix_web::rt::time::timeout(limit, fut).await.ok()
}

/// Registers `/healthz`, `/healthz/details` and `/readyz`.
pub fn configure(cfg: &mut web::ServiceConfig, readiness: Readiness) {
    cfg.app_data(web::Data::new(readiness))
        .service(web::resource("/healthz").route(web::get().to(healthz)))
        .service(web::resource("/healthz/details").route(web::get().to(health_details)))
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

/// Readiness: what the process cannot serve without answers (an API: its database; a worker:
/// its database and its broker). A load balancer stops sending traffic while this fails.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "operations",
    responses(
        (status = 200, description = "Every required dependency answers"),
        (status = 503, description = "A required dependency does not answer; `checks` names each check `ok` or `failed` (the cause is logged, never answered)."),
    )
)]
pub async fn readyz(readiness: web::Data<Readiness>) -> HttpResponse {
    let results = readiness.check(false).await;
    let ready = results.iter().all(|r| r.ok);
    let checks = checks_map(&results);
    let mut body =
        json!({ "status": if ready { "ready" } else { "unavailable" }, "checks": checks });
    add_facts(&mut body, &readiness);
    if ready {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}

/// Every dependency, for operators: the required ones of `/readyz` and the informational ones
/// (an API's broker and rate limiter). Always 200; `status` is `ok`, `degraded` (an
/// informational check fails: the process serves, with reduced function) or `unavailable` (a
/// required check fails: `/readyz` answers 503).
#[utoipa::path(
    get,
    path = "/healthz/details",
    tag = "operations",
    responses(
        (status = 200, description = "`status` (`ok`, `degraded` or `unavailable`), `ready` (whether `/readyz` passes) and `checks`: each dependency `ok` or `failed`", content_type = "application/json"),
    )
)]
pub async fn health_details(readiness: web::Data<Readiness>) -> HttpResponse {
    let results = readiness.check(true).await;
    let ready = results.iter().filter(|r| r.required).all(|r| r.ok);
    let status = match (ready, results.iter().all(|r| r.ok)) {
        (false, _) => "unavailable",
        (true, false) => "degraded",
        (true, true) => "ok",
    };
    let mut body = json!({
        "status": status,
        "ready": ready,
        "checks": checks_map(&results),
    });
    add_facts(&mut body, &readiness);
    HttpResponse::Ok().json(body)
}

/// The readiness facts, beside `status` and `checks` (never replacing them).
fn add_facts(body: &mut Value, readiness: &Readiness) {
    if let Some(body) = body.as_object_mut() {
        for (name, value) in &readiness.facts {
            body.entry(name.clone()).or_insert_with(|| value.clone());
        }
        for (name, fact) in &readiness.live_facts {
            body.entry(name.clone()).or_insert_with(|| fact());
        }
    }
}
