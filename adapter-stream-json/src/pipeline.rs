//! One run's events to output lines ([`ZeroFold`]): [`ZeroOrder`] puts them in Zero's
//! order, agent-host's turn fold ([`Fold`]: the turn's [`TurnState`], then the
//! [`ZeroMapping`]) turns them into output events, the session recorder (when there is a
//! session) observes them with the same state, and the [`Renderer`] renders the output
//! events in the run's format onto the burst's [`Frames`]. The terminal lines come from the
//! state's [`TurnOutcome`].

use std::io;

use agent_core::{structured::OutputSpec, AgentEvent, RunStatus};
use agent_host::output::Frames;
use agent_host::turn::{Fold, Mapping, TurnOutcome, TurnState};

use crate::mapping::{MappingConfig, Terminal, ZeroMapping};
use crate::order::ZeroOrder;
use crate::output::{DeltaKind, Renderer};
use crate::record::SessionRecorder;
use crate::wire::{CheckpointEvent, EventBody};

/// The event pipeline of one run (see the module docs).
#[derive(Debug)]
pub struct ZeroFold {
    order: ZeroOrder,
    fold: Fold<ZeroMapping>,
    recorder: Option<SessionRecorder>,
    /// Events in Zero's order, not yet mapped (reused between calls).
    ordered: Vec<AgentEvent>,
    /// Output events of one agent event, not yet rendered (reused between calls).
    bodies: Vec<EventBody>,
    /// `--output-schema`: the final answer must pass it.
    output: Option<OutputSpec>,
}

impl ZeroFold {
    /// A pipeline mapping with `config`, recording to `recorder` when given.
    pub fn new(config: MappingConfig, recorder: Option<SessionRecorder>) -> Self {
        Self {
            order: ZeroOrder::new(),
            fold: Fold::new(ZeroMapping::new(config)),
            recorder,
            ordered: Vec::new(),
            bodies: Vec::new(),
            output: None,
        }
    }

    /// Checks the final answer of a successful run against `spec` (`--output-schema`): an
    /// answer that fails it ends the run `output_schema_error`, exit 3.
    pub fn check_output(mut self, spec: Option<OutputSpec>) -> Self {
        self.output = spec;
        self
    }

    /// The turn's state, as far as the events went through (in Zero's order).
    pub fn state(&self) -> &TurnState {
        self.fold.state()
    }

    /// `RunFinished`'s status, once it went through.
    pub fn status(&self) -> Option<RunStatus> {
        self.state().status()
    }

    /// The session recorder, if any.
    pub fn recorder(&self) -> Option<&SessionRecorder> {
        self.recorder.as_ref()
    }

    /// Whether the run's `RunFinished` went through.
    pub fn is_finished(&self) -> bool {
        self.status().is_some()
    }

    /// Takes one event, as the session's turn lends it, and renders the lines now due.
    ///
    /// Text and reasoning deltas, nearly every event of a run, are rendered straight from the
    /// borrowed event: [`ZeroOrder`] passes them through at once and releases nothing with
    /// them, the turn's state and the recorder ignore them, and the mapping is one line per
    /// non-empty delta. Every other event goes through the fold borrowed too, unless
    /// [`ZeroOrder`] holds it (a copy) for later.
    pub fn map(
        &mut self,
        event: &AgentEvent,
        renderer: &mut Renderer,
        frames: &mut Frames,
    ) -> io::Result<()> {
        match event {
            AgentEvent::TextDelta { delta } if !delta.is_empty() => {
                renderer.render_delta(DeltaKind::Text, delta, frames)
            }
            AgentEvent::ReasoningDelta { delta } if !delta.is_empty() => {
                renderer.render_delta(DeltaKind::Reasoning, delta, frames)
            }
            AgentEvent::TextDelta { .. } | AgentEvent::ReasoningDelta { .. } => Ok(()),
            other => {
                let due = self.order.admit(other, &mut self.ordered);
                self.drain(renderer, frames)?;
                match due {
                    true => self.feed(other, renderer, frames),
                    false => Ok(()),
                }
            }
        }
    }

    /// Takes one event and renders the lines now due.
    pub fn push(
        &mut self,
        event: AgentEvent,
        renderer: &mut Renderer,
        frames: &mut Frames,
    ) -> io::Result<()> {
        self.order.push(event, &mut self.ordered);
        self.drain(renderer, frames)
    }

    /// Feeds the events [`ZeroOrder`] released, in order.
    fn drain(&mut self, renderer: &mut Renderer, frames: &mut Frames) -> io::Result<()> {
        let mut ordered = std::mem::take(&mut self.ordered);
        let fed = ordered
            .drain(..)
            .try_for_each(|event| self.feed(&event, renderer, frames));
        // The buffer (emptied) is kept for the next events.
        self.ordered = ordered;
        fed
    }

