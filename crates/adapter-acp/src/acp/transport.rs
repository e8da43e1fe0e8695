//! The ACP line transport: the official SDK's [`Lines`] on our own bounded reader and a
//! counting writer.
//!
//! The SDK's stock stdio transport ends the whole connection on a line that is not UTF-8
//! and buffers lines of any length. This one answers such lines itself, in JSON-RPC's
//! form (`-32700` for non-UTF-8, `-32600` for a line over the limit, `id: null`), and keeps
//! serving; everything else goes to the SDK unchanged (which answers bad JSON with
//! `-32700` and non-JSON-RPC values with `-32600`). Written `session/update` lines are
//! counted on the [`OutputGate`], so turns wait for a slow client.

use std::sync::Arc;

use agent_client_protocol::Lines;
use futures::{Sink, Stream};
use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

use crate::backpressure::OutputGate;
use crate::lines::{Line, LineReader};

/// What a written line starts with when it is a `session/update` notification as the SDK
/// serialises it.
const UPDATE_MARK: &str = "\"method\":\"session/update\"";

/// A JSON-RPC error for an input line that never reached the SDK.
#[derive(Debug, Serialize)]
struct RejectedLine {
    jsonrpc: &'static str,
    id: Value,
    error: RejectedError,
}

#[derive(Debug, Serialize)]
struct RejectedError {
    code: i64,
    message: String,
}

async fn write_line<W: AsyncWrite + Unpin>(out: &Mutex<W>, line: &[u8]) -> std::io::Result<()> {
    let mut out = out.lock().await;
    out.write_all(line).await?;
    out.write_all(b"\n").await?;
    out.flush().await
}

/// A transport reading lines of at most `limit` bytes from `input` and writing lines to
/// `output`, counting `session/update` lines as written on `gate`.
pub fn transport<R, W>(
    input: R,
    output: W,
    limit: usize,
    gate: Arc<OutputGate>,
) -> Lines<
    impl Sink<String, Error = std::io::Error> + Send + 'static,
    impl Stream<Item = std::io::Result<String>> + Send + 'static,
>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let output = Arc::new(Mutex::new(output));
    let outgoing = futures::sink::unfold(
        (output.clone(), gate.clone()),
        |(output, gate), line: String| async move {
            let written = write_line(&output, line.as_bytes()).await;
            if line.contains(UPDATE_MARK) {
                gate.written_one();
            }
            if written.is_err() {
                // Nobody reads any more: never hold a turn back again.
                gate.close();
            }
            written.map(|()| (output, gate))
        },
    );
    let reader = LineReader::new(BufReader::new(input), limit);
    let incoming = futures::stream::unfold((reader, output), |(mut reader, output)| async move {
        loop {
            match reader.next_line().await {
                Ok(Line::Text(text)) => return Some((Ok(text), (reader, output))),
                Ok(Line::Eof) => return None,
                Ok(rejected) => {
                    let code = match rejected {
                        Line::NotUtf8 => -32700,
                        _ => -32600,
                    };
                    let message = rejected.error_message().unwrap_or_default();
                    tracing::warn!(%message, "rejected an input line");
                    let reply = RejectedLine {
                        jsonrpc: "2.0",
                        id: Value::Null,
                        error: RejectedError { code, message },
                    };
                    match serde_json::to_vec(&reply) {
                        Ok(bytes) => {
                            if let Err(err) = write_line(&output, &bytes).await {
                                tracing::debug!(error = %err, "cannot answer a rejected line");
                            }
                        }
                        Err(err) => tracing::error!(error = %err, "cannot serialise an error"),
                    }
                }
                Err(err) => return Some((Err(err), (reader, output))),
            }
        }
    });
    Lines::new(Box::pin(outgoing), Box::pin(incoming))
}
