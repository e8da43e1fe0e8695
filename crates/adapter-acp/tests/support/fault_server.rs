//! An OpenAI-compatible HTTP server on 127.0.0.1 (port 0) whose reply to each request is
//! chosen by the test from the request body (the last `case-<name>` word of the
//! conversation) and the attempt number of that case: error statuses (with headers such
//! as `retry-after`), a reset or a stall after content, a truncated SSE frame, an empty
//! body, headers echoed back. Modelled on adapter-stream-json's fault server.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

/// One reply.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A status with headers and a JSON error body.
    Status {
        status: u16,
        headers: Vec<(String, String)>,
    },
    /// A 200 SSE body (chunked), then how it ends.
    Sse { body: String, end: End },
    /// A 400 whose body echoes the request head (the `authorization` header included).
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

/// Picks the reply: `(case, attempt of that case from 0, whole request body)`.
pub type Pick = dyn Fn(&str, usize, &str) -> Reply + Send + Sync;

pub struct FaultServer {
    pub url: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl FaultServer {
    pub fn start(pick: Arc<Pick>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let attempts: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let recorded = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let (pick, recorded, attempts) = (pick.clone(), recorded.clone(), attempts.clone());
                std::thread::spawn(move || {
                    let Some(request) = read_request(&mut stream) else {
                        return;
                    };
                    recorded.lock().expect("lock").push(request.clone());
                    let body = request.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
                    let case = case_of(body);
                    let attempt = {
                        let mut attempts = attempts.lock().expect("lock");
                        let n = attempts
                            .entry(format!("{case}/{}", tool_round(body)))
                            .or_insert(0);
                        *n += 1;
                        *n - 1
                    };
                    serve(stream, pick(&case, attempt, body), &request);
                });
            }
        });
        Self { url, requests }
    }

    /// A base URL where nothing listens (connection refused).
    pub fn refused_url() -> String {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        drop(listener);
        format!("http://{addr}/v1")
    }

    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().expect("lock").clone()
    }
}

/// The last `case-<name>` word of a request body.
pub fn case_of(body: &str) -> String {
    body.rfind("case-")
        .map(|at| {
            body[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the request carries a tool result after the last case word (the model is asked
/// to go on after a tool ran).
pub fn tool_round(body: &str) -> bool {
    let at = body.rfind("case-").unwrap_or(0);
    body[at..].contains("\"role\":\"tool\"")
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

fn serve(mut stream: TcpStream, reply: Reply, request: &str) {
    match reply {
        Reply::Status { status, headers } => {
            let body =
                json!({"error": {"message": format!("fault {status}"), "type": "server_error"}})
                    .to_string();
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

/// One Chat Completions chunk as an SSE frame.
pub fn chunk(delta: Value, finish: Option<&str>) -> String {
    let c = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                   "model": "gpt-test",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {c}\n\n")
}

/// A complete text answer.
pub fn text_answer(text: &str) -> Reply {
    Reply::Sse {
        body: [
            chunk(json!({"role": "assistant", "content": text}), None),
            chunk(json!({}), Some("stop")),
            "data: [DONE]\n\n".to_string(),
        ]
        .concat(),
        end: End::Complete,
    }
}

/// A complete turn calling `name` with the raw argument text `args`.
pub fn tool_call(name: &str, args: &str) -> Reply {
    Reply::Sse {
        body: [
            chunk(
                json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                        "function": {"name": name, "arguments": args}}]}),
                None,
            ),
            chunk(json!({}), Some("tool_calls")),
            "data: [DONE]\n\n".to_string(),
        ]
        .concat(),
        end: End::Complete,
    }
}

pub fn status(status: u16, headers: &[(&str, &str)]) -> Reply {
    Reply::Status {
        status,
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

/// The fault matrix: the reply for `case` on `attempt`; tool cases answer the follow-up
/// request (after the tool ran) with text. Every case not named answers `"fine"`.
pub fn matrix(case: &str, attempt: usize, body: &str) -> Reply {
    let after_tool = tool_round(body);
    let partial = chunk(json!({"role": "assistant", "content": "partial "}), None);
    match case {
        "case-429" if attempt == 0 => status(429, &[("retry-after", "0")]),
        "case-500" => status(500, &[]),
        "case-502" => status(502, &[]),
        "case-503" => status(503, &[]),
        "case-529" => status(529, &[]),
        "case-reset" => Reply::Sse {
            body: partial,
            end: End::Reset,
        },
        "case-truncated" => Reply::Sse {
            body: format!("{partial}data: {{\"id\":\"chatcmpl-1\",\"choices\":[{{\"ind"),
            end: End::Complete,
        },
        "case-stall" => Reply::Sse {
            body: partial,
            end: End::Stall,
        },
        "case-empty" => Reply::Sse {
            body: String::new(),
            end: End::Complete,
        },
        "case-badargs" if !after_tool => tool_call("list_dir", "{\"path\": \"."),
        "case-unknowntool" if !after_tool => tool_call("no_such_tool", "{}"),
        "case-echo" => Reply::EchoHeaders,
        _ => text_answer("fine"),
    }
}

/// How each fault case ends: `Some(true)` completes, `Some(false)` fails, `None` either
/// (the provider decides whether a cut stream is an error).
pub const CASES: [(&str, Option<bool>); 12] = [
    ("case-429", Some(true)),
    ("case-500", Some(false)),
    ("case-502", Some(false)),
    ("case-503", Some(false)),
    ("case-529", Some(false)),
    ("case-reset", Some(false)),
    ("case-truncated", None),
    ("case-stall", Some(false)),
    ("case-empty", None),
    ("case-badargs", Some(true)),
    ("case-unknowntool", Some(true)),
    ("case-echo", Some(false)),
];
