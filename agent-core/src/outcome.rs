//! Running to the end without the stream: [`Run::finish`], [`Agent::run`], [`RunOutcome`],
//! and [`AgentError`], the typed failure of the calls that return a result.

use serde::{Deserialize, Serialize};

use crate::agent::{Agent, Run};
use crate::event::{AgentEvent, ErrorCode, RunStatus};
use crate::message::{Message, UserInput};
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

/// The error that ended a run (the run's last fatal [`AgentEvent::Error`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunError {
    /// Machine-readable code.
    pub code: ErrorCode,
    /// Human-readable message.
    pub message: String,
}

/// Why a call that returns a result ([`Agent::prompt_as`], [`RunOutcome::into_result`])
/// has none.
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

impl Run {
    /// Waits for the run to finish and sums it up, for callers that do not need the
    /// stream. The text, usage and error come from the events not yet taken from the
    /// stream (all of them, when nothing was read); the messages are always all of the
    /// run's.
    ///
    /// ```
    /// use agent_core::{Agent, RunStatus};
    /// use agent_providers::scripted::{ScriptedProvider, Turn};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let agent = Agent::builder(ScriptedProvider::new([Turn::new().text("Hi!").usage(12, 3)])).build();
    /// let outcome = agent.prompt("Say hi.").finish().await;
    /// assert_eq!(outcome.status, RunStatus::Success);
    /// assert_eq!(outcome.text.as_deref(), Some("Hi!"));
    /// assert_eq!((outcome.usage.input, outcome.usage.output), (12, 3));
    /// assert_eq!(outcome.messages.len(), 2); // the prompt and the answer
    /// assert!(outcome.error.is_none());
    /// # }
    /// ```
    pub async fn finish(mut self) -> RunOutcome {
        let mut status = RunStatus::Aborted;
        let mut text = None;
        let mut usage = Usage::default();
        let mut error = None;
        let mut events = Vec::new();
        loop {
            events.clear();
            if self.recv_many(&mut events, usize::MAX).await == 0 {
                break;
            }
            for event in events.drain(..) {
                match event {
                    AgentEvent::Usage { turn, .. } => usage += &turn,
                    // A sub-agent's model calls count too (its usage is the parent's).
                    AgentEvent::Subagent { .. } => {
                        if let AgentEvent::Usage { turn, .. } = event.innermost() {
                            usage += turn;
                        }
                    }
                    AgentEvent::Error {
                        code,
                        message,
                        recoverable: false,
                    } => error = Some(RunError { code, message }),
                    AgentEvent::RunFinished {
                        status: s,
                        final_text,
                    } => {
                        status = s;
                        text = final_text;
                    }
                    _ => {}
                }
            }
        }
        let messages = std::mem::take(&mut *self.log.lock().unwrap_or_else(|e| e.into_inner()));
        RunOutcome {
            status,
            text,
            usage,
            messages,
            error,
        }
    }
}

impl Agent {
    /// Sends a prompt and waits for the run to finish: [`Agent::prompt`] followed by
    /// [`Run::finish`].
    ///
    /// ```
    /// use agent_core::Agent;
    /// use agent_providers::scripted::{ScriptedProvider, Turn};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let agent = Agent::builder(ScriptedProvider::new([Turn::new().text("Paris.")])).build();
    /// let answer = agent.run("Capital of France?").await.into_result();
    /// assert_eq!(answer.as_deref(), Ok("Paris."));
    /// # }
    /// ```
    pub async fn run(&self, input: impl Into<UserInput>) -> RunOutcome {
        self.prompt(input).finish().await
    }
}
