//! The run's event channel: what travels on it and the loop's sending side.

use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::event::{AgentEvent, ErrorCode};
use crate::inner::Inner;
use crate::message::Message;
use crate::run_scope::RunScope;
use crate::session::SessionRecord;

/// What travels on a run's event channel: one event, or a burst the loop had ready at once.
#[derive(Debug)]
pub(crate) enum Batch {
    One(AgentEvent),
    Many(Vec<AgentEvent>),
}

impl Batch {
    /// `events` as one batch; `None` when there are none.
    pub(crate) fn of(mut events: Vec<AgentEvent>) -> Option<Self> {
        match events.len() {
            0 => None,
            1 => events.pop().map(Batch::One),
            _ => Some(Batch::Many(events)),
        }
    }
}

/// Most events a burst carries: bounds what a slow reader can have queued (the channel holds
/// `EVENT_BUFFER` bursts) while amortising the channel's cost over many text deltas.
pub(crate) const MAX_BURST: usize = 64;

/// Sends events to the run's stream and carries its cancellation token.
#[derive(Clone)]
pub(crate) struct Emitter {
    tx: mpsc::Sender<Batch>,
    pub(crate) cancel: CancellationToken,
    /// The messages this run added to the transcript, for [`crate::Run::finish`].
    pub(crate) log: MessageLog,
    /// The background sub-agents this run started, stopped when it ends.
    pub(crate) scope: Arc<RunScope>,
}

/// An [`Emitter`] that does not keep the run's stream open: what a tool call's
/// [`crate::subagent::ParentRun`] holds, since a tool may keep its context past the run.
#[derive(Clone)]
pub(crate) struct WeakEmitter {
    tx: mpsc::WeakSender<Batch>,
    pub(crate) cancel: CancellationToken,
    log: MessageLog,
    pub(crate) scope: Arc<RunScope>,
}

impl WeakEmitter {
    /// The emitter, while the run's stream is open.
    pub(crate) fn upgrade(&self) -> Option<Emitter> {
        Some(Emitter {
            tx: self.tx.upgrade()?,
            cancel: self.cancel.clone(),
            log: self.log.clone(),
            scope: self.scope.clone(),
        })
    }
}

/// The messages one run added to the transcript, shared by the loop and the `Run`.
pub(crate) type MessageLog = Arc<Mutex<Vec<Message>>>;

impl Emitter {
    pub(crate) fn new(tx: mpsc::Sender<Batch>, cancel: CancellationToken) -> Self {
        Self {
            tx,
            cancel,
            log: MessageLog::default(),
            scope: Arc::default(),
        }
    }

    pub(crate) fn downgrade(&self) -> WeakEmitter {
        WeakEmitter {
            tx: self.tx.downgrade(),
            cancel: self.cancel.clone(),
            log: self.log.clone(),
            scope: self.scope.clone(),
        }
    }

    /// Notes a message the run added to the transcript.
    pub(crate) fn log_message(&self, message: &Message) {
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(message.clone());
    }

    pub(crate) async fn emit(&self, event: AgentEvent) {
        self.send(Batch::One(event)).await
    }

    pub(crate) async fn send(&self, batch: Batch) {
        // The channel is rarely full: skip the send future unless it is.
        let batch = match self.tx.try_send(batch) {
            Ok(()) => return,
            Err(mpsc::error::TrySendError::Full(batch)) => batch,
            Err(mpsc::error::TrySendError::Closed(_)) => {
                // The Run was dropped: nobody listens, so stop working.
                self.cancel.cancel();
                return;
            }
        };
        if self.tx.send(batch).await.is_err() {
            self.cancel.cancel();
        }
    }
}

/// Events a model call has ready, sent as one burst when the provider stream has nothing
/// more ready (so nothing waits on the network), or when the burst is full.
pub(crate) struct Burst<'a> {
    em: &'a Emitter,
    events: Vec<AgentEvent>,
}

impl<'a> Burst<'a> {
    pub(crate) fn new(em: &'a Emitter) -> Self {
        Self {
            em,
            events: Vec::new(),
        }
    }

    /// Queues `event`; the caller flushes when [`Burst::full`].
    pub(crate) fn push(&mut self, event: AgentEvent) {
        self.events.push(event);
    }

    pub(crate) fn full(&self) -> bool {
        self.events.len() >= MAX_BURST
    }

    pub(crate) async fn flush(&mut self) {
        let batch = match self.events.len() {
            0 => return,
            1 => match self.events.pop() {
                Some(event) => Batch::One(event),
                None => return,
            },
            _ => Batch::Many(std::mem::replace(
                &mut self.events,
                Vec::with_capacity(MAX_BURST),
            )),
        };
        self.em.send(batch).await;
    }
}

/// Appends `record` to the agent's session, if it records to one; a failure is reported
/// and the run goes on.
pub(crate) async fn record(inner: &Inner, em: &Emitter, record: SessionRecord) {
    if let Some((store, id)) = &inner.session {
        if let Err(err) = store.append(id, &record).await {
            tracing::warn!(session = %id, error = %err, "session append failed");
            em.emit(AgentEvent::Error {
                code: ErrorCode::Session,
                message: err.to_string(),
                recoverable: true,
            })
            .await;
        }
    }
}
