//! The batching line writer: one queue, one writer task, one flush policy.
//!
//! Producers hold a [`LineSender`]; the [`LineWriter`] task owns the output. The queue holds,
//! in the order they were sent, serialised lines (a turn's burst as one [`Frames`] message,
//! or lines written straight into the queue with [`LineSender::write_lines`]) and typed
//! messages the writer serialises itself ([`Encode`]; e.g. the frames of a protocol SDK).
//! The order of the output is the order of the queue: nothing can overtake, so a reply sent
//! after a turn's updates is written after them, wherever each was sent from.
//!
//! **Flush policy.** The writer takes everything waiting, writes it with one `write_all`
//! (a batch over [`MAX_BATCH_BYTES`] in several) and one `flush`, then looks again; it waits
//! only when the queue is empty. So a burst costs one write and one flush, and a lone line
//! is on the output before the writer waits: there is no timer anywhere.
//!
//! **Back-pressure.** Every message is counted on the [`OutputGate`] when it is queued and
//! again when it is written; a turn waits for [`OutputGate::ready`] before taking more events
//! from the agent (a [`Session`](crate::session::Session)'s turn does), so a client that stops reading stalls
//! the turn instead of growing memory. When the output fails the gate is closed (nobody waits
//! any more), later sends fail with [`Closed`], and [`LineWriter::run`] returns the error.
//!
//! Buffers travel between producers and the writer and are reused: in the steady state a
//! burst allocates nothing.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;

use crate::backpressure::OutputGate;
use crate::text::{escape_json_tail, JsonEscapes};

/// The most bytes the writer gathers before it writes (a batch over this is written in
/// several writes and flushed once).
pub const MAX_BATCH_BYTES: usize = 64 * 1024;

/// Buffers larger than this are dropped instead of kept for reuse.
const MAX_KEPT_BUFFER: usize = 4 * MAX_BATCH_BYTES;

/// Spare buffers kept for reuse.
const MAX_SPARE_BUFFERS: usize = 4;

/// A typed message the writer serialises itself.
pub trait Encode: Send + 'static {
    /// Appends the message to `buf` as complete lines, each ending in `\n`. A message that
    /// cannot be serialised leaves `buf` as it was (and is reported by the implementation).
    fn encode(self, buf: &mut Vec<u8>);
}

/// The message type of a writer that only carries serialised lines.
#[derive(Debug)]
pub enum NoMessage {}

impl Encode for NoMessage {
    fn encode(self, _: &mut Vec<u8>) {
        match self {}
    }
}

/// The writer has ended (the output failed or was finished): nothing sent now is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the output is closed")]
pub struct Closed;

/// Lines for one message to the writer: what a mapping produces for a burst of events. One
/// JSON value per line; [`JsonEscapes`] (if any) are applied to every line pushed with
/// [`push`](Self::push) or [`push_with`](Self::push_with).
#[derive(Debug, Default)]
pub struct Frames {
    bytes: Vec<u8>,
    lines: usize,
    escapes: Option<JsonEscapes>,
}

impl Frames {
    /// Empty, with no escapes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Empty; every line pushed gets `escapes`.
    pub fn with_escapes(escapes: JsonEscapes) -> Self {
        Self {
            escapes: Some(escapes),
            ..Self::default()
        }
    }

    /// Appends `value` as one JSON line. On an error nothing is appended.
    pub fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> serde_json::Result<()> {
        self.push_with(|buf| serde_json::to_writer(buf, value))
    }

    /// Appends one line that `write` serialises (without its newline) into the buffer it is
    /// given; the escapes and the newline are added after it. On an error nothing is
    /// appended.
    pub fn push_with<E>(
        &mut self,
        write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<(), E> {
        let start = self.bytes.len();
        if let Err(err) = write(&mut self.bytes) {
            self.bytes.truncate(start);
            return Err(err);
        }
        if let Some(escapes) = self.escapes {
            escape_json_tail(&mut self.bytes, start, escapes);
        }
        self.bytes.push(b'\n');
        self.lines += 1;
        Ok(())
    }

    /// Appends `line` (one complete line without its newline, already escaped) verbatim.
    pub fn push_line(&mut self, line: &[u8]) {
        self.bytes.extend_from_slice(line);
        self.bytes.push(b'\n');
        self.lines += 1;
    }

    /// The lines so far, each ending in `\n`.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// How many lines.
    pub fn lines(&self) -> usize {
        self.lines
    }

    /// How many bytes.
    pub fn len_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.lines == 0
    }

