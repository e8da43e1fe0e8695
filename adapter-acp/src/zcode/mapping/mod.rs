//! The event processor of the ZCode front end: one turn's [`AgentEvent`]s become
//! `session/event` payloads ([`ZcodeMapping`], an [`agent_host::turn::Mapping`] over the
//! turn's [`TurnState`]), which [`ZcodeTurn`] (the session's
//! [`TurnObserver`](agent_host::session::TurnObserver)) appends to
//! the session's [`EventLog`] and its sub-agents' logs.
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

use std::collections::HashMap;
use std::sync::Arc;

use agent_core::{
    event::{CompactionReason, ErrorCode, RunKind},
    AgentEvent, RunStatus,
};
use agent_host::session::{new_id, now_ms, TurnOutcome};
use agent_host::turn::{Coverage, Mapping, TurnState};

use crate::zcode::eventlog::EventLog;
use crate::zcode::wire::{CompactionState, ExecutionKind, InputSource, ResultType, TurnPhase};
use crate::zcode::wire::{
    CompactionUpdate, EventBody, ModelStreamingPayload, SessionEvent, SessionUpdatedPayload,
    TurnCompletedPayload, TurnError, TurnFailedPayload, TurnStartedPayload, WireSandbox,
};
use crate::zcode::wire::{DecisionSource, ModelFallbackUpdate, PermissionResolvedPayload};

mod observer;
#[cfg(test)]
mod tests;
mod tools;
mod values;

pub use observer::ZcodeTurn;
pub(crate) use values::subagent_status;
use values::{compaction_reason, error_kind};
pub use values::{emit, event_id, result_text, todos, tool_meta, wire_usage};

/// The event log of one session.
pub type ZLog = EventLog<SessionEvent>;

/// Finds (or makes) the event log of a session by id: where a sub-agent's events go.
pub type LogResolver = Arc<dyn Fn(&str) -> Arc<ZLog> + Send + Sync>;

/// One ZCode event of a turn: its type and payload, and the stream it goes on.
#[derive(Debug, Clone)]
pub struct ZFrame<'e> {
    /// The sub-agent whose session's stream it goes on (its task id, also its session id);
    /// `None`: the turn's own session.
    pub stream: Option<&'e str>,
    /// The event.
    pub body: EventBody,
}

/// What a `session.updated{usage}` says of the session beyond the model call: the
/// session's, not the turn's, so the caller sets it ([`ZcodeMapping::set_totals`]) before
/// a `Usage` event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// The context window of the session's model.
    pub context_window: u64,
    /// The session's usage so far, in tokens (its sub-agents' included).
    pub total_tokens: u64,
}

/// What ZCode shows of one stream (the turn's session's, or a sub-agent's) that the turn
/// state does not hold.
#[derive(Debug, Clone, Default)]
struct Stream {
    /// The stream's turn id (a compaction's `operationId`).
    turn_id: String,
    /// The answer streamed since the last assistant message: the turn's response when the
    /// run ends without a final text.
    text: String,
    /// The model call (step) whose `tool.updated` `batch` went out.
    batched: Option<u32>,
}

impl Stream {
    fn new(turn_id: impl Into<String>) -> Self {
        Self {
            turn_id: turn_id.into(),
            ..Self::default()
        }
    }
}

/// The ZCode mapping of one turn (a prompt, or a compaction: then only its usage and
/// context show). Each event, read with the turn's [`TurnState`] (the calls, their hooks,
/// blocks and refusals, the step of tool calls, the sub-agents and their runs, the
/// compaction), becomes [`ZFrame`]s. Of its own it keeps its settings and, per stream, the
/// turn id, the answer streamed so far and which step's batch went out.
#[derive(Debug, Clone)]
pub struct ZcodeMapping {
    kind: RunKind,
    own: Stream,
    /// The running sub-agents' streams, by task id (at any depth: task ids are unique).
    children: HashMap<String, Stream>,
    /// Sub-agents' events show on their own streams (else not at all).
    subagents: bool,
    totals: Totals,
    /// The sizes of the compaction a compaction turn made.
    compacted: Option<(u64, u64)>,
    clock: fn() -> i64,
}

