//! The command line (`adapter-rpc rpc [flags]`, zut's flags) and building the agent from it.

use std::path::PathBuf;
use std::sync::Arc;

use agent_core::{
    permission::{Approval, ApprovalRequest},
    skills::{Skills, SKILL_TOOL},
    tool_source::ToolSource,
    Agent, Approver, PermissionMode,
};
use agent_host::capabilities::{Capabilities, CapabilityError, TASK_TOOL_NAMES};
use agent_host::cli::{CapabilityArgs, ProviderArgs, ProviderArgsError, ProviderEnv};
use agent_host::context_files::{self, ProjectContext};
use agent_host::lsp::{Dialect, Lsp};
use agent_host::session::{
    AgentFactory, AgentSpec, FactoryError, ToolCheck, ToolFilter, ToolFilterError, ToolRequest,
};
use agent_mcp::McpManager;
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
#[command(
    name = "adapter-rpc",
    version,
    about,
    after_help = "MCP OAuth logins: adapter-rpc mcp oauth login|logout|status [server] \
                  [--mcp-config FILE | --url URL] (tokens in $ZUT_HOME/mcp-oauth)"
)]
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
    /// Do not read AGENTS.md files ($ZUT_HOME's, then from / down to the workspace) into
    /// the system prompt.
    #[arg(long)]
    pub no_context_files: bool,
    /// Discover no skills (no listing in the system prompt, no `skill` tool).
    #[arg(long = "no-skill", alias = "no-skills")]
    pub no_skill: bool,
    /// zut extensions (not supported; ignored with a warning).
    #[arg(long = "ext", short = 'e', hide = true)]
    pub ext: Vec<String>,
    /// zut: disable extensions (accepted, nothing to disable).
    #[arg(long, hide = true)]
    pub no_ext: bool,
    /// zut: no effect in RPC mode (tools run without confirmation).
    #[arg(long, hide = true)]
    pub no_yolo: bool,
    /// Our extensions to zut's flags (agent-host's, shared by every front end): `--hooks
    /// FILE`, `--mcp-config FILE`, `--sandbox MODE`, `--sandbox-network`, `--add-dir DIR`,
    /// `--sandbox-fallback`, `--context-window N`, `--auto-compact PERCENT|off`.
    #[command(flatten, next_help_heading = "Extensions to zut's flags")]
    pub capabilities: CapabilityArgs,
}

