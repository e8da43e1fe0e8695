//! The ACP line transport: a [`ConnectTo`] endpoint of the official SDK built on its
//! frame-level [`Channel`], with our own bounded line reader and a batching line writer.
//!
//! The SDK's stock stdio transport ends the whole connection on a line that is not UTF-8
//! and buffers lines of any length. This one answers such lines itself, in JSON-RPC's
//! form (`-32700` for non-UTF-8, `-32600` for a line over the limit, `id: null`), and keeps
//! serving; every other line is parsed with the SDK's own
//! [`TransportFrame::parse_json`] (which answers bad JSON with `-32700` and
//! non-JSON-RPC values with `-32600`).
//!
//! Output: the SDK hands us [`TransportFrame`]s; the writer serialises every frame that is
//! already waiting into one reused buffer (up to [`MAX_BATCH_BYTES`]) and writes it with one
//! `write_all` + one `flush`. A lone frame is written and flushed before the writer waits
//! for the next one, so nothing ever waits on a timer. Frames are written in the order the
//! SDK sent them (one queue, one writer), so a `session/prompt` reply still follows every
//! `session/update` sent before it. Written `session/update` notifications are counted on
//! the [`OutputGate`] (known from the frame, no scan of the text), so turns wait for a slow
//! client: memory stays bounded when the client stops reading.
//!
//! Compared with the SDK's [`Lines`](agent_client_protocol::Lines) transport this saves, per
//! message, a deep clone of the message (the SDK's serialiser wraps a clone), a `String`
//! per line, a task wake-up of the SDK's transport actor and one write + flush per line.

use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;

use agent_client_protocol::v1::schema::{JsonRpcMessage, SessionNotification};
use agent_client_protocol::{
    Channel, ConnectTo, ConnectionDriver, Error, RawJsonRpcError, RawJsonRpcId, RawJsonRpcMessage,
    RawJsonRpcParams, RawJsonRpcResponse, Role, TransportFrame,
};
use futures::channel::{mpsc, oneshot};
use futures::future::{self, Either};
use futures::task::AtomicWaker;
use futures::{FutureExt, Stream, StreamExt};
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use crate::backpressure::OutputGate;
use crate::lines::{Line, LineReader};

/// The method of the notifications counted on the [`OutputGate`].
const UPDATE_METHOD: &str = "session/update";

/// The most bytes the writer gathers before it writes; a burst larger than this is written
/// in several writes (each of them flushed).
pub const MAX_BATCH_BYTES: usize = 64 * 1024;

/// The line transport of `adapter-acp acp`: lines of at most `limit` bytes from an input,
/// batched lines to an output. Connect an agent to it with [`ConnectTo::connect_to`].
#[derive(Debug)]
pub struct LineTransport<R, W> {
    input: R,
    output: W,
    limit: usize,
    gate: Arc<OutputGate>,
    outbox: Arc<UpdateOutbox>,
}

