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
//!   makes the next batch durable ([`Durability::Sync`]: the end of a turn); the others are
//!   written to the OS ([`Durability::Buffered`]: they survive a crash of the process).
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
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use tokio::sync::Notify;

use super::storage::{Durability, SessionStorage, StoreError, StoredEvent};
use crate::backpressure::OutputGate;

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

    /// Makes the next batch durable ([`Durability::Sync`]): the end of a turn.
    pub fn request_sync(&self) {
        self.lock().held_sync = true;
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
            if event.seq <= inner.committed {
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

    async fn write_loop(self: Arc<Self>) {
        let Some(storage) = self.storage.clone() else {
            return;
        };
        let mut failing_since: Option<Instant> = None;
        let mut backoff = FIRST_BACKOFF;
        loop {
            let (batch, sync) = {
                let mut inner = self.lock();
                let batch: Vec<StoredEvent> = if inner.degraded {
                    let stored = inner.stored;
                    inner
                        .window
                        .iter()
                        .filter(|e| e.seq > stored)
                        .cloned()
                        .collect()
                } else {
                    std::mem::take(&mut inner.queue)
                };
                if batch.is_empty() || !inner.persist {
                    inner.writing = false;
                    drop(inner);
                    self.progress.notify_waiters();
                    return;
                }
                (batch, std::mem::take(&mut inner.queue_sync))
            };
            let durability = if sync {
                Durability::Sync
            } else {
                Durability::Buffered
            };
            let first = batch.first().map_or(0, |e| e.seq);
            let last = batch.last().map_or(0, |e| e.seq);
            match storage
                .append_events(&self.session_id, &batch, durability)
                .await
            {
                Ok(()) => {
                    failing_since = None;
                    backoff = FIRST_BACKOFF;
                    let trim = {
                        let mut inner = self.lock();
                        if inner.degraded {
                            inner.degraded = false;
                            inner.failure = None;
                            tracing::info!(session = %self.session_id, "the event log is stored again");
                        } else {
                            self.release_gate(&mut inner, batch.len());
                            self.commit(&mut inner, batch);
                        }
                        inner.stored = inner.stored.max(last);
                        if inner.oldest_stored == 0 {
                            inner.oldest_stored = first;
                        }
                        inner.dirty = durability == Durability::Buffered;
                        self.evict(&mut inner);
                        let retained = self.options.retained_events.max(1);
                        let held = inner.stored + 1 - inner.oldest_stored.min(inner.stored + 1);
                        (held > retained + retained / 2).then(|| inner.stored + 1 - retained)
                    };
                    self.progress.notify_waiters();
                    if let Some(before) = trim {
                        match storage.trim_events(&self.session_id, before).await {
                            Ok(bounds) => self.lock().oldest_stored = bounds.oldest,
                            Err(err) => tracing::warn!(session = %self.session_id, error = %err,
                                "cannot trim the event log"),
                        }
                    }
                }
                Err(err) => {
                    let since = *failing_since.get_or_insert_with(Instant::now);
                    if self.failed(err, batch, sync, since, backoff) {
                        // Backoff before the retry (not synchronisation: nothing else is
                        // awaited).
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(MAX_BACKOFF);
                    }
                }
            }
        }
    }

    /// A batch could not be stored: puts it back, shows what waited too long, or gives up
    /// persisting. Returns whether to retry after the backoff.
    fn failed(
        &self,
        err: StoreError,
        batch: Vec<StoredEvent>,
        sync: bool,
        since: Instant,
        backoff: Duration,
    ) -> bool {
        let mut inner = self.lock();
        inner.failure = Some(err.to_string());
        let unstored = usize::try_from(inner.appended - inner.stored).unwrap_or(usize::MAX);
        let give_up =
            matches!(err, StoreError::Conflict { .. }) || unstored > self.options.max_unstored;
        if !inner.degraded {
            // Back in front of what gathered meanwhile.
            let rest = std::mem::replace(&mut inner.queue, batch);
            inner.queue.extend(rest);
            inner.queue_sync |= sync;
        }
        if give_up {
            tracing::error!(session = %self.session_id, error = %err,
                "the event log is no longer stored; it goes on in memory");
            inner.persist = false;
            inner.degraded = false;
            let queue = std::mem::take(&mut inner.queue);
            self.release_gate(&mut inner, queue.len());
            self.commit(&mut inner, queue);
            inner.stored = inner.committed;
            self.evict(&mut inner);
            drop(inner);
            self.progress.notify_waiters();
            return false;
        }
        tracing::warn!(session = %self.session_id, error = %err,
            retry_in_ms = u64::try_from(backoff.as_millis()).unwrap_or(u64::MAX),
            "cannot store events; retrying");
        if !inner.degraded && since.elapsed() >= self.options.show_after {
            tracing::warn!(session = %self.session_id, "showing events before they are stored");
            inner.degraded = true;
            let queue = std::mem::take(&mut inner.queue);
            self.release_gate(&mut inner, queue.len());
            self.commit(&mut inner, queue);
        }
        drop(inner);
        self.progress.notify_waiters();
        true
    }

    /// The last visible seq (0 before the first event).
    pub fn seq(&self) -> u64 {
        self.lock().committed
    }

    /// Waits (at most `timeout`) until event `seq` is visible (stored, or shown without
    /// storage). Returns whether it is.
    pub async fn wait_shown(&self, seq: u64, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let progressed = self.progress.notified();
            tokio::pin!(progressed);
            progressed.as_mut().enable();
            if self.lock().committed >= seq {
                return true;
            }
            if tokio::time::timeout_at(deadline, progressed).await.is_err() {
                return self.lock().committed >= seq;
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
        let waiting = inner.held.len() + inner.queue.len();
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
mod tests {
    use super::*;
    use crate::session::storage::{EventBounds, SessionStorage};
    use crate::session::types::SessionMeta;
    use crate::session::FileStore;
    use agent_core::{
        async_trait,
        session::{SessionError, SessionRecord, SessionStore},
    };
    use std::sync::atomic::{AtomicUsize, Ordering};

    const WAIT: Duration = Duration::from_secs(10);

    /// A [`FileStore`] whose event appends can be held back or made to fail.
    struct Flaky {
        files: FileStore,
        /// Appends still to fail.
        fail: AtomicUsize,
        /// Fail with a conflict instead of an I/O error.
        conflict: bool,
        /// Appends wait for a permit.
        permits: Option<tokio::sync::Semaphore>,
        appends: AtomicUsize,
    }

    impl Flaky {
        fn new(dir: &std::path::Path) -> Self {
            Self {
                files: FileStore::new(dir),
                fail: AtomicUsize::new(0),
                conflict: false,
                permits: None,
                appends: AtomicUsize::new(0),
            }
        }
    }

    #[async_trait]
    impl SessionStore for Flaky {
        async fn append(&self, id: &str, record: &SessionRecord) -> Result<(), SessionError> {
            self.files.append(id, record).await
        }
        async fn load(&self, id: &str) -> Result<Vec<SessionRecord>, SessionError> {
            self.files.load(id).await
        }
        async fn list(&self) -> Result<Vec<String>, SessionError> {
            self.files.list().await
        }
    }

    #[async_trait]
    impl SessionStorage for Flaky {
        async fn save_meta(&self, meta: &SessionMeta) -> Result<(), StoreError> {
            SessionStorage::save_meta(&self.files, meta).await
        }
        async fn load_meta(&self, id: &str) -> Result<SessionMeta, StoreError> {
            SessionStorage::load_meta(&self.files, id).await
        }
        async fn list_meta(&self) -> Result<Vec<SessionMeta>, StoreError> {
            SessionStorage::list_meta(&self.files).await
        }
        async fn sync_transcript(&self, id: &str) -> Result<(), StoreError> {
            self.files.sync_transcript(id).await
        }
        async fn append_events(
            &self,
            id: &str,
            events: &[StoredEvent],
            durability: Durability,
        ) -> Result<(), StoreError> {
            if let Some(permits) = &self.permits {
                permits.acquire().await.expect("open").forget();
            }
            self.appends.fetch_add(1, Ordering::SeqCst);
            let failing = self
                .fail
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
            match (failing, self.conflict) {
                (true, true) => Err(StoreError::Conflict {
                    session_id: id.into(),
                    message: "another writer".into(),
                }),
                (true, false) => Err(StoreError::Io {
                    context: "disk".into(),
                    source: std::io::Error::other("full"),
                }),
                _ => self.files.append_events(id, events, durability).await,
            }
        }
        async fn read_events(
            &self,
            id: &str,
            after: u64,
            limit: usize,
        ) -> Result<Vec<StoredEvent>, StoreError> {
            self.files.read_events(id, after, limit).await
        }
        async fn event_bounds(&self, id: &str) -> Result<EventBounds, StoreError> {
            self.files.event_bounds(id).await
        }
        async fn trim_events(&self, id: &str, before: u64) -> Result<EventBounds, StoreError> {
            self.files.trim_events(id, before).await
        }
    }

    fn small(window: usize, retained: u64) -> JournalOptions {
        JournalOptions {
            window_events: window,
            window_bytes: usize::MAX,
            retained_events: retained,
            show_after: Duration::ZERO,
            max_unstored: 1000,
        }
    }

    fn event(seq: u64) -> Result<Box<RawValue>, serde_json::Error> {
        serde_json::value::to_raw_value(&serde_json::json!({"seq": seq, "type": "t"}))
    }

    fn seqs(events: &[StoredEvent]) -> Vec<u64> {
        events.iter().map(|e| e.seq).collect()
    }

    /// Appends `n` events in batches of `batch`.
    fn append(journal: &Arc<EventJournal>, n: u64, batch: u64) {
        for i in 0..n {
            journal.append(event);
            if (i + 1) % batch == 0 {
                journal.flush();
            }
        }
        journal.flush();
    }

    async fn synced(journal: &Arc<EventJournal>) {
        assert!(journal.sync(WAIT).await, "synced in time");
    }

    #[tokio::test]
    async fn numbering_continues_after_a_reopen_and_replays_come_from_memory_and_storage() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store: Arc<dyn SessionStorage> = Arc::new(FileStore::new(dir.path()));
        let journal = EventJournal::open(store.clone(), "sess_a", small(4, 1000))
            .await
            .expect("open");
        append(&journal, 10, 3);
        synced(&journal).await;
        assert_eq!(journal.seq(), 10);
        assert!(journal.in_memory_len().0 <= 4, "window bounded");
        let replay = journal.replay(2, usize::MAX).await.expect("replay");
        assert_eq!(seqs(&replay.events), (3..=10).collect::<Vec<_>>());
        assert!(!replay.gap);
        assert_eq!(replay.event_seq, 10);
        assert_eq!(
            replay.events[0].json(),
            event(3).expect("json").get(),
            "verbatim"
        );
        let limited = journal.replay(0, 3).await.expect("replay");
        assert_eq!(seqs(&limited.events), vec![1, 2, 3]);
        assert!(!limited.gap);
        let none = journal.replay(10, 5).await.expect("replay");
        assert_eq!((none.events.len(), none.gap), (0, false));
        assert!(journal.replay(11, 5).await.expect("replay").gap, "ahead");
        drop(journal);

        let again = EventJournal::open(store, "sess_a", small(4, 1000))
            .await
            .expect("reopen");
        assert_eq!(again.seq(), 10);
        assert_eq!(again.append(event), 11);
        again.flush();
        synced(&again).await;
        let replay = again.replay(0, usize::MAX).await.expect("replay");
        assert_eq!(seqs(&replay.events), (1..=11).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn events_are_shown_only_once_stored_and_a_subscription_reply_comes_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut flaky = Flaky::new(dir.path());
        flaky.permits = Some(tokio::sync::Semaphore::new(0));
        let flaky = Arc::new(flaky);
        let journal = EventJournal::open(flaky.clone(), "sess_b", small(8, 1000))
            .await
            .expect("open");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink_seen = seen.clone();
        journal.attach(
            Box::new(move |e: &StoredEvent| sink_seen.lock().expect("lock").push(e.seq)),
            None,
        );
        let order = seen.clone();
        journal
            .subscribe(None, move |replay| {
                order.lock().expect("lock").push(1000 + replay.event_seq)
            })
            .await
            .expect("subscribe");
        append(&journal, 3, 3);
        assert_eq!(journal.appended(), 3);
        assert_eq!(journal.seq(), 0, "not stored, not shown");
        assert_eq!(*seen.lock().expect("lock"), vec![1000]);
        flaky.permits.as_ref().expect("permits").add_permits(1);
        synced(&journal).await;
        assert_eq!(*seen.lock().expect("lock"), vec![1000, 1, 2, 3]);
        assert_eq!(journal.seq(), 3);
    }

    #[tokio::test]
    async fn a_replay_older_than_retention_says_gap_and_gives_what_is_retained() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store: Arc<dyn SessionStorage> = Arc::new(FileStore::new(dir.path()));
        let journal = EventJournal::open(store.clone(), "sess_c", small(4, 10))
            .await
            .expect("open");
        for _ in 0..8 {
            append(&journal, 5, 5);
            synced(&journal).await;
        }
        let bounds = store.event_bounds("sess_c").await.expect("bounds");
        assert_eq!(bounds.last, 40);
        assert!(
            bounds.oldest > 1 && bounds.last + 1 - bounds.oldest <= 15,
            "{bounds:?}"
        );
        let replay = journal.replay(0, usize::MAX).await.expect("replay");
        assert!(replay.gap);
        assert_eq!(replay.events.first().map(|e| e.seq), Some(bounds.oldest));
        assert_eq!(replay.events.last().map(|e| e.seq), Some(40));
        let recent = journal.replay(35, usize::MAX).await.expect("replay");
        assert!(!recent.gap);
        assert_eq!(seqs(&recent.events), (36..=40).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn a_failing_storage_is_retried_and_shows_events_without_a_hole_in_the_log() {
        let dir = tempfile::tempdir().expect("tempdir");
        let flaky = Arc::new(Flaky::new(dir.path()));
        flaky.fail.store(3, Ordering::SeqCst);
        let journal = EventJournal::open(flaky.clone(), "sess_d", small(2, 1000))
            .await
            .expect("open");
        append(&journal, 6, 2);
        synced(&journal).await;
        assert!(flaky.appends.load(Ordering::SeqCst) >= 4, "retried");
        assert_eq!(journal.seq(), 6);
        assert!(journal.failure().is_none(), "recovered");
        let stored = flaky.read_events("sess_d", 0, 100).await.expect("read");
        assert_eq!(seqs(&stored), (1..=6).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn a_conflict_ends_persistence_and_the_journal_goes_on_in_memory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut flaky = Flaky::new(dir.path());
        flaky.conflict = true;
        flaky.fail.store(1, Ordering::SeqCst);
        let journal = EventJournal::open(Arc::new(flaky), "sess_e", small(100, 1000))
            .await
            .expect("open");
        append(&journal, 3, 3);
        synced(&journal).await;
        assert_eq!(journal.seq(), 3, "shown anyway");
        assert!(journal
            .failure()
            .expect("failure")
            .contains("another writer"));
        append(&journal, 2, 2);
        assert_eq!(journal.seq(), 5, "in memory from now on");
    }

    #[tokio::test]
    async fn in_memory_journals_show_at_flush_and_keep_their_capacity() {
        let journal = EventJournal::in_memory("sess_m", 3);
        journal.append(event);
        assert_eq!(journal.seq(), 0, "held until flushed");
        append(&journal, 5, 5);
        assert_eq!(journal.seq(), 6);
        let replay = journal.replay(0, 10).await.expect("replay");
        assert_eq!(seqs(&replay.events), vec![4, 5, 6]);
        assert!(replay.gap);
        assert!(journal.sync(WAIT).await);
    }
}
