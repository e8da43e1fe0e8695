//! Language servers for [`agent_core`]: definitions, references, implementations, workspace
//! symbols and hover as agent tools, and a file's new errors at the end of every edit.
//!
//! [`Lsp`] holds the language servers of one session. A server is started on the first
//! query of a file it handles (per server and project root: the nearest directory with a
//! root marker such as `Cargo.toml` or `tsconfig.json`), from [`LspConfig`]'s table
//! (rust-analyzer, pyright / basedpyright, typescript-language-server, gopls, clangd,
//! bash-language-server, found on `PATH`, overridable by a JSON file), in a process group of
//! its own. The client speaks JSON-RPC over the server's stdio with our own small framing
//! and [`lsp_types`]' messages, bounds every request by a timeout, answers the requests
//! servers send (`workspace/configuration`, `client/registerCapability`,
//! `window/workDoneProgress/create`, …), keeps the documents it opened in step with the
//! agent's edits, restarts a crashed server once and then reports it, and shuts every
//! server down (`shutdown`, `exit`, then the group is killed) with the session.
//!
//! [`Lsp::tools`] makes the tools in a front end's [`Dialect`] (Zero's `lsp_navigate`,
//! zut's `lsp` and `lsp_diagnostics`, or the SDK's `lsp_navigate` and `lsp_diagnostics`); [`Lsp::attach`] also
//! wraps the tools that write files ([`AfterEdit`]) so their results end with the changed
//! file's errors. Nothing starts until a tool is used.
//!
//! ```no_run
//! use std::sync::Arc;
//! use agent_core::{Agent, Tool};
//! use agent_lsp::{Dialect, Lsp, LspConfig};
//! use agent_tools::ToolSet;
//!
//! # fn demo(provider: Arc<dyn agent_core::Provider>) {
//! let lsp = Lsp::new(".", LspConfig::builtin());
//! let tools: Vec<Arc<dyn Tool>> = lsp.attach(ToolSet::defaults(".").into_tools(), Dialect::Sdk, &[]);
//! let agent = Agent::builder(provider).tools(tools).build();
//! # drop(agent);
//! # }
//! ```

#![warn(missing_docs)]

mod config;
mod connection;
mod error;
mod format;
mod framing;
mod init;
mod manager;
mod server;
mod tools;
mod uri;

pub use config::{language_id, LspConfig, ServerSpec};
pub use error::{ConfigError, LspError};
pub use manager::{Lsp, PositionOp, RunningServer, Symbol};
pub use tools::{AfterEdit, Dialect, LspDiagnostics, LspNavigate, ZutDiagnostics, ZutLsp};

/// The LSP's message types this crate speaks in ([`lsp_types`]).
pub use lsp_types;
