//! Logs, traces and metrics for every binary: structured logs carrying the request id,
//! OpenTelemetry traces exported over OTLP when an endpoint is configured, W3C trace context
//! propagation (the queue crate carries it in AMQP headers), and Prometheus metrics.

pub mod http;
pub mod metrics;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

pub use metrics::Metrics;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// One JSON object per line (production).
    #[default]
    Json,
    /// Human-readable (development).
    Pretty,
}

impl std::str::FromStr for LogFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "json" => Ok(Self::Json),
            "pretty" => Ok(Self::Pretty),
            other => Err(format!("unknown log format {other:?} (json or pretty)")),
        }
    }
}

/// Keeps the trace exporter alive; flushes pending spans when dropped.
pub struct TelemetryGuard {
    provider: Option<SdkTracerProvider>,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take()
            && let Err(err) = provider.shutdown()
        {
            tracing::warn!(error = %err, "trace exporter did not shut down cleanly");
        }
    }
}

/// Installs the global subscriber and propagator. `RUST_LOG` overrides `default_filter`.
/// Traces go to `otlp_endpoint` (an OTLP/HTTP base URL) when one is given.
pub fn init(
    service: &'static str,
    format: LogFormat,
    default_filter: &str,
    otlp_endpoint: Option<&str>,
) -> TelemetryGuard {
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));

    let provider = otlp_endpoint.and_then(|endpoint| match otlp_provider(service, endpoint) {
        Ok(p) => Some(p),
        Err(err) => {
            // The subscriber is not installed yet; stderr is the only channel.
            eprintln!("OTLP exporter disabled: {err}");
            None
        }
    });
    let fmt_layer = match format {
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .boxed(),
        LogFormat::Pretty => tracing_subscriber::fmt::layer().boxed(),
    };
    // Spans go to the collector at INFO whatever the log filter says: quieting the logs
    // (`LOG_FILTER=warn`) must not switch tracing off. Hence a filter per layer.
    let otel_layer = provider.as_ref().map(|p| {
        tracing_opentelemetry::layer()
            .with_tracer(p.tracer(service))
            .with_filter(LevelFilter::INFO)
    });
    let installed = tracing_subscriber::registry()
        .with(fmt_layer.with_filter(filter))
        .with(otel_layer)
        .try_init();
    // A second init (tests) keeps the first subscriber.
    drop(installed);
    TelemetryGuard { provider }
}

fn otlp_provider(
    service: &'static str,
    endpoint: &str,
) -> Result<SdkTracerProvider, opentelemetry_otlp::ExporterBuildError> {
    use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
    // The exporter's HTTP client needs the workspace's TLS provider, even for http://.
    tls_kit::install();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(format!("{}/v1/traces", endpoint.trim_end_matches('/')))
        .with_headers(Default::default())
        .build()?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name(service)
                .build(),
        )
        .build())
}
