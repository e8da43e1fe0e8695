//! The one raw-TCP fault server: what an HTTP library will not do on purpose. Resets and
//! cuts after content, truncated frames, stalls past an idle timeout, empty bodies,
//! error statuses with `retry-after`, silence before the response head, a proxy echoing the
//! request head, and a flood that shows whether the client applies backpressure.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::background::Background;
use crate::request::Request;
use crate::script::{Journal, Script};
use crate::sse::Sse;

/// How a 200 event stream ends after its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The terminating chunk: a complete HTTP response.
    Complete,
    /// The connection is closed (FIN) without the terminating chunk.
    Cut,
    /// The connection is reset (RST, `SO_LINGER` 0).
    Reset,
    /// The connection stays open and silent until the client hangs up.
    Stall,
}

/// One reply of the fault server.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// A status with headers and a body (`content-length` framed).
    Status {
        /// HTTP status.
        status: u16,
        /// Extra headers (`content-type: application/json` is always sent).
        headers: Vec<(String, String)>,
        /// The body.
        body: String,
    },
    /// A 200 event stream (chunked, one chunk per frame), then `end`.
    Sse {
        /// The stream body; empty for an empty stream.
        body: String,
        /// How the response ends.
        end: End,
    },
    /// A 400 whose error message quotes the request head (the credentials included), as
    /// some proxies do.
    EchoHeaders,
    /// Reads the request and never answers, until the client hangs up.
    Silent,
    /// A 200 event stream: `head`, then `frame` repeated `count` times, then `tail`; counts
    /// the repeated frames the client took ([`FaultServer::frames_written`]).
    Flood {
        /// Sent once before the flood (e.g. a stream's opening events); may be empty.
        head: String,
        /// One frame.
        frame: String,
        /// How many times.
        count: usize,
        /// Sent after the flood (e.g. a finish chunk and `[DONE]`).
        tail: String,
    },
}

impl Fault {
    /// `status` with a JSON error body `{"error":{"message":"fault <status>","type":"server_error"}}`.
    pub fn status(status: u16) -> Self {
        Self::json(
            status,
            serde_json::json!({"error": {"message": format!("fault {status}"), "type": "server_error"}}),
        )
    }

    /// `status` with the JSON text `body`.
    pub fn json(status: u16, body: impl ToString) -> Self {
        Self::Status {
            status,
            headers: Vec::new(),
            body: body.to_string(),
        }
    }

    /// Adds a header to a [`Fault::Status`] reply (other replies are left as they are).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        if let Self::Status { headers, .. } = &mut self {
            headers.push((name.to_string(), value.to_string()));
        }
        self
    }

    /// A complete 200 event stream.
    pub fn sse(body: impl Into<String>) -> Self {
        Self::Sse {
            body: body.into(),
            end: End::Complete,
        }
    }

    /// A 200 event stream with `body`, then `end`.
    pub fn sse_then(body: impl Into<String>, end: End) -> Self {
        Self::Sse {
            body: body.into(),
            end,
        }
    }

    /// A 200 event stream with no event at all.
    pub fn empty() -> Self {
        Self::sse(String::new())
    }

    /// A flood made of `stream`: its frames before `frame`, then frame `frame` sent `count`
    /// times, then the frames after it (the finish and terminator), so the client sees a
    /// well-formed stream of any length.
    pub fn flood(stream: &Sse, frame: usize, count: usize) -> Self {
        let part = |range: &[String]| range.concat();
        let frames = &stream.frames;
        let at = frame.min(frames.len());
        Self::Flood {
            head: part(&frames[..at]),
            frame: frames.get(at).cloned().unwrap_or_default(),
            count,
            tail: part(frames.get(at + 1..).unwrap_or_default()),
        }
    }

    /// A Chat Completions answer flooding the client: `count` text deltas of `bytes` bytes
    /// each (`y` repeated), then the finish chunk and `[DONE]`.
    pub fn chat_flood(bytes: usize, count: usize) -> Self {
        let stream = crate::sse::chat::Stream::new()
            .delta(&"y".repeat(bytes))
            .finish("stop")
            .done();
        Self::flood(&stream, 1, count)
    }

    /// A complete HTTP response whose event stream stops in the middle of frame `frame` of
    /// `stream` (the frames before it are whole).
    pub fn truncated(stream: &Sse, frame: usize) -> Self {
        let mut body: String = stream
            .frames
            .iter()
            .take(frame)
            .map(String::as_str)
            .collect();
        if let Some(cut) = stream.frames.get(frame) {
            let mut half = cut.len() / 2;
            while !cut.is_char_boundary(half) {
                half -= 1;
            }
            body.push_str(&cut[..half]);
        }
        Self::sse(body)
    }
}

impl From<Sse> for String {
    fn from(stream: Sse) -> Self {
        stream.body()
    }
}

/// The fault server on 127.0.0.1 (port 0); stops (closing every connection) when dropped.
pub struct FaultServer {
    server: Background,
    journal: Arc<Journal>,
    frames: Arc<FrameCount>,
}

impl FaultServer {
    /// Starts a server answering from `script` (a sequence of [`Fault`]s converts into one).
    ///
    /// # Panics
    ///
    /// When 127.0.0.1:0 cannot be bound.
    pub fn start(script: impl Into<Script<Fault>>) -> Self {
        let script = Arc::new(Mutex::new(script.into()));
        let journal = Arc::new(Journal::default());
        let frames = Arc::new(FrameCount::default());
        let (shared, counter) = (journal.clone(), frames.clone());
        let server = Background::spawn("fault-server", move |stream| {
            serve(stream, shared.clone(), script.clone(), counter.clone())
        });
        Self {
            server,
            journal,
            frames,
        }
    }

