//! A tiny HTTP/1.1 server on 127.0.0.1 (port 0) that records requests and plays scripted
//! replies, plus helpers to run a provider and check its event stream.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::{
    Message, Provider, ProviderError, ProviderEvent, ProviderRequest, ProviderStop, ReasoningLevel,
    ToolSpec, Usage,
};
use agent_providers::{ClientConfig, HttpConfig};
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// Upper bound for any single wait in these tests.
pub const WAIT: Duration = Duration::from_secs(20);

/// How a reply ends after its chunks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum End {
    /// The terminating chunk is sent.
    Complete,
    /// The connection is closed in the middle of the chunked body.
    Cut,
    /// The connection stays open and silent.
    Stall,
}

/// One scripted HTTP reply.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub chunks: Vec<Vec<u8>>,
    pub end: End,
}

impl Reply {
    /// A 200 event stream, one chunk per event.
    pub fn sse(body: &str) -> Self {
        let chunks = body
            .split_inclusive("\n\n")
            .map(|c| c.as_bytes().to_vec())
            .collect();
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks,
            end: End::Complete,
        }
    }

    /// A 200 event stream cut into chunks of `size` bytes (frames split anywhere).
    pub fn sse_fragmented(body: &str, size: usize) -> Self {
        let mut reply = Self::sse(body);
        reply.chunks = body.as_bytes().chunks(size).map(<[u8]>::to_vec).collect();
        reply
    }

    /// A JSON reply with `status`.
    pub fn json(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            chunks: vec![body.as_bytes().to_vec()],
            end: End::Complete,
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Ends the reply with `end`.
    pub fn end(mut self, end: End) -> Self {
        self.end = end;
        self
    }
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    /// A header value (names compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The server; stops (closing every connection) when dropped.
pub struct MockServer {
    pub base: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockServer {
    /// Starts a server playing `replies` in order (the last one repeats).
    pub async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(replies);
        let counter = Arc::new(AtomicUsize::new(0));
        let recorded = requests.clone();
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let replies = replies.clone();
                let counter = counter.clone();
                let recorded = recorded.clone();
                connections.spawn(async move {
                    let _ = serve(socket, replies, counter, recorded).await;
                });
            }
        });
        Self {
            base: format!("http://{addr}"),
            requests,
            task,
        }
    }

    /// The base URL with `/v1`.
    pub fn v1(&self) -> String {
        format!("{}/v1", self.base)
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("lock").clone()
    }
}

async fn serve(
    mut socket: TcpStream,
    replies: Arc<Vec<Reply>>,
    counter: Arc<AtomicUsize>,
    recorded: Arc<Mutex<Vec<Recorded>>>,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    recorded.lock().expect("lock").push(Recorded {
        method,
        path,
        headers,
        body,
    });
    let index = counter.fetch_add(1, Ordering::SeqCst);
    let Some(reply) = replies.get(index).or(replies.last()).cloned() else {
        return Ok(());
    };
    let mut head = format!("HTTP/1.1 {} Scripted\r\n", reply.status);
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("transfer-encoding: chunked\r\nconnection: close\r\n\r\n");
    socket.write_all(head.as_bytes()).await?;
    socket.flush().await?;
    for chunk in &reply.chunks {
        if chunk.is_empty() {
            continue;
        }
        socket
            .write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
            .await?;
        socket.write_all(chunk).await?;
        socket.write_all(b"\r\n").await?;
        socket.flush().await?;
    }
    match reply.end {
        End::Complete => {
            socket.write_all(b"0\r\n\r\n").await?;
            socket.flush().await?;
        }
        End::Cut => {}
        End::Stall => std::future::pending::<()>().await,
    }
    socket.shutdown().await
}

/// HTTP settings for tests: tiny backoff, short idle timeout.
pub fn fast_http() -> HttpConfig {
    HttpConfig::default()
        .backoff(Duration::from_millis(1), Duration::from_millis(5))
        .idle_timeout(Duration::from_secs(5))
        .connect_timeout(Duration::from_secs(5))
}

/// A client config for `base` with fast retries.
pub fn client(base: &str, model: &str) -> ClientConfig {
    ClientConfig::new(base, model).http(fast_http())
}

/// A request with one user message.
pub fn request(model: &str) -> ProviderRequest {
    ProviderRequest {
        model: model.into(),
        system: Some("You are terse.".into()),
        messages: vec![Message::user_text("Hi")],
        tools: vec![],
        reasoning: ReasoningLevel::default(),
        max_output_tokens: None,
        output_schema: None,
    }
}

/// The weather tool spec used throughout.
pub fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Current weather of a city.".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    }
}

