//! The [`Provider`] trait: one streaming model call, plus the model catalogue.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::Message;
use crate::usage::Usage;

/// How hard the model should think before answering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningLevel {
    /// No reasoning.
    Off,
    /// The smallest budget the model supports.
    Minimum,
    /// A small budget.
    Low,
    /// The default budget.
    #[default]
    Medium,
    /// A large budget.
    High,
    /// A very large budget.
    Xhigh,
    /// The largest budget the model supports (clamped where unsupported).
    Max,
}

impl ReasoningLevel {
    /// Every level, from none to the most.
    pub const ALL: [ReasoningLevel; 7] = [
        Self::Off,
        Self::Minimum,
        Self::Low,
        Self::Medium,
        Self::High,
        Self::Xhigh,
        Self::Max,
    ];

    /// The canonical lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Minimum => "minimum",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Xhigh => "xhigh",
            Self::Max => "max",
        }
    }
}

impl fmt::Display for ReasoningLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown reasoning level name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid reasoning level {0:?}: expected off, minimum, low, medium, high, xhigh or max")]
pub struct ParseReasoningError(pub String);

impl FromStr for ReasoningLevel {
    type Err = ParseReasoningError;

    /// Parses a level; `none`, `minimal`, `maximum` and `x-high` are accepted as aliases.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "off" | "none" => Self::Off,
            "minimum" | "minimal" | "min" => Self::Minimum,
            "low" => Self::Low,
            "medium" | "med" => Self::Medium,
            "high" => Self::High,
            "xhigh" | "x-high" | "extra-high" => Self::Xhigh,
            "max" | "maximum" => Self::Max,
            _ => return Err(ParseReasoningError(s.to_string())),
        })
    }
}

/// A tool as offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Tool name.
    pub name: String,
    /// What the tool does, written for the model.
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: Value,
}

/// Everything one model call needs.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderRequest {
    /// API model id.
    pub model: String,
    /// System prompt, if any.
    pub system: Option<String>,
    /// The transcript so far.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// Requested reasoning effort.
    pub reasoning: ReasoningLevel,
    /// Output token limit, when the caller wants one; providers fall back to the catalogue.
    pub max_output_tokens: Option<u32>,
    /// When set, the answer must be JSON matching this schema; each provider asks for it
    /// the way its API supports (a JSON-schema response format, or a forced tool).
    pub output_schema: Option<OutputSchema>,
    /// The session the call belongs to, when the agent records one. Providers may use it
    /// as a prompt-cache routing key (OpenAI's `prompt_cache_key`), so that the calls of one
    /// session land where their prefix is cached; it is never shown to the model.
    pub session_id: Option<String>,
}

/// A JSON schema the model's final answer must match (structured output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputSchema {
    /// A short name for the schema (`[A-Za-z0-9_-]`, at most 64 characters), as the APIs
    /// require one.
    pub name: String,
    /// The JSON schema of the answer.
    pub schema: Value,
    /// Ask the provider to enforce the schema strictly where it can.
    pub strict: bool,
}

/// Why the model stopped generating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderStop {
    /// Natural end of the answer.
    EndTurn,
    /// The model wants tool calls run.
    ToolUse,
    /// The output token limit was hit.
    MaxTokens,
    /// The provider refused to continue (safety).
    Refusal,
}

/// One item of a provider's response stream.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderEvent {
    /// An HTTP attempt (1-based) is about to be sent.
    RequestStarted {
        /// This attempt's number.
        attempt: u32,
        /// Attempts allowed in all.
        max_attempts: u32,
    },
    /// The previous attempt failed before any content; the next starts after `delay`.
    RetryScheduled {
        /// The upcoming attempt's number.
        attempt: u32,
        /// Attempts allowed in all.
        max_attempts: u32,
        /// Wait before that attempt.
        delay: Duration,
    },
    /// The response stream opened; content follows.
    ResponseStarted,
    /// A chunk of answer text.
    TextDelta(String),
    /// A chunk of reasoning text.
    ReasoningDelta(String),
    /// The current reasoning block is complete; carries what is needed to send it back.
    ReasoningEnd {
        /// Signature of the block, when the API has one.
        signature: Option<String>,
        /// Provider-specific replay data.
        opaque: Option<Value>,
    },
    /// A tool call began streaming.
    ToolCallStart {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// A fragment of a tool call's JSON argument text.
    ToolCallDelta {
        /// Call id.
        id: String,
        /// Argument text fragment.
        delta: String,
    },
    /// A tool call's arguments are complete.
    ToolCallEnd {
        /// Call id.
        id: String,
    },
    /// Token usage of this call (sent once, at the end).
    Usage(Usage),
    /// Why the model stopped.
    Stop(ProviderStop),
}

