//! The gate in front of every `/api/v1` route: authenticate (401), rate-limit (429), hand the
//! [`Caller`] to the extractors, and put the rate-limit headers on whatever the route answers.

use std::sync::Arc;

use actix_web::HttpMessage as _;
use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use actix_web::middleware::Next;
use http_kit::{ApiError, RateLimitInfo};
use rate_limit::{Decision, Quota, RateLimiter};

use crate::Caller;
use crate::cache::Authenticate;

pub const LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
pub const REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
pub const RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");

/// Which limiter key and quotas apply to a request (per credential, per project and class…).
/// No quotas: the gate counts nothing, and the route counts its own work.
pub trait RateLimitPolicy: Send + Sync {
    fn quotas(&self, caller: &Caller, req: &ServiceRequest) -> (String, Vec<Quota>);
}

pub struct Gate {
    pub authenticator: Arc<dyn Authenticate>,
    pub limiter: RateLimiter,
    pub policy: Arc<dyn RateLimitPolicy>,
    /// The `WWW-Authenticate` value of a 401 (e.g. one naming the RFC 9728 resource metadata).
    pub challenge: Challenge,
}

/// Computes a 401's `WWW-Authenticate` value from the request.
pub type Challenge = Arc<dyn Fn(&ServiceRequest) -> String + Send + Sync>;

/// `WWW-Authenticate: Bearer`.
pub fn plain_challenge() -> Challenge {
    Arc::new(|_| "Bearer".to_owned())
}

/// Use as `from_fn(move |req, next| gate(gate.clone(), req, next))` on the API scope.
pub async fn gate(
    gate: Arc<Gate>,
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let authorization = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let (caller, synced) = match gate.authenticator.authenticate(authorization).await {
        Ok(authenticated) => authenticated,
        Err(err) => {
            let challenge = HeaderValue::from_str(&(gate.challenge)(&req))
                .unwrap_or_else(|_| HeaderValue::from_static("Bearer"));
            let mut res = req.error_response(ApiError::from(err));
            res.headers_mut()
                .insert(header::WWW_AUTHENTICATE, challenge);
            return Ok(res.map_into_right_body());
        }
    };

    if !caller.may_use_on(req.path()) {
        // RFC 6750 §3.1: a token presented to a resource it was not issued for is invalid.
        let challenge = (gate.challenge)(&req);
        let challenge = match challenge.as_str() {
            "Bearer" => "Bearer error=\"invalid_token\"".to_owned(),
            _ => format!("{challenge}, error=\"invalid_token\""),
        };
        let mut res = req.error_response(ApiError::unauthorized(format!(
            "this token was issued for another resource ({}); get one for this resource",
            caller.audience.as_deref().unwrap_or_default()
        )));
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            res.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
        return Ok(res.map_into_right_body());
    }

    let (key, quotas) = gate.policy.quotas(&caller, &req);
    let decision = if quotas.is_empty() {
        None
    } else {
        count(&gate.limiter, &key, &quotas).await
    };
    if let Some(decision) = decision.as_ref().filter(|d| !d.allowed) {
        let mut res = req.error_response(rate_limited(decision));
        put_headers(res.headers_mut(), decision);
        return Ok(res.map_into_right_body());
    }

    req.extensions_mut().insert(caller);
    if let Some(synced) = synced {
        req.extensions_mut().insert(synced);
    }
    let mut res = next.call(req).await?;
    if let Some(decision) = &decision {
        put_headers(res.headers_mut(), decision);
    }
    Ok(res.map_into_left_body())
}

/// The limiter's decision. A Redis outage does not reach here (the limiter answers from its
/// in-process fallback with the replica's share); `None` only for a quota the limiter
/// refuses as invalid, a bug that is logged.
pub async fn count(limiter: &RateLimiter, key: &str, quotas: &[Quota]) -> Option<Decision> {
    match limiter.check(key, quotas).await {
        Ok(decision) => Some(decision),
        Err(err) => {
            tracing::error!(error = %err, "rate limiter refused the quotas; request not counted");
            None
        }
    }
}

/// The answer to a request over its quota.
pub fn rate_limited(decision: &Decision) -> ApiError {
    ApiError::rate_limited(RateLimitInfo {
        limit: match decision.limit {
            rate_limit::Limit::Count(n) => Some(n),
            rate_limit::Limit::Unlimited => None,
        },
        reset_at: decision.reset_at,
        retry_after: decision.retry_after.unwrap_or(1).max(1),
    })
}

pub fn put_headers(headers: &mut HeaderMap, decision: &Decision) {
    let pairs = [
        (LIMIT, decision.limit.to_string()),
        (REMAINING, decision.remaining.to_string()),
        (RESET, decision.reset_at.to_string()),
    ];
    for (name, value) in pairs {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    }
}
