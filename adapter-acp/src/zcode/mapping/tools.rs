//! Tool calls as `model.streaming` / `tool.updated` events, read from the turn state's call
//! table (its name, start, hooks, sandbox blocks, refusal and sub-agent) and step of calls.

use agent_core::{event::ToolStatus, tool::ProgressStream, AgentEvent};
use agent_host::turn::{ToolCallStatus, TurnState};
use serde_json::Value;

use super::subagents::origin;
use super::{result_text, tool_meta};
use crate::zcode::wire::{
    EventBody, ModelStreamingPayload, ToolErrorBody, ToolErrorKind, ToolResultBody,
    ToolUpdatedPayload,
};

fn tool(payload: ToolUpdatedPayload) -> EventBody {
    EventBody::ToolUpdated(payload)
}

/// The name of call `id`, else `fallback`.
pub(super) fn name_of(run: &TurnState, id: &str, fallback: &str) -> String {
    run.call(id)
        .map_or_else(|| fallback.to_string(), |call| call.name.clone())
}

/// How long call `id` has run, ms (0 before it started).
pub(super) fn elapsed(run: &TurnState, id: &str, clock: fn() -> i64) -> u64 {
    run.call(id)
        .and_then(|call| call.started_at)
        .map(|start| u64::try_from(clock() - start).unwrap_or(0))
        .unwrap_or(0)
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

/// `tool.updated` `progress`: a process stream's tail, or another line as the preview.
pub(super) fn progress(
    run: &TurnState,
    id: &str,
    stream: ProgressStream,
    text: &str,
    clock: fn() -> i64,
) -> EventBody {
    let (mut stdout_tail, mut stderr_tail, mut output_preview) = (None, None, None);
    match stream {
        ProgressStream::Stdout => stdout_tail = Some(text.to_string()),
        ProgressStream::Stderr => stderr_tail = Some(text.to_string()),
        _ => output_preview = Some(text.to_string()),
    }
    tool(ToolUpdatedPayload::Progress {
        tool_call_id: id.to_string(),
        tool_name: name_of(run, id, ""),
        elapsed_ms: elapsed(run, id, clock),
        stdout_tail,
        stderr_tail,
        output_preview,
        origin: None,
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
            serde_json::to_value(block.code)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string)),
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
