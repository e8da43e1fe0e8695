//! [`ProgressSink`]: the bounded, never-blocking channel a running tool reports progress on.
//!
//! A tool may print progress far faster than the host reads events (a `bash` call flooding
//! its output while a client is slow to read). The sink keeps at most [`PROGRESS_CAPACITY`]
//! reports and [`PROGRESS_MAX_BYTES`] bytes of text waiting; when either would be exceeded
//! the oldest waiting reports are dropped (the newest matter most: a process stream report
//! carries the recent tail) and counted. The receiver announces each gap with one status
//! report, so nothing is lost silently, and sending never blocks the tool.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::Notify;

use crate::tool::{Progress, ProgressStream};

/// Most reports waiting for the reader of one sink.
pub const PROGRESS_CAPACITY: usize = 256;
/// Most bytes of report text waiting for the reader of one sink (a single larger report is
/// still kept, alone).
pub const PROGRESS_MAX_BYTES: usize = 256 * 1024;

#[derive(Debug, Default)]
struct Queue {
    items: VecDeque<Progress>,
    bytes: usize,
    /// Reports dropped since the reader last took one.
    dropped: u64,
}

#[derive(Debug)]
struct Shared {
    queue: Mutex<Queue>,
    /// Wakes the reader when a report arrives or the last sender goes.
    notify: Notify,
    /// Live senders; the reader sees the end once this is 0 and the queue is empty.
    senders: AtomicUsize,
    /// The reader is gone: sending is a no-op.
    closed: AtomicBool,
    capacity: usize,
    max_bytes: usize,
}

impl Shared {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        // Nothing panics while holding this lock; recover the data if that ever changes.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Where a running tool sends progress. Cheap to clone; sending never blocks, and what
/// waits for the reader is bounded (see the [module docs](self)).
#[derive(Debug)]
pub struct ProgressSink {
    shared: Option<Arc<Shared>>,
}

impl ProgressSink {
    /// A sink and the receiver its reports arrive on, with the default bounds.
    pub fn channel() -> (Self, ProgressReceiver) {
        Self::bounded(PROGRESS_CAPACITY, PROGRESS_MAX_BYTES)
    }

    /// A sink holding at most `capacity` reports (at least 1) and `max_bytes` bytes of text
    /// for its reader.
    pub fn bounded(capacity: usize, max_bytes: usize) -> (Self, ProgressReceiver) {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            notify: Notify::new(),
            senders: AtomicUsize::new(1),
            closed: AtomicBool::new(false),
            capacity: capacity.max(1),
            max_bytes,
        });
        (
            Self {
                shared: Some(shared.clone()),
            },
            ProgressReceiver { shared },
        )
    }

    /// A sink that drops everything.
    pub fn discard() -> Self {
        Self { shared: None }
    }

    /// Reports a status line.
    pub fn status(&self, text: impl Into<String>) {
        self.send(ProgressStream::Status, text);
    }

    /// Reports output from a process stream. Never blocks: when the reader is behind, the
    /// oldest waiting reports make room.
    pub fn send(&self, stream: ProgressStream, text: impl Into<String>) {
        let Some(shared) = &self.shared else { return };
        if shared.closed.load(Ordering::Acquire) {
            return;
        }
        let text = text.into();
        {
            let mut queue = shared.queue();
            queue.bytes += text.len();
            queue.items.push_back(Progress { stream, text });
            while queue.items.len() > shared.capacity
                || (queue.bytes > shared.max_bytes && queue.items.len() > 1)
            {
                if let Some(old) = queue.items.pop_front() {
                    queue.bytes -= old.text.len();
                    queue.dropped += 1;
                }
            }
        }
        shared.notify.notify_one();
    }
}

