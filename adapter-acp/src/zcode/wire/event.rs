//! `session/event` payloads: turns, model output, tool calls and session updates.

use std::sync::Arc;

use agent_core::permission::{Block, BlockCode};
use agent_core::sandbox::{
    Enforcement, NetworkAccess, NetworkFilter, SandboxFallback, SandboxMode, SandboxReport,
};
use agent_host::session::HookNote;
use serde::Serialize;
use serde_json::Value;

use super::{TaskStatus, Todo, WireMode};

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
    /// A call's permission was decided without asking the client: by a permission rule, or
    /// by the session's "always allow" answer.
    #[serde(rename = "permission.resolved")]
    PermissionResolved(PermissionResolvedPayload),
    /// The session's files and transcript went back to a checkpoint (`session/rewind`).
    #[serde(rename = "rewind.triggered")]
    RewindTriggered(super::RewindTriggeredPayload),
}

/// `permission.resolved` payload: the decision and where it came from.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionResolvedPayload {
    /// The call.
    pub tool_call_id: String,
    /// Its tool.
    pub tool_name: String,
    /// `allow` or `deny` (a rule that asks reaches the client as a permission request).
    pub decision: super::Decision,
    /// Why, in words (`permission rule allow Bash(git status:*) (settings …)`).
    pub reason: String,
    /// What decided: `rule` (a settings or SDK rule, a grant) or `session` (an "always
    /// allow" answer of this session).
    pub decision_source: DecisionSource,
    /// The rule as written, its list and its source.
    pub rule: agent_core::permission::rules::DecidingRule,
}

/// What decided a permission without the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DecisionSource {
    /// A permission rule.
    Rule,
    /// The session's "always allow" answer.
    Session,
}

/// `session.updated.modelFallback`: a model call failed and was made again with the
/// fallback model.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelFallbackUpdate {
    /// The model that failed.
    pub from: String,
    /// The fallback model.
    pub to: String,
    /// The failure.
    pub reason: String,
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
    pub input_source: InputSource,
    /// Always `agent`.
    pub execution_kind: ExecutionKind,
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
    pub kind: ToolErrorKind,
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
    pub source: OriginSource,
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
    pub result_type: ResultType,
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
    /// Where it failed: always `execution`.
    pub turn_phase: TurnPhase,
    /// The client's input id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_id: Option<String>,
}

/// Compaction progress in `session.updated`.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionUpdate {
    /// `running`, `completed`, `failed` or `cancelled`.
    pub state: CompactionState,
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
    pub reason: Option<WireCompactionReason>,
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
    pub status: Option<TaskStatus>,
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
    /// A model call failed and was made again with the fallback model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_fallback: Option<ModelFallbackUpdate>,
}

/// Where a turn's input comes from: `user`, or `subagent` on a sub-agent's session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum InputSource {
    /// The client.
    User,
    /// The parent's `Task` call.
    Subagent,
}

/// How a turn runs: always `agent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutionKind {
    /// The agent loop.
    Agent,
}

/// A tool error's type: `tool_error`, `permission_denied`, `hook_denied` or `sandbox_denied`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolErrorKind {
    /// The tool failed.
    ToolError,
    /// The call was not approved.
    PermissionDenied,
    /// A hook vetoed it.
    HookDenied,
    /// The sandbox refused it.
    SandboxDenied,
}

/// Who a `Task` call's updates are about: always `subagent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OriginSource {
    /// The sub-agent.
    Subagent,
}

/// How a turn ended: `success` or `cancelled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ResultType {
    /// It ran to its end.
    Success,
    /// It was stopped.
    Cancelled,
}

/// Where a turn failed: always `execution`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TurnPhase {
    /// While it ran.
    Execution,
}

/// A compaction's state: `running`, `completed`, `failed` or `cancelled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CompactionState {
    /// It runs.
    #[default]
    Running,
    /// It finished.
    Completed,
    /// It failed.
    Failed,
    /// It was stopped.
    Cancelled,
}

/// Why a compaction ran: `auto`, `manual` or `overflow`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WireCompactionReason {
    /// The context crossed the threshold.
    Auto,
    /// `session/compact` asked for it.
    Manual,
    /// The model refused an overfull context.
    Overflow,
}
