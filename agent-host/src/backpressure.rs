//! [`OutputGate`]: bounds how far a turn can run ahead of a client that reads slowly.
//!
//! A front end counts every message it queues for its writer and every message the writer
//! has written; a session's turn waits for [`OutputGate::ready`] before it takes the next
//! event from the agent. agent-core's event channel is bounded too, so a client that stops
//! reading stalls the turn (and, through TCP, the provider stream) instead of growing
//! memory: the queue never holds more than the limit plus the fan-out of one event.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::sync::Notify;

/// Messages queued for output before a turn waits: enough to keep a fast client busy.
pub const DEFAULT_OUTPUT_LIMIT: usize = 1024;

/// Counts queued output and lets turns wait for the writer.
#[derive(Debug)]
pub struct OutputGate {
    queued: AtomicUsize,
    high_water: AtomicUsize,
    limit: usize,
    closed: AtomicBool,
    written: Notify,
}

impl Default for OutputGate {
    fn default() -> Self {
        Self::new(DEFAULT_OUTPUT_LIMIT)
    }
}

impl OutputGate {
    /// A gate letting turns run while fewer than `limit` messages are queued.
    pub fn new(limit: usize) -> Self {
        Self {
            queued: AtomicUsize::new(0),
            high_water: AtomicUsize::new(0),
            limit: limit.max(1),
            closed: AtomicBool::new(false),
            written: Notify::new(),
        }
    }

    /// One message was queued.
    pub fn queued_one(&self) {
        let now = self.queued.fetch_add(1, Ordering::SeqCst) + 1;
        self.high_water.fetch_max(now, Ordering::SeqCst);
    }

    /// `n` messages were queued at once (one count update for a batch).
    pub fn queued_many(&self, n: usize) {
        if n == 0 {
            return;
        }
        let now = self.queued.fetch_add(n, Ordering::SeqCst) + n;
        self.high_water.fetch_max(now, Ordering::SeqCst);
    }

    /// One queued message was written (or dropped because output is closed).
    pub fn written_one(&self) {
        self.written_many(1);
    }

    /// `n` queued messages were written (or dropped): one count update and one wake-up of
    /// waiting turns for the whole batch.
    pub fn written_many(&self, n: usize) {
        if n == 0 {
            return;
        }
        let _ = self
            .queued
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |q| {
                Some(q.saturating_sub(n))
            });
        self.written.notify_waiters();
    }

    /// Output is closed: nothing will be written any more; never make a turn wait again.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.queued.store(0, Ordering::SeqCst);
        self.written.notify_waiters();
    }

    /// Messages queued and not yet written.
    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::SeqCst)
    }

    /// The most messages ever queued at once.
    pub fn high_water(&self) -> usize {
        self.high_water.load(Ordering::SeqCst)
    }

    /// The limit.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Whether a turn may go on now (fewer than the limit queued, or output closed): the
    /// check [`ready`](Self::ready) makes, without registering for a wake-up. A turn checks
    /// this per event and awaits `ready` only when it is false.
    pub fn has_room(&self) -> bool {
        self.queued() < self.limit || self.closed.load(Ordering::SeqCst)
    }

    /// Waits until fewer than the limit are queued.
    pub async fn ready(&self) {
        loop {
            // Registered before the check, so a write in between is not missed.
            let written = self.written.notified();
            if self.has_room() {
                return;
            }
            written.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn ready_waits_for_a_write_below_the_limit() {
        let gate = Arc::new(OutputGate::new(2));
        gate.queued_one();
        gate.queued_one();
        let waiter = tokio::spawn({
            let gate = gate.clone();
            async move { gate.ready().await }
        });
        assert!(!waiter.is_finished());
        gate.written_one();
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("ready after a write")
            .expect("join");
        assert_eq!(gate.high_water(), 2);
        assert_eq!(gate.queued(), 1);
    }

    #[tokio::test]
    async fn batch_counts_match_single_counts() {
        let gate = Arc::new(OutputGate::new(4));
        gate.queued_many(3);
        assert!(gate.has_room());
        gate.queued_many(2);
        assert_eq!((gate.queued(), gate.high_water()), (5, 5));
        assert!(!gate.has_room());
        let waiter = tokio::spawn({
            let gate = gate.clone();
            async move { gate.ready().await }
        });
        gate.written_many(2);
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("ready after a batch write")
            .expect("join");
        assert_eq!(gate.queued(), 3);
        // Never below zero, whatever the caller counts.
        gate.written_many(10);
        assert_eq!(gate.queued(), 0);
        gate.queued_many(0);
        assert_eq!(gate.high_water(), 5);
        gate.close();
        gate.queued_many(9);
        assert!(gate.has_room(), "a closed gate never holds a turn");
    }
}
