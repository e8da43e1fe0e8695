//! The plain data of the session host: what is persisted about a session, what a turn
//! reports to its observer, and what a session asks the front end's client. No behaviour
//! beyond small conversions; every other module of the session host imports these.

use agent_core::{
    event::RunKind,
    permission::{Approval, ApprovalRequest},
    tool::PlanItem,
    AbortHandle, PermissionMode, ReasoningLevel, RunStatus, Usage,
};
use agent_mcp::McpServerConfig;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::oneshot;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// A fresh id with a prefix: `<prefix>_<uuid v4>`.
pub fn new_id(prefix: &str) -> String {
    agent_core::ids::prefixed(prefix)
}

/// Context window reported when the provider does not know the model.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 200_000;

/// A session's mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionMode {
    /// Read-only planning.
    Plan,
    /// Asks before every call with side effects.
    #[default]
    Build,
    /// Workspace edits pass; risky calls ask.
    Edit,
    /// Everything pre-approved.
    Yolo,
    /// Risk-based.
    Auto,
}

impl SessionMode {
    /// The mode's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plan => "plan",
            Self::Build => "build",
            Self::Edit => "edit",
            Self::Yolo => "yolo",
            Self::Auto => "auto",
        }
    }

    /// The engine's permission mode for this session mode: `yolo` → unsafe,
    /// `build` → ask, `edit` and `auto` → auto (workspace edits pass), `plan` → plan
    /// (read-only).
    pub fn permission_mode(self) -> PermissionMode {
        match self {
            Self::Yolo => PermissionMode::Unsafe,
            Self::Build => PermissionMode::Ask,
            Self::Edit | Self::Auto => PermissionMode::Auto,
            Self::Plan => PermissionMode::Plan,
        }
    }
}

/// A session goal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Goal {
    /// The objective.
    pub objective: String,
    /// Paused goals are kept but not pursued.
    #[serde(default)]
    pub paused: bool,
    /// Set at, ms.
    pub created_at: i64,
    /// Changed at, ms.
    pub updated_at: i64,
}

/// Everything persisted about a session besides its transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionMeta {
    /// Session id (`sess_<uuid>`).
    pub session_id: String,
    /// Workspace directory.
    pub workspace_path: String,
    /// Workspace identity as the client gave it.
    pub workspace_key: String,
    /// The session this one was forked from.
    #[serde(default)]
    pub parent_session_id: Option<String>,
    /// Trace id.
    #[serde(default)]
    pub trace_id: String,
    /// Title (first 80 characters of the first prompt).
    #[serde(default)]
    pub title: String,
    /// Whether the title came from the first prompt.
    #[serde(default)]
    pub title_from_input: bool,
    /// Mode.
    #[serde(default)]
    pub mode: SessionMode,
    /// Provider id.
    pub provider_id: String,
    /// Model id.
    pub model: String,
    /// Thought (reasoning) level.
    #[serde(default)]
    pub thought_level: ReasoningLevel,
    /// Created, ms.
    pub created_at: i64,
    /// Last changed, ms.
    pub updated_at: i64,
    /// Prompts run.
    #[serde(default)]
    pub turn_count: u32,
    /// All usage so far.
    #[serde(default)]
    pub usage: Usage,
    /// Tokens of the last model call (prompt + output).
    #[serde(default)]
    pub context_used: u64,
    /// The checklist from the plan tool.
    #[serde(default)]
    pub todos: Vec<PlanItem>,
    /// The goal.
    #[serde(default)]
    pub goal: Option<Goal>,
    /// Message of the last failed turn.
    #[serde(default)]
    pub last_error: Option<String>,
    /// Only these tools (when set).
    #[serde(default)]
    pub tool_allowlist: Option<Vec<String>>,
    /// Not these tools.
    #[serde(default)]
    pub tool_denylist: Vec<String>,
    /// Set when the session is a sub-agent's: the child of a `Task` call (or another
    /// sub-agent tool) of the session named by `parent_session_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent: Option<SubagentMeta>,
    /// Whether the last compaction of the transcript happened on its own (at the
    /// threshold, or after an overflow) rather than on request; `None` before any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_compaction_auto: Option<bool>,
}

