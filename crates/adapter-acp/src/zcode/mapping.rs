//! The event processor of the ZCode front end: maps one turn's [`AgentEvent`]s to
//! `session/event` payloads appended to the session's [`EventLog`].
//!
//! A ZCode turn is a whole prompt (agent-core's "turns" are model calls): `turn.started`
//! once at the start, then `model.streaming` / `tool.updated` / `session.updated`, and
//! exactly one `turn.completed` (`success`, or `cancelled` for an aborted run) or
//! `turn.failed` at the end.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use agent_core::{
    AgentEvent, ContentBlock, ErrorCode, PermissionAction, PlanItem, PlanStatus, ProgressStream,
    RunKind, RunStatus, ToolStatus, Usage,
};

use crate::coverage::Coverage;
use crate::zcode::eventlog::EventLog;
use crate::zcode::wire::{
    CompactionUpdate, EventBody, ModelStreamingPayload, SessionEvent, SessionUpdatedPayload,
    SharedStr, Todo, ToolErrorBody, ToolResultBody, ToolUpdatedPayload, TurnCompletedPayload,
    TurnError, TurnFailedPayload, TurnStartedPayload, WireUsage,
};
use agent_host::session::{now_ms, Session, TurnInfo, TurnObserver, TurnOutcome};

/// The event log of one session.
pub type ZLog = EventLog<SessionEvent>;

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
                PlanStatus::Pending => "pending",
                PlanStatus::InProgress => "in_progress",
                PlanStatus::Completed => "completed",
            },
            priority: "medium",
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

fn error_kind(code: ErrorCode) -> (&'static str, &'static str) {
    match code {
        ErrorCode::Provider => ("provider_error", "provider"),
        ErrorCode::MaxSteps => ("max_turns", "max_steps"),
        ErrorCode::EmptyPrompt => ("invalid_input", "empty_prompt"),
        ErrorCode::Compaction => ("compaction_error", "compaction"),
        ErrorCode::Session => ("session_error", "session"),
    }
}

/// Maps one turn (prompt or compaction) of a session to ZCode events.
///
/// The events of one batch (the agent events already waiting when the turn took them, up
/// to the session's [`TurnObserver::flush`] before its next wait) share the timestamp
/// taken at the batch's first event: they are mapped within microseconds. Each event is
/// appended with [`EventLog::append_held`]: the server's sink holds the batch's lines and
/// hands them to the writer as one message at that flush.
pub struct ZcodeTurn {
    log: Arc<ZLog>,
    session_id: SharedStr,
    turn_id: Option<SharedStr>,
    timestamp: Option<i64>,
    tool_names: HashMap<String, String>,
    step_calls: Vec<String>,
    step_results: HashMap<String, bool>,
    denied: HashSet<String>,
    text: String,
    gate: Option<Arc<agent_host::backpressure::OutputGate>>,
    /// Events appended since the last flush (an estimate from above of what the log's sink
    /// holds: another append may have flushed them already).
    held: usize,
}

impl ZcodeTurn {
    /// An observer appending to `log`.
    pub fn new(log: Arc<ZLog>, session_id: impl Into<String>) -> Self {
        Self {
            log,
            session_id: SharedStr::from(session_id.into()),
            turn_id: None,
            timestamp: None,
            tool_names: HashMap::new(),
            step_calls: Vec::new(),
            step_results: HashMap::new(),
            denied: HashSet::new(),
            text: String::new(),
            gate: None,
            held: 0,
        }
    }

    /// Makes the turn wait for `gate` before each agent event (backpressure from the
    /// writer).
    pub fn with_gate(mut self, gate: Arc<agent_host::backpressure::OutputGate>) -> Self {
        self.gate = Some(gate);
        self
    }

    /// Appends one event of the turn (the sink may hold it until [`TurnObserver::flush`],
    /// which the session calls before every wait).
    fn emit(&mut self, turn: &TurnInfo, body: EventBody) {
        let turn_id = match &self.turn_id {
            Some(id) if id.as_str() == turn.turn_id => id.clone(),
            _ => self
                .turn_id
                .insert(SharedStr::from(turn.turn_id.as_str()))
                .clone(),
        };
        let timestamp = *self.timestamp.get_or_insert_with(now_ms);
        let session_id = self.session_id.clone();
        self.held += 1;
        self.log.append_held(|seq| SessionEvent {
            event_id: event_id(),
            session_id,
            turn_id: Some(turn_id),
            seq,
            timestamp,
            body,
        });
    }