    /// Drops the lines (keeping the buffer).
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.lines = 0;
    }
}

enum Segment<T> {
    /// Complete lines and how many.
    Lines(Vec<u8>, usize),
    /// A message the writer serialises.
    Message(T),
}

struct Queue<T> {
    segments: VecDeque<Segment<T>>,
    /// Messages (lines and typed) queued: the writer counts them written on the gate.
    counted: usize,
    /// No more sends are accepted.
    closed: bool,
    /// The writer is to end once the queue is empty.
    finishing: bool,
    senders: usize,
    spare: Vec<Vec<u8>>,
}

impl<T> Queue<T> {
    fn buffer(&mut self, capacity: usize) -> Vec<u8> {
        match self.spare.pop() {
            Some(buf) => buf,
            None => Vec::with_capacity(capacity),
        }
    }

    fn recycle(&mut self, mut buf: Vec<u8>) {
        if buf.capacity() <= MAX_KEPT_BUFFER && self.spare.len() < MAX_SPARE_BUFFERS {
            buf.clear();
            self.spare.push(buf);
        }
    }
}

struct Shared<T> {
    queue: Mutex<Queue<T>>,
    /// Wakes the writer when the queue turns non-empty (or the writer should end).
    wake: Notify,
    gate: Arc<OutputGate>,
}

impl<T> Shared<T> {
    fn queue(&self) -> MutexGuard<'_, Queue<T>> {
        // Nothing panics while holding this lock; recover the data if that ever changes.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Nothing will be written any more: drop what is queued, reject further sends, and
    /// never hold a turn again.
    fn close(&self) {
        let mut queue = self.queue();
        queue.closed = true;
        queue.segments.clear();
        queue.counted = 0;
        drop(queue);
        self.gate.close();
    }
}

/// Sends lines and messages to the [`LineWriter`]. Cheap to clone; the writer ends when
/// every sender is dropped (after writing what they sent) or on [`finish`](Self::finish).
pub struct LineSender<T: Encode = NoMessage> {
    shared: Arc<Shared<T>>,
}

impl<T: Encode> std::fmt::Debug for LineSender<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let queue = self.shared.queue();
        f.debug_struct("LineSender")
            .field("queued", &queue.counted)
            .field("closed", &queue.closed)
            .finish()
    }
}

impl<T: Encode> Clone for LineSender<T> {
    fn clone(&self) -> Self {
        self.shared.queue().senders += 1;
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl<T: Encode> Drop for LineSender<T> {
    fn drop(&mut self) {
        let last = {
            let mut queue = self.shared.queue();
            queue.senders -= 1;
            queue.senders == 0
        };
        if last {
            self.shared.wake.notify_one();
        }
    }
}

/// Writes what the [`LineSender`]s send; run it with [`LineWriter::run`] (usually on its
/// own task).
pub struct LineWriter<T: Encode = NoMessage> {
    shared: Arc<Shared<T>>,
}

impl<T: Encode> std::fmt::Debug for LineWriter<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineWriter").finish_non_exhaustive()
    }
}

impl<T: Encode> Drop for LineWriter<T> {
    fn drop(&mut self) {
        // Ended, failed or never run: whatever is queued will never be written.
        self.shared.close();
    }
}

/// A writer and its first sender, counting on `gate`.
pub fn line_writer<T: Encode>(gate: Arc<OutputGate>) -> (LineSender<T>, LineWriter<T>) {
    let shared = Arc::new(Shared {
        queue: Mutex::new(Queue {
            segments: VecDeque::new(),
            counted: 0,
            closed: false,
            finishing: false,
            senders: 1,
            spare: Vec::new(),
        }),
        wake: Notify::new(),
        gate,
    });
    (
        LineSender {
            shared: shared.clone(),
        },
        LineWriter { shared },
    )
}

impl<T: Encode> LineSender<T> {
    /// The gate the writer counts on.
    pub fn gate(&self) -> &Arc<OutputGate> {
        &self.shared.gate
    }

