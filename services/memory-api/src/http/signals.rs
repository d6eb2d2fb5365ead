//! Signals: `POST /ingest/{project_id}` (one project signal of a product, signed with the
//! product's signing secret or sent with a write credential) and `POST /signals/ingest`
//! (a batch of producer signals, each validated and written on its own).

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, guard, web};
use auth::WriteAccess;
use chrono::Utc;
use http_kit::ApiError;
use http_kit::openapi::MemoryError;
use http_kit::{Route, route};
use rate_limit::policy::{Tier, memory_key, memory_quotas};
use serde_json::Value;
use uuid::Uuid;

use crate::domain::signing::{self, SignatureError};
use crate::ops::signals::{
    self as ops, BatchEnvelope, ProducerSignalBatch, ProducerSignalsIngested, ProjectSignal,
    ProjectSignalAccepted,
};
use crate::state::AppState;

/// A product id in a path: the hyphenated UUID only, so `/ingest/{project_id}` never shadows
/// the other `/ingest/...` routes.
const UUID_SEGMENT: &str =
    "{project_id:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}}";

pub const SIGNATURE_HEADER: &str = "x-memory-signature";
pub const TIMESTAMP_HEADER: &str = "x-memory-timestamp";

/// The routes behind the gate (a bearer credential), mounted and documented from here. The
/// project id is matched as a hyphenated UUID only ([`UUID_SEGMENT`]), so `/ingest/{project_id}`
/// never shadows the other `/ingest/...` routes.
pub const ROUTES: &[Route] = &[
    route!(ingest_project_signal, at = INGEST_PATH),
    route!(ingest_producer_signals),
];

/// `/ingest/{project_id}` as actix matches it (see [`UUID_SEGMENT`]).
const INGEST_PATH: &str = "/ingest/{project_id:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}}";

/// The signed form of `POST /api/v1/ingest/{project_id}`: a request without `Authorization`
/// (native webhooks cannot send one) reaches it before the gate; one with `Authorization`
/// goes through the gate to [`ingest_project_signal`].
pub fn configure_signed(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource(format!("/api/v1/ingest/{UUID_SEGMENT}"))
            .guard(guard::fn_guard(|ctx| {
                ctx.head().headers().get(header::AUTHORIZATION).is_none()
            }))
            .route(web::post().to(ingest_signed_project_signal)),
    );
}

/// Ingest one project signal of a product (signed, or with a write credential).
#[utoipa::path(
    post,
    path = "/api/v1/ingest/{project_id}",
    operation_id = "ingestProjectSignal",
    tag = "signals",
    description = "Records one project signal of the product `project_id` (a product's id). \
        Two ways to authenticate: a bearer credential with the write scope (the product must \
        be the caller's: 404 otherwise; signature headers are then not verified, only their \
        documented lengths are checked), or no \
        `Authorization` header and a signature: `X-Memory-Timestamp: <Unix seconds>` and \
        `X-Memory-Signature: sha256=<hex HMAC-SHA256(secret, \"<timestamp>.<raw body>\")>`, \
        the key being the product's signing secret exactly as shown (`msig_…`). The timestamp \
        must be within 300 s of the server's clock. After a rotation \
        (`POST /products/{name}/signing-secret`) the replaced secret keeps verifying for 24 \
        hours. A missing, malformed, stale or wrong signature, or an unknown product, answers \
        401. A signed request is accepted once: the same signature again (a replay, within the \
        tolerance) records nothing and answers 200 with `duplicate: true` and the first \
        signal's id. Signed requests are rate-limited per product, by its owner's tier. A repeated \
        `external_id` answers 200 with `duplicate: true` and the first signal's id, and \
        records nothing. Severity `error` and `critical` add an `anomaly` item to the \
        intelligence feed.",
    params(
        ("project_id" = Uuid, Path, description = "The product's id"),
        ("X-Memory-Signature" = Option<String>, Header, nullable = false, min_length = 1, max_length = 71,
            description = "Without `Authorization`: `sha256=` and the 64 hexadecimal digits of \
                HMAC-SHA256(signing secret, \"<X-Memory-Timestamp>.<raw body>\"). With \
                `Authorization` it is not verified (only its length is checked)."),
        ("X-Memory-Timestamp" = Option<String>, Header, nullable = false, min_length = 1, max_length = 12,
            description = "Without `Authorization`: Unix seconds (digits only), within 300 s of \
                the server's clock. With `Authorization` it is not verified (only its length is \
                checked)."),
    ),
    request_body = ProjectSignal,
    responses(
        (status = 200, description = "Accepted, or a duplicate of an earlier `external_id`", body = ProjectSignalAccepted),
        (status = 400, description = "A field is missing or over its limit, or a signature header is malformed (the message names it)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "No such product of the caller", body = MemoryError),
    )
)]
pub async fn ingest_project_signal(
    WriteAccess(caller): WriteAccess,
    req: HttpRequest,
    state: web::Data<AppState>,
    project_id: web::Path<Uuid>,
    body: http_kit::Json<ProjectSignal>,
) -> Result<web::Json<ProjectSignalAccepted>, ApiError> {
    check_header_forms(&req)?;
    ops::ingest_project_signal(&state.pool, &caller, project_id.into_inner(), &body)
        .await
        .map(web::Json)
}