/// The agent could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// Bad `--provider`, or the provider could not be built (missing key, bad script, …).
    #[error(transparent)]
    Provider(#[from] ProviderArgsError),
    /// Bad `--tools`: a name no built-in tool has.
    #[error("unknown tool {name:?}; available tools: {available}")]
    UnknownTool {
        /// The name.
        name: String,
        /// The built-in tools, comma-separated.
        available: String,
    },
    /// Bad `--reasoning`.
    #[error("invalid --reasoning {0:?}: {error}", error = reasoning::REASONING_ERROR)]
    Reasoning(String),
    /// `--cwd` is not a directory.
    #[error("--cwd {0}: not a directory")]
    Cwd(String),
    /// The process's working directory is unreadable.
    #[error("cannot read the current directory: {0}")]
    CurrentDir(#[source] std::io::Error),
    /// A capability flag or file is unusable (`--hooks`, `--mcp-config`, `--sandbox`, …).
    #[error(transparent)]
    Capability(#[from] CapabilityError),
    /// The agent could not be built.
    #[error(transparent)]
    Agent(#[from] FactoryError),
}

/// What [`build`] sets up: the agent, the server's configuration, and the MCP servers
/// (connected; shut them down before exit).
#[derive(Debug)]
pub struct Built {
    /// The agent.
    pub agent: Agent,
    /// The server's configuration (it lists the MCP servers in `get_state`).
    pub config: ServerConfig,
    /// The MCP servers of `--mcp-config` (empty without).
    pub mcp: McpManager,
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

/// Builds the agent and server configuration `args` describe, and connects the MCP servers
/// of `--mcp-config` (each bounded by its connect timeout; one that fails is skipped with a
/// warning on stderr). The token comes from `ZUTCORE_RPC_TOKEN`. Warnings (skipped hook
/// entries, specialist manifests, MCP servers) go to stderr.
pub async fn build(args: &RpcArgs) -> Result<Built, StartupError> {
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
    // zut's rule: AGENTS.md files and skills, read now (skills: their frontmatter only).
    let mut project = ProjectContext::zut(&context_files::process_env);
    if args.no_context_files {
        project = project.without_instructions();
    }
    if args.no_skill {
        project.skill_roots.clear();
    }
    let instructions = project.instructions(&cwd);
    for warning in &instructions.warnings {
        eprintln!("adapter-rpc: warning: {warning}");
    }
    let found = project.skills(&cwd);
    for warning in &found.warnings {
        eprintln!("adapter-rpc: warning: {warning}");
    }
    let skills = Some(found.skills).filter(|s| !s.is_empty());
    let mut capabilities = Capabilities::load(&args.capabilities, &cwd)?;
    // MCP servers that ask for OAuth: tokens in zut's home (`adapter-rpc mcp oauth login`).
    capabilities.mcp_options.oauth =
        crate::mcp_oauth::oauth_options(&|name| std::env::var(name).ok());
    // zut's `lsp` tool and its diagnostics after a write; nothing starts until used.
    let lsp = capabilities.lsp_session(&cwd);
    let mut tools = builtin_tools(args, &cwd, skills.as_ref(), &lsp)?;
    // `--tools` may name the Task tools, which are not the tool set's.
    let task_named = args
        .tools
        .iter()
        .flatten()
        .any(|name| TASK_TOOL_NAMES.contains(&name.as_str()));
    // `--no-tools` offers nothing; `--tools` names every tool offered.
    if args.no_tools || (args.tools.is_some() && !task_named) {
        capabilities = capabilities.without_specialists();
    }
    tools.extend(capabilities.task_tools());
    for warning in capabilities.warnings() {
        eprintln!("adapter-rpc: warning: {warning}");
    }
    let mut factory = AgentFactory::from_provider(provider, args.provider.model.clone())
        .system_prompt(
            args.system_prompt
                .clone()
                .unwrap_or_else(|| DEFAULT_SYSTEM_PROMPT.to_string()),
        );
    for extra in &args.append_system_prompt {
        factory = factory.append_system_prompt(extra.clone());
    }
    let skills = skills.filter(|_| tools.iter().any(|t| t.name() == SKILL_TOOL));
    let mut spec = AgentSpec::new(cwd.clone(), tools);
    spec.instructions = Some(instructions.instructions).filter(|i| !i.is_empty());
    spec.skills = skills;
    if let Some(level) = &args.reasoning {
        let level = reasoning::parse(level).map_err(|_| StartupError::Reasoning(level.clone()))?;
        spec.reasoning = Some(level);
    }
    spec.max_steps = args.max_steps;
    spec.permission_mode = PermissionMode::Auto;
    spec.approver = Some(Arc::new(AllowAll));
    let mcp = capabilities.connect_mcp(Vec::new()).await?;
    for server in mcp.status() {
        if let agent_mcp::ServerState::Failed { reason } = &server.state {
            eprintln!(
                "adapter-rpc: warning: MCP server {:?} skipped: {reason}",
                server.name
            );
        }
    }
    spec.tool_source = (!mcp.is_empty()).then(|| Arc::new(mcp.clone()) as Arc<dyn ToolSource>);
    let agent = match factory.capabilities(capabilities).agent(spec).await {
        Ok(agent) => agent,
        Err(err) => {
            mcp.shutdown().await;
            return Err(err.into());
        }
    };
    let config = ServerConfig {
        token: Token::from_env(),
        cwd: cwd_display,
        extra_models: vec![agent.state().model],
        max_line_bytes: MAX_LINE_BYTES,
        mcp: mcp.clone(),
    };
    Ok(Built { agent, config, mcp })
}

/// The built-in tools `--no-tools` / `--tools` offer, with the `skill` tool when there are
/// `skills` (the `Task` tools, which `--tools` may name too, come with the capabilities); a
/// `--tools` name that is none of them is an error listing the built-in tools.
fn builtin_tools(
    args: &RpcArgs,
    cwd: &std::path::Path,
    skills: Option<&Skills>,
    lsp: &Lsp,
) -> Result<Vec<Arc<dyn agent_core::Tool>>, StartupError> {
    // zut's tool names and argument shapes (read, write, edit, …).
    let mut request = ToolRequest::with_catalogue(cwd, agent_tools::Catalogue::Zut);
    request
        .extra
        .extend(skills.map(|s| Arc::new(s.tool()) as Arc<dyn agent_core::Tool>));
    request.extra.extend(lsp.tools(Dialect::Zut, &[]));
    request.filter = match (args.no_tools, &args.tools) {
        (true, _) => ToolFilter::nothing(),
        (false, None) => ToolFilter::all(),
        (false, Some(names)) => {
            request.check = Some(ToolCheck::default());
            ToolFilter::only(
                names
                    .iter()
                    .filter(|name| !TASK_TOOL_NAMES.contains(&name.as_str()))
                    .cloned(),
            )
        }
    };
    let tools = request.build().map_err(|err| match err {
        ToolFilterError::UnknownTool { name, available } => StartupError::UnknownTool {
            name,
            available: available.join(", "),
        },
        // Not checked here (names are not validated, nothing is denied).
        ToolFilterError::InvalidName(name) | ToolFilterError::EnabledAndDisabled(name) => {
            StartupError::UnknownTool {
                name,
                available: String::new(),
            }
        }
    })?;
    Ok(lsp.wrap_writers(tools, Dialect::Zut))
}
