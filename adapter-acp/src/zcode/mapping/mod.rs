//! The event processor of the ZCode front end: maps one turn's [`AgentEvent`]s to
//! `session/event` payloads appended to the session's [`EventLog`].
//!
//! A ZCode turn is a whole prompt (agent-core's "turns" are model calls): `turn.started`
//! once at the start, then `model.streaming` / `tool.updated` / `session.updated`, and
//! exactly one `turn.completed` (`success`, or `cancelled` for an aborted run) or
//! `turn.failed` at the end.
//!
//! The capabilities show as follows:
//! - MCP tools are ordinary tool calls (`tool.updated`, tool parts).
//! - A hook's decision about a call and a sandbox block travel with the call's
//!   `tool.updated` `result` (`result.metadata`) or `error` (`error.code`, `error.data`: a
//!   hook veto is `type: "hook_denied"` with the hook and its reason); other hook decisions
//!   (a blocked prompt, a stop continuation) are only logged.
//! - The sandbox report is a `session.updated{sandbox}`.
//! - `ContextUsage` is a `session.updated{contextUsed, contextWindow}`; a compaction inside a
//!   prompt is `session.updated{compaction: {state: "running"|"completed", auto, reason,
//!   before, after}}`.
//! - A sub-agent (a `Task` call's child) is a session of its own: `SubagentStarted` gives
//!   the call a `tool.updated` `progress` with `source: "subagent"`, `agentType`,
//!   `childSessionId` and `background` (the call's `result` / `error` carry them too), and
//!   starts a turn (`turn.started`, `inputSource: "subagent"`) on the child's own
//!   `session/event` stream; each `Subagent` event goes through this same mapping onto that
//!   stream (a grandchild's onto its own); `SubagentFinished` ends the child's turn
//!   (`turn.completed` / `turn.failed`). A background sub-agent is also announced on the
//!   parent's stream as `session.updated{taskId, status, toolCallId, toolName,
//!   description}`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use agent_core::{
    event::{CompactionReason, RunKind, ToolStatus},
    hooks::HookOutcome,
    permission::PermissionAction,
    tool::ProgressStream,
    AgentEvent, RunStatus, Usage,
};

use crate::coverage::Coverage;
use crate::zcode::eventlog::EventLog;
use crate::zcode::wire::{
    CompactionState, InputSource, OriginSource, TaskStatus, ToolErrorKind, TurnPhase,
};
use crate::zcode::wire::{
    CompactionUpdate, EventBody, ModelStreamingPayload, SessionEvent, SessionUpdatedPayload,
    SharedStr, SubagentOrigin, ToolErrorBody, ToolResultBody, ToolUpdatedPayload, TurnError,
    TurnFailedPayload, WireSandbox,
};
use agent_host::session::{new_id, now_ms, Session, TurnInfo, TurnObserver, TurnOutcome};

/// The event log of one session.
pub type ZLog = EventLog<SessionEvent>;

/// Finds (or makes) the event log of a session by id: where a sub-agent's events go.
pub type LogResolver = Arc<dyn Fn(&str) -> Arc<ZLog> + Send + Sync>;

mod observer;
#[cfg(test)]
mod tests;
mod values;

use values::{compaction_reason, error_kind, subagent_status, OUTPUT_TAIL};
pub use values::{emit, event_id, result_text, todos, tool_meta, wire_usage};

/// A sub-agent's turn on its own session's stream.
struct ChildTurn {
    turn: Box<ZcodeTurn>,
    info: TurnInfo,
    session: Option<Arc<Session>>,
}

