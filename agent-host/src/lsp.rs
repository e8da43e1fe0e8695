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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::capabilities::{Capabilities, CapabilityError};
    use crate::cli::CapabilityArgs;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        caps: CapabilityArgs,
    }

    fn load(args: &[&str], dir: &std::path::Path) -> Result<Capabilities, CapabilityError> {
        let cli = Cli::try_parse_from(std::iter::once("bin").chain(args.iter().copied()))
            .expect("parses");
        Capabilities::load(&cli.caps, dir)
    }

    #[test]
    fn the_flags_configure_the_servers_and_a_session_starts_none() {
        let dir = tempfile::tempdir().expect("tempdir");
        let caps = load(&[], dir.path()).expect("loads");
        assert!(caps.lsp.diagnostics_after_edits);
        assert!(caps.lsp.server("pyright-langserver").is_some());

        let file = dir.path().join("lsp.json");
        std::fs::write(&file, r#"{"servers": {"clangd": {"disabled": true}}}"#).expect("write");
        let path = file.to_str().expect("utf-8");
        let caps =
            load(&["--lsp-config", path, "--no-lsp-diagnostics"], dir.path()).expect("loads");
        assert!(caps.lsp.server("clangd").is_none());
        assert!(!caps.lsp.diagnostics_after_edits);
        let lsp = caps.lsp_session(dir.path());
        assert_eq!(lsp.workspace(), dir.path());
        assert!(lsp.running().is_empty(), "nothing starts");

        std::fs::write(&file, r#"{"servers": {"x": {"command": "x"}}}"#).expect("write");
        let err = load(&["--lsp-config", path], dir.path()).expect_err("invalid");
        assert!(matches!(err, CapabilityError::Lsp(_)), "{err}");
        let text = err.to_string();
        assert!(
            text.starts_with("--lsp-config ") && text.contains("lsp.json"),
            "{text}"
        );
        assert!(text.contains("needs fileTypes"), "{text}");
    }
}