/// A transport reading lines of at most `limit` bytes from `input` and writing lines to
/// `output`, counting written `session/update` notifications on `gate`.
pub fn transport<R, W>(
    input: R,
    output: W,
    limit: usize,
    gate: Arc<OutputGate>,
) -> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    LineTransport {
        input,
        output,
        limit,
        gate,
        outbox: Arc::new(UpdateOutbox::default()),
    }
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// The transport's [`UpdateOutbox`]: give it to the agent
    /// ([`AcpAgent::with_update_outbox`](super::AcpAgent::with_update_outbox)) so its
    /// `session/update` notifications skip the SDK's outgoing queue.
    pub fn update_outbox(&self) -> Arc<UpdateOutbox> {
        self.outbox.clone()
    }

    /// The SDK's end of the transport and the driver doing its I/O.
    fn open(self) -> (Channel, ConnectionDriver) {
        let (incoming_tx, incoming_rx) = mpsc::unbounded();
        let (outgoing_tx, outgoing_rx) = mpsc::unbounded();
        let (finish_tx, finish_rx) = oneshot::channel::<()>();
        let discard_incoming = Arc::new(AtomicBool::new(false));
        let reader = read_frames(
            LineReader::new(BufReader::new(self.input), self.limit),
            incoming_tx,
            outgoing_tx.clone(),
            discard_incoming.clone(),
        );
        let writer = write_frames(
            finishable(outgoing_rx, finish_rx),
            self.outbox,
            self.output,
            self.gate,
        );
        let driver = async move {
            match future::select(pin!(reader), pin!(writer)).await {
                // End of input: the SDK winds the connection down and stops sending.
                Either::Left((Ok(()), writer)) => writer.await,
                Either::Left((Err(err), _)) => Err(err),
                // All output is written; the input need not reach its end.
                Either::Right((written, _)) => written,
            }
        };
        let driver = ConnectionDriver::with_finish(driver, move || {
            discard_incoming.store(true, Ordering::Release);
            let _ = finish_tx.send(());
        });
        (Channel::new(incoming_rx, outgoing_tx), driver)
    }
}

impl<R, W, Peer: Role> ConnectTo<Peer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    async fn connect_to(
        self,
        client: impl ConnectTo<Peer::Counterpart>,
    ) -> agent_client_protocol::Result<()> {
        let (channel, mut driver) = self.open();
        let client_future = Box::pin(ConnectTo::<Peer>::connect_to(channel, client));
        match future::select(client_future, &mut driver).await {
            Either::Left((result, _)) => {
                result?;
                // Everything the client sent has been handed over: write it, then end.
                let _ = driver.request_finish();
                driver.await
            }
            Either::Right((result, _)) => result,
        }
    }

    fn into_channel_and_future(self) -> (Channel, Option<ConnectionDriver>) {
        let (channel, driver) = self.open();
        (channel, Some(driver))
    }
}

/// The frames on `frames` until the finish hook fires (then the ones already sent) or every
/// sender is gone.
fn finishable(
    mut frames: mpsc::UnboundedReceiver<TransportFrame>,
    finish: oneshot::Receiver<()>,
) -> impl Stream<Item = TransportFrame> + Send + Unpin {
    let mut finish = Some(finish);
    futures::stream::poll_fn(move |cx| {
        if let Some(signal) = finish.as_mut() {
            if let Poll::Ready(requested) = signal.poll_unpin(cx) {
                finish = None;
                // A dropped finish hook is not a request to finish.
                if requested.is_ok() {
                    frames.close();
                }
            }
        }
        frames.poll_next_unpin(cx)
    })
}

/// Reads lines into frames for the SDK; rejected lines are answered on `replies` (the
/// writer's queue). Ends at the end of input.
async fn read_frames<R: tokio::io::AsyncBufRead + Unpin>(
    mut reader: LineReader<R>,
    to_sdk: mpsc::UnboundedSender<TransportFrame>,
    replies: mpsc::UnboundedSender<TransportFrame>,
    discard: Arc<AtomicBool>,
) -> agent_client_protocol::Result<()> {
    loop {
        let line = reader
            .next_line()
            .await
            .map_err(Error::into_internal_error)?;
        // After the finish request input is still read (so a writer blocked on a full
        // pipe never deadlocks a peer), but no longer delivered.
        let discarding = discard.load(Ordering::Acquire);
        match line {
            Line::Eof => return Ok(()),
            Line::Text(_) if discarding => {}
            Line::Text(text) => to_sdk
                .unbounded_send(TransportFrame::parse_json(&text))
                .map_err(Error::into_internal_error)?,
            rejected => {
                let code = match rejected {
                    Line::NotUtf8 => -32700,
                    _ => -32600,
                };
                let message = rejected.error_message().unwrap_or_default();
                tracing::warn!(%message, "rejected an input line");
                if discarding {
                    continue;
                }
                let reply = RawJsonRpcResponse::new(
                    RawJsonRpcId::Null,
                    Err(Box::new(RawJsonRpcError::new(code, message))),
                );
                if replies
                    .unbounded_send(TransportFrame::Single(reply.into()))
                    .is_err()
                {
                    tracing::debug!("cannot answer a rejected line: output is closed");
                }
            }
        }
    }
}

