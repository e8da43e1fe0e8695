//! Protocol-free host machinery under the agent-sdk front ends.
//!
//! Every front end (zut RPC, Zero stream-json, ZCode app-server, ACP) is a mapping
//! `AgentEvent → wire frames` plus a dispatcher; what they share lives here:
//!
//! - [`fs`]: file-store primitives: atomic replacement, JSONL appends under an exclusive
//!   lock with torn-tail repair, tolerant JSONL reading, the one session-id check.
//! - [`text`]: text of content blocks, UTF-8 cutting, the JSON escapes of U+2028/U+2029
//!   (and Go's `<`, `>`, `&`).
//! - [`context_files`]: where each front end finds the project's instructions (`AGENTS.md`
//!   and the like), skills and slash commands; [`mcp_commands`]: MCP servers' prompts as
//!   slash commands.
//! - [`guards`]: the guards of unattended runs: permission rules from settings files (and
//!   Zero's grants), the spend cap, the fallback model.
//! - [`cli`]: the provider flags as one clap struct, and the provider they describe; the
//!   capability flags.
//! - [`capabilities`]: hooks, MCP servers, the sandbox, specialists, the context budget and
//!   telemetry, loaded from the capability flags and applied to an agent builder.
//! - [`lines`]: the bounded line reader (`tokio_util::codec`), SIGTERM as end of input.
//! - [`output`] and [`backpressure`]: the one batching line writer, its flush policy and its
//!   gate; [`stdout`]: that writer over a blocking output (a process's stdout) on a blocking
//!   thread; [`stdio`]: the process's stdin and stdout as async input and output, a pipe or
//!   socket driven by the runtime's reactor.
//! - [`session`]: the session host every front end runs its turns on: [`session::Session`]
//!   (its turn driver and queue), the agent factory, the storage backends.
//! - [`turn`]: the one turn fold ([`turn::TurnState`]), the [`turn::Mapping`] trait every
//!   protocol's mapping implements, and the turn's outcome ([`turn::TurnOutcome`]).
//! - [`signals`]: SIGTERM and SIGINT, once for every front end.
//!
//! # A minimal front end
//!
//! A one-session host whose turn's events go out as JSON lines:
//!
//! ```
//! use std::sync::Arc;
//!
//! use agent_core::{hooks::{SessionEndReason, SessionSource}, AgentEvent};
//! use agent_host::backpressure::OutputGate;
//! use agent_host::output::{line_writer, Frames, LineSender};
//! use agent_host::session::{MemoryStorage, Session, TurnInfo, TurnObserver, TurnOutcome};
//! use agent_mcp::McpManager;
//! use agent_providers::scripted::{ScriptedProvider, Turn};
//!
//! /// Your protocol's mapping goes here; this one writes the events as they are.
//! struct Lines { out: LineSender, frames: Frames }
//!
//! impl TurnObserver for Lines {
//!     fn started(&mut self, _: &Session, _: &TurnInfo) {}
//!     fn event(&mut self, _: &Session, _: &TurnInfo, event: &AgentEvent) {
//!         self.frames.push(event).expect("an AgentEvent serialises");
//!     }
//!     fn finished(&mut self, _: &Session, _: &TurnInfo, _: &TurnOutcome) {}
//!     fn flush(&mut self) {
//!         let _ = self.out.send_frames(&mut self.frames);
//!     }
//!     fn output_gate(&self) -> Option<Arc<OutputGate>> {
//!         Some(self.out.gate().clone())
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> std::io::Result<()> {
//!     let (out, writer) = line_writer(Arc::new(OutputGate::new(1024)));
//!     let writing = tokio::spawn(writer.run(tokio::io::sink())); // a front end: its stdout
//!     let agent = agent_core::Agent::builder(ScriptedProvider::new([Turn::new().text("Hello.")])).build();
//!     let storage = Arc::new(MemoryStorage::new());
//!     let session = Session::standalone(agent, ".", storage, McpManager::empty());
//!     let lines = Lines { out: out.clone(), frames: Frames::new() };
//!     session.enqueue_prompt("Say hello.", None, Box::new(lines)).expect("a new session takes a turn");
//!     session.begin(SessionSource::Startup).await; // `session_start` hooks, then the turn starts
//!     session.idle().await;
//!     session.close(SessionEndReason::Exit).await; // `session_end` hooks, MCP servers shut down
//!     out.finish();
//!     writing.await.map_err(std::io::Error::other)?
//! }
//! ```
//!
//! Dependencies point one way: the adapters depend on this crate, this crate on
//! `agent-core`, `agent-providers`, `agent-tools` and the capability crates (`agent-hooks`,
//! `agent-mcp`, `agent-specialists`, `agent-otel`).

#![warn(missing_docs)]

pub mod backpressure;
pub mod capabilities;
pub mod cli;
pub mod context_files;
pub mod fs;
pub mod guards;
pub mod lines;
pub mod lsp;
pub mod mcp_commands;
pub mod output;
pub mod session;
pub mod signals;
pub mod stdio;
pub mod stdout;
pub mod text;
pub mod turn;