/// How a sub-agent's run ended (its `SubagentFinished`).
struct SubagentEnd {
    status: RunStatus,
    final_text: Option<String>,
    error: Option<String>,
    usage: Usage,
    duration_ms: u64,
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
    /// Where sub-agents' events go (none: they are not shown).
    logs: Option<LogResolver>,
    /// The running sub-agents' turns, by task id.
    children: HashMap<String, ChildTurn>,
    /// The sub-agent each `Task` call runs, by call id.
    origins: HashMap<String, SubagentOrigin>,
    /// `turn.started`'s `inputSource`.
    input_source: InputSource,
    /// Why the running compaction started.
    compaction: Option<CompactionReason>,
    /// Before and after of the last finished compaction.
    compaction_sizes: Option<(u64, u64)>,
    /// Model calls and tool calls seen (for a sub-agent's turn, which has no outcome of its
    /// own).
    counts: (u32, u32),
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
            logs: None,
            children: HashMap::new(),
            origins: HashMap::new(),
            input_source: InputSource::User,
            compaction: None,
            compaction_sizes: None,
            counts: (0, 0),
        }
    }

    /// Shows sub-agents' events on their own sessions' logs, which `logs` finds by id.
    pub fn with_subagents(mut self, logs: LogResolver) -> Self {
        self.logs = Some(logs);
        self
    }

    /// The turn of sub-agent `task_id` (made on first use; `None` without a resolver).
    fn child(&mut self, session: &Session, task_id: &str) -> Option<&mut ChildTurn> {
        if !self.children.contains_key(task_id) {
            let logs = self.logs.clone()?;
            let child_session = session.subagent(task_id);
            let turn_id = child_session
                .as_ref()
                .and_then(|s| s.active_turn())
                .map(|a| a.turn_id)
                .unwrap_or_else(|| new_id("turn"));
            let mut turn = ZcodeTurn::new(logs(task_id), task_id);
            turn.logs = Some(logs);
            turn.input_source = InputSource::Subagent;
            let info = TurnInfo {
                turn_id,
                kind: RunKind::Prompt,
                number: 1,
                input: String::new(),
                input_id: None,
                started_at: now_ms(),
            };
            self.children.insert(
                task_id.to_string(),
                ChildTurn {
                    turn: Box::new(turn),
                    info,
                    session: child_session,
                },
            );
        }
        self.children.get_mut(task_id)
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

    /// A `tool.updated` `progress` of a `Task` call naming its sub-agent.
    fn emit_subagent_progress(
        &mut self,
        session: &Session,
        turn: &TurnInfo,
        call_id: &str,
        origin: SubagentOrigin,
        output_preview: Option<String>,
    ) {
        let elapsed_ms = session
            .tool_call(call_id)
            .and_then(|s| s.started_at)
            .map(|start| u64::try_from(now_ms() - start).unwrap_or(0))
            .unwrap_or(0);
        let payload = ToolUpdatedPayload::Progress {
            tool_call_id: call_id.to_string(),
            tool_name: self.tool_name(call_id, "Task"),
            elapsed_ms,
            stdout_tail: None,
            stderr_tail: None,
            output_preview,
            origin: Some(origin),
        };
        self.emit(turn, EventBody::ToolUpdated(payload));
    }

    /// Ends a sub-agent's turn on its stream: `turn.completed` (`success`, `cancelled`) or
    /// `turn.failed` (`subagent_error`).
    fn finish_subagent(&mut self, session: &Session, turn: &TurnInfo, end: SubagentEnd) {
        if end.status == RunStatus::Error {
            self.emit(
                turn,
                EventBody::TurnFailed(TurnFailedPayload {
                    error: TurnError {
                        kind: "subagent_error".to_string(),
                        message: end
                            .error
                            .unwrap_or_else(|| "the sub-agent failed".to_string()),
                        code: "subagent".to_string(),
                    },
                    turn_phase: TurnPhase::Execution,
                    input_id: None,
                }),
            );
            return;
        }
        let outcome = TurnOutcome {
            status: end.status,
            final_text: end.final_text,
            error: None,
            usage: end.usage,
            model_calls: self.counts.0,
            tool_calls: self.counts.1,
            duration_ms: end.duration_ms,
            summary: None,
        };
        self.finished(session, turn, &outcome);
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
                self.counts.1 += 1;
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
                        origin: None,
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
                let meta = tool_meta(session.tool_call(id).as_ref());
                let origin = self.origins.get(id).cloned();
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
                            metadata: (!meta.is_empty()).then_some(meta),
                        },
                        duration: *duration_ms,
                        origin,
                    }
                } else {
                    let vetoed = meta.hooks.iter().any(|h| h.outcome == HookOutcome::Deny);
                    let (kind, code) = if self.denied.contains(id) {
                        (ToolErrorKind::PermissionDenied, None)
                    } else if vetoed {
                        (ToolErrorKind::HookDenied, Some("hook_denied".to_string()))
                    } else if let Some(block) = &meta.block {
                        (
                            ToolErrorKind::SandboxDenied,
                            serde_json::to_value(block.code)
                                .ok()
                                .and_then(|v| v.as_str().map(str::to_string)),
                        )
                    } else {
                        (ToolErrorKind::ToolError, None)
                    };
                    ToolUpdatedPayload::Error {
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
                self.counts.0 += 1;
                self.emit(
                    turn,
                    EventBody::SessionUpdated(SessionUpdatedPayload {
                        usage: Some(wire_usage(usage, None)),
                        context_window: Some(session.agent().context_window()),
                        total_token_count: Some(session.usage().total_tokens()),
                        ..Default::default()
                    }),
                );
            }
            AgentEvent::ContextUsage { used, window, .. } => self.emit(
                turn,
                EventBody::SessionUpdated(SessionUpdatedPayload {
                    context_used: Some(*used),
                    context_window: Some(*window),
                    ..Default::default()
                }),
            ),
            AgentEvent::CompactionStarted { reason } => {
                self.compaction = Some(*reason);
                self.emit(
                    turn,
                    EventBody::SessionUpdated(SessionUpdatedPayload {
                        compaction: Some(CompactionUpdate {
                            state: CompactionState::Running,
                            operation_id: turn.turn_id.clone(),
                            auto: Some(*reason != CompactionReason::Manual),
                            reason: Some(compaction_reason(*reason)),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                );
            }
            AgentEvent::CompactionFinished { before, after, .. } => {
                let reason = self.compaction.take().unwrap_or(CompactionReason::Auto);
                self.emit(
                    turn,
                    EventBody::SessionUpdated(SessionUpdatedPayload {
                        compaction: Some(CompactionUpdate {
                            state: CompactionState::Completed,
                            operation_id: turn.turn_id.clone(),
                            auto: Some(reason != CompactionReason::Manual),
                            reason: Some(compaction_reason(reason)),
                            before: Some(*before),
                            after: Some(*after),
                            error: None,
                        }),
                        ..Default::default()
                    }),
                );
            }
            AgentEvent::SandboxReport(report) => self.emit(
                turn,
                EventBody::SessionUpdated(SessionUpdatedPayload {
                    sandbox: Some(WireSandbox::from(report)),
                    ..Default::default()
                }),
            ),
            AgentEvent::SubagentStarted {
                task_id,
                name,
                call_id,
                description,
                background,
                ..
            } => {
                let origin = SubagentOrigin {
                    source: OriginSource::Subagent,
                    agent_id: task_id.clone(),
                    agent_type: name.clone(),
                    background: *background,
                    child_session_id: task_id.clone(),
                    description: description.clone(),
                };
                self.origins.insert(call_id.clone(), origin.clone());
                self.emit_subagent_progress(session, turn, call_id, origin, None);
                if *background {
                    self.emit(
                        turn,
                        EventBody::SessionUpdated(SessionUpdatedPayload {
                            task_id: Some(task_id.clone()),
                            status: Some(TaskStatus::Running),
                            tool_call_id: Some(call_id.clone()),
                            tool_name: Some(self.tool_name(call_id, "Task")),
                            description: description.clone(),
                            ..Default::default()
                        }),
                    );
                }
                let input = description.clone().unwrap_or_else(|| name.clone());
                if let Some(child) = self.child(session, task_id) {
                    child.info.input = input;
                    let own = child.session.clone();
                    child
                        .turn
                        .started(own.as_deref().unwrap_or(session), &child.info);
                }
            }
            AgentEvent::Subagent {
                task_id,
                event: inner,
                ..
            } => {
                let Some(child) = self.child(session, task_id) else {
                    return Coverage::NotShown;
                };
                let own = child.session.clone();
                child
                    .turn
                    .map(own.as_deref().unwrap_or(session), &child.info, inner);
            }
            AgentEvent::SubagentFinished {
                task_id,
                call_id,
                status,
                final_text,
                error,
                usage,
                duration_ms,
                ..
            } => {
                if let Some(origin) = self.origins.get(call_id).cloned() {
                    let preview = Some(format!("sub-agent {}", subagent_status(*status).as_str()));
                    self.emit_subagent_progress(session, turn, call_id, origin.clone(), preview);
                    if origin.background {
                        let tail = final_text.as_deref().or(error.as_deref()).map(|t| {
                            agent_host::text::cut_utf8_tail(t, OUTPUT_TAIL).to_string()
                        });
                        self.emit(
                            turn,
                            EventBody::SessionUpdated(SessionUpdatedPayload {
                                task_id: Some(task_id.clone()),
                                status: Some(subagent_status(*status)),
                                tool_call_id: Some(call_id.clone()),
                                tool_name: Some(self.tool_name(call_id, "Task")),
                                description: origin.description.clone(),
                                output_tail: tail,
                                ..Default::default()
                            }),
                        );
                    }
                }
                if let Some(mut child) = self.children.remove(task_id) {
                    let own = child.session.clone();
                    let own = own.as_deref().unwrap_or(session);
                    child.turn.finish_subagent(
                        own,
                        &child.info,
                        SubagentEnd {
                            status: *status,
                            final_text: final_text.clone(),
                            error: error.clone(),
                            usage: *usage,
                            duration_ms: *duration_ms,
                        },
                    );
                    child.turn.flush();
                }
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
            | AgentEvent::Error { .. }
            | AgentEvent::RunFinished { .. }
            // A hook's decision about a call and a sandbox block travel with the call's
            // `tool.updated` result or error (the session host records them on the call);
            // decisions about no call are only logged.
            | AgentEvent::HookDecided { .. }
            | AgentEvent::ToolBlocked { .. } => return Coverage::NotShown,
            other => return Coverage::unknown(other),
        }
        Coverage::Shown
    }
}
