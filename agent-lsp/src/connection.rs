//! JSON-RPC 2.0 over a server's stdio: requests with a bound, notifications, and the
//! answers to the requests a server sends the client.
//!
//! Two tasks per server: a writer that owns the server's stdin (fed by a channel, so the
//! reader never waits on a write) and a reader that owns its stdout and routes each message:
//! a response to its waiting request, a notification to the [`Handler`], a server request to
//! the handler and its answer back to the writer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::sync::{mpsc, oneshot, watch};

use crate::error::LspError;
use crate::framing::{read_message, write_message};

/// What the client does with what a server sends on its own.
pub(crate) trait Handler: Send + Sync + 'static {
    /// A notification (`textDocument/publishDiagnostics`, log messages, …).
    fn notification(&self, method: &str, params: Value);
    /// A request from the server; the answer or a JSON-RPC error (code, message).
    fn request(&self, method: &str, params: Value) -> Result<Value, (i64, String)>;
    /// The server's output ended.
    fn closed(&self) {}
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct WireError {
    code: i64,
    message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<Value>,
}

/// Any message from the server.
#[derive(Debug, Deserialize)]
struct Incoming {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Value,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<WireError>,
}

#[derive(Serialize)]
struct OutRequest<'a> {
    jsonrpc: &'static str,
    id: i64,
    method: &'a str,
    params: &'a Value,
}

#[derive(Serialize)]
struct OutNotification<'a> {
    jsonrpc: &'static str,
    method: &'a str,
    params: &'a Value,
}

#[derive(Serialize)]
struct OutResponse {
    jsonrpc: &'static str,
    id: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<WireError>,
}

/// What the writer task is asked to do.
enum Out {
    Message(Vec<u8>),
    /// Close the server's stdin.
    Close,
}

type Reply = Result<Value, WireError>;
type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Reply>>>>;

/// One server's JSON-RPC connection.
pub(crate) struct Connection {
    server: String,
    out: mpsc::UnboundedSender<Out>,
    pending: Pending,
    next_id: AtomicI64,
    closed: watch::Receiver<bool>,
}

