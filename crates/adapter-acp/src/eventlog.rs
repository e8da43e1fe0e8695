//! [`EventLog`]: a per-session, sequence-numbered log of front-end events with replay, and
//! live delivery to a subscriber.
//!
//! Events are numbered when appended (1, 2, 3, …), kept (up to a cap) whether or not anyone
//! subscribed, and pushed to the sink only once a subscription exists. Appending, subscribing
//! and the sink all run under one lock, so the subscriber sees a gap-free, ordered stream:
//! everything up to the subscription's `event_seq` is available for replay, everything after
//! it is pushed.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

/// Events kept per session before the oldest are dropped.
pub const DEFAULT_CAPACITY: usize = 20_000;

/// A sink for live events (e.g. writes a notification).
pub type Sink<T> = Box<dyn Fn(&T) + Send + Sync>;

struct Inner<T> {
    seq: u64,
    events: VecDeque<(u64, T)>,
    subscribed: bool,
}

/// A sequence-numbered event log with replay.
pub struct EventLog<T> {
    inner: Mutex<Inner<T>>,
    sink: Sink<T>,
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
    pub fn new(sink: Sink<T>) -> Self {
        Self::with_capacity(sink, DEFAULT_CAPACITY)
    }

    /// An empty log keeping at most `capacity` events.
    pub fn with_capacity(sink: Sink<T>, capacity: usize) -> Self {
        Self {
            inner: Mutex::new(Inner {
                seq: 0,
                events: VecDeque::new(),
                subscribed: false,
            }),
            sink,
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        // Nothing panics while holding the lock; recover the data if that ever changes.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends the event `make(seq)` builds for the next sequence number, and pushes it to
    /// the sink when subscribed. Returns the seq.
    pub fn append(&self, make: impl FnOnce(u64) -> T) -> u64 {
        let mut inner = self.lock();
        inner.seq += 1;
        let seq = inner.seq;
        let event = make(seq);
        if inner.subscribed {
            (self.sink)(&event);
        }
        inner.events.push_back((seq, event));
        while inner.events.len() > self.capacity {
            inner.events.pop_front();
        }
        seq
    }

    /// Subscribes: from now on appended events are pushed. Under the same lock, `respond`
    /// gets the current high-water seq and the kept events after `after_seq` (none when
    /// `after_seq` is `None`), so a reply it enqueues precedes every pushed event.
    pub fn subscribe<R>(
        &self,
        after_seq: Option<u64>,
        respond: impl FnOnce(u64, Vec<T>) -> R,
    ) -> R {
        let mut inner = self.lock();
        inner.subscribed = true;
        let events = match after_seq {
            Some(after) => Self::collect(&inner, after, usize::MAX),
            None => Vec::new(),
        };
        respond(inner.seq, events)
    }

    /// Stops live delivery.
    pub fn unsubscribe(&self) {
        self.lock().subscribed = false;
    }

    /// Kept events with a seq above `after_seq`, at most `limit` of them (oldest first).
    pub fn events_after(&self, after_seq: u64, limit: usize) -> Vec<T> {
        Self::collect(&self.lock(), after_seq, limit)
    }

    fn collect(inner: &Inner<T>, after: u64, limit: usize) -> Vec<T> {
        inner
            .events
            .iter()
            .filter(|(seq, _)| *seq > after)
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
        let log = EventLog::new(Box::new(move |e: &u64| {
            sink_pushed.lock().expect("lock").push(*e)
        }));
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
        let log = EventLog::with_capacity(Box::new(|_: &u64| {}), 2);
        for _ in 0..5 {
            log.append(|seq| seq);
        }
        assert_eq!(log.events_after(0, 10), vec![4, 5]);
        assert_eq!(log.seq(), 5);
    }
}
