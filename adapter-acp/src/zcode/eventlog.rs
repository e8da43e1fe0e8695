//! [`EventLog`]: a session's sequence-numbered log of front-end events, typed, over
//! agent-host's [`EventJournal`] (which numbers, persists, replays and trims it).
//!
//! Each event is serialised once, when appended ([`StoredEvent`]: the JSON the storage keeps
//! and the live sink copies into its `session/event` line). Events are kept whether or not
//! anyone subscribed, and pushed to the sink only once a subscription exists — and only once
//! the session's storage has them, so a client never sees a seq that a restart could give to
//! another event. Subscribing replies under the journal's lock, so the subscriber sees a
//! gap-free, ordered stream: everything up to the reply's `event_seq` is in the replay (or
//! was pushed before), everything after it is pushed.
//!
//! Appending holds an event; [`EventLog::flush`] hands what is held on as one batch (a turn
//! appends the events that were already waiting, then flushes once). The log of a session
//! without storage ([`EventLog::new`], tests and in-process use) shows each batch at its
//! flush and keeps [`DEFAULT_CAPACITY`] events.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use agent_host::session::{EventJournal, JournalSink, Replay, StoreError, StoredEvent};
use serde::Serialize;

/// Events kept by a log without storage before the oldest are dropped.
pub const DEFAULT_CAPACITY: usize = 20_000;

/// Where live events go: agent-host's [`JournalSink`], given each committed event's JSON.
pub use agent_host::session::JournalSink as LogSink;

/// A sequence-numbered event log of `T`s with replay.
pub struct EventLog<T> {
    journal: Arc<EventJournal>,
    _events: PhantomData<fn(T)>,
}

impl<T> std::fmt::Debug for EventLog<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventLog")
            .field("journal", &self.journal)
            .finish()
    }
}

impl<T: Serialize> EventLog<T> {
    /// A log without storage whose live events go to `sink` once subscribed.
    pub fn new(sink: impl JournalSink + 'static) -> Self {
        Self::with_capacity(sink, DEFAULT_CAPACITY)
    }

    /// A log without storage keeping at most `capacity` events.
    pub fn with_capacity(sink: impl JournalSink + 'static, capacity: usize) -> Self {
        let journal = EventJournal::in_memory("", capacity);
        journal.attach(Box::new(sink), None);
        Self::over(journal)
    }

    /// The log kept by `journal` (its sink attached by the caller).
    pub fn over(journal: Arc<EventJournal>) -> Self {
        Self {
            journal,
            _events: PhantomData,
        }
    }

    /// The journal underneath.
    pub fn journal(&self) -> &Arc<EventJournal> {
        &self.journal
    }

    /// Appends the event `make(seq)` builds for the next sequence number and flushes (it is
    /// pushed once stored, when subscribed). Returns the seq.
    pub fn append(&self, make: impl FnOnce(u64) -> T) -> u64 {
        let seq = self.append_held(make);
        self.journal.flush();
        seq
    }

    /// [`append`](Self::append), but held until the next [`flush`](Self::flush). Returns the
    /// seq.
    pub fn append_held(&self, make: impl FnOnce(u64) -> T) -> u64 {
        self.journal
            .append(|seq| serde_json::value::to_raw_value(&make(seq)))
    }

    /// Hands the held events on as one batch.
    pub fn flush(&self) {
        self.journal.flush();
    }

    /// Makes the next batch durable (fsynced): after a turn's last event.
    pub fn request_sync(&self) {
        self.journal.request_sync();
    }

    /// Subscribes: from now on stored events are pushed. Under the log's lock, `respond`
    /// gets the replay of the events after `after_seq` (none when `after_seq` is `None`)
    /// with the current high-water seq, so a reply it enqueues precedes every pushed event
    /// (and follows every event pushed before). A replay older than what is retained comes
    /// with [`Replay::gap`].
    pub async fn subscribe<R>(
        &self,
        after_seq: Option<u64>,
        respond: impl FnOnce(Replay) -> R,
    ) -> Result<R, StoreError> {
        self.journal.subscribe(after_seq, respond).await
    }

    /// Stops live delivery (after handing over what the sink holds).
    pub fn unsubscribe(&self) {
        self.journal.unsubscribe();
    }

    /// Events with a seq above `after_seq`, at most `limit` of them (oldest first), from
    /// memory and storage.
    pub async fn events_after(&self, after_seq: u64, limit: usize) -> Result<Replay, StoreError> {
        self.journal.replay(after_seq, limit).await
    }

    /// The highest seq shown so far (0 when empty).
    pub fn seq(&self) -> u64 {
        self.journal.seq()
    }

    /// The highest seq appended so far, shown or not yet.
    pub fn appended(&self) -> u64 {
        self.journal.appended()
    }

