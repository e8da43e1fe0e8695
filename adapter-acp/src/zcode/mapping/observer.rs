//! [`ZcodeTurn`], the session's [`TurnObserver`]: the turn's [`ZcodeMapping`] and where its
//! frames go, the session's event log and its sub-agents' (a stream each: its log, turn id
//! and the batch's timestamp).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use agent_core::AgentEvent;
use agent_host::backpressure::OutputGate;
use agent_host::session::{new_id, now_ms, Session, TurnInfo, TurnObserver, TurnOutcome};
use agent_host::turn::{Mapping, TurnState};
use futures::future::BoxFuture;

use super::{event_id, LogResolver, Totals, ZFrame, ZLog, ZcodeMapping};
use crate::zcode::wire::{EventBody, SessionEvent, SharedStr};

/// How long a turn's end waits to be stored before it is shown anyway: beyond the journal's
/// own wait for a failing storage (after which it shows events unstored), so reached only
/// when the storage hangs.
const END_STORED_WAIT: Duration = Duration::from_secs(5);

/// One session's stream of the turn.
struct Out {
    log: Arc<ZLog>,
    session_id: SharedStr,
    turn_id: Option<SharedStr>,
    /// The timestamp of the batch's events (taken at its first).
    timestamp: Option<i64>,
    /// Events appended since the last flush (an estimate from above of what the log's sink
    /// holds: another append may have flushed them already).
    held: usize,
    /// The session a sub-agent's stream reads its totals from: its own, else its nearest
    /// ancestor's (`None`: the turn's session).
    session: Option<Arc<Session>>,
}

impl Out {
    fn new(
        log: Arc<ZLog>,
        session_id: &str,
        turn_id: Option<String>,
        session: Option<Arc<Session>>,
    ) -> Self {
        Self {
            log,
            session_id: SharedStr::from(session_id),
            turn_id: turn_id.map(SharedStr::from),
            timestamp: None,
            held: 0,
            session,
        }
    }

    /// Appends one event (the sink may hold it until [`flush`](Self::flush)).
    fn append(&mut self, body: EventBody) {
        let timestamp = *self.timestamp.get_or_insert_with(now_ms);
        let (session_id, turn_id) = (self.session_id.clone(), self.turn_id.clone());
        self.held += 1;
        self.log.append_held(|seq| SessionEvent {
            event_id: event_id(),
            session_id,
            turn_id,
            seq,
            timestamp,
            body,
        });
    }

    fn flush(&mut self) {
        self.timestamp = None;
        self.held = 0;
        self.log.flush();
    }
}

/// Maps one turn (prompt or compaction) of a session to ZCode events.
///
/// The events of one batch (the agent events already waiting when the turn took them, up
/// to the session's [`TurnObserver::flush`] before its next wait) share the timestamp
/// taken at the batch's first event: they are mapped within microseconds. Each event is
/// appended with [`EventLog::append_held`](crate::zcode::eventlog::EventLog::append_held):
/// the server's sink holds the batch's lines and hands them to the writer as one message
/// at that flush.
pub struct ZcodeTurn {
    mapping: ZcodeMapping,
    own: Out,
    /// The running sub-agents' streams, by task id.
    children: HashMap<String, Out>,
    /// Where sub-agents' events go (none: they are not shown).
    logs: Option<LogResolver>,
    gate: Option<Arc<OutputGate>>,
    /// [`TurnObserver::ending`] wrote the turn's end, withheld until `finished`.
    end_written: bool,
}

impl ZcodeTurn {
    /// An observer appending to `log`.
    pub fn new(log: Arc<ZLog>, session_id: impl Into<String>) -> Self {
        let session_id: String = session_id.into();
        Self {
            mapping: ZcodeMapping::new(String::new(), agent_core::event::RunKind::Prompt),
            own: Out::new(log, &session_id, None, None),
            children: HashMap::new(),
            logs: None,
            gate: None,
            end_written: false,
        }
    }

    /// Shows sub-agents' events on their own sessions' logs, which `logs` finds by id.
    pub fn with_subagents(mut self, logs: LogResolver) -> Self {
        self.logs = Some(logs);
        self
    }

    /// Makes the turn wait for `gate` before each agent event (backpressure from the
    /// writer).
    pub fn with_gate(mut self, gate: Arc<OutputGate>) -> Self {
        self.gate = Some(gate);
        self
    }