/// What went wrong talking to a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderErrorKind {
    /// 401/403: missing or bad credentials.
    Auth,
    /// 404: unknown model or endpoint.
    NotFound,
    /// 400: the request was rejected.
    BadRequest,
    /// 413 or a context-length message: the prompt is too long.
    ContextLength,
    /// 429.
    RateLimited,
    /// 529 or an `overloaded` error.
    Overloaded,
    /// Other 5xx.
    Server,
    /// Connecting or reading failed.
    Network,
    /// The stream went silent longer than the idle timeout, or connecting timed out.
    Timeout,
    /// The response could not be decoded.
    Decode,
    /// The stream reported an error event.
    Stream,
    /// Anything else.
    Other,
}

/// A typed provider failure.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ProviderError {
    /// Category.
    pub kind: ProviderErrorKind,
    /// HTTP status, when there was one.
    pub status: Option<u16>,
    /// Human-readable message (the API's own message where it gave one).
    pub message: String,
    /// Whether retrying the same request may succeed.
    pub retryable: bool,
    /// How long the server asked us to wait.
    pub retry_after: Option<Duration>,
    /// Raw data that failed to decode, for diagnosis.
    pub raw: Option<String>,
}

impl ProviderError {
    /// A new error of `kind` with `message`; retryability follows the kind.
    pub fn new(kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        let retryable = matches!(
            kind,
            ProviderErrorKind::RateLimited
                | ProviderErrorKind::Overloaded
                | ProviderErrorKind::Server
                | ProviderErrorKind::Network
                | ProviderErrorKind::Timeout
        );
        Self {
            kind,
            status: None,
            message: message.into(),
            retryable,
            retry_after: None,
            raw: None,
        }
    }

    /// Sets the HTTP status.
    #[must_use = "returns the changed value"]
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// Attaches the raw data that caused the error.
    #[must_use = "returns the changed value"]
    pub fn with_raw(mut self, raw: impl Into<String>) -> Self {
        self.raw = Some(raw.into());
        self
    }

    /// Overrides retryability.
    #[must_use = "returns the changed value"]
    pub fn retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }
}

/// Prices in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Pricing {
    /// Uncached input tokens.
    pub input: f64,
    /// Output tokens (reasoning included).
    pub output: f64,
    /// Input tokens read from the prompt cache.
    pub cache_read: f64,
    /// Input tokens written to the prompt cache.
    pub cache_write: f64,
}

impl Pricing {
    /// Cost in USD of `usage` at these prices.
    pub fn cost(&self, usage: &Usage) -> f64 {
        (usage.input as f64 * self.input
            + usage.output as f64 * self.output
            + usage.cache_read as f64 * self.cache_read
            + usage.cache_write as f64 * self.cache_write)
            / 1_000_000.0
    }
}

/// A model catalogue entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// API model id.
    pub id: String,
    /// Provider id (`openai`, `anthropic`, …).
    pub provider: String,
    /// Context window in tokens.
    pub context_window: u32,
    /// Maximum output tokens.
    pub max_output: u32,
    /// Whether the model supports reasoning effort.
    pub reasoning: bool,
    /// Prices, when known; without them cost is absent.
    pub pricing: Option<Pricing>,
}

/// A boxed stream of provider events.
pub type ProviderStream = BoxStream<'static, Result<ProviderEvent, ProviderError>>;

/// The models a provider's API offers now ([`Provider::list_models`]).
pub type ModelList<'a> = BoxFuture<'a, Result<Vec<ModelInfo>, ProviderError>>;

/// A language model API.
///
/// A provider turns one [`ProviderRequest`] into a stream of [`ProviderEvent`]s. Retries of
/// failed connection attempts happen inside the stream and are reported with
/// [`ProviderEvent::RequestStarted`] / [`ProviderEvent::RetryScheduled`]; once content has
/// been produced, a failure ends the stream with an error and is never retried silently.
/// Dropping the stream cancels the request.
pub trait Provider: Send + Sync + 'static {
    /// Provider id, e.g. `openai`, `anthropic`, `scripted`.
    fn id(&self) -> &str;

    /// Starts one streaming model call.
    fn stream(&self, request: ProviderRequest) -> ProviderStream;

    /// Models this provider knows about.
    fn models(&self) -> Vec<ModelInfo> {
        Vec::new()
    }

    /// Catalogue entry for `model`, if known.
    fn model_info(&self, model: &str) -> Option<ModelInfo> {
        self.models().into_iter().find(|m| m.id == model)
    }

    /// The models the provider's API offers now (`GET /models` where the API has it), for
    /// a model picker; an entry the catalogue knows carries its figures. The default is the
    /// catalogue ([`Provider::models`]). A host bounds the wait and falls back to the
    /// configured model when this fails.
    fn list_models(&self) -> ModelList<'_> {
        Box::pin(futures::future::ready(Ok(self.models())))
    }

    /// The base URL the provider's requests go to (`https://api.openai.com/v1`, a local
    /// server's), when it talks to one: a host keeping what a server offers (its model list)
    /// across processes keys it on this with [`Provider::id`]. `None` (the default) for
    /// providers that talk to no server.
    fn endpoint(&self) -> Option<String> {
        None
    }
}
