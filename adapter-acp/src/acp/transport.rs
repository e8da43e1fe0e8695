//! The ACP line transport: a [`ConnectTo`] endpoint of the official SDK built on its
//! frame-level [`Channel`], with agent-host's bounded line reader and its batching line
//! writer. It carries frames and knows no method names.
//!
//! Input: the SDK's stock stdio transport ends the whole connection on a line that is not
//! UTF-8 and buffers lines of any length. This one answers such lines itself, in JSON-RPC's
//! form (`-32700` for non-UTF-8, `-32600` for a line over the limit, `id: null`), and keeps
//! serving; every other line is parsed with the SDK's own [`TransportFrame::parse_json`]
//! (which answers bad JSON with `-32700` and non-JSON-RPC values with `-32600`). A request
//! that is invalid only in its shape (say `"params": 5`) but whose `id` can be read is
//! answered here with that id, as JSON-RPC 2.0 asks (the SDK would say `id: null`).
//!
//! Output: one [`LineWriter`] with one ordered queue. The
//! SDK's frames are forwarded into it as they arrive (serialised by the writer without the
//! SDK's deep copy of each message, byte-identical to the SDK's own lines), and the agent
//! writes lines into the same queue through the [`Outbox`] (its `session/update`
//! notifications, serialised once on the turn's task). The output is the order of the
//! queue: whatever the agent hands to the SDK after it wrote a line (a `session/prompt`
//! reply after its turn's updates, the `session/load` reply after the replayed history, a
//! permission request after its `tool_call`) reaches the queue after that line. The writer's
//! flush policy is agent-host's: everything waiting in one write and one flush, a lone line
//! flushed before the writer waits. Every queued message is counted on the
//! [`OutputGate`] until written, so turns wait for a slow client.

use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;

use agent_client_protocol::v1::schema::JsonRpcMessage;
use agent_client_protocol::{
    Channel, ConnectTo, ConnectionDriver, Error, RawJsonRpcError, RawJsonRpcId, RawJsonRpcMessage,
    RawJsonRpcParams, RawJsonRpcResponse, Role, TransportFrame,
};
use agent_host::backpressure::OutputGate;
use agent_host::lines::{LineError, LineReader};
use agent_host::output::{
    line_writer, Closed, Encode, Frames, LineSender, LineWriter, SendJsonError,
};
use futures::channel::{mpsc, oneshot};
use futures::future::{self, Either};
use futures::{FutureExt, Stream, StreamExt};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite};

/// A frame of the SDK for the writer, which serialises it as the SDK would.
#[derive(Debug)]
pub struct SdkFrame(pub TransportFrame);

impl Encode for SdkFrame {
    fn encode(self, buf: &mut Vec<u8>) {
        encode(&self.0, buf);
    }
}

/// The line transport of `adapter-acp acp`: lines of at most `limit` bytes from an input,
/// batched lines to an output. Connect an agent to it with [`ConnectTo::connect_to`].
#[derive(Debug)]
pub struct LineTransport<R, W> {
    input: R,
    output: W,
    limit: usize,
    sender: LineSender<SdkFrame>,
    writer: LineWriter<SdkFrame>,
}

/// A transport reading lines of at most `limit` bytes from `input` and writing lines to
/// `output`, counting every queued message on `gate` until it is written.
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
    let (sender, writer) = line_writer(gate);
    LineTransport {
        input,
        output,
        limit,
        sender,
        writer,
    }
}

/// The agent's end of the transport's one ordered output queue: lines written here go out
/// in order with the SDK's frames (see the module docs). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Outbox {
    sender: LineSender<SdkFrame>,
}

impl Outbox {
    /// Queues `message` (a whole JSON-RPC message) as one line, serialised now; it is
    /// counted on the gate until written.
    pub fn send<M: Serialize>(&self, message: &M) -> Result<(), OutboxError> {
        self.sender
            .send_json(message, None)
            .map_err(|err| match err {
                SendJsonError::Closed(Closed) => OutboxError::Closed,
                SendJsonError::Serialize(err) => OutboxError::Serialize(err.to_string()),
            })
    }

