//! The ZCode app-server front end (`adapter-acp app-server --stdio`): a drop-in for
//! `zcode app-server --stdio` as spawned by hosts such as the zcode-acp-server bridge.
//!
//! - [`wire`]: the protocol's serde types.
//! - [`events`]: the event processor, `AgentEvent` → `session/event` payloads.
//! - [`snapshot`]: session info, projection, settings and messages in ZCode shapes.
//! - [`server`]: the stdio loop and method handlers.

pub mod events;
pub mod server;
pub mod snapshot;
pub mod wire;

pub use server::{serve, serve_gated, ServerOptions};
