//! The zut RPC wire format: every frame that crosses stdin or stdout, as serde types.
//!
//! Client → server lines are commands: an [`Envelope`] (`type`, optional string `id`) plus the
//! command's own fields ([`HelloParams`], [`PromptParams`], …). Server → client lines are
//! [`Frame`]s ([`FrameRef`]s when they borrow): a [`Response`] to one command, or an
//! [`Event`] of the prompt or compaction in flight. Nothing here is built by hand: every
//! frame is one of these types serialised with `serde_json`, one object per line.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Major version of the protocol, reported by `hello`.
pub const PROTOCOL_VERSION: u32 = 1;

// ---------------------------------------------------------------------------------------------
// Client → server
// ---------------------------------------------------------------------------------------------

/// The fields every command shares. Decoded first; any other field is read per command.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    /// Correlation id, echoed by the response; must be a string when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The command name (`prompt`, `abort`, …).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// Fields of `hello`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HelloParams {
    /// The shared secret; anything but the right string fails when a token is required.
    #[serde(default)]
    pub token: Option<Value>,
}

/// Fields of `prompt`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptParams {
    /// The prompt text.
    #[serde(default)]
    pub message: Option<String>,
    /// Attached images.
    #[serde(default)]
    pub images: Option<Vec<ImageParam>>,
}

/// One image attached to a prompt.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageParam {
    /// MIME type, e.g. `image/png`.
    #[serde(default)]
    pub mime_type: Option<String>,
    /// Standard (padded) base64 of the image bytes.
    #[serde(default)]
    pub data: Option<String>,
}

/// Fields of `set_model`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetModelParams {
    /// Model id within the current provider; missing counts as `""`.
    #[serde(default)]
    pub model: Option<String>,
}

/// Fields of `set_reasoning`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetReasoningParams {
    /// Reasoning level or alias; missing counts as `""` (off).
    #[serde(default)]
    pub reasoning: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Server → client
// ---------------------------------------------------------------------------------------------

/// One line written to stdout, owning its text.
pub type Frame = FrameRef<'static>;

/// One line written to stdout; an [`Event`]'s text may borrow from the
/// [`agent_core::AgentEvent`] it maps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FrameRef<'a> {
    /// The reply to one command.
    Response(Response),
    /// A stream notification.
    Event(Event<'a>),
}

/// The constant `type` of a response frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseType {
    /// `"response"`.
    Response,
}

/// The reply to one command: `{"type":"response","command",…,"success",["id"],["data"|"error"]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// Always `response`.
    #[serde(rename = "type")]
    pub kind: ResponseType,
    /// The request's `type`, verbatim (`""` when it had none or could not be decoded).
    pub command: String,
    /// Whether the command succeeded.
    pub success: bool,
    /// The request's id; omitted when it had none (or `""`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Result data of a successful command, when it has any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<ResponseData>,
    /// Why the command failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Response {
    /// A success response.
    pub fn ok(command: &str, id: Option<String>, data: Option<ResponseData>) -> Self {
        Self {
            kind: ResponseType::Response,
            command: command.to_string(),
            success: true,
            id: id.filter(|id| !id.is_empty()),
            data,
            error: None,
        }
    }

    /// A failure response.
    pub fn fail(command: &str, id: Option<String>, error: impl Into<String>) -> Self {
        Self {
            kind: ResponseType::Response,
            command: command.to_string(),
            success: false,
            id: id.filter(|id| !id.is_empty()),
            data: None,
            error: Some(error.into()),
        }
    }
}

/// The `data` of a success response; its shape depends on the command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResponseData {
    /// `hello`.
    Hello(HelloData),
    /// `prompt` and `compact`: `{"started":true}`.
    Started(StartedData),
    /// `get_state`.
    State(Box<StateData>),
    /// `get_messages`.
    Messages(MessagesData),
    /// `get_models`.
    Models(ModelsData),
    /// `set_model`.
    Model(ModelData),
    /// `set_reasoning`.
    Reasoning(ReasoningData),
    /// `ping`.
    Pong(PongData),
}

/// `hello` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelloData {
    /// Major protocol version ([`PROTOCOL_VERSION`]).
    pub protocol_version: u32,
    /// Version of this program.
    pub version: String,
    /// Provider id.
    pub provider: String,
    /// Current model id.
    pub model: String,
}

/// `prompt` / `compact` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartedData {
    /// Always true.
    pub started: bool,
}

