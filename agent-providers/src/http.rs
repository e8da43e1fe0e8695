//! The HTTP layer shared by the three HTTP providers.
//!
//! - [`HttpConfig`]: connect and idle timeouts and the retry budget and backoff.
//! - [`ClientConfig`]: base URL, API key, model and [`HttpConfig`] of one provider.
//!
//! Retries use jittered exponential backoff and honour `retry-after` (seconds or an HTTP
//! date), `retry-after-ms` and `x-should-retry`; a server-requested wait longer than
//! [`HttpConfig::max_retry_after`] is not honoured (the computed backoff is used instead), so
//! no retry ever waits longer than that cap. They happen only before the first byte of a response stream: connect
//! errors, timeouts waiting for the response head, and HTTP 408, 409, 429 and 5xx. Once a
//! 2xx response has started, any failure ends the stream with an error.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_core::provider::{ProviderError, ProviderErrorKind};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

use crate::headers::CustomHeader;

/// Timeouts and retry policy of the HTTP providers. Every setter returns the updated
/// config, so it reads like a builder:
///
/// ```
/// use std::time::Duration;
/// use agent_providers::HttpConfig;
///
/// let http = HttpConfig::default()
///     .connect_timeout(Duration::from_secs(5))
///     .idle_timeout(Duration::from_secs(120))
///     .max_retries(2);
/// assert_eq!(http.max_attempts(), 3);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct HttpConfig {
    /// Limit for establishing a TCP (and TLS) connection. Default 10 s.
    pub connect_timeout: Duration,
    /// Longest silence allowed while waiting for the response head or between two chunks
    /// of a response body. Default 300 s.
    pub idle_timeout: Duration,
    /// Retries after the first attempt (the retry budget). Default 3.
    pub max_retries: u32,
    /// Backoff before the first retry; doubles with every retry. Default 500 ms.
    pub initial_backoff: Duration,
    /// Upper bound of the computed backoff. Default 8 s.
    pub max_backoff: Duration,
    /// Longest server-requested wait (`retry-after`, `retry-after-ms`) that is honoured as
    /// given; longer requests fall back to the computed backoff, as the official OpenAI and
    /// Anthropic SDKs do (a server asking for minutes is better answered by failing soon
    /// than by a process that looks hung). Default 60 s.
    pub max_retry_after: Duration,
    /// `User-Agent` header.
    pub user_agent: String,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
            user_agent: concat!("agent-sdk/", env!("CARGO_PKG_VERSION")).to_string(),
        }
    }
}

impl HttpConfig {
    /// Sets the connect timeout.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the idle timeout.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Sets how many retries may follow the first attempt.
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// Sets the first backoff and its upper bound.
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max.max(initial);
        self
    }

    /// Sets the longest server-requested wait honoured as given.
    pub fn max_retry_after(mut self, max: Duration) -> Self {
        self.max_retry_after = max;
        self
    }

    /// Sets the `User-Agent` header.
    pub fn user_agent(mut self, user_agent: impl Into<String>) -> Self {
        self.user_agent = user_agent.into();
        self
    }

    /// Attempts allowed in all (first attempt plus retries).
    pub fn max_attempts(&self) -> u32 {
        self.max_retries.saturating_add(1)
    }

    /// The jittered backoff before retry number `retry` (1-based): `initial * 2^(retry-1)`,
    /// capped at `max_backoff`, minus up to 25 % jitter.
    pub fn backoff_delay(&self, retry: u32) -> Duration {
        let exp = retry.saturating_sub(1).min(20);
        let base = self
            .initial_backoff
            .saturating_mul(1u32 << exp)
            .min(self.max_backoff);
        base.mul_f64(1.0 - 0.25 * fastrand::f64())
    }

    /// The wait before retry number `retry` after `err`: the server's `retry-after` when it
    /// is within [`HttpConfig::max_retry_after`], else [`HttpConfig::backoff_delay`].
    pub fn retry_delay(&self, retry: u32, err: &ProviderError) -> Duration {
        match err.retry_after {
            Some(wait) if wait <= self.max_retry_after => wait,
            _ => self.backoff_delay(retry),
        }
    }
}

