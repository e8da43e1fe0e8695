//! The mock model server: real HTTP/1.1 (hyper) on 127.0.0.1, streaming each reply chunk by
//! chunk, recording every request.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{combinators::BoxBody, BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderName, HeaderValue};

use crate::background::Background;
use crate::request::Request;
use crate::script::{Journal, Script};
use crate::sse::{Sse, Vendor};

/// One HTTP reply: status, headers and the body as the chunks it is sent in.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Response headers.
    pub headers: Vec<(String, String)>,
    /// The body, one transfer chunk each (a stream's frames, or one JSON document).
    pub chunks: Vec<Bytes>,
}

impl Reply {
    /// A 200 event stream, one chunk per frame, with the headers its vendor sends
    /// (`content-type: text/event-stream; charset=utf-8`, `x-request-id` or `request-id`).
    pub fn sse(stream: Sse) -> Self {
        let mut headers = vec![(
            "content-type".to_string(),
            "text/event-stream; charset=utf-8".to_string(),
        )];
        match stream.vendor {
            Vendor::OpenAi => {
                headers.push(("x-request-id".into(), "req_test".into()));
                headers.push(("openai-processing-ms".into(), "1".into()));
            }
            Vendor::Anthropic => {
                headers.push(("request-id".into(), "req_test".into()));
                headers.push(("cache-control".into(), "no-cache".into()));
            }
            Vendor::Other => headers[0].1 = "text/event-stream".into(),
        }
        Self {
            status: 200,
            headers,
            chunks: stream.frames.into_iter().map(Bytes::from).collect(),
        }
    }

    /// A Chat Completions stream answering `answer` ([`crate::sse::chat::text`]).
    pub fn chat_text(answer: &str) -> Self {
        Self::sse(crate::sse::chat::text(answer))
    }

    /// A Chat Completions stream calling tool `name` as call `id` with arguments `args` (a
    /// `serde_json::Value`, or the argument text itself), then `finish_reason: tool_calls`
    /// and usage 10/5.
    pub fn chat_call(id: &str, name: &str, args: impl std::fmt::Display) -> Self {
        Self::sse(
            crate::sse::chat::Stream::new()
                .tool_call(id, name, &args.to_string())
                .finish("tool_calls")
                .usage(10, 5, 0)
                .done(),
        )
    }

    /// A JSON body (`content-type: application/json`) with `status`; `body` is any JSON text
    /// or a `serde_json::Value`.
    pub fn json(status: u16, body: impl ToString) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            chunks: vec![Bytes::from(body.to_string())],
        }
    }

    /// `status` with the JSON error body OpenAI and Anthropic send
    /// (`{"type":"error","error":{"type":…,"message":…}}`).
    pub fn error(status: u16, kind: &str, message: &str) -> Self {
        Self::json(
            status,
            serde_json::json!({"type": "error", "error": {"type": kind, "message": message}}),
        )
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// The same body sent in chunks of `size` bytes, so frames split anywhere (even inside
    /// a UTF-8 character).
    pub fn fragmented(mut self, size: usize) -> Self {
        let body: Vec<u8> = self.chunks.concat();
        self.chunks = body
            .chunks(size.max(1))
            .map(Bytes::copy_from_slice)
            .collect();
        self
    }
}

/// The mock model server. Starts listening on 127.0.0.1 (port 0) when created, answers each
/// request from its [`Script`], records every request, and stops when dropped.
pub struct MockModel {
    server: Background,
    journal: Arc<Journal>,
}

impl MockModel {
    /// Starts a server answering from `script` (a sequence of [`Reply`]s converts into one).
    ///
    /// # Panics
    ///
    /// When 127.0.0.1:0 cannot be bound.
    pub fn start(script: impl Into<Script<Reply>>) -> Self {
        let script = Arc::new(Mutex::new(script.into()));
        let journal = Arc::new(Journal::default());
        let shared = journal.clone();
        let server = Background::spawn("mock-model", move |stream| {
            let (journal, script) = (shared.clone(), script.clone());
            async move {
                let service = hyper::service::service_fn(move |request| {
                    handle(request, journal.clone(), script.clone())
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            }
        });
        Self { server, journal }
    }

    served_api!();
}

type Body = BoxBody<Bytes, Infallible>;

async fn handle(
    request: hyper::Request<Incoming>,
    journal: Arc<Journal>,
    script: Arc<Mutex<Script<Reply>>>,
) -> Result<hyper::Response<Body>, Infallible> {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let request = Request {
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.path().to_string(), |p| p.to_string()),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body,
    };
    let reply = journal
        .record(request, &script)
        .unwrap_or_else(|| Reply::error(500, "api_error", "no scripted reply"));
    Ok(response(reply))
}

fn response(reply: Reply) -> hyper::Response<Body> {
    let mut response = hyper::Response::new(body(reply.chunks));
    *response.status_mut() = hyper::StatusCode::from_u16(reply.status)
        .unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in reply.headers {
        match (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            (Ok(name), Ok(value)) => {
                response.headers_mut().append(name, value);
            }
            _ => eprintln!("mock-model: skipping the invalid header {name:?}"),
        }
    }
    response
}

/// The chunks as a streamed body; the server yields between chunks so that each goes out
/// in its own write, as a model's stream does.
fn body(mut chunks: Vec<Bytes>) -> Body {
    chunks.retain(|c| !c.is_empty());
    if chunks.len() <= 1 {
        // One piece (a JSON document, an error): sent with its content-length.
        let whole = chunks.pop().unwrap_or_default();
        return http_body_util::Full::new(whole).boxed();
    }
    let frames = futures::stream::iter(chunks).then(|chunk| async move {
        tokio::task::yield_now().await;
        Ok::<_, Infallible>(Frame::data(chunk))
    });
    BodyExt::boxed(StreamBody::new(frames))
}
