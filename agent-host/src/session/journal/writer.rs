//! The journal's writer: one task per stored journal that moves batches of events to the
//! storage, retrying with backoff, and shows events it could not store in time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{EventJournal, FIRST_BACKOFF, MAX_BACKOFF};
use crate::session::storage::{Durability, StoreError, StoredEvent};

impl EventJournal {
    pub(super) async fn write_loop(self: Arc<Self>) {
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
}
