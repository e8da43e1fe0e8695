//! Wire types of the ZCode app-server protocol: line-delimited JSON objects shaped like
//! JSON-RPC but without a `jsonrpc` field.
//!
//! Every frame this server writes is one of the serde types below; nothing is built as a
//! string by hand. Field names follow the upstream server's strict schemas (camelCase).

use std::sync::Arc;

use agent_core::permission::{Block, BlockCode};
use agent_core::sandbox::{
    Enforcement, NetworkAccess, NetworkFilter, SandboxFallback, SandboxMode, SandboxReport,
};
use agent_host::session::HookNote;
use agent_mcp::ServerStatus;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Name of the protocol in snapshots.
pub const PROTOCOL_NAME: &str = "ZCode Protocol";
/// Version of the protocol in snapshots.
pub const PROTOCOL_VERSION: u32 = 1;

/// Error codes used by the server.
pub mod codes {
    /// Unparseable JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a ZCode Protocol message (for example it carries `jsonrpc`).
    pub const INVALID_REQUEST: i64 = -32600;
    /// Unknown method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Parameters failed validation.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal or model error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// The session is not known, or not active in this process.
    pub const SESSION_UNAVAILABLE: i64 = -32004;
    /// A prompt is already running in the session.
    pub const PROMPT_RUNNING: i64 = -32010;
}

/// The id used in error replies to lines that are not valid messages.
pub const INVALID_MESSAGE_ID: &str = "invalid-message";

/// A request id: a string or an integer, echoed exactly as received.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id.
    Int(i64),
    /// A string id.
    Str(String),
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Int(n) => write!(f, "{n}"),
            Self::Str(s) => f.write_str(s),
        }
    }
}

/// The error object of an error reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// Error code (see [`codes`]).
    pub code: i64,
    /// Human-readable message; never empty.
    pub message: String,
    /// Structured details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// One incoming line, before classification. Unknown top-level keys are rejected like the
/// upstream server's strict envelope schemas do.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMessage {
    /// Request or response id.
    #[serde(default)]
    pub id: Option<RequestId>,
    /// Method of a request or notification.
    #[serde(default)]
    pub method: Option<String>,
    /// Parameters.
    #[serde(default)]
    pub params: Option<Value>,
    /// Result of a response.
    #[serde(default)]
    pub result: Option<Value>,
    /// Error of a response.
    #[serde(default)]
    pub error: Option<ErrorObject>,
    /// Trace context (accepted and ignored).
    #[serde(default)]
    pub trace: Option<Value>,
}

/// Everything this server writes to stdout, one per line.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Outgoing {
    /// A successful reply to a client request.
    Response {
        /// The request's id.
        id: RequestId,
        /// The result.
        result: Value,
    },
    /// An error reply.
    Error {
        /// The request's id (or [`INVALID_MESSAGE_ID`]).
        id: RequestId,
        /// The error.
        error: ErrorObject,
    },
    /// A server → client request (`interaction/*`).
    Request {
        /// `server-N`.
        id: RequestId,
        /// Method name.
        method: String,
        /// Parameters.
        params: Value,
    },
    /// A notification (`session/event`, `startup/storageState`).
    Notification {
        /// Method name.
        method: String,
        /// Parameters.
        params: Value,
    },
}

/// A `session/event` notification, serialised straight from the event: the same line as
/// [`Outgoing::Notification`] with the event as `params`, without building a [`Value`].
#[derive(Debug, Clone, Copy, Serialize)]
pub struct EventNotification<'a> {
    /// Always [`SESSION_EVENT`].
    pub method: &'static str,
    /// The event.
    pub params: &'a SessionEvent,
}

impl<'a> EventNotification<'a> {
    /// The notification carrying `event`.
    pub fn new(event: &'a SessionEvent) -> Self {
        Self {
            method: SESSION_EVENT,
            params: event,
        }
    }
}

/// A `session/event` notification of an event serialised already (as the event log stores
/// it): the same line as [`EventNotification`] of that event, its JSON copied verbatim.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct StoredEventNotification<'a> {
    /// Always [`SESSION_EVENT`].
    pub method: &'static str,
    /// The event's JSON.
    pub params: &'a serde_json::value::RawValue,
}

impl<'a> StoredEventNotification<'a> {
    /// The notification carrying the serialised `event`.
    pub fn new(event: &'a serde_json::value::RawValue) -> Self {
        Self {
            method: SESSION_EVENT,
            params: event,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Request parameters
// ---------------------------------------------------------------------------------------

/// A workspace reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceRef {
    /// The directory.
    pub workspace_path: String,
    /// An opaque identity of the workspace (defaults to the path).
    #[serde(default)]
    pub workspace_key: String,
}

/// A model reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRef {
    /// Provider id.
    pub provider_id: String,
    /// Model id.
    pub model_id: String,
}

/// Session modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WireMode {
    /// Read-only planning.
    Plan,
    /// Asks before side effects.
    Build,
    /// Workspace edits pass, risky calls ask.
    Edit,
    /// Everything pre-approved.
    Yolo,
    /// Risk-based.
    Auto,
}

/// `session/create` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateParams {
    /// The workspace.
    pub workspace: WorkspaceRef,
    /// Initial mode (default `build`).
    #[serde(default)]
    pub mode: Option<WireMode>,
    /// Initial model.
    #[serde(default)]
    pub model: Option<ModelRef>,
    /// Initial thought level.
    #[serde(default)]
    pub thought_level: Option<String>,
    /// Parent session.
    #[serde(default)]
    pub parent_session_id: Option<String>,
    /// Only these tools.
    #[serde(default)]
    pub tool_allowlist: Option<Vec<String>>,
    /// Not these tools.
    #[serde(default)]
    pub tool_denylist: Option<Vec<String>>,
    /// MCP servers of the session: ACP's list (`[{name, command, args, env:[{name,value}]}
    /// | {type:"http", name, url, headers}]`) or a Claude-style map (`{name: {command, args,
    /// env} | {type:"http", url, headers}}`); parsed with [`agent_mcp::McpServers`].
    #[serde(default)]
    pub mcp_servers: Option<Value>,
}

