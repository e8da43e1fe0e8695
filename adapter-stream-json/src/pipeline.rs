//! One run's events to output lines: [`ZeroOrder`] puts them in Zero's order, the session
//! recorder (when there is a session) observes them, the [`Mapper`] turns them into output
//! events, and the [`Renderer`] renders those in the run's format onto the burst's
//! [`Frames`].

use std::io;

use agent_core::{structured::OutputSpec, AgentEvent, RunStatus};
use agent_host::output::Frames;

use crate::mapping::{Mapper, MapperConfig, Outcome};
use crate::order::ZeroOrder;
use crate::output::{DeltaKind, Renderer};
use crate::record::SessionRecorder;
use crate::wire::{CheckpointEvent, EventBody};

/// The event pipeline of one run (see the module docs).
#[derive(Debug)]
pub struct Pipeline {
    order: ZeroOrder,
    mapper: Mapper,
    recorder: Option<SessionRecorder>,
    /// Events in Zero's order, not yet mapped (reused between calls).
    ordered: Vec<AgentEvent>,
    /// Output events of one agent event, not yet rendered (reused between calls).
    bodies: Vec<EventBody>,
    /// `--output-schema`: the final answer must pass it.
    output: Option<OutputSpec>,
}

impl Pipeline {
    /// A pipeline mapping with `config`, recording to `recorder` when given.
    pub fn new(config: MapperConfig, recorder: Option<SessionRecorder>) -> Self {
        Self {
            order: ZeroOrder::new(),
            mapper: Mapper::new(config),
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

    /// `RunFinished`'s status, once it went through.
    pub fn status(&self) -> Option<RunStatus> {
        self.mapper.status()
    }

    /// The session recorder, if any.
    pub fn recorder(&self) -> Option<&SessionRecorder> {
        self.recorder.as_ref()
    }

    /// Whether the run's `RunFinished` went through.
    pub fn is_finished(&self) -> bool {
        self.mapper.is_finished()
    }

    /// Takes one event, as the turn driver lends it, and renders the lines now due.
    ///
    /// Text and reasoning deltas, nearly every event of a run, are rendered straight from the
    /// borrowed event: [`ZeroOrder`] passes them through at once and releases nothing with
    /// them, the recorder does not record them, and the mapping is one line per non-empty
    /// delta. Every other event is cloned into the pipeline.
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
            other => self.push(other.clone(), renderer, frames),
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

    fn drain(&mut self, renderer: &mut Renderer, frames: &mut Frames) -> io::Result<()> {
        for event in self.ordered.drain(..) {
            if let AgentEvent::TurnEnded { .. } = event {
                renderer.end_message();
            }
            let checkpoint = self.recorder.as_mut().and_then(|r| r.observe(&event));
            self.mapper.map(event, &mut self.bodies);
            if let Some(checkpoint) = checkpoint {
                self.bodies
                    .push(EventBody::Checkpoint(CheckpointEvent { checkpoint }));
            }
            for body in self.bodies.drain(..) {
                renderer.render(&body, frames)?;
            }
        }
        Ok(())
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
        let mut outcome = self.mapper.outcome(interrupted);
        if let (Some(spec), Outcome::Success { text, .. }) = (&self.output, &outcome) {
            if let Err(error) = spec.check(text) {
                outcome = Outcome::InvalidOutput {
                    message: format!("The final answer does not match the output schema: {error}"),
                };
            }
        }
        if let Some(recorder) = &mut self.recorder {
            recorder.finish(&outcome);
        }
        let terminal = outcome.terminal();
        for body in &terminal.events {
            renderer.render(body, frames)?;
        }
        Ok(terminal.exit_code)
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
                let mut pipeline = Pipeline::new(MapperConfig::default(), None);
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
