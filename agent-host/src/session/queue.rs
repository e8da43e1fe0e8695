//! A session's turn queue: the FIFO mode of a host whose protocol queues prompts instead of
//! refusing them (zut RPC), beside the Busy mode of [`Session::start_prompt`].
//!
//! # The queue's contract
//!
//! - [`Session::enqueue_prompt`] and [`Session::enqueue_compact`] never answer Busy: the
//!   turn starts at once when no turn runs or waits, else after every turn queued before it,
//!   strictly first in, first out. Its observer's [`started`](super::TurnObserver::started)
//!   runs when it starts, after the previous turn's
//!   [`finished`](super::TurnObserver::finished) (so a protocol that answers a queued prompt
//!   when its turn starts writes that answer after the previous turn's last frame).
//! - While the queue is held (a [standalone](Session::standalone) session before
//!   [`Session::begin`] ran its `session_start` hooks) queued turns wait; `begin` starts
//!   the first.
//! - [`Session::busy`] is true from a turn's enqueueing until its run's `RunFinished`
//!   event has been applied — the observer maps that event with `busy()` already false,
//!   unless another turn is queued (then it is that turn's busy) — and false as soon as an
//!   abort of the turn was asked for ([`Session::stop`], [`Session::abort_current`]), even
//!   while its run winds down.
//! - [`Session::abort_current`] aborts the turn that runs, or, when none runs, the first
//!   queued one (it starts aborted: its observer still sees it start and finish). The
//!   other queued turns still run afterwards.
//! - [`Session::drop_queued`] drops the turns that have not started: their observers are
//!   dropped without any call (a protocol never answered them).
//! - [`Session::wait_idle`] and [`Session::idle`] wait for the running turn and every
//!   queued one.

use std::sync::{Arc, Weak};

use agent_core::{event::RunKind, structured::OutputSpec, UserInput};

use super::live::Session;
use super::turn::{StartError, TurnObserver};
use super::types::new_id;

/// A turn waiting in a session's queue.
pub(super) struct Queued {
    pub(super) turn_id: String,
    pub(super) kind: RunKind,
    pub(super) input: UserInput,
    pub(super) input_id: Option<String>,
    /// The answer must pass this ([`Session::enqueue_structured`]).
    pub(super) output: Option<OutputSpec>,
    pub(super) observer: Box<dyn TurnObserver>,
    /// An abort was asked for before it started: it starts aborted.
    pub(super) aborted: bool,
}

impl Queued {
    pub(super) fn new(
        kind: RunKind,
        input: UserInput,
        input_id: Option<String>,
        observer: Box<dyn TurnObserver>,
    ) -> Self {
        Self {
            turn_id: new_id("turn"),
            kind,
            input,
            input_id,
            output: None,
            observer,
            aborted: false,
        }
    }
}

/// A turn given to a session's queue: its id (the [`TurnInfo::turn_id`](super::TurnInfo)
/// it has when it starts) and a handle to abort it, queued or running.
#[derive(Debug, Clone)]
pub struct QueuedTurn {
    session: Weak<Session>,
    turn_id: String,
}

impl QueuedTurn {
    /// The turn's id.
    pub fn turn_id(&self) -> &str {
        &self.turn_id
    }

    /// Whether the turn still waits in the queue.
    pub fn is_queued(&self) -> bool {
        self.session.upgrade().is_some_and(|session| {
            session
                .data()
                .queue
                .iter()
                .any(|queued| queued.turn_id == self.turn_id)
        })
    }

    /// Aborts the turn: a running one stops (as [`Session::stop`]); a queued one starts
    /// aborted when its time comes. Returns false when the turn is over (or was dropped).
    pub fn abort(&self) -> bool {
        let Some(session) = self.session.upgrade() else {
            return false;
        };
        let running = session
            .data()
            .active
            .as_ref()
            .is_some_and(|active| active.turn_id == self.turn_id);
        if running {
            return session.stop();
        }
        let mut data = session.data();
        match data
            .queue
            .iter_mut()
            .find(|queued| queued.turn_id == self.turn_id)
        {
            Some(queued) => {
                queued.aborted = true;
                true
            }
            None => false,
        }
    }
}