/// Where and how one HTTP provider talks to its API.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Base URL, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// API key; `None` sends no credentials (local OpenAI-compatible servers). OpenAI sends
    /// it as `Authorization: Bearer`, Anthropic as `x-api-key`.
    pub api_key: Option<SecretString>,
    /// Anthropic only: a bearer token sent as `Authorization: Bearer` (what
    /// `ANTHROPIC_AUTH_TOKEN` holds: gateway keys, OAuth tokens). The OpenAI providers ignore
    /// it; their [`ClientConfig::api_key`] already is a bearer token.
    pub auth_token: Option<SecretString>,
    /// Model used when the request names none, and listed first by `models()`.
    pub model: String,
    /// Timeouts and retries.
    pub http: HttpConfig,
    /// Extra headers sent with every request, after (and so replacing) the provider's own.
    pub headers: Vec<CustomHeader>,
    /// OpenAI only: whether to send the session id as `prompt_cache_key` (Chat Completions
    /// and Responses). `None` decides by server: Responses always, Chat Completions only to
    /// OpenAI's own API and Azure, as compatible servers may reject the field.
    pub prompt_cache_key: Option<bool>,
    /// The HTTP client shared with other providers, if any ([`ClientConfig::shared_http`]).
    pub(crate) shared: Option<SharedHttp>,
}

impl ClientConfig {
    /// A config for `base_url` and `model`, without key and with default HTTP settings.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            auth_token: None,
            model: model.into(),
            http: HttpConfig::default(),
            headers: Vec::new(),
            prompt_cache_key: None,
            shared: None,
        }
    }

    /// Sends the requests through `http`, the client other providers share, so that they
    /// reuse its connections; its timeouts and retries replace [`ClientConfig::http`].
    pub fn shared_http(mut self, http: &SharedHttp) -> Self {
        self.http = http.config().clone();
        self.shared = Some(http.clone());
        self
    }

    /// Adds an extra header sent with every request.
    pub fn header(mut self, header: CustomHeader) -> Self {
        self.headers.push(header);
        self
    }

    /// Sends the session id as OpenAI's `prompt_cache_key` always (`true`) or never
    /// (`false`), instead of deciding by server.
    pub fn prompt_cache_key(mut self, send: bool) -> Self {
        self.prompt_cache_key = Some(send);
        self
    }

    /// Adds the extra headers to `headers` and their secret values to `secrets`.
    pub(crate) fn apply_headers(&self, headers: &mut HeaderMap, secrets: &mut Vec<SecretString>) {
        crate::headers::apply(&self.headers, headers, secrets);
    }

    /// Sets the API key.
    pub fn api_key(mut self, key: impl Into<SecretString>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Sets the bearer token (Anthropic's `Authorization: Bearer`).
    pub fn auth_token(mut self, token: impl Into<SecretString>) -> Self {
        self.auth_token = Some(token.into());
        self
    }

    /// Sets the HTTP settings.
    pub fn http(mut self, http: HttpConfig) -> Self {
        self.http = http;
        self
    }

    /// `base_url` joined with `path` (one slash between them).
    pub(crate) fn url(&self, path: &str) -> String {
        format!(
            "{}/{}",
            self.base_url.trim_end_matches('/'),
            path.trim_start_matches('/')
        )
    }
}

/// A reqwest client builder with the TLS of every provider: rustls with the *ring* provider,
/// the webpki roots (the system's certificate store is not read) and ALPN offering HTTP/2
/// then HTTP/1.1. It needs no process-wide crypto provider; without it a reqwest built with
/// `rustls-no-provider`, as here, cannot make a client at all.
///
/// ```
/// let client = agent_providers::http::client_builder()
///     .expect("TLS set up")
///     .build()
///     .expect("a client");
/// # let _ = client;
/// ```
pub fn client_builder() -> Result<reqwest::ClientBuilder, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(reqwest::Client::builder().tls_backend_preconfigured(tls))
}