/// `session/list` parameters.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListParams {
    /// Only sessions of this workspace.
    #[serde(default)]
    pub workspace: Option<WorkspaceRef>,
    /// Only these sessions.
    #[serde(default)]
    pub session_ids: Option<Vec<String>>,
    /// Include archived sessions (none are archived here).
    #[serde(default)]
    pub include_archived: bool,
    /// At most this many (default 50).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// `session/resume` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeParams {
    /// The session.
    pub session_id: String,
    /// The workspace (informational).
    #[serde(default)]
    pub workspace: Option<WorkspaceRef>,
    /// Thought level to apply.
    #[serde(default)]
    pub thought_level: Option<String>,
    /// MCP servers of the session (as on `session/create`); they apply when the session
    /// is loaded now, not when it is active already.
    #[serde(default)]
    pub mcp_servers: Option<Value>,
}

/// `mcp/list` parameters.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpListParams {
    /// The session whose servers to list; without it, the servers of every active session.
    #[serde(default)]
    pub session_id: Option<String>,
}

/// Parameters that only name a session (`session/stop`, `session/compact`, ...).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionParams {
    /// The session.
    pub session_id: String,
}

/// `session/read` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadParams {
    /// The session.
    pub session_id: String,
    /// Only the last N messages in the snapshot.
    #[serde(default)]
    pub message_limit: Option<usize>,
}

/// `session/messages` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessagesParams {
    /// The session.
    pub session_id: String,
    /// Only messages after this one (unknown id: all).
    #[serde(default)]
    pub after_message_id: Option<String>,
    /// Only the last N.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// `session/subscribe` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeParams {
    /// The session.
    pub session_id: String,
    /// `desktop-continuous` or `web-remote-replayable`.
    #[serde(default)]
    pub delivery_kind: Option<String>,
    /// Replay events with a larger seq.
    #[serde(default)]
    pub after_seq: Option<u64>,
    /// Include a snapshot in the result.
    #[serde(default)]
    pub include_snapshot: bool,
}

/// `session/events` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventsParams {
    /// The session.
    pub session_id: String,
    /// Events with a larger seq.
    #[serde(default)]
    pub after_seq: Option<u64>,
    /// At most this many.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// `session/send` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendParams {
    /// The session.
    pub session_id: String,
    /// The prompt.
    pub content: String,
    /// Client input id, echoed in `turn.started`.
    #[serde(default)]
    pub input_id: Option<String>,
}

/// `session/steer` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SteerParams {
    /// The session.
    pub session_id: String,
    /// Extra instructions.
    pub content: String,
}

/// Fork targets.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ForkTarget {
    /// The whole transcript.
    LatestCheckpoint,
    /// Everything before the user message of the given 0-based turn.
    #[serde(rename_all = "camelCase")]
    Turn {
        /// 0-based turn index.
        turn_index: usize,
    },
    /// Everything up to and including the given message.
    #[serde(rename_all = "camelCase")]
    Message {
        /// The message id.
        message_id: String,
    },
}

/// `session/fork` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkParams {
    /// The session to fork.
    pub session_id: String,
    /// Where to fork (default the latest checkpoint).
    #[serde(default)]
    pub target: Option<ForkTarget>,
}

/// `session/goal` actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GoalAction {
    /// Show the goal.
    Show,
    /// Set a goal.
    Set,
    /// Replace the goal.
    Replace,
    /// Remove the goal.
    Clear,
    /// Pause the goal.
    Pause,
    /// Resume a paused goal.
    Resume,
}

/// `session/goal` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GoalParams {
    /// The session.
    pub session_id: String,
    /// What to do.
    pub action: GoalAction,
    /// The objective, for `set` and `replace`.
    #[serde(default)]
    pub objective: Option<String>,
}

/// `session/setMode` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetModeParams {
    /// The session.
    pub session_id: String,
    /// The new mode.
    pub mode: WireMode,
}

/// `session/setThoughtLevel` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetThoughtLevelParams {
    /// The session.
    pub session_id: String,
    /// The level (absent: the default).
    #[serde(default)]
    pub thought_level: Option<String>,
}

/// `session/setModel` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetModelParams {
    /// The session.
    pub session_id: String,
    /// The model.
    pub model: ModelRef,
}

/// `session/subagents` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentsParams {
    /// The parent session.
    pub session_id: String,
}

/// `session/cancelBackgroundTask` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelBackgroundTaskParams {
    /// The session.
    pub session_id: String,
    /// The task.
    pub task_id: String,
}

// ---------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------

/// `{name, version}` of the protocol.
#[derive(Debug, Clone, Serialize)]
pub struct ProtocolInfo {
    /// [`PROTOCOL_NAME`].
    pub name: &'static str,
    /// [`PROTOCOL_VERSION`].
    pub version: u32,
}

/// Session status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WireStatus {
    /// No turn runs.
    Idle,
    /// A turn runs.
    Running,
}

