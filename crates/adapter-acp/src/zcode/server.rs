//! The ZCode app-server's I/O: the stdio loop that reads line-delimited requests and hands
//! them to the dispatcher (`handlers`), and the single writer task that
//! writes responses, `session/event` notifications and `interaction/*` requests.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use super::eventlog::LogSink;
use super::handlers::{Reply, Server};
use super::wire::{
    codes, ErrorObject, EventNotification, Outgoing, RequestId, SessionEvent, StorageStateParams,
    INVALID_MESSAGE_ID, STORAGE_STATE,
};
use crate::backpressure::OutputGate;
use crate::lines::{max_line_bytes, Line, LineReader};
use crate::session::{new_id, AgentFactory, FileStore, SessionManager};

/// How long shutdown waits for running turns to wind down.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// What the server needs.
#[derive(Debug)]
pub struct ServerOptions {
    /// Builds the sessions' agents.
    pub factory: AgentFactory,
    /// Where sessions are stored.
    pub data_dir: PathBuf,
}

/// Serves the ZCode app-server protocol on `input`/`output` until `input` ends or
/// `output` fails (e.g. the client closed it: EPIPE), with the default output limit
/// ([`DEFAULT_OUTPUT_LIMIT`](crate::backpressure::DEFAULT_OUTPUT_LIMIT) queued messages)
/// and line limit ([`max_line_bytes`]).
pub async fn serve<R, W>(options: ServerOptions, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_gated(options, input, output, Arc::new(OutputGate::default())).await
}

/// [`serve`] with the caller's output gate (whose counters show how much output was ever
/// queued).
pub async fn serve_gated<R, W>(
    options: ServerOptions,
    input: R,
    output: W,
    gate: Arc<OutputGate>,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let started = Instant::now();
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let (done_tx, done_rx) = oneshot::channel();
    let mut writer = tokio::spawn(write_loop(output, out_rx, done_rx, gate.clone()));
    let (int_tx, int_rx) = mpsc::unbounded_channel();
    let manager = SessionManager::new(options.factory, FileStore::new(options.data_dir), int_tx);
    let server = Arc::new(Server::new(manager, Outbox { tx: out_tx, gate }));
    server.out.send(Outgoing::Notification {
        method: STORAGE_STATE.to_string(),
        params: serde_json::to_value(StorageStateParams {
            schema_version: 1,
            attempt_id: new_id("startup"),
            sequence: 1,
            database_id: "sessions".to_string(),
            database_kind: "session",
            phase: "ready",
            elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(0),
        })
        .unwrap_or(Value::Null),
    });
    let interactions = tokio::spawn(server.clone().interaction_loop(int_rx));

    let mut lines = LineReader::new(BufReader::new(input), max_line_bytes());
    // The writer only ends early when output failed; then nobody can hear us any more.
    let mut written: Option<std::io::Result<()>> = None;
    let result = loop {
        let line = tokio::select! {
            line = lines.next_line() => line,
            done = &mut writer => {
                written = Some(join_writer(done));
                break Ok(());
            }
        };
        match line {
            Ok(Line::Eof) => break Ok(()),
            Ok(Line::Text(text)) => server.handle_line(&text).await,
            Ok(rejected) => {
                let code = match rejected {
                    Line::NotUtf8 => codes::PARSE_ERROR,
                    _ => codes::INVALID_REQUEST,
                };
                let message = rejected.error_message().unwrap_or_default();
                tracing::warn!(%message, "rejected an input line");
                server.out.invalid(code, message);
            }
            Err(err) => break Err(err),
        }
    };
    match &written {
        Some(Err(err)) => tracing::info!(error = %err, "output closed; shutting down"),
        _ => tracing::debug!("input closed; shutting down"),
    }
    server.manager.shutdown(SHUTDOWN_WAIT).await;
    interactions.abort();
    let _ = done_tx.send(());
    let written = match written {
        Some(written) => written,
        None => join_writer(writer.await),
    };
    match written {
        Ok(()) => result,
        Err(err) => Err(err),
    }
}