/// One HTTP client (connection pool and TLS setup) that several providers share, built on
/// first use: providers made with it ([`ClientConfig::shared_http`],
/// [`build_provider_on`](crate::build_provider_on)) reuse each other's connections, so a
/// second provider for the same server (a new session, a model listing) connects and
/// handshakes no more. Cloning it shares the client. Its pooled connections belong to the
/// Tokio runtime that opened them: share it within one runtime.
///
/// ```
/// use agent_providers::{http::SharedHttp, ClientConfig, HttpConfig, OpenAiProvider};
///
/// let http = SharedHttp::new(HttpConfig::default());
/// let config = ClientConfig::new("http://127.0.0.1:8080/v1", "m").shared_http(&http);
/// let (one, two) = (OpenAiProvider::new(config.clone()), OpenAiProvider::new(config));
/// # let _ = (one, two);
/// ```
#[derive(Clone)]
pub struct SharedHttp(Arc<HttpClient>);

impl SharedHttp {
    /// A client with these timeouts and retries, not built yet.
    pub fn new(config: HttpConfig) -> Self {
        Self(Arc::new(HttpClient::new(config)))
    }

    /// The timeouts and retries of every provider using it.
    pub fn config(&self) -> &HttpConfig {
        &self.0.config
    }
}

impl std::fmt::Debug for SharedHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedHttp")
            .field("config", &self.0.config)
            .field("built", &self.0.client.get().is_some())
            .finish()
    }
}

/// The HTTP client of one provider; the underlying `reqwest` client (and its TLS setup) is
/// built on first use, so constructing a provider costs nothing.
pub(crate) struct HttpClient {
    pub(crate) config: HttpConfig,
    client: OnceLock<Result<reqwest::Client, String>>,
}

impl HttpClient {
    pub(crate) fn new(config: HttpConfig) -> Self {
        Self {
            config,
            client: OnceLock::new(),
        }
    }

    /// The client of a provider made with `config`: the shared one, else its own.
    pub(crate) fn of(config: &ClientConfig) -> Arc<Self> {
        match &config.shared {
            Some(shared) => shared.0.clone(),
            None => Arc::new(Self::new(config.http.clone())),
        }
    }

    pub(crate) fn client(&self) -> Result<reqwest::Client, ProviderError> {
        let built = self.client.get_or_init(|| {
            client_builder()
                .map_err(|e| format!("cannot set up TLS: {e}"))?
                .connect_timeout(self.config.connect_timeout)
                .user_agent(self.config.user_agent.clone())
                .tcp_nodelay(true)
                .build()
                .map_err(|e| format!("cannot build the HTTP client: {e}"))
        });
        built
            .clone()
            .map_err(|msg| ProviderError::new(ProviderErrorKind::Other, msg).retryable(false))
    }
}

/// One POST, ready to be sent (and re-sent on retry).
pub(crate) struct PreparedRequest {
    pub(crate) url: String,
    pub(crate) headers: HeaderMap,
    pub(crate) body: bytes::Bytes,
    /// The credentials sent, kept only to scrub them from error messages.
    pub(crate) secrets: Vec<SecretString>,
    /// A vendor's reading of a non-2xx answer, applied after [`status_error`] (Google's
    /// `status` names and `RetryInfo`, AWS's exception types).
    pub(crate) refine: Option<Refine>,
}

/// Refines the error [`status_error`] made of a non-2xx answer, given its headers and body.
pub(crate) type Refine = fn(ProviderError, &HeaderMap, &str) -> ProviderError;

impl PreparedRequest {
    /// A JSON POST to `url` with `headers` and the serialized `body`.
    pub(crate) fn json(
        url: String,
        mut headers: HeaderMap,
        body: &impl serde::Serialize,
        secrets: Vec<SecretString>,
    ) -> Result<Self, ProviderError> {
        let body = serde_json::to_vec(body).map_err(|e| {
            ProviderError::new(
                ProviderErrorKind::Other,
                format!("cannot encode the request: {e}"),
            )
            .retryable(false)
        })?;
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("text/event-stream, application/json"),
        );
        Ok(Self {
            url,
            headers,
            body: body.into(),
            secrets,
            refine: None,
        })
    }

    /// Sets the vendor's reading of error answers.
    pub(crate) fn refine(mut self, refine: Refine) -> Self {
        self.refine = Some(refine);
        self
    }

    /// Removes the credentials from `text`, should a server echo them.
    pub(crate) fn scrub(&self, text: String) -> String {
        self.secrets
            .iter()
            .fold(text, |text, secret| scrub(text, Some(secret)))
    }
}