/// `session/update` notifications written by the agent straight into the writer's next
/// batch: serialised once, from the typed [`SessionNotification`], on the sender's task,
/// without the SDK's `serde_json::Value` round trip, its outgoing queue or a task
/// hand-off per notification.
///
/// Order: the notifications of the outbox are written in the order they were sent. Each
/// batch of the writer takes the SDK's frames already waiting *first*, then the outbox, and
/// writes the outbox's lines *before* those frames; so every message the SDK is given after
/// a notification was sent here (a `session/prompt` reply after its turn's updates, the
/// `session/load` reply after the replayed history, a permission request after its
/// `tool_call`) is written after it. (A message handed to the SDK *before* a notification
/// may be written after it; nothing of ACP depends on that order.)
#[derive(Debug, Default)]
pub struct UpdateOutbox {
    state: Mutex<OutboxState>,
    writer: AtomicWaker,
}

#[derive(Debug, Default)]
struct OutboxState {
    /// Serialised lines, newline-terminated.
    lines: Vec<u8>,
    /// How many.
    count: usize,
    /// The writer is gone: nothing sent now would be written.
    closed: bool,
}

/// The outbox's writer has ended: the notification was not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the connection's output is closed")]
pub struct OutboxClosed;

/// A `session/update` notification as the SDK writes it.
#[derive(Serialize)]
struct UpdateLine<'a> {
    jsonrpc: &'static str,
    method: &'static str,
    params: &'a SessionNotification,
}

impl UpdateOutbox {
    fn state(&self) -> MutexGuard<'_, OutboxState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `notification` as a `session/update` line for the writer's next batch.
    pub fn send(&self, notification: &SessionNotification) -> Result<(), OutboxClosed> {
        let was_empty = {
            let mut state = self.state();
            if state.closed {
                return Err(OutboxClosed);
            }
            let start = state.lines.len();
            let line = UpdateLine {
                jsonrpc: "2.0",
                method: UPDATE_METHOD,
                params: notification,
            };
            if let Err(err) = serde_json::to_writer(&mut state.lines, &line) {
                // Not reachable for the schema's types; dropped like the SDK drops a
                // notification it cannot serialise.
                state.lines.truncate(start);
                tracing::error!(error = %err, "cannot serialise a session/update; dropped");
                return Ok(());
            }
            state.lines.push(b'\n');
            state.count += 1;
            state.count == 1
        };
        if was_empty {
            self.writer.wake();
        }
        Ok(())
    }

    fn is_empty(&self) -> bool {
        self.state().count == 0
    }

    /// Swaps the queued lines into `buf` (which must be empty) and returns how many; closes
    /// the outbox when `close`.
    fn take(&self, buf: &mut Vec<u8>, close: bool) -> usize {
        let mut state = self.state();
        std::mem::swap(&mut state.lines, buf);
        state.closed |= close;
        std::mem::take(&mut state.count)
    }

    fn close(&self) {
        let mut state = self.state();
        state.closed = true;
        state.lines = Vec::new();
        state.count = 0;
    }
}

/// A notification on the wire: `{"jsonrpc":"2.0","method":…,"params":…}`, the SDK's own
/// layout, serialised from a borrowed frame.
#[derive(Serialize)]
struct NotificationLine<'a> {
    jsonrpc: &'static str,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: &'a Option<RawJsonRpcParams>,
}

