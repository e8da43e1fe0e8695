//! ZCode app-server JSON-RPC (`app-server --stdio`) and Agent Client Protocol (`acp`) front
//! ends, both views of [`agent_core::AgentEvent`], over agent-host's session host
//! ([`agent_host::session`]: many sessions per process, one turn at a time, approver
//! bridging to the client, on-disk persistence) and its line I/O.
//!
//! Each protocol keeps only its own parts:
//! - [`zcode`]: `wire` (serde types), `mapping` (a turn's events → `session/event`),
//!   `snapshot` and `eventlog` (ZCode's projection and seq'd event log), `handlers` (the
//!   dispatcher) and `server` (the stdio loop).
//! - [`acp`]: `mapping` (a turn's events → `session/update`, history, tool calls),
//!   `handlers` (the SDK's agent builder and the methods) and `transport` (lines ⇄ the
//!   SDK's frames, knowing no method names).
//! - Every mapping (`acp::mapping::AcpMapping`, `zcode::mapping::ZcodeMapping`) implements
//!   `agent_host::turn::Mapping` and accounts for every `AgentEvent` variant with its `Coverage`.
//!
//! # The binary
//!
//! ```text
//! adapter-acp app-server --stdio [--disallowed-tools "A B C"]
//!     [--provider openai|openai-responses|anthropic|scripted] [--model M]
//!     [--base-url URL] [--api-key KEY] [--script FILE] [--data-dir DIR]
//!     [--hooks FILE] [--mcp-config FILE] [--sandbox MODE] [--sandbox-network allow|deny]
//!     [--add-dir DIR]… [--sandbox-fallback refuse|prompt|allow] [--context-window N]
//!     [--auto-compact PERCENT|off]
//! adapter-acp acp [the same provider, tool and data-dir options]
//!     [--hooks FILE] [--mcp-config FILE] [--sandbox MODE] [--sandbox-network allow|deny]
//!     [--add-dir DIR]… [--sandbox-fallback refuse|prompt|allow]
//!     [--context-window N] [--auto-compact PERCENT|off]
//! ```
//!
//! `app-server` speaks the ZCode app-server protocol, `acp` the Agent Client Protocol v1
//! (for Zed, JetBrains and other ACP editors); both use the same session store.
//!
//! Without `--provider` it plays the offline scripted demo, so a host that sets
//! `ZCODE_BIN` to this binary gets a working agent with no key; `ADAPTER_ACP_PROVIDER`,
//! `ADAPTER_ACP_MODEL`, `ADAPTER_ACP_BASE_URL` and `ADAPTER_ACP_SCRIPT` set the same options
//! from the environment (keys come from the providers' standard variables). Sessions are
//! stored under [`default_data_dir`]. stdout carries protocol lines only; logs go to
//! stderr (`ADAPTER_ACP_LOG=debug` for more).
//!
//! Input lines are at most 16 MiB ([`MAX_LINE_ENV`] changes it) and JSON at most
//! 128 levels deep; longer, deeper, non-UTF-8 or malformed lines are answered with the
//! protocol's error and the process keeps serving. Stdin EOF, SIGTERM/SIGINT and a closed
//! stdout all stop running turns (killing their tool process groups) and exit 0 (for
//! `app-server`, see [`zcode`]'s "SIGTERM and SIGINT"). Output is
//! back-pressured ([`OutputGate`](agent_host::backpressure::OutputGate)): a client that
//! stops reading stalls the turn.

#![warn(missing_docs)]

pub mod acp;
pub mod mcp_oauth;
pub mod zcode;

/// How a session's agent is built (the session host's
/// [`factory`](agent_host::session::factory), under the path benches and tools know).
pub mod config {
    pub use agent_host::session::factory::{canonical_tool_name, AgentFactory, FactoryError};
}

/// The output gate (agent-host's, under the path benches and tools know).
pub mod backpressure {
    pub use agent_host::backpressure::{OutputGate, DEFAULT_OUTPUT_LIMIT};
}

use std::path::PathBuf;
use std::sync::Arc;

use agent_host::lines::LineError;
use agent_host::session::{
    AgentFactory, FileStore, InteractionRequest, ModelList, SessionManager, SessionStorage,
};