impl ZcodeMapping {
    /// The mapping of turn `turn_id`, of `kind`.
    pub fn new(turn_id: impl Into<String>, kind: RunKind) -> Self {
        Self {
            kind,
            own: Stream::new(turn_id),
            children: HashMap::new(),
            subagents: false,
            totals: Totals::default(),
            compacted: None,
            clock: now_ms,
        }
    }

    /// Shows sub-agents' events on their own streams (`false`, the default: not at all).
    pub fn with_subagents(mut self, shown: bool) -> Self {
        self.subagents = shown;
        self
    }

    /// Reads `clock` (ms since the epoch) for the calls' elapsed time (a fixed clock for
    /// tests).
    pub fn with_clock(mut self, clock: fn() -> i64) -> Self {
        self.clock = clock;
        self
    }

    /// The session's totals the next `session.updated{usage}` carries.
    pub fn set_totals(&mut self, totals: Totals) {
        self.totals = totals;
    }

    /// Opens sub-agent `task_id`'s stream, its turn `turn_id` (the id its session gave
    /// the run). A stream not opened opens on its first event with a fresh turn id.
    pub fn open_subagent(&mut self, task_id: &str, turn_id: impl Into<String>) {
        self.children
            .insert(task_id.to_string(), Stream::new(turn_id));
    }

    /// Whether sub-agent `task_id`'s stream is open.
    pub fn has_subagent(&self, task_id: &str) -> bool {
        self.children.contains_key(task_id)
    }

    /// The turn's `turn.started`, `None` for a compaction.
    pub fn turn_started(
        &self,
        number: u32,
        input: &str,
        input_id: Option<&str>,
    ) -> Option<EventBody> {
        (self.kind == RunKind::Prompt).then(|| {
            EventBody::TurnStarted(TurnStartedPayload {
                turn_number: number,
                input: input.to_string(),
                input_id: input_id.map(str::to_string),
                input_source: InputSource::User,
                execution_kind: ExecutionKind::Agent,
            })
        })
    }

    /// The turn's last event: `turn.completed` / `turn.failed`, or for a compaction its
    /// `session.updated{compaction}`.
    pub fn turn_end(&self, outcome: &TurnOutcome, input_id: Option<&str>) -> EventBody {
        let input_id = input_id.map(str::to_string);
        match (self.kind, outcome.status) {
            (RunKind::Compact, _) => self.compaction_end(outcome),
            (_, RunStatus::Error) => {
                let (code, message) = outcome
                    .error
                    .clone()
                    .unwrap_or((ErrorCode::Provider, "the turn failed".to_string()));
                failed(error_kind(code), message, input_id)
            }
            _ => completed(outcome, &self.own.text, input_id),
        }
    }

    /// The end of a compaction turn: `session.updated{compaction}` completed, cancelled or
    /// failed, with the sizes the compaction reported.
    fn compaction_end(&self, outcome: &TurnOutcome) -> EventBody {
        let (state, error) = match outcome.status {
            RunStatus::Success => (CompactionState::Completed, None),
            RunStatus::Aborted => (CompactionState::Cancelled, None),
            RunStatus::Error => (
                CompactionState::Failed,
                outcome.error.as_ref().map(|(_, m)| m.clone()),
            ),
        };
        let operation_id = self.own.turn_id.clone();
        compaction(
            state,
            operation_id,
            CompactionReason::Manual,
            self.compacted,
            error,
        )
    }

    /// The state of stream `at` (a sub-agent's opens on first use).
    fn stream(&mut self, at: Option<&str>) -> &mut Stream {
        match at {
            None => &mut self.own,
            Some(task_id) => self
                .children
                .entry(task_id.to_string())
                .or_insert_with(|| Stream::new(new_id("turn"))),
        }
    }

    /// A compaction turn shows only its usage and the context after it (its start and end
    /// are the turn's own events; its summary is not assistant output).
    fn map_compaction<'e>(
        &mut self,
        state: &TurnState,
        event: &'e AgentEvent,
        out: &mut impl FnMut(ZFrame<'e>),
    ) -> Coverage {
        match event {
            AgentEvent::Usage { .. } | AgentEvent::ContextUsage { .. } => {
                self.map_in(None, state, event, out)
            }
            AgentEvent::CompactionFinished { .. } => {
                self.compacted = state.compaction().and_then(|c| c.sizes);
                Coverage::NotShown
            }
            _ => Coverage::NotShown,
        }
    }

