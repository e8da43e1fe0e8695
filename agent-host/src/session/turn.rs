//! A session's turns: [`TurnObserver`] (a front end's view of one turn), and starting,
//! driving, stopping and steering a turn on a [`Session`].
//!
//! Ordering guarantees a front end can rely on:
//! - [`TurnObserver::started`] runs before any event of the turn, and
//!   [`TurnObserver::finished`] after the last one, exactly once per turn (also when the
//!   turn was stopped before it really started).
//! - When `finished` runs, the transcript holds the final text and is durable (synced to
//!   disk), the metadata is persisted, and [`Session::active_turn`] is already `None`.
//! - [`TurnObserver::ending`] runs between the last event and `finished`, at most once per
//!   turn (not for a turn stopped before it really started), and what it returns is done
//!   before `finished` runs.

use std::collections::HashMap;
use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;

use agent_core::{event::RunKind, AgentEvent, Run, RunStatus, UserInput};

use super::live::Session;
use super::queue::Queued;
use super::subagent::{ChildChange, NewChild};
use super::types::{
    now_ms, ActiveTurn, Busy, ToolCallState, ToolCallStatus, TurnInfo, TurnOutcome,
};
use crate::backpressure::OutputGate;
use crate::turn::TurnState;

/// Agent events a turn takes from its run at once (those already waiting, up to this many).
const EVENT_BATCH: usize = 256;

/// A front end's view of one turn: it maps the turn's events to its protocol.
pub trait TurnObserver: Send + 'static {
    /// The turn started; no event of it was seen yet.
    fn started(&mut self, session: &Session, turn: &TurnInfo);
    /// One agent event of the turn. The default does nothing: an observer implements this
    /// or [`observe`](Self::observe).
    fn event(&mut self, _session: &Session, _turn: &TurnInfo, _event: &AgentEvent) {}
    /// One agent event of the turn with the turn's state, which already includes it (the
    /// session applies every event to one [`TurnState`] first). The default calls
    /// [`event`](Self::event).
    fn observe(
        &mut self,
        session: &Session,
        turn: &TurnInfo,
        _state: &TurnState,
        event: &AgentEvent,
    ) {
        self.event(session, turn, event);
    }
    /// The turn's last event was observed and its outcome is known; the transcript and the
    /// metadata are about to be synced. The work returned runs side by side with those
    /// syncs, and [`finished`](Self::finished) runs once all of it is done. An observer
    /// that keeps a durable log of its own writes the turn's end there now, without showing
    /// it ([`EventJournal::withhold`](crate::session::EventJournal::withhold)), and shows it
    /// in `finished`: the client learns of the turn's end once every file is durable, after
    /// one round of syncs instead of two. The default: nothing.
    fn ending(
        &mut self,
        _session: &Session,
        _turn: &TurnInfo,
        _outcome: &TurnOutcome,
    ) -> Option<BoxFuture<'static, ()>> {
        None
    }
    /// The turn ended; the session is idle again.
    fn finished(&mut self, session: &Session, turn: &TurnInfo, outcome: &TurnOutcome);
    /// Hands over output the observer holds back to send several events' frames at once.
    /// The session calls it before every wait (for the next agent events, for the output
    /// gate) and after [`started`](Self::started) and [`finished`](Self::finished), so
    /// output is batched only across events that were already waiting, never delayed.
    /// The default does nothing (an observer that sends every frame at once).
    fn flush(&mut self) {}
    /// How many messages the observer holds back (not yet handed to the output, so not
    /// yet counted on the [`output_gate`](Self::output_gate)): the turn counts them against
    /// the gate's limit too, so holding never lets the output outgrow the limit. An
    /// estimate from above is fine (it only flushes sooner). The default: none.
    fn held(&self) -> usize {
        0
    }
    /// The gate of the front end's output: the turn takes its next event only when the
    /// gate is [ready](OutputGate::ready), so a slow client stalls the turn instead of
    /// growing the output queue. `None` (the default): no backpressure.
    fn output_gate(&self) -> Option<Arc<OutputGate>> {
        None
    }
}

/// Why a turn could not start.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StartError {
    /// A turn (or compaction) is running.
    #[error(transparent)]
    Busy(#[from] Busy),
    /// The session is a live sub-agent's: its parent's run drives it.
    #[error(
        "session {session_id} is the session of a sub-agent of session {parent_id}: it takes no \
         prompts of its own"
    )]
    Subagent {
        /// The session.
        session_id: String,
        /// Its parent.
        parent_id: String,
    },
    /// The session was closed.
    #[error("Session is not active: {0}")]
    Closed(String),
}