impl Connection {
    /// Starts the reader and writer tasks over a server's stdout and stdin.
    pub(crate) fn start<R, W>(server: &str, stdout: R, stdin: W, handler: Arc<dyn Handler>) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, mut queue) = mpsc::unbounded_channel::<Out>();
        let pending: Pending = Arc::default();
        let (closed_tx, closed) = watch::channel(false);

        tokio::spawn(async move {
            let mut stdin = stdin;
            while let Some(Out::Message(body)) = queue.recv().await {
                if write_message(&mut stdin, &body).await.is_err() {
                    break;
                }
            }
            // Dropping stdin closes the pipe: the server sees the end of its input.
        });

        let reader_out = out.clone();
        let reader_pending = pending.clone();
        let name = server.to_string();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout);
            loop {
                match read_message(&mut reader).await {
                    Ok(Some(body)) => route(&name, &body, &reader_pending, &reader_out, &*handler),
                    Ok(None) => break,
                    Err(e) => {
                        tracing::debug!(server = %name, "language server stream broke: {e}");
                        break;
                    }
                }
            }
            // Waiting requests fail (their senders are dropped) and new ones see `closed`.
            let _ = closed_tx.send(true);
            lock(&reader_pending).clear();
            handler.closed();
        });

        Self {
            server: server.to_string(),
            out,
            pending,
            next_id: AtomicI64::new(1),
            closed,
        }
    }

    /// Whether the server's output ended (it exited or broke the protocol).
    pub(crate) fn is_closed(&self) -> bool {
        *self.closed.borrow()
    }

    /// Waits until the server's output ends, at most `bound`; whether it did.
    pub(crate) async fn closed_within(&self, bound: Duration) -> bool {
        let mut closed = self.closed.clone();
        let ended = tokio::time::timeout(bound, closed.wait_for(|c| *c))
            .await
            .is_ok();
        ended
    }

    fn exited(&self) -> LspError {
        LspError::Exited {
            server: self.server.clone(),
            stderr: String::new(),
        }
    }

    fn send(&self, body: Vec<u8>) -> Result<(), LspError> {
        self.out.send(Out::Message(body)).map_err(|_| self.exited())
    }

    /// Sends a notification.
    pub(crate) fn notify(&self, method: &str, params: &Value) -> Result<(), LspError> {
        if self.is_closed() {
            return Err(self.exited());
        }
        let body = serde_json::to_vec(&OutNotification {
            jsonrpc: "2.0",
            method,
            params,
        })
        .map_err(|e| LspError::Protocol(format!("encoding {method}: {e}")))?;
        self.send(body)
    }

    /// Asks the writer to close the server's stdin once what is queued is written.
    pub(crate) fn close_input(&self) {
        let _ = self.out.send(Out::Close);
    }

    /// Sends a request and waits for its answer, at most `timeout`. On timeout (or when the
    /// returned future is dropped) the request is cancelled with `$/cancelRequest`.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: &Value,
        timeout: Duration,
    ) -> Result<Value, LspError> {
        if self.is_closed() {
            return Err(self.exited());
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, tx);
        let guard = Cancel { conn: self, id };
        let body = serde_json::to_vec(&OutRequest {
            jsonrpc: "2.0",
            id,
            method,
            params,
        })
        .map_err(|e| LspError::Protocol(format!("encoding {method}: {e}")))?;
        self.send(body)?;
        let answer = tokio::time::timeout(timeout, rx).await;
        match answer {
            Ok(Ok(Ok(value))) => {
                guard.done();
                Ok(value)
            }
            Ok(Ok(Err(error))) => {
                guard.done();
                Err(LspError::Rpc {
                    server: self.server.clone(),
                    method: method.to_string(),
                    code: error.code,
                    message: error.message,
                })
            }
            Ok(Err(_)) => {
                guard.done();
                Err(self.exited())
            }
            Err(_) => Err(LspError::Timeout {
                server: self.server.clone(),
                method: method.to_string(),
                after: timeout,
            }),
        }
    }

    /// [`Self::request`] with `R`'s typed parameters and result.
    pub(crate) async fn call<R: lsp_types::request::Request>(
        &self,
        params: R::Params,
        timeout: Duration,
    ) -> Result<R::Result, LspError> {
        let params = serde_json::to_value(params)
            .map_err(|e| LspError::Protocol(format!("encoding {}: {e}", R::METHOD)))?;
        let value = self.request(R::METHOD, &params, timeout).await?;
        serde_json::from_value(value).map_err(|e| {
            LspError::Protocol(format!(
                "the answer of language server {} to {} does not fit the protocol: {e}",
                self.server,
                R::METHOD
            ))
        })
    }
}

/// Cancels a request that ends without its answer (timed out, or its caller gave up).
struct Cancel<'a> {
    conn: &'a Connection,
    id: i64,
}

impl Cancel<'_> {
    /// The answer came: nothing to cancel.
    fn done(self) {
        std::mem::forget(self);
    }
}

