//! [`RunStatus`]: how a run ended (re-exported by [`crate::event`]).

use serde::{Deserialize, Serialize};

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The model finished (or the compaction succeeded).
    Success,
    /// An error ended the run; an [`AgentEvent::Error`](crate::AgentEvent::Error) preceded this.
    Error,
    /// The run was aborted.
    Aborted,
}