impl Session {
    /// Queues a prompt turn (text, optionally with images): it starts at once when the
    /// session is free, else after the turns before it (see the [queue's contract](self)).
    /// Fails only for a sub-agent's or a closed session.
    pub fn enqueue_prompt(
        self: &Arc<Self>,
        input: impl Into<UserInput>,
        input_id: Option<String>,
        observer: Box<dyn TurnObserver>,
    ) -> Result<QueuedTurn, StartError> {
        self.enqueue(Queued::new(
            RunKind::Prompt,
            input.into(),
            input_id,
            observer,
        ))
    }

    /// Queues a prompt turn whose answer must pass `output` (its run is
    /// [`Agent::prompt_structured`](agent_core::Agent::prompt_structured)'s), like
    /// [`enqueue_prompt`](Self::enqueue_prompt).
    pub fn enqueue_structured(
        self: &Arc<Self>,
        input: impl Into<UserInput>,
        output: OutputSpec,
        observer: Box<dyn TurnObserver>,
    ) -> Result<QueuedTurn, StartError> {
        let mut turn = Queued::new(RunKind::Prompt, input.into(), None, observer);
        turn.output = Some(output);
        self.enqueue(turn)
    }

    /// Queues a compaction of the transcript, like [`enqueue_prompt`](Self::enqueue_prompt).
    pub fn enqueue_compact(
        self: &Arc<Self>,
        observer: Box<dyn TurnObserver>,
    ) -> Result<QueuedTurn, StartError> {
        self.enqueue(Queued::new(
            RunKind::Compact,
            UserInput::default(),
            None,
            observer,
        ))
    }

    fn enqueue(self: &Arc<Self>, turn: Queued) -> Result<QueuedTurn, StartError> {
        self.startable()?;
        let handle = QueuedTurn {
            session: Arc::downgrade(self),
            turn_id: turn.turn_id.clone(),
        };
        let gate = self.gate();
        let now = {
            let mut data = self.data();
            match data.active.is_none() && data.queue.is_empty() && !data.held {
                true => Some(turn),
                false => {
                    data.queue.push_back(turn);
                    None
                }
            }
        };
        match now {
            Some(turn) => {
                self.launch(&gate, turn);
            }
            None => {
                self.idle.send_replace(false);
            }
        }
        Ok(handle)
    }

    /// Whether the session is busy in the queue's terms (see the [queue's contract](self)):
    /// a turn runs that was not aborted and has not reported its end, or, when none does,
    /// a queued turn that was not aborted waits.
    pub fn busy(&self) -> bool {
        let data = self.data();
        match &data.active {
            Some(_) if !data.turn_ended => !data.turn_aborted,
            _ => data.queue.front().is_some_and(|queued| !queued.aborted),
        }
    }

    /// Turns waiting in the queue (not the running one).
    pub fn queued(&self) -> usize {
        self.data().queue.len()
    }

    /// Aborts the turn that runs (and has not reported its end), or, when none does, the
    /// first queued turn, which starts aborted. Returns whether there was one.
    pub fn abort_current(&self) -> bool {
        let running = {
            let data = self.data();
            data.active.is_some() && !data.turn_ended
        };
        if running {
            return self.stop();
        }
        let mut data = self.data();
        match data.queue.front_mut() {
            Some(queued) => {
                queued.aborted = true;
                true
            }
            None => false,
        }
    }

    /// Drops every turn that has not started; their observers are dropped uncalled.
    /// Returns how many there were.
    pub fn drop_queued(&self) -> usize {
        let dropped: Vec<Queued> = {
            let mut data = self.data();
            let dropped = data.queue.drain(..).collect();
            if data.active.is_none() {
                self.idle.send_replace(true);
            }
            dropped
        };
        // Dropped outside the lock: an observer may do anything when dropped.
        dropped.len()
    }

    /// Waits until no turn runs or waits in the queue (no bound: use
    /// [`wait_idle`](Self::wait_idle) for one).
    pub async fn idle(&self) {
        let mut rx = self.idle.subscribe();
        let _ = rx.wait_for(|idle| *idle).await;
    }
}
