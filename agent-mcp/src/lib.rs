//! MCP (Model Context Protocol) servers' tools as [`agent_core`] tools.
//!
//! [`McpManager::connect`] starts stdio servers (child processes in their own process
//! group) and connects streamable-HTTP servers, all at once, each bounded by a timeout,
//! and lists their tools. Each tool is offered to the model as `mcp_<server>_<tool>`
//! (Zero's naming, at most 64 characters, unique) with the server's description and input
//! schema. A tool the server marks `readOnlyHint` runs without asking; the others go
//! through the agent's permission gate like `bash` does. Results keep their text (joined)
//! and images; `structuredContent` becomes JSON text; `isError` makes an error result; the
//! output is scrubbed of secrets and capped like the built-in tools' output.
//!
//! The manager is an [`agent_core::tool_source::ToolSource`]: give it to an agent and the agent asks it
//! before every model call, so a server's `notifications/tools/list_changed` reaches the next
//! request, and a server that exited stops offering tools.
//!
//! Failures are best-effort, as in Zero: a server that does not start, times out or
//! crashes is skipped with a warning (and reported by [`McpManager::status`]); a call to a
//! server that crashes mid-call is an error result and the run goes on. An invalid
//! configuration is a [`ConfigError`]. Aborting a run sends the server
//! `notifications/cancelled`. Server processes end when the last manager handle is
//! dropped or at [`McpManager::shutdown`].
//!
//! # Example
//!
//! ```no_run
//! use agent_core::Agent;
//! use agent_mcp::{McpManager, McpOptions, McpServerConfig};
//! use agent_providers::scripted::{ScriptedProvider, Turn};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), agent_mcp::ConfigError> {
//! let servers = vec![
//!     McpServerConfig::stdio("files", "npx")
//!         .args(["-y", "@modelcontextprotocol/server-filesystem", "."]),
//!     McpServerConfig::http("docs", "https://example.com/mcp")
//!         .header("Authorization", "Bearer token"),
//! ];
//! let mcp = McpManager::connect(servers, McpOptions::new(".")).await?;
//! for server in mcp.status() {
//!     eprintln!("{}: {:?} {:?}", server.name, server.state, server.tools);
//! }
//!
//! let provider = ScriptedProvider::new([Turn::new().text("Ready.")]);
//! let agent = Agent::builder(provider).tool_source(mcp.clone()).build();
//! let events = agent.prompt("List the files.").collect_events().await;
//! # let _ = events;
//! mcp.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! # Configuration from hosts
//!
//! See [`config`]: ACP's `mcpServers` list, Claude/Cursor `{"mcpServers": {…}}` files and
//! Zero's `config.json` all deserialize into [`McpServerConfig`]s.
//!
//! # The OS sandbox of stdio servers
//!
//! Off by default. A server's `"sandbox"` entry (our extension: `read-only`,
//! `workspace-write`, with `"sandboxNetwork"`), [`McpServerConfig::sandbox`] or, for every
//! stdio server without its own, [`McpOptions::sandbox`] confines the server process as the
//! `bash` tool's commands are, its working directory being the workspace; see [`config`].
//!
//! # What connecting costs
//!
//! With no servers nothing starts and an agent without a tool source pays nothing. Each
//! server costs its own start-up (process spawn and the `initialize` / `tools/list` round
//! trips); servers connect concurrently, so the wait before the first model request is
//! about the slowest server's, bounded by [`McpOptions::connect_timeout`]. The
//! `mcp_connect` bench in `benches/` measures the time from `McpManager::connect` to the
//! first model request; on a shared 2-core machine:
//!
//! | servers | small Rust stdio server | `server-everything` on Node |
//! |---|---|---|
//! | 0 | 26 µs (no tool source) | — |
//! | 1 | 2.7 ms | 450 ms |
//! | 5 | 11 ms | 1.2 s |
//!
//! The SDK's own part is the Rust column; the rest is the servers' start-up (Node's, here).

#![warn(missing_docs)]

mod client;
pub mod config;
pub mod elicit;
mod manager;
mod naming;
pub mod oauth;
mod process;
pub mod prompts;
mod resources;
mod tool;

pub use config::{
    parse_mcp_config_file, parse_zero_config, redact_url, ConfigError, McpConfigFile,
    McpServerConfig, McpServerEntry, McpServers, McpTransport, SecretMap, TransportKind,
    ZeroMcpConfig,
};
pub use elicit::{AcceptDefaults, ElicitationAnswer, ElicitationRequest, Elicitor};
pub use manager::{
    McpManager, McpOptions, McpToolInfo, ServerState, ServerStatus, DEFAULT_CALL_TIMEOUT,
    DEFAULT_CONNECT_TIMEOUT,
};
pub use naming::{tool_name, zero_tool_name, MAX_TOOL_NAME_LEN};
pub use prompts::{McpPrompt, McpPromptArgument, PromptError};