pub(crate) fn scrub(text: String, secret: Option<&SecretString>) -> String {
    match secret {
        Some(secret) => {
            let key = secret.expose_secret();
            if key.len() >= 4 && text.contains(key) {
                text.replace(key, "[REDACTED]")
            } else {
                text
            }
        }
        None => text,
    }
}

/// A header holding a secret, marked sensitive so that it is never logged.
pub(crate) fn secret_header(
    name: &'static str,
    prefix: &str,
    secret: &SecretString,
) -> Result<(HeaderName, HeaderValue), ProviderError> {
    let mut value =
        HeaderValue::from_str(&format!("{prefix}{}", secret.expose_secret())).map_err(|_| {
            ProviderError::new(
                ProviderErrorKind::Auth,
                "the API key contains characters that cannot be sent in an HTTP header",
            )
            .retryable(false)
        })?;
    value.set_sensitive(true);
    Ok((HeaderName::from_static(name), value))
}

/// The error a failed `send` (no response head) becomes.
pub(crate) fn send_error(err: &reqwest::Error) -> ProviderError {
    let detail = error_chain(err);
    if err.is_timeout() {
        ProviderError::new(
            ProviderErrorKind::Timeout,
            format!("request timed out: {detail}"),
        )
    } else if err.is_connect() {
        ProviderError::new(
            ProviderErrorKind::Network,
            format!("cannot connect: {detail}"),
        )
    } else if err.is_builder() {
        ProviderError::new(
            ProviderErrorKind::Other,
            format!("invalid request: {detail}"),
        )
        .retryable(false)
    } else {
        ProviderError::new(
            ProviderErrorKind::Network,
            format!("request failed: {detail}"),
        )
    }
}

/// An error and its sources, joined with `: `.
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

/// The wait the server asked for: `retry-after-ms` (milliseconds, as OpenAI and Anthropic
/// send it), else `retry-after` as delay-seconds or as an HTTP-date (RFC 9110 §10.2.3, in
/// any of the three date formats recipients must accept). A date in the past asks for no
/// wait. Values that are negative, not numbers, or too large for a [`Duration`] are
/// ignored. How much of the wait is honoured is [`HttpConfig::retry_delay`]'s decision.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    retry_after_at(headers, std::time::SystemTime::now())
}

/// [`retry_after`] at the time `now`.
pub(crate) fn retry_after_at(headers: &HeaderMap, now: std::time::SystemTime) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let seconds = |secs: f64| {
        (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::try_from_secs_f64(secs).ok())
            .flatten()
    };
    if let Some(wait) = get("retry-after-ms")
        .and_then(|v| v.parse::<f64>().ok())
        .and_then(|ms| seconds(ms / 1000.0))
    {
        return Some(wait);
    }
    let value = get("retry-after")?;
    match value.parse::<f64>() {
        Ok(secs) => seconds(secs),
        Err(_) => {
            let at = httpdate::parse_http_date(value).ok()?;
            Some(at.duration_since(now).unwrap_or(Duration::ZERO))
        }
    }
}