/// What a front end (the ZCode app-server's [`ServerOptions`](zcode::ServerOptions), the ACP
/// agent's [`AcpOptions`](acp::AcpOptions)) needs.
pub struct Options {
    /// Builds the sessions' agents.
    pub factory: AgentFactory,
    /// Where sessions are stored as files (the same for both front ends), when `storage`
    /// is `None`.
    pub data_dir: PathBuf,
    /// The sessions' storage, when not the files under `data_dir`: e.g. a PostgreSQL store
    /// shared by a fleet (`agent_store_postgres::StoreSpec::open_or_files`). Turns then take
    /// the session's writer claim first, so one process at a time runs a turn on a session.
    pub storage: Option<Arc<dyn SessionStorage>>,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("factory", &self.factory)
            .field("data_dir", &self.data_dir)
            .field("storage", &self.storage.as_ref().map(|_| ".."))
            .finish()
    }
}

impl Options {
    /// The provider's model list for one connection, kept between processes in
    /// [`MODELS_CACHE`] under `data_dir` (see [`ModelList::cached`]).
    pub(crate) fn model_list(&self) -> ModelList {
        ModelList::cached(self.data_dir.join(MODELS_CACHE))
    }

    /// The session manager over the storage (the files under `data_dir` by default), its
    /// interactions sent to `interactions`.
    pub(crate) fn manager(
        self,
        interactions: tokio::sync::mpsc::UnboundedSender<InteractionRequest>,
    ) -> SessionManager {
        let storage = match self.storage {
            Some(storage) => storage,
            None => Arc::new(FileStore::new(self.data_dir)),
        };
        SessionManager::with_storage(self.factory, storage, interactions)
    }
}

/// An input line the reader rejected (not UTF-8, or longer than the limit) as a JSON-RPC
/// error: its code and message (logged).
pub(crate) fn rejected_line(rejected: &LineError) -> (i32, String) {
    let (code, kind) = match rejected {
        LineError::NotUtf8 => (-32700, "Parse error"),
        _ => (-32600, "Invalid request"),
    };
    let message = format!("{kind}: {rejected}");
    tracing::warn!(%message, "rejected an input line");
    (code, message)
}

/// The file under the data directory that keeps the provider's model list for
/// [`CACHE_TTL`](agent_host::session::models::CACHE_TTL), so that a new process's
/// `session/new` or `session/create` need not wait for the server's listing.
pub const MODELS_CACHE: &str = "models-cache.json";

/// Environment variable naming the data directory (sessions are stored under it).
pub const DATA_DIR_ENV: &str = "ADAPTER_ACP_DATA_DIR";

/// Environment variable overriding the longest input line accepted (a positive byte count;
/// default [`MAX_LINE_BYTES`](agent_host::lines::MAX_LINE_BYTES), 16 MiB).
pub const MAX_LINE_ENV: &str = "ADAPTER_ACP_MAX_LINE_BYTES";

/// Nesting depth of JSON input that serde_json accepts (its recursion limit); deeper input
/// is a parse error.
pub const MAX_JSON_DEPTH: usize = 128;

/// The line limit in effect: [`MAX_LINE_ENV`] when it holds a positive number, else
/// [`MAX_LINE_BYTES`](agent_host::lines::MAX_LINE_BYTES).
pub fn max_line_bytes() -> usize {
    std::env::var(MAX_LINE_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(agent_host::lines::MAX_LINE_BYTES)
}

/// The default data directory: `$ADAPTER_ACP_DATA_DIR`, else
/// `$ZCODE_DATA_BASE_DIR/.zcode/adapter-acp` (set by ZCode hosts), else
/// `$XDG_DATA_HOME/adapter-acp`, else `~/.local/share/adapter-acp`, else `./.adapter-acp`.
pub fn default_data_dir() -> PathBuf {
    let env = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    (env(DATA_DIR_ENV))
        .or_else(|| env("ZCODE_DATA_BASE_DIR").map(|base| base.join(".zcode").join("adapter-acp")))
        .or_else(|| env("XDG_DATA_HOME").map(|xdg| xdg.join("adapter-acp")))
        .or_else(|| env("HOME").map(|home| home.join(".local").join("share").join("adapter-acp")))
        .unwrap_or_else(|| PathBuf::from(".adapter-acp"))
}