    /// Whether the writer has ended (nothing sent now would be written).
    pub fn is_closed(&self) -> bool {
        self.shared.queue().closed
    }

    /// Queues `f` while holding the queue: on error nothing is queued or counted.
    fn enqueue(&self, f: impl FnOnce(&mut Queue<T>) -> usize) -> Result<usize, Closed> {
        let was_empty = {
            let mut queue = self.shared.queue();
            if queue.closed || queue.finishing {
                return Err(Closed);
            }
            let was_empty = queue.segments.is_empty();
            let count = f(&mut queue);
            if count == 0 {
                return Ok(0);
            }
            queue.counted += count;
            self.shared.gate.queued_many(count);
            (was_empty, count)
        };
        if was_empty.0 {
            self.shared.wake.notify_one();
        }
        Ok(was_empty.1)
    }

    /// Queues a message for the writer to serialise.
    pub fn send(&self, message: T) -> Result<(), Closed> {
        self.enqueue(|queue| {
            queue.segments.push_back(Segment::Message(message));
            1
        })
        .map(|_| ())
    }

    /// Queues the lines of `frames` as one message and clears `frames` (handing it an empty
    /// buffer to reuse). Returns how many lines were queued.
    pub fn send_frames(&self, frames: &mut Frames) -> Result<usize, Closed> {
        if frames.is_empty() {
            return match self.is_closed() {
                true => Err(Closed),
                false => Ok(0),
            };
        }
        let lines = frames.lines;
        let sent = self.enqueue(|queue| {
            match queue.segments.back_mut() {
                // Lines are waiting already: add these to them (one copy, no new buffer).
                Some(Segment::Lines(bytes, count)) if bytes.len() < MAX_BATCH_BYTES => {
                    bytes.extend_from_slice(&frames.bytes);
                    *count += lines;
                    frames.bytes.clear();
                }
                // Move the buffer into the queue and give `frames` a spare one.
                _ => {
                    let spare = queue.buffer(frames.bytes.len());
                    let bytes = std::mem::replace(&mut frames.bytes, spare);
                    queue.segments.push_back(Segment::Lines(bytes, lines));
                }
            }
            lines
        });
        frames.lines = 0;
        sent
    }

    /// Serialises lines straight into the queue: `write` appends complete lines (each
    /// ending in `\n`) to the buffer it is given and returns how many. Returns that count.
    /// `write` runs under the queue's lock: keep it short (serialise, nothing else).
    pub fn write_lines(&self, write: impl FnOnce(&mut Vec<u8>) -> usize) -> Result<usize, Closed> {
        self.enqueue(|queue| {
            if !matches!(queue.segments.back(), Some(Segment::Lines(..))) {
                let buf = queue.buffer(1024);
                queue.segments.push_back(Segment::Lines(buf, 0));
            }
            let Some(Segment::Lines(bytes, count)) = queue.segments.back_mut() else {
                return 0;
            };
            let start = bytes.len();
            let added = write(bytes);
            debug_assert!(bytes.len() == start || bytes.ends_with(b"\n"));
            *count += added;
            let empty = *count == 0;
            if empty {
                // Nothing was written: leave no empty segment behind.
                if let Some(Segment::Lines(buf, _)) = queue.segments.pop_back() {
                    queue.recycle(buf);
                }
            }
            added
        })
    }

    /// Queues `value` as one JSON line with `escapes` applied. A value that cannot be
    /// serialised is not queued and its error is returned.
    pub fn send_json<S: Serialize + ?Sized>(
        &self,
        value: &S,
        escapes: Option<JsonEscapes>,
    ) -> Result<(), SendJsonError> {
        let mut failed = None;
        self.write_lines(|buf| {
            let start = buf.len();
            match serde_json::to_writer(&mut *buf, value) {
                Ok(()) => {
                    if let Some(escapes) = escapes {
                        escape_json_tail(buf, start, escapes);
                    }
                    buf.push(b'\n');
                    1
                }
                Err(err) => {
                    buf.truncate(start);
                    failed = Some(err);
                    0
                }
            }
        })?;
        match failed {
            Some(err) => Err(SendJsonError::Serialize(err)),
            None => Ok(()),
        }
    }

