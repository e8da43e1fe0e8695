//! [`RunOutcome`], what running to the end without the stream returns
//! ([`Run::finish`](crate::Run::finish), [`Agent::run`](crate::Agent::run)), and
//! [`AgentError`], the typed failure of the calls that return a result.

use serde::{Deserialize, Serialize};

use crate::event::{ErrorCode, RunStatus};
use crate::message::Message;
use crate::schema::SchemaError;
use crate::usage::Usage;

/// How a run ended, for callers that do not need its events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    /// How it ended.
    pub status: RunStatus,
    /// The final answer text (of the last assistant message with text), if any.
    pub text: Option<String>,
    /// Token usage and cost of the run's model calls, its sub-agents' included.
    pub usage: Usage,
    /// The messages the run added to the transcript, in order (the prompt, the assistant's
    /// messages, tool results, and the agent's own notes such as a recovery prompt).
    pub messages: Vec<Message>,
    /// The error that ended the run, when `status` is `error`.
    pub error: Option<RunError>,
}

impl RunOutcome {
    /// True when the run finished successfully.
    pub fn is_success(&self) -> bool {
        self.status == RunStatus::Success
    }

    /// The answer text, or why there is none.
    pub fn into_result(self) -> Result<String, AgentError> {
        match self.status {
            RunStatus::Success => self.text.ok_or(AgentError::NoAnswer),
            RunStatus::Aborted => Err(AgentError::Aborted),
            RunStatus::Error => Err(AgentError::from_run_error(self.error)),
        }
    }
}

/// The error that ended a run (the run's last fatal
/// [`AgentEvent::Error`](crate::AgentEvent::Error)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunError {
    /// Machine-readable code.
    pub code: ErrorCode,
    /// Human-readable message.
    pub message: String,
}

/// Why a call that returns a result ([`Agent::prompt_as`](crate::Agent::prompt_as),
/// [`RunOutcome::into_result`]) has none.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The run ended with an error (the provider failed, the step limit was hit, …).
    #[error("the run failed: {message}")]
    Run {
        /// Machine-readable code.
        code: ErrorCode,
        /// Human-readable message.
        message: String,
    },
    /// The run was aborted.
    #[error("the run was aborted")]
    Aborted,
    /// The run finished without answer text.
    #[error("the model gave no answer")]
    NoAnswer,
    /// The answer did not match the output schema, also after the repair turn.
    #[error("the answer does not match the output schema: {error}")]
    InvalidOutput {
        /// What did not match.
        error: SchemaError,
        /// The answer as the model gave it.
        answer: String,
    },
}

impl AgentError {
    pub(crate) fn from_run_error(error: Option<RunError>) -> Self {
        match error {
            Some(RunError { code, message }) => Self::Run { code, message },
            None => Self::Run {
                code: ErrorCode::Provider,
                message: "the run ended with an error".into(),
            },
        }
    }
}