impl Session {
    /// Starts a prompt turn (text, optionally with images). Fails with
    /// [`StartError::Busy`] while a turn (or compaction) runs.
    pub fn start_prompt(
        self: &Arc<Self>,
        input: impl Into<UserInput>,
        input_id: Option<String>,
        observer: Box<dyn TurnObserver>,
    ) -> Result<TurnInfo, StartError> {
        self.start(RunKind::Prompt, input.into(), input_id, observer)
    }

    /// Starts a compaction of the transcript, which holds the prompt lock like a turn.
    pub fn start_compact(
        self: &Arc<Self>,
        observer: Box<dyn TurnObserver>,
    ) -> Result<TurnInfo, StartError> {
        self.start(RunKind::Compact, UserInput::default(), None, observer)
    }

    fn start(
        self: &Arc<Self>,
        kind: RunKind,
        input: UserInput,
        input_id: Option<String>,
        observer: Box<dyn TurnObserver>,
    ) -> Result<TurnInfo, StartError> {
        self.startable()?;
        let gate = self.gate();
        {
            let data = self.data();
            // A queued turn holds the session too: it starts next.
            let holder = data
                .active
                .as_ref()
                .map(|active| active.turn_id.clone())
                .or_else(|| data.queue.front().map(|queued| queued.turn_id.clone()));
            if let Some(turn_id) = holder {
                return Err(StartError::Busy(Busy {
                    session_id: self.id().to_string(),
                    turn_id,
                }));
            }
        }
        let turn = Queued::new(kind, input, input_id, observer);
        Ok(self.launch(&gate, turn))
    }

    /// Fails when the session takes no turns: a sub-agent's, or closed.
    pub(super) fn startable(&self) -> Result<(), StartError> {
        if self.is_subagent() {
            return Err(StartError::Subagent {
                session_id: self.id().to_string(),
                parent_id: self.meta().parent_session_id.unwrap_or_default(),
            });
        }
        if self.is_closed() {
            return Err(StartError::Closed(self.id().to_string()));
        }
        Ok(())
    }

    /// Starts `turn` now (no turn runs; the caller holds the gate): its observer's
    /// `started`, then the task driving its run.
    pub(super) fn launch(self: &Arc<Self>, _gate: &MutexGuard<'_, ()>, turn: Queued) -> TurnInfo {
        let Queued {
            turn_id,
            kind,
            input,
            input_id,
            output,
            mut observer,
            aborted,
        } = turn;
        let (info, run) = {
            let mut data = self.data();
            let started_at = now_ms();
            if kind == RunKind::Prompt {
                data.meta.turn_count += 1;
                if data.meta.title.is_empty() {
                    data.meta.title = input.text.trim().chars().take(80).collect();
                    data.meta.title_from_input = true;
                }
            }
            data.meta.updated_at = started_at;
            data.revision += 1;
            let text = input.text.clone();
            // Set before the run starts: its first permission prompt may come at once, and
            // it names the turn.
            self.set_turn(Some(turn_id.clone()));
            let run = match (kind, output) {
                (RunKind::Prompt, Some(output)) => self.agent.prompt_structured(input, output),
                (RunKind::Prompt, None) => self.agent.prompt(input),
                (RunKind::Compact, _) => self.agent.compact(),
            };
            // A queued turn aborted before it started starts aborted: its run ends at once.
            if aborted {
                run.abort_handle().abort();
            }
            data.active = Some(ActiveTurn {
                turn_id: turn_id.clone(),
                kind,
                started_at,
                abort: Some(run.abort_handle()),
            });
            data.turn_aborted = aborted;
            data.turn_ended = false;
            let info = TurnInfo {
                turn_id,
                kind,
                number: data.meta.turn_count,
                input: text,
                input_id,
                started_at,
            };
            (info, run)
        };
        self.idle.send_replace(false);
        observer.started(self, &info);
        observer.flush();
        let session = self.clone();
        let turn = info.clone();
        tokio::spawn(async move { session.drive(run, turn, observer).await });
        info
    }

