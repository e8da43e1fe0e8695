//! What a front end's client (an editor) can lend the built-in tools: its text buffers
//! ([`EditorFiles`]: a read sees unsaved changes, a write goes through the editor) and its
//! terminals ([`EditorTerminals`]: a command runs where the user watches it).
//!
//! A host gives them to an agent with [`AgentBuilder::editor`](crate::AgentBuilder::editor);
//! every tool call finds them in [`ToolContext::editor`](crate::ToolContext::editor). Without
//! them (the default) the tools read and write the local disk and start their own
//! processes. The tools keep their own rules either way: confinement to the workspace, the
//! permission gate, the sandbox policy; the editor is only where the bytes go. A sub-agent's
//! calls use the local disk and processes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::tool::{ToolContext, ToolError};

/// The editor's services a host lends an agent's tools; each is optional.
#[derive(Clone, Default)]
pub struct Editor {
    files: Option<Arc<dyn EditorFiles>>,
    terminals: Option<Arc<dyn EditorTerminals>>,
}

impl std::fmt::Debug for Editor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Editor")
            .field("files", &self.files.is_some())
            .field("terminals", &self.terminals.is_some())
            .finish()
    }
}

impl Editor {
    /// No editor: the local disk and local processes.
    pub fn none() -> Self {
        Self::default()
    }

    /// Text files are read and written through `files`.
    #[must_use = "returns the changed value"]
    pub fn with_files(mut self, files: Arc<dyn EditorFiles>) -> Self {
        self.files = Some(files);
        self
    }

    /// Commands run in the terminals of `terminals`.
    #[must_use = "returns the changed value"]
    pub fn with_terminals(mut self, terminals: Arc<dyn EditorTerminals>) -> Self {
        self.terminals = Some(terminals);
        self
    }

    /// The editor's text files, when lent.
    pub fn files(&self) -> Option<&Arc<dyn EditorFiles>> {
        self.files.as_ref()
    }

    /// The editor's terminals, when lent.
    pub fn terminals(&self) -> Option<&Arc<dyn EditorTerminals>> {
        self.terminals.as_ref()
    }

    /// Whether nothing is lent.
    pub fn is_empty(&self) -> bool {
        self.files.is_none() && self.terminals.is_none()
    }
}

/// A text file to read through the editor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadText {
    /// The file, an absolute path.
    pub path: PathBuf,
    /// The first line to return (1-based); `None`: from the start.
    pub line: Option<u32>,
    /// The most lines to return; `None`: all.
    pub limit: Option<u32>,
}

impl ReadText {
    /// The whole of `path`.
    pub fn whole(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            line: None,
            limit: None,
        }
    }
}

/// The editor's text files: what it shows the user, unsaved changes included.
#[async_trait]
pub trait EditorFiles: Send + Sync {
    /// The text of `request.path` (its lines from `line`, at most `limit` of them). An error
    /// is the call's failure, in words the model can act on (a file that does not exist is
    /// [`ToolError::Failed`] saying so); it never waits past the host's own timeout.
    async fn read_text(&self, request: ReadText, ctx: &ToolContext) -> Result<String, ToolError>;

    /// Replaces the whole text of `path` (an absolute path) with `content`, creating the
    /// file when it does not exist.
    async fn write_text(
        &self,
        path: &Path,
        content: &str,
        ctx: &ToolContext,
    ) -> Result<(), ToolError>;
}

/// A command to run in one of the editor's terminals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalCommand {
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The working directory (absolute).
    pub cwd: PathBuf,
    /// Variables set for it, besides the editor's environment.
    pub env: Vec<(String, String)>,
    /// The most output bytes the terminal keeps (the earliest are dropped beyond it).
    pub output_byte_limit: Option<u64>,
    /// How long it may run before it is killed.
    pub timeout: Duration,
}

/// How a command in an editor terminal ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TerminalExit {
    /// It exited with this code.
    Code(u32),
    /// A signal ended it (its name, as the editor reports it).
    Signal(String),
    /// It ran past its timeout and was killed.
    TimedOut,
    /// The editor reported no exit status.
    Unknown,
}

/// What a command in an editor terminal did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalRun {
    /// Its output (standard output and error, as the terminal shows them).
    pub output: String,
    /// The terminal dropped earlier output (over `output_byte_limit`).
    pub truncated: bool,
    /// How it ended.
    pub exit: TerminalExit,
}

/// The editor's terminals.
#[async_trait]
pub trait EditorTerminals: Send + Sync {
    /// Runs `command` in a new terminal the user sees and waits until it ends, its timeout
    /// passes (it is killed) or `ctx.cancel` fires (it is killed and the call is
    /// [`ToolError::Cancelled`]). The terminal is released before this returns (or, when
    /// the call's future is dropped, right after). An editor that fails a request is the
    /// call's error; no wait is unbounded.
    async fn run(
        &self,
        command: TerminalCommand,
        ctx: &ToolContext,
    ) -> Result<TerminalRun, ToolError>;
    /// Starts `command` in a new terminal the user sees and returns at once with a handle
    /// to it: the command lives across calls (`exec_command`'s sessions) until it exits or
    /// the handle kills it, and the terminal is released when the handle is dropped.
    /// `command.timeout` does not apply. `Ok(None)` (the default): this editor cannot keep
    /// a terminal across calls, and the tool starts the process itself.
    async fn start(
        &self,
        command: TerminalCommand,
        ctx: &ToolContext,
    ) -> Result<Option<Box<dyn LiveTerminal>>, ToolError> {
        let _ = (command, ctx);
        Ok(None)
    }
}

/// What an editor terminal shows so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalOutput {
    /// The output so far (standard output and error, as the terminal shows them).
    pub output: String,
    /// The terminal dropped earlier output (over `output_byte_limit`).
    pub truncated: bool,
    /// How the command ended, once it has.
    pub exit: Option<TerminalExit>,
}

/// A command running in one of the editor's terminals ([`EditorTerminals::start`]); the
/// terminal is released when this is dropped (and the command killed, if it still runs).
#[async_trait]
pub trait LiveTerminal: Send + Sync {
    /// Shows the terminal in the content of the call `ctx` belongs to (a later call that
    /// polls or drives the same command).
    async fn show(&self, ctx: &ToolContext);

    /// Waits at most `within` for the command to end, or until `ctx.cancel` fires; how it
    /// ended, or `None` while it runs.
    async fn wait(
        &self,
        within: Duration,
        ctx: &ToolContext,
    ) -> Result<Option<TerminalExit>, ToolError>;

    /// What the terminal shows now.
    async fn output(&self) -> Result<TerminalOutput, ToolError>;

    /// Kills the command (the terminal and its output stay until the handle is dropped).
    async fn kill(&self) -> Result<(), ToolError>;
}