/// The documented lengths of the signature headers, when a request with a credential sends
/// them (a 400 naming the header); their content is not verified then.
fn check_header_forms(req: &HttpRequest) -> Result<(), ApiError> {
    for (name, max) in [("X-Memory-Signature", 71), ("X-Memory-Timestamp", 12)] {
        if let Some(value) = req.headers().get(name)
            && !(1..=max).contains(&value.len())
        {
            return Err(ApiError::invalid_field(
                name,
                &format!("must be 1 to {max} characters"),
            ));
        }
    }
    Ok(())
}

/// The signed form (no credential): verify, count, record.
pub async fn ingest_signed_project_signal(
    req: HttpRequest,
    state: web::Data<AppState>,
    project_id: web::Path<Uuid>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    http_kit::nul::check_uri(req.uri())?;
    let header_of = |name: &str| req.headers().get(name).map(|v| v.to_str().unwrap_or(""));
    let (Some(signature), Some(timestamp)) =
        (header_of(SIGNATURE_HEADER), header_of(TIMESTAMP_HEADER))
    else {
        return Ok(unauthorized(
            "missing credential: send Authorization: Bearer <key>, or sign the request \
             (X-Memory-Signature and X-Memory-Timestamp)",
        ));
    };
    let checked = signing::parse_signature(signature).and_then(|tag| {
        signing::check_timestamp(timestamp, Utc::now().timestamp())
            .map(|signed_at| (tag, signed_at))
    });
    let (tag, signed_at) = match checked {
        Ok(checked) => checked,
        Err(err) => return Ok(unauthorized(&err.to_string())),
    };
    let keys = ops::signed_by(
        &state.pool,
        &state.kek,
        project_id.into_inner(),
        timestamp.trim(),
        &body,
        &tag,
    )
    .await?;
    let Some(keys) = keys else {
        // An unknown product answers like a wrong signature: nothing about its existence.
        return Ok(unauthorized(&SignatureError::Mismatch.to_string()));
    };

    let tier: Tier = keys.tier.parse().unwrap_or(Tier::Free);
    let quotas: Vec<_> = memory_quotas(tier)
        .into_iter()
        .map(|q| service_kit::scale_quota(q, state.rate_limit_scale))
        .collect();
    let key = memory_key(&format!("product:{}", keys.id));
    let decision = auth::middleware::count(&state.limiter, &key, &quotas).await;
    let with_headers = |mut res: HttpResponse| {
        if let Some(decision) = &decision {
            auth::middleware::put_headers(res.headers_mut(), decision);
        }
        res
    };
    if let Some(refused) = decision.as_ref().filter(|d| !d.allowed) {
        return Ok(with_headers(HttpResponse::from_error(
            auth::middleware::rate_limited(refused),
        )));
    }

    let parsed = serde_json::from_slice::<Value>(&body)
        .map_err(|e| ApiError::invalid_field("body", &format!("is malformed JSON: {e}")))
        .and_then(http_kit::extract::read_body::<ProjectSignal>);
    let signal = match parsed {
        Ok(signal) => signal,
        Err(err) => return Ok(with_headers(HttpResponse::from_error(err))),
    };
    let recorded = ops::record_signed(&state.pool, &keys, &signal, &tag, signed_at).await;
    match recorded {
        Ok(answer) => Ok(with_headers(HttpResponse::Ok().json(answer))),
        Err(err) => Ok(with_headers(HttpResponse::from_error(err))),
    }
}

/// A 401 like the gate's (no rate-limit headers: nothing was counted).
fn unauthorized(message: &str) -> HttpResponse {
    let mut res = HttpResponse::from_error(ApiError::unauthorized(message.to_owned()));
    res.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    res
}

/// Ingest a batch of producer signals.
#[utoipa::path(
    post,
    path = "/api/v1/signals/ingest",
    operation_id = "ingestProducerSignals",
    tag = "signals",
    description = "Validates and writes each signal on its own. 201: all accepted; 207: some \
        (the refused ones are in `errors`, each naming its index and field); 422: none \
        (`VALIDATION_ERROR`, the message lists every signal's error); 400: the envelope itself \
        is bad (not a JSON object, `signals` missing, not an array, empty or over 50 items, \
        `workspaceId` not a UUID, or a NUL character anywhere). A signal whose `dedup_key` was \
        last seen within its `collapse_window_minutes` collapses into that signal (count and \
        last-seen grow) and answers its id; signals of one key in one request collapse \
        together. `related_decisions` must be decisions of the caller: an unknown or foreign \
        id is that signal's error (`not found`).",
    request_body = ProducerSignalBatch,
    responses(
        (status = 201, description = "Every signal accepted", body = ProducerSignalsIngested),
        (status = 207, description = "Some signals accepted; `errors` names the others", body = ProducerSignalsIngested),
        (status = 400, description = "The envelope is bad (the message names the field)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "`workspaceId` is not a workspace of the caller", body = MemoryError),
        (status = 422, description = "No signal accepted; the message lists each one's error", body = MemoryError),
    )
)]
pub async fn ingest_producer_signals(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<BatchEnvelope>,
) -> Result<HttpResponse, ApiError> {
    let BatchEnvelope {
        workspace_id,
        signals: items,
    } = body.into_inner();
    let answer = ops::ingest_producer_signals(&state.pool, &caller, workspace_id, items).await?;
    Ok(if answer.errors.is_empty() {
        HttpResponse::Created().json(answer)
    } else {
        HttpResponse::build(actix_web::http::StatusCode::MULTI_STATUS).json(answer)
    })
}