    /// One event in Zero's order through the fold and the recorder, and their output
    /// rendered.
    fn feed(
        &mut self,
        event: &AgentEvent,
        renderer: &mut Renderer,
        frames: &mut Frames,
    ) -> io::Result<()> {
        if let AgentEvent::TurnEnded { .. } = event {
            renderer.end_message();
        }
        let bodies = &mut self.bodies;
        self.fold.feed(event, |body| bodies.push(body));
        if let Some(recorder) = &mut self.recorder {
            recorder.map(self.fold.state(), event, |checkpoint| {
                bodies.push(EventBody::Checkpoint(CheckpointEvent { checkpoint }))
            });
        }
        bodies
            .drain(..)
            .try_for_each(|body| renderer.render(&body, frames))
    }

    /// Ends the run (`interrupted` by a signal, or as its `RunFinished` said): renders what
    /// is still held, records the outcome and renders the terminal lines; returns the exit
    /// code.
    pub fn finish(
        &mut self,
        interrupted: bool,
        renderer: &mut Renderer,
        frames: &mut Frames,
    ) -> io::Result<i32> {
        self.order.finish(&mut self.ordered);
        self.drain(renderer, frames)?;
        let outcome = outcome(self.fold.state(), interrupted);
        let invalid_output = match (&self.output, outcome.status) {
            (Some(spec), RunStatus::Success) => spec
                .check(outcome.final_text.as_deref().unwrap_or_default())
                .err()
                .map(|error| format!("The final answer does not match the output schema: {error}")),
            _ => None,
        };
        if let Some(recorder) = &mut self.recorder {
            recorder.finish(&outcome, invalid_output.as_deref());
        }
        let cut_by_length = self.fold.state().stopped_at_length();
        let terminal = Terminal::of(&outcome, cut_by_length, invalid_output.as_deref());
        for body in &terminal.events {
            renderer.render(body, frames)?;
        }
        Ok(terminal.exit_code)
    }
}

/// How the run `state` folded ended: as its `RunFinished` said (an abort when the stream
/// ended without one), or `aborted` when a signal `interrupted` it.
fn outcome(state: &TurnState, interrupted: bool) -> TurnOutcome {
    let mut outcome = state.outcome();
    if interrupted {
        outcome.status = RunStatus::Aborted;
    }
    outcome
}

/// The output events of a whole run without a recorder or a renderer, and its exit code:
/// Zero's order, the fold, then the terminal lines (what [`ZeroFold`] renders for `events`
/// when no signal interrupts them).
pub fn bodies(config: MappingConfig, events: impl IntoIterator<Item = AgentEvent>) -> Terminal {
    let mut order = ZeroOrder::new();
    let mut ordered = Vec::new();
    for event in events {
        order.push(event, &mut ordered);
    }
    order.finish(&mut ordered);
    let mut fold = Fold::new(ZeroMapping::new(config));
    let mut events = Vec::new();
    for event in &ordered {
        fold.feed(event, |body| events.push(body));
    }
    let state = fold.state();
    let terminal = Terminal::of(&state.outcome(), state.stopped_at_length(), None);
    events.extend(terminal.events);
    Terminal {
        events,
        exit_code: terminal.exit_code,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::OutputFormat;
    use agent_core::{event::StopReason, RunStatus, SideEffect, Usage};
    use serde_json::json;

    fn events() -> Vec<AgentEvent> {
        let delta = |d: &str| AgentEvent::TextDelta { delta: d.into() };
        vec![
            delta("a "),
            AgentEvent::Usage {
                turn: Usage {
                    input: 3,
                    output: 2,
                    ..Usage::default()
                },
                cumulative: Usage::default(),
            },
            AgentEvent::ReasoningDelta {
                delta: "thinking".into(),
            },
            delta(""),
            AgentEvent::ToolCall {
                id: "c1".into(),
                name: "list_dir".into(),
                args: json!({}),
                raw_args: None,
                side_effect: Some(SideEffect::Read),
            },
            delta("b <&> sk-abcdefghijklmnopqrstuv"),
            AgentEvent::TurnEnded {
                step: 1,
                stop: StopReason::ToolUse,
                error: None,
            },
            delta("c"),
            AgentEvent::RunFinished {
                status: RunStatus::Success,
                final_text: Some("c".into()),
            },
        ]
    }

    /// The borrowed path (deltas rendered straight from the event) gives exactly the lines of
    /// the owned path, in every format, held events included.
    #[test]
    fn lent_events_render_like_owned_ones() {
        for format in [OutputFormat::StreamJson, OutputFormat::Json] {
            let render = |lent: bool| {
                let mut pipeline = ZeroFold::new(MappingConfig::default(), None);
                let mut renderer = Renderer::new(
                    format,
                    "run_20260101000000_abcdef",
                    Box::new(std::io::sink()),
                    Box::new(std::io::sink()),
                );
                let mut frames = Frames::new();
                for event in events() {
                    match lent {
                        true => pipeline.map(&event, &mut renderer, &mut frames),
                        false => pipeline.push(event, &mut renderer, &mut frames),
                    }
                    .expect("render");
                }
                assert!(pipeline.is_finished());
                let code = pipeline
                    .finish(false, &mut renderer, &mut frames)
                    .expect("finish");
                assert_eq!(code, 0);
                String::from_utf8(frames.bytes().to_vec()).expect("utf-8")
            };
            let lent = render(true);
            assert_eq!(lent, render(false), "{format:?}");
            assert_eq!(lent.lines().count(), 8, "{lent}");
        }
    }
}
