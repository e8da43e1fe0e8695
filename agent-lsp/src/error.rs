//! [`LspError`]: what can go wrong between the agent and a language server.

use std::path::PathBuf;
use std::time::Duration;

/// A language-server operation failed. Each variant names the server (its id in the
/// configuration) or the file, so the message is one a model or a person can act on.
#[derive(Debug, thiserror::Error)]
pub enum LspError {
    /// No configured server handles files of this extension (`None`: the file has none).
    #[error("no language server for {} files", ext_label(.0))]
    NoServer(Option<String>),
    /// Servers are configured for the extension, but none of their commands is installed.
    #[error("no language server for {} files ({} not found on PATH)", ext_label(.ext), .commands.join(" or "))]
    NotInstalled {
        /// The extension (`None`: the file has none).
        ext: Option<String>,
        /// The commands looked for.
        commands: Vec<String>,
    },
    /// The server process could not be started.
    #[error("cannot start language server {server} ({command}): {source}")]
    Spawn {
        /// The server's id.
        server: String,
        /// The command.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// A request got no answer in time.
    #[error("language server {server} did not answer {method} within {}s", .after.as_secs_f32())]
    Timeout {
        /// The server's id.
        server: String,
        /// The request's method.
        method: String,
        /// The bound that passed.
        after: Duration,
    },
    /// The server answered a request with an error.
    #[error("language server {server} failed {method} ({code}): {message}")]
    Rpc {
        /// The server's id.
        server: String,
        /// The request's method.
        method: String,
        /// The JSON-RPC error code.
        code: i64,
        /// The server's message.
        message: String,
    },
    /// The server's process ended (its last stderr lines, if any, follow).
    #[error("language server {server} exited{}", stderr_suffix(.stderr))]
    Exited {
        /// The server's id.
        server: String,
        /// The last lines it wrote to stderr.
        stderr: String,
    },
    /// The server exited again after its one restart; it is not started any more.
    #[error("language server {server} crashed again after a restart and was stopped{}", stderr_suffix(.stderr))]
    Crashed {
        /// The server's id.
        server: String,
        /// The last lines it wrote to stderr.
        stderr: String,
    },
    /// The session's language servers were shut down.
    #[error("the language servers of this session were shut down")]
    ShutDown,
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The server sent something that is not the protocol.
    #[error("language server protocol error: {0}")]
    Protocol(String),
}

impl LspError {
    /// Whether this is "no server for this file type" (none configured or none installed):
    /// the answer is "unavailable", not a failure.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Self::NoServer(_) | Self::NotInstalled { .. })
    }
}

fn ext_label(ext: &Option<String>) -> String {
    match ext {
        Some(ext) => format!(".{ext}"),
        None => "extension-less".to_string(),
    }
}

fn stderr_suffix(stderr: &str) -> String {
    match stderr.trim() {
        "" => String::new(),
        tail => format!(": {tail}"),
    }
}

/// A language-server configuration file is not valid.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("reading {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The JSON does not fit the format (the path inside the document says where).
    #[error("{} is not a valid language-server configuration: {message}", path.display())]
    Invalid {
        /// The file (empty for text that did not come from a file).
        path: PathBuf,
        /// What is wrong, and where.
        message: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_extension_and_the_commands() {
        assert_eq!(
            LspError::NoServer(Some("xyz".into())).to_string(),
            "no language server for .xyz files"
        );
        let missing = LspError::NotInstalled {
            ext: Some("py".into()),
            commands: vec![
                "pyright-langserver".into(),
                "basedpyright-langserver".into(),
            ],
        };
        assert_eq!(
            missing.to_string(),
            "no language server for .py files (pyright-langserver or basedpyright-langserver not found on PATH)"
        );
        assert!(missing.is_unavailable());
        let exited = LspError::Exited {
            server: "gopls".into(),
            stderr: "panic: boom\n".into(),
        };
        assert_eq!(
            exited.to_string(),
            "language server gopls exited: panic: boom"
        );
        assert!(!exited.is_unavailable());
    }
}