    /// Queues the lines of `frames` (whole JSON-RPC messages) as one message, and clears
    /// `frames`; returns how many lines were queued. They are counted on the gate from now
    /// until written.
    pub fn send_frames(&self, frames: &mut Frames) -> Result<usize, OutboxError> {
        self.sender
            .send_frames(frames)
            .map_err(|Closed| OutboxError::Closed)
    }

    /// The gate the writer counts on.
    pub fn gate(&self) -> &Arc<OutputGate> {
        self.sender.gate()
    }
}

/// A line could not be queued on the [`Outbox`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutboxError {
    /// The writer has ended: nothing sent now would be written.
    #[error("the connection's output is closed")]
    Closed,
    /// The message could not be serialised.
    #[error("cannot serialise a message: {0}")]
    Serialize(String),
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// The transport's [`Outbox`]: give it to the agent
    /// ([`AcpAgent::with_update_outbox`](super::AcpAgent::with_update_outbox)) so its
    /// `session/update` notifications go straight into the output queue instead of
    /// through the SDK's.
    pub fn update_outbox(&self) -> Outbox {
        Outbox {
            sender: self.sender.clone(),
        }
    }

    /// The SDK's end of the transport and the driver doing its I/O.
    fn open(self) -> (Channel, ConnectionDriver) {
        let (incoming_tx, incoming_rx) = mpsc::unbounded();
        let (outgoing_tx, outgoing_rx) = mpsc::unbounded();
        let (finish_tx, finish_rx) = oneshot::channel::<()>();
        let discard_incoming = Arc::new(AtomicBool::new(false));
        let reader = read_frames(
            LineReader::with_limit(self.input, self.limit),
            incoming_tx,
            self.sender.clone(),
            discard_incoming.clone(),
        );
        let sender = self.sender;
        let forward = async move {
            let mut frames = finishable(outgoing_rx, finish_rx);
            while let Some(frame) = frames.next().await {
                if sender.send(SdkFrame(frame)).is_err() {
                    break;
                }
            }
            // Write what is queued, then end (the agent's outbox may still hold senders).
            sender.finish();
        };
        let written = self.writer.run(self.output);
        let output = async move {
            match future::select(pin!(forward), pin!(written)).await {
                Either::Left(((), written)) => written.await,
                Either::Right((written, _)) => written,
            }
        };
        let driver = async move {
            match future::select(pin!(reader), pin!(output)).await {
                // End of input: the SDK winds the connection down and stops sending.
                Either::Left((Ok(()), output)) => output.await.map_err(Error::into_internal_error),
                Either::Left((Err(err), _)) => Err(err),
                // All output is written; the input need not reach its end.
                Either::Right((written, _)) => written.map_err(Error::into_internal_error),
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

/// The shape of a call: an `id` and a `method` of any kind.
#[derive(Deserialize)]
struct CallShape {
    id: RawJsonRpcId,
    #[allow(dead_code)]
    method: serde::de::IgnoredAny,
}

/// The id of a call the SDK refused as malformed, when it can be read: such a call is
/// answered with its own id, not `null` (JSON-RPC 2.0 uses `null` only when the id cannot
/// be determined).
fn readable_call_id(frame: &TransportFrame) -> Option<RawJsonRpcId> {
    let TransportFrame::Malformed { raw, error } = frame else {
        return None;
    };
    // Bad JSON has no id to read.
    if error.code == agent_client_protocol::ErrorCode::PARSE_ERROR {
        return None;
    }
    // A number or a string (a `null` id, or one of another type, cannot be read).
    let id = serde_json::from_str::<CallShape>(raw).ok()?.id;
    (!matches!(id, RawJsonRpcId::Null)).then_some(id)
}

/// Reads lines into frames for the SDK; rejected lines (and malformed calls whose id can be
/// read) are answered on `replies` (the writer's queue). Ends at the end of input.
async fn read_frames<R: AsyncRead + Unpin>(
    mut reader: LineReader<R>,
    to_sdk: mpsc::UnboundedSender<TransportFrame>,
    replies: LineSender<SdkFrame>,
    discard: Arc<AtomicBool>,
) -> agent_client_protocol::Result<()> {
    let answer = |id: RawJsonRpcId, error: Result<Error, RawJsonRpcError>| {
        let response = match error {
            Ok(error) => RawJsonRpcMessage::response(id, Err(error)),
            Err(raw) => RawJsonRpcResponse::new(id, Err(Box::new(raw))).into(),
        };
        if replies
            .send(SdkFrame(TransportFrame::Single(response)))
            .is_err()
        {
            tracing::debug!("cannot answer a rejected line: output is closed");
        }
    };
    while let Some(line) = reader.next_line().await {
        // After the finish request input is still read (so a writer blocked on a full
        // pipe never deadlocks a peer), but no longer delivered.
        let discarding = discard.load(Ordering::Acquire);
        match line {
            Ok(_) if discarding => {}
            Ok(text) => {
                let frame = TransportFrame::parse_json(&text);
                if let Some(id) = readable_call_id(&frame) {
                    if let TransportFrame::Malformed { error, .. } = frame {
                        tracing::debug!(?id, "answering a malformed call with its own id");
                        answer(id, Ok(error));
                    }
                    continue;
                }
                to_sdk
                    .unbounded_send(frame)
                    .map_err(Error::into_internal_error)?;
            }
            Err(LineError::Io(err)) => return Err(Error::into_internal_error(err)),
            Err(rejected) => {
                let (code, message) = crate::rejected_line(&rejected);
                if !discarding {
                    answer(RawJsonRpcId::Null, Err(RawJsonRpcError::new(code, message)));
                }
            }
        }
    }
    Ok(())
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

/// Appends `frame` as one line to `buf`. A frame that cannot be serialised leaves `buf` as
/// it was (a response is answered with an internal error instead, as the SDK does).
fn encode(frame: &TransportFrame, buf: &mut Vec<u8>) {
    let start = buf.len();
    let written = match frame {
        TransportFrame::Single(RawJsonRpcMessage::Notification(note)) => serde_json::to_writer(
            &mut *buf,
            &NotificationLine {
                jsonrpc: "2.0",
                method: &note.method,
                params: &note.params,
            },
        ),
        TransportFrame::Single(RawJsonRpcMessage::Request(request)) => {
            serde_json::to_writer(&mut *buf, &JsonRpcMessage::wrap(request))
        }
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
                    match serde_json::to_writer(&mut *buf, &JsonRpcMessage::wrap(fallback)) {
                        Ok(()) => buf.push(b'\n'),
                        Err(_) => buf.truncate(start),
                    }
                    return;
                }
            }
            written
        }
        TransportFrame::Malformed { raw, .. } => write_raw(raw, buf),
        // A kind of frame newer than this code: the SDK's own serialisation.
        other => match other.to_json() {
            Ok(line) => write_raw(&line, buf),
            Err(err) => {
                tracing::error!(error = %err, "cannot serialise an outgoing frame; dropped");
                return;
            }
        },
    };
    match written {
        Ok(()) => buf.push(b'\n'),
        Err(err) => {
            buf.truncate(start);
            tracing::error!(error = %err, "cannot serialise an outgoing message; dropped");
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use agent_client_protocol::RawJsonRpcNotification;
    use serde_json::{json, Value};
    use tokio::io::AsyncReadExt;

    const WAIT: Duration = Duration::from_secs(10);

    fn update(n: usize) -> TransportFrame {
        let message = RawJsonRpcMessage::notification(
            "session/update".to_string(),
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

    /// Runs `writer` into a pipe until it ends; the lines written.
    async fn written(writer: LineWriter<SdkFrame>) -> Vec<Value> {
        let (mut client, server) = tokio::io::duplex(1 << 20);
        let run = tokio::spawn(writer.run(server));
        let mut text = String::new();
        tokio::time::timeout(WAIT, client.read_to_string(&mut text))
            .await
            .expect("read in time")
            .expect("read");
        run.await.expect("join").expect("written");
        text.lines()
            .map(|line| serde_json::from_str(line).expect("json line"))
            .collect()
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
            encode(frame, &mut ours);
            let TransportFrame::Single(message) = frame else {
                unreachable!()
            };
            let sdk = serde_json::to_string(message).expect("sdk serialises");
            assert_eq!(String::from_utf8(ours).expect("utf-8"), format!("{sdk}\n"));
        }
    }

    #[test]
    fn a_relayed_value_spanning_lines_is_one_line() {
        let mut buf = Vec::new();
        let frame = TransportFrame::Malformed {
            raw: "{\n \"a\": 1\n}".to_string(),
            error: Error::parse_error(),
        };
        encode(&frame, &mut buf);
        assert_eq!(buf, b"{\"a\":1}\n");
    }

    #[tokio::test]
    async fn outbox_lines_and_sdk_frames_keep_the_order_they_were_queued_in() {
        let gate = Arc::new(OutputGate::new(1000));
        let (sender, writer) = line_writer::<SdkFrame>(gate.clone());
        let outbox = Outbox {
            sender: sender.clone(),
        };
        sender.send(SdkFrame(reply(1))).expect("open");
        for n in 0..50 {
            let line = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"n": n}});
            outbox.send(&line).expect("open");
        }
        sender.send(SdkFrame(reply(2))).expect("open");
        assert_eq!(gate.queued(), 52, "every message counted until written");
        sender.finish();
        let lines = written(writer).await;
        assert_eq!(lines.len(), 52);
        assert_eq!(lines[0]["id"], 1);
        for (n, line) in lines[1..51].iter().enumerate() {
            assert_eq!(line["params"]["n"], n);
        }
        assert_eq!(lines[51]["id"], 2, "the later reply follows the updates");
        assert_eq!(gate.queued(), 0);
        assert_eq!(
            outbox.send(&json!({})),
            Err(OutboxError::Closed),
            "closed with the writer"
        );
    }

    #[test]
    fn the_id_of_a_malformed_call_is_read_when_it_can_be() {
        let id = |line: &str| readable_call_id(&TransportFrame::parse_json(line));
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":7,"method":"session/new","params":5}"#),
            Some(RawJsonRpcId::Number(7))
        );
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":"a","method":"x","params":"s"}"#),
            Some(RawJsonRpcId::Str("a".into()))
        );
        // Valid calls are the SDK's; bad JSON, unreadable ids and notifications stay null.
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":7,"method":"x","params":{}}"#),
            None
        );
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":7,"method":"x","params":"#),
            None
        );
        assert_eq!(id(r#"{"id":{"nested":true},"method":"x"}"#), None);
        assert_eq!(id(r#"{"jsonrpc":"2.0","method":"x","params":5}"#), None);
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":7,"result":5,"params":5}"#),
            None
        );
    }

    #[tokio::test]
    async fn a_call_with_params_that_are_not_an_object_is_answered_with_its_own_id() {
        let mut input = br#"{"jsonrpc":"2.0","id":7,"method":"session/new","params":5}"#.to_vec();
        input.extend_from_slice(b"\n\xff\xfe\n");
        let (mut feed, read) = tokio::io::duplex(4096);
        tokio::io::AsyncWriteExt::write_all(&mut feed, &input)
            .await
            .expect("write");
        drop(feed);
        let (to_sdk, mut sdk) = mpsc::unbounded();
        let (sender, writer) = line_writer::<SdkFrame>(Arc::new(OutputGate::default()));
        let read = tokio::time::timeout(
            WAIT,
            read_frames(
                LineReader::with_limit(read, 1024),
                to_sdk,
                sender.clone(),
                Arc::default(),
            ),
        )
        .await
        .expect("read in time");
        assert!(read.is_ok(), "{read:?}");
        assert!(sdk.try_recv().is_err(), "answered here, not by the SDK");
        sender.finish();
        drop(sender);
        let lines = written(writer).await;
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines[0]["id"], 7, "{}", lines[0]);
        assert_eq!(lines[0]["error"]["code"], -32600);
        // A line whose id cannot be read at all is answered with null.
        assert!(lines[1]["id"].is_null(), "{}", lines[1]);
        assert_eq!(lines[1]["error"]["code"], -32700);
    }
}
