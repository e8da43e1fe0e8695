//! The ZCode app-server front end (`adapter-acp app-server --stdio`): a drop-in for
//! `zcode app-server --stdio` as spawned by hosts such as the zcode-acp-server bridge.
//!
//! - [`wire`]: the protocol's serde types.
//! - [`mapping`]: one turn's `AgentEvent`s → `session/event` payloads.
//! - [`snapshot`]: session info, projection, settings and messages in ZCode shapes.
//! - [`eventlog`]: the per-session, seq'd event log with replay.
//! - `handlers`: the dispatcher and the method handlers.
//! - [`server`]: the stdio loop and the writer.

pub mod eventlog;
mod handlers;
pub mod mapping;
pub mod server;
pub mod snapshot;
pub mod wire;

pub use server::{serve, serve_gated, ServerOptions};
