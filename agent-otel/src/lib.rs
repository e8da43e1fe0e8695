//! Optional OpenTelemetry export for the tracing spans of `agent-core` (`agent.run` →
//! `agent.turn` → `agent.tool`, with the GenAI semantic-convention attributes; see
//! `agent_core::telemetry`).
//!
//! A binary makes one call at the start of `main` and keeps the guard alive:
//!
//! ```no_run
//! let _otel = agent_otel::init("my-agent").unwrap_or_else(|err| {
//!     eprintln!("warning: tracing export disabled: {err}");
//!     None
//! });
//! // … build the runtime, run the agent; dropping `_otel` at the end of `main` flushes
//! // the spans.
//! ```
//!
//! With `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) unset,
//! [`init`] does nothing and returns `Ok(None)`, so the call costs nothing for users who do
//! not trace. When it is set, spans are exported with OTLP over HTTP/protobuf (TLS through
//! rustls for `https` endpoints) by a batch processor on its own thread; the standard
//! variables apply (`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT`,
//! `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`). A W3C `TRACEPARENT` (and `TRACESTATE`)
//! in the environment, as CI systems and parent processes set it, becomes the parent of
//! every span that has no parent of its own, so the agent's spans join the caller's trace.
//!
//! Only spans at level INFO and above are exported (the agent's spans are INFO; the HTTP
//! stack's own debug spans stay out). A binary with its own subscriber (a `fmt` layer for
//! logs, say) adds [`layer`] to it instead of calling [`init`].

#![warn(missing_docs)]

mod http;

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanBuilder, TraceContextExt, Tracer, TracerProvider as _};
use opentelemetry::Context;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use tracing::Subscriber;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// The variable that turns export on.
pub const ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// The traces-only endpoint variable, which also turns export on.
pub const TRACES_ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
/// The W3C trace-context variable whose span becomes the parent.
pub const TRACEPARENT_ENV: &str = "TRACEPARENT";
/// Its companion vendor state.
pub const TRACESTATE_ENV: &str = "TRACESTATE";

/// Why export could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum OtelError {
    /// The OTLP exporter could not be built (a malformed endpoint or header variable).
    #[error("building the OTLP exporter: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    /// Another global `tracing` subscriber is already installed; use [`layer`] with it.
    #[error("a global tracing subscriber is already set; add agent_otel::layer() to it instead")]
    SubscriberAlreadySet,
}

/// Keeps export running; dropping it flushes the spans still buffered and stops the
/// exporter.
#[derive(Debug)]
pub struct OtelGuard {
    provider: SdkTracerProvider,
}

impl OtelGuard {
    /// Exports every finished span now (blocks until the exporter answered or timed out).
    pub fn flush(&self) {
        if let Err(err) = self.provider.force_flush() {
            tracing::warn!(error = %err, "flushing spans failed");
        }
    }
}

impl Drop for OtelGuard {
    fn drop(&mut self) {
        if let Err(err) = self.provider.shutdown() {
            // stdout is for protocol lines only.
            eprintln!("warning: exporting the last spans failed: {err}");
        }
    }
}

/// True when the environment asks for export.
pub fn enabled() -> bool {
    [ENDPOINT_ENV, TRACES_ENDPOINT_ENV]
        .iter()
        .any(|name| std::env::var(name).is_ok_and(|v| !v.trim().is_empty()))
}

/// Installs a global `tracing` subscriber exporting spans over OTLP when the environment
/// asks for it (see the [crate docs](crate)); `Ok(None)` when it does not. `service_name`
/// is used when `OTEL_SERVICE_NAME` is unset.
pub fn init(service_name: &str) -> Result<Option<OtelGuard>, OtelError> {
    let Some((layer, guard)) = layer(service_name)? else {
        return Ok(None);
    };
    let subscriber = tracing_subscriber::registry().with(layer);
    tracing::subscriber::set_global_default(subscriber)
        .map_err(|_| OtelError::SubscriberAlreadySet)?;
    Ok(Some(guard))
}

/// A layer for any subscriber `S`.
pub type BoxedLayer<S> = Box<dyn Layer<S> + Send + Sync>;

/// The exporting layer (filtered to INFO and above) and its guard, for a host that builds
/// its own subscriber; `Ok(None)` when the environment does not ask for export.
pub fn layer<S>(service_name: &str) -> Result<Option<(BoxedLayer<S>, OtelGuard)>, OtelError>
where
    S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
{
    if !enabled() {
        return Ok(None);
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_http_client(http::BlockingHttp::from_env())
        .build()?;
    let mut resource = Resource::builder();
    if std::env::var("OTEL_SERVICE_NAME").is_err() {
        resource = resource.with_service_name(service_name.to_string());
    }
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let tracer = EnvParentTracer {
        inner: provider.tracer("agent-sdk"),
        parent: env_parent(),
    };
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(LevelFilter::INFO);
    Ok(Some((Box::new(layer), OtelGuard { provider })))
}

/// The context carried by `TRACEPARENT`/`TRACESTATE`, if they hold a valid one.
pub fn env_parent() -> Context {
    let mut carrier = HashMap::new();
    for (var, key) in [
        (TRACEPARENT_ENV, "traceparent"),
        (TRACESTATE_ENV, "tracestate"),
    ] {
        if let Ok(value) = std::env::var(var) {
            carrier.insert(key.to_string(), value.trim().to_string());
        }
    }
    TraceContextPropagator::new().extract(&carrier)
}

/// The SDK tracer, with the environment's trace context as the parent of spans that have
/// none of their own.
#[derive(Debug)]
struct EnvParentTracer {
    inner: SdkTracer,
    parent: Context,
}

impl Tracer for EnvParentTracer {
    type Span = <SdkTracer as Tracer>::Span;

    fn build_with_context(&self, builder: SpanBuilder, parent_cx: &Context) -> Self::Span {
        let parent = match parent_cx.has_active_span() {
            true => parent_cx,
            false => &self.parent,
        };
        self.inner.build_with_context(builder, parent)
    }
}