    fn tool_name(&self, id: &str, fallback: &str) -> String {
        self.tool_names
            .get(id)
            .cloned()
            .unwrap_or_else(|| fallback.to_string())
    }

    /// Maps one event of a prompt turn, and says whether its
    /// kind is shown on ZCode at all. Every variant is named: one agent-core adds shows up
    /// as [`Coverage::Unknown`] (and fails the coverage test) until it is mapped or listed.
    pub fn map(&mut self, session: &Session, turn: &TurnInfo, event: &AgentEvent) -> Coverage {
        let tool = |p: ToolUpdatedPayload| EventBody::ToolUpdated(p);
        match event {
            // A model call starts a new step of tool calls (`tool.updated` `batch`).
            AgentEvent::TurnStarted { .. } => {
                self.step_calls.clear();
                self.step_results.clear();
                return Coverage::NotShown;
            }
            AgentEvent::TextDelta { delta } => {
                self.text.push_str(delta);
                self.emit(
                    turn,
                    EventBody::ModelStreaming(ModelStreamingPayload::TextDelta {
                        delta: delta.clone(),
                    }),
                );
            }
            AgentEvent::ReasoningDelta { delta } => self.emit(
                turn,
                EventBody::ModelStreaming(ModelStreamingPayload::ReasoningDelta {
                    delta: delta.clone(),
                }),
            ),
            AgentEvent::AssistantMessage { .. } => {
                // Streamed as deltas; a new model call's text starts a new answer.
                self.text.clear();
                return Coverage::NotShown;
            }
            AgentEvent::ToolCall { id, name, args, .. } => {
                self.tool_names.insert(id.clone(), name.clone());
                self.step_calls.push(id.clone());
                self.emit(
                    turn,
                    EventBody::ModelStreaming(ModelStreamingPayload::ToolCall {
                        tool_call_id: id.clone(),
                        tool_name: name.clone(),
                        input: args.clone(),
                    }),
                );
                self.emit(
                    turn,
                    tool(ToolUpdatedPayload::Scheduled {
                        tool_call_id: id.clone(),
                        tool_name: name.clone(),
                        input: args.clone(),
                    }),
                );
            }
            // Permission prompts reach the client as `interaction/requestPermission`; a
            // refusal shows as the call's `permission_denied` error.
            AgentEvent::PermissionDecided {
                info,
                action,
                granted,
                ..
            } => {
                if !granted && matches!(action, PermissionAction::Deny | PermissionAction::Cancel) {
                    self.denied.insert(info.id.clone());
                }
                return Coverage::NotShown;
            }
            AgentEvent::ToolExecutionStarted { id, name } => self.emit(
                turn,
                tool(ToolUpdatedPayload::Started {
                    tool_call_id: id.clone(),
                    tool_name: name.clone(),
                    started_at: session
                        .tool_call(id)
                        .and_then(|s| s.started_at)
                        .unwrap_or_else(now_ms),
                }),
            ),
            AgentEvent::ToolProgress { id, stream, text } => {
                let elapsed_ms = session
                    .tool_call(id)
                    .and_then(|s| s.started_at)
                    .map(|start| u64::try_from(now_ms() - start).unwrap_or(0))
                    .unwrap_or(0);
                let (mut stdout_tail, mut stderr_tail, mut output_preview) = (None, None, None);
                match stream {
                    ProgressStream::Stdout => stdout_tail = Some(text.clone()),
                    ProgressStream::Stderr => stderr_tail = Some(text.clone()),
                    _ => output_preview = Some(text.clone()),
                }
                self.emit(
                    turn,
                    tool(ToolUpdatedPayload::Progress {
                        tool_call_id: id.clone(),
                        tool_name: self.tool_name(id, ""),
                        elapsed_ms,
                        stdout_tail,
                        stderr_tail,
                        output_preview,
                    }),
                );
            }
            AgentEvent::PlanUpdated { plan, .. } => self.emit(
                turn,
                EventBody::SessionUpdated(SessionUpdatedPayload {
                    todos: Some(todos(plan)),
                    ..Default::default()
                }),
            ),
            AgentEvent::ToolResult {
                id,
                name,
                status,
                content,
                truncated,
                redacted,
                changed_files,
                duration_ms,
            } => {
                let text = result_text(content);
                let ok = *status == ToolStatus::Ok;
                let payload = if ok {
                    ToolUpdatedPayload::Result {
                        tool_call_id: id.clone(),
                        tool_name: name.clone(),
                        result: ToolResultBody {
                            success: true,
                            content: text,
                            truncated: *truncated,
                            redacted: *redacted,
                            changed_files: changed_files.clone(),
                        },
                        duration: *duration_ms,
                    }
                } else {
                    ToolUpdatedPayload::Error {
                        tool_call_id: id.clone(),
                        tool_name: name.clone(),
                        error: ToolErrorBody {
                            kind: match self.denied.contains(id) {
                                true => "permission_denied",
                                false => "tool_error",
                            },
                            message: text,
                        },
                        duration: *duration_ms,
                    }
                };
                self.emit(turn, tool(payload));
                self.step_results.insert(id.clone(), ok);
                if !self.step_calls.is_empty()
                    && self
                        .step_calls
                        .iter()
                        .all(|c| self.step_results.contains_key(c))
                {
                    let success_count =
                        u32::try_from(self.step_results.values().filter(|ok| **ok).count())
                            .unwrap_or(u32::MAX);
                    let error_count = u32::try_from(self.step_results.len())
                        .unwrap_or(u32::MAX)
                        .saturating_sub(success_count);
                    let tool_call_ids = std::mem::take(&mut self.step_calls);
                    self.emit(
                        turn,
                        tool(ToolUpdatedPayload::Batch {
                            tool_call_ids,
                            success_count,
                            error_count,
                        }),
                    );
                    self.step_results.clear();
                }
            }
            AgentEvent::Usage {
                turn: usage,
                cumulative: _,
            } => {
                let view = session.view();
                self.emit(
                    turn,
                    EventBody::SessionUpdated(SessionUpdatedPayload {
                        usage: Some(wire_usage(usage, None)),
                        context_window: Some(view.context_window),
                        context_used: Some(usage.total_tokens()),
                        total_token_count: Some(view.meta.usage.total_tokens()),
                        ..Default::default()
                    }),
                );
            }
            // The run's framing and the request attempts have no ZCode event; the turn
            // starts with `turn.started` (on start) and ends with `turn.completed` /
            // `turn.failed` from the turn's outcome, which also carries a fatal error
            // (recoverable errors are only logged); a call is announced whole by `ToolCall`
            // (not its streamed arguments); the prompt was the client's own input.
            AgentEvent::RunStarted { .. }
            | AgentEvent::UserMessage { .. }
            | AgentEvent::RequestStarted { .. }
            | AgentEvent::RetryScheduled { .. }
            | AgentEvent::AssistantStarted
            | AgentEvent::ToolUseStarted { .. }
            | AgentEvent::ToolUseArgsDelta { .. }
            | AgentEvent::ToolUseEnded { .. }
            | AgentEvent::TurnEnded { .. }
            | AgentEvent::TurnRecovery { .. }
            | AgentEvent::PermissionRequested(_)
            | AgentEvent::CompactionFinished { .. }
            | AgentEvent::Error { .. }
            | AgentEvent::RunFinished { .. }
            // ZCode's session events have no sandbox status or hook decisions; what a block or
            // a hook refused shows in the call's `tool.updated` error (its `ToolResult`).
            | AgentEvent::SandboxReport(_)
            | AgentEvent::HookDecided { .. }
            | AgentEvent::ToolBlocked { .. }
            | AgentEvent::SubagentStarted { .. }
            | AgentEvent::Subagent { .. }
            | AgentEvent::SubagentFinished { .. }
            // The context events (issue 20) are mapped by a later task (projection
            // contextUsed/contextWindow, compaction events).
            | AgentEvent::ContextUsage { .. }
            | AgentEvent::CompactionStarted { .. } => return Coverage::NotShown,
            other => return Coverage::unknown(other),
        }
        Coverage::Shown
    }
}