    /// Opens the stream of each sub-agent along `event`'s wrappers (and of the one it
    /// starts) that is not open yet: its log, and the turn id its session runs (the
    /// session host made the session before this event), else a fresh one. Returns the
    /// session whose stream the innermost event shows on (`None`: the turn's), whose totals
    /// a `Usage` event reads.
    fn open_streams(&mut self, session: &Session, mut event: &AgentEvent) -> Option<Arc<Session>> {
        let logs = self.logs.as_ref()?;
        let mut parent: Option<Arc<Session>> = None;
        loop {
            let (task_id, inner) = match event {
                AgentEvent::Subagent { task_id, event, .. } => (task_id, Some(event.as_ref())),
                AgentEvent::SubagentStarted { task_id, .. } => (task_id, None),
                _ => return parent,
            };
            let opened = self.children.get(task_id);
            let child = match opened.filter(|_| self.mapping.has_subagent(task_id)) {
                Some(out) => out.session.clone(),
                None => {
                    let own = parent.as_deref().unwrap_or(session).subagent(task_id);
                    let turn_id = own
                        .as_ref()
                        .and_then(|s| s.active_turn())
                        .map(|a| a.turn_id)
                        .unwrap_or_else(|| new_id("turn"));
                    self.mapping.open_subagent(task_id, turn_id.clone());
                    let out = Out::new(
                        logs(task_id),
                        task_id,
                        Some(turn_id),
                        own.or(parent.clone()),
                    );
                    let child = out.session.clone();
                    self.children.insert(task_id.clone(), out);
                    child
                }
            };
            match inner {
                Some(inner) => (parent, event) = (child, inner),
                None => return parent,
            }
        }
    }
}

/// Appends `frame` to its stream (`own`, or a sub-agent's of `children`); a sub-agent's
/// turn that ended is written durably and handed over, and its stream closed.
fn write(own: &mut Out, children: &mut HashMap<String, Out>, frame: ZFrame<'_>) {
    let Some(task_id) = frame.stream else {
        return own.append(frame.body);
    };
    let ended = matches!(
        frame.body,
        EventBody::TurnCompleted(_) | EventBody::TurnFailed(_)
    );
    let Some(out) = children.get_mut(task_id) else {
        return;
    };
    out.append(frame.body);
    if ended {
        out.log.request_sync();
        out.flush();
        children.remove(task_id);
    }
}

impl TurnObserver for ZcodeTurn {
    fn output_gate(&self) -> Option<Arc<OutputGate>> {
        self.gate.clone()
    }

    fn flush(&mut self) {
        self.own.flush();
        for out in self.children.values_mut() {
            out.flush();
        }
    }

    fn held(&self) -> usize {
        self.own.held + self.children.values().map(|c| c.held).sum::<usize>()
    }

    fn started(&mut self, _session: &Session, turn: &TurnInfo) {
        self.own.turn_id = Some(SharedStr::from(turn.turn_id.as_str()));
        self.mapping =
            ZcodeMapping::new(turn.turn_id.as_str(), turn.kind).with_subagents(self.logs.is_some());
        let input_id = turn.input_id.as_deref();
        if let Some(body) = self
            .mapping
            .turn_started(turn.number, &turn.input, input_id)
        {
            self.own.append(body);
        }
    }

    fn observe(
        &mut self,
        session: &Session,
        _turn: &TurnInfo,
        state: &TurnState,
        event: &AgentEvent,
    ) {
        let streamed = self.open_streams(session, event);
        if let AgentEvent::Usage { .. } = event.innermost() {
            let session = streamed.as_deref().unwrap_or(session);
            self.mapping.set_totals(Totals {
                context_window: session.agent().context_window(),
                total_tokens: session.usage().total_tokens(),
            });
        }
        let Self {
            mapping,
            own,
            children,
            ..
        } = self;
        mapping.map(state, event, |frame| write(own, children, frame));
    }

    fn ending(
        &mut self,
        _session: &Session,
        turn: &TurnInfo,
        outcome: &TurnOutcome,
    ) -> Option<BoxFuture<'static, ()>> {
        // The turn's last event is written durably (fsynced) side by side with the
        // transcript and the metadata, and shown in `finished`, once all three are.
        let journal = self.own.log.journal().clone();
        journal.withhold();
        self.end_written = true;
        let body = self.mapping.turn_end(outcome, turn.input_id.as_deref());
        self.own.append(body);
        self.own.log.request_sync();
        self.own.flush();
        let seq = journal.appended();
        Some(Box::pin(async move {
            if !journal.wait_stored(seq, END_STORED_WAIT).await {
                tracing::warn!(session = %journal.session_id(), seq, "the turn's end is shown before it is stored");
            }
        }))
    }

    fn finished(&mut self, _session: &Session, turn: &TurnInfo, outcome: &TurnOutcome) {
        if std::mem::take(&mut self.end_written) {
            self.own.log.journal().release();
            return;
        }
        // A turn stopped before it really started: its end is written durably (fsynced)
        // before it is shown.
        let body = self.mapping.turn_end(outcome, turn.input_id.as_deref());
        self.own.append(body);
        self.own.log.request_sync();
    }
}
