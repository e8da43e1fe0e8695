//! [`EventJournal`]: a session's numbered event log, kept in a [`SessionStorage`] and
//! replayed from it — the one implementation every storage backend shares.
//!
//! A front end appends its serialised events ([`StoredEvent`]); the journal numbers them
//! (1, 2, 3, … continuing the stored log after a restart), writes each batch to the storage
//! and only then makes it visible: it is pushed to the live subscriber ([`JournalSink`]) and
//! counted in [`seq`](EventJournal::seq). So a client never sees an event the storage does
//! not have, and a process killed at any point never gives a seq a client saw to another
//! event after the restart.
//!
//! - **Batches.** [`append`](EventJournal::append) holds an event; [`flush`](EventJournal::flush)
//!   hands what is held to a writer task as one batch (a turn flushes before every wait, so
//!   a batch is the events that were already waiting). While one batch is written the next
//!   ones gather, and are written together. [`request_sync`](EventJournal::request_sync)
//!   makes the next batch durable ([`Durability::Sync`](crate::session::Durability::Sync): the end of a turn); the others are
//!   written to the OS ([`Durability::Buffered`](crate::session::Durability::Buffered): they survive a crash of the process).
//! - **Memory.** The newest committed events stay in memory (a window of
//!   [`JournalOptions::window_events`] / [`JournalOptions::window_bytes`]); older ones are read
//!   back from the storage for a replay. Events not yet stored are never dropped from memory.
//! - **Replay.** [`replay`](EventJournal::replay) and [`subscribe`](EventJournal::subscribe)
//!   answer the events after a seq from memory and storage. When some of them are no longer
//!   retained (trimmed, see below), or the seq is beyond the log, the answer says so
//!   ([`Replay::gap`]) so the front end can give its protocol's gap form (ZCode: a snapshot with
//!   the current `eventSeq`) instead of silently returning less.
//! - **Retention.** The storage keeps the newest [`JournalOptions::retained_events`] events:
//!   once it holds half as many more, the oldest are trimmed
//!   ([`SessionStorage::trim_events`]), so trimming is paid once per
//!   `retained_events / 2` events.
//! - **A failing storage.** A batch that cannot be written is retried (backoff up to 2 s);
//!   the events stay invisible for [`JournalOptions::show_after`], then are shown anyway (and
//!   written once the storage is back, in one batch, without a hole). More than
//!   [`JournalOptions::max_unstored`] events waiting, or a [`StoreError::Conflict`] (another
//!   writer continued the log), ends persistence for this journal: it goes on in memory and
//!   [`failure`](EventJournal::failure) says why.
//!
//! A journal without storage ([`EventJournal::in_memory`]) keeps up to its capacity in memory
//! and shows each batch at its flush.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::value::RawValue;
use tokio::sync::Notify;

use super::storage::{SessionStorage, StoreError, StoredEvent};
use crate::backpressure::OutputGate;

mod writer;

/// Events kept in memory per session, at most (the newest).
pub const DEFAULT_WINDOW_EVENTS: usize = 256;
/// Bytes of event JSON kept in memory per session, at most (the newest event always stays).
pub const DEFAULT_WINDOW_BYTES: usize = 256 * 1024;
/// Events a session's storage retains (the newest); replays from before them get the gap
/// form. The same as the in-memory cap the log had before it was persisted.
pub const DEFAULT_RETAINED_EVENTS: u64 = 20_000;
/// How long events wait for a failing storage before they are shown anyway.
pub const DEFAULT_SHOW_AFTER: Duration = Duration::from_secs(2);
/// Events shown but not stored, at most, before persistence is given up.
pub const DEFAULT_MAX_UNSTORED: usize = 100_000;

const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// How much a journal keeps, in memory and in storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalOptions {
    /// Committed events kept in memory, at most.
    pub window_events: usize,
    /// Bytes of committed event JSON kept in memory, at most.
    pub window_bytes: usize,
    /// Events the storage retains.
    pub retained_events: u64,
    /// How long events wait for a failing storage before they are shown.
    pub show_after: Duration,
    /// Events shown but not stored before persistence is given up.
    pub max_unstored: usize,
}