    async fn drive(
        self: Arc<Self>,
        mut run: Run,
        turn: TurnInfo,
        mut observer: Box<dyn TurnObserver>,
    ) {
        // The turn's start is written while the model is asked, off the prompt's path (the
        // writes are serial: the turn's end is written after it), and not synced: the turn's
        // end replaces it, synced.
        let start_written = tokio::spawn({
            let session = self.clone();
            async move { session.persist_buffered_logged().await }
        });
        let started = Instant::now();
        let mut state = TurnState::new();
        let gate = observer.output_gate();
        let mut batch = Vec::with_capacity(EVENT_BATCH);
        loop {
            // Everything observed so far goes out before the turn waits for the provider.
            observer.flush();
            if let Some(gate) = &gate {
                gate.ready().await;
            }
            if run.recv_many(&mut batch, EVENT_BATCH).await == 0 {
                break;
            }
            for event in batch.drain(..) {
                // The gate bounds the output per event, also inside a batch: a turn goes on
                // only while fewer than the limit are queued or held by the observer (a
                // lock-free check; it waits, after handing over what it holds, only when
                // the queue is full).
                if let Some(gate) = gate
                    .as_ref()
                    .filter(|g| !g.has_room() || g.queued() + observer.held() >= g.limit())
                {
                    observer.flush();
                    gate.ready().await;
                }
                // Sub-agent sessions are created (and, when a child ends, brought up to
                // date) before the observer sees the event.
                state.apply(&event);
                if let AgentEvent::RunFinished { .. } = event {
                    // No longer busy: the observer maps the run's end with `busy()` false.
                    self.data().turn_ended = true;
                }
                match self.track(&state, &event) {
                    Some(ChildChange::Started(child)) => child.persist_logged().await,
                    Some(ChildChange::Finished(child)) => {
                        if let Err(err) = child.sync_transcript().await {
                            tracing::warn!(session = %child.id(), error = %err, "cannot read a sub-agent's transcript");
                        }
                        child.persist_logged().await;
                    }
                    None => {}
                }
                observer.observe(&self, &turn, &state, &event);
            }
        }
        let mut outcome = state.outcome();
        outcome.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        // A sub-agent the run never reported finished (it should not happen: the run stops
        // its children first) is cancelled now.
        for child in self.all_subagents() {
            if child.finish_subagent(RunStatus::Aborted, None, None, None, None) {
                child.persist_logged().await;
            }
        }
        {
            let mut data = self.data();
            let now = now_ms();
            data.meta.updated_at = now;
            data.last_status = Some(outcome.status);
            data.last_steps = state.step();
            if outcome.status == RunStatus::Error {
                data.meta.last_error = outcome.error.as_ref().map(|(_, m)| m.clone());
            }
            // Calls the run never finished (it was aborted) are failed now.
            for state in data.tool_calls.values_mut() {
                if matches!(
                    state.status,
                    ToolCallStatus::Pending | ToolCallStatus::Running
                ) {
                    state.status = ToolCallStatus::Failed;
                    state.completed_at = Some(now);
                }
            }
        }
        let _ = start_written.await;
        // The turn's metadata and transcript are durable before the front end reports the
        // turn over; the two files are synced side by side, and with them whatever the
        // observer writes of the turn's end.
        let ending = observer.ending(&self, &turn, &outcome);
        tokio::join!(
            self.persist_logged(),
            self.sync_transcript_logged(),
            async {
                if let Some(ending) = ending {
                    ending.await;
                }
            }
        );
        let gate = self.gate();
        let next = {
            let mut data = self.data();
            data.active = None;
            data.turn_aborted = false;
            data.turn_ended = false;
            data.revision += 1;
            match data.held {
                true => None,
                false => data.queue.pop_front(),
            }
        };
        self.set_turn(None);
        if next.is_none() && self.data().queue.is_empty() {
            self.idle.send_replace(true);
        }
        observer.finished(&self, &turn, &outcome);
        observer.flush();
        drop(observer);
        // The next queued turn starts after this one's `finished`, in the same gate.
        if let Some(next) = next {
            self.launch(&gate, next);
        }
    }

