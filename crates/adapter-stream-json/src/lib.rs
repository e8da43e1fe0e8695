//! Zero stream-json v2 front end for [`agent_core`]: a drop-in for `zero exec`.
//!
//! The binary `adapter-stream-json` accepts `adapter-stream-json exec …` with Zero's flags
//! (so a link named `zero` pointing at it works as `zero exec …`), runs one prompt headless,
//! and reports it in one of Zero's output formats. Under `-o stream-json` stdout carries only
//! protocol lines: `run_start`, `reasoning`, `text`, `tool_call`, `checkpoint`,
//! `permission_request`, `permission_decision`, `tool_result`, `usage`, `final`, `warning`,
//! `error` and `run_end`, each redacted before it is written.
//!
//! - [`wire`]: the protocol's serde types (and the `-o json` lines).
//! - [`input`]: the strict stream-json input parser (`prompt`, `message`, images).
//! - [`redact`]: protocol-level redaction of every output line.
//! - [`order`]: Zero's order of a run's events (per tool call).
//! - [`mapping`]: [`agent_core::AgentEvent`]s to output events, nothing else.
//! - [`record`]: the session recorder, an observer of the same events.
//! - [`checkpoint`]: file snapshots taken before a file-changing tool runs.
//! - [`pipeline`]: order, recorder, mapping and rendering in one step per event.
//! - [`output`]: the `stream-json`, `json` and `text` renderers, and stdout through
//!   agent-host's line writer.
//! - [`session`]: sessions on disk in Zero's layout, with resume and fork.
//! - [`cli`]: the `exec` command line, errors in Zero's words.
//! - [`exec`]: [`run_exec`], one run from arguments to exit code, driven by agent-host's turn
//!   driver.
//!
//! Host machinery (session files, provider flags, line writer, turn driver, text helpers)
//! comes from `agent-host`; this crate keeps Zero's wire types, its mapping and its `exec`.
//!
//! ```no_run
//! # async fn demo() {
//! use adapter_stream_json::{run_exec, ExecHooks, ExecIo};
//! let args: Vec<String> = ["-o", "stream-json", "Say hello."].iter().map(|s| s.to_string()).collect();
//! let code = run_exec(&args, ExecIo::stdio(), ExecHooks::default()).await;
//! std::process::exit(code);
//! # }
//! ```

#![warn(missing_docs)]

pub mod checkpoint;
pub mod cli;
pub mod exec;
pub mod ids;
pub mod input;
pub mod mapping;
pub mod order;
pub mod output;
pub mod pipeline;
pub mod record;
pub mod redact;
pub mod session;
pub mod wire;

pub use exec::{run_exec, ExecHooks, ExecIo};
