//! The end of a run as Zero reports it: the terminal lines ([`Terminal`]) and the session's
//! last record ([`EndRecord`]), both read from the turn's one outcome,
//! [`TurnOutcome`] (a signal makes it `aborted`), plus what only stream-json knows: whether
//! the output token limit cut an answer, and why an answer fails `--output-schema`.

use agent_core::{event::ErrorCode, RunStatus};
use agent_host::turn::TurnOutcome;

use crate::wire::{ErrorEvent, EventBody, FinalEvent, RunEnd, WarningEvent};

/// Exit codes and their `run_end.status`.
pub mod exit {
    /// Success.
    pub const SUCCESS: i32 = 0;
    /// Crash (stdout write failure); no protocol guarantee.
    pub const CRASH: i32 = 1;
    /// Usage error.
    pub const USAGE: i32 = 2;
    /// Provider or runtime error.
    pub const PROVIDER: i32 = 3;
    /// The run stopped with work unfinished.
    pub const INCOMPLETE: i32 = 4;
    /// Interrupted by a signal.
    pub const INTERRUPTED: i32 = 130;
}

/// The `error` a run ends with on Zero's wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RunError {
    /// The step limit stopped the run: `final`, `error{incomplete}`, `run_end{incomplete}`.
    Incomplete,
    /// The spend cap stopped the run: `final`, `error{budget_exceeded}`,
    /// `run_end{incomplete}` (exit 4: a clean stop with work unfinished).
    Budget,
    /// A provider or runtime error: `error{provider_error}`, `run_end{error}`.
    Provider,
    /// The final answer does not match `--output-schema` (after the repair turn):
    /// `error{output_schema_error}`, `run_end{error}`.
    OutputSchema,
    /// A signal or an abort: `error{interrupted}`, `run_end{interrupted}`.
    Interrupted,
}

impl RunError {
    /// The error of a run that ended with `outcome`, with its message (none for a success).
    /// `invalid_output`: why the answer of a successful run fails `--output-schema`.
    fn of<'a>(
        outcome: &'a TurnOutcome,
        invalid_output: Option<&'a str>,
    ) -> Option<(Self, &'a str)> {
        match outcome.status {
            RunStatus::Aborted => Some((Self::Interrupted, "run cancelled by signal")),
            RunStatus::Error => Some(match &outcome.error {
                Some((ErrorCode::MaxSteps, message)) => (Self::Incomplete, message.as_str()),
                Some((ErrorCode::BudgetExceeded, message)) => (Self::Budget, message.as_str()),
                Some((_, message)) => (Self::Provider, message.as_str()),
                None => (Self::Provider, "agent run failed"),
            }),
            RunStatus::Success => invalid_output.map(|message| (Self::OutputSchema, message)),
        }
    }

    fn code(self) -> &'static str {
        match self {
            Self::Incomplete => "incomplete",
            Self::Budget => "budget_exceeded",
            Self::Provider => "provider_error",
            Self::OutputSchema => "output_schema_error",
            Self::Interrupted => "interrupted",
        }
    }

    /// `run_end.status` and the exit code.
    fn end(error: Option<Self>) -> (&'static str, i32) {
        match error {
            None => ("success", exit::SUCCESS),
            Some(Self::Incomplete | Self::Budget) => ("incomplete", exit::INCOMPLETE),
            Some(Self::Provider | Self::OutputSchema) => ("error", exit::PROVIDER),
            Some(Self::Interrupted) => ("interrupted", exit::INTERRUPTED),
        }
    }
}

/// The terminal lines of a run and the process exit code.
#[derive(Debug, Clone, PartialEq)]
pub struct Terminal {
    /// The terminal events (ending with `run_end`).
    pub events: Vec<EventBody>,
    /// The process exit code.
    pub exit_code: i32,
}

impl Terminal {
    /// The terminal lines of a run that ended with `outcome`: `[warning] final run_end` for
    /// a success (the warning when `cut_by_length`: the output token limit cut an answer),
    /// `final error run_end` when the step limit stopped it, else `error run_end`.
    /// `invalid_output`: why the answer of a successful run fails `--output-schema`.
    pub fn of(outcome: &TurnOutcome, cut_by_length: bool, invalid_output: Option<&str>) -> Self {
        let error = RunError::of(outcome, invalid_output);
        let text = outcome.final_text.as_deref().unwrap_or_default();
        let mut events = Vec::with_capacity(3);
        if error.is_none() && cut_by_length {
            events.push(EventBody::Warning(WarningEvent {
                message: "The model's answer was cut off by its output token limit.".into(),
            }));
        }
        if matches!(
            error,
            None | Some((RunError::Incomplete | RunError::Budget, _))
        ) {
            events.push(EventBody::Final(FinalEvent {
                meta: None,
                text: text.into(),
            }));
        }
        if let Some((error, message)) = error {
            events.push(EventBody::Error(ErrorEvent {
                code: error.code().into(),
                message: message.into(),
                recoverable: false,
            }));
        }
        let (status, exit_code) = RunError::end(error.map(|(error, _)| error));
        events.push(EventBody::RunEnd(RunEnd {
            exit_code,
            status: status.into(),
        }));
        Self { events, exit_code }
    }
}

/// What a session records last about its run, as Zero's exec does: the answer, or why
/// there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndRecord<'a> {
    /// A `message` of the assistant: the final answer.
    Answer(&'a str),
    /// An `error` with this message.
    Error(std::borrow::Cow<'a, str>),
}

impl<'a> EndRecord<'a> {
    /// The last record of a run that ended with `outcome` (`invalid_output` as for
    /// [`Terminal::of`]).
    pub fn of(outcome: &'a TurnOutcome, invalid_output: Option<&'a str>) -> Self {
        match RunError::of(outcome, invalid_output) {
            None => Self::Answer(outcome.final_text.as_deref().unwrap_or_default()),
            Some((RunError::Incomplete | RunError::Budget, message)) => {
                Self::Error(format!("incomplete: {message}").into())
            }
            Some((RunError::Interrupted, _)) => Self::Error("interrupted".into()),
            Some((RunError::Provider | RunError::OutputSchema, message)) => {
                Self::Error(message.into())
            }
        }
    }
}