fn join_writer(done: Result<std::io::Result<()>, tokio::task::JoinError>) -> std::io::Result<()> {
    match done {
        Ok(result) => result,
        Err(err) => Err(std::io::Error::other(err)),
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    output: W,
    mut rx: mpsc::UnboundedReceiver<Frame>,
    done: oneshot::Receiver<()>,
    gate: Arc<OutputGate>,
) -> std::io::Result<()> {
    let result = write_all_messages(output, &mut rx, done, &gate).await;
    // Nothing more is written: release turns waiting for output, and stop counting.
    rx.close();
    gate.close();
    result
}

/// Lines queued in one write before the writer flushes anyway.
const MAX_BATCH_BYTES: usize = 64 * 1024;

/// Writes every message as one line. Lines of messages that are already waiting are
/// gathered into one buffer and written and flushed together once the queue is empty (or
/// [`MAX_BATCH_BYTES`] are gathered): a burst costs one write, and a line still reaches
/// `output` before the writer waits for the next message.
async fn write_all_messages<W: AsyncWrite + Unpin>(
    mut output: W,
    rx: &mut mpsc::UnboundedReceiver<Frame>,
    mut done: oneshot::Receiver<()>,
    gate: &OutputGate,
) -> std::io::Result<()> {
    let mut batch: Vec<u8> = Vec::new();
    // Serialises `first` and every message already waiting, then writes and flushes them
    // in one go; every message is counted as written on the gate (also on failure).
    async fn write_batch<W: AsyncWrite + Unpin>(
        output: &mut W,
        batch: &mut Vec<u8>,
        first: Frame,
        rx: &mut mpsc::UnboundedReceiver<Frame>,
        gate: &OutputGate,
    ) -> std::io::Result<()> {
        batch.clear();
        let mut count = 0usize;
        let mut next = Some(first);
        let mut serialised = Ok(());
        while let Some(frame) = next.take() {
            match frame {
                Frame::Message(message) => {
                    count += 1;
                    if let Err(err) = serde_json::to_writer(&mut *batch, &message) {
                        serialised = Err(std::io::Error::other(err));
                        break;
                    }
                    batch.push(b'\n');
                }
                Frame::Lines {
                    bytes,
                    count: lines,
                } => {
                    count += lines;
                    if batch.is_empty() && bytes.capacity() <= 4 * MAX_BATCH_BYTES {
                        // Take the frame's buffer instead of copying it (ours is dropped).
                        *batch = bytes;
                    } else {
                        batch.extend_from_slice(&bytes);
                    }
                }
            }
            if batch.len() < MAX_BATCH_BYTES {
                next = rx.try_recv().ok();
            }
        }
        let written = match serialised {
            Ok(()) => match output.write_all(batch).await {
                Ok(()) => output.flush().await,
                Err(err) => Err(err),
            },
            Err(err) => Err(err),
        };
        gate.written_many(count);
        if batch.capacity() > 4 * MAX_BATCH_BYTES {
            *batch = Vec::new();
        }
        written
    }
    loop {
        tokio::select! {
            message = rx.recv() => match message {
                Some(message) => write_batch(&mut output, &mut batch, message, rx, gate).await?,
                None => return Ok(()),
            },
            _ = &mut done => {
                while let Ok(message) = rx.try_recv() {
                    write_batch(&mut output, &mut batch, message, rx, gate).await?;
                }
                return Ok(());
            }
        }
    }
}

/// What the writer gets: a message to serialise, or lines serialised already.
#[derive(Debug)]
pub(crate) enum Frame {
    /// One message.
    Message(Outgoing),
    /// `count` complete lines (each ending in `\n`), already counted on the gate.
    Lines { bytes: Vec<u8>, count: usize },
}

/// The single writer's queue; every message is counted on the output gate until written.
#[derive(Debug, Clone)]
pub(crate) struct Outbox {
    tx: mpsc::UnboundedSender<Frame>,
    pub(crate) gate: Arc<OutputGate>,
}

impl Outbox {
    pub(crate) fn send(&self, message: Outgoing) {
        self.gate.queued_one();
        if self.tx.send(Frame::Message(message)).is_err() {
            self.gate.written_one();
            tracing::debug!("output closed; dropping a message");
        }
    }

    /// Sends `count` serialised lines as one frame; the caller counted them on the gate.
    pub(crate) fn send_lines(&self, bytes: Vec<u8>, count: usize) {
        if self.tx.send(Frame::Lines { bytes, count }).is_err() {
            self.gate.written_many(count);
            tracing::debug!(count, "output closed; dropping lines");
        }
    }

    pub(crate) fn reply(&self, id: Option<RequestId>, reply: Reply) {
        let Some(id) = id else {
            if let Err(err) = reply {
                tracing::warn!(code = err.0.code, message = %err.0.message, "notification failed");
            }
            return;
        };
        self.send(match reply {
            Ok(result) => Outgoing::Response { id, result },
            Err(err) => Outgoing::Error { id, error: err.0 },
        });
    }

    pub(crate) fn invalid(&self, code: i64, message: String) {
        self.send(Outgoing::Error {
            id: RequestId::Str(INVALID_MESSAGE_ID.to_string()),
            error: ErrorObject {
                code,
                message,
                data: None,
            },
        });
    }
}

/// The live sink of a session's event log: serialises each event straight into its
/// `session/event` line (typed, no `Value`), counts it on the gate at once (so a turn's
/// per-event gate check sees it), and hands the lines gathered since the last flush to the
/// writer as one frame (early when [`MAX_BATCH_BYTES`] are gathered).
pub(crate) struct EventLines {
    out: Outbox,
    bytes: Vec<u8>,
    count: usize,
}

impl EventLines {
    pub(crate) fn new(out: Outbox) -> Self {
        Self {
            out,
            bytes: Vec::new(),
            count: 0,
        }
    }
}

impl LogSink<SessionEvent> for EventLines {
    fn push(&mut self, event: &SessionEvent) {
        let start = self.bytes.len();
        match serde_json::to_writer(&mut self.bytes, &EventNotification::new(event)) {
            Ok(()) => {
                self.bytes.push(b'\n');
                self.count += 1;
                self.out.gate.queued_one();
            }
            Err(err) => {
                self.bytes.truncate(start);
                tracing::error!(error = %err, "cannot serialise an event");
            }
        }
        if self.bytes.len() >= MAX_BATCH_BYTES {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.count == 0 {
            return;
        }
        // The next batch likely looks like this one: start with room for it.
        let room = self.bytes.len().clamp(512, MAX_BATCH_BYTES + 4096);
        let bytes = std::mem::replace(&mut self.bytes, Vec::with_capacity(room));
        self.out.send_lines(bytes, std::mem::take(&mut self.count));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zcode::eventlog::EventLog;
    use crate::zcode::wire::{EventBody, SessionUpdatedPayload, SESSION_EVENT};
    use serde_json::json;

    impl Frame {
        fn into_message(self) -> Outgoing {
            match self {
                Frame::Message(message) => message,
                Frame::Lines { .. } => panic!("not a message"),
            }
        }
    }

    /// Records every write and flush; `lines_at_flush` is how many lines had been written
    /// at each flush.
    #[derive(Default)]
    struct Recorder {
        bytes: Vec<u8>,
        writes: usize,
        lines_at_flush: Vec<usize>,
    }

    impl AsyncWrite for Recorder {
        fn poll_write(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            self.writes += 1;
            self.bytes.extend_from_slice(buf);
            std::task::Poll::Ready(Ok(buf.len()))
        }

        fn poll_flush(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            let lines = self.bytes.iter().filter(|b| **b == b'\n').count();
            self.lines_at_flush.push(lines);
            std::task::Poll::Ready(Ok(()))
        }

        fn poll_shutdown(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    use std::future::Future;

    fn note(n: u64) -> Frame {
        Frame::Message(Outgoing::Notification {
            method: SESSION_EVENT.to_string(),
            params: json!({"seq": n}),
        })
    }

    fn seqs(bytes: &[u8]) -> Vec<u64> {
        std::str::from_utf8(bytes)
            .expect("utf-8")
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).expect("json")["params"]["seq"]
                    .as_u64()
                    .expect("seq")
            })
            .collect()
    }

    fn event(seq: u64) -> SessionEvent {
        SessionEvent {
            event_id: format!("evt_{seq}"),
            session_id: "sess_1".into(),
            turn_id: Some("turn_1".into()),
            seq,
            timestamp: 1,
            body: EventBody::SessionUpdated(SessionUpdatedPayload::default()),
        }
    }

    #[tokio::test]
    async fn held_event_lines_go_out_as_one_frame_in_order_with_messages() {
        let gate = Arc::new(OutputGate::default());
        let (tx, mut rx) = mpsc::unbounded_channel();
        let out = Outbox {
            tx,
            gate: gate.clone(),
        };
        let log = EventLog::new(EventLines::new(out.clone()));
        log.subscribe(None, |_, _| out.send(note(0).into_message()));
        log.append_held(event);
        log.append_held(event);
        assert_eq!(gate.queued(), 3, "held lines count on the gate at once");
        assert_eq!(rx.len(), 1, "held lines are not sent before a flush");
        log.flush();
        log.flush();
        assert_eq!(
            rx.len(),
            2,
            "one frame for both lines; an empty flush sends nothing"
        );
        // A flushing append from elsewhere (a mode change) keeps seq order.
        log.append_held(event);
        log.append(event);
        assert_eq!(rx.len(), 3);
        let (_done_tx, done) = oneshot::channel();
        let mut sink = Recorder::default();
        let mut writer = Box::pin(write_all_messages(&mut sink, &mut rx, done, &gate));
        let waker = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(writer.as_mut().poll(&mut cx).is_pending());
        drop(writer);
        assert_eq!(seqs(&sink.bytes), vec![0, 1, 2, 3, 4]);
        assert_eq!(sink.lines_at_flush, vec![5], "all frames in one write");
        assert_eq!(gate.queued(), 0, "every line counted as written");
        assert_eq!(gate.high_water(), 5);
        // The lines are exactly the generic notification's.
        let first = sink.bytes.split(|b| *b == b'\n').nth(1).expect("line");
        let generic = Outgoing::Notification {
            method: SESSION_EVENT.to_string(),
            params: serde_json::to_value(event(1)).expect("value"),
        };
        assert_eq!(
            first,
            serde_json::to_vec(&generic).expect("json").as_slice()
        );
    }

    #[tokio::test]
    async fn lines_for_a_closed_output_are_counted_as_written() {
        let gate = Arc::new(OutputGate::default());
        let (tx, rx) = mpsc::unbounded_channel();
        drop(rx);
        let log = EventLog::new(EventLines::new(Outbox {
            tx,
            gate: gate.clone(),
        }));
        log.subscribe(None, |_, _| ());
        log.append_held(event);
        log.append_held(event);
        assert_eq!(gate.queued(), 2);
        log.flush();
        assert_eq!(gate.queued(), 0);
    }

    #[tokio::test]
    async fn a_burst_is_one_write_and_a_lone_line_is_flushed_before_waiting() {
        let gate = OutputGate::default();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (_done_tx, done) = oneshot::channel();
        // A burst: three messages already waiting.
        for n in 0..3 {
            gate.queued_one();
            tx.send(note(n)).expect("send");
        }
        let mut out = Recorder::default();
        let mut writer = Box::pin(write_all_messages(&mut out, &mut rx, done, &gate));
        // The writer drains the burst, then waits for more: poll it until it would block.
        let waker = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(writer.as_mut().poll(&mut cx).is_pending());
        drop(writer);
        assert_eq!(out.writes, 1, "one write for the burst");
        assert_eq!(
            out.lines_at_flush,
            vec![3],
            "one flush, after all three lines"
        );
        assert_eq!(gate.queued(), 0, "every message counted as written");
        // A lone line is flushed before the writer waits again.
        gate.queued_one();
        tx.send(note(3)).expect("send");
        let (_done_tx, done) = oneshot::channel();
        let mut writer = Box::pin(write_all_messages(&mut out, &mut rx, done, &gate));
        assert!(writer.as_mut().poll(&mut cx).is_pending());
        drop(writer);
        assert_eq!(out.lines_at_flush, vec![3, 4]);
        assert_eq!(seqs(&out.bytes), vec![0, 1, 2, 3]);
    }
}
