//! Language servers as a host capability: each session gets its own [`Lsp`] (nothing
//! starts until one of its tools is used), its tools in the front end's [`Dialect`] among
//! the tools the filter sees, and the session's file-writing tools wrapped so an edit's
//! result ends with the file's errors ([`Lsp::wrap_writers`]).
//!
//! A front end assembling its tools with a [`ToolRequest`](crate::session::ToolRequest):
//!
//! ```no_run
//! # fn demo(caps: &agent_host::capabilities::Capabilities, workspace: &std::path::Path)
//! # -> Result<(), agent_host::session::ToolFilterError> {
//! use agent_host::lsp::Dialect;
//! use agent_host::session::ToolRequest;
//!
//! let lsp = caps.lsp_session(workspace);
//! let mut request = ToolRequest::new(workspace);
//! request.extra = lsp.tools(Dialect::Sdk, &request.roots);
//! let tools = lsp.wrap_writers(request.build()?, Dialect::Sdk);
//! # drop(tools);
//! # Ok(()) }
//! ```
//!
//! The session's servers end when its tools are dropped (or at [`Lsp::shutdown`]).

use std::path::Path;

pub use agent_lsp::{Dialect, Lsp, LspConfig};

use crate::capabilities::Capabilities;

impl Capabilities {
    /// The language servers of a new session in `workspace`, configured by `--lsp-config`
    /// and `--no-lsp-diagnostics`; none is started.
    pub fn lsp_session(&self, workspace: &Path) -> Lsp {
        Lsp::new(workspace, self.lsp.clone())
    }
}