impl Drop for Cancel<'_> {
    fn drop(&mut self) {
        if lock(&self.conn.pending).remove(&self.id).is_some() {
            let _ = self
                .conn
                .notify("$/cancelRequest", &serde_json::json!({ "id": self.id }));
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Routes one message from the server.
fn route(
    server: &str,
    body: &[u8],
    pending: &Pending,
    out: &mpsc::UnboundedSender<Out>,
    handler: &dyn Handler,
) {
    let message: Incoming = match serde_json::from_slice(body) {
        Ok(message) => message,
        Err(e) => {
            tracing::debug!(server, "ignored a message that is not JSON-RPC: {e}");
            return;
        }
    };
    match (message.id, message.method) {
        // A response to one of our requests.
        (Some(id), None) => {
            let Some(id) = id.as_i64() else { return };
            if let Some(tx) = lock(pending).remove(&id) {
                let reply = match message.error {
                    Some(error) => Err(error),
                    None => Ok(message.result.unwrap_or(Value::Null)),
                };
                let _ = tx.send(reply);
            }
        }
        // A request from the server: answer it.
        (Some(id), Some(method)) => {
            let (result, error) = match handler.request(&method, message.params) {
                Ok(value) => (Some(value), None),
                Err((code, message)) => (
                    None,
                    Some(WireError {
                        code,
                        message,
                        data: None,
                    }),
                ),
            };
            let response = OutResponse {
                jsonrpc: "2.0",
                id,
                result,
                error,
            };
            if let Ok(body) = serde_json::to_vec(&response) {
                let _ = out.send(Out::Message(body));
            }
        }
        (None, Some(method)) => handler.notification(&method, message.params),
        (None, None) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::io::{duplex, AsyncBufReadExt};

    struct Echo;

    impl Handler for Echo {
        fn notification(&self, _: &str, _: Value) {}
        fn request(&self, method: &str, params: Value) -> Result<Value, (i64, String)> {
            match method {
                "workspace/configuration" => Ok(json!([params])),
                _ => Err((-32601, format!("{method} is not supported"))),
            }
        }
    }

    async fn next(reader: &mut BufReader<tokio::io::DuplexStream>) -> Value {
        let body = read_message(reader)
            .await
            .expect("reads")
            .expect("a message");
        serde_json::from_slice(&body).expect("json")
    }

    #[tokio::test]
    async fn requests_get_answers_errors_timeouts_and_server_requests_are_answered() {
        let (client_out, server_in) = duplex(1 << 16);
        let (mut server_out, client_in) = duplex(1 << 16);
        let conn = Connection::start("fake", client_in, client_out, Arc::new(Echo));
        let mut server = BufReader::new(server_in);

        let params = json!({"x": 1});
        let call = conn.request("a/b", &params, Duration::from_secs(5));
        let serve = async {
            let request = next(&mut server).await;
            assert_eq!(request["method"], "a/b");
            assert_eq!(request["params"], json!({"x": 1}));
            // A server request arrives before the answer.
            let ask = json!({"jsonrpc": "2.0", "id": "s1", "method": "workspace/configuration", "params": {"items": []}});
            write_message(&mut server_out, ask.to_string().as_bytes())
                .await
                .expect("w");
            let answer = next(&mut server).await;
            assert_eq!(answer["id"], "s1");
            assert_eq!(answer["result"], json!([{"items": []}]));
            let ask = json!({"jsonrpc": "2.0", "id": 7, "method": "nope"});
            write_message(&mut server_out, ask.to_string().as_bytes())
                .await
                .expect("w");
            let answer = next(&mut server).await;
            assert_eq!(answer["error"]["code"], -32601);
            let reply = json!({"jsonrpc": "2.0", "id": request["id"], "result": null});
            write_message(&mut server_out, reply.to_string().as_bytes())
                .await
                .expect("w");
        };
        let (answer, ()) = tokio::join!(call, serve);
        assert_eq!(answer.expect("answered"), Value::Null);

        let empty = json!({});
        let call = conn.request("c/d", &empty, Duration::from_secs(5));
        let serve = async {
            let request = next(&mut server).await;
            let reply = json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32800, "message": "cancelled"}});
            write_message(&mut server_out, reply.to_string().as_bytes())
                .await
                .expect("w");
        };
        let (answer, ()) = tokio::join!(call, serve);
        let err = answer.expect_err("an error");
        assert!(
            err.to_string().contains("failed c/d (-32800): cancelled"),
            "{err}"
        );

        let err = conn
            .request("slow", &json!({}), Duration::from_millis(50))
            .await
            .expect_err("times out");
        assert!(matches!(err, LspError::Timeout { .. }), "{err}");
        let request = next(&mut server).await;
        assert_eq!(request["method"], "slow");
        let cancel = next(&mut server).await;
        assert_eq!(cancel["method"], "$/cancelRequest");
        assert_eq!(cancel["params"]["id"], request["id"]);

        // The server goes away: a waiting request fails at once, and so do new ones.
        let call = conn.request("e/f", &empty, Duration::from_secs(30));
        let close = async {
            let _ = next(&mut server).await;
            drop(server_out);
        };
        let (answer, ()) = tokio::join!(call, close);
        assert!(matches!(answer, Err(LspError::Exited { .. })), "{answer:?}");
        assert!(conn.closed_within(Duration::from_secs(5)).await);
        assert!(conn.notify("x", &json!({})).is_err());
        // The writer closes the server's input when asked.
        conn.close_input();
        let mut rest = String::new();
        let _ = server.read_line(&mut rest).await;
    }
}
