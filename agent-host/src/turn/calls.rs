//! One tool call as a turn's fold knows it ([`ToolCallState`]), and the hook decisions
//! about it ([`HookNote`]).

use agent_core::{
    hooks::{HookEvent, HookOutcome},
    permission::Block,
};
use serde::Serialize;
use serde_json::Value;

/// Where a tool call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolCallStatus {
    /// Proposed, not started.
    Pending,
    /// Running.
    Running,
    /// Succeeded.
    Completed,
    /// Failed, refused or not run.
    Failed,
}

impl ToolCallStatus {
    /// True once the call has its result (completed or failed).
    pub fn is_finished(self) -> bool {
        matches!(self, Self::Completed | Self::Failed)
    }
}

/// What is known about one tool call: the entry of [`TurnState`](super::TurnState)'s call
/// table, and of a session's ([`Session::tool_call`](crate::session::Session::tool_call)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallState {
    /// Tool name.
    pub name: String,
    /// Status.
    pub status: ToolCallStatus,
    /// Started, ms.
    pub started_at: Option<i64>,
    /// Finished, ms.
    pub completed_at: Option<i64>,
    /// What the sandbox refused while the call ran (the last of [`blocks`](Self::blocks)).
    pub block: Option<Block>,
    /// What hooks decided about the call (`before_tool`, `after_tool`), in order.
    pub hooks: Vec<HookNote>,
    /// The sub-agent the call ran (its task id, also its session id).
    pub subagent: Option<String>,
    /// The parsed arguments the model gave (`null` when they were not valid JSON, or not
    /// known: a session's table does not keep them).
    pub args: Value,
    /// Every sandbox block of the call, in order (a session's table keeps only
    /// [`block`](Self::block)).
    pub blocks: Vec<Block>,
    /// The permission gate refused the call (denied, or cancelled by an abort).
    pub denied: bool,
    /// The model call (1-based step of the run) that proposed it; 0 when not known.
    pub step: u32,
}

impl ToolCallState {
    /// A call just announced by the model.
    pub fn pending(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            status: ToolCallStatus::Pending,
            started_at: None,
            completed_at: None,
            block: None,
            hooks: Vec::new(),
            subagent: None,
            args: Value::Null,
            blocks: Vec::new(),
            denied: false,
            step: 0,
        }
    }

    /// The reason of the first hook that refused the call, with the hook's name.
    pub fn denied_by_hook(&self) -> Option<&HookNote> {
        self.hooks.iter().find(|h| h.outcome == HookOutcome::Deny)
    }
}

/// One hook decision about a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookNote {
    /// The hook.
    pub hook: String,
    /// Where it ran.
    pub event: HookEvent,
    /// What it decided.
    pub outcome: HookOutcome,
    /// Why (scrubbed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