/// `get_state` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateData {
    /// Provider id.
    pub provider: String,
    /// Current model id.
    pub model: String,
    /// Normalised reasoning level; `""` means off.
    pub reasoning: String,
    /// `--cwd` as given, or the process's working directory.
    pub cwd: String,
    /// Messages in the transcript (every role).
    pub message_count: usize,
    /// A prompt or compaction is active and has not been aborted.
    pub busy: bool,
    /// Cumulative usage since start (not reset by `clear`).
    pub usage: WireUsage,
    /// Our extension: how full the model's context window is now
    /// (`Agent::context_usage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<WireContext>,
    /// Our extension: what the OS sandbox enforces for commands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<WireSandbox>,
    /// Our extension: the names of the tools offered to the model (MCP tools, and `Task`
    /// when specialists are available, included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Our extension: the MCP servers of `--mcp-config` (omitted without one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<WireMcpServer>,
}

/// `get_state.context`: how full the context window is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireContext {
    /// Tokens in the context.
    pub used: u64,
    /// The window in tokens.
    pub window: u64,
    /// `used` as a percentage of `window`, to one decimal.
    pub percent: f64,
}

/// `get_state.sandbox`: the sandbox policy and what the kernel enforces of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireSandbox {
    /// `read-only`, `workspace-write` or `off`.
    pub mode: String,
    /// `allow` or `deny`.
    pub network: String,
    /// `full`, `partial` or `none`.
    pub enforced: String,
    /// The Landlock ABI in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landlock_abi: Option<u32>,
    /// `refuse`, `prompt` or `allow`.
    pub fallback: String,
    /// The fallback decides what happens to commands (the kernel cannot enforce the policy).
    pub fallback_active: bool,
    /// What is missing and why, when not everything is enforced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `get_state.mcp_servers[]`: one MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireMcpServer {
    /// The configured name.
    pub name: String,
    /// `stdio`, `http` or `sse`.
    pub transport: String,
    /// `connected` or `failed`.
    pub status: String,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The names its tools are offered under.
    pub tools: Vec<String>,
    /// Process id of a connected stdio server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

/// Our extension on `tool_result`: what the sandbox refused while the call ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireToolBlock {
    /// `sandbox`, `network`, … (agent-core's block codes).
    pub code: String,
    /// The tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The refused path, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Why, in words.
    pub reason: String,
    /// Whether the model can recover (another path, asking to rerun).
    pub recoverable: bool,
}

/// `get_messages` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessagesData {
    /// The whole transcript; `[]` when empty.
    pub messages: Vec<WireMessage>,
}

/// `get_models` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelsData {
    /// Models of the current provider; `[]` when it lists none.
    pub models: Vec<WireModel>,
}

/// One catalogue entry of `get_models`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireModel {
    /// Model id.
    pub id: String,
    /// Provider id.
    pub provider: String,
    /// Context window in tokens.
    pub context_window: u64,
    /// Maximum output tokens.
    pub max_output: u64,
    /// Whether the model takes a reasoning level.
    pub reasoning: bool,
}

/// `set_model` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelData {
    /// The model now in use.
    pub model: String,
}

/// `set_reasoning` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasoningData {
    /// The normalised level now in use; `""` means off.
    pub reasoning: String,
}

/// `ping` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PongData {
    /// Always true.
    pub pong: bool,
}

/// Token counts and cost, as `usage` events and `get_state` carry them.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct WireUsage {
    /// Uncached input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Reasoning tokens; `null` unless the provider reported them.
    pub reasoning: Option<u64>,
    /// Input tokens read from the prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write: u64,
    /// Prompt tokens of the calls whose cache figures were measured (the ratio's denominator).
    pub cache_measured_prompt: u64,
    /// Cache-read tokens of those same calls (the ratio's numerator).
    pub cache_measured_read: u64,
    /// Cost in USD; 0 when prices are unknown.
    pub cost_usd: f64,
}

/// Which layer a request attempt belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// One model call of the agent loop.
    Agent,
    /// One HTTP attempt inside the provider.
    Provider,
}

/// Why one model call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// The model answered.
    End,
    /// The call ended but the agent makes another in the same turn.
    Continue,
    /// The model asked for tools.
    ToolUse,
    /// The output limit cut the answer.
    Length,
    /// The call failed.
    Error,
    /// The call was aborted.
    Aborted,
}

/// Why the agent added a continuation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recovery {
    /// The model stopped with no text and no tool calls.
    MissingAnswer,
    /// The model produced only commentary (reasoning).
    CommentaryOnly,
}

/// Status of one plan item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// One item of the session checklist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WirePlanItem {
    /// What to do.
    pub step: String,
    /// Where it stands.
    pub status: PlanStatus,
}

