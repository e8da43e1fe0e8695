//! The full state of a session (`Snapshot`): its info, settings, projection, runtime
//! state and checklist.

use serde::Serialize;

use super::{MessageWithParts, ModelRef, WireMode, WorkspaceRef};

/// `{name, version}` of the protocol.
#[derive(Debug, Clone, Serialize)]
pub struct ProtocolInfo {
    /// [`PROTOCOL_NAME`](super::PROTOCOL_NAME).
    pub name: &'static str,
    /// [`PROTOCOL_VERSION`](super::PROTOCOL_VERSION).
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
    pub session_kind: SessionKind,
    /// Title (first 80 characters of the first prompt).
    pub title: String,
    /// `default`, `first_input` or `custom`.
    pub title_source: TitleSource,
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
    pub mode: WirePermissionMode,
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
    pub status: ActiveToolStatus,
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
    pub kind: JobKind,
    /// The specialist.
    pub agent_type: String,
    /// The caller's label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The `Task` call that started it.
    pub tool_call_id: String,
    /// `running`, `completed`, `failed` or `cancelled`.
    pub status: TaskStatus,
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
    pub active_turn_kind: Option<TurnKind>,
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
    pub status: TodoStatus,
    /// Always `medium`: the plan tool has no priorities.
    pub priority: TodoPriority,
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
    /// The slash commands of the session's workspace (left out when there are none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub slash_commands: Vec<SlashCommand>,
}

/// A slash command a client can offer: `/name args` sent as a prompt runs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SlashCommand {
    /// Its name, without the `/`.
    pub name: String,
    /// What it does.
    pub description: String,
    /// What its arguments are, for a command that takes some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
}

/// What made a session: `interactive`, `fork` or `subagent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionKind {
    /// Created by the client.
    Interactive,
    /// A fork of another session.
    Fork,
    /// A sub-agent's session.
    Subagent,
}

/// Where a session's title comes from: `default`, `first_input` or `custom`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TitleSource {
    /// The default title.
    Default,
    /// The first prompt.
    FirstInput,
    /// Set by the client.
    Custom,
}

/// The engine's permission mode: `ask`, `auto`, `plan` or `unsafe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WirePermissionMode {
    /// Asks before side effects.
    Ask,
    /// Risk-based.
    Auto,
    /// Read-only.
    Plan,
    /// Everything pre-approved.
    Unsafe,
}

impl From<agent_core::PermissionMode> for WirePermissionMode {
    fn from(mode: agent_core::PermissionMode) -> Self {
        match mode {
            agent_core::PermissionMode::Ask => Self::Ask,
            agent_core::PermissionMode::Auto => Self::Auto,
            agent_core::PermissionMode::Plan => Self::Plan,
            agent_core::PermissionMode::Unsafe => Self::Unsafe,
        }
    }
}

/// The status of a tool call in flight: `pending` or `running`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ActiveToolStatus {
    /// Not started yet.
    Pending,
    /// Running.
    Running,
}

/// What a background job is: always `subagent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum JobKind {
    /// A `Task` tool's sub-agent.
    Subagent,
}

/// The status of a background task or sub-agent: `running`, `completed`, `failed` or `cancelled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskStatus {
    /// It runs.
    Running,
    /// It answered.
    Completed,
    /// It failed.
    Failed,
    /// It was stopped.
    Cancelled,
}

impl TaskStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

impl From<agent_host::session::SubagentStatus> for TaskStatus {
    fn from(status: agent_host::session::SubagentStatus) -> Self {
        use agent_host::session::SubagentStatus;
        match status {
            SubagentStatus::Running => Self::Running,
            SubagentStatus::Completed => Self::Completed,
            SubagentStatus::Failed => Self::Failed,
            SubagentStatus::Cancelled => Self::Cancelled,
        }
    }
}

/// What the running turn is: `agent` (a prompt) or `compact`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TurnKind {
    /// A prompt.
    Agent,
    /// A compaction.
    Compact,
}

/// The status of a todo item: `pending`, `in_progress` or `completed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// A todo item's priority: always `medium` (the plan tool has none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TodoPriority {
    /// The only one.
    Medium,
}