/// Appends `frame` as one line to `buf`; whether it is a `session/update` notification.
/// A frame that cannot be serialised leaves `buf` as it was (a response is answered with
/// an internal error instead, as the SDK does).
fn encode(frame: &TransportFrame, buf: &mut Vec<u8>) -> bool {
    let start = buf.len();
    let (written, update) = match frame {
        TransportFrame::Single(RawJsonRpcMessage::Notification(note)) => (
            serde_json::to_writer(
                &mut *buf,
                &NotificationLine {
                    jsonrpc: "2.0",
                    method: &note.method,
                    params: &note.params,
                },
            ),
            &*note.method == UPDATE_METHOD,
        ),
        TransportFrame::Single(RawJsonRpcMessage::Request(request)) => (
            serde_json::to_writer(&mut *buf, &JsonRpcMessage::wrap(request)),
            false,
        ),
        TransportFrame::Single(RawJsonRpcMessage::Response(response)) => {
            let written = serde_json::to_writer(&mut *buf, &JsonRpcMessage::wrap(response));
            if let Err(err) = &written {
                buf.truncate(start);
                tracing::error!(error = %err, id = ?response.id(), "cannot serialise a response; answering with an internal error");
                let fallback = RawJsonRpcMessage::response(
                    response.id().clone(),
                    Err(Error::internal_error()),
                );
                if let RawJsonRpcMessage::Response(fallback) = &fallback {
                    return match serde_json::to_writer(&mut *buf, &JsonRpcMessage::wrap(fallback)) {
                        Ok(()) => {
                            buf.push(b'\n');
                            false
                        }
                        Err(_) => {
                            buf.truncate(start);
                            false
                        }
                    };
                }
            }
            (written, false)
        }
        TransportFrame::Malformed { raw, .. } => (write_raw(raw, buf), false),
        // A kind of frame newer than this code: the SDK's own serialisation.
        other => match other.to_json() {
            Ok(line) => (write_raw(&line, buf), false),
            Err(err) => {
                tracing::error!(error = %err, "cannot serialise an outgoing frame; dropped");
                return false;
            }
        },
    };
    match written {
        Ok(()) => {
            buf.push(b'\n');
            update
        }
        Err(err) => {
            buf.truncate(start);
            tracing::error!(error = %err, "cannot serialise an outgoing message; dropped");
            false
        }
    }
}

/// A relayed wire value as one line: unchanged unless it spans lines, then compacted (or,
/// when it is not JSON, written as a JSON string), as the SDK does.
fn write_raw(raw: &str, buf: &mut Vec<u8>) -> serde_json::Result<()> {
    if !raw.contains(['\r', '\n']) {
        buf.extend_from_slice(raw.as_bytes());
        return Ok(());
    }
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(value) => serde_json::to_writer(buf, &value),
        Err(_) => serde_json::to_writer(buf, raw),
    }
}

/// Writes the frames of `frames` and the lines of `outbox` until `frames` ends: every
/// frame already waiting and every queued update go into one write and one flush; a lone
/// line is flushed before the writer waits again. Counts written `session/update`
/// notifications on `gate`; closes the gate when the output fails.
async fn write_frames<W, S>(
    mut frames: S,
    outbox: Arc<UpdateOutbox>,
    mut output: W,
    gate: Arc<OutputGate>,
) -> agent_client_protocol::Result<()>
where
    W: AsyncWrite + Unpin,
    S: Stream<Item = TransportFrame> + Unpin,
{
    let mut buf = Vec::with_capacity(8 * 1024);
    let mut tail = Vec::with_capacity(1024);
    let mut ended = false;
    while !ended {
        // A frame, the end of the frames, or (`None`) queued updates.
        let first = future::poll_fn(|cx| {
            outbox.writer.register(cx.waker());
            match frames.poll_next_unpin(cx) {
                Poll::Ready(item) => Poll::Ready(Some(item)),
                Poll::Pending if !outbox.is_empty() => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            }
        })
        .await;
        tail.clear();
        let mut updates = 0;
        match first {
            Some(Some(frame)) => {
                updates += usize::from(encode(&frame, &mut tail));
                while tail.len() < MAX_BATCH_BYTES {
                    // Only what is already waiting: never wait for more before writing.
                    match frames.next().now_or_never() {
                        Some(Some(frame)) => updates += usize::from(encode(&frame, &mut tail)),
                        Some(None) => {
                            ended = true;
                            break;
                        }
                        None => break,
                    }
                }
            }
            Some(None) => ended = true,
            None => {}
        }
        // The frames were taken first: every update sent before one of them was given to
        // the SDK is in the outbox now, and is written before it.
        buf.clear();
        updates += outbox.take(&mut buf, ended);
        buf.extend_from_slice(&tail);
        if buf.is_empty() {
            continue;
        }
        if let Err(err) = write_flushed(&mut output, &buf).await {
            // Nobody reads any more: never hold a turn back again.
            outbox.close();
            gate.close();
            return Err(Error::into_internal_error(err));
        }
        gate.written_many(updates);
    }
    let closed = async {
        output.flush().await?;
        output.shutdown().await
    };
    closed.await.map_err(Error::into_internal_error)
}