/// Author of a transcript message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireRole {
    /// The user (and synthetic notes such as a compaction summary).
    User,
    /// The model.
    Assistant,
    /// Tool results, one block per call.
    Tool,
    /// Host-supplied turn context (never produced by this server).
    Developer,
}

/// A transcript message, in `get_messages` and the message events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireMessage {
    /// Author.
    pub role: WireRole,
    /// Content blocks; reasoning is omitted.
    pub content: Vec<WireBlock>,
    /// When the message was added (RFC 3339).
    pub time: DateTime<Utc>,
}

/// One content block. Images carry their decoded byte count, never base64.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WireBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// MIME type.
        mime_type: String,
        /// Decoded length in bytes.
        bytes: u64,
    },
    /// A tool call made by the assistant.
    ToolCall {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Parsed arguments; `null` when they were not valid JSON.
        args: Value,
    },
    /// The result of one tool call.
    ToolResult {
        /// The call it answers.
        call_id: String,
        /// True when the tool failed or did not run.
        is_error: bool,
        /// Nested text and image blocks.
        content: Vec<WireBlock>,
    },
}

/// A stream notification. None carries an `id`.
///
/// Its text borrows from the [`agent_core::AgentEvent`] it maps (`Cow`), so a frame is
/// serialised without copying the event's strings; [`Event::into_owned`] detaches it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event<'a> {
    /// Beginning of one model call (1-based within the prompt).
    TurnStart {
        /// Model-call index.
        step: u32,
    },
    /// A request attempt started at the agent or provider layer.
    RequestStarted {
        /// Provider id.
        provider: Cow<'a, str>,
        /// Model id.
        model: Cow<'a, str>,
        /// Which layer.
        scope: Scope,
        /// 1-based attempt.
        attempt: u32,
        /// Attempts allowed.
        max_attempts: u32,
    },
    /// Sanitised cache-routing state (no prompts, ids, bodies or credentials).
    CacheDiagnostics {
        /// Conservative local estimate of whether the prompt is long enough to cache.
        eligible: bool,
        /// Cache mode.
        mode: String,
        /// Transport.
        transport: String,
        /// Continuation state.
        continuation: String,
    },
    /// A model call failed (overloaded, rate-limited, a server error) before any output and
    /// is made again with the fallback model (`--fallback-model`); this SDK's extension to
    /// zut's events.
    ModelFallback {
        /// The model that failed.
        from: Cow<'a, str>,
        /// The fallback model.
        to: Cow<'a, str>,
        /// The failure.
        reason: Cow<'a, str>,
    },
    /// The upcoming attempt is delayed.
    RetryScheduled {
        /// Which layer.
        scope: Scope,
        /// The upcoming attempt's number.
        attempt: u32,
        /// Attempts allowed.
        max_attempts: u32,
        /// Delay in milliseconds.
        delay_ms: u64,
    },
    /// The submitted prompt as added to the transcript.
    UserMessage {
        /// Its blocks.
        content: Vec<WireBlock>,
        /// When it was added.
        time: DateTime<Utc>,
    },
    /// The provider connection opened; assistant streaming follows.
    AssistantStart,
    /// Partial assistant text.
    TextDelta {
        /// The text.
        delta: Cow<'a, str>,
    },
    /// The provider started streaming a tool call.
    ToolUseStart {
        /// Call id.
        id: Cow<'a, str>,
        /// Tool name.
        name: Cow<'a, str>,
    },
    /// Partial tool-call argument JSON.
    ToolUseArgs {
        /// Call id.
        id: Cow<'a, str>,
        /// Argument text fragment.
        delta: Cow<'a, str>,
    },
    /// The tool-call argument stream is complete.
    ToolUseEnd {
        /// Call id.
        id: Cow<'a, str>,
    },
    /// The model proposed a tool call.
    ToolCall {
        /// Call id.
        id: Cow<'a, str>,
        /// Tool name.
        name: Cow<'a, str>,
        /// Parsed arguments; `null` when invalid JSON.
        args: Cow<'a, Value>,
    },
    /// Checks passed; the tool is about to run.
    ToolExecutionStarted {
        /// Call id.
        id: Cow<'a, str>,
        /// Tool name.
        name: Cow<'a, str>,
    },
    /// A progress line from a running tool.
    ToolProgress {
        /// Call id.
        id: Cow<'a, str>,
        /// The text.
        text: Cow<'a, str>,
    },
    /// The plan tool changed the session checklist.
    PlanUpdate {
        /// The call that produced it; omitted when unknown.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<Cow<'a, str>>,
        /// Why it changed; `null` when not given.
        explanation: Option<Cow<'a, str>>,
        /// The whole checklist.
        plan: Vec<WirePlanItem>,
    },
    /// A tool finished (or failed, or did not run).
    ToolResult {
        /// Call id.
        id: Cow<'a, str>,
        /// True on failure.
        is_error: bool,
        /// Text and image blocks.
        content: Vec<WireBlock>,
        /// Our extension: what the OS sandbox refused while the call ran (omitted when
        /// nothing was).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        block: Option<WireToolBlock>,
    },
    /// The assistant's message once the model call ended.
    AssistantMessage {
        /// Its blocks (reasoning omitted).
        content: Vec<WireBlock>,
        /// When it was added.
        time: DateTime<Utc>,
    },
    /// Per-call and cumulative tokens and cost.
    Usage {
        /// This call's figures (flattened into the event).
        #[serde(flatten)]
        turn: WireUsage,
        /// Running totals.
        cumulative: WireUsage,
    },
    /// One model call finished.
    TurnEnd {
        /// Why.
        stop: Stop,
        /// The error, when the call failed or was aborted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<Cow<'a, str>>,
    },
    /// The turn ended without an answer, so one bounded continuation was added.
    TurnRecovery {
        /// What was missing.
        reason: Recovery,
        /// Always 1.
        attempt: u32,
    },
    /// The whole prompt or compaction is over (success, error or abort).
    Done,
    /// A non-fatal error message.
    Error {
        /// The message.
        message: Cow<'a, str>,
    },
    /// Compaction finished.
    CompactDone {
        /// The summary text (trimmed).
        summary: Cow<'a, str>,
    },
}