pub type Item = Result<ProviderEvent, ProviderError>;

/// Runs one provider call to its end (bounded by [`WAIT`]).
pub async fn run(provider: &dyn Provider, request: ProviderRequest) -> Vec<Item> {
    tokio::time::timeout(WAIT, provider.stream(request).collect::<Vec<_>>())
        .await
        .expect("the provider stream ended in time")
}

/// The events of a stream that must have succeeded; checks the stream is well-formed:
/// attempts first, one response start, calls started before their deltas and ended once,
/// at most one usage, and exactly one stop, last.
pub fn ok_events(items: Vec<Item>) -> Vec<ProviderEvent> {
    let events: Vec<ProviderEvent> = items
        .into_iter()
        .map(|i| i.unwrap_or_else(|e| panic!("unexpected error: {e:?}")))
        .collect();
    let mut started = 0;
    let mut open: Vec<String> = Vec::new();
    let mut ended: Vec<String> = Vec::new();
    let mut usage = 0;
    for (i, event) in events.iter().enumerate() {
        match event {
            ProviderEvent::RequestStarted { .. } | ProviderEvent::RetryScheduled { .. } => {
                assert_eq!(started, 0, "attempt events come before the response")
            }
            ProviderEvent::ResponseStarted => started += 1,
            ProviderEvent::ToolCallStart { id, .. } => {
                assert!(
                    !open.contains(id) && !ended.contains(id),
                    "call {id} started twice"
                );
                open.push(id.clone());
            }
            ProviderEvent::ToolCallDelta { id, .. } => {
                assert!(open.contains(id), "delta for a call that is not open: {id}")
            }
            ProviderEvent::ToolCallEnd { id } => {
                assert!(open.contains(id), "end of a call that is not open: {id}");
                open.retain(|o| o != id);
                ended.push(id.clone());
            }
            ProviderEvent::Usage(_) => usage += 1,
            ProviderEvent::Stop(_) => assert_eq!(i, events.len() - 1, "stop is last"),
            _ => {}
        }
    }
    assert_eq!(started, 1, "one response start: {events:?}");
    assert!(open.is_empty(), "calls never ended: {open:?}");
    assert!(usage <= 1, "at most one usage event");
    assert!(
        matches!(events.last(), Some(ProviderEvent::Stop(_))),
        "ends with a stop: {events:?}"
    );
    events
}

/// The error a stream ended with, checking that nothing follows it.
pub fn err_of(items: &[Item]) -> ProviderError {
    let errors: Vec<&ProviderError> = items.iter().filter_map(|i| i.as_ref().err()).collect();
    assert_eq!(errors.len(), 1, "exactly one error: {items:?}");
    assert!(
        items.last().is_some_and(Result::is_err),
        "the error is last"
    );
    errors[0].clone()
}

/// Concatenated text deltas.
pub fn text(events: &[ProviderEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// Concatenated reasoning deltas.
pub fn reasoning(events: &[ProviderEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::ReasoningDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// Tool calls as `(id, name, argument text)`, in start order.
pub fn calls(events: &[ProviderEvent]) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = Vec::new();
    for event in events {
        match event {
            ProviderEvent::ToolCallStart { id, name } => {
                out.push((id.clone(), name.clone(), String::new()))
            }
            ProviderEvent::ToolCallDelta { id, delta } => {
                if let Some(call) = out.iter_mut().find(|c| &c.0 == id) {
                    call.2.push_str(delta);
                }
            }
            _ => {}
        }
    }
    out
}

/// The usage event, if any.
pub fn usage(events: &[ProviderEvent]) -> Option<Usage> {
    events.iter().find_map(|e| match e {
        ProviderEvent::Usage(u) => Some(*u),
        _ => None,
    })
}

/// The stop reason.
pub fn stop(events: &[ProviderEvent]) -> ProviderStop {
    match events.last() {
        Some(ProviderEvent::Stop(stop)) => *stop,
        other => panic!("no stop: {other:?}"),
    }
}

/// Builds an SSE body from `(event name, JSON data)` frames; `None` names send data only.
pub fn frames(frames: &[(Option<&str>, Value)]) -> String {
    let mut out = String::new();
    for (name, data) in frames {
        if let Some(name) = name {
            out.push_str(&format!("event: {name}\n"));
        }
        out.push_str(&format!("data: {data}\n\n"));
    }
    out
}

/// A usage value for assertions.
pub fn usage_of(
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    reasoning: Option<u64>,
) -> Usage {
    Usage {
        input,
        output,
        reasoning,
        cache_read,
        cache_write,
        cost_usd: None,
    }
}
