//! Test doubles for the workspace's tests (`publish = false`, a dev-dependency only).
//!
//! - [`MockModel`]: a mock model HTTP server (real HTTP/1.1, on hyper) on 127.0.0.1, port 0.
//!   It streams server-sent events as each vendor does ([`sse::chat`], [`sse::responses`],
//!   [`sse::anthropic`], or a recorded stream from [`fixtures`]), one chunk per frame; it
//!   answers from a [`Script`] (a sequence, routes chosen by what a request contains, or a
//!   function of the request), and records every request (method, path, headers, body) for
//!   assertions.
//! - [`FaultServer`]: the one raw-TCP server, for what an HTTP server will not do on
//!   purpose: a reset or a cut after content, a truncated frame, a stall past the idle
//!   timeout, an empty body, silence before the response head, 429 with `retry-after`,
//!   5xx, a proxy echoing the request head, and a flood that shows backpressure
//!   ([`Fault::chat_flood`], [`FaultServer::wait_for_flood_stall`]). Same [`Script`]s, same
//!   recorded [`Request`]s.
//! - [`mcp`]: the MCP reference servers from npm (Node, the installed scripts, and
//!   `server-everything` over streamable HTTP), installed on first use.
//! - [`lsp`]: the language servers from npm (pyright, typescript-language-server),
//!   installed on first use.
//! - The outside components a test needs, each got by one helper that returns it or a
//!   [`Skip`] ([`component`] says how a skip is reported, and how `AGENT_SDK_*=required` turns
//!   it into a failure): [`npm::npm_project`] (`npm ci` once, under a lock),
//!   [`pg::server_url`] (`AGENT_SDK_PG_URL`, else a throw-away server shared by the run) and
//!   [`real_model::server_url`] (`AGENT_SDK_LLAMA_URL`; llama-server is never built by tests).
//! - [`bedrock`]: Amazon Bedrock as it answers: ConverseStream bodies in the binary
//!   event-stream framing, AWS's error answers.
//! - [`gemini`]: Google's APIs as they answer: Gemini streams, error bodies, the OAuth
//!   token endpoint.
//! - [`scenarios`]: the capability scenarios every front end's harness runs (hooks, the
//!   sandbox, sub-agents, the context budget, secrets), each a model script, setup and the
//!   agent-level facts expected.
//! - [`web`]: a web server of shipped documentation pages, redirects and search backends
//!   (SearXNG's and Zero's generic JSON shape), for the web tools.
//! - [`golden`]: golden files of the in-process mapping tests (events in, frames out).
//! - [`pipe`]: a child process driven over its pipes one line at a time (the front ends'
//!   end-to-end clients).
//! - [`procs`]: processes through `/proc` (gone, children, bounded waits).
//! - [`prop`]: the property tests' case count, runner and arbitrary JSON.
//! - [`Request`] also reads what the agent sent in a Chat Completions request:
//!   [`Request::offered_tools`], [`Request::tool_message`], [`Request::specialist_call`],
//!   [`Request::earlier_calls`], [`Request::task_ids`]; [`Reply::chat_text`] and
//!   [`Reply::chat_call`] are the two turns most scripts play.
//!
//! Both servers run on a thread of their own with their own runtime: they serve synchronous
//! tests (which spawn a binary) and `#[tokio::test]`s alike, and dropping them closes every
//! connection. Waits for requests take a timeout ([`MockModel::wait_for_requests`], and a
//! `_blocking` form for synchronous tests).
//!
//! Why not `wiremock` or `httpmock`: both send a reply body in one piece, so they cannot
//! stream a vendor's events frame by frame, stall or cut a stream; their async start also
//! does not fit the synchronous tests that drive the front-end binaries. One small server
//! over hyper (already in the tree through `reqwest`) covers the plain replies as well, so
//! tests have one API to learn.
//!
//! ```
//! use std::io::{Read, Write};
//! use std::time::Duration;
//! use test_support::{sse, FaultServer, Fault, MockModel, Reply, Script};
//!
//! // The first request that names `case-429` is rate limited, later ones get text; every
//! // other request gets the same text.
//! let server = MockModel::start(
//!     Script::new()
//!         .route(
//!             |r| r.contains("case-429"),
//!             [
//!                 Reply::error(429, "rate_limit_error", "slow down").header("retry-after", "1"),
//!                 Reply::sse(sse::chat::text("fine")),
//!             ],
//!         )
//!         .fallback([Reply::sse(sse::chat::text("Hello from the mock."))]),
//! );
//!
//! // Any HTTP client works; a provider would be pointed at `server.v1()`.
//! let body = r#"{"model":"gpt-test","messages":[{"role":"user","content":"case-429"}]}"#;
//! let mut socket = std::net::TcpStream::connect(server.addr()).unwrap();
//! write!(
//!     socket,
//!     "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer sk-test\r\n\
//!      content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
//!     body.len()
//! )
//! .unwrap();
//! let mut answer = String::new();
//! socket.read_to_string(&mut answer).unwrap();
//! assert!(answer.starts_with("HTTP/1.1 429"));
//! assert!(answer.contains("retry-after: 1"));
//!
//! let requests = server
//!     .wait_for_requests_blocking(1, Duration::from_secs(10))
//!     .unwrap();
//! assert_eq!(requests[0].path, "/v1/chat/completions");
//! assert_eq!(requests[0].header("authorization"), Some("Bearer sk-test"));
//! assert_eq!(requests[0].json()["model"], "gpt-test");
//!
//! // Faults: a stream reset after its first words, then a 503.
//! let faults = FaultServer::start([
//!     Fault::sse_then(sse::chat::Stream::new().text("partial").done(), test_support::End::Reset),
//!     Fault::status(503),
//! ]);
//! # let _ = faults.v1();
//! ```