impl Default for JournalOptions {
    fn default() -> Self {
        Self {
            window_events: DEFAULT_WINDOW_EVENTS,
            window_bytes: DEFAULT_WINDOW_BYTES,
            retained_events: DEFAULT_RETAINED_EVENTS,
            show_after: DEFAULT_SHOW_AFTER,
            max_unstored: DEFAULT_MAX_UNSTORED,
        }
    }
}

impl JournalOptions {
    /// The defaults, with `AGENT_SDK_EVENT_WINDOW` (events in memory per session) and
    /// `AGENT_SDK_EVENT_RETENTION` (events retained in storage per session) when set to a
    /// positive number.
    pub fn from_env() -> Self {
        let number = |name: &str| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|n| *n > 0)
        };
        let mut options = Self::default();
        if let Some(n) = number("AGENT_SDK_EVENT_WINDOW") {
            options.window_events = usize::try_from(n).unwrap_or(usize::MAX);
        }
        if let Some(n) = number("AGENT_SDK_EVENT_RETENTION") {
            options.retained_events = n;
        }
        options
    }
}

/// Where committed events go live (e.g. written as notifications). Runs under the journal's
/// lock, in seq order.
pub trait JournalSink: Send {
    /// One committed event.
    fn push(&mut self, event: &StoredEvent);
    /// Hands over whatever [`push`](Self::push) held back. The journal calls it after each
    /// batch and before a subscription's reply. The default does nothing.
    fn flush(&mut self) {}
}

/// A closure is a sink delivering each event at once.
impl<F: FnMut(&StoredEvent) + Send> JournalSink for F {
    fn push(&mut self, event: &StoredEvent) {
        self(event)
    }
}

/// What a replay found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Replay {
    /// The last committed seq when the replay was answered.
    pub event_seq: u64,
    /// Events after the asked seq, oldest first (when [`gap`](Self::gap): the retained ones).
    pub events: Vec<StoredEvent>,
    /// Some events after the asked seq are no longer retained, or the seq is beyond the log.
    pub gap: bool,
}

struct Inner {
    /// The last seq given to an event.
    appended: u64,
    /// The last seq made visible.
    committed: u64,
    /// The last seq the storage has (== `committed` when not persisting).
    stored: u64,
    /// The oldest seq the storage retains (0: none).
    oldest_stored: u64,
    /// Committed events in memory, in seq order.
    window: VecDeque<StoredEvent>,
    window_bytes: usize,
    /// Appended, not flushed.
    held: Vec<StoredEvent>,
    held_sync: bool,
    /// Flushed, not yet stored (nor visible).
    queue: Vec<StoredEvent>,
    queue_sync: bool,
    /// Flushes counted on the gate and not yet released.
    gate_count: usize,
    /// A writer task runs.
    writing: bool,
    /// Writes go to the storage.
    persist: bool,
    /// The storage fails: events are shown before they are stored.
    degraded: bool,
    /// A Buffered write since the last Sync one.
    dirty: bool,
    failure: Option<String>,
    /// Seqs replays are reading up to from storage: the window keeps them.
    pins: Vec<u64>,
    subscribed: bool,
    sink: Option<Box<dyn JournalSink>>,
    gate: Option<Arc<OutputGate>>,
    /// Events from this seq on are withheld when committed ([`EventJournal::withhold`]).
    withhold_from: Option<u64>,
    /// Committed while withheld, in seq order: visible at [`EventJournal::release`].
    withheld: Vec<StoredEvent>,
}

impl Inner {
    fn window_first(&self) -> u64 {
        self.window.front().map_or(self.committed + 1, |e| e.seq)
    }
}

/// A session's numbered, persisted event log (see the [module docs](self)).
pub struct EventJournal {
    session_id: String,
    storage: Option<Arc<dyn SessionStorage>>,
    /// The runtime the journal was made on: its writer runs there when a flush comes from
    /// outside any runtime.
    runtime: Option<tokio::runtime::Handle>,
    options: JournalOptions,
    inner: Mutex<Inner>,
    progress: Notify,
}

impl std::fmt::Debug for EventJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.lock();
        f.debug_struct("EventJournal")
            .field("session_id", &self.session_id)
            .field("committed", &inner.committed)
            .field("stored", &inner.stored)
            .field("in_memory", &inner.window.len())
            .field("subscribed", &inner.subscribed)
            .finish()
    }
}

