//! [`EventLog`]: a per-session, sequence-numbered log of front-end events with replay, and
//! live delivery to a subscriber.
//!
//! Events are numbered when appended (1, 2, 3, …), kept (up to a cap) whether or not anyone
//! subscribed, and pushed to the sink only once a subscription exists. Appending, subscribing
//! and the sink all run under one lock, so the subscriber sees a gap-free, ordered stream:
//! everything up to the subscription's `event_seq` is available for replay, everything after
//! it is pushed.
//!
//! A sink may hold pushed events back to hand several over at once
//! ([`LogSink::flush`]): [`EventLog::append`] flushes at once, [`EventLog::append_held`]
//! leaves that to a later [`EventLog::flush`] (a turn appends the events that were already
//! waiting, then flushes once). Subscribing and unsubscribing flush first, so held events
//! still precede the subscription's reply.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

/// Events kept per session before the oldest are dropped.
pub const DEFAULT_CAPACITY: usize = 20_000;

/// Where live events go (e.g. written as notifications). Runs under the log's lock.
pub trait LogSink<T>: Send {
    /// One appended event, in seq order.
    fn push(&mut self, event: &T);
    /// Hands over whatever [`push`](Self::push) held back. The default does nothing (a sink
    /// that delivers each event in `push`).
    fn flush(&mut self) {}
}

/// A closure is a sink delivering each event at once.
impl<T, F: FnMut(&T) + Send> LogSink<T> for F {
    fn push(&mut self, event: &T) {
        self(event)
    }
}

/// A boxed sink.
pub type Sink<T> = Box<dyn LogSink<T>>;

struct Inner<T> {
    seq: u64,
    events: VecDeque<(u64, T)>,
    subscribed: bool,
    sink: Sink<T>,
}

/// A sequence-numbered event log with replay.
pub struct EventLog<T> {
    inner: Mutex<Inner<T>>,
    capacity: usize,
}

impl<T> std::fmt::Debug for EventLog<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f.debug_struct("EventLog")
            .field("seq", &inner.seq)
            .field("kept", &inner.events.len())
            .field("subscribed", &inner.subscribed)
            .finish()
    }
}

impl<T: Clone> EventLog<T> {
    /// An empty log whose live events go to `sink` once subscribed.
    pub fn new(sink: impl LogSink<T> + 'static) -> Self {
        Self::with_capacity(sink, DEFAULT_CAPACITY)
    }

