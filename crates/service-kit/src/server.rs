//! The standard HTTP stack of both APIs, so every route gets the same request id, metrics,
//! error envelope, body limits, authentication and rate limiting.

use std::sync::Arc;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::middleware::from_fn;
use actix_web::{App, web};
use auth::Gate;
use http_kit::health::{self, Readiness};
use http_kit::{Flavor, envelope_middleware};
use telemetry::Metrics;

/// What [`api_app`] assembles an application from.
#[derive(Clone)]
pub struct ApiParts {
    pub flavor: Flavor,
    pub metrics: Metrics,
    pub readiness: Readiness,
    pub gate: Arc<Gate>,
}

/// An application with: `/healthz`, `/readyz`, `/metrics`; `public` routes (no credential);
/// and `api` routes under `/api/v1`, behind the gate.
pub fn api_app(
    parts: ApiParts,
    public: impl FnOnce(&mut web::ServiceConfig),
    api: impl FnOnce(&mut web::ServiceConfig),
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let ApiParts {
        flavor,
        metrics,
        readiness,
        gate,
    } = parts;
    let metrics_for_route = metrics.clone();
    App::new()
        .app_data(http_kit::json_config(http_kit::MAX_JSON_BODY))
        .app_data(http_kit::payload_config(http_kit::MAX_JSON_BODY))
        .app_data(http_kit::query_config())
        .app_data(http_kit::path_config())
        .configure(move |cfg| health::configure(cfg, readiness))
        .configure(move |cfg| telemetry::metrics::configure(cfg, metrics_for_route))
        .configure(public)
        .service(
            web::scope("/api/v1")
                .wrap(from_fn(move |req, next| {
                    auth::middleware::gate(Arc::clone(&gate), req, next)
                }))
                .configure(api),
        )
        .wrap(from_fn(move |req, next| envelope_middleware(flavor, req, next)))
        .wrap(from_fn(move |req, next| {
            telemetry::http::request_middleware(metrics.clone(), req, next)
        }))
}
