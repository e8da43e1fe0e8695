//! Wire types of the ZCode app-server protocol: line-delimited JSON objects shaped like
//! JSON-RPC but without a `jsonrpc` field.
//!
//! Every frame this server writes is one of the serde types below; nothing is built as a
//! string by hand. Field names follow the upstream server's strict schemas (camelCase).
//!
//! By area:
//! - [`envelope`]: ids, error objects, the incoming line, every outgoing message.
//! - [`session`]: session requests and results.
//! - [`snapshot`]: a session's full state.
//! - [`message`]: messages and parts.
//! - [`turn`]: send, stop, steer, compact and goal.
//! - [`event`]: `session/event` payloads.
//! - [`interaction`]: server → client requests and their replies.
//! - [`mcp`]: the MCP servers of `mcp/list`.
//! - [`request`]: every client request, parsed by method before dispatch.
//!
//! Every type is re-exported here: `wire::Snapshot` is `wire::snapshot::Snapshot`.

pub mod envelope;
pub mod event;
pub mod interaction;
pub mod mcp;
pub mod message;
pub mod request;
pub mod rewind;
pub mod session;
pub mod snapshot;
pub mod turn;

pub use envelope::*;
pub use event::*;
pub use interaction::*;
pub use mcp::*;
pub use message::*;
pub use request::*;
pub use rewind::*;
pub use session::*;
pub use snapshot::*;
pub use turn::*;

#[cfg(test)]
mod tests;
