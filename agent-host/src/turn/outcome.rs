//! [`TurnOutcome`]: how a turn (one run of the agent) ended, the one outcome type of the
//! front ends, as [`TurnState::outcome`](super::TurnState::outcome) sums it up.

use agent_core::{event::ErrorCode, RunError, RunStatus, Usage};

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    /// Status of the run.
    pub status: RunStatus,
    /// Final answer text.
    pub final_text: Option<String>,
    /// The fatal error, when the run failed.
    pub error: Option<(ErrorCode, String)>,
    /// Usage of the turn's model calls, its sub-agents' included.
    pub usage: Usage,
    /// Model calls made (the agent's own, not its sub-agents').
    pub model_calls: u32,
    /// Tool calls made (the agent's own).
    pub tool_calls: u32,
    /// Wall time, ms (0 from a fold: the session host measures it).
    pub duration_ms: u64,
    /// Compaction summary.
    pub summary: Option<String>,
}

impl Default for TurnOutcome {
    /// An aborted turn that did nothing: what a turn reports when its run ends without
    /// a [`RunFinished`](agent_core::AgentEvent::RunFinished).
    fn default() -> Self {
        Self {
            status: RunStatus::Aborted,
            final_text: None,
            error: None,
            usage: Usage::default(),
            model_calls: 0,
            tool_calls: 0,
            duration_ms: 0,
            summary: None,
        }
    }
}

impl TurnOutcome {
    /// True when the run finished successfully.
    pub fn is_success(&self) -> bool {
        self.status == RunStatus::Success
    }

    /// The fatal error as agent-core's [`RunError`] (what
    /// [`RunOutcome::error`](agent_core::RunOutcome::error) holds).
    pub fn run_error(&self) -> Option<RunError> {
        self.error.as_ref().map(|(code, message)| RunError {
            code: *code,
            message: message.clone(),
        })
    }
}