/// Releases a replay's pin if the replay is dropped while it reads.
struct Pin<'a> {
    journal: &'a EventJournal,
    seq: Option<u64>,
}

impl Pin<'_> {
    fn release(&mut self, inner: &mut Inner) {
        if let Some(seq) = self.seq.take() {
            if let Some(i) = inner.pins.iter().position(|p| *p == seq) {
                inner.pins.swap_remove(i);
            }
        }
    }
}

impl Drop for Pin<'_> {
    fn drop(&mut self) {
        if self.seq.is_some() {
            let journal = self.journal;
            let mut inner = journal.lock();
            self.release(&mut inner);
            journal.evict(&mut inner);
        }
    }
}

impl EventJournal {
    fn new(
        session_id: String,
        storage: Option<Arc<dyn SessionStorage>>,
        options: JournalOptions,
        stored: (u64, u64),
    ) -> Arc<Self> {
        let (oldest_stored, last) = stored;
        Arc::new(Self {
            session_id,
            runtime: tokio::runtime::Handle::try_current().ok(),
            storage: storage.clone(),
            options,
            inner: Mutex::new(Inner {
                appended: last,
                committed: last,
                stored: last,
                oldest_stored,
                window: VecDeque::new(),
                window_bytes: 0,
                held: Vec::new(),
                held_sync: false,
                queue: Vec::new(),
                queue_sync: false,
                gate_count: 0,
                writing: false,
                persist: storage.is_some(),
                degraded: false,
                dirty: false,
                failure: None,
                pins: Vec::new(),
                subscribed: false,
                sink: None,
                gate: None,
                withhold_from: None,
                withheld: Vec::new(),
            }),
            progress: Notify::new(),
        })
    }

    /// A journal without storage, keeping the newest `capacity` events in memory.
    pub fn in_memory(session_id: impl Into<String>, capacity: usize) -> Arc<Self> {
        let options = JournalOptions {
            window_events: capacity.max(1),
            window_bytes: usize::MAX,
            ..JournalOptions::default()
        };
        Self::new(session_id.into(), None, options, (0, 0))
    }

    /// The journal of a session that has no stored events yet (a session just created),
    /// without asking the storage.
    pub fn fresh(
        storage: Arc<dyn SessionStorage>,
        session_id: impl Into<String>,
        options: JournalOptions,
    ) -> Arc<Self> {
        Self::new(session_id.into(), Some(storage), options, (0, 0))
    }