    served_api!();

    /// Frames of [`Fault::Flood`] replies written so far.
    pub fn frames_written(&self) -> usize {
        *self.frames.lock()
    }

    /// Waits (blocking the thread) until a flood stops moving, and returns the frames
    /// written by then: when no frame went out for `quiet` (the client stopped reading and
    /// the buffers between are full), when `limit` frames went out, or when `timeout`
    /// passed, whichever comes first.
    pub fn wait_for_flood_stall(&self, quiet: Duration, limit: usize, timeout: Duration) -> usize {
        let deadline = Instant::now() + timeout;
        let mut count = self.frames.lock();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if *count >= limit || left.is_zero() {
                return *count;
            }
            let before = *count;
            let (guard, waited) = self
                .frames
                .moved
                .wait_timeout_while(count, quiet.min(left), |now| *now == before)
                .unwrap_or_else(PoisonError::into_inner);
            count = guard;
            if waited.timed_out() {
                return *count;
            }
        }
    }
}

/// Frames of flood replies written, with a wake-up for each.
#[derive(Default)]
struct FrameCount {
    count: Mutex<usize>,
    moved: Condvar,
}

impl FrameCount {
    fn lock(&self) -> std::sync::MutexGuard<'_, usize> {
        self.count.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn add_one(&self) {
        *self.lock() += 1;
        self.moved.notify_all();
    }
}

/// Longest request head accepted.
const MAX_HEAD: usize = 1 << 20;
/// Longest wait for a request to arrive in full.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

async fn serve(
    mut stream: TcpStream,
    journal: Arc<Journal>,
    script: Arc<Mutex<Script<Fault>>>,
    frames: Arc<FrameCount>,
) {
    let Ok(Some(request)) = tokio::time::timeout(READ_TIMEOUT, read_request(&mut stream)).await
    else {
        return;
    };
    let head = request.head();
    let Some(fault) = journal.record(request, &script) else {
        return;
    };
    let _ = reply(&mut stream, fault, &head, &frames).await;
}

async fn reply(
    stream: &mut TcpStream,
    fault: Fault,
    head: &str,
    frames: &FrameCount,
) -> std::io::Result<()> {
    match fault {
        Fault::Status {
            status,
            headers,
            body,
        } => {
            let mut out = format!("HTTP/1.1 {status} Fault\r\ncontent-type: application/json\r\n");
            for (name, value) in headers {
                out.push_str(&format!("{name}: {value}\r\n"));
            }
            out.push_str(&format!(
                "content-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            ));
            stream.write_all(out.as_bytes()).await?;
            stream.shutdown().await
        }
        Fault::EchoHeaders => {
            let body = serde_json::json!({"error": {
                "message": format!("bad request; you sent: {head}"),
                "type": "invalid_request_error"}})
            .to_string();
            let out = format!(
                "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(out.as_bytes()).await?;
            stream.shutdown().await
        }
        Fault::Silent => wait_for_hangup(stream).await,
        Fault::Sse { body, end } => {
            stream.write_all(SSE_HEAD).await?;
            for frame in body.split_inclusive("\n\n") {
                write_chunk(stream, frame.as_bytes()).await?;
            }
            stream.flush().await?;
            match end {
                End::Complete => {
                    stream.write_all(b"0\r\n\r\n").await?;
                    stream.shutdown().await
                }
                End::Cut => stream.shutdown().await,
                End::Reset => {
                    socket2::SockRef::from(&*stream).set_linger(Some(Duration::ZERO))?;
                    Ok(())
                }
                End::Stall => wait_for_hangup(stream).await,
            }
        }
        Fault::Flood {
            head,
            frame,
            count,
            tail,
        } => {
            stream.write_all(SSE_HEAD).await?;
            for part in head.split_inclusive("\n\n") {
                write_chunk(stream, part.as_bytes()).await?;
            }
            for _ in 0..count {
                write_chunk(stream, frame.as_bytes()).await?;
                frames.add_one();
            }
            write_chunk(stream, tail.as_bytes()).await?;
            stream.write_all(b"0\r\n\r\n").await?;
            stream.shutdown().await
        }
    }
}

const SSE_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";

async fn write_chunk(stream: &mut TcpStream, data: &[u8]) -> std::io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    let mut chunk = format!("{:x}\r\n", data.len()).into_bytes();
    chunk.extend_from_slice(data);
    chunk.extend_from_slice(b"\r\n");
    stream.write_all(&chunk).await
}

/// Holds the connection until the client closes it (or the server stops).
async fn wait_for_hangup(stream: &mut TcpStream) -> std::io::Result<()> {
    let mut buf = [0u8; 1024];
    while stream.read(&mut buf).await? > 0 {}
    Ok(())
}

/// Reads one request: the head up to its blank line, then `content-length` bytes of body.
async fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut data = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(pos) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
        if data.len() > MAX_HEAD {
            return None;
        }
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let method = request_line.next().unwrap_or_default().to_string();
    let path = request_line.next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = data.split_off(head_end);
    while body.len() < length {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&buf[..n]);
    }
    Some(Request {
        method,
        path,
        headers,
        body: Bytes::from(body),
    })
}
