//! Sub-agents on ZCode: the `Task` call's progress and background task on the parent's
//! stream, and the child's own turn on its session's stream, read from the turn state's
//! sub-agent tree (each node's run is the child's own state).

use agent_core::{AgentEvent, RunStatus};
use agent_host::session::TurnOutcome;
use agent_host::turn::{Coverage, SubagentNode, TurnState};

use super::tools::{elapsed, name_of};
use super::values::{subagent_status, OUTPUT_TAIL};
use super::{completed, failed, session_updated, turn_error, ZFrame, ZcodeMapping};
use crate::zcode::wire::{
    EventBody, ExecutionKind, InputSource, OriginSource, SessionUpdatedPayload, SubagentOrigin,
    TaskStatus, ToolUpdatedPayload, TurnStartedPayload,
};

/// The origin a `Task` call's `tool.updated` names: the sub-agent `node` it runs.
pub(super) fn origin(node: &SubagentNode) -> SubagentOrigin {
    SubagentOrigin {
        source: OriginSource::Subagent,
        agent_id: node.task_id.clone(),
        agent_type: node.name.clone(),
        background: node.background,
        child_session_id: node.task_id.clone(),
        description: node.description.clone(),
    }
}

/// A `tool.updated` `progress` of `Task` call `call_id`, naming its sub-agent.
fn progress(
    run: &TurnState,
    call_id: &str,
    origin: SubagentOrigin,
    preview: Option<String>,
    clock: fn() -> i64,
) -> EventBody {
    EventBody::ToolUpdated(ToolUpdatedPayload::Progress {
        tool_call_id: call_id.to_string(),
        tool_name: name_of(run, call_id, "Task"),
        elapsed_ms: elapsed(run, call_id, clock),
        stdout_tail: None,
        stderr_tail: None,
        output_preview: preview,
        origin: Some(origin),
    })
}

/// A background sub-agent's `session.updated{taskId, status, …}` on its parent's stream.
fn background(
    run: &TurnState,
    task_id: &str,
    origin: &SubagentOrigin,
    call_id: &str,
    status: TaskStatus,
    output_tail: Option<String>,
) -> EventBody {
    session_updated(SessionUpdatedPayload {
        task_id: Some(task_id.to_string()),
        status: Some(status),
        tool_call_id: Some(call_id.to_string()),
        tool_name: Some(name_of(run, call_id, "Task")),
        description: origin.description.clone(),
        output_tail,
        ..Default::default()
    })
}

/// How a sub-agent's run ended, as its `SubagentFinished` told the state.
fn outcome(node: &SubagentNode) -> TurnOutcome {
    TurnOutcome {
        status: node.status.unwrap_or(RunStatus::Aborted),
        final_text: node.final_text.clone(),
        error: None,
        usage: node.usage(),
        model_calls: node.run().model_calls(),
        tool_calls: node.run().tool_calls(),
        duration_ms: node.duration_ms.unwrap_or(0),
        summary: None,
    }
}

impl ZcodeMapping {
    /// `SubagentStarted`: the `Task` call's progress naming the child (and a background
    /// task's `session.updated`) on stream `at`, and the child's `turn.started` on its own.
    pub(super) fn subagent_started<'e>(
        &mut self,
        at: Option<&'e str>,
        run: &TurnState,
        event: &'e AgentEvent,
        out: &mut impl FnMut(ZFrame<'e>),
    ) {
        let AgentEvent::SubagentStarted {
            task_id,
            name,
            call_id,
            description,
            background: in_background,
            ..
        } = event
        else {
            return;
        };
        let origin = SubagentOrigin {
            source: OriginSource::Subagent,
            agent_id: task_id.clone(),
            agent_type: name.clone(),
            background: *in_background,
            child_session_id: task_id.clone(),
            description: description.clone(),
        };
        let mut send = |stream, body| out(ZFrame { stream, body });
        if *in_background {
            let update = background(run, task_id, &origin, call_id, TaskStatus::Running, None);
            send(at, progress(run, call_id, origin, None, self.clock));
            send(at, update);
        } else {
            send(at, progress(run, call_id, origin, None, self.clock));
        }
        if !self.subagents {
            return;
        }
        self.stream(Some(task_id));
        send(
            Some(task_id.as_str()),
            EventBody::TurnStarted(TurnStartedPayload {
                turn_number: 1,
                input: description.clone().unwrap_or_else(|| name.clone()),
                input_id: None,
                input_source: InputSource::Subagent,
                execution_kind: ExecutionKind::Agent,
            }),
        );
    }

    /// A sub-agent's event: mapped onto the child's stream with the child's run.
    pub(super) fn subagent_event<'e, F: FnMut(ZFrame<'e>)>(
        &mut self,
        run: &TurnState,
        event: &'e AgentEvent,
        out: &mut F,
    ) -> Coverage {
        let AgentEvent::Subagent {
            task_id,
            event: inner,
            ..
        } = event
        else {
            return Coverage::NotShown;
        };
        if !self.subagents {
            return Coverage::NotShown;
        }
        let Some(node) = run.subagent(task_id) else {
            // No `SubagentStarted` was seen: the child's run is unknown.
            tracing::debug!(task = %task_id, "an event of a sub-agent that never started");
            return Coverage::NotShown;
        };
        self.map_in(Some(task_id.as_str()), node.run(), inner, out);
        Coverage::Shown
    }

    /// `SubagentFinished`: the `Task` call's progress with the child's status (and a
    /// background task's `session.updated` with its output's tail) on stream `at`, and the
    /// end of the child's turn on its own stream.
    pub(super) fn subagent_finished<'e>(
        &mut self,
        at: Option<&'e str>,
        run: &TurnState,
        event: &'e AgentEvent,
        out: &mut impl FnMut(ZFrame<'e>),
    ) {
        let AgentEvent::SubagentFinished {
            task_id,
            call_id,
            status,
            final_text,
            error,
            ..
        } = event
        else {
            return;
        };
        let mut send = |stream, body| out(ZFrame { stream, body });
        let node = run.subagent(task_id);
        // The sub-agent the call runs (the last it started).
        let runs = run
            .subagent_of_call(call_id)
            .or(node.filter(|n| n.call_id == *call_id));
        if let Some(origin) = runs.map(origin) {
            let preview = format!("sub-agent {}", subagent_status(*status).as_str());
            let update = origin.background.then(|| {
                let tail = final_text
                    .as_deref()
                    .or(error.as_deref())
                    .map(|t| agent_host::text::cut_utf8_tail(t, OUTPUT_TAIL).to_string());
                background(
                    run,
                    task_id,
                    &origin,
                    call_id,
                    subagent_status(*status),
                    tail,
                )
            });
            send(
                at,
                progress(run, call_id, origin, Some(preview), self.clock),
            );
            if let Some(update) = update {
                send(at, update);
            }
        }
        let Some(node) = node else {
            return;
        };
        let Some(stream) = self.children.remove(task_id.as_str()) else {
            return;
        };
        let body = match *status {
            RunStatus::Error => {
                let message = error
                    .clone()
                    .unwrap_or_else(|| "the sub-agent failed".to_string());
                failed(turn_error("subagent_error", message, "subagent"), None)
            }
            _ => completed(&outcome(node), &stream.text, None),
        };
        send(Some(task_id.as_str()), body);
    }
}
