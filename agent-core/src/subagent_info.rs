//! [`SubagentInfo`]: which sub-agent an agent is (re-exported by [`crate::subagent`]).

use serde::{Deserialize, Serialize};

/// Which sub-agent an agent is, and where it was started from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubagentInfo {
    /// The child's id; also its session id when it records to the parent's store.
    pub task_id: String,
    /// The sub-agent's name (a specialist's, or an `as_tool` tool's).
    pub name: String,
    /// The caller's short label for the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The parent's tool call that started it.
    pub call_id: String,
    /// The parent's session id, when the child records to the parent's session store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    /// 1 for a child of a top-level agent, 2 for a grandchild, …
    pub depth: u32,
    /// The child runs in the background.
    #[serde(default)]
    pub background: bool,
}
