//! Per-request telemetry: a request id (taken from `X-Request-Id` when the gateway set a sane
//! one, else a new UUID v7) echoed in the response, a span that continues the caller's W3C
//! trace, one log line per request and the HTTP metrics.

use std::borrow::Cow;
use std::time::Instant;

use actix_web::HttpMessage as _;
use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use opentelemetry::propagation::Extractor;
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::Metrics;

pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The id of the current request, for handlers and error logs.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

struct HeaderExtractor<'a>(&'a actix_web::http::header::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

fn request_id(req: &ServiceRequest) -> String {
    req.headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            !v.is_empty()
                && v.len() <= 128
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        })
        .map_or_else(|| uuid::Uuid::now_v7().to_string(), str::to_owned)
}

/// What replaces a path segment that holds an email address.
const REDACTED: &str = "{redacted}";

/// The request path as logs and traces record it: a segment holding an email address (an
/// `@`, also percent-encoded) is replaced by `{redacted}`, so that addresses in paths
/// (`DELETE /suppressions/{email}`) never reach them. The query string is not recorded.
pub fn loggable_path(path: &str) -> Cow<'_, str> {
    let holds_address =
        |segment: &str| segment.contains('@') || segment.to_ascii_lowercase().contains("%40");
    if !path.split('/').any(holds_address) {
        return Cow::Borrowed(path);
    }
    let segments: Vec<&str> = path
        .split('/')
        .map(|segment| {
            if holds_address(segment) {
                REDACTED
            } else {
                segment
            }
        })
        .collect();
    Cow::Owned(segments.join("/"))
}

/// The outermost middleware of every HTTP app.
pub async fn request_middleware(
    metrics: Metrics,
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    let id = request_id(&req);
    req.extensions_mut().insert(RequestId(id.clone()));
    let method = req.method().to_string();
    let span = tracing::info_span!(
        "http",
        otel.kind = "server",
        request_id = %id,
        method = %method,
        path = %loggable_path(req.path()),
        route = tracing::field::Empty,
        status = tracing::field::Empty,
    );
    let parent = opentelemetry::global::get_text_map_propagator(|p| {
        p.extract(&HeaderExtractor(req.headers()))
    });
    let _ = span.set_parent(parent);

    let result = next.call(req).instrument(span.clone()).await;
    let mut res = match result {
        Ok(res) => res,
        Err(err) => return Err(err),
    };
    let status = res.status();
    let route = res
        .request()
        .match_pattern()
        .unwrap_or_else(|| "unmatched".to_owned());
    let elapsed = started.elapsed();
    metrics
        .http_requests
        .with_label_values(&[method.as_str(), route.as_str(), status.as_str()])
        .inc();
    metrics
        .http_duration
        .with_label_values(&[method.as_str(), route.as_str()])
        .observe(elapsed.as_secs_f64());
    span.record("route", route.as_str());
    span.record("status", status.as_u16());
    span.in_scope(|| {
        tracing::info!(
            route = %route,
            latency_ms = elapsed.as_secs_f64() * 1000.0,
            "request"
        );
    });
    if let Ok(value) = HeaderValue::from_str(&id) {
        res.headers_mut().insert(REQUEST_ID, value);
    }
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::loggable_path;

    #[test]
    fn addresses_in_paths_are_redacted() {
        assert_eq!(
            loggable_path("/api/v1/suppressions/ada@example.com"),
            "/api/v1/suppressions/{redacted}"
        );
        assert_eq!(
            loggable_path("/api/v1/suppressions/ada%40example.com/x"),
            "/api/v1/suppressions/{redacted}/x"
        );
        assert_eq!(
            loggable_path("/api/v1/contacts/0193a5f0-0000-7000-8000-000000000001"),
            "/api/v1/contacts/0193a5f0-0000-7000-8000-000000000001"
        );
    }
}