/// `ZCodeSessionInfo`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// Session id.
    pub session_id: String,
    /// Workspace.
    pub workspace: WorkspaceRef,
    /// Parent of a fork or of a sub-agent's session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    /// Trace id.
    pub trace_id: String,
    /// `interactive`, `fork` or `subagent`.
    pub session_kind: &'static str,
    /// Title (first 80 characters of the first prompt).
    pub title: String,
    /// `default`, `first_input` or `custom`.
    pub title_source: &'static str,
    /// Mode.
    pub mode: WireMode,
    /// Status.
    pub status: WireStatus,
    /// Model.
    pub model: ModelRef,
    /// Creation time, ms since the epoch.
    pub created_at: i64,
    /// Last change, ms since the epoch.
    pub updated_at: i64,
}

/// `{current}` of a setting.
#[derive(Debug, Clone, Serialize)]
pub struct Current<T> {
    /// The current value.
    pub current: T,
}

/// A model the session may switch to.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelOption {
    /// The model.
    #[serde(rename = "ref")]
    pub model_ref: ModelRef,
    /// Display label.
    pub label: String,
    /// Context window in tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Output token limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// Input/output formats.
    pub properties: ModelProperties,
}

/// Model input/output formats.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelProperties {
    /// Input formats.
    pub input_format: Vec<&'static str>,
    /// Output formats.
    pub output_format: Vec<&'static str>,
}

/// The model setting.
#[derive(Debug, Clone, Serialize)]
pub struct ModelSetting {
    /// The current model.
    pub current: ModelRef,
    /// Models on offer.
    pub available: Vec<ModelOption>,
}

/// A thought level on offer.
#[derive(Debug, Clone, Serialize)]
pub struct LevelOption {
    /// Value to send.
    pub value: String,
    /// Display label.
    pub label: String,
}

/// The thought level setting.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThoughtLevelSetting {
    /// Levels can be chosen.
    pub enabled: bool,
    /// The current level.
    pub current: String,
    /// The default level.
    pub default_level: String,
    /// Levels on offer.
    pub available: Vec<LevelOption>,
}

/// The permission setting.
#[derive(Debug, Clone, Serialize)]
pub struct PermissionSetting {
    /// The engine's permission mode (`ask`, `auto`, `plan`, `unsafe`).
    pub mode: String,
}

/// Session settings.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    /// Model.
    pub model: ModelSetting,
    /// Thought level.
    pub thought_level: ThoughtLevelSetting,
    /// Mode.
    pub mode: Current<WireMode>,
    /// Permission policy.
    pub permission: PermissionSetting,
}

/// A tool call in flight.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActiveToolCall {
    /// Call id.
    pub tool_call_id: String,
    /// Tool name.
    pub tool_name: String,
    /// `pending` or `running`.
    pub status: &'static str,
    /// Start time, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<i64>,
}

/// The session projection.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Projection {
    /// Session id.
    pub session_id: String,
    /// Status.
    pub status: WireStatus,
    /// Mode.
    pub mode: WireMode,
    /// Turns run so far.
    pub turn_count: u32,
    /// All tokens used so far.
    pub total_token_count: u64,
    /// Tokens of the context at the last model call.
    pub context_used: u64,
    /// The model's context window.
    pub context_window: u64,
    /// The running turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_turn_id: Option<String>,
    /// Permission requests awaiting a reply (their request ids).
    pub pending_permissions: Vec<String>,
    /// Tool calls in flight.
    pub active_tool_calls: Vec<ActiveToolCall>,
    /// Background tasks of the session's `Task` tools (running, and the last finished).
    pub background_jobs: Vec<BackgroundJob>,
    /// Last error message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// A background task in the projection.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackgroundJob {
    /// The task id (also the sub-agent's session id).
    pub task_id: String,
    /// Always `subagent`.
    pub kind: &'static str,
    /// The specialist.
    pub agent_type: String,
    /// The caller's label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The `Task` call that started it.
    pub tool_call_id: String,
    /// `running`, `completed`, `failed` or `cancelled`.
    pub status: &'static str,
}

/// Runtime state of a session.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeInfo {
    /// Highest event seq.
    pub event_seq: u64,
    /// State revision.
    pub state_revision: u64,
    /// The running turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_turn_id: Option<String>,
    /// `agent` or `compact`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_turn_kind: Option<&'static str>,
    /// Server request ids awaiting a reply.
    pub pending_request_ids: Vec<String>,
    /// How full the context window is.
    pub context_usage: ContextUsageInfo,
}

/// `runtime.contextUsage`: `{used, window, percent}`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ContextUsageInfo {
    /// Tokens in the context.
    pub used: u64,
    /// The context window.
    pub window: u64,
    /// `used` as a percentage of `window`, to one decimal.
    pub percent: f64,
}

impl ContextUsageInfo {
    /// The usage of `used` out of `window` tokens.
    pub fn new(used: u64, window: u64) -> Self {
        let usage = agent_core::context::ContextUsage::new(used, window);
        Self {
            used: usage.used,
            window: usage.window,
            percent: usage.percent,
        }
    }
}

/// A todo item (from the plan tool).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Todo {
    /// The step.
    pub content: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: &'static str,
    /// Always `medium`: the plan tool has no priorities.
    pub priority: &'static str,
}

/// The full state of a session: the result of create, resume, read, fork, goal, ...
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// Protocol name and version.
    pub protocol: ProtocolInfo,
    /// Session info.
    pub session: SessionInfo,
    /// Settings.
    pub settings: Settings,
    /// Projection.
    pub projection: Projection,
    /// Runtime state.
    pub runtime: RuntimeInfo,
    /// Messages (possibly tail-limited).
    pub messages: Vec<MessageWithParts>,
    /// The checklist.
    pub todos: Vec<Todo>,
}

/// `session/list` result.
#[derive(Debug, Clone, Serialize)]
pub struct ListResult {
    /// Sessions, most recently updated first.
    pub sessions: Vec<SessionInfo>,
}