#![warn(missing_docs)]

/// The API [`MockModel`] and [`FaultServer`] share, written once: where the server listens
/// and the requests it received. Expands inside an `impl` of a struct holding
/// `server: Background` and `journal: Arc<Journal>`.
macro_rules! served_api {
    () => {
        /// The address listened on.
        pub fn addr(&self) -> std::net::SocketAddr {
            self.server.addr
        }

        /// `http://127.0.0.1:PORT` (the Anthropic base URL).
        pub fn url(&self) -> String {
            format!("http://{}", self.server.addr)
        }

        /// `http://127.0.0.1:PORT/v1` (the OpenAI base URL).
        pub fn v1(&self) -> String {
            format!("{}/v1", self.url())
        }

        /// Every request received so far.
        pub fn requests(&self) -> Vec<$crate::Request> {
            self.journal.snapshot()
        }

        /// How many requests arrived so far.
        pub fn request_count(&self) -> usize {
            self.journal.count()
        }

        /// Waits until `n` requests have arrived (at most `timeout`), on any async runtime.
        pub async fn wait_for_requests(
            &self,
            n: usize,
            timeout: std::time::Duration,
        ) -> Result<Vec<$crate::Request>, $crate::Timeout> {
            self.journal.wait(n, timeout).await
        }

        /// Waits until `n` requests have arrived (at most `timeout`), blocking the thread.
        pub fn wait_for_requests_blocking(
            &self,
            n: usize,
            timeout: std::time::Duration,
        ) -> Result<Vec<$crate::Request>, $crate::Timeout> {
            self.journal.wait_blocking(n, timeout)
        }
    };
}

mod background;
pub mod bedrock;
pub mod component;
pub mod fault;
pub mod fixtures;
pub mod gemini;
pub mod golden;
pub mod lsp;
pub mod mcp;
pub mod mock;
pub mod npm;
pub mod oauth;
pub mod pg;
pub mod pipe;
pub mod procs;
pub mod prop;
pub mod real_model;
mod request;
pub mod scenarios;
mod script;
pub mod sse;
pub mod web;

pub use background::refused_url;
pub use component::Skip;
pub use fault::{End, Fault, FaultServer};
pub use mock::{MockModel, Reply};
pub use request::Request;
pub use script::{Script, Timeout};
pub use sse::Sse;
