//! The exporter's HTTP client: reqwest's blocking client behind opentelemetry-http's
//! [`HttpClient`] trait.
//!
//! The batch processor exports from its own thread, outside any tokio runtime, so the client
//! is the blocking one (which runs its own small runtime thread). It is built on the first
//! export, on that thread; TLS is rustls with the *ring* provider and the webpki roots (the
//! system's certificate store is not read).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use opentelemetry_http::{HttpClient, HttpError};
use opentelemetry_otlp::{
    OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_EXPORTER_OTLP_TIMEOUT_DEFAULT,
    OTEL_EXPORTER_OTLP_TRACES_TIMEOUT,
};

/// The client given to the OTLP exporter.
#[derive(Debug)]
pub(crate) struct BlockingHttp {
    timeout: Duration,
    client: OnceLock<Result<reqwest::blocking::Client, String>>,
}

impl BlockingHttp {
    /// A client whose requests time out after the environment's OTLP timeout; nothing is
    /// built until the first request.
    pub(crate) fn from_env() -> Self {
        Self {
            timeout: timeout_from_env(),
            client: OnceLock::new(),
        }
    }

    fn client(&self) -> Result<&reqwest::blocking::Client, HttpError> {
        let built = self.client.get_or_init(|| {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            };
            let tls = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| format!("TLS setup failed: {e}"))?
                .with_root_certificates(roots)
                .with_no_client_auth();
            reqwest::blocking::Client::builder()
                .tls_backend_preconfigured(tls)
                .timeout(self.timeout)
                .build()
                .map_err(|e| format!("HTTP client setup failed: {e}"))
        });
        built.as_ref().map_err(|e| e.clone().into())
    }
}

#[async_trait::async_trait]
impl HttpClient for BlockingHttp {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client()?;
        let mut response = client.execute(request.try_into()?)?.error_for_status()?;
        let headers = std::mem::take(response.headers_mut());
        let mut answer = Response::builder()
            .status(response.status())
            .body(response.bytes()?)?;
        *answer.headers_mut() = headers;
        Ok(answer)
    }
}

/// `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds),
/// else the specification's 10 s, as opentelemetry-otlp reads them for its own clients.
fn timeout_from_env() -> Duration {
    [
        OTEL_EXPORTER_OTLP_TRACES_TIMEOUT,
        OTEL_EXPORTER_OTLP_TIMEOUT,
    ]
    .iter()
    .find_map(|name| std::env::var(name).ok()?.trim().parse().ok())
    .map(Duration::from_millis)
    .unwrap_or(OTEL_EXPORTER_OTLP_TIMEOUT_DEFAULT)
}