/// `session/messages` result.
#[derive(Debug, Clone, Serialize)]
pub struct MessagesResult {
    /// Messages.
    pub messages: Vec<MessageWithParts>,
}

/// `session/subscribe` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeResult {
    /// Session id.
    pub session_id: String,
    /// Highest seq so far.
    pub event_seq: u64,
    /// Events after `afterSeq` (empty without it, and in the gap form), as stored.
    pub events: Vec<Box<serde_json::value::RawValue>>,
    /// Snapshot, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<Box<Snapshot>>,
}

/// `session/events` result.
#[derive(Debug, Clone, Serialize)]
pub struct EventsResult {
    /// Events, as stored.
    pub events: Vec<Box<serde_json::value::RawValue>>,
}

/// `session/send` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SendResult {
    /// Session id.
    pub session_id: String,
    /// Always true.
    pub accepted: bool,
    /// State revision after the turn started.
    pub state_revision: u64,
}

/// `session/stop` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StopResult {
    /// Session id.
    pub session_id: String,
    /// Whether a turn was stopped.
    pub stopped: bool,
}

/// `session/steer` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SteerResult {
    /// Session id.
    pub session_id: String,
    /// Always true.
    pub accepted: bool,
    /// Whether a turn was running (otherwise the text waits for the next one).
    pub queued_for_next_turn: bool,
}

/// `session/fork` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkResult {
    /// The new session.
    pub forked_session_id: String,
    /// The forked session.
    pub parent_session_id: String,
    /// The last message copied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_message_id: Option<String>,
    /// Human-readable summary.
    pub response: String,
    /// Snapshot of the new session.
    pub snapshot: Box<Snapshot>,
}

/// A session goal.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GoalInfo {
    /// The objective.
    pub objective: String,
    /// `active` or `paused`.
    pub status: &'static str,
    /// Set at, ms.
    pub created_at: i64,
    /// Changed at, ms.
    pub updated_at: i64,
}

/// `session/goal` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GoalResult {
    /// Human-readable answer.
    pub response: String,
    /// The goal after the action.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goal: Option<GoalInfo>,
    /// Session snapshot.
    pub snapshot: Box<Snapshot>,
}

/// Compaction state in a `session/compact` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactState {
    /// `accepted` or `already_running`.
    pub state: &'static str,
    /// The compaction's operation (turn) id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
}

/// `session/compact` result.
#[derive(Debug, Clone, Serialize)]
pub struct CompactResult {
    /// Human-readable answer.
    pub response: String,
    /// Session snapshot.
    pub snapshot: Box<Snapshot>,
    /// Compaction state.
    pub compact: CompactState,
}

/// `mcp/list` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpListResult {
    /// The servers.
    pub servers: Vec<McpServerInfo>,
}

/// One MCP server in `mcp/list`: `{sessionId, name, transport, status: connected|failed,
/// reason?, tools, pid?}`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerInfo {
    /// The session it serves.
    pub session_id: String,
    /// Name, transport, status (with the reason of a failure), tools and pid.
    #[serde(flatten)]
    pub server: ServerStatus,
}

/// One sub-agent in `session/subagents`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentEntry {
    /// Its session (`sessionKind: "subagent"`, `parentSessionId`).
    pub session: SessionInfo,
    /// The specialist.
    pub agent_type: String,
    /// The caller's label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The parent's `Task` call.
    pub tool_call_id: String,
    /// It runs in the background.
    pub background: bool,
    /// `running`, `completed`, `failed` or `cancelled`.
    pub status: &'static str,
    /// Its answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_text: Option<String>,
    /// What ended it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its usage (its own sub-agents' included).
    pub usage: WireUsage,
    /// Wall time, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// `session/subagents` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentsResult {
    /// The parent session.
    pub session_id: String,
    /// Its sub-agents, oldest first.
    pub subagents: Vec<SubagentEntry>,
}

/// `session/close` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CloseResult {
    /// The session.
    pub session_id: String,
    /// Whether it was active (and is closed now).
    pub closed: bool,
}

/// `session/cancelBackgroundTask` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelBackgroundTaskResult {
    /// Whether a task was cancelled.
    pub cancelled: bool,
    /// What happened, in words.
    pub reason: String,
    /// The session afterwards (messages left out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<Box<Snapshot>>,
    /// Task status: `cancelled`, `completed`, `failed` or `not_found`.
    pub status: &'static str,
    /// The task.
    pub task_id: String,
}

// ---------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------

/// Times of a message.
#[derive(Debug, Clone, Serialize)]
pub struct MessageTime {
    /// Created, ms.
    pub created: i64,
    /// Completed, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed: Option<i64>,
}

/// Paths of an assistant message.
#[derive(Debug, Clone, Serialize)]
pub struct MessagePath {
    /// Working directory.
    pub cwd: String,
    /// Workspace root.
    pub root: String,
}

/// Cache token counts.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CacheTokens {
    /// Read from cache.
    pub read: u64,
    /// Written to cache.
    pub write: u64,
}

/// Token counts of a message.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MessageTokens {
    /// Input.
    pub input: u64,
    /// Output.
    pub output: u64,
    /// Reasoning.
    pub reasoning: u64,
    /// Cache.
    pub cache: CacheTokens,
}

/// A user message's info.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessageInfo {
    /// Message id.
    pub message_id: String,
    /// Session id.
    pub session_id: String,
    /// Times.
    pub time: MessageTime,
    /// The agent (mode) it was sent in.
    pub agent: String,
    /// Written by the agent itself (compaction summary, recovery nudge).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub synthetic: bool,
}

