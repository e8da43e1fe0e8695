//! A blocking OpenAI-compatible HTTP server on 127.0.0.1 (port 0) that plays one scripted
//! reply per request, including faults: error statuses, a reset or a cut after content, a
//! truncated SSE frame, a stall, an empty body. It records every request (head and body) so
//! tests can check what reached it.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

/// One reply.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A status with headers and a body (`content-length` framed).
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// A 200 SSE body (chunked), then how it ends.
    Sse { body: String, end: End },
    /// Echoes the request head (the `authorization` header included) back in a 400 body,
    /// as some proxies do.
    EchoHeaders,
}

/// How an SSE reply ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum End {
    /// The terminating chunk.
    Complete,
    /// TCP reset (SO_LINGER 0) after the body.
    Reset,
    /// The connection stays open and silent until the client hangs up.
    Stall,
}

/// A running server; its threads end with the test process.
pub struct FaultServer {
    pub url: String,
    hits: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<String>>>,
}

impl FaultServer {
    /// Plays `replies` in order; the last one repeats.
    pub fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
        let hits = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (counter, recorded) = (hits.clone(), requests.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let index = counter.fetch_add(1, Ordering::SeqCst);
                let reply = replies
                    .get(index)
                    .or(replies.last())
                    .cloned()
                    .expect("a reply");
                let recorded = recorded.clone();
                std::thread::spawn(move || serve(stream, reply, recorded));
            }
        });
        Self {
            url,
            hits,
            requests,
        }
    }

    /// A base URL where nothing listens (connection refused).
    pub fn refused_url() -> String {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        drop(listener);
        format!("http://{addr}/v1")
    }

    /// Requests received so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    /// The raw requests (head and body) received so far.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().expect("lock").clone()
    }
}

fn read_request(stream: &mut TcpStream) -> Option<String> {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok()?;
    let mut data = Vec::new();
    let mut buf = [0u8; 16384];
    loop {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&data);
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .filter_map(|l| l.split_once(':'))
                .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
                .and_then(|(_, v)| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if data.len() >= end + 4 + length {
                return Some(String::from_utf8_lossy(&data).into_owned());
            }
        }
    }
}

fn serve(mut stream: TcpStream, reply: Reply, recorded: Arc<Mutex<Vec<String>>>) {
    let Some(request) = read_request(&mut stream) else {
        return;
    };
    recorded.lock().expect("lock").push(request.clone());
    match reply {
        Reply::Status {
            status,
            headers,
            body,
        } => {
            let mut head = format!("HTTP/1.1 {status} Fault\r\ncontent-type: application/json\r\n");
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str(&format!(
                "content-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            ));
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
        Reply::EchoHeaders => {
            let head = request.split("\r\n\r\n").next().unwrap_or_default();
            let body = json!({"error": {"message": format!("bad request; you sent: {head}"),
                                        "type": "invalid_request_error"}})
            .to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
        Reply::Sse { body, end } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
            let _ = stream.write_all(head.as_bytes());
            if !body.is_empty() {
                let _ = write!(stream, "{:x}\r\n{body}\r\n", body.len());
            }
            let _ = stream.flush();
            match end {
                End::Complete => {
                    let _ = stream.write_all(b"0\r\n\r\n");
                }
                End::Reset => reset(&stream),
                End::Stall => {
                    // Blocks until the client hangs up (or the read timeout passes).
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
                    let mut byte = [0u8; 1];
                    let _ = stream.read(&mut byte);
                }
            }
        }
    }
}

/// Closes `stream` with a TCP RST instead of a FIN.
fn reset(stream: &TcpStream) {
    #[cfg(unix)]
    {
        use std::os::unix::io::AsRawFd;
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: setting a socket option on a socket we own, with a correctly sized value.
        unsafe {
            libc::setsockopt(
                stream.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                &linger as *const libc::linger as *const libc::c_void,
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            );
        }
    }
}

/// One Chat Completions chunk as an SSE frame.
pub fn chunk(delta: Value, finish: Option<&str>) -> String {
    let c = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                   "model": "gpt-test",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {c}\n\n")
}

/// A complete text answer.
pub fn text_answer(text: &str) -> String {
    [
        chunk(json!({"role": "assistant", "content": text}), None),
        chunk(json!({}), Some("stop")),
        "data: [DONE]\n\n".to_string(),
    ]
    .concat()
}

/// A complete turn calling `name` with the raw argument text `args`.
pub fn tool_call(name: &str, args: &str) -> String {
    [
        chunk(
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                    "function": {"name": name, "arguments": args}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        "data: [DONE]\n\n".to_string(),
    ]
    .concat()
}

/// An SSE reply.
pub fn sse(body: String, end: End) -> Reply {
    Reply::Sse { body, end }
}

/// A JSON error reply.
pub fn status(status: u16, headers: &[(&str, &str)]) -> Reply {
    Reply::Status {
        status,
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        body: json!({"error": {"message": format!("fault {status}"), "type": "server_error"}})
            .to_string(),
    }
}

/// A server streaming `total` bytes of text in `chunk`-byte deltas to its first request,
/// counting how much it managed to write.
pub fn flood_server(total: usize, chunk_bytes: usize) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = sent.clone();
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        if read_request(&mut stream).is_none() {
            return;
        }
        let _ = stream.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
        );
        let frame = chunk(json!({"content": "y".repeat(chunk_bytes)}), None);
        let mut text = 0;
        while text < total {
            if stream.write_all(frame.as_bytes()).is_err() {
                return;
            }
            text += chunk_bytes;
            counter.store(text, Ordering::SeqCst);
        }
        let _ = stream.write_all(text_answer("").as_bytes());
    });
    (url, sent)
}
