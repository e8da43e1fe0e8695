//! ZCode app-server JSON-RPC (`app-server --stdio`) and Agent Client Protocol (`acp`) front
//! ends, both views of [`agent_core::AgentEvent`].
//!
//! The protocol-independent parts live at the top level so every front end shares them:
//! [`session`] (the session host: many sessions per process, one turn at a time, approver
//! bridging to the client, on-disk persistence, how a session's agent is built and the
//! session-bound tools that ask the user through the client). [`zcode`] is the ZCode app-server front end; [`acp`] the
//! Agent Client Protocol front end.
//!
//! # The binary
//!
//! ```text
//! adapter-acp app-server --stdio [--disallowed-tools "A B C"]
//!     [--provider openai|openai-responses|anthropic|scripted] [--model M]
//!     [--base-url URL] [--api-key KEY] [--script FILE] [--data-dir DIR]
//! adapter-acp acp [the same provider, tool and data-dir options]
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
//! Input lines are at most 16 MiB ([`lines::MAX_LINE_ENV`] changes it) and JSON at most
//! 128 levels deep; longer, deeper, non-UTF-8 or malformed lines are answered with the
//! protocol's error and the process keeps serving. Stdin EOF, SIGTERM/SIGINT and a closed
//! stdout all stop running turns (killing their tool process groups) and exit 0. Output is
//! back-pressured ([`backpressure`]): a client that stops reading stalls the turn.

#![warn(missing_docs)]

pub mod acp;
pub mod backpressure;
pub mod coverage;
pub mod lines;
pub mod session;
pub mod zcode;

/// How a session's agent is built (the session host's [`session::factory`], under the
/// path it has always had).
pub mod config {
    pub use crate::session::factory::{canonical_tool_name, AgentFactory, FactoryError};
}

use std::path::PathBuf;

/// Environment variable naming the data directory (sessions are stored under it).
pub const DATA_DIR_ENV: &str = "ADAPTER_ACP_DATA_DIR";

/// The default data directory: `$ADAPTER_ACP_DATA_DIR`, else
/// `$ZCODE_DATA_BASE_DIR/.zcode/adapter-acp` (set by ZCode hosts), else
/// `$XDG_DATA_HOME/adapter-acp`, else `~/.local/share/adapter-acp`, else `./.adapter-acp`.
pub fn default_data_dir() -> PathBuf {
    let env = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = env(DATA_DIR_ENV) {
        return dir;
    }
    if let Some(base) = env("ZCODE_DATA_BASE_DIR") {
        return base.join(".zcode").join("adapter-acp");
    }
    if let Some(xdg) = env("XDG_DATA_HOME") {
        return xdg.join("adapter-acp");
    }
    if let Some(home) = env("HOME") {
        return home.join(".local").join("share").join("adapter-acp");
    }
    PathBuf::from(".adapter-acp")
}
