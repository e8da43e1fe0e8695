//! Session requests and results: create, list, resume, read, messages, subscribe, events,
//! fork, the settings, sub-agents, background tasks and close.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{MessageWithParts, SessionInfo, Snapshot, TaskStatus, WireUsage};

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
    /// `desktop-continuous` or `web-remote-replayable` (any other text is accepted).
    #[serde(default)]
    pub delivery_kind: Option<DeliveryKind>,
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

/// Fork targets (and `session/rewind`'s: [`RewindTarget`](super::RewindTarget)).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ForkTarget {
    /// The whole transcript.
    LatestCheckpoint,
    /// Everything before the call that made a checkpoint (a checkpoint is named by its
    /// call's id).
    #[serde(rename_all = "camelCase")]
    Checkpoint {
        /// The checkpoint's id.
        checkpoint_id: String,
    },
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
    pub status: TaskStatus,
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
    pub status: CancelStatus,
    /// The task.
    pub task_id: String,
}

/// A background task's status after `session/cancelBackgroundTask`: `cancelled`, `completed`, `failed` or `not_found`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelStatus {
    /// It was cancelled now (or before).
    Cancelled,
    /// It had answered.
    Completed,
    /// It had failed.
    Failed,
    /// No such task.
    NotFound,
}

/// How a client takes a session's events: `desktop-continuous` or
/// `web-remote-replayable`. Informational: any other text is accepted as [`Self::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", rename_all = "kebab-case")]
pub enum DeliveryKind {
    /// A desktop client, continuously connected.
    DesktopContinuous,
    /// A web client that replays after reconnecting.
    WebRemoteReplayable,
    /// Any other value, as sent.
    #[serde(untagged)]
    Other(String),
}

impl From<String> for DeliveryKind {
    fn from(text: String) -> Self {
        match text.as_str() {
            "desktop-continuous" => Self::DesktopContinuous,
            "web-remote-replayable" => Self::WebRemoteReplayable,
            _ => Self::Other(text),
        }
    }
}