impl SessionMeta {
    /// A new session's metadata: fresh session and trace ids, created and updated now, in
    /// `workspace` (also its key), with `provider_id` and `model`; nothing else set yet.
    pub fn new(workspace: &str, provider_id: String, model: String) -> Self {
        let now = now_ms();
        Self {
            session_id: new_id("sess"),
            workspace_path: workspace.to_string(),
            workspace_key: workspace.to_string(),
            parent_session_id: None,
            trace_id: new_id("trace"),
            title: String::new(),
            title_from_input: false,
            mode: Default::default(),
            provider_id,
            model,
            thought_level: Default::default(),
            created_at: now,
            updated_at: now,
            turn_count: 0,
            usage: Usage::default(),
            context_used: 0,
            todos: Vec::new(),
            goal: None,
            last_error: None,
            tool_allowlist: None,
            tool_denylist: Vec::new(),
            subagent: None,
            last_compaction_auto: None,
        }
    }

    /// Whether this is a sub-agent's session.
    pub fn is_subagent(&self) -> bool {
        self.subagent.is_some()
    }
}

/// How a sub-agent's session stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubagentStatus {
    /// Its run is going on.
    Running,
    /// It answered.
    Completed,
    /// It failed.
    Failed,
    /// It was stopped (its parent's run was aborted, or the task was stopped), or the
    /// process ended while it ran.
    Cancelled,
}

impl SubagentStatus {
    /// The canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// The status of a child run that ended with `status`.
    pub fn of_run(status: RunStatus) -> Self {
        match status {
            RunStatus::Success => Self::Completed,
            RunStatus::Error => Self::Failed,
            RunStatus::Aborted => Self::Cancelled,
        }
    }
}

/// What a sub-agent's session records about the sub-agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentMeta {
    /// The sub-agent's name (the specialist).
    pub name: String,
    /// The caller's short label for the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The parent's tool call that started it.
    pub call_id: String,
    /// Whether it runs in the background.
    #[serde(default)]
    pub background: bool,
    /// How deep it is nested (1: a child of a top-level session).
    #[serde(default)]
    pub depth: u32,
    /// Where it stands.
    pub status: SubagentStatus,
    /// Its final answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_text: Option<String>,
    /// What ended it, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time of its run, ms (once finished).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// Options of a new session.
#[derive(Debug, Clone, Default)]
pub struct CreateOptions {
    /// Workspace directory.
    pub workspace_path: String,
    /// Workspace identity (defaults to the path).
    pub workspace_key: Option<String>,
    /// Mode (default build).
    pub mode: Option<SessionMode>,
    /// Model (default: the factory's).
    pub model: Option<String>,
    /// Thought level (default medium).
    pub thought_level: Option<ReasoningLevel>,
    /// Parent session.
    pub parent_session_id: Option<String>,
    /// Only these tools.
    pub tool_allowlist: Option<Vec<String>>,
    /// Not these tools.
    pub tool_denylist: Vec<String>,
    /// MCP servers of this session, connected (with the factory's own, concurrently, each
    /// bounded by its timeout) when the session is created; a server that fails is skipped
    /// and reported by [`Session::mcp`](super::Session::mcp)`.status()`.
    pub mcp_servers: Vec<McpServerConfig>,
}

/// Options of a session made active again ([`SessionManager::resume_with`](super::SessionManager::resume_with)).
/// They apply only when the session is loaded now, not when it is active already.
#[derive(Debug, Clone, Default)]
pub struct ResumeOptions {
    /// MCP servers of this session (they are never stored: a resumed session has the
    /// servers its client passes again, plus the factory's).
    pub mcp_servers: Vec<McpServerConfig>,
}