    /// Maps `event` of the run whose state is `run`, on stream `at`.
    fn map_in<'e, F: FnMut(ZFrame<'e>)>(
        &mut self,
        at: Option<&'e str>,
        run: &TurnState,
        event: &'e AgentEvent,
        out: &mut F,
    ) -> Coverage {
        let mut send = |body| out(ZFrame { stream: at, body });
        match event {
            AgentEvent::TextDelta { delta } => {
                self.stream(at).text.push_str(delta);
                send(streaming(ModelStreamingPayload::TextDelta {
                    delta: delta.clone(),
                }));
            }
            AgentEvent::ReasoningDelta { delta } => {
                send(streaming(ModelStreamingPayload::ReasoningDelta {
                    delta: delta.clone(),
                }))
            }
            // Streamed as deltas; a new model call's text starts a new answer.
            AgentEvent::AssistantMessage { .. } => {
                self.stream(at).text.clear();
                return Coverage::NotShown;
            }
            AgentEvent::ToolCall { id, name, args, .. } => {
                for body in tools::announced(id, name, args) {
                    send(body);
                }
            }
            AgentEvent::ToolExecutionStarted { id, name } => {
                send(tools::started(run, id, name, self.clock))
            }
            AgentEvent::ToolProgress { id, stream, text } => send(tools::progress(
                run,
                id,
                "",
                Some((*stream, text)),
                None,
                self.clock,
            )),
            AgentEvent::ToolResult { .. } => {
                let batched = &mut self.stream(at).batched;
                let batch = tools::batch(run, batched);
                tools::result(run, event).into_iter().chain(batch).for_each(send);
            }
            AgentEvent::PlanUpdated { plan, .. } => send(session_updated(SessionUpdatedPayload {
                todos: Some(todos(plan)),
                ..Default::default()
            })),
            AgentEvent::Usage { turn: usage, .. } => send(session_updated(SessionUpdatedPayload {
                usage: Some(wire_usage(usage, None)),
                context_window: Some(self.totals.context_window),
                total_token_count: Some(self.totals.total_tokens),
                ..Default::default()
            })),
            AgentEvent::ContextUsage { used, window, .. } => {
                send(session_updated(SessionUpdatedPayload {
                    context_used: Some(*used),
                    context_window: Some(*window),
                    ..Default::default()
                }))
            }
            // Running, or completed with its sizes (the state has the reason it started with).
            AgentEvent::CompactionStarted { .. } | AgentEvent::CompactionFinished { .. } => {
                let turn_id = self.stream(at).turn_id.clone();
                let (reason, sizes) = run
                    .compaction()
                    .map_or((CompactionReason::Auto, None), |c| (c.reason, c.sizes));
                let state = match sizes {
                    Some(_) => CompactionState::Completed,
                    None => CompactionState::Running,
                };
                send(compaction(state, turn_id, reason, sizes, None));
            }
            AgentEvent::SandboxReport(report) => send(session_updated(SessionUpdatedPayload {
                sandbox: Some(WireSandbox::from(report)),
                ..Default::default()
            })),
            AgentEvent::SubagentStarted {
                task_id, call_id, ..
            } => self.subagent_started(at, run, task_id, call_id, out),
            AgentEvent::Subagent {
                task_id,
                event: inner,
                ..
            } => return self.subagent_event(run, task_id, inner, out),
            AgentEvent::SubagentFinished { .. } => self.subagent_finished(at, run, event, out),
            AgentEvent::PermissionDecided { info, action, .. } => match rule_decision(info, *action) {
                Some(resolved) => send(resolved),
                None => return Coverage::NotShown,
            },
            AgentEvent::ModelFallback { from, to, reason } => send(session_updated(SessionUpdatedPayload {
                model_fallback: Some(ModelFallbackUpdate {
                    from: from.clone(),
                    to: to.clone(),
                    reason: reason.clone(),
                }),
                ..Default::default()
            })),
            // Permission prompts reach the client as `interaction/requestPermission`; a
            // refusal shows as the call's `permission_denied` error (the state marks it).
            AgentEvent::PermissionRequested(_)
            // A hook's decision about a call and a sandbox block travel with the call's
            // `tool.updated` result or error (the state records them on the call);
            // decisions about no call are only logged.
            | AgentEvent::HookDecided { .. }
            | AgentEvent::ToolBlocked { .. }
            // The turn ends with `turn.completed` / `turn.failed` from the turn's outcome,
            // which also carries a fatal error (recoverable errors are only logged); a
            // model call's stop has no event.
            | AgentEvent::TurnEnded { .. }
            | AgentEvent::Error { .. }
            | AgentEvent::RunFinished { .. } => return Coverage::NotShown,
            // The run's framing ([`agent_host::turn::FRAMING`]) has no ZCode event: the
            // turn starts with `turn.started`, a call is announced whole by `ToolCall`
            // (the state keeps each model call's step of calls) and the prompt was the
            // client's own input.
            other => return Coverage::rest(other),
        }
        Coverage::Shown
    }
}

