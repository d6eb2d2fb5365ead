//! Prometheus metrics of one binary, served at `/metrics` in the text format.

use actix_web::{HttpResponse, web};
use prometheus::{Encoder as _, HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};

#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    pub http_requests: IntCounterVec,
    pub http_duration: HistogramVec,
}

impl Metrics {
    pub fn new(service: &str) -> Self {
        let registry = Registry::new_custom(
            None,
            Some(
                [("service".to_owned(), service.to_owned())]
                    .into_iter()
                    .collect(),
            ),
        )
        .expect("static registry labels are valid");
        let http_requests = IntCounterVec::new(
            Opts::new("http_requests_total", "HTTP requests answered"),
            &["method", "route", "status"],
        )
        .expect("static metric definition");
        let http_duration = HistogramVec::new(
            HistogramOpts::new("http_request_duration_seconds", "HTTP request latency").buckets(
                vec![
                    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                ],
            ),
            &["method", "route"],
        )
        .expect("static metric definition");
        registry
            .register(Box::new(http_requests.clone()))
            .expect("registered once");
        registry
            .register(Box::new(http_duration.clone()))
            .expect("registered once");
        Self {
            registry,
            http_requests,
            http_duration,
        }
    }

    /// Registers another collector (queue counters and the like) with this registry.
    pub fn register(&self, collector: Box<dyn prometheus::core::Collector>) {
        if let Err(err) = self.registry.register(collector) {
            tracing::warn!(error = %err, "metric not registered");
        }
    }

    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        let encoder = prometheus::TextEncoder::new();
        if let Err(err) = encoder.encode(&self.registry.gather(), &mut buf) {
            tracing::error!(error = %err, "metrics encoding failed");
        }
        String::from_utf8(buf).unwrap_or_default()
    }
}

/// Registers `GET /metrics` (no credential: scraped from inside the cluster).
pub fn configure(cfg: &mut web::ServiceConfig, metrics: Metrics) {
    cfg.app_data(web::Data::new(metrics))
        .service(web::resource("/metrics").route(web::get().to(serve)));
}

/// Prometheus metrics in the text exposition format.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "operations",
    responses((status = 200, description = "Metrics", content_type = "text/plain"))
)]
pub async fn serve(metrics: web::Data<Metrics>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(metrics.render())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_render_with_the_service_label() {
        let metrics = Metrics::new("unit");
        metrics
            .http_requests
            .with_label_values(&["GET", "/x", "200"])
            .inc();
        metrics
            .http_duration
            .with_label_values(&["GET", "/x"])
            .observe(0.002);
        let text = metrics.render();
        assert!(
            text.contains(
                "http_requests_total{method=\"GET\",route=\"/x\",status=\"200\",service=\"unit\"} 1"
            ),
            "{text}"
        );
        assert!(text.contains("http_request_duration_seconds_bucket"));
    }
}
