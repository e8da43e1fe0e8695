//! The mock model server: real HTTP/1.1 (hyper) on 127.0.0.1, streaming each reply chunk by
//! chunk, recording every request. A `GET …/models` (OpenAI's `/v1/models`, Anthropic's
//! `/v1/models`) is answered with the server's model list ([`MockModel::MODELS`] unless
//! [`MockModel::set_models`] changed it) in the `{"data": [{"id": …}]}` form both vendors
//! use; it is counted apart ([`MockModel::model_list_requests`]), not recorded or scripted.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
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

/// The model list a mock server answers `GET …/models` with, and how often it was asked.
#[derive(Debug)]
struct Models {
    ids: Mutex<Vec<String>>,
    asked: AtomicUsize,
    /// TCP connections accepted.
    connections: AtomicUsize,
}

/// The mock model server. Starts listening on 127.0.0.1 (port 0) when created, answers each
/// request from its [`Script`], records every request, and stops when dropped.
pub struct MockModel {
    server: Background,
    journal: Arc<Journal>,
    models: Arc<Models>,
}

impl MockModel {
    /// The models a mock server lists by default (`GET …/models`).
    pub const MODELS: [&'static str; 2] = ["mock-model-small", "mock-model-large"];

    /// Starts a server answering from `script` (a sequence of [`Reply`]s converts into one).
    ///
    /// # Panics
    ///
    /// When 127.0.0.1:0 cannot be bound.
    pub fn start(script: impl Into<Script<Reply>>) -> Self {
        let script = Arc::new(Mutex::new(script.into()));
        let journal = Arc::new(Journal::default());
        let models = Arc::new(Models {
            ids: Mutex::new(Self::MODELS.map(String::from).to_vec()),
            asked: AtomicUsize::new(0),
            connections: AtomicUsize::new(0),
        });
        let (shared, listed) = (journal.clone(), models.clone());
        let server = Background::spawn("mock-model", move |stream| {
            let (journal, script, models) = (shared.clone(), script.clone(), listed.clone());
            models.connections.fetch_add(1, Ordering::SeqCst);
            async move {
                let service = hyper::service::service_fn(move |request| {
                    handle(request, journal.clone(), script.clone(), models.clone())
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            }
        });
        Self {
            server,
            journal,
            models,
        }
    }

    /// Lists `ids` from now on in answer to `GET …/models`.
    pub fn set_models<S: Into<String>>(&self, ids: impl IntoIterator<Item = S>) {
        *self.models.ids.lock().unwrap_or_else(|e| e.into_inner()) =
            ids.into_iter().map(Into::into).collect();
    }

    /// How many `GET …/models` requests arrived so far.
    pub fn model_list_requests(&self) -> usize {
        self.models.asked.load(Ordering::SeqCst)
    }

    /// How many TCP connections were accepted so far (each may carry many requests).
    pub fn connections(&self) -> usize {
        self.models.connections.load(Ordering::SeqCst)
    }

    served_api!();
}

/// The body of a model listing, in the form OpenAI and Anthropic share.
fn model_listing(ids: &[String]) -> String {
    let data: Vec<serde_json::Value> = ids
        .iter()
        .map(|id| {
            serde_json::json!({
                "id": id, "object": "model", "type": "model", "display_name": id,
                "created": 0, "created_at": "2025-01-01T00:00:00Z", "owned_by": "mock"
            })
        })
        .collect();
    serde_json::json!({
        "object": "list", "data": data, "has_more": false,
        "first_id": ids.first(), "last_id": ids.last()
    })
    .to_string()
}

type Body = BoxBody<Bytes, Infallible>;

async fn handle(
    request: hyper::Request<Incoming>,
    journal: Arc<Journal>,
    script: Arc<Mutex<Script<Reply>>>,
    models: Arc<Models>,
) -> Result<hyper::Response<Body>, Infallible> {
    let (parts, body) = request.into_parts();
    if parts.method == hyper::Method::GET && parts.uri.path().ends_with("/models") {
        models.asked.fetch_add(1, Ordering::SeqCst);
        let ids = models.ids.lock().unwrap_or_else(|e| e.into_inner()).clone();
        return Ok(response(Reply::json(200, model_listing(&ids))));
    }
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