/// An assistant message's info.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessageInfo {
    /// Message id.
    pub message_id: String,
    /// Session id.
    pub session_id: String,
    /// Times.
    pub time: MessageTime,
    /// The user message it answers.
    pub parent_message_id: String,
    /// The agent (mode).
    pub agent: String,
    /// The model.
    pub model: ModelRef,
    /// Paths.
    pub path: MessagePath,
    /// Cost in USD.
    pub cost: f64,
    /// Tokens.
    pub tokens: MessageTokens,
    /// `tool-calls` or `stop`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish: Option<&'static str>,
}

/// Message info, discriminated by role.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum MessageInfo {
    /// A user message.
    User(UserMessageInfo),
    /// An assistant message.
    Assistant(AssistantMessageInfo),
}

/// State of a tool part.
#[derive(Debug, Clone, Serialize)]
#[serde(
    tag = "status",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub enum ToolState {
    /// Not run yet.
    Pending {
        /// Arguments.
        input: Value,
        /// Raw argument text.
        raw: String,
    },
    /// Running.
    Running {
        /// Arguments.
        input: Value,
        /// Start, ms.
        started_at: i64,
    },
    /// Finished.
    Completed {
        /// Arguments.
        input: Value,
        /// Output text.
        output: String,
        /// Title.
        title: String,
        /// Extra data: [`ToolMeta`] (a sandbox block, hook decisions, the sub-agent's
        /// session), `{}` when there is none.
        metadata: Value,
        /// Start, ms.
        started_at: i64,
        /// End, ms.
        completed_at: i64,
    },
    /// Failed, refused or not run.
    Error {
        /// Arguments.
        input: Value,
        /// Error text.
        error: String,
        /// [`ToolMeta`], when there is some (a sandbox block, the hook that refused it).
        #[serde(skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
        /// Start, ms.
        started_at: i64,
        /// End, ms.
        completed_at: i64,
    },
}

/// The content of a part.
// Parts are built once per message part and serialised straight away; boxing the tool
// state would only add indirection to every constructor.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Serialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum PartBody {
    /// Answer text.
    Text {
        /// The text.
        text: String,
    },
    /// Reasoning text.
    Reasoning {
        /// The text.
        text: String,
    },
    /// A tool call and its state.
    Tool {
        /// Call id.
        call_id: String,
        /// Tool name.
        tool: String,
        /// State.
        state: ToolState,
    },
    /// The transcript before this point was compacted into the summary that follows.
    Compaction {
        /// Whether it was automatic (the context crossed the threshold, or overflowed)
        /// rather than asked for (`session/compact`).
        auto: bool,
    },
}

/// One part of a message.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// Part id.
    pub part_id: String,
    /// Session id.
    pub session_id: String,
    /// Message id.
    pub message_id: String,
    /// Content.
    #[serde(flatten)]
    pub body: PartBody,
}

/// A message with its parts.
#[derive(Debug, Clone, Serialize)]
pub struct MessageWithParts {
    /// Info.
    pub info: MessageInfo,
    /// Parts.
    pub parts: Vec<Part>,
}

impl MessageWithParts {
    /// The message id.
    pub fn message_id(&self) -> &str {
        match &self.info {
            MessageInfo::User(u) => &u.message_id,
            MessageInfo::Assistant(a) => &a.message_id,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------

/// An immutable string shared by many values (an id repeated in every event of a session
/// or turn): a clone costs a reference count, not an allocation. Serialises as the plain
/// string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SharedStr(Arc<str>);

impl SharedStr {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for SharedStr {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for SharedStr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for SharedStr {
    fn from(text: &str) -> Self {
        Self(Arc::from(text))
    }
}

impl From<String> for SharedStr {
    fn from(text: String) -> Self {
        Self(Arc::from(text))
    }
}

impl Serialize for SharedStr {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

/// One `session/event` notification's params.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEvent {
    /// `evt_<uuid>`.
    pub event_id: String,
    /// Session id (shared by the session's events).
    pub session_id: SharedStr,
    /// The turn it belongs to (shared by the turn's events).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<SharedStr>,
    /// Per-session sequence number; only increases.
    pub seq: u64,
    /// Emission time, ms since the epoch.
    pub timestamp: i64,
    /// Type and payload.
    #[serde(flatten)]
    pub body: EventBody,
}

/// Event types and payloads.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", content = "payload")]
pub enum EventBody {
    /// A turn began.
    #[serde(rename = "turn.started")]
    TurnStarted(TurnStartedPayload),
    /// Model output.
    #[serde(rename = "model.streaming")]
    ModelStreaming(ModelStreamingPayload),
    /// A tool call changed state.
    #[serde(rename = "tool.updated")]
    ToolUpdated(ToolUpdatedPayload),
    /// A turn ended (success or cancelled).
    #[serde(rename = "turn.completed")]
    TurnCompleted(TurnCompletedPayload),
    /// A turn failed.
    #[serde(rename = "turn.failed")]
    TurnFailed(TurnFailedPayload),
    /// Session state changed (usage, todos, mode, compaction).
    #[serde(rename = "session.updated")]
    SessionUpdated(SessionUpdatedPayload),
}

/// `turn.started` payload.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnStartedPayload {
    /// 1-based turn number in the session.
    pub turn_number: u32,
    /// The prompt.
    pub input: String,
    /// The client's input id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_id: Option<String>,
    /// `user`, or `subagent` on a sub-agent's session.
    pub input_source: &'static str,
    /// Always `agent`.
    pub execution_kind: &'static str,
}

/// `model.streaming` payload.
#[derive(Debug, Clone, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ModelStreamingPayload {
    /// Answer text.
    TextDelta {
        /// The text.
        delta: String,
    },
    /// Reasoning text.
    ReasoningDelta {
        /// The text.
        delta: String,
    },
    /// A complete tool call.
    ToolCall {
        /// Call id.
        tool_call_id: String,
        /// Tool name.
        tool_name: String,
        /// Arguments.
        input: Value,
    },
}

/// A tool result object.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultBody {
    /// Always true here (failures are `error` updates).
    pub success: bool,
    /// Output text.
    pub content: String,
    /// Output was cut.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// Secrets were removed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
    /// Files changed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed_files: Vec<String>,
    /// A sandbox block, hook decisions, the sub-agent's session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<ToolMeta>,
}

/// A tool error object.
#[derive(Debug, Clone, Serialize)]
pub struct ToolErrorBody {
    /// `tool_error`, `permission_denied`, `hook_denied` or `sandbox_denied`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Error text.
    pub message: String,
    /// A machine-readable code: the sandbox block's (`sandbox`, `network`, …) or
    /// `hook_denied`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The sandbox block, the hook decisions, the sub-agent's session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<ToolMeta>,
}

/// What the server knows about a tool call beyond its output: tool metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolMeta {
    /// What the sandbox refused while the call ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<WireBlock>,
    /// Hook decisions about the call (a `before_tool` deny with its reason, an
    /// `after_tool` append or replace).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<HookNote>,
    /// The session of the sub-agent the call ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub child_session_id: Option<String>,
}

impl ToolMeta {
    /// Whether there is nothing to say.
    pub fn is_empty(&self) -> bool {
        self.block.is_none() && self.hooks.is_empty() && self.child_session_id.is_none()
    }
}

/// A sandbox block: `{code, toolName?, reason, recoverable, path?}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WireBlock {
    /// `sandbox`, `network`, …
    pub code: BlockCode,
    /// The tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// Why.
    pub reason: String,
    /// Whether the model can go on another way.
    pub recoverable: bool,
    /// The refused path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

impl From<&Block> for WireBlock {
    fn from(block: &Block) -> Self {
        Self {
            code: block.code,
            tool_name: block.tool_name.clone(),
            reason: block.reason.clone(),
            recoverable: block.recoverable,
            path: block.path.clone(),
        }
    }
}

/// The sandbox report in `session.updated`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WireSandbox {
    /// `read-only`, `workspace-write` or `off`.
    pub mode: SandboxMode,
    /// `allow` or `deny`.
    pub network: NetworkAccess,
    /// `full`, `partial` or `none`.
    pub enforced: Enforcement,
    /// The Landlock ABI in use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub landlock_abi: Option<u32>,
    /// What filters the network.
    pub network_filter: NetworkFilter,
    /// The fallback policy.
    pub fallback: SandboxFallback,
    /// Whether the fallback decides (part of the policy cannot be enforced).
    pub fallback_active: bool,
    /// What is missing and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// One line for people.
    pub summary: String,
}