impl Mapping for ZcodeMapping {
    type Frame<'e> = ZFrame<'e>;

    fn map<'e>(
        &mut self,
        state: &TurnState,
        event: &'e AgentEvent,
        mut out: impl FnMut(Self::Frame<'e>),
    ) -> Coverage {
        match self.kind {
            RunKind::Prompt => self.map_in(None, state, event, &mut out),
            RunKind::Compact => self.map_compaction(state, event, &mut out),
        }
    }
}

fn streaming(payload: ModelStreamingPayload) -> EventBody {
    EventBody::ModelStreaming(payload)
}

fn session_updated(payload: SessionUpdatedPayload) -> EventBody {
    EventBody::SessionUpdated(payload)
}

/// `permission.resolved` for a call a permission rule (or the session's "always allow"
/// answer) decided without the client; `None` for a decision the client made (an ask rule
/// puts the call to it) or the mode made.
fn rule_decision(
    info: &agent_core::event::PermissionInfo,
    action: agent_core::permission::PermissionAction,
) -> Option<EventBody> {
    use agent_core::permission::{rules::RuleAction, PermissionAction};
    let rule = info.rule.as_ref().filter(|r| r.action != RuleAction::Ask)?;
    let decision = match action {
        PermissionAction::Allow => crate::zcode::wire::Decision::Allow,
        PermissionAction::Deny => crate::zcode::wire::Decision::Deny,
        PermissionAction::Prompt | PermissionAction::Cancel => return None,
    };
    let decision_source = match rule.source.as_str() {
        "session" => DecisionSource::Session,
        _ => DecisionSource::Rule,
    };
    Some(EventBody::PermissionResolved(PermissionResolvedPayload {
        tool_call_id: info.id.clone(),
        tool_name: info.name.clone(),
        decision,
        reason: rule.describe(),
        decision_source,
        rule: rule.clone(),
    }))
}

/// `session.updated{compaction}`: a compaction (`reason`, the sizes once it finished) in
/// `state`.
fn compaction(
    state: CompactionState,
    operation_id: String,
    reason: CompactionReason,
    sizes: Option<(u64, u64)>,
    error: Option<String>,
) -> EventBody {
    session_updated(SessionUpdatedPayload {
        compaction: Some(CompactionUpdate {
            state,
            operation_id,
            error,
            auto: Some(reason != CompactionReason::Manual),
            reason: Some(compaction_reason(reason)),
            before: sizes.map(|s| s.0),
            after: sizes.map(|s| s.1),
        }),
        ..Default::default()
    })
}

/// `turn.completed`: `success`, or `cancelled` for an aborted run; the response is the
/// final text, else the answer streamed since the last assistant message.
fn completed(outcome: &TurnOutcome, text: &str, input_id: Option<String>) -> EventBody {
    EventBody::TurnCompleted(TurnCompletedPayload {
        response: outcome
            .final_text
            .clone()
            .unwrap_or_else(|| text.to_string()),
        token_count: outcome.usage.total_tokens(),
        usage: wire_usage(&outcome.usage, Some(outcome.model_calls)),
        tool_call_count: outcome.tool_calls,
        duration: outcome.duration_ms,
        result_type: match outcome.status {
            RunStatus::Aborted => ResultType::Cancelled,
            _ => ResultType::Success,
        },
        input_id,
    })
}

/// `turn.failed` in the execution phase: an error of `kind` and `code`.
fn failed((kind, code): (&str, &str), message: String, input_id: Option<String>) -> EventBody {
    EventBody::TurnFailed(TurnFailedPayload {
        error: TurnError {
            kind: kind.to_string(),
            message,
            code: code.to_string(),
        },
        turn_phase: TurnPhase::Execution,
        input_id,
    })
}
