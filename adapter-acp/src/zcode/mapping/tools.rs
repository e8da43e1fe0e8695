//! Tool calls as `model.streaming` / `tool.updated` events, and the sub-agents `Task` calls
//! run: the call's progress and background task on the parent's stream, the child's own
//! turn on its session's stream. Read from the turn state's call table (its name, start,
//! hooks, sandbox blocks, refusal and sub-agent), step of calls and sub-agent tree (each
//! node's run is the child's own state).

use agent_core::{event::ToolStatus, tool::ProgressStream, AgentEvent, RunStatus};
use agent_host::session::TurnOutcome;
use agent_host::turn::{Coverage, SubagentNode, ToolCallStatus, TurnState};
use serde_json::Value;

use super::values::OUTPUT_TAIL;
use super::{completed, failed, result_text, session_updated, subagent_status, tool_meta};
use super::{ZFrame, ZcodeMapping};
use crate::zcode::wire::{
    EventBody, ExecutionKind, InputSource, ModelStreamingPayload, OriginSource,
    SessionUpdatedPayload, SubagentOrigin, TaskStatus, ToolErrorBody, ToolErrorKind,
    ToolResultBody, ToolUpdatedPayload, TurnStartedPayload,
};

fn tool(payload: ToolUpdatedPayload) -> EventBody {
    EventBody::ToolUpdated(payload)
}

/// The name of call `id`, else `fallback`.
fn name_of(run: &TurnState, id: &str, fallback: &str) -> String {
    run.call(id)
        .map_or_else(|| fallback.to_string(), |call| call.name.clone())
}

/// A call the model made: its `model.streaming` `tool_call`, then `tool.updated`
/// `scheduled`.
pub(super) fn announced(id: &str, name: &str, args: &Value) -> [EventBody; 2] {
    [
        EventBody::ModelStreaming(ModelStreamingPayload::ToolCall {
            tool_call_id: id.to_string(),
            tool_name: name.to_string(),
            input: args.clone(),
        }),
        tool(ToolUpdatedPayload::Scheduled {
            tool_call_id: id.to_string(),
            tool_name: name.to_string(),
            input: args.clone(),
        }),
    ]
}

/// `tool.updated` `started`, at the time the state stamped.
pub(super) fn started(run: &TurnState, id: &str, name: &str, clock: fn() -> i64) -> EventBody {
    tool(ToolUpdatedPayload::Started {
        tool_call_id: id.to_string(),
        tool_name: name.to_string(),
        started_at: run
            .call(id)
            .and_then(|call| call.started_at)
            .unwrap_or_else(clock),
    })
}

/// `tool.updated` `progress` of call `id` (named `fallback` when the state does not know
/// it): a process stream's tail, or another line as the preview; for a `Task` call, the
/// sub-agent it runs.
pub(super) fn progress(
    run: &TurnState,
    id: &str,
    fallback: &str,
    line: Option<(ProgressStream, &str)>,
    origin: Option<SubagentOrigin>,
    clock: fn() -> i64,
) -> EventBody {
    let (mut stdout_tail, mut stderr_tail, mut output_preview) = (None, None, None);
    match line {
        Some((ProgressStream::Stdout, text)) => stdout_tail = Some(text.to_string()),
        Some((ProgressStream::Stderr, text)) => stderr_tail = Some(text.to_string()),
        Some((_, text)) => output_preview = Some(text.to_string()),
        None => {}
    }
    let started = run.call(id).and_then(|call| call.started_at);
    tool(ToolUpdatedPayload::Progress {
        tool_call_id: id.to_string(),
        tool_name: name_of(run, id, fallback),
        elapsed_ms: started.map_or(0, |start| u64::try_from(clock() - start).unwrap_or(0)),
        stdout_tail,
        stderr_tail,
        output_preview,
        origin,
    })
}

/// `tool.updated` `result`, or `error` of the kind the state knows: refused by the
/// permission gate, vetoed by a hook, blocked by the sandbox, else the tool's own error.
/// Both carry the call's metadata and, for a `Task` call, its sub-agent. `None` for another
/// event.
pub(super) fn result(run: &TurnState, event: &AgentEvent) -> Option<EventBody> {
    let AgentEvent::ToolResult {
        id,
        name,
        status,
        content,
        truncated,
        redacted,
        changed_files,
        duration_ms,
    } = event
    else {
        return None;
    };
    let call = run.call(id);
    let meta = tool_meta(call);
    let origin = run.subagent_of_call(id).map(origin);
    let text = result_text(content);
    if *status == ToolStatus::Ok {
        return Some(tool(ToolUpdatedPayload::Result {
            tool_call_id: id.clone(),
            tool_name: name.clone(),
            result: ToolResultBody {
                success: true,
                content: text,
                truncated: *truncated,
                redacted: *redacted,
                changed_files: changed_files.clone(),
                metadata: (!meta.is_empty()).then_some(meta),
            },
            duration: *duration_ms,
            origin,
        }));
    }
    let denied = call.is_some_and(|call| call.denied);
    let vetoed = call.is_some_and(|call| call.denied_by_hook().is_some());
    let (kind, code) = match &meta.block {
        _ if denied => (ToolErrorKind::PermissionDenied, None),
        _ if vetoed => (ToolErrorKind::HookDenied, Some("hook_denied".to_string())),
        Some(block) => (
            ToolErrorKind::SandboxDenied,
            Some(block.code.as_str().to_string()),
        ),
        None => (ToolErrorKind::ToolError, None),
    };
    Some(tool(ToolUpdatedPayload::Error {
        tool_call_id: id.clone(),
        tool_name: name.clone(),
        error: ToolErrorBody {
            kind,
            message: text,
            code,
            data: (!meta.is_empty()).then_some(meta),
        },
        duration: *duration_ms,
        origin,
    }))
}