fn owned(text: Cow<'_, str>) -> Cow<'static, str> {
    Cow::Owned(text.into_owned())
}

impl Event<'_> {
    /// The same event owning its text.
    pub fn into_owned(self) -> Event<'static> {
        match self {
            Event::TurnStart { step } => Event::TurnStart { step },
            Event::RequestStarted {
                provider,
                model,
                scope,
                attempt,
                max_attempts,
            } => Event::RequestStarted {
                provider: owned(provider),
                model: owned(model),
                scope,
                attempt,
                max_attempts,
            },
            Event::CacheDiagnostics {
                eligible,
                mode,
                transport,
                continuation,
            } => Event::CacheDiagnostics {
                eligible,
                mode,
                transport,
                continuation,
            },
            Event::ModelFallback { from, to, reason } => Event::ModelFallback {
                from: owned(from),
                to: owned(to),
                reason: owned(reason),
            },
            Event::RetryScheduled {
                scope,
                attempt,
                max_attempts,
                delay_ms,
            } => Event::RetryScheduled {
                scope,
                attempt,
                max_attempts,
                delay_ms,
            },
            Event::UserMessage { content, time } => Event::UserMessage { content, time },
            Event::AssistantStart => Event::AssistantStart,
            Event::TextDelta { delta } => Event::TextDelta {
                delta: owned(delta),
            },
            Event::ToolUseStart { id, name } => Event::ToolUseStart {
                id: owned(id),
                name: owned(name),
            },
            Event::ToolUseArgs { id, delta } => Event::ToolUseArgs {
                id: owned(id),
                delta: owned(delta),
            },
            Event::ToolUseEnd { id } => Event::ToolUseEnd { id: owned(id) },
            Event::ToolCall { id, name, args } => Event::ToolCall {
                id: owned(id),
                name: owned(name),
                args: Cow::Owned(args.into_owned()),
            },
            Event::ToolExecutionStarted { id, name } => Event::ToolExecutionStarted {
                id: owned(id),
                name: owned(name),
            },
            Event::ToolProgress { id, text } => Event::ToolProgress {
                id: owned(id),
                text: owned(text),
            },
            Event::PlanUpdate {
                id,
                explanation,
                plan,
            } => Event::PlanUpdate {
                id: id.map(owned),
                explanation: explanation.map(owned),
                plan,
            },
            Event::ToolResult {
                id,
                is_error,
                content,
                block,
            } => Event::ToolResult {
                id: owned(id),
                is_error,
                content,
                block,
            },
            Event::AssistantMessage { content, time } => Event::AssistantMessage { content, time },
            Event::Usage { turn, cumulative } => Event::Usage { turn, cumulative },
            Event::TurnEnd { stop, error } => Event::TurnEnd {
                stop,
                error: error.map(owned),
            },
            Event::TurnRecovery { reason, attempt } => Event::TurnRecovery { reason, attempt },
            Event::Done => Event::Done,
            Event::Error { message } => Event::Error {
                message: owned(message),
            },
            Event::CompactDone { summary } => Event::CompactDone {
                summary: owned(summary),
            },
        }
    }
}

#[cfg(test)]
mod tests;
