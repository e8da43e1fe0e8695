//! The command line (`adapter-rpc rpc [flags]`, zut's flags) and building the agent from it.

use std::path::PathBuf;
use std::sync::Arc;

use agent_core::{Agent, Approval, ApprovalRequest, Approver, PermissionMode};
use agent_host::cli::{ProviderArgs, ProviderArgsError, ProviderEnv};
use agent_host::context_files;
use agent_tools::ToolSet;
use clap::{Args, Parser, Subcommand};

use crate::auth::Token;
use crate::framing::MAX_LINE_BYTES;
use crate::reasoning;
use crate::server::ServerConfig;

/// The built-in system prompt, replaced by `--system-prompt`.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are a coding agent working in a software \
project on the user's machine. Use the tools to read, search and change files and to run \
commands in the workspace; prefer small, verifiable steps. Be concise and state what you \
changed.";

/// `adapter-rpc`: agent front ends over stdio.
#[derive(Parser)]
#[command(name = "adapter-rpc", version, about)]
pub struct Cli {
    /// The mode.
    #[command(subcommand)]
    pub command: Command,
}

/// Modes of the binary.
#[derive(Subcommand)]
pub enum Command {
    /// Serve zut RPC: newline-delimited JSON commands on stdin, responses and events on stdout.
    Rpc(RpcArgs),
}

/// The flags of `rpc` (zut's, plus `--script` for the scripted provider).
#[derive(Args, Clone, Debug)]
pub struct RpcArgs {
    /// `--provider --model --base-url --api-key --script` (agent-host's, shared by every
    /// front end; rpc has no environment variables of its own for them).
    #[command(flatten)]
    pub provider: ProviderArgs,
    /// Workspace directory (default: the current directory).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Replaces the built-in system prompt.
    #[arg(long)]
    pub system_prompt: Option<String>,
    /// Appends a section to the system prompt (repeatable).
    #[arg(long)]
    pub append_system_prompt: Vec<String>,
    /// Reasoning level: off, minimum, low, medium, high, xhigh, max (aliases accepted).
    #[arg(long)]
    pub reasoning: Option<String>,
    /// Maximum model calls per prompt.
    #[arg(long)]
    pub max_steps: Option<u32>,
    /// Offer no tools to the model.
    #[arg(long)]
    pub no_tools: bool,
    /// Offer only these tools (comma-separated names).
    #[arg(long, value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Do not read AGENTS.md and the like into the system prompt.
    #[arg(long)]
    pub no_context_files: bool,
    /// zut extensions (not supported; ignored with a warning).
    #[arg(long = "ext", short = 'e', hide = true)]
    pub ext: Vec<String>,
    /// zut: disable extensions (accepted, nothing to disable).
    #[arg(long, hide = true)]
    pub no_ext: bool,
    /// zut: no effect in RPC mode (tools run without confirmation).
    #[arg(long, hide = true)]
    pub no_yolo: bool,
}

/// The agent could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// Bad `--provider`, or the provider could not be built (missing key, bad script, …).
    #[error(transparent)]
    Provider(#[from] ProviderArgsError),
    /// Bad `--tools`.
    #[error(transparent)]
    Tools(#[from] agent_tools::ToolSetError),
    /// Bad `--reasoning`.
    #[error("invalid --reasoning {0:?}: {error}", error = reasoning::REASONING_ERROR)]
    Reasoning(String),
    /// `--cwd` is not a directory.
    #[error("--cwd {0}: not a directory")]
    Cwd(String),
    /// The process's working directory is unreadable.
    #[error("cannot read the current directory: {0}")]
    CurrentDir(#[source] std::io::Error),
}

/// RPC runs tools without confirmation, as zut does: every call that the gate would put to a
/// human is allowed once. Hard denials of the gate (a tool's `deny` permission, a sandbox
/// block whose action is `deny`) still stand.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

#[agent_core::async_trait]
impl Approver for AllowAll {
    async fn approve(&self, _request: ApprovalRequest) -> Approval {
        Approval::AllowOnce
    }
}

/// Builds the agent and server configuration `args` describe. The token comes from
/// `ZUTCORE_RPC_TOKEN`.
pub fn build(args: &RpcArgs) -> Result<(Agent, ServerConfig), StartupError> {
    if !args.ext.is_empty() {
        eprintln!("adapter-rpc: extensions are not supported; ignoring --ext");
    }
    if args.no_yolo {
        eprintln!("adapter-rpc: --no-yolo has no effect in rpc mode");
    }
    let (cwd, cwd_display) = match &args.cwd {
        Some(dir) => {
            if !dir.is_dir() {
                return Err(StartupError::Cwd(dir.display().to_string()));
            }
            (dir.clone(), dir.display().to_string())
        }
        None => {
            let dir = std::env::current_dir().map_err(StartupError::CurrentDir)?;
            let display = dir.display().to_string();
            (dir, display)
        }
    };
    let provider = args.provider.build(&ProviderEnv::NONE)?;
    let tools = match args.no_tools {
        true => ToolSet::empty(&cwd),
        false => ToolSet::defaults(&cwd).filter(args.tools.as_deref(), &[])?,
    };
    let mut builder = Agent::builder_arc(provider)
        .system_prompt(
            args.system_prompt
                .clone()
                .unwrap_or_else(|| DEFAULT_SYSTEM_PROMPT.to_string()),
        )
        .tools(tools.into_tools())
        .permission_mode(PermissionMode::Auto)
        .approver_arc(Arc::new(AllowAll))
        .cwd(cwd.clone());
    for extra in &args.append_system_prompt {
        builder = builder.append_system_prompt(extra.clone());
    }
    if !args.no_context_files {
        let found = context_files::load(&cwd);
        for skipped in &found.skipped {
            eprintln!("adapter-rpc: {skipped}");
        }
        for section in found.sections {
            builder = builder.append_system_prompt(section);
        }
    }
    if let Some(model) = &args.provider.model {
        builder = builder.model(model.clone());
    }
    if let Some(level) = &args.reasoning {
        let level = reasoning::parse(level).map_err(|_| StartupError::Reasoning(level.clone()))?;
        builder = builder.reasoning(level);
    }
    if let Some(steps) = args.max_steps {
        builder = builder.max_steps(steps);
    }
    let agent = builder.build();
    let config = ServerConfig {
        token: Token::from_env(),
        cwd: cwd_display,
        extra_models: vec![agent.state().model],
        max_line_bytes: MAX_LINE_BYTES,
    };
    Ok((agent, config))
}
