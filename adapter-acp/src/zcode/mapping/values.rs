//! The values the mapping computes: ids, usage, todos, tool metadata and texts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

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
    match state {
        Some(state) => ToolMeta {
            block: state.block.as_ref().map(WireBlock::from),
            hooks: state.hooks.clone(),
            child_session_id: state.subagent.clone(),
        },
        None => ToolMeta::default(),
    }
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

pub(super) fn subagent_status(status: RunStatus) -> TaskStatus {
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

/// Bits of a uuid v4 that are random and below its variant bits: the event counter's room.
const COUNTER_BITS: u128 = (1 << 62) - 1;

/// A fresh event id, `evt_<uuid>` as the spec has it: a uuid v4 drawn once per process
/// with a per-event counter added to its low 62 random bits, so ids stay well-formed v4
/// uuids, distinct within the process (2^62 events before one repeats) and as unlikely
/// to collide across processes as the 60 remaining random bits make them, without a
/// `getrandom` call per event.
pub fn event_id() -> String {
    static BASE: OnceLock<u128> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let base = *BASE.get_or_init(|| uuid::Uuid::new_v4().as_u128());
    let n = u128::from(NEXT.fetch_add(1, Ordering::Relaxed));
    let id = (base & !COUNTER_BITS) | (base.wrapping_add(n) & COUNTER_BITS);
    let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
    let text = uuid::Uuid::from_u128(id)
        .hyphenated()
        .encode_lower(&mut text);
    let mut out = String::with_capacity(4 + text.len());
    out.push_str("evt_");
    out.push_str(text);
    out
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
    }
}
