//! Google's error format (`google.rpc.Status` as JSON), shared by the Gemini API and Vertex
//! AI: `{"error": {"code": 429, "message": "…", "status": "RESOURCE_EXHAUSTED", "details":
//! [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "13s"}, …]}}`.

use std::time::Duration;

use agent_core::provider::{ProviderError, ProviderErrorKind};
use serde::Deserialize;
use serde_json::Value;

use reqwest::header::HeaderMap;

use crate::http::{describe, is_context_length};

/// `error` of an error body or a stream chunk.
#[derive(Debug, Default, Clone, Deserialize)]
pub(crate) struct GoogleError {
    #[serde(default)]
    pub(crate) message: Option<String>,
    #[serde(default)]
    pub(crate) status: Option<String>,
    #[serde(default)]
    pub(crate) details: Vec<Value>,
}

#[derive(Deserialize)]
struct Envelope {
    error: GoogleError,
}

impl GoogleError {
    /// The error of a body: `{"error": …}`, or an array holding one (a
    /// `streamGenerateContent` without `alt=sse`).
    pub(crate) fn parse(body: &str) -> Option<Self> {
        match serde_json::from_str::<Value>(body.trim()).ok()? {
            Value::Array(items) => items
                .into_iter()
                .find_map(|v| serde_json::from_value::<Envelope>(v).ok())
                .map(|e| e.error),
            value => serde_json::from_value::<Envelope>(value)
                .ok()
                .map(|e| e.error),
        }
    }

    /// The `reason` of an `ErrorInfo` detail (`API_KEY_INVALID`, …).
    fn reason(&self) -> Option<&str> {
        self.details
            .iter()
            .find_map(|d| d.get("reason").and_then(Value::as_str))
    }

    /// The wait of a `RetryInfo` detail (`"13s"`, `"0.5s"`).
    pub(crate) fn retry_delay(&self) -> Option<Duration> {
        let delay = self
            .details
            .iter()
            .find_map(|d| d.get("retryDelay").and_then(Value::as_str))?;
        let secs: f64 = delay.trim().strip_suffix('s')?.parse().ok()?;
        (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::try_from_secs_f64(secs).ok())
            .flatten()
    }

    /// The kind the status name (and reason) says, if it says one.
    fn kind(&self) -> Option<ProviderErrorKind> {
        if matches!(
            self.reason(),
            Some(
                "API_KEY_INVALID"
                    | "API_KEY_SERVICE_BLOCKED"
                    | "ACCESS_TOKEN_EXPIRED"
                    | "CREDENTIALS_MISSING"
            )
        ) {
            return Some(ProviderErrorKind::Auth);
        }
        let message = self.message.as_deref().unwrap_or("");
        Some(match self.status.as_deref()? {
            "UNAUTHENTICATED" | "PERMISSION_DENIED" => ProviderErrorKind::Auth,
            "NOT_FOUND" => ProviderErrorKind::NotFound,
            "RESOURCE_EXHAUSTED" => ProviderErrorKind::RateLimited,
            "UNAVAILABLE" => ProviderErrorKind::Overloaded,
            "DEADLINE_EXCEEDED" => ProviderErrorKind::Timeout,
            "INTERNAL" | "UNKNOWN" | "ABORTED" => ProviderErrorKind::Server,
            "INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "OUT_OF_RANGE"
                if is_context_length(message) =>
            {
                ProviderErrorKind::ContextLength
            }
            "INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "OUT_OF_RANGE" => {
                ProviderErrorKind::BadRequest
            }
            _ => return None,
        })
    }
}

/// Google's reading of a non-2xx answer: the status name decides the kind (a 400 with an
/// invalid key is an auth failure), and a `RetryInfo` wait stands in for `retry-after`.
pub(crate) fn refine(mut err: ProviderError, _headers: &HeaderMap, body: &str) -> ProviderError {
    let Some(google) = GoogleError::parse(body) else {
        return err;
    };
    if let Some(kind) = google.kind().filter(|kind| *kind != err.kind) {
        err.kind = kind;
        err.retryable = ProviderError::new(kind, "").retryable;
    }
    if let (Some(status), Some(message)) = (err.status, google.message.as_deref()) {
        err.message = format!("{} (HTTP {status}): {message}", describe(err.kind));
    }
    if err.retry_after.is_none() {
        err.retry_after = google.retry_delay();
    }
    err
}

/// The error a chunk's `error` (an error inside a 200 stream) becomes.
pub(crate) fn stream_error(google: &GoogleError) -> ProviderError {
    let message = google
        .message
        .clone()
        .unwrap_or_else(|| "unknown error".into());
    let kind = google.kind().unwrap_or(ProviderErrorKind::Stream);
    let mut err = ProviderError::new(kind, format!("the API reported an error: {message}"));
    err.retry_after = google.retry_delay();
    err
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_names_and_retry_info_refine_the_error() {
        let body = r#"{"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}}"#;
        let base = crate::http::status_error(400, &Default::default(), body);
        assert_eq!(base.kind, ProviderErrorKind::BadRequest);
        let err = refine(base, &HeaderMap::new(), body);
        assert_eq!(err.kind, ProviderErrorKind::Auth);
        assert!(!err.retryable);
        assert_eq!(
            err.message,
            "authentication failed (HTTP 400): API key not valid. Please pass a valid API key."
        );

        let body = r#"[{"error": {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"}]}}]"#;
        let err = refine(
            crate::http::status_error(429, &Default::default(), body),
            &HeaderMap::new(),
            body,
        );
        assert_eq!(err.kind, ProviderErrorKind::RateLimited);
        assert_eq!(err.retry_after, Some(Duration::from_millis(1500)));
        assert!(err.retryable);
    }
}
