//! Turn requests of the ZCode app-server: send, stop, steer, compact and goal.

use std::sync::Arc;
use std::time::Duration;

use agent_core::event::RunKind;

use super::{ok, Reply, RpcError, Server};
use crate::zcode::mapping::ZcodeTurn;
use crate::zcode::wire::{CompactAcceptance, GoalStatus};
use crate::zcode::wire::{
    CompactResult, CompactState, GoalAction, GoalInfo, GoalParams, GoalResult, RequestId,
    SendParams, SendResult, SessionParams, SteerParams, SteerResult, StopResult,
};
use agent_host::session::{now_ms, Busy, Goal, StartError};

/// A turn that cannot start, in the protocol's error form: `prompt is running` (-32010),
/// a sub-agent's session (invalid params) or a closed session (-32004).
fn start_error(err: StartError) -> RpcError {
    match err {
        StartError::Busy(busy) => RpcError::running(busy.to_string()),
        StartError::Subagent { .. } => RpcError::invalid_params("sessionId", err.to_string()),
        StartError::Closed(id) => RpcError::not_active(&id),
    }
}

/// How long a `session/stop` request waits for the turn to end before answering.
const STOP_WAIT: Duration = Duration::from_secs(10);

impl Server {
    pub(super) async fn send(&self, p: SendParams) -> Reply {
        self.active(&p.session_id)?;
        if p.content.trim().is_empty() {
            return Err(RpcError::invalid_params("content", "the prompt is empty"));
        }
        let (session, log, claim) = self.claim(&p.session_id).await?;
        let observer = claim.observe(
            &session,
            Box::new(
                ZcodeTurn::new(log, session.id())
                    .with_gate(self.out.gate())
                    .with_subagents(self.log_resolver()),
            ),
        );
        // `/name args` naming one of the workspace's commands starts with its prompt.
        let content = self
            .commands
            .expand(&self.manager, &session, &p.content)
            .await
            .map_err(|message| RpcError::invalid_params("content", message))?
            .unwrap_or(p.content);
        let turn = session
            .start_prompt(content, p.input_id, observer)
            .map_err(start_error)?;
        tracing::info!(session = %session.id(), turn = %turn.turn_id, "turn started");
        ok(SendResult {
            session_id: p.session_id,
            accepted: true,
            state_revision: session.view().revision,
        })
    }

    pub(super) fn stop(self: &Arc<Self>, id: Option<RequestId>, p: SessionParams) {
        let session = match self.active(&p.session_id).map(|(s, _)| s) {
            Ok(session) => session,
            Err(err) => return self.out.reply(id, Err(err)),
        };
        let stopped = session.stop();
        // Its sub-agents' questions go with it.
        let mut sessions = vec![session.clone()];
        while let Some(next) = sessions.pop() {
            self.cancel_interactions(next.id());
            sessions.extend(next.subagents());
        }
        let session_id = session.id().to_string();
        let result = move |stopped| {
            ok(StopResult {
                session_id: session_id.clone(),
                stopped,
            })
        };
        if !stopped || id.is_none() {
            return self.out.reply(id, result(stopped));
        }
        // Answer once the turn is over (its turn.completed is then already queued).
        let out = self.out.clone();
        tokio::spawn(async move {
            session.wait_idle(STOP_WAIT).await;
            out.reply(id, result(true));
        });
    }

    pub(super) fn steer(&self, p: SteerParams) -> Reply {
        let (session, _) = self.active(&p.session_id)?;
        if p.content.trim().is_empty() {
            return Err(RpcError::invalid_params("content", "the text is empty"));
        }
        let running = session.steer(p.content);
        ok(SteerResult {
            session_id: p.session_id,
            accepted: true,
            queued_for_next_turn: !running,
        })
    }

    pub(super) async fn compact(&self, p: SessionParams) -> Reply {
        let (mut session, mut log) = self.active(&p.session_id)?;
        let started = match session.active_turn() {
            Some(active) => Err(StartError::Busy(Busy {
                session_id: p.session_id.clone(),
                turn_id: active.turn_id,
            })),
            None => {
                let (claimed, claimed_log, claim) = self.claim(&p.session_id).await?;
                let observer = claim.observe(
                    &claimed,
                    Box::new(
                        ZcodeTurn::new(claimed_log.clone(), claimed.id())
                            .with_gate(self.out.gate()),
                    ),
                );
                let started = claimed.start_compact(observer);
                (session, log) = (claimed, claimed_log);
                started
            }
        };
        let (response, state, operation_id) = match started {
            Ok(turn) => (
                "Compaction started.",
                CompactAcceptance::Accepted,
                Some(turn.turn_id),
            ),
            Err(StartError::Busy(busy)) => match session.active_turn().map(|a| a.kind) {
                Some(RunKind::Compact) => (
                    "A compaction is already running.",
                    CompactAcceptance::AlreadyRunning,
                    Some(busy.turn_id),
                ),
                _ => return Err(RpcError::running(busy.to_string())),
            },
            Err(other) => return Err(start_error(other)),
        };
        ok(CompactResult {
            response: response.to_string(),
            snapshot: Box::new(self.snapshot(&session, &log, None)),
            compact: CompactState {
                state,
                operation_id,
            },
        })
    }

    pub(super) async fn goal(&self, p: GoalParams) -> Reply {
        let (session, log) = self.active(&p.session_id)?;
        if let Some(active) = session.active_turn() {
            return Err(RpcError::running(format!(
                "prompt is running: session {} is busy with turn {}",
                session.id(),
                active.turn_id
            )));
        }
        let objective = p
            .objective
            .as_deref()
            .map(str::trim)
            .unwrap_or_default()
            .to_string();
        if matches!(p.action, GoalAction::Set | GoalAction::Replace) && objective.is_empty() {
            return Err(RpcError::invalid_params(
                "objective",
                "required for set and replace",
            ));
        }
        let action = p.action;
        let response = session
            .update_meta(move |meta| {
                let now = now_ms();
                match (action, meta.goal.as_mut()) {
                    (GoalAction::Show, Some(goal)) => format!(
                        "Goal ({}): {}",
                        if goal.paused { "paused" } else { "active" },
                        goal.objective
                    ),
                    (GoalAction::Set | GoalAction::Replace, existing) => {
                        let created_at = existing.map(|g| g.created_at).unwrap_or(now);
                        meta.goal = Some(Goal {
                            objective: objective.clone(),
                            paused: false,
                            created_at,
                            updated_at: now,
                        });
                        format!("Goal set: {objective}")
                    }
                    (GoalAction::Clear, Some(_)) => {
                        meta.goal = None;
                        "Goal cleared.".to_string()
                    }
                    (GoalAction::Pause, Some(goal)) => {
                        goal.paused = true;
                        goal.updated_at = now;
                        format!("Goal paused: {}", goal.objective)
                    }
                    (GoalAction::Resume, Some(goal)) => {
                        goal.paused = false;
                        goal.updated_at = now;
                        format!("Goal resumed: {}", goal.objective)
                    }
                    (_, None) => "No goal is set.".to_string(),
                }
            })
            .await
            .map_err(RpcError::internal)?;
        let goal = session.meta().goal.map(|g| GoalInfo {
            objective: g.objective,
            status: if g.paused {
                GoalStatus::Paused
            } else {
                GoalStatus::Active
            },
            created_at: g.created_at,
            updated_at: g.updated_at,
        });
        ok(GoalResult {
            response,
            goal,
            snapshot: Box::new(self.snapshot(&session, &log, None)),
        })
    }
}
