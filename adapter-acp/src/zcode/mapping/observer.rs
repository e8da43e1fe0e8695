//! [`ZcodeTurn`] as the session's [`TurnObserver`]: a turn's start, events and end.

use std::sync::Arc;

use agent_core::{
    event::{ErrorCode, RunKind},
    AgentEvent, RunStatus,
};
use agent_host::session::{Session, TurnInfo, TurnObserver, TurnOutcome};

use super::{error_kind, wire_usage, ZcodeTurn};
use crate::zcode::wire::{
    CompactionState, ExecutionKind, ResultType, TurnPhase, WireCompactionReason,
};
use crate::zcode::wire::{
    CompactionUpdate, EventBody, SessionUpdatedPayload, TurnCompletedPayload, TurnError,
    TurnFailedPayload, TurnStartedPayload,
};

impl TurnObserver for ZcodeTurn {
    fn output_gate(&self) -> Option<Arc<agent_host::backpressure::OutputGate>> {
        self.gate.clone()
    }

    fn flush(&mut self) {
        self.timestamp = None;
        self.held = 0;
        self.log.flush();
        for child in self.children.values_mut() {
            child.turn.flush();
        }
    }

    fn held(&self) -> usize {
        self.held + self.children.values().map(|c| c.turn.held()).sum::<usize>()
    }

    fn started(&mut self, _session: &Session, turn: &TurnInfo) {
        if turn.kind == RunKind::Prompt {
            self.emit(
                turn,
                EventBody::TurnStarted(TurnStartedPayload {
                    turn_number: turn.number,
                    input: turn.input.clone(),
                    input_id: turn.input_id.clone(),
                    input_source: self.input_source,
                    execution_kind: ExecutionKind::Agent,
                }),
            );
        }
    }

    fn event(&mut self, session: &Session, turn: &TurnInfo, event: &AgentEvent) {
        match turn.kind {
            RunKind::Prompt => {
                self.map(session, turn, event);
            }
            // A compaction's summary text is not assistant output; only its usage and the
            // context after it show (its start and end are the turn's own events).
            RunKind::Compact => match event {
                AgentEvent::Usage { .. } | AgentEvent::ContextUsage { .. } => {
                    self.map(session, turn, event);
                }
                AgentEvent::CompactionFinished { before, after, .. } => {
                    self.compaction_sizes = Some((*before, *after));
                }
                _ => {}
            },
        }
    }

    fn finished(&mut self, _session: &Session, turn: &TurnInfo, outcome: &TurnOutcome) {
        if turn.kind == RunKind::Compact {
            let (state, error) = match outcome.status {
                RunStatus::Success => (CompactionState::Completed, None),
                RunStatus::Aborted => (CompactionState::Cancelled, None),
                RunStatus::Error => (
                    CompactionState::Failed,
                    outcome.error.as_ref().map(|(_, m)| m.clone()),
                ),
            };
            self.emit(
                turn,
                EventBody::SessionUpdated(SessionUpdatedPayload {
                    compaction: Some(CompactionUpdate {
                        state,
                        operation_id: turn.turn_id.clone(),
                        error,
                        auto: Some(false),
                        reason: Some(WireCompactionReason::Manual),
                        before: self.compaction_sizes.map(|s| s.0),
                        after: self.compaction_sizes.map(|s| s.1),
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
                        RunStatus::Aborted => ResultType::Cancelled,
                        _ => ResultType::Success,
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
                    turn_phase: TurnPhase::Execution,
                    input_id: turn.input_id.clone(),
                })
            }
        };
        self.emit(turn, body);
        // The turn's last event is written durably (fsynced) before it is shown.
        self.log.request_sync();
    }
}