pub use crate::turn::{HookNote, ToolCallState, ToolCallStatus};

/// The running turn.
#[derive(Debug, Clone)]
pub struct ActiveTurn {
    /// Turn id (`turn_<uuid>`).
    pub turn_id: String,
    /// Prompt or compaction.
    pub kind: RunKind,
    /// Started, ms.
    pub started_at: i64,
    /// Stops the turn's run (none for a sub-agent's session, whose run its parent drives).
    pub(super) abort: Option<AbortHandle>,
}

/// Facts about a turn, given to the observer.
#[derive(Debug, Clone)]
pub struct TurnInfo {
    /// Turn id.
    pub turn_id: String,
    /// Prompt or compaction.
    pub kind: RunKind,
    /// 1-based prompt number in the session (for compaction: the count so far).
    pub number: u32,
    /// The prompt text (empty for compaction).
    pub input: String,
    /// The client's input id.
    pub input_id: Option<String>,
    /// Started, ms.
    pub started_at: i64,
}

pub use crate::turn::TurnOutcome;

/// A second turn was started while one runs.
#[derive(Debug, Clone, thiserror::Error)]
#[error("prompt is running: a prompt is already running in session {session_id} (turn {turn_id})")]
pub struct Busy {
    /// The session.
    pub session_id: String,
    /// The running turn.
    pub turn_id: String,
}

/// A choice offered with a question.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionSpec {
    /// The question.
    pub question: String,
    /// A short header.
    pub header: String,
    /// Choices as `(value, label)`.
    pub options: Vec<(String, String)>,
    /// Several may be picked.
    pub multi_select: bool,
}

/// A request for user input (plan approval or questions).
#[derive(Debug, Clone, PartialEq)]
pub struct UserInputRequest {
    /// The tool call asking.
    pub call_id: Option<String>,
    /// The asking tool's protocol name (`ExitPlanMode`, `AskUserQuestion`).
    pub tool_name: String,
    /// A plan to approve.
    pub plan: Option<String>,
    /// Questions to answer.
    pub questions: Vec<QuestionSpec>,
}

/// What the user answered.
#[derive(Debug, Clone, PartialEq)]
pub enum UserInputAnswer {
    /// Accepted, with the answer content.
    Accepted(Value),
    /// Declined, with a reason.
    Declined(Option<String>),
    /// Dismissed or cancelled.
    Cancelled,
}

/// What is asked.
#[derive(Debug, Clone, PartialEq)]
pub enum InteractionKind {
    /// A permission prompt.
    Permission(ApprovalRequest),
    /// A user input request.
    UserInput(UserInputRequest),
}

/// The answer to an interaction.
#[derive(Debug, Clone, PartialEq)]
pub enum InteractionReply {
    /// To a permission prompt.
    Permission(Approval),
    /// To a user input request.
    UserInput(UserInputAnswer),
}

/// A question from a session's agent for the front end's client. Dropping `reply`
/// without sending means "cancelled".
#[derive(Debug)]
pub struct InteractionRequest {
    /// The session asking.
    pub session_id: String,
    /// Its running turn.
    pub turn_id: Option<String>,
    /// What is asked.
    pub kind: InteractionKind,
    /// Where the answer goes.
    pub reply: oneshot::Sender<InteractionReply>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_map_to_permission_modes() {
        assert_eq!(SessionMode::Yolo.permission_mode(), PermissionMode::Unsafe);
        assert_eq!(SessionMode::Build.permission_mode(), PermissionMode::Ask);
        assert_eq!(SessionMode::Edit.permission_mode(), PermissionMode::Auto);
        assert_eq!(SessionMode::Plan.permission_mode(), PermissionMode::Plan);
        assert_eq!(
            serde_json::to_value(SessionMode::Auto).ok(),
            Some(Value::from("auto"))
        );
    }
}