/// `tool.updated` `batch` once every call of the model call's step has its result (once
/// per step: `batched` is the step whose batch went out).
pub(super) fn batch(run: &TurnState, batched: &mut Option<u32>) -> Option<EventBody> {
    let step = run.step_calls();
    if !run.step_done() || *batched == Some(run.step()) {
        return None;
    }
    *batched = Some(run.step());
    let completed = |c: &&String| {
        run.call(c)
            .is_some_and(|call| call.status == ToolCallStatus::Completed)
    };
    let success_count = u32::try_from(step.iter().filter(completed).count()).unwrap_or(u32::MAX);
    let error_count = u32::try_from(step.len())
        .unwrap_or(u32::MAX)
        .saturating_sub(success_count);
    Some(tool(ToolUpdatedPayload::Batch {
        tool_call_ids: step.to_vec(),
        success_count,
        error_count,
    }))
}

/// The origin a `Task` call's `tool.updated` names: the sub-agent `node` it runs.
fn origin(node: &SubagentNode) -> SubagentOrigin {
    SubagentOrigin {
        source: OriginSource::Subagent,
        agent_id: node.task_id.clone(),
        agent_type: node.name.clone(),
        background: node.background,
        child_session_id: node.task_id.clone(),
        description: node.description.clone(),
    }
}

/// A background sub-agent's `session.updated{taskId, status, …}` on its parent's stream.
fn background(
    run: &TurnState,
    task_id: &str,
    call_id: &str,
    origin: &SubagentOrigin,
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

impl ZcodeMapping {
    /// `SubagentStarted` of `task_id` by call `call_id`: the call's progress naming the child
    /// (and a background task's `session.updated`) on stream `at`, and the child's
    /// `turn.started` on its own.
    pub(super) fn subagent_started<'e>(
        &mut self,
        at: Option<&'e str>,
        run: &TurnState,
        task_id: &'e str,
        call_id: &str,
        out: &mut impl FnMut(ZFrame<'e>),
    ) {
        // The state made the node of the event.
        let Some(node) = run.subagent(task_id) else {
            return;
        };
        let origin = origin(node);
        let update = node
            .background
            .then(|| background(run, task_id, call_id, &origin, TaskStatus::Running, None));
        let mut send = |stream, body| out(ZFrame { stream, body });
        let clock = self.clock;
        send(
            at,
            progress(run, call_id, "Task", None, Some(origin), clock),
        );
        if let Some(update) = update {
            send(at, update);
        }
        if !self.subagents {
            return;
        }
        self.stream(Some(task_id));
        send(
            Some(task_id),
            EventBody::TurnStarted(TurnStartedPayload {
                turn_number: 1,
                input: node
                    .description
                    .clone()
                    .unwrap_or_else(|| node.name.clone()),
                input_id: None,
                input_source: InputSource::Subagent,
                execution_kind: ExecutionKind::Agent,
            }),
        );
    }

    /// A sub-agent `task_id`'s event: mapped onto the child's stream with the child's run.
    pub(super) fn subagent_event<'e, F: FnMut(ZFrame<'e>)>(
        &mut self,
        run: &TurnState,
        task_id: &'e str,
        inner: &'e AgentEvent,
        out: &mut F,
    ) -> Coverage {
        if !self.subagents {
            return Coverage::NotShown;
        }
        let Some(node) = run.subagent(task_id) else {
            // No `SubagentStarted` was seen: the child's run is unknown.
            tracing::debug!(task = %task_id, "an event of a sub-agent that never started");
            return Coverage::NotShown;
        };
        self.map_in(Some(task_id), node.run(), inner, out);
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
                    call_id,
                    &origin,
                    subagent_status(*status),
                    tail,
                )
            });
            let line = Some((ProgressStream::Status, preview.as_str()));
            let progress = progress(run, call_id, "Task", line, Some(origin), self.clock);
            send(at, progress);
            if let Some(update) = update {
                send(at, update);
            }
        }
        let Some((node, stream)) =
            node.and_then(|node| Some((node, self.children.remove(task_id.as_str())?)))
        else {
            return;
        };
        let body = match *status {
            RunStatus::Error => {
                let message = error
                    .clone()
                    .unwrap_or_else(|| "the sub-agent failed".to_string());
                failed(("subagent_error", "subagent"), message, None)
            }
            _ => {
                // How the child's run ended, as its `SubagentFinished` told the state.
                let outcome = TurnOutcome {
                    status: node.status.unwrap_or(RunStatus::Aborted),
                    final_text: node.final_text.clone(),
                    usage: node.usage(),
                    duration_ms: node.duration_ms.unwrap_or(0),
                    ..node.run().outcome()
                };
                completed(&outcome, &stream.text, None)
            }
        };
        send(Some(task_id.as_str()), body);
    }
}