impl Clone for ProgressSink {
    fn clone(&self) -> Self {
        if let Some(shared) = &self.shared {
            shared.senders.fetch_add(1, Ordering::AcqRel);
        }
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for ProgressSink {
    fn drop(&mut self) {
        if let Some(shared) = &self.shared {
            if shared.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
                shared.notify.notify_one();
            }
        }
    }
}

/// The reading side of a [`ProgressSink`].
#[derive(Debug)]
#[must_use = "dropping the ProgressReceiver discards every report sent to its sinks"]
pub struct ProgressReceiver {
    shared: Arc<Shared>,
}

impl ProgressReceiver {
    /// Waits for the next report; `None` once every sink is dropped and nothing waits.
    ///
    /// When reports were dropped since the last one taken, a status report saying how
    /// many comes first. Cancel-safe.
    pub async fn recv(&mut self) -> Option<Progress> {
        loop {
            match self.try_recv() {
                Ok(progress) => return Some(progress),
                Err(TryRecvError::Disconnected) => return None,
                Err(TryRecvError::Empty) => self.shared.notify.notified().await,
            }
        }
    }

    /// Takes the next waiting report without waiting.
    pub fn try_recv(&mut self) -> Result<Progress, TryRecvError> {
        // Read the sender count first: a sender pushes before it goes, so when none is
        // left, everything it sent is already in the queue.
        let senders = self.shared.senders.load(Ordering::Acquire);
        let mut queue = self.shared.queue();
        if queue.dropped > 0 && !queue.items.is_empty() {
            let dropped = std::mem::take(&mut queue.dropped);
            return Ok(Progress {
                stream: ProgressStream::Status,
                text: format!(
                    "[{dropped} progress report{} dropped: the reader fell behind]",
                    if dropped == 1 { "" } else { "s" }
                ),
            });
        }
        if let Some(progress) = queue.items.pop_front() {
            queue.bytes -= progress.text.len();
            return Ok(progress);
        }
        drop(queue);
        match senders {
            0 => Err(TryRecvError::Disconnected),
            _ => Err(TryRecvError::Empty),
        }
    }

    /// Reports waiting now (not counting a pending gap notice).
    pub fn len(&self) -> usize {
        self.shared.queue().items.len()
    }

    /// True when no report waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for ProgressReceiver {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
        // Free what waits; later sends are no-ops.
        let mut queue = self.shared.queue();
        queue.items.clear();
        queue.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_flood_keeps_the_newest_reports_and_counts_the_rest() {
        let (sink, mut rx) = ProgressSink::bounded(8, usize::MAX);
        for i in 0..100_000 {
            sink.send(ProgressStream::Stdout, format!("line {i}"));
        }
        assert_eq!(rx.len(), 8);
        let first = rx.try_recv().expect("gap notice");
        assert_eq!(first.stream, ProgressStream::Status);
        assert!(
            first.text.contains("99992 progress reports dropped"),
            "{first:?}"
        );
        let rest: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|p| p.text)
            .collect();
        let expected: Vec<String> = (99_992..100_000).map(|i| format!("line {i}")).collect();
        assert_eq!(rest, expected);
        assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)));
        drop(sink);
        assert!(matches!(rx.try_recv(), Err(TryRecvError::Disconnected)));
    }

    #[test]
    fn bytes_are_bounded_too() {
        let (sink, rx) = ProgressSink::bounded(1000, 1024);
        for _ in 0..100 {
            sink.status("x".repeat(100));
        }
        assert_eq!(rx.len(), 10);
        // One report larger than the bound is kept alone.
        sink.status("y".repeat(5000));
        assert_eq!(rx.len(), 1);
    }

    #[test]
    fn sending_after_the_reader_is_gone_is_a_no_op() {
        let (sink, rx) = ProgressSink::channel();
        drop(rx);
        for _ in 0..10 {
            sink.status("nobody listens");
        }
        let shared = sink.shared.as_ref().expect("a real sink");
        assert!(shared.queue().items.is_empty());
    }

    #[tokio::test]
    async fn recv_ends_when_every_clone_is_dropped() {
        let (sink, mut rx) = ProgressSink::channel();
        let other = sink.clone();
        let task = tokio::spawn(async move {
            other.status("from the clone");
        });
        sink.status("from the original");
        drop(sink);
        let mut got = Vec::new();
        let drain = async {
            while let Some(p) = rx.recv().await {
                got.push(p.text);
            }
        };
        tokio::time::timeout(Duration::from_secs(10), drain)
            .await
            .expect("recv ends once the sinks are gone");
        task.await.expect("sender task");
        got.sort();
        assert_eq!(got, ["from the clone", "from the original"]);
    }
}