/// One write of `bytes` (when there are any) and one flush.
async fn write_flushed<W: AsyncWrite + Unpin>(output: &mut W, bytes: &[u8]) -> std::io::Result<()> {
    if !bytes.is_empty() {
        output.write_all(bytes).await?;
    }
    output.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::Pin;
    use std::sync::Mutex;
    use std::task::Context;
    use std::time::Duration;

    use agent_client_protocol::RawJsonRpcNotification;
    use serde_json::{json, Value};

    const WAIT: Duration = Duration::from_secs(10);

    /// What a [`Recorder`] saw: each `poll_write`'s bytes, and the flushes after them.
    #[derive(Debug, Default)]
    struct Seen {
        writes: Vec<Vec<u8>>,
        flushes: usize,
        /// Bytes written by the time of each flush.
        flushed_at: Vec<usize>,
    }

    /// An output that records its writes and flushes and wakes a watcher after each flush.
    #[derive(Clone, Default)]
    struct Recorder {
        seen: Arc<Mutex<Seen>>,
        flushed: Arc<tokio::sync::Notify>,
    }

    impl Recorder {
        fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
            self.seen.lock().unwrap_or_else(|e| e.into_inner())
        }

        fn lines(&self) -> Vec<Value> {
            let bytes: Vec<u8> = self.seen().writes.concat();
            String::from_utf8(bytes)
                .expect("utf-8")
                .lines()
                .map(|line| serde_json::from_str(line).expect("json line"))
                .collect()
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
                seen.flushes += 1;
                let total = seen.writes.iter().map(Vec::len).sum();
                seen.flushed_at.push(total);
            }
            self.flushed.notify_one();
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    fn update(n: usize) -> TransportFrame {
        let message = RawJsonRpcMessage::notification(
            UPDATE_METHOD.to_string(),
            json!({"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": format!("t{n}")}}}),
        )
        .expect("notification");
        TransportFrame::Single(message)
    }

    fn reply(id: i64) -> TransportFrame {
        TransportFrame::Single(RawJsonRpcMessage::response(
            RawJsonRpcId::Number(id),
            Ok(json!({"stopReason": "end_turn"})),
        ))
    }

    #[tokio::test]
    async fn a_burst_is_one_write_and_one_flush_in_order() {
        let (tx, rx) = mpsc::unbounded();
        for n in 0..100 {
            tx.unbounded_send(update(n)).expect("queued");
        }
        tx.unbounded_send(reply(7)).expect("queued");
        drop(tx);
        let gate = Arc::new(OutputGate::new(1000));
        for _ in 0..100 {
            gate.queued_one();
        }
        let out = Recorder::default();
        tokio::time::timeout(
            WAIT,
            write_frames(rx, Arc::default(), out.clone(), gate.clone()),
        )
        .await
        .expect("written in time")
        .expect("written");
        {
            let seen = out.seen();
            assert_eq!(seen.writes.len(), 1, "one write for the burst");
            // One flush after the burst, one when the writer ends.
            assert_eq!(seen.flushes, 2);
        }
        let lines = out.lines();
        assert_eq!(lines.len(), 101);
        for (n, line) in lines[..100].iter().enumerate() {
            assert_eq!(line["jsonrpc"], "2.0");
            assert_eq!(line["method"], UPDATE_METHOD);
            assert_eq!(line["params"]["update"]["content"]["text"], format!("t{n}"));
        }
        assert_eq!(lines[100]["id"], 7, "the reply comes after every update");
        assert_eq!(lines[100]["result"]["stopReason"], "end_turn");
        assert_eq!(gate.queued(), 0, "every written update counted");
    }

    #[tokio::test]
    async fn a_lone_line_is_flushed_before_the_writer_waits() {
        let (tx, rx) = mpsc::unbounded();
        let gate = Arc::new(OutputGate::new(1000));
        gate.queued_one();
        let out = Recorder::default();
        let flushed = out.flushed.clone();
        let writer = tokio::spawn(write_frames(rx, Arc::default(), out.clone(), gate.clone()));
        tx.unbounded_send(update(0)).expect("queued");
        // The sender stays open: the line must still reach the output, flushed.
        tokio::time::timeout(WAIT, flushed.notified())
            .await
            .expect("flushed without more input");
        {
            let seen = out.seen();
            assert_eq!(seen.writes.len(), 1);
            assert_eq!(seen.flushed_at, vec![seen.writes[0].len()]);
        }
        assert_eq!(out.lines()[0]["params"]["update"]["content"]["text"], "t0");
        tx.unbounded_send(reply(1)).expect("queued");
        drop(tx);
        tokio::time::timeout(WAIT, writer)
            .await
            .expect("ends in time")
            .expect("join")
            .expect("written");
        let lines = out.lines();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1]["id"], 1);
        assert_eq!(gate.queued(), 0);
    }

    #[tokio::test]
    async fn a_large_burst_is_split_but_kept_in_order() {
        let (tx, rx) = mpsc::unbounded();
        let n = 4 * MAX_BATCH_BYTES / 150;
        for i in 0..n {
            tx.unbounded_send(update(i)).expect("queued");
        }
        drop(tx);
        let out = Recorder::default();
        tokio::time::timeout(
            WAIT,
            write_frames(
                rx,
                Arc::default(),
                out.clone(),
                Arc::new(OutputGate::default()),
            ),
        )
        .await
        .expect("in time")
        .expect("written");
        let writes = out.seen().writes.len();
        assert!((2..=8).contains(&writes), "{writes} writes");
        let texts: Vec<String> = out
            .lines()
            .iter()
            .map(|l| {
                l["params"]["update"]["content"]["text"]
                    .as_str()
                    .expect("text")
                    .to_string()
            })
            .collect();
        let expected: Vec<String> = (0..n).map(|i| format!("t{i}")).collect();
        assert_eq!(texts, expected);
    }

    #[test]
    fn frames_are_written_as_the_sdk_writes_them() {
        let frames = [
            update(3),
            reply(4),
            TransportFrame::Single(RawJsonRpcMessage::Notification(RawJsonRpcNotification {
                method: "x/none".into(),
                params: None,
            })),
            TransportFrame::Single(
                RawJsonRpcMessage::request("session/request_permission".into(), json!({"a": 1}), 9)
                    .expect("request"),
            ),
            TransportFrame::Single(RawJsonRpcMessage::response(
                RawJsonRpcId::Null,
                Err(Error::invalid_request()),
            )),
        ];
        for frame in &frames {
            let mut ours = Vec::new();
            let update = encode(frame, &mut ours);
            let TransportFrame::Single(message) = frame else {
                unreachable!()
            };
            let sdk = serde_json::to_string(message).expect("sdk serialises");
            assert_eq!(String::from_utf8(ours).expect("utf-8"), format!("{sdk}\n"));
            assert_eq!(
                update,
                matches!(message, RawJsonRpcMessage::Notification(n) if &*n.method == UPDATE_METHOD)
            );
        }
    }

    #[test]
    fn a_relayed_value_spanning_lines_is_one_line() {
        let mut buf = Vec::new();
        let frame = TransportFrame::Malformed {
            raw: "{\n \"a\": 1\n}".to_string(),
            error: Error::parse_error(),
        };
        assert!(!encode(&frame, &mut buf));
        assert_eq!(buf, b"{\"a\":1}\n");
    }

    #[tokio::test]
    async fn a_failed_write_closes_the_gate() {
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
        gate.queued_one();
        let (tx, rx) = mpsc::unbounded();
        tx.unbounded_send(update(0)).expect("queued");
        let result =
            tokio::time::timeout(WAIT, write_frames(rx, Arc::default(), Broken, gate.clone()))
                .await
                .expect("in time");
        let err = result.expect_err("a broken pipe fails the writer");
        assert!(
            err.to_string().to_ascii_lowercase().contains("broken pipe"),
            "{err}"
        );
        tokio::time::timeout(WAIT, gate.ready())
            .await
            .expect("a closed gate never holds a turn");
    }

    fn note(n: usize) -> SessionNotification {
        use agent_client_protocol::v1::schema::{
            ContentBlock, ContentChunk, SessionId, SessionUpdate, TextContent,
        };
        SessionNotification::new(
            SessionId::new("s"),
            SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(
                TextContent::new(format!("o{n}")),
            ))),
        )
    }

    #[test]
    fn outbox_lines_are_what_the_sdk_would_write() {
        let outbox = UpdateOutbox::default();
        let notification = note(1);
        outbox.send(&notification).expect("open");
        let mut buf = Vec::new();
        assert_eq!(outbox.take(&mut buf, false), 1);
        let sdk = RawJsonRpcMessage::notification(
            UPDATE_METHOD.to_string(),
            serde_json::to_value(&notification).expect("value"),
        )
        .expect("notification");
        let sdk = serde_json::to_string(&sdk).expect("sdk serialises");
        assert_eq!(String::from_utf8(buf).expect("utf-8"), format!("{sdk}\n"));
    }

    #[tokio::test]
    async fn outbox_updates_come_before_a_later_reply_and_are_counted() {
        let (tx, rx) = mpsc::unbounded();
        let outbox = Arc::new(UpdateOutbox::default());
        let gate = Arc::new(OutputGate::new(1000));
        // Updates queued, then the reply given to the SDK: both wait before the writer runs.
        for n in 0..50 {
            gate.queued_one();
            outbox.send(&note(n)).expect("open");
        }
        tx.unbounded_send(reply(3)).expect("queued");
        let out = Recorder::default();
        let writer = tokio::spawn(write_frames(rx, outbox.clone(), out.clone(), gate.clone()));
        tokio::time::timeout(WAIT, out.flushed.notified())
            .await
            .expect("flushed");
        assert_eq!(
            out.seen().writes.len(),
            1,
            "one write for updates and reply"
        );
        // A lone update later is flushed before the writer waits again.
        gate.queued_one();
        outbox.send(&note(50)).expect("open");
        tokio::time::timeout(WAIT, out.flushed.notified())
            .await
            .expect("a lone update is flushed");
        drop(tx);
        tokio::time::timeout(WAIT, writer)
            .await
            .expect("ends")
            .expect("join")
            .expect("written");
        let lines = out.lines();
        assert_eq!(lines.len(), 52);
        for (n, line) in lines[..50].iter().enumerate() {
            assert_eq!(line["params"]["update"]["content"]["text"], format!("o{n}"));
        }
        assert_eq!(
            lines[50]["id"], 3,
            "the reply follows the updates sent before it"
        );
        assert_eq!(lines[51]["params"]["update"]["content"]["text"], "o50");
        assert_eq!(gate.queued(), 0, "every update counted as written");
        assert_eq!(
            outbox.send(&note(51)),
            Err(OutboxClosed),
            "closed with the writer"
        );
    }
}
