//! Protocol-free host machinery under the agent-sdk front ends.
//!
//! Every front end (zut RPC, Zero stream-json, ZCode app-server, ACP) is a mapping
//! `AgentEvent → wire frames` plus a dispatcher; what they share lives here:
//!
//! - [`fs`]: file-store primitives: atomic replacement, JSONL appends under an exclusive
//!   lock with torn-tail repair, tolerant JSONL reading, the one session-id check.
//! - [`text`]: text of content blocks, UTF-8 cutting, the JSON escapes of U+2028/U+2029
//!   (and Go's `<`, `>`, `&`).
//! - [`context_files`]: `AGENTS.md` and the like, read into the system prompt.
//! - [`cli`]: the provider flags as one clap struct, and the provider they describe; the
//!   capability flags.
//! - [`capabilities`]: hooks, MCP servers, the sandbox, specialists, the context budget and
//!   telemetry, loaded from the capability flags and applied to an agent builder.
//! - [`lines`]: the bounded line reader (`tokio_util::codec`), SIGTERM as end of input.
//! - [`output`] and [`backpressure`]: the one batching line writer, its flush policy and its
//!   gate.
//! - [`driver`]: one turn driver: a `Run` to its end through a mapper into the writer.
//! - [`turn`]: the one turn fold ([`turn::TurnState`]), the [`turn::Mapping`] trait every
//!   protocol's mapping implements, and the turn's outcome ([`turn::TurnOutcome`]).
//! - [`signals`]: SIGTERM and SIGINT, once for every front end.
//!
//! Dependencies point one way: the adapters depend on this crate, this crate on
//! `agent-core`, `agent-providers`, `agent-tools` and the capability crates (`agent-hooks`,
//! `agent-mcp`, `agent-specialists`, `agent-otel`).

#![warn(missing_docs)]

pub mod backpressure;
pub mod capabilities;
pub mod cli;
pub mod context_files;
pub mod driver;
pub mod fs;
pub mod lines;
pub mod output;
pub mod session;
pub mod signals;
pub mod text;
pub mod turn;
