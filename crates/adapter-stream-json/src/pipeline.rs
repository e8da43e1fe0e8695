//! One run's events to the writer: [`ZeroOrder`] puts them in Zero's order, the session
//! recorder (when there is a session) observes them, the [`Mapper`] turns them into lines,
//! and the [`Writer`] queues the lines in the run's output format.

use std::io;

use agent_core::AgentEvent;

use crate::mapping::{Mapper, MapperConfig, Outcome};
use crate::order::ZeroOrder;
use crate::output::Writer;
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
    /// Lines of one event, not yet queued (reused between calls).
    bodies: Vec<EventBody>,
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
        }
    }

    /// The session recorder, if any.
    pub fn recorder(&self) -> Option<&SessionRecorder> {
        self.recorder.as_ref()
    }

    /// Whether the run's `RunFinished` went through.
    pub fn is_finished(&self) -> bool {
        self.mapper.is_finished()
    }

    /// Takes one event and queues the lines now due on `writer`.
    pub fn push(&mut self, event: AgentEvent, writer: &mut Writer) -> io::Result<()> {
        self.order.push(event, &mut self.ordered);
        self.drain(writer)
    }

    fn drain(&mut self, writer: &mut Writer) -> io::Result<()> {
        for event in self.ordered.drain(..) {
            if let AgentEvent::TurnEnded { .. } = event {
                writer.end_message();
            }
            let checkpoint = self.recorder.as_mut().and_then(|r| r.observe(&event));
            self.mapper.map(event, &mut self.bodies);
            if let Some(checkpoint) = checkpoint {
                self.bodies
                    .push(EventBody::Checkpoint(CheckpointEvent { checkpoint }));
            }
            for body in self.bodies.drain(..) {
                writer.queue(&body)?;
            }
        }
        Ok(())
    }

    /// Ends the run (`interrupted` by a signal, or as its `RunFinished` said): queues what is
    /// still held, records the outcome and writes the terminal lines; returns the exit code.
    pub fn finish(&mut self, interrupted: bool, writer: &mut Writer) -> io::Result<i32> {
        self.order.finish(&mut self.ordered);
        self.drain(writer)?;
        let outcome: Outcome = self.mapper.outcome(interrupted);
        if let Some(recorder) = &mut self.recorder {
            recorder.finish(&outcome);
        }
        let terminal = outcome.terminal();
        for body in &terminal.events {
            writer.write(body)?;
        }
        Ok(terminal.exit_code)
    }
}