    /// Asks the writer to write what is queued, then end (flushing and shutting the output
    /// down). Sends after this fail with [`Closed`].
    pub fn finish(&self) {
        self.shared.queue().finishing = true;
        self.shared.wake.notify_one();
    }
}

/// [`LineSender::send_json`] failed.
#[derive(Debug, thiserror::Error)]
pub enum SendJsonError {
    /// The writer has ended.
    #[error(transparent)]
    Closed(#[from] Closed),
    /// The value could not be serialised.
    #[error("cannot serialise a line: {0}")]
    Serialize(#[source] serde_json::Error),
}

impl<T: Encode> LineWriter<T> {
    /// Writes everything sent until every sender is gone or [`LineSender::finish`] was
    /// called, then flushes and shuts `output` down. On a write error the queue and the
    /// gate are closed and the error is returned.
    pub async fn run<W: AsyncWrite + Unpin>(self, mut output: W) -> std::io::Result<()> {
        let shared = self.shared.clone();
        let mut taken: VecDeque<Segment<T>> = VecDeque::new();
        let mut buf: Vec<u8> = Vec::with_capacity(8 * 1024);
        loop {
            let count = {
                let mut queue = shared.queue();
                if queue.segments.is_empty() {
                    if queue.finishing || queue.senders == 0 || queue.closed {
                        break;
                    }
                    None
                } else {
                    std::mem::swap(&mut queue.segments, &mut taken);
                    Some(std::mem::take(&mut queue.counted))
                }
            };
            let Some(count) = count else {
                // A send after the check above left a permit: this returns at once then.
                shared.wake.notified().await;
                continue;
            };
            let written = self.write_batch(&mut output, &mut taken, &mut buf).await;
            if let Err(err) = written {
                shared.close();
                return Err(err);
            }
            shared.gate.written_many(count);
            if buf.capacity() > MAX_KEPT_BUFFER {
                buf = Vec::with_capacity(8 * 1024);
            }
        }
        let closed = async {
            output.flush().await?;
            output.shutdown().await
        };
        let result = closed.await;
        shared.close();
        result
    }

    /// Writes the segments of one batch: one `write_all` per [`MAX_BATCH_BYTES`] gathered
    /// (a lone serialised segment is written from its own buffer), then one flush.
    async fn write_batch<W: AsyncWrite + Unpin>(
        &self,
        output: &mut W,
        taken: &mut VecDeque<Segment<T>>,
        buf: &mut Vec<u8>,
    ) -> std::io::Result<()> {
        buf.clear();
        let alone = taken.len() == 1;
        let mut result = Ok(());
        while let Some(segment) = taken.pop_front() {
            if result.is_err() {
                continue;
            }
            match segment {
                Segment::Lines(bytes, _) if alone => {
                    result = output.write_all(&bytes).await;
                    self.shared.queue().recycle(bytes);
                }
                Segment::Lines(bytes, _) => {
                    buf.extend_from_slice(&bytes);
                    self.shared.queue().recycle(bytes);
                }
                Segment::Message(message) => message.encode(buf),
            }
            if buf.len() >= MAX_BATCH_BYTES && result.is_ok() {
                result = output.write_all(buf).await;
                buf.clear();
            }
        }
        result?;
        if !buf.is_empty() {
            output.write_all(buf).await?;
        }
        output.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use std::time::Duration;

    const WAIT: Duration = Duration::from_secs(10);

    /// What a [`Recorder`] saw: each `poll_write`'s bytes, and the bytes written by each
    /// flush.
    #[derive(Debug, Default)]
    struct Seen {
        writes: Vec<Vec<u8>>,
        flushed_at: Vec<usize>,
        shutdown: bool,
    }

    /// An output that records its writes and flushes and wakes a watcher after each flush.
    #[derive(Clone, Default)]
    struct Recorder {
        seen: Arc<Mutex<Seen>>,
        flushed: Arc<Notify>,
    }

    impl Recorder {
        fn seen(&self) -> MutexGuard<'_, Seen> {
            self.seen.lock().unwrap_or_else(|e| e.into_inner())
        }

        fn text(&self) -> String {
            String::from_utf8(self.seen().writes.concat()).expect("utf-8")
        }
    }

    impl AsyncWrite for Recorder {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            bytes: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            self.seen().writes.push(bytes.to_vec());
            Poll::Ready(Ok(bytes.len()))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            {
                let mut seen = self.seen();
                let total = seen.writes.iter().map(Vec::len).sum();
                seen.flushed_at.push(total);
            }
            self.flushed.notify_one();
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            self.seen().shutdown = true;
            Poll::Ready(Ok(()))
        }
    }

    /// A typed message: `n` lines `m<i>`.
    struct Msg(usize);

    impl Encode for Msg {
        fn encode(self, buf: &mut Vec<u8>) {
            buf.extend_from_slice(format!("m{}\n", self.0).as_bytes());
        }
    }

    fn frames_of(texts: &[&str]) -> Frames {
        let mut frames = Frames::new();
        for text in texts {
            frames.push(text).expect("serialise");
        }
        frames
    }

    #[tokio::test]
    async fn a_burst_is_one_write_and_one_flush_in_queue_order() {
        let gate = Arc::new(OutputGate::new(1000));
        let (tx, writer) = line_writer::<Msg>(gate.clone());
        let mut frames = frames_of(&["a", "b"]);
        assert_eq!(tx.send_frames(&mut frames), Ok(2));
        assert!(frames.is_empty() && frames.bytes().is_empty());
        tx.send(Msg(1)).expect("open");
        tx.send_json("c", None).expect("open");
        tx.write_lines(|buf| {
            buf.extend_from_slice(b"\"d\"\n\"e\"\n");
            2
        })
        .expect("open");
        let mut frames = frames_of(&["f"]);
        tx.send_frames(&mut frames).expect("open");
        assert_eq!(gate.queued(), 7);
        drop(tx);
        let out = Recorder::default();
        tokio::time::timeout(WAIT, writer.run(out.clone()))
            .await
            .expect("in time")
            .expect("written");
        assert_eq!(out.text(), "\"a\"\n\"b\"\nm1\n\"c\"\n\"d\"\n\"e\"\n\"f\"\n");
        let seen = out.seen();
        assert_eq!(seen.writes.len(), 1, "one write for the burst");
        // One flush after the burst, one at the end.
        assert_eq!(seen.flushed_at, vec![seen.writes[0].len(); 2]);
        assert!(seen.shutdown);
        assert_eq!(gate.queued(), 0, "every message counted as written");
        assert_eq!(gate.high_water(), 7);
    }

    #[tokio::test]
    async fn a_lone_line_is_flushed_before_the_writer_waits() {
        let gate = Arc::new(OutputGate::new(1000));
        let (tx, writer) = line_writer::<NoMessage>(gate.clone());
        let out = Recorder::default();
        let flushed = out.flushed.clone();
        let task = tokio::spawn(writer.run(out.clone()));
        tx.send_json(&serde_json::json!({"n": 0}), None)
            .expect("open");
        // The sender stays open: the line must still reach the output, flushed.
        tokio::time::timeout(WAIT, flushed.notified())
            .await
            .expect("flushed without more input");
        {
            let seen = out.seen();
            assert_eq!(seen.writes.len(), 1);
            assert_eq!(seen.flushed_at, vec![seen.writes[0].len()]);
        }
        assert_eq!(out.text(), "{\"n\":0}\n");
        let mut frames = frames_of(&["x"]);
        tx.send_frames(&mut frames).expect("open");
        tokio::time::timeout(WAIT, flushed.notified())
            .await
            .expect("flushed again");
        tx.finish();
        assert_eq!(
            tx.send_json("late", None).err().map(|e| e.to_string()),
            Some("the output is closed".into())
        );
        tokio::time::timeout(WAIT, task)
            .await
            .expect("ends in time")
            .expect("join")
            .expect("written");
        assert_eq!(out.text(), "{\"n\":0}\n\"x\"\n");
        assert_eq!(gate.queued(), 0);
        assert!(tx.is_closed());
    }

    #[tokio::test]
    async fn a_large_batch_is_split_but_kept_in_order() {
        let (tx, writer) = line_writer::<Msg>(Arc::new(OutputGate::default()));
        let n = 4 * MAX_BATCH_BYTES / 100;
        let line = "x".repeat(90);
        for i in 0..n {
            // Alternate typed and serialised messages, so the batch is gathered.
            if i % 2 == 0 {
                tx.send(Msg(i)).expect("open");
            } else {
                let mut frames = frames_of(&[&line]);
                tx.send_frames(&mut frames).expect("open");
            }
        }
        drop(tx);
        let out = Recorder::default();
        tokio::time::timeout(WAIT, writer.run(out.clone()))
            .await
            .expect("in time")
            .expect("written");
        let writes = out.seen().writes.len();
        assert!((2..=8).contains(&writes), "{writes} writes");
        let text = out.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), n);
        for (i, got) in lines.iter().enumerate() {
            match i % 2 {
                0 => assert_eq!(*got, format!("m{i}")),
                _ => assert_eq!(*got, format!("\"{line}\"")),
            }
        }
        assert_eq!(
            out.seen().flushed_at.len(),
            2,
            "one flush for the batch, one at the end"
        );
    }

    #[tokio::test]
    async fn a_failed_write_closes_the_gate_and_the_senders() {
        struct Broken;
        impl AsyncWrite for Broken {
            fn poll_write(
                self: Pin<&mut Self>,
                _: &mut Context<'_>,
                _: &[u8],
            ) -> Poll<std::io::Result<usize>> {
                Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()))
            }
            fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
                Poll::Ready(Ok(()))
            }
            fn poll_shutdown(
                self: Pin<&mut Self>,
                _: &mut Context<'_>,
            ) -> Poll<std::io::Result<()>> {
                Poll::Ready(Ok(()))
            }
        }
        let gate = Arc::new(OutputGate::new(1));
        let (tx, writer) = line_writer::<NoMessage>(gate.clone());
        tx.send_json("x", None).expect("open");
        assert!(!gate.has_room());
        let err = tokio::time::timeout(WAIT, writer.run(Broken))
            .await
            .expect("in time")
            .expect_err("a broken pipe fails the writer");
        assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe);
        tokio::time::timeout(WAIT, gate.ready())
            .await
            .expect("a closed gate never holds a turn");
        let mut frames = frames_of(&["y"]);
        assert_eq!(tx.send_frames(&mut frames), Err(Closed));
        assert!(tx.is_closed());
    }

    #[tokio::test]
    async fn a_dropped_writer_never_holds_a_turn() {
        let gate = Arc::new(OutputGate::new(1));
        let (tx, writer) = line_writer::<NoMessage>(gate.clone());
        tx.send_json("x", None).expect("open");
        drop(writer);
        tokio::time::timeout(WAIT, gate.ready())
            .await
            .expect("released");
        assert!(tx.send_json("y", None).is_err());
    }

    #[test]
    fn frames_apply_escapes_and_keep_failed_lines_out() {
        let mut frames = Frames::with_escapes(JsonEscapes::LineSeparators);
        frames.push("a\u{2028}b").expect("serialise");
        let failed: Result<(), std::io::Error> = frames.push_with(|buf| {
            buf.extend_from_slice(b"{\"half\":");
            Err(std::io::ErrorKind::Other.into())
        });
        assert!(failed.is_err());
        frames.push_line(b"{\"raw\":1}");
        assert_eq!(frames.bytes(), b"\"a\\u2028b\"\n{\"raw\":1}\n");
        assert_eq!(frames.lines(), 2);
        frames.clear();
        assert!(frames.is_empty() && frames.len_bytes() == 0);
    }

    #[tokio::test]
    async fn buffers_are_reused_between_bursts() {
        let (tx, writer) = line_writer::<NoMessage>(Arc::new(OutputGate::default()));
        let out = Recorder::default();
        let flushed = out.flushed.clone();
        let task = tokio::spawn(writer.run(out.clone()));
        let mut frames = Frames::new();
        let mut buffers = Vec::new();
        for i in 0..4 {
            frames.push(&format!("burst {i}")).expect("serialise");
            buffers.push(frames.bytes.as_ptr());
            tx.send_frames(&mut frames).expect("open");
            tokio::time::timeout(WAIT, flushed.notified())
                .await
                .expect("flushed");
        }
        drop(tx);
        task.await.expect("join").expect("written");
        // The buffer of burst 0 was written, recycled and handed back for burst 2.
        assert_eq!(buffers[2], buffers[0], "{buffers:?}");
        assert_eq!(out.text().lines().count(), 4);
    }
}
