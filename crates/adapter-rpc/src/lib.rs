//! zut RPC front end for [`agent_core`]: a drop-in for `zut rpc`.
//!
//! Newline-delimited JSON commands come in on stdin; responses and events go out on stdout,
//! one JSON object per line. The pieces:
//!
//! - [`wire`]: every frame as a serde type (commands, responses, events, messages).
//! - [`processor`]: the mapping [`agent_core::AgentEvent`] → [`wire::Event`].
//! - [`server`]: the dispatcher and the FIFO worker on agent-host's line reader, writer and
//!   turn driver, generic over the streams so it can be driven in-process.
//! - [`framing`]: line-safe serialisation (U+2028/U+2029 escaped).
//! - [`cli`]: zut's flags (agent-host's provider flags flattened in) and building the agent;
//!   the binary `adapter-rpc rpc` uses it.
//!
//! # Choices where the protocol leaves room
//!
//! - `done` ends every prompt **and** every compaction (the protocol document's event table:
//!   "the whole prompt/compact completed"), after `compact_done` or `error`.
//! - The `{"started":true}` response of a prompt or compaction is written when its turn
//!   starts: for one queued behind another, after that one's `done` (zut's order).
//! - A command before a required `hello`, and a `hello` with a missing or wrong token, are
//!   answered with `success:false` and the process exits 1 (the document: "if absent or wrong
//!   … the process exits").
//! - An input line over the limit (16 MiB) is answered with a failure response
//!   (`command:""`) and skipped; the server keeps reading.
//! - `set_model` accepts the provider's catalogue and the startup model; a provider with an
//!   empty catalogue accepts any non-empty id.
//! - `turn_end` of an aborted call carries `error:"context canceled"`, zut's text.
//! - Tools run without confirmation ([`cli::AllowAll`]), as in zut; permission events are not
//!   part of the protocol and are dropped.

#![warn(missing_docs)]

pub mod auth;
pub mod cli;
pub mod framing;
pub mod processor;
pub mod reasoning;
pub mod server;
pub mod signals;
pub mod wire;

pub use server::{serve, serve_until, Ended, ServeError, ServerConfig};