    /// Waits (at most `timeout`) until event `seq` is shown. Returns whether it is.
    pub async fn wait_shown(&self, seq: u64, timeout: Duration) -> bool {
        self.journal.wait_shown(seq, timeout).await
    }
}

/// The seqs of stored events (for tests and logs).
pub fn seqs(events: &[StoredEvent]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn value(event: &StoredEvent) -> u64 {
        serde_json::from_str(event.json()).expect("a number")
    }

    fn values(events: &[StoredEvent]) -> Vec<u64> {
        events.iter().map(value).collect()
    }

    #[tokio::test]
    async fn events_before_subscription_are_kept_and_later_ones_pushed() {
        let pushed = Arc::new(Mutex::new(Vec::new()));
        let sink_pushed = pushed.clone();
        let log = EventLog::<u64>::new(move |e: &StoredEvent| {
            sink_pushed.lock().expect("lock").push(value(e))
        });
        log.append(|seq| seq * 10);
        log.append(|seq| seq * 10);
        let (seq, replay) = log
            .subscribe(Some(1), |r| (r.event_seq, values(&r.events)))
            .await
            .expect("subscribe");
        assert_eq!((seq, replay), (2, vec![20]));
        log.append(|seq| seq * 10);
        assert_eq!(*pushed.lock().expect("lock"), vec![30]);
        let replay = log.events_after(0, 2).await.expect("replay");
        assert_eq!(values(&replay.events), vec![10, 20]);
    }

    #[tokio::test]
    async fn capacity_drops_the_oldest_and_a_replay_before_them_is_a_gap() {
        let log = EventLog::<u64>::with_capacity(|_: &StoredEvent| {}, 2);
        for _ in 0..5 {
            log.append(|seq| seq);
        }
        let replay = log.events_after(0, 10).await.expect("replay");
        assert_eq!(values(&replay.events), vec![4, 5]);
        assert!(replay.gap);
        assert!(!log.events_after(3, 10).await.expect("replay").gap);
        assert_eq!(log.seq(), 5);
    }

    /// Holds pushed events until flushed; records what was handed over, and when.
    struct Holding {
        held: Vec<u64>,
        out: Arc<Mutex<Vec<Vec<u64>>>>,
    }

    impl JournalSink for Holding {
        fn push(&mut self, event: &StoredEvent) {
            self.held.push(value(event));
        }

        fn flush(&mut self) {
            if !self.held.is_empty() {
                let batch = std::mem::take(&mut self.held);
                self.out.lock().expect("lock").push(batch);
            }
        }
    }

    #[tokio::test]
    async fn held_events_go_out_in_order_at_flush_and_before_a_subscription_reply() {
        let out = Arc::new(Mutex::new(Vec::new()));
        let log = EventLog::<u64>::new(Holding {
            held: Vec::new(),
            out: out.clone(),
        });
        log.subscribe(None, |_| ()).await.expect("subscribe");
        log.append_held(|seq| seq);
        log.append_held(|seq| seq);
        assert!(out.lock().expect("lock").is_empty(), "held until flushed");
        log.flush();
        assert_eq!(*out.lock().expect("lock"), vec![vec![1, 2]]);
        log.flush();
        assert_eq!(
            out.lock().expect("lock").len(),
            1,
            "nothing held, nothing sent"
        );
        // A flushing append hands over what was held before it, in seq order.
        log.append_held(|seq| seq);
        log.append(|seq| seq);
        assert_eq!(out.lock().expect("lock")[1], vec![3, 4]);
        // A resubscription's reply follows every event pushed before it.
        log.append(|seq| seq);
        let sent_before_reply = log
            .subscribe(Some(4), |r| {
                assert_eq!((r.event_seq, values(&r.events)), (5, vec![5]));
                out.lock().expect("lock").len()
            })
            .await
            .expect("subscribe");
        assert_eq!(sent_before_reply, 3);
        assert_eq!(out.lock().expect("lock")[2], vec![5]);
    }

    #[tokio::test]
    async fn replay_after_any_seq_once_the_oldest_were_dropped() {
        let log = EventLog::<u64>::with_capacity(|_: &StoredEvent| {}, 3);
        for _ in 0..6 {
            log.append(|seq| seq * 10);
        }
        let after = |n| log.events_after(n, 10);
        assert_eq!(values(&after(0).await.expect("r").events), vec![40, 50, 60]);
        assert_eq!(values(&after(4).await.expect("r").events), vec![50, 60]);
        assert_eq!(
            values(&log.events_after(5, 1).await.expect("r").events),
            vec![60]
        );
        assert!(after(6).await.expect("r").events.is_empty());
        let beyond = after(u64::MAX).await.expect("r");
        assert!(beyond.events.is_empty() && beyond.gap);
    }
}