impl From<&SandboxReport> for WireSandbox {
    fn from(report: &SandboxReport) -> Self {
        Self {
            mode: report.mode,
            network: report.network,
            enforced: report.enforced,
            landlock_abi: report.landlock_abi,
            network_filter: report.network_filter,
            fallback: report.fallback,
            fallback_active: report.fallback_active,
            reason: report.reason.clone(),
            summary: report.summary(),
        }
    }
}

/// The sub-agent a `tool.updated` of a `Task` call is about: `{source: "subagent",
/// agentId, agentType, background, childSessionId, description?}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentOrigin {
    /// Always `subagent`.
    pub source: &'static str,
    /// The sub-agent's task id.
    pub agent_id: String,
    /// The specialist.
    pub agent_type: String,
    /// It runs in the background.
    pub background: bool,
    /// Its session (the task id).
    pub child_session_id: String,
    /// The caller's label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `tool.updated` payload.
#[derive(Debug, Clone, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ToolUpdatedPayload {
    /// The call was scheduled.
    Scheduled {
        /// Call id.
        tool_call_id: String,
        /// Tool name.
        tool_name: String,
        /// Arguments.
        input: Value,
    },
    /// The call started running.
    Started {
        /// Call id.
        tool_call_id: String,
        /// Tool name.
        tool_name: String,
        /// Start, ms.
        started_at: i64,
    },
    /// Output from the running call.
    Progress {
        /// Call id.
        tool_call_id: String,
        /// Tool name.
        tool_name: String,
        /// Time since start, ms.
        elapsed_ms: u64,
        /// Recent stdout.
        #[serde(skip_serializing_if = "Option::is_none")]
        stdout_tail: Option<String>,
        /// Recent stderr.
        #[serde(skip_serializing_if = "Option::is_none")]
        stderr_tail: Option<String>,
        /// A status line.
        #[serde(skip_serializing_if = "Option::is_none")]
        output_preview: Option<String>,
        /// The sub-agent of a `Task` call.
        #[serde(flatten, skip_serializing_if = "Option::is_none")]
        origin: Option<SubagentOrigin>,
    },
    /// The call succeeded.
    Result {
        /// Call id.
        tool_call_id: String,
        /// Tool name.
        tool_name: String,
        /// The result.
        result: ToolResultBody,
        /// Wall time, ms.
        duration: u64,
        /// The sub-agent of a `Task` call.
        #[serde(flatten, skip_serializing_if = "Option::is_none")]
        origin: Option<SubagentOrigin>,
    },
    /// The call failed or was refused.
    Error {
        /// Call id.
        tool_call_id: String,
        /// Tool name.
        tool_name: String,
        /// The error.
        error: ToolErrorBody,
        /// Wall time, ms.
        duration: u64,
        /// The sub-agent of a `Task` call.
        #[serde(flatten, skip_serializing_if = "Option::is_none")]
        origin: Option<SubagentOrigin>,
    },
    /// All calls of one model step finished.
    Batch {
        /// The calls.
        tool_call_ids: Vec<String>,
        /// How many succeeded.
        success_count: u32,
        /// How many failed.
        error_count: u32,
    },
}