/// The server's explicit retry advice from `x-should-retry`.
pub(crate) fn should_retry(headers: &HeaderMap) -> Option<bool> {
    match headers.get("x-should-retry")?.to_str().ok()?.trim() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// The error body shapes of the APIs and of the servers that imitate them.
#[derive(Debug, Default, Deserialize)]
struct ErrorEnvelope {
    #[serde(default)]
    error: Option<ErrorValue>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    detail: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ErrorValue {
    Object(ErrorObject),
    Text(String),
    Other(serde_json::Value),
}

/// `{"message": …, "type": …, "code": …}` as OpenAI, Anthropic, llama.cpp and LiteLLM send it.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ErrorObject {
    #[serde(default)]
    pub(crate) message: Option<String>,
    #[serde(default, rename = "type")]
    pub(crate) kind: Option<String>,
    #[serde(default)]
    pub(crate) code: Option<serde_json::Value>,
}

impl ErrorObject {
    pub(crate) fn code_str(&self) -> Option<String> {
        match self.code.as_ref()? {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    }
}

/// Message, type and code from an error body, if it is one of the known JSON shapes.
pub(crate) fn parse_error_body(body: &str) -> Option<ErrorObject> {
    let envelope: ErrorEnvelope = serde_json::from_str(body.trim()).ok()?;
    match envelope.error {
        Some(ErrorValue::Object(obj)) if obj.message.is_some() || obj.kind.is_some() => Some(obj),
        Some(ErrorValue::Text(text)) => Some(ErrorObject {
            message: Some(text),
            ..ErrorObject::default()
        }),
        Some(ErrorValue::Other(value)) => Some(ErrorObject {
            message: Some(value.to_string()),
            ..ErrorObject::default()
        }),
        _ => envelope
            .message
            .or_else(|| {
                envelope.detail.map(|d| match d {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                })
            })
            .map(|message| ErrorObject {
                message: Some(message),
                ..ErrorObject::default()
            }),
    }
}

/// Whether an error message, type or code says the prompt did not fit the context window,
/// in the forms the APIs and servers use:
///
/// - OpenAI (and vLLM, DeepSeek, Groq, OpenRouter, Mistral): code
///   `context_length_exceeded`, "This model's maximum context length is N tokens…", "Your
///   input exceeds the context window of this model", "Please reduce the length of the
///   messages or completion";
/// - Anthropic: "prompt is too long: N tokens > M maximum", "input length and `max_tokens`
///   exceed context limit", type `request_too_large` (413);
/// - llama.cpp server: type `exceed_context_size_error`, "request (N tokens) exceeds the
///   available context size (M tokens)", and the older "the request exceeds the available
///   context size" and "input is too large to process";
/// - LiteLLM: `ContextWindowExceededError` (also `context_window_exceeded`);
/// - Ollama: "the input length exceeds the context length"; Bedrock: "Input is too long";
///   Gemini: "The input token count (N) exceeds the maximum number of tokens allowed".
pub(crate) fn is_context_length(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    [
        "context_length_exceeded",
        "context length",
        "context window",
        "contextwindowexceeded",
        "context_window_exceeded",
        "maximum context",
        "context size",
        "exceed_context_size",
        "exceed context limit",
        "prompt is too long",
        "input is too long",
        "input is too large",
        "too many tokens",
        "exceeds the context",
        "exceeds the maximum number of tokens",
        "reduce the length of the messages",
        "request_too_large",
    ]
    .iter()
    .any(|needle| text.contains(needle))
}

/// The kind of an error reported inside a response (an SSE `error` event, a
/// `response.failed`, an error body): what its code or type names, except that a
/// context-length message wins over the generic request and stream kinds.
pub(crate) fn api_error_kind(
    code: Option<&str>,
    kind: Option<&str>,
    message: &str,
) -> ProviderErrorKind {
    let named = code
        .and_then(kind_from_code)
        .or_else(|| kind.and_then(kind_from_code));
    let context = is_context_length(message)
        || code.is_some_and(is_context_length)
        || kind.is_some_and(is_context_length);
    match named {
        Some(ProviderErrorKind::BadRequest | ProviderErrorKind::Other) | None if context => {
            ProviderErrorKind::ContextLength
        }
        Some(named) => named,
        None => ProviderErrorKind::Stream,
    }
}

/// The error kind an API error `type` or `code` names, if it names one.
pub(crate) fn kind_from_code(code: &str) -> Option<ProviderErrorKind> {
    Some(match code {
        "authentication_error" | "permission_error" | "invalid_api_key" => ProviderErrorKind::Auth,
        "not_found_error" | "model_not_found" => ProviderErrorKind::NotFound,
        "rate_limit_error" | "rate_limit_exceeded" | "insufficient_quota" => {
            ProviderErrorKind::RateLimited
        }
        "overloaded_error" | "overloaded" => ProviderErrorKind::Overloaded,
        "api_error" | "server_error" | "internal_error" => ProviderErrorKind::Server,
        "context_length_exceeded"
        | "request_too_large"
        | "exceed_context_size_error"
        | "context_window_exceeded" => ProviderErrorKind::ContextLength,
        "invalid_request_error" | "invalid_prompt" => ProviderErrorKind::BadRequest,
        _ => return None,
    })
}

/// The typed error for a non-2xx response.
pub(crate) fn status_error(status: u16, headers: &HeaderMap, body: &str) -> ProviderError {
    let parsed = parse_error_body(body);
    let api_message = parsed
        .as_ref()
        .and_then(|e| e.message.clone())
        .filter(|m| !m.trim().is_empty());
    let code = parsed.as_ref().and_then(|e| e.code_str());
    let api_type = parsed.as_ref().and_then(|e| e.kind.clone());
    let detail = match &api_message {
        Some(message) => message.clone(),
        None => {
            let trimmed = body.trim();
            if trimmed.is_empty() {
                "no error details in the response".to_string()
            } else {
                truncate(trimmed, 2000)
            }
        }
    };
    let context = is_context_length(&detail)
        || code.as_deref().is_some_and(is_context_length)
        || api_type.as_deref().is_some_and(is_context_length);
    let kind = match status {
        401 | 403 => ProviderErrorKind::Auth,
        404 => ProviderErrorKind::NotFound,
        413 => ProviderErrorKind::ContextLength,
        400 | 422 if context => ProviderErrorKind::ContextLength,
        // Older llama.cpp servers answer a prompt over the context size with a 500.
        500 if context => ProviderErrorKind::ContextLength,
        400 | 422 => ProviderErrorKind::BadRequest,
        408 => ProviderErrorKind::Timeout,
        429 => ProviderErrorKind::RateLimited,
        529 => ProviderErrorKind::Overloaded,
        500..=599
            if api_type.as_deref() == Some("overloaded_error")
                || detail.to_ascii_lowercase().contains("overloaded") =>
        {
            ProviderErrorKind::Overloaded
        }
        500..=599 => ProviderErrorKind::Server,
        _ => api_type
            .as_deref()
            .and_then(kind_from_code)
            .unwrap_or(ProviderErrorKind::Other),
    };
    let what = describe(kind);
    let quota = code.as_deref() == Some("insufficient_quota")
        || api_type.as_deref() == Some("insufficient_quota");
    let mut retryable = (matches!(status, 408 | 409 | 429) || status >= 500)
        && kind != ProviderErrorKind::ContextLength;
    if quota {
        retryable = false;
    }
    if let Some(advice) = should_retry(headers) {
        retryable = advice;
    }
    let mut err = ProviderError::new(kind, format!("{what} (HTTP {status}): {detail}"))
        .with_status(status)
        .retryable(retryable);
    err.retry_after = retry_after(headers);
    if !body.trim().is_empty() {
        err = err.with_raw(truncate(body, 8000));
    }
    err
}

/// What a non-2xx answer of `kind` means, as error messages open.
pub(crate) fn describe(kind: ProviderErrorKind) -> &'static str {
    match kind {
        ProviderErrorKind::Auth => "authentication failed",
        ProviderErrorKind::NotFound => "not found (unknown model or endpoint)",
        ProviderErrorKind::ContextLength => "the prompt is too long for the model",
        ProviderErrorKind::BadRequest => "the request was rejected",
        ProviderErrorKind::RateLimited => "rate limited",
        ProviderErrorKind::Overloaded => "the API is overloaded",
        ProviderErrorKind::Server => "server error",
        ProviderErrorKind::Timeout => "the server timed out",
        _ => "request failed",
    }
}

/// The first `max` bytes of `text` (on a char boundary), with an ellipsis when cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests;
