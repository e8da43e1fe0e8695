//! Running to the end without the stream ([`Run::finish`], [`Agent::run`]) and the
//! structured answers ([`Agent::prompt_as`], [`Agent::prompt_structured`]; see
//! [`crate::structured`]).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use super::{Agent, Run};
use crate::event::{AgentEvent, RunStatus};
use crate::message::UserInput;
use crate::outcome::{AgentError, RunError, RunOutcome};
use crate::schema::StrictSchema;
use crate::structured::{parse_answer, OutputSpec};
use crate::usage::Usage;

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

impl Agent {
    /// Sends a prompt whose answer must be JSON matching `T`, and returns it parsed.
    ///
    /// The run's model calls carry `T`'s schema (made strict, see [`StrictSchema`]) as the
    /// requested output format; tools stay available. An answer that does not parse as `T`
    /// gets one repair turn quoting the error; a second failure returns
    /// [`AgentError::InvalidOutput`].
    ///
    /// ```
    /// use agent_core::Agent;
    /// use agent_providers::scripted::{ScriptedProvider, Turn};
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    ///
    /// #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
    /// struct City {
    ///     name: String,
    ///     population: u64,
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let provider = ScriptedProvider::new([Turn::new().text(r#"{"name":"Paris","population":2102650}"#)]);
    /// let agent = Agent::builder(provider.clone()).build();
    /// let city: City = agent.prompt_as("The capital of France?").await.unwrap();
    /// assert_eq!(city, City { name: "Paris".into(), population: 2_102_650 });
    /// let asked = provider.requests()[0].output_schema.clone().unwrap();
    /// assert_eq!(asked.name, "City");
    /// assert_eq!(asked.schema["additionalProperties"], false);
    /// # }
    /// ```
    pub async fn prompt_as<T: DeserializeOwned + JsonSchema>(
        &self,
        input: impl Into<UserInput>,
    ) -> Result<T, AgentError> {
        let strict = Arc::new(StrictSchema::of::<T>());
        let spec = OutputSpec::from_strict::<T>(strict.clone());
        let outcome = self.prompt_structured(input, spec).finish().await;
        match outcome.status {
            RunStatus::Success => {}
            RunStatus::Aborted => return Err(AgentError::Aborted),
            RunStatus::Error => return Err(AgentError::from_run_error(outcome.error)),
        }
        let answer = outcome.text.ok_or(AgentError::NoAnswer)?;
        parse_answer(&strict, &answer).map_err(|error| AgentError::InvalidOutput { error, answer })
    }

    /// Sends a prompt whose answer must pass `output`; the [`Run`] streams as usual. The
    /// run ends `success` with the last answer even when it still fails the check after
    /// the repair turn: the caller checks it again and decides.
    pub fn prompt_structured(&self, input: impl Into<UserInput>, output: OutputSpec) -> Run {
        self.prompt_with(input.into(), Some(Arc::new(output)))
    }
}
