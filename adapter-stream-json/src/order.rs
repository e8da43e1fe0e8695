//! Zero's order of a run's events.
//!
//! agent-core reports every `ToolCall` of a turn right after the assistant message, then the
//! calls' permission events and results one call at a time. Zero groups per call instead:
//! `tool_call` (then its checkpoint), at most one permission event, then `tool_result`, before
//! the next `tool_call`. And a turn's usage comes when its provider stream has ended, after
//! the text. [`ZeroOrder`] puts [`AgentEvent`]s in that order; the mapper and the session
//! recorder both read its output, so stdout and the session file agree.

use agent_core::AgentEvent;

/// Reorders a run's events into Zero's order (see the module docs).
#[derive(Debug, Default)]
pub struct ZeroOrder {
    /// `ToolCall`s not yet due.
    calls: Vec<AgentEvent>,
    /// `Usage` events whose provider stream has not ended yet.
    usage: Vec<AgentEvent>,
}

impl ZeroOrder {
    /// An empty order.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one event, as a run lends it: appends to `out` the held events now due before
    /// it, and returns whether `event` itself is due now, after them (`false`: a copy of it is
    /// held until its turn comes). Only `ToolCall`s and `Usage` are ever held, so every other
    /// event goes on borrowed.
    #[must_use = "an event due now must be passed on"]
    pub fn admit(&mut self, event: &AgentEvent, out: &mut Vec<AgentEvent>) -> bool {
        match self.release(event, out) {
            Some(held) => {
                held.push(event.clone());
                false
            }
            None => true,
        }
    }

    /// Takes one event and appends to `out` every event now due, in Zero's order.
    pub fn push(&mut self, event: AgentEvent, out: &mut Vec<AgentEvent>) {
        match self.release(&event, out) {
            Some(held) => held.push(event),
            None => out.push(event),
        }
    }

    /// Appends to `out` the held events due before `event`; returns where `event` itself is
    /// held, if it is.
    fn release(
        &mut self,
        event: &AgentEvent,
        out: &mut Vec<AgentEvent>,
    ) -> Option<&mut Vec<AgentEvent>> {
        match event {
            AgentEvent::Usage { .. } => return Some(&mut self.usage),
            AgentEvent::ToolCall { .. } => {
                out.append(&mut self.usage);
                return Some(&mut self.calls);
            }
            AgentEvent::AssistantMessage { .. }
            | AgentEvent::TurnEnded { .. }
            | AgentEvent::Error { .. } => out.append(&mut self.usage),
            AgentEvent::PermissionRequested(info) => self.release_calls(&info.id, out),
            AgentEvent::PermissionDecided { info, .. } => self.release_calls(&info.id, out),
            AgentEvent::ToolExecutionStarted { id, .. }
            | AgentEvent::ToolBlocked { id, .. }
            | AgentEvent::ToolResult { id, .. } => self.release_calls(id, out),
            // A hook's decision on a call comes after the call's `tool_call`.
            AgentEvent::HookDecided {
                call_id: Some(id), ..
            } => self.release_calls(id, out),
            AgentEvent::RunFinished { .. } => self.finish(out),
            // Every other event is due at once and releases nothing.
            _ => {}
        }
        None
    }

    /// The end of the run: appends everything still held (usage first, then calls).
    pub fn finish(&mut self, out: &mut Vec<AgentEvent>) {
        out.append(&mut self.usage);
        out.append(&mut self.calls);
    }

    /// Releases held calls up to and including `id` (none when `id` is not held).
    fn release_calls(&mut self, id: &str, out: &mut Vec<AgentEvent>) {
        let held =
            |c: &AgentEvent| matches!(c, AgentEvent::ToolCall { id: held, .. } if held == id);
        if let Some(index) = self.calls.iter().position(held) {
            out.extend(self.calls.drain(..=index));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::{event::StopReason, Usage};
    use serde_json::json;

    fn call(id: &str) -> AgentEvent {
        AgentEvent::ToolCall {
            id: id.into(),
            name: "read_file".into(),
            args: json!({}),
            raw_args: None,
            side_effect: None,
        }
    }

    fn started(id: &str) -> AgentEvent {
        AgentEvent::ToolExecutionStarted {
            id: id.into(),
            name: "read_file".into(),
        }
    }

    fn tags(events: &[AgentEvent]) -> Vec<String> {
        events
            .iter()
            .map(|e| match e {
                AgentEvent::ToolCall { id, .. } => format!("call {id}"),
                AgentEvent::ToolExecutionStarted { id, .. } => format!("start {id}"),
                AgentEvent::Usage { .. } => "usage".into(),
                AgentEvent::TextDelta { .. } => "text".into(),
                AgentEvent::TurnEnded { .. } => "turn_ended".into(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn calls_wait_for_their_own_events_and_usage_for_the_stream_end() {
        let mut order = ZeroOrder::new();
        let mut out = Vec::new();
        for event in [
            AgentEvent::Usage {
                turn: Usage::default(),
                cumulative: Usage::default(),
            },
            AgentEvent::TextDelta { delta: "t".into() },
            call("a"),
            call("b"),
            call("c"),
            AgentEvent::TurnEnded {
                step: 1,
                stop: StopReason::ToolUse,
                error: None,
            },
            started("b"),
            started("zz"),
        ] {
            order.push(event, &mut out);
        }
        order.finish(&mut out);
        assert_eq!(
            tags(&out),
            [
                "text",
                "usage",
                "turn_ended",
                "call a",
                "call b",
                "start b",
                "start zz",
                "call c"
            ]
        );
    }
}
