//! The values the mapping computes: ids, usage, todos, tool metadata and texts.

use agent_core::{
    event::{CompactionReason, ErrorCode},
    tool::{PlanItem, PlanStatus},
    ContentBlock, RunStatus, Usage,
};
use agent_host::session::{now_ms, ToolCallState};

use super::ZLog;
use crate::zcode::wire::{
    EventBody, SessionEvent, SharedStr, TaskStatus, Todo, TodoPriority, TodoStatus, ToolMeta,
    WireBlock, WireCompactionReason, WireUsage,
};

/// The metadata a tool call's `tool.updated` and tool part carry: its sandbox block, the
/// hooks' decisions about it and the sub-agent it ran.
pub fn tool_meta(state: Option<&ToolCallState>) -> ToolMeta {
    state.map_or_else(ToolMeta::default, |state| ToolMeta {
        block: state.block.as_ref().map(WireBlock::from),
        hooks: state.hooks.clone(),
        child_session_id: state.subagent.clone(),
    })
}

/// How much of `text` a background task's `outputTail` keeps.
pub(super) const OUTPUT_TAIL: usize = 2_000;

pub(super) fn compaction_reason(reason: CompactionReason) -> WireCompactionReason {
    match reason {
        CompactionReason::Auto => WireCompactionReason::Auto,
        CompactionReason::Manual => WireCompactionReason::Manual,
        CompactionReason::Overflow => WireCompactionReason::Overflow,
    }
}

/// The wire status of a sub-agent (a background task) whose run ended with `status`.
pub(crate) fn subagent_status(status: RunStatus) -> TaskStatus {
    match status {
        RunStatus::Success => TaskStatus::Completed,
        RunStatus::Error => TaskStatus::Failed,
        RunStatus::Aborted => TaskStatus::Cancelled,
    }
}

/// Appends one event to `log` and sends it at once (when subscribed).
pub fn emit(log: &ZLog, session_id: &str, turn_id: Option<&str>, body: EventBody) -> u64 {
    let (session_id, turn_id) = (SharedStr::from(session_id), turn_id.map(SharedStr::from));
    log.append(|seq| SessionEvent {
        event_id: event_id(),
        session_id,
        turn_id,
        seq,
        timestamp: now_ms(),
        body,
    })
}

/// A fresh event id, `evt_<uuid>` as the spec has it: a per-process sequential uuid v4
/// ([`agent_core::ids::prefixed_sequential`]), without a random draw per event.
pub fn event_id() -> String {
    agent_core::ids::prefixed_sequential("evt")
}

/// Usage in wire form.
pub fn wire_usage(usage: &Usage, model_calls: Option<u32>) -> WireUsage {
    WireUsage {
        input_tokens: usage.prompt_tokens(),
        output_tokens: usage.output,
        total_tokens: usage.total_tokens(),
        cache_read_tokens: usage.cache_read,
        cache_write_tokens: usage.cache_write,
        reasoning_tokens: usage.reasoning.unwrap_or(0),
        model_request_count: model_calls,
    }
}

/// The plan checklist as todos.
pub fn todos(plan: &[PlanItem]) -> Vec<Todo> {
    plan.iter()
        .map(|item| Todo {
            content: item.step.clone(),
            status: match item.status {
                PlanStatus::Pending => TodoStatus::Pending,
                PlanStatus::InProgress => TodoStatus::InProgress,
                PlanStatus::Completed => TodoStatus::Completed,
            },
            priority: TodoPriority::Medium,
        })
        .collect()
}

/// The text blocks of a tool result, joined.
pub fn result_text(content: &[ContentBlock]) -> String {
    let mut out = String::new();
    for block in content {
        match block {
            ContentBlock::Text { text } => {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
            ContentBlock::Image { mime_type, .. } => {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(&format!("[image {mime_type}]"));
            }
            _ => {}
        }
    }
    out
}

pub(super) fn error_kind(code: ErrorCode) -> (&'static str, &'static str) {
    match code {
        ErrorCode::Provider => ("provider_error", "provider"),
        ErrorCode::MaxSteps => ("max_turns", "max_steps"),
        ErrorCode::EmptyPrompt => ("invalid_input", "empty_prompt"),
        ErrorCode::Compaction => ("compaction_error", "compaction"),
        ErrorCode::Session => ("session_error", "session"),
        // ZCode's `error_max_budget`, as a failure with the cap's message.
        ErrorCode::BudgetExceeded => ("max_budget", "budget_exceeded"),
    }
}