impl TurnObserver for ZcodeTurn {
    fn output_gate(&self) -> Option<Arc<agent_host::backpressure::OutputGate>> {
        self.gate.clone()
    }

    fn flush(&mut self) {
        self.timestamp = None;
        self.held = 0;
        self.log.flush();
    }

    fn held(&self) -> usize {
        self.held
    }

    fn started(&mut self, _session: &Session, turn: &TurnInfo) {
        if turn.kind == RunKind::Prompt {
            self.emit(
                turn,
                EventBody::TurnStarted(TurnStartedPayload {
                    turn_number: turn.number,
                    input: turn.input.clone(),
                    input_id: turn.input_id.clone(),
                    input_source: "user",
                    execution_kind: "agent",
                }),
            );
        }
    }

    fn event(&mut self, session: &Session, turn: &TurnInfo, event: &AgentEvent) {
        match turn.kind {
            RunKind::Prompt => {
                self.map(session, turn, event);
            }
            // A compaction's summary text is not assistant output; only its usage shows.
            RunKind::Compact => {
                if let AgentEvent::Usage { .. } = event {
                    self.map(session, turn, event);
                }
            }
        }
    }

    fn finished(&mut self, _session: &Session, turn: &TurnInfo, outcome: &TurnOutcome) {
        if turn.kind == RunKind::Compact {
            let (state, error) = match outcome.status {
                RunStatus::Success => ("completed", None),
                RunStatus::Aborted => ("cancelled", None),
                RunStatus::Error => ("failed", outcome.error.as_ref().map(|(_, m)| m.clone())),
            };
            self.emit(
                turn,
                EventBody::SessionUpdated(SessionUpdatedPayload {
                    compaction: Some(CompactionUpdate {
                        state,
                        operation_id: turn.turn_id.clone(),
                        error,
                    }),
                    ..Default::default()
                }),
            );
            self.log.request_sync();
            return;
        }
        let body = match outcome.status {
            RunStatus::Success | RunStatus::Aborted => {
                EventBody::TurnCompleted(TurnCompletedPayload {
                    response: outcome
                        .final_text
                        .clone()
                        .unwrap_or_else(|| self.text.clone()),
                    token_count: outcome.usage.total_tokens(),
                    usage: wire_usage(&outcome.usage, Some(outcome.model_calls)),
                    tool_call_count: outcome.tool_calls,
                    duration: outcome.duration_ms,
                    result_type: match outcome.status {
                        RunStatus::Aborted => "cancelled",
                        _ => "success",
                    },
                    input_id: turn.input_id.clone(),
                })
            }
            RunStatus::Error => {
                let (code, message) = outcome
                    .error
                    .clone()
                    .unwrap_or((ErrorCode::Provider, "the turn failed".to_string()));
                let (kind, code) = error_kind(code);
                EventBody::TurnFailed(TurnFailedPayload {
                    error: TurnError {
                        kind: kind.to_string(),
                        message,
                        code: code.to_string(),
                    },
                    turn_phase: "execution",
                    input_id: turn.input_id.clone(),
                })
            }
        };
        self.emit(turn, body);
        // The turn's last event is written durably (fsynced) before it is shown.
        self.log.request_sync();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::testing::one_of_each as every_event;
    use agent_host::session::{AgentFactory, CreateOptions, FileStore, SessionManager};
    use agent_providers::{ProviderConfig, ProviderId};

    #[tokio::test]
    async fn every_agent_event_is_mapped_or_listed_as_not_shown() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let manager = SessionManager::new(
            AgentFactory::new(ProviderConfig::new(ProviderId::Scripted)),
            FileStore::new(dir.path().join("data")),
            tx,
        );
        let session = manager
            .create(CreateOptions {
                workspace_path: dir.path().display().to_string(),
                ..Default::default()
            })
            .await
            .expect("a session");
        let log = Arc::new(EventLog::new(|_: &agent_host::session::StoredEvent| {}));
        let turn = TurnInfo {
            turn_id: "turn_1".into(),
            kind: RunKind::Prompt,
            number: 1,
            input: "hi".into(),
            input_id: None,
            started_at: now_ms(),
        };
        let mut zcode = ZcodeTurn::new(log.clone(), session.id());
        let mut shown = 0;
        for event in every_event() {
            let before = log.appended();
            let coverage = zcode.map(&session, &turn, &event);
            let events = log.appended() - before;
            match coverage {
                Coverage::Unknown => panic!("the ZCode mapping does not know {event:?}"),
                Coverage::NotShown => assert_eq!(events, 0, "{event:?} is not shown"),
                Coverage::Shown => {
                    assert!(events > 0, "{event:?} maps to nothing");
                    shown += 1;
                }
            }
        }
        assert_eq!(shown, 8);
    }

    #[test]
    fn event_ids_are_distinct_v4_uuids() {
        let ids: Vec<String> = (0..1000).map(|_| event_id()).collect();
        let unique: HashSet<&String> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len());
        for id in &ids {
            let uuid = id.strip_prefix("evt_").expect("evt_ prefix");
            assert_eq!(uuid.len(), 36, "{id}");
            let parsed = uuid::Uuid::parse_str(uuid).expect("a uuid");
            assert_eq!(parsed.get_version_num(), 4, "{id}");
            assert_eq!(parsed.get_variant(), uuid::Variant::RFC4122, "{id}");
            assert_eq!(
                parsed.hyphenated().to_string(),
                uuid,
                "lower-case, hyphenated"
            );
        }
    }
}