/// Token usage in events.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WireUsage {
    /// Input tokens (uncached + cache read + cache write).
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input + output.
    pub total_tokens: u64,
    /// Cache read.
    pub cache_read_tokens: u64,
    /// Cache write.
    pub cache_write_tokens: u64,
    /// Reasoning.
    pub reasoning_tokens: u64,
    /// Model calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_request_count: Option<u32>,
}

/// `turn.completed` payload.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnCompletedPayload {
    /// The final answer text.
    pub response: String,
    /// Tokens used by the turn.
    pub token_count: u64,
    /// Usage of the turn.
    pub usage: WireUsage,
    /// Tool calls made.
    pub tool_call_count: u32,
    /// Wall time, ms.
    pub duration: u64,
    /// `success` or `cancelled`.
    pub result_type: &'static str,
    /// The client's input id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_id: Option<String>,
}

/// A turn error.
#[derive(Debug, Clone, Serialize)]
pub struct TurnError {
    /// Category.
    #[serde(rename = "type")]
    pub kind: String,
    /// Message.
    pub message: String,
    /// Machine-readable code.
    pub code: String,
}

/// `turn.failed` payload.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnFailedPayload {
    /// The error.
    pub error: TurnError,
    /// Where it failed.
    pub turn_phase: &'static str,
    /// The client's input id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_id: Option<String>,
}

/// Compaction progress in `session.updated`.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionUpdate {
    /// `running`, `completed`, `failed` or `cancelled`.
    pub state: &'static str,
    /// The operation id from the compact result (the turn's id).
    pub operation_id: String,
    /// Error text when failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Whether it happens on its own inside a prompt (`auto` or `overflow`) rather than
    /// on `session/compact`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto: Option<bool>,
    /// `auto`, `manual` or `overflow`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    /// Context tokens before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<u64>,
    /// Context tokens after (estimated).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<u64>,
}

/// `session.updated` payload.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionUpdatedPayload {
    /// Usage of the last model call (`inputTokens` = context used).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<WireUsage>,
    /// Context window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Context used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_used: Option<u64>,
    /// All tokens so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_token_count: Option<u64>,
    /// The checklist.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub todos: Option<Vec<Todo>>,
    /// New mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<WireMode>,
    /// Compaction running or finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactionUpdate>,
    /// What the sandbox enforces (once the agent ran a prompt that confines commands).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<WireSandbox>,
    /// A background task (a sub-agent): its id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The background task's status: `running`, `completed`, `failed` or `cancelled`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<&'static str>,
    /// The `Task` call that started the background task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The background task's tool (`Task`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The background task's label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The end of the background task's output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tail: Option<String>,
}

// ---------------------------------------------------------------------------------------
// Server → client requests
// ---------------------------------------------------------------------------------------

/// Method of a permission request.
pub const REQUEST_PERMISSION: &str = "interaction/requestPermission";
/// Method of a user input request.
pub const REQUEST_USER_INPUT: &str = "interaction/requestUserInput";
/// Method of an event notification.
pub const SESSION_EVENT: &str = "session/event";
/// Method of the startup notification.
pub const STORAGE_STATE: &str = "startup/storageState";

/// A permission decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Run it.
    Allow,
    /// Don't.
    Deny,
    /// Ask someone else (treated as deny).
    Escalate,
    /// Run with modified input (not supported: treated as deny).
    Modify,
}

/// A rule in a permission update.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRule {
    /// Tool name.
    #[serde(default)]
    pub tool_name: String,
    /// Rule content (absent: the whole tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_content: Option<String>,
}

/// A permission update carried by an "always" reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionUpdate {
    /// `addRules`.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// `allow` or `deny`.
    #[serde(default)]
    pub behavior: String,
    /// The rules.
    #[serde(default)]
    pub rules: Vec<PermissionRule>,
}

/// The client's reply to `interaction/requestPermission` (also each option's `response`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionResponse {
    /// The decision.
    pub decision: Decision,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Modified arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_input: Option<Value>,
    /// Rules to add.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_updates: Option<Vec<PermissionUpdate>>,
}

/// One option of a permission request.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    /// `allow_once`, `allow_always` or `deny`.
    pub option_id: &'static str,
    /// Option kind.
    pub kind: &'static str,
    /// Label.
    pub name: String,
    /// The exact reply to send for this option.
    pub response: PermissionResponse,
}

/// `interaction/requestPermission` params.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestPermissionParams {
    /// Stable id of this request (re-announces keep it).
    pub request_id: String,
    /// Session id.
    pub session_id: String,
    /// Turn id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// Call id.
    pub tool_call_id: String,
    /// Tool name.
    pub tool_name: String,
    /// Why approval is needed.
    pub reason: String,
    /// `low`, `medium`, `high` or `critical`.
    pub risk_level: &'static str,
    /// Arguments.
    pub input: Value,
    /// The choices.
    pub options: Vec<PermissionOption>,
}

/// An option of a question.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionOption {
    /// Value.
    pub value: String,
    /// Label.
    pub label: String,
}

/// A question for the user.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    /// The question.
    pub question: String,
    /// A short header.
    pub header: String,
    /// Choices.
    pub options: Vec<QuestionOption>,
    /// Several may be picked.
    pub multi_select: bool,
}