    /// The journal of session `session_id` in `storage`: numbering continues after the
    /// last stored event (a torn last event is dropped by the storage on the way).
    pub async fn open(
        storage: Arc<dyn SessionStorage>,
        session_id: impl Into<String>,
        options: JournalOptions,
    ) -> Result<Arc<Self>, StoreError> {
        let session_id = session_id.into();
        let bounds = storage.event_bounds(&session_id).await?;
        Ok(Self::new(
            session_id,
            Some(storage),
            options,
            (bounds.oldest, bounds.last),
        ))
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing panics while holding the lock; recover the data if that ever changes.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The session.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The options.
    pub fn options(&self) -> &JournalOptions {
        &self.options
    }

    /// Sends committed events to `sink` once [`subscribe`](Self::subscribe)d (replacing an
    /// earlier sink), and counts the batches waiting for the storage on `gate`, so a turn
    /// waits for a storage that falls behind as it waits for a slow client.
    pub fn attach(&self, sink: Box<dyn JournalSink>, gate: Option<Arc<OutputGate>>) {
        let mut inner = self.lock();
        inner.sink = Some(sink);
        if let Some(old) = inner.gate.take() {
            old.written_many(inner.gate_count);
        }
        if let Some(gate) = &gate {
            gate.queued_many(inner.gate_count);
        }
        inner.gate = gate;
    }

    /// Appends the event `make(seq)` serialises for the next seq, held until the next
    /// [`flush`](Self::flush). Returns its seq; when `make` fails the event is dropped (and
    /// logged) and no seq is used: the last one is returned.
    pub fn append(
        &self,
        make: impl FnOnce(u64) -> Result<Box<RawValue>, serde_json::Error>,
    ) -> u64 {
        let mut inner = self.lock();
        let seq = inner.appended + 1;
        match make(seq) {
            Ok(event) => {
                inner.appended = seq;
                inner.held.push(StoredEvent { seq, event });
                seq
            }
            Err(err) => {
                tracing::error!(session = %self.session_id, error = %err, "cannot serialise an event");
                inner.appended
            }
        }
    }

    /// Makes the next batch durable ([`Durability::Sync`](crate::session::Durability::Sync)): the end of a turn.
    pub fn request_sync(&self) {
        self.lock().held_sync = true;
    }

    /// Withholds the events appended from now on: they are written to the storage as
    /// usual, but become visible (pushed, counted in [`seq`](Self::seq), replayed) only at
    /// [`release`](Self::release). A front end writes a turn's last event this way side by
    /// side with the session's other files, and shows it once all of them are durable.
    pub fn withhold(&self) {
        let mut inner = self.lock();
        if inner.withhold_from.is_none() {
            inner.withhold_from = Some(inner.appended + 1);
        }
    }

    /// Ends [`withhold`](Self::withhold): the withheld events stored so far become visible
    /// now, in order; any still being written, once stored, as usual.
    pub fn release(&self) {
        let mut inner = self.lock();
        inner.withhold_from = None;
        let withheld = std::mem::take(&mut inner.withheld);
        self.commit(&mut inner, withheld);
        self.evict(&mut inner);
    }

    /// Waits (at most `timeout`) until event `seq` is stored, or no longer waits for the
    /// storage (the journal does not persist, or shows events before they are stored while
    /// the storage fails). Returns whether it is stored (always true without storage).
    pub async fn wait_stored(&self, seq: u64, timeout: Duration) -> bool {
        self.wait_until(timeout, |inner| {
            let stored = inner.stored >= seq || !inner.persist;
            (stored || inner.degraded).then_some(stored)
        })
        .await
    }

    /// Hands the held events on as one batch: to the storage (they become visible once
    /// stored), or straight to the sink when the journal does not persist.
    pub fn flush(self: &Arc<Self>) {
        let mut inner = self.lock();
        if inner.held.is_empty() {
            if std::mem::take(&mut inner.held_sync) {
                inner.queue_sync = true;
            }
            return;
        }
        let held = std::mem::take(&mut inner.held);
        let sync = std::mem::take(&mut inner.held_sync);
        if !inner.persist || inner.degraded {
            self.commit(&mut inner, held);
            self.evict(&mut inner);
            return;
        }
        // Counted per event, as the sink counts their lines once they are shown.
        if let Some(gate) = &inner.gate {
            gate.queued_many(held.len());
            inner.gate_count += held.len();
        }
        inner.queue.extend(held);
        inner.queue_sync |= sync;
        if !inner.writing {
            let runtime = tokio::runtime::Handle::try_current()
                .ok()
                .or_else(|| self.runtime.clone());
            match runtime {
                Some(runtime) => {
                    inner.writing = true;
                    runtime.spawn(self.clone().write_loop());
                }
                None => {
                    // Only reachable for a journal made and flushed outside any runtime (never
                    // in a server): keep going in memory, and say so.
                    tracing::error!(session = %self.session_id,
                        "no async runtime to write the event log; it goes on in memory");
                    inner.persist = false;
                    inner.failure = Some("no async runtime to write the event log".into());
                    let queue = std::mem::take(&mut inner.queue);
                    self.release_gate(&mut inner, queue.len());
                    self.commit(&mut inner, queue);
                    self.evict(&mut inner);
                }
            }
        }
    }

    /// Makes `events` visible: into the window, and to the sink when subscribed.
    fn commit(&self, inner: &mut Inner, events: Vec<StoredEvent>) {
        let mut pushed = false;
        for event in events {
            let last = inner.withheld.last().map_or(inner.committed, |e| e.seq);
            if event.seq <= last {
                continue;
            }
            if inner.withhold_from.is_some_and(|from| event.seq >= from) {
                inner.withheld.push(event);
                continue;
            }
            inner.committed = event.seq;
            if inner.subscribed {
                if let Some(sink) = inner.sink.as_mut() {
                    sink.push(&event);
                    pushed = true;
                }
            }
            inner.window_bytes += event.json().len();
            inner.window.push_back(event);
        }
        if !inner.persist {
            inner.stored = inner.committed;
        }
        if pushed {
            if let Some(sink) = inner.sink.as_mut() {
                sink.flush();
            }
        }
        self.progress.notify_waiters();
    }

    /// Releases the gate's count of `n` events that leave the queue (before they are pushed
    /// to the sink, which counts their lines again: the count never doubles).
    fn release_gate(&self, inner: &mut Inner, n: usize) {
        let n = n.min(inner.gate_count);
        inner.gate_count -= n;
        if let Some(gate) = &inner.gate {
            gate.written_many(n);
        }
    }

    /// Drops the oldest events of the window beyond its limits: only stored ones, and none
    /// a replay is reading up to.
    fn evict(&self, inner: &mut Inner) {
        let keep_from = inner.pins.iter().copied().min().unwrap_or(u64::MAX);
        while inner.window.len() > 1
            && (inner.window.len() > self.options.window_events
                || inner.window_bytes > self.options.window_bytes)
        {
            let Some(front) = inner.window.front() else {
                break;
            };
            if front.seq > inner.stored || front.seq >= keep_from {
                break;
            }
            inner.window_bytes -= front.json().len();
            inner.window.pop_front();
        }
    }

    /// The last visible seq (0 before the first event).
    pub fn seq(&self) -> u64 {
        self.lock().committed
    }

    /// Waits (at most `timeout`) until event `seq` is visible (stored, or shown without
    /// storage). Returns whether it is.
    pub async fn wait_shown(&self, seq: u64, timeout: Duration) -> bool {
        self.wait_until(timeout, |inner| (inner.committed >= seq).then_some(true))
            .await
    }

    /// Waits (at most `timeout`, woken by each progress of the journal) until `done` gives an
    /// answer, and returns it; after the timeout, its answer then, else false.
    async fn wait_until(&self, timeout: Duration, done: impl Fn(&Inner) -> Option<bool>) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let progressed = self.progress.notified();
            tokio::pin!(progressed);
            progressed.as_mut().enable();
            if let Some(answer) = done(&self.lock()) {
                return answer;
            }
            if tokio::time::timeout_at(deadline, progressed).await.is_err() {
                return done(&self.lock()).unwrap_or(false);
            }
        }
    }

    /// The last seq given to an event (visible or not yet).
    pub fn appended(&self) -> u64 {
        self.lock().appended
    }

    /// Events and bytes of event JSON held in memory (window, batches not yet stored).
    pub fn in_memory_len(&self) -> (usize, usize) {
        let inner = self.lock();
        let waiting = inner.held.len() + inner.queue.len() + inner.withheld.len();
        (inner.window.len() + waiting, inner.window_bytes)
    }

    /// Why the storage last failed, while it does (or since persistence was given up).
    pub fn failure(&self) -> Option<String> {
        self.lock().failure.clone()
    }

    /// Whether committed events are pushed to the sink (a subscription exists).
    pub fn is_subscribed(&self) -> bool {
        self.lock().subscribed
    }

    /// Stops live delivery (after handing over what the sink holds).
    pub fn unsubscribe(&self) {
        let mut inner = self.lock();
        if let Some(sink) = inner.sink.as_mut() {
            sink.flush();
        }
        inner.subscribed = false;
    }

    /// The events after `after`, at most `limit`, from memory and storage (see [`Replay`]).
    pub async fn replay(self: &Arc<Self>, after: u64, limit: usize) -> Result<Replay, StoreError> {
        self.replay_then(after, limit, |_, replay| replay).await
    }

    /// Subscribes: from now on committed events are pushed to the sink. Under the journal's
    /// lock, after handing over what the sink holds, `respond` gets the replay of the events
    /// after `after` (none, and no gap, when `after` is `None`) with the current seq, so a
    /// reply it queues precedes every pushed event and follows every event pushed before.
    pub async fn subscribe<R>(
        self: &Arc<Self>,
        after: Option<u64>,
        respond: impl FnOnce(Replay) -> R,
    ) -> Result<R, StoreError> {
        let subscribe = |inner: &mut Inner, replay: Replay| {
            if let Some(sink) = inner.sink.as_mut() {
                sink.flush();
            }
            inner.subscribed = true;
            respond(replay)
        };
        match after {
            None => {
                let mut inner = self.lock();
                let replay = Replay {
                    event_seq: inner.committed,
                    ..Replay::default()
                };
                Ok(subscribe(&mut inner, replay))
            }
            Some(after) => self.replay_then(after, usize::MAX, subscribe).await,
        }
    }

    /// The oldest seq a replay can still give.
    fn oldest_retained(&self, inner: &Inner) -> u64 {
        let window_first = inner.window_first();
        match self.storage.is_some() && inner.oldest_stored > 0 {
            true => inner.oldest_stored.min(window_first),
            false => window_first,
        }
    }

    /// Replays after `after` (up to `limit`), then runs `then` under the lock with it.
    async fn replay_then<R>(
        self: &Arc<Self>,
        after: u64,
        limit: usize,
        then: impl FnOnce(&mut Inner, Replay) -> R,
    ) -> Result<R, StoreError> {
        let (from, window_first, gap) = {
            let mut inner = self.lock();
            let committed = inner.committed;
            let oldest = self.oldest_retained(&inner);
            let gap = after > committed || after.saturating_add(1) < oldest;
            let from = after.max(oldest.saturating_sub(1));
            let window_first = inner.window_first();
            if from >= committed || from + 1 >= window_first || self.storage.is_none() {
                let events = Self::from_window(&inner, from, limit);
                let replay = Replay {
                    event_seq: committed,
                    events,
                    gap,
                };
                return Ok(then(&mut inner, replay));
            }
            inner.pins.push(window_first);
            (from, window_first, gap)
        };
        let mut pin = Pin {
            journal: self,
            seq: Some(window_first),
        };
        let wanted = usize::try_from(window_first - 1 - from)
            .unwrap_or(usize::MAX)
            .min(limit);
        let read = match &self.storage {
            Some(storage) => storage.read_events(&self.session_id, from, wanted).await,
            None => Ok(Vec::new()),
        };
        let mut inner = self.lock();
        pin.release(&mut inner);
        let mut events = read?;
        // What the storage gave must continue `from` without a hole (it may have been
        // trimmed meanwhile).
        let whole = events.first().is_none_or(|e| e.seq == from + 1)
            && events.windows(2).all(|w| w[1].seq == w[0].seq + 1)
            && events.len() == wanted;
        if events.len() < limit {
            let next = events.last().map_or(from, |e| e.seq);
            events.extend(Self::from_window(&inner, next, limit - events.len()));
        }
        let replay = Replay {
            event_seq: inner.committed,
            events,
            gap: gap || !whole,
        };
        let result = then(&mut inner, replay);
        self.evict(&mut inner);
        Ok(result)
    }

    fn from_window(inner: &Inner, after: u64, limit: usize) -> Vec<StoredEvent> {
        // Seqs in the window are consecutive: skip straight to the first one above `after`.
        let first = inner.window_first();
        let skip =
            usize::try_from(after.saturating_add(1).saturating_sub(first)).unwrap_or(usize::MAX);
        inner
            .window
            .iter()
            .skip(skip)
            .take(limit)
            .cloned()
            .collect()
    }

    /// Flushes what is held, writes it durably, and waits (at most `timeout`) until every
    /// appended event is stored and synced. Returns whether it got there (always true for a
    /// journal that does not persist).
    pub async fn sync(self: &Arc<Self>, timeout: Duration) -> bool {
        self.request_sync();
        self.flush();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let progressed = self.progress.notified();
            tokio::pin!(progressed);
            progressed.as_mut().enable();
            let dirty = {
                let inner = self.lock();
                if !inner.persist {
                    return true;
                }
                if inner.writing || inner.stored < inner.appended {
                    None
                } else {
                    Some(inner.dirty)
                }
            };
            match dirty {
                Some(false) => return true,
                Some(true) => {
                    let Some(storage) = &self.storage else {
                        return true;
                    };
                    let synced =
                        tokio::time::timeout_at(deadline, storage.sync_events(&self.session_id))
                            .await;
                    return match synced {
                        Ok(Ok(())) => {
                            self.lock().dirty = false;
                            true
                        }
                        Ok(Err(err)) => {
                            tracing::warn!(session = %self.session_id, error = %err,
                                "cannot sync the event log");
                            false
                        }
                        Err(_) => false,
                    };
                }
                None => {
                    if tokio::time::timeout_at(deadline, progressed).await.is_err() {
                        return false;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