    /// Records what `event` changes in the session (and, for a sub-agent's event, in the
    /// sub-agent's session); its tool calls as `state` (the turn's state, which already
    /// includes `event`) has them. Returns the sub-agent session that started or finished.
    pub(super) fn track(
        self: &Arc<Self>,
        state: &TurnState,
        event: &AgentEvent,
    ) -> Option<ChildChange> {
        match event {
            // The streaming events change nothing here: no lock for them.
            AgentEvent::TextDelta { .. }
            | AgentEvent::ReasoningDelta { .. }
            | AgentEvent::ToolProgress { .. } => return None,
            AgentEvent::Subagent {
                task_id,
                event: inner,
                ..
            } => {
                // A descendant's model calls count in this session's usage too.
                if let AgentEvent::Usage { turn, .. } = inner.innermost() {
                    self.data().meta.usage += turn;
                }
                let child = self.subagent(task_id)?;
                return match state.subagent(task_id) {
                    Some(node) => child.track(node.run(), inner),
                    None => child.track(&TurnState::new(), inner),
                };
            }
            AgentEvent::SubagentStarted {
                task_id,
                name,
                call_id,
                description,
                model,
                background,
                depth,
                ..
            } => {
                let child = self.start_subagent(NewChild {
                    task_id,
                    name,
                    call_id,
                    description: description.as_deref(),
                    model,
                    background: *background,
                    depth: *depth,
                })?;
                let mut data = self.data();
                if data.tool_calls.contains_key(call_id) {
                    record_call(&mut data.tool_calls, state, call_id);
                }
                return Some(ChildChange::Started(child));
            }
            AgentEvent::SubagentFinished {
                task_id,
                status,
                final_text,
                error,
                usage,
                duration_ms,
                ..
            } => {
                let child = self.subagent(task_id)?;
                child.finish_subagent(
                    *status,
                    final_text.clone(),
                    error.clone(),
                    Some(*usage),
                    Some(*duration_ms),
                );
                return Some(ChildChange::Finished(child));
            }
            _ => {}
        }
        let mut data = self.data();
        match event {
            AgentEvent::Usage { turn, .. } => {
                data.meta.usage += turn;
            }
            AgentEvent::ContextUsage { used, window, .. } => {
                data.meta.context_used = *used;
                data.context_window = Some(*window);
            }
            AgentEvent::ToolCall { id, .. } => record_call(&mut data.tool_calls, state, id),
            AgentEvent::ToolExecutionStarted { id, .. }
            | AgentEvent::ToolBlocked { id, .. }
            | AgentEvent::ToolResult { id, .. }
            | AgentEvent::HookDecided {
                call_id: Some(id), ..
            } if data.tool_calls.contains_key(id) => record_call(&mut data.tool_calls, state, id),
            AgentEvent::HookDecided {
                hook,
                event: point,
                outcome: decided,
                reason,
                ..
            } => tracing::info!(
                session = %self.id(),
                %hook,
                event = point.as_str(),
                outcome = decided.as_str(),
                reason = reason.as_deref().unwrap_or(""),
                "hook decided"
            ),
            AgentEvent::PlanUpdated { plan, .. } => data.meta.todos = plan.clone(),
            AgentEvent::SandboxReport(report) => {
                if report.falls_short() {
                    tracing::warn!(session = %self.id(), "{}", report.summary());
                } else {
                    tracing::info!(session = %self.id(), "{}", report.summary());
                }
                data.sandbox = Some(report.clone());
            }
            AgentEvent::Error {
                message,
                recoverable: true,
                ..
            } => tracing::warn!(session = %self.id(), %message, "recoverable agent error"),
            AgentEvent::CompactionStarted { reason } => data.compacting = Some(*reason),
            AgentEvent::CompactionFinished { .. } => {
                let reason = data.compacting.take();
                data.meta.last_compaction_auto =
                    Some(reason.is_some_and(|r| r != agent_core::event::CompactionReason::Manual));
            }
            _ => {}
        }
        None
    }

    /// Aborts the running turn (streaming, tools and pending approvals stop). Returns whether
    /// a turn was running.
    ///
    /// For a sub-agent's session this stops the sub-agent when it runs in the background
    /// (a foreground one stops with its parent's turn).
    pub fn stop(&self) -> bool {
        if let Some(parent) = self.parent() {
            return parent.background_tasks().stop(self.id()) == Some(true);
        }
        let mut data = self.data();
        if data.active.is_some() {
            data.turn_aborted = true;
        }
        match &data.active {
            Some(active) => {
                if let Some(abort) = &active.abort {
                    abort.abort();
                }
                self.agent.abort();
                true
            }
            None => false,
        }
    }

    /// Waits until no turn runs, at most `timeout`. Returns whether the session is idle.
    pub async fn wait_idle(&self, timeout: Duration) -> bool {
        let mut rx = self.idle.subscribe();
        let waited = tokio::time::timeout(timeout, rx.wait_for(|idle| *idle))
            .await
            .map(|r| r.is_ok());
        waited.unwrap_or(false)
    }

    /// Queues steering text for the running turn (or the next one). Returns whether a turn
    /// was running.
    pub fn steer(&self, text: String) -> bool {
        self.agent.steer(text);
        self.data().active.is_some()
    }
}

/// Copies tool call `id` as the turn's `state` has it into a session's table, without what
/// that table does not keep (the arguments; of the sandbox blocks only the last).
fn record_call(calls: &mut HashMap<String, ToolCallState>, state: &TurnState, id: &str) {
    if let Some(call) = state.call(id) {
        let entry = ToolCallState {
            name: call.name.clone(),
            status: call.status,
            started_at: call.started_at,
            completed_at: call.completed_at,
            block: call.block.clone(),
            hooks: call.hooks.clone(),
            subagent: call.subagent.clone(),
            args: serde_json::Value::Null,
            blocks: Vec::new(),
            denied: call.denied,
            step: call.step,
        };
        calls.insert(id.to_string(), entry);
    }
}