/// `interaction/requestUserInput` params.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestUserInputParams {
    /// Stable id of this request.
    pub request_id: String,
    /// Session id.
    pub session_id: String,
    /// Turn id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// Call id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Tool name (`ExitPlanMode` or `AskUserQuestion`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// Questions (AskUserQuestion).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub questions: Option<Vec<Question>>,
    /// Input (`{plan}` for plan approval).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<PlanInput>,
    /// `{interaction: "plan_approval"}` for plan approval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<InteractionSchema>,
}

/// The input of a plan approval: `{"plan": …}`.
#[derive(Debug, Clone, Serialize)]
pub struct PlanInput {
    /// The plan, in Markdown.
    pub plan: String,
}

/// What kind of user input is asked: `{"interaction": "plan_approval"}`.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct InteractionSchema {
    /// Always `plan_approval`.
    pub interaction: &'static str,
}

/// The `data` of an invalid-params error, as the upstream server's zod validation reports
/// it: `{"name": "ZodError", "message": "<the issues, as a JSON string>"}`.
#[derive(Debug, Clone, Serialize)]
pub struct ZodErrorData {
    /// Always `ZodError`.
    pub name: &'static str,
    /// The [`ZodIssue`]s, serialised as a JSON array.
    pub message: String,
}

/// One issue of a [`ZodErrorData`].
#[derive(Debug, Clone, Serialize)]
pub struct ZodIssue<'a> {
    /// The failing path (`(root)` for the params themselves).
    pub path: &'a str,
    /// What is wrong.
    pub message: &'a str,
}

/// The `data` of a model error: `{"name": "ModelProtocolError", "code": …}`.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ModelErrorData {
    /// Always `ModelProtocolError`.
    pub name: &'static str,
    /// E.g. `model_not_found`.
    pub code: &'static str,
}

/// User input reply actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UserInputAction {
    /// Answered.
    Accept,
    /// Refused.
    Decline,
    /// Dismissed.
    Cancel,
}

/// The client's reply to `interaction/requestUserInput`.
#[derive(Debug, Clone, Deserialize)]
pub struct UserInputResponse {
    /// What the user did.
    pub action: UserInputAction,
    /// Answers.
    #[serde(default)]
    pub content: Option<Value>,
    /// Why.
    #[serde(default)]
    pub reason: Option<String>,
}

/// `startup/storageState` params (sent once, `phase: ready`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StorageStateParams {
    /// Always 1.
    pub schema_version: u32,
    /// Startup attempt id.
    pub attempt_id: String,
    /// Sequence of this notification.
    pub sequence: u32,
    /// Database id.
    pub database_id: String,
    /// `session`.
    pub database_kind: &'static str,
    /// `ready`.
    pub phase: &'static str,
    /// Time since start, ms.
    pub elapsed_ms: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn event_envelope_flattens_type_and_payload() {
        let event = SessionEvent {
            event_id: "evt_1".into(),
            session_id: "sess_1".into(),
            turn_id: None,
            seq: 3,
            timestamp: 5,
            body: EventBody::ModelStreaming(ModelStreamingPayload::TextDelta {
                delta: "hi".into(),
            }),
        };
        assert_eq!(
            serde_json::to_value(&event).expect("serialise"),
            json!({"eventId": "evt_1", "sessionId": "sess_1", "seq": 3, "timestamp": 5,
                   "type": "model.streaming", "payload": {"kind": "text_delta", "delta": "hi"}})
        );
    }

    #[test]
    fn an_event_notification_is_the_same_line_as_the_generic_one() {
        let events = [
            SessionEvent {
                event_id: "evt_1".into(),
                session_id: "sess_1".into(),
                turn_id: Some("turn_1".into()),
                seq: 3,
                timestamp: 5,
                body: EventBody::ModelStreaming(ModelStreamingPayload::TextDelta {
                    delta: "h\"i\n\u{1}é".into(),
                }),
            },
            SessionEvent {
                event_id: "evt_2".into(),
                session_id: "sess_1".into(),
                turn_id: None,
                seq: 4,
                timestamp: 6,
                body: EventBody::ModelStreaming(ModelStreamingPayload::ToolCall {
                    tool_call_id: "c".into(),
                    tool_name: "bash".into(),
                    input: json!({"z": 1, "a": [1.5, null, "x"]}),
                }),
            },
        ];
        for event in &events {
            let generic = Outgoing::Notification {
                method: SESSION_EVENT.to_string(),
                params: serde_json::to_value(event).expect("value"),
            };
            assert_eq!(
                serde_json::to_string(&EventNotification::new(event)).expect("direct"),
                serde_json::to_string(&generic).expect("generic")
            );
        }
    }

    #[test]
    fn tool_parts_and_states_use_camel_case() {
        let part = Part {
            part_id: "p".into(),
            session_id: "s".into(),
            message_id: "m".into(),
            body: PartBody::Tool {
                call_id: "c".into(),
                tool: "bash".into(),
                state: ToolState::Running {
                    input: json!({}),
                    started_at: 7,
                },
            },
        };
        assert_eq!(
            serde_json::to_value(&part).expect("serialise"),
            json!({"partId": "p", "sessionId": "s", "messageId": "m", "type": "tool",
                   "callId": "c", "tool": "bash",
                   "state": {"status": "running", "input": {}, "startedAt": 7}})
        );
    }

    #[test]
    fn ids_round_trip_as_received() {
        let raw: RawMessage =
            serde_json::from_value(json!({"id": "a", "method": "m"})).expect("string id");
        assert_eq!(raw.id, Some(RequestId::Str("a".into())));
        let raw: RawMessage = serde_json::from_value(json!({"id": 7})).expect("int id");
        assert_eq!(serde_json::to_value(raw.id).expect("serialise"), json!(7));
        assert!(serde_json::from_value::<RawMessage>(json!({"id": 1, "jsonrpc": "2.0"})).is_err());
    }
}