    /// An empty log keeping at most `capacity` events.
    pub fn with_capacity(sink: impl LogSink<T> + 'static, capacity: usize) -> Self {
        Self {
            inner: Mutex::new(Inner {
                seq: 0,
                events: VecDeque::new(),
                subscribed: false,
                sink: Box::new(sink),
            }),
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        // Nothing panics while holding the lock; recover the data if that ever changes.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends the event `make(seq)` builds for the next sequence number, and pushes it to
    /// the sink (flushed) when subscribed. Returns the seq.
    pub fn append(&self, make: impl FnOnce(u64) -> T) -> u64 {
        let mut inner = self.lock();
        let seq = self.append_locked(&mut inner, make);
        inner.sink.flush();
        seq
    }

    /// [`append`](Self::append), but the sink may hold the event until the next
    /// [`flush`](Self::flush) (or any flushing call). Returns the seq.
    pub fn append_held(&self, make: impl FnOnce(u64) -> T) -> u64 {
        let mut inner = self.lock();
        self.append_locked(&mut inner, make)
    }

    /// Hands over every event the sink holds.
    pub fn flush(&self) {
        self.lock().sink.flush();
    }

    fn append_locked(&self, inner: &mut Inner<T>, make: impl FnOnce(u64) -> T) -> u64 {
        inner.seq += 1;
        let seq = inner.seq;
        let event = make(seq);
        if inner.subscribed {
            inner.sink.push(&event);
        }
        if inner.events.len() >= self.capacity {
            inner.events.pop_front();
        }
        inner.events.push_back((seq, event));
        seq
    }

    /// Subscribes: from now on appended events are pushed. Under the same lock, `respond`
    /// gets the current high-water seq and the kept events after `after_seq` (none when
    /// `after_seq` is `None`), so a reply it enqueues precedes every pushed event (and
    /// follows every event pushed before).
    pub fn subscribe<R>(
        &self,
        after_seq: Option<u64>,
        respond: impl FnOnce(u64, Vec<T>) -> R,
    ) -> R {
        let mut inner = self.lock();
        inner.sink.flush();
        inner.subscribed = true;
        let events = match after_seq {
            Some(after) => Self::collect(&inner, after, usize::MAX),
            None => Vec::new(),
        };
        respond(inner.seq, events)
    }

    /// Stops live delivery (after handing over what the sink holds).
    pub fn unsubscribe(&self) {
        let mut inner = self.lock();
        inner.sink.flush();
        inner.subscribed = false;
    }

    /// Kept events with a seq above `after_seq`, at most `limit` of them (oldest first).
    pub fn events_after(&self, after_seq: u64, limit: usize) -> Vec<T> {
        Self::collect(&self.lock(), after_seq, limit)
    }

    fn collect(inner: &Inner<T>, after: u64, limit: usize) -> Vec<T> {
        // Seqs are consecutive: skip straight to the first one above `after`.
        let first = inner.events.front().map_or(0, |(seq, _)| *seq);
        let skip =
            usize::try_from(after.saturating_add(1).saturating_sub(first)).unwrap_or(usize::MAX);
        inner
            .events
            .iter()
            .skip(skip)
            .take(limit)
            .map(|(_, e)| e.clone())
            .collect()
    }

    /// The highest seq so far (0 when empty).
    pub fn seq(&self) -> u64 {
        self.lock().seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn events_before_subscription_are_kept_and_later_ones_pushed() {
        let pushed = Arc::new(Mutex::new(Vec::new()));
        let sink_pushed = pushed.clone();
        let log = EventLog::new(move |e: &u64| sink_pushed.lock().expect("lock").push(*e));
        log.append(|seq| seq * 10);
        log.append(|seq| seq * 10);
        let (seq, replay) = log.subscribe(Some(1), |seq, events| (seq, events));
        assert_eq!((seq, replay), (2, vec![20]));
        log.append(|seq| seq * 10);
        assert_eq!(*pushed.lock().expect("lock"), vec![30]);
        assert_eq!(log.events_after(0, 2), vec![10, 20]);
    }

    #[test]
    fn capacity_drops_the_oldest() {
        let log = EventLog::with_capacity(|_: &u64| {}, 2);
        for _ in 0..5 {
            log.append(|seq| seq);
        }
        assert_eq!(log.events_after(0, 10), vec![4, 5]);
        assert_eq!(log.seq(), 5);
    }

    /// Holds pushed events until flushed; records what was handed over, and when.
    struct Holding {
        held: Vec<u64>,
        out: Arc<Mutex<Vec<Vec<u64>>>>,
    }

    impl LogSink<u64> for Holding {
        fn push(&mut self, event: &u64) {
            self.held.push(*event);
        }

        fn flush(&mut self) {
            if !self.held.is_empty() {
                let batch = std::mem::take(&mut self.held);
                self.out.lock().expect("lock").push(batch);
            }
        }
    }

    #[test]
    fn held_events_go_out_in_order_at_flush_and_before_a_subscription_reply() {
        let out = Arc::new(Mutex::new(Vec::new()));
        let log = EventLog::new(Holding {
            held: Vec::new(),
            out: out.clone(),
        });
        log.subscribe(None, |_, _| ());
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
        log.append_held(|seq| seq);
        let sent_before_reply = log.subscribe(Some(4), |seq, replay| {
            assert_eq!((seq, replay), (5, vec![5]));
            out.lock().expect("lock").len()
        });
        assert_eq!(sent_before_reply, 3);
        assert_eq!(out.lock().expect("lock")[2], vec![5]);
    }

    #[test]
    fn replay_after_any_seq_once_the_oldest_were_dropped() {
        let log = EventLog::with_capacity(|_: &u64| {}, 3);
        for _ in 0..6 {
            log.append(|seq| seq * 10);
        }
        assert_eq!(log.events_after(0, 10), vec![40, 50, 60]);
        assert_eq!(log.events_after(4, 10), vec![50, 60]);
        assert_eq!(log.events_after(5, 1), vec![60]);
        assert!(log.events_after(6, 10).is_empty());
        assert!(log.events_after(u64::MAX, 10).is_empty());
    }
}
