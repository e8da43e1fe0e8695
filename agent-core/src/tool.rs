//! The [`Tool`] trait and what a tool gets and returns.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::parent_run::ParentRun;
use crate::permission::{Assessment, Block, CallTarget, Risk};
pub use crate::permission::{Permission, SideEffect};
pub use crate::progress::{ProgressReceiver, ProgressSink};
use crate::provider::ToolSpec;
use crate::sandbox::policy::SandboxEscalation;
use crate::sandbox::report::{SandboxContext, SandboxSupport};
pub use crate::tool_fn::FnTool;
pub use crate::tool_output::{PlanItem, PlanStatus, PlanUpdate, ToolOutput};
pub use crate::tool_wrapper::ToolWrapper;

/// Which output stream a progress line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProgressStream {
    /// Standard output of a process.
    Stdout,
    /// Standard error of a process.
    Stderr,
    /// A status message from the tool itself.
    Status,
}

/// One progress report from a running tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Where it came from.
    pub stream: ProgressStream,
    /// The text (for process streams, the recent tail).
    pub text: String,
}

/// What a tool call gets besides its arguments.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// Id of the call.
    pub call_id: String,
    /// Workspace root; relative paths resolve against it.
    pub cwd: PathBuf,
    /// Cancelled when the run is aborted; long-running tools must watch it.
    pub cancel: CancellationToken,
    /// Progress reports.
    pub progress: ProgressSink,
    /// The OS sandbox for the processes this call starts.
    pub sandbox: SandboxContext,
    /// The agent run that made the call, for tools that run a sub-agent
    /// ([`crate::Agent::run_as_child`]); `None` outside the agent loop.
    pub parent: Option<ParentRun>,
    /// The text buffers and terminals a client lends the tools ([`crate::editor`]); none
    /// by default.
    pub editor: crate::editor::Editor,
}

impl ToolContext {
    /// A context for calling a tool outside the agent loop (tests, custom hosts), with no
    /// sandbox (see [`ToolContext::with_sandbox`]).
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        Self {
            call_id: String::new(),
            cwd: cwd.into(),
            cancel: CancellationToken::new(),
            progress: ProgressSink::discard(),
            sandbox: SandboxContext::default(),
            parent: None,
            editor: crate::editor::Editor::default(),
        }
    }

    /// The same context with `sandbox`.
    #[must_use = "returns the changed value"]
    pub fn with_sandbox(mut self, sandbox: SandboxContext) -> Self {
        self.sandbox = sandbox;
        self
    }
}

// Here beside [`ToolError`]; the rest of [`ToolOutput`] is in `tool_output`.
impl ToolOutput {
    /// The failed result for `err`; a [`ToolError::Blocked`] keeps its block.
    pub fn from_error(err: ToolError) -> Self {
        let mut output = Self::error(err.to_string());
        if let ToolError::Blocked(block) = err {
            output.block = Some(*block);
        }
        output
    }
}

/// Why a tool call failed.
///
/// The message becomes the call's error result. The loop scrubs it (registered secrets and
/// sensitive environment values become `[REDACTED]`) before the model, the events or the
/// session see it, so a path or a server's error body may be quoted as is.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The arguments did not match the schema.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The sandbox refused the call.
    #[error("{}", .0.reason)]
    Blocked(Box<Block>),
    /// The call was cancelled.
    #[error("aborted: {0}")]
    Cancelled(String),
    /// I/O failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Anything else, in words the model can act on.
    #[error("{0}")]
    Failed(String),
}

impl ToolError {
    /// An I/O error with context.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}

/// A capability the model can call.
///
/// Implement this to give an agent a tool of your own:
///
/// ```
/// use agent_core::{async_trait, SideEffect, Tool, ToolContext, ToolError, ToolOutput};
/// use serde_json::{json, Value};
///
/// struct Clock;
///
/// #[async_trait]
/// impl Tool for Clock {
///     fn name(&self) -> &str { "clock" }
///     fn description(&self) -> &str { "Returns the current UTC time." }
///     fn parameters(&self) -> Value { json!({"type": "object", "properties": {}}) }
///     fn side_effect(&self) -> SideEffect { SideEffect::None }
///     async fn call(&self, _args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
///         Ok(ToolOutput::text("12:00"))
///     }
/// }
/// ```
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// Unique name the model calls it by.
    fn name(&self) -> &str;

    /// What it does, written for the model.
    fn description(&self) -> &str;

    /// JSON schema of the arguments object.
    fn parameters(&self) -> Value;

    /// Its side-effect class.
    fn side_effect(&self) -> SideEffect;

    /// Its static permission; by default reads and no-effect tools are allowed and the
    /// rest prompt.
    fn permission(&self) -> Permission {
        match self.side_effect() {
            SideEffect::Read | SideEffect::None => Permission::Allow,
            _ => Permission::Prompt,
        }
    }

    /// Classifies one call before it runs. The default derives the risk from the side
    /// effect; tools that touch paths or run commands refine it.
    fn assess(&self, args: &Value, cwd: &Path) -> Assessment {
        let _ = (args, cwd);
        Assessment {
            risk: Risk::for_side_effect(self.side_effect()),
            block: None,
            reason: None,
        }
    }

    /// Runs the call.
    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError>;

    /// What this call touches — the command it runs, the files it reads or writes, the URL
    /// it fetches — for permission rules ([`crate::permission::rules`]) and file
    /// checkpoints. The default reads the usual argument names ([`CallTarget::from_args`]); a
    /// tool whose arguments name files otherwise (a patch) overrides it. A wrapper tool must
    /// forward this (a [`ToolWrapper`] does).
    fn call_target(&self, args: &Value) -> CallTarget {
        CallTarget::from_args(self.side_effect(), args)
    }

    /// For a tool that starts processes under the OS sandbox (it applies
    /// [`ToolContext::sandbox`]): what the kernel lets it enforce. The agent reports it
    /// ([`crate::AgentEvent::SandboxReport`]) and applies the policy's fallback to this
    /// tool's calls when the sandbox cannot be enforced. `None` (the default) for tools that
    /// start no processes. A wrapper tool must forward this (a [`ToolWrapper`] does).
    fn sandbox_support(&self) -> Option<SandboxSupport> {
        None
    }

    /// The escalation this call asks for (e.g. bash's `sandbox_permissions`), if any. Such a
    /// call always goes to the approver, whatever the permission mode, and runs with the
    /// relaxed policy in [`ToolContext::sandbox`] only when allowed. A wrapper tool must
    /// forward this (a [`ToolWrapper`] does).
    fn sandbox_escalation(&self, args: &Value) -> Option<SandboxEscalation> {
        let _ = args;
        None
    }

    /// Whether a call named `name` (not [`Tool::name`]) is meant for this tool: an earlier
    /// name of it, as a transcript recorded before a rename or an old script calls it. Such
    /// a call runs this tool and keeps the name it was made with in its events. Only the
    /// agent's own tools are asked, after no tool matched by name; none by default. A
    /// wrapper tool must forward this (a [`ToolWrapper`] does).
    fn answers_to(&self, name: &str) -> bool {
        let _ = name;
        false
    }

    /// The spec offered to the model.
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_string(),
            description: self.description().to_string(),
            parameters: self.parameters(),
        }
    }
}
