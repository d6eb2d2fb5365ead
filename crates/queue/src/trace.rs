//! W3C trace context in AMQP headers, through whatever propagator is installed globally.

use lapin::types::{AMQPValue, FieldTable};
use opentelemetry::propagation::{Extractor, Injector};
use opentelemetry::trace::TraceContextExt as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

struct HeaderInjector<'a>(&'a mut FieldTable);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0
            .insert(key.to_owned().into(), AMQPValue::LongString(value.into()));
    }
}

struct HeaderExtractor<'a>(Option<&'a FieldTable>);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match self.0?.inner().get(key)? {
            AMQPValue::LongString(s) => std::str::from_utf8(s.as_bytes()).ok(),
            AMQPValue::ShortString(s) => Some(s.as_str()),
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        self.0
            .map(|h| h.inner().keys().map(|k| k.as_str()).collect())
            .unwrap_or_default()
    }
}

/// The context to propagate: the current `tracing` span's when it belongs to a trace (the
/// services bridge `tracing` to OpenTelemetry), else OpenTelemetry's own current context.
fn current_context() -> opentelemetry::Context {
    let from_span = tracing::Span::current().context();
    if from_span.span().span_context().is_valid() {
        from_span
    } else {
        opentelemetry::Context::current()
    }
}

/// Writes the current trace context into `headers`.
pub(crate) fn inject_current(headers: &mut FieldTable) {
    let cx = current_context();
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&cx, &mut HeaderInjector(headers));
    });
}

/// Reads a remote parent context from message headers (empty when there is none).
pub(crate) fn extract(headers: Option<&FieldTable>) -> opentelemetry::Context {
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.extract(&HeaderExtractor(headers))
    })
}
