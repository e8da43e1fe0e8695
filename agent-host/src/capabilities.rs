//! The SDK's capabilities as one host layer every front end applies the same way: command
//! hooks (`--hooks FILE`), MCP servers (`--mcp-config FILE`), the OS sandbox (`--sandbox`,
//! `--sandbox-network`, `--add-dir`, `--sandbox-fallback`), specialists (the `Task`
//! tools), the context budget (`--context-window`, `--auto-compact`), language servers
//! (`--lsp-config FILE`, `--no-lsp-diagnostics`; [`crate::lsp`]) and telemetry.
//!
//! [`CapabilityArgs`] holds the flags (clap `Args` to
//! flatten, or filled by hand); [`Capabilities::load`] reads and checks everything that can
//! be checked without starting anything (the hooks file, the MCP file, the sandbox and
//! context flags, the specialist manifests); [`Capabilities::apply`] puts it on an
//! [`AgentBuilder`]; [`Capabilities::connect_mcp`] starts the MCP servers (none configured:
//! nothing starts, nothing waits).
//!
//! ```no_run
//! # async fn demo(provider: std::sync::Arc<dyn agent_core::Provider>)
//! # -> Result<(), agent_host::capabilities::CapabilityError> {
//! use agent_core::Agent;
//! use agent_host::capabilities::Capabilities;
//! use agent_host::cli::CapabilityArgs;
//!
//! let cwd = std::env::current_dir().unwrap();
//! let _otel = agent_host::capabilities::init_otel("my-front-end");
//! let caps = Capabilities::load(&CapabilityArgs::default(), &cwd)?;
//! for warning in caps.warnings() {
//!     eprintln!("my-front-end: {warning}");
//! }
//! let mcp = caps.connect_mcp(Vec::new()).await?;
//! let agent = caps.apply_mcp(caps.apply(Agent::builder(provider).cwd(&cwd)), &mcp).build();
//! // … serve; before exit:
//! mcp.shutdown().await;
//! # drop(agent);
//! # Ok(()) }
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_core::sandbox::{ParseSandboxError, SandboxPolicy};
use agent_core::{context::AutoCompact, hooks::Hooks, AgentBuilder, Tool};
use agent_hooks::{HookError, HookOptions};
use agent_mcp::{ConfigError, McpManager, McpOptions, McpServerConfig};
use agent_specialists::{SpecialistRegistry, TaskTools};

use crate::cli::CapabilityArgs;

pub use agent_otel::OtelGuard;
/// The names of the tools [`Capabilities::task_tools`] makes (`Task`, `TaskOutput`,
/// `TaskStop`), for front ends whose tool filters (`--tools`) may name them.
pub use agent_specialists::TASK_TOOL_NAMES;

/// A capability flag or file that is not usable. Each variant names the flag or file.
#[derive(Debug, thiserror::Error)]
pub enum CapabilityError {
    /// `--hooks FILE` could not be read or is not a hooks file of either format.
    #[error("--hooks: {0}")]
    Hooks(#[from] HookError),
    /// `--mcp-config FILE` could not be read.
    #[error("--mcp-config: reading {}: {source}", path.display())]
    McpRead {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `--mcp-config FILE` is not a valid `{"mcpServers": {...}}` file, or an MCP server
    /// configuration is invalid (names the server, field and JSON path).
    #[error("--mcp-config {}: {source}", path.display())]
    McpConfig {
        /// The file (empty for servers that did not come from a file).
        path: PathBuf,
        /// What is wrong.
        source: ConfigError,
    },
    /// An MCP server list given to [`Capabilities::connect_mcp`] is invalid.
    #[error("MCP configuration: {0}")]
    Mcp(#[source] ConfigError),
    /// `--sandbox`, `--sandbox-network` or `--sandbox-fallback` has a value that is not
    /// one of the accepted ones (the error names the flag).
    #[error(transparent)]
    Sandbox(#[from] ParseSandboxError),
    /// `--context-window` is not a positive token count.
    #[error("--context-window: {0}")]
    ContextWindow(#[source] agent_core::context::ParseContextError),
    /// `--auto-compact` is not a percentage or `off`.
    #[error("--auto-compact: {0}")]
    AutoCompact(#[source] agent_core::context::ParseContextError),
    /// `--lsp-config FILE` could not be read or is not a language-server configuration.
    #[error("--lsp-config {0}")]
    Lsp(#[from] agent_lsp::ConfigError),
    /// `--settings FILE` (a rule the syntax does not allow, a malformed file: names the file
    /// and the rule), `--max-budget-usd` or `--fallback-model`.
    #[error(transparent)]
    Guards(#[from] crate::guards::GuardsError),
}

/// Everything the capability flags configure, loaded and checked, nothing started yet.
///
/// The fields are public so a front end can add what its host reads itself (Zero's own
/// hooks and MCP config in `exec`, per-session MCP servers) before applying.
#[derive(Clone)]
pub struct Capabilities {
    /// The workspace everything was resolved against.
    pub cwd: PathBuf,
    /// Command hooks, in the order they are consulted (`--hooks FILE` first).
    pub hooks: Vec<Arc<dyn Hooks>>,
    /// MCP servers from `--mcp-config` (validated, not connected).
    pub mcp_servers: Vec<McpServerConfig>,
    /// How MCP servers are connected and called (stdio servers start in [`Self::cwd`]).
    pub mcp_options: McpOptions,
    /// The sandbox policy (default `workspace-write`, network denied).
    pub sandbox: SandboxPolicy,
    /// Specialists for the `Task` tools: the built-ins, the user's and the project's
    /// manifests. Empty: no `Task` tools.
    pub specialists: Arc<SpecialistRegistry>,
    /// `--context-window`, when given.
    pub context_window: Option<u64>,
    /// `--auto-compact`, when given.
    pub auto_compact: Option<AutoCompact>,
    /// The language servers (`--lsp-config`, `--no-lsp-diagnostics`; see [`crate::lsp`]).
    pub lsp: agent_lsp::LspConfig,
    /// Permission rules, the spend cap and the fallback model (`--settings`,
    /// `--max-budget-usd`, `--fallback-model`, the project's settings; [`crate::guards`]).
    pub guards: crate::guards::Guards,
    /// What was skipped while loading (parts of the hooks file, specialist manifests), one
    /// line each, for stderr or the protocol's warning form.
    pub warnings: Vec<String>,
}

impl std::fmt::Debug for Capabilities {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capabilities")
            .field("cwd", &self.cwd)
            .field("hooks", &self.hooks.len())
            .field(
                "mcp_servers",
                &self
                    .mcp_servers
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("sandbox", &self.sandbox)
            .field("specialists", &self.specialists.names())
            .field("context_window", &self.context_window)
            .field("auto_compact", &self.auto_compact)
            .field("lsp_servers", &self.lsp.servers.len())
            .field("guards", &self.guards)
            .field("warnings", &self.warnings)
            .finish()
    }
}

impl Capabilities {
    /// Loads what `args` configure for the workspace `cwd`, with default hook options
    /// ([`HookOptions::new`]). See [`Self::load_with`].
    pub fn load(args: &CapabilityArgs, cwd: &Path) -> Result<Self, CapabilityError> {
        Self::load_with(args, &HookOptions::new(cwd))
    }

    /// Loads what `args` configure, for the workspace `hook_options.cwd`:
    ///
    /// - `--hooks FILE` with [`agent_hooks::load_file`] (either format, by shape); its
    ///   diagnostics go to [`Self::warnings`];
    /// - `--mcp-config FILE` with [`agent_mcp::parse_mcp_config_file`], each server
    ///   validated (nothing is started);
    /// - the sandbox flags with [`SandboxPolicy::from_flags`] (relative `--add-dir`s resolve
    ///   against the workspace when commands run);
    /// - `--context-window` and `--auto-compact`;
    /// - the specialists with [`SpecialistRegistry::load_for_workspace`]; bad manifests are
    ///   warnings here (a host that refuses to start on
    ///   [`SpecialistRegistry::fatal_error`], as Zero's `exec`, checks it itself).
    pub fn load_with(
        args: &CapabilityArgs,
        hook_options: &HookOptions,
    ) -> Result<Self, CapabilityError> {
        let cwd = hook_options.cwd.clone();
        let mut warnings = Vec::new();

        let sandbox = SandboxPolicy::from_flags(
            args.sandbox.as_deref(),
            args.sandbox_network.as_deref(),
            args.add_dir.iter().cloned(),
            args.sandbox_fallback.as_deref(),
        )?;
        let context_window = args
            .context_window
            .as_deref()
            .map(agent_core::context::parse_context_window)
            .transpose()
            .map_err(CapabilityError::ContextWindow)?;
        let auto_compact = args
            .auto_compact
            .as_deref()
            .map(str::parse::<AutoCompact>)
            .transpose()
            .map_err(CapabilityError::AutoCompact)?;

        let mut hooks = Vec::new();
        if let Some(path) = &args.hooks {
            let loaded = agent_hooks::load_file(path, hook_options)?;
            warnings.extend(
                loaded
                    .diagnostics
                    .iter()
                    .map(|d| format!("hooks file {}: {d}", path.display())),
            );
            hooks.push(loaded.hooks);
        }

        let mcp_servers = match &args.mcp_config {
            Some(path) => read_mcp_config(path)?,
            None => Vec::new(),
        };

        let mut lsp = match &args.lsp_config {
            Some(path) => agent_lsp::LspConfig::from_file(path)?,
            None => agent_lsp::LspConfig::builtin(),
        };
        if args.no_lsp_diagnostics {
            lsp.diagnostics_after_edits = false;
        }

        let guards = crate::guards::Guards::load(
            args.settings.as_deref(),
            args.max_budget_usd.as_deref(),
            args.fallback_model.as_deref(),
        )?;

        let specialists = SpecialistRegistry::load_for_workspace(&cwd);
        warnings.extend(
            specialists
                .errors()
                .iter()
                .map(|e| format!("skipped specialist manifest {e}")),
        );
        warnings.extend(
            specialists
                .warnings()
                .into_iter()
                .map(|w| format!("specialists: {w}")),
        );

        Ok(Self {
            mcp_options: McpOptions::new(&cwd),
            cwd,
            hooks,
            mcp_servers,
            sandbox,
            specialists: Arc::new(specialists),
            context_window,
            auto_compact,
            lsp,
            guards,
            warnings,
        })
    }

    /// What was skipped while loading, one line each.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Drops the specialists, so [`Self::apply`] adds no `Task` tools (for `--no-tools`).
    pub fn without_specialists(mut self) -> Self {
        self.specialists = Arc::new(SpecialistRegistry::empty());
        self
    }

    /// The `Task`, `TaskOutput` and `TaskStop` tools over [`Self::specialists`] (none when
    /// there are no specialists).
    pub fn task_tools(&self) -> Vec<Arc<dyn Tool>> {
        TaskTools::new(self.specialists.clone()).build()
    }

    /// [`Self::task_tools`] whose sub-agents start from `base_system_prompt` (the calling
    /// agent's), their manifests' prompts after it.
    pub fn task_tools_under(&self, base_system_prompt: &str) -> Vec<Arc<dyn Tool>> {
        TaskTools::new(self.specialists.clone())
            .base_system_prompt(base_system_prompt)
            .build()
    }

    /// Puts the capabilities on `builder`: the hooks, the sandbox policy, the `Task` tools
    /// (when there are specialists) and the context settings that were given. MCP tools are
    /// added by [`Self::apply_mcp`] once connected.
    ///
    /// A host that needs a handle on background tasks (ZCode) builds its Task tools with
    /// [`TaskTools::build_with_tasks`] and calls [`Self::apply_without_tasks`] instead.
    pub fn apply(&self, builder: AgentBuilder) -> AgentBuilder {
        self.apply_without_tasks(builder).tools(self.task_tools())
    }

    /// [`Self::apply`] without the `Task` tools. The guards of the flags go on too
    /// ([`crate::guards::Guards::apply`]); the rules of a workspace's own settings files are
    /// added where the agent's workspace is known ([`crate::session::AgentFactory::agent`]).
    pub fn apply_without_tasks(&self, mut builder: AgentBuilder) -> AgentBuilder {
        for hooks in &self.hooks {
            builder = builder.hook(hooks.clone());
        }
        builder = builder.sandbox(self.sandbox.clone());
        if let Some(window) = self.context_window {
            builder = builder.context_window(window);
        }
        if let Some(auto) = self.auto_compact {
            builder = builder.auto_compact(auto);
        }
        self.guards.apply(builder)
    }

    /// Offers the tools of `manager` to the agent (nothing when it has no servers).
    pub fn apply_mcp(&self, builder: AgentBuilder, manager: &McpManager) -> AgentBuilder {
        match manager.is_empty() {
            true => builder,
            false => builder.tool_source(manager.clone()),
        }
    }

    /// Connects the `--mcp-config` servers and `extra` ones (a session's own), concurrently,
    /// each bounded by the connect timeout of [`Self::mcp_options`]; a server that fails is
    /// skipped with a warning (see [`McpManager::status`]). With no servers at all this
    /// returns an empty manager at once. An invalid list (two servers with one name) is an
    /// error and starts nothing.
    ///
    /// Call [`McpManager::shutdown`] before exit.
    pub async fn connect_mcp(
        &self,
        extra: Vec<McpServerConfig>,
    ) -> Result<McpManager, CapabilityError> {
        let servers: Vec<McpServerConfig> = self.mcp_servers.iter().cloned().chain(extra).collect();
        if servers.is_empty() {
            return Ok(McpManager::empty());
        }
        McpManager::connect(servers, self.mcp_options.clone())
            .await
            .map_err(CapabilityError::Mcp)
    }
}

/// Reads and validates a `{"mcpServers": {...}}` file (Claude Code's and Cursor's format).
pub fn read_mcp_config(path: &Path) -> Result<Vec<McpServerConfig>, CapabilityError> {
    let text = std::fs::read_to_string(path).map_err(|source| CapabilityError::McpRead {
        path: path.to_path_buf(),
        source,
    })?;
    let config_error = |source| CapabilityError::McpConfig {
        path: path.to_path_buf(),
        source,
    };
    let servers = agent_mcp::parse_mcp_config_file(&text).map_err(config_error)?;
    for server in &servers {
        server.validate().map_err(config_error)?;
    }
    Ok(servers)
}

/// Starts OpenTelemetry export for the binary `service_name` when
/// `OTEL_EXPORTER_OTLP_ENDPOINT` is set ([`agent_otel::init`]); keep the guard until the
/// end of `main`. A setup failure is a warning on stderr, never fatal; without the variable
/// this does nothing. A binary with its own `tracing` subscriber adds
/// [`agent_otel::layer`] to it instead.
pub fn init_otel(service_name: &str) -> Option<OtelGuard> {
    match agent_otel::init(service_name) {
        Ok(guard) => guard,
        Err(err) => {
            eprintln!("{service_name}: warning: tracing export disabled: {err}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::CapabilityArgs;
    use agent_core::sandbox::{NetworkAccess, SandboxFallback, SandboxMode};
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        caps: CapabilityArgs,
    }

    fn parse(args: &[&str]) -> CapabilityArgs {
        Cli::try_parse_from(std::iter::once("bin").chain(args.iter().copied()))
            .expect("parses")
            .caps
    }

    fn tools_of(builder: AgentBuilder) -> Vec<String> {
        builder
            .build()
            .tool_specs()
            .iter()
            .map(|s| s.name.clone())
            .collect()
    }

    fn builder() -> AgentBuilder {
        agent_core::Agent::builder(agent_providers::scripted::ScriptedProvider::demo())
    }

    #[test]
    fn defaults_confine_to_the_workspace_and_start_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let caps = Capabilities::load(&parse(&[]), dir.path()).expect("loads");
        assert_eq!(caps.sandbox.mode, SandboxMode::WorkspaceWrite);
        assert_eq!(caps.sandbox.network, NetworkAccess::Deny);
        assert!(caps.hooks.is_empty());
        assert!(caps.mcp_servers.is_empty());
        assert!(caps.context_window.is_none() && caps.auto_compact.is_none());
        // The built-in specialists: worker, explorer, code-review.
        assert!(caps.specialists.get("explorer").is_some());
        let agent = caps.apply(builder().cwd(dir.path())).build();
        assert_eq!(agent.sandbox().mode, SandboxMode::WorkspaceWrite);
        let names: Vec<String> = agent.tool_specs().iter().map(|s| s.name.clone()).collect();
        assert!(names.iter().any(|n| n == "Task"), "{names:?}");
    }

    #[test]
    fn every_flag_is_parsed_into_the_policy_and_settings() {
        let dir = tempfile::tempdir().expect("tempdir");
        let args = parse(&[
            "--sandbox",
            "read-only",
            "--sandbox-network",
            "allow",
            "--add-dir",
            "extra",
            "--add-dir",
            "/abs",
            "--sandbox-fallback",
            "refuse",
            "--context-window",
            "200k",
            "--auto-compact",
            "70%",
        ]);
        let caps = Capabilities::load(&args, dir.path()).expect("loads");
        assert_eq!(caps.sandbox.mode, SandboxMode::ReadOnly);
        assert_eq!(caps.sandbox.network, NetworkAccess::Allow);
        assert_eq!(caps.sandbox.fallback, SandboxFallback::Refuse);
        assert_eq!(
            caps.sandbox.writable_roots,
            [PathBuf::from("extra"), PathBuf::from("/abs")]
        );
        assert_eq!(caps.context_window, Some(200_000));
        assert_eq!(caps.auto_compact, Some(AutoCompact::At(70)));
        let agent = caps.apply(builder()).build();
        assert_eq!(agent.context_window(), 200_000);
        assert_eq!(agent.auto_compact(), AutoCompact::At(70));
        assert_eq!(agent.sandbox().mode, SandboxMode::ReadOnly);

        let caps = Capabilities::load(
            &parse(&["--sandbox", "off", "--auto-compact", "off"]),
            dir.path(),
        )
        .expect("loads");
        assert_eq!(caps.sandbox.mode, SandboxMode::Off);
        assert_eq!(caps.auto_compact, Some(AutoCompact::Off));
    }

    #[test]
    fn bad_values_name_their_flag() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cases: [(&[&str], &str); 5] = [
            (&["--sandbox", "nope"], "--sandbox"),
            (&["--sandbox-network", "maybe"], "--sandbox-network"),
            (&["--sandbox-fallback", "x"], "--sandbox-fallback"),
            (&["--context-window", "lots"], "--context-window"),
            (&["--auto-compact", "150"], "--auto-compact"),
        ];
        for (args, flag) in cases {
            let err = Capabilities::load(&parse(args), dir.path()).expect_err("invalid");
            assert!(err.to_string().contains(flag), "{args:?}: {err}");
        }
    }

    #[test]
    fn the_hooks_file_is_loaded_in_either_format_and_errors_name_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let claude = dir.path().join("claude.json");
        std::fs::write(
            &claude,
            r#"{"hooks": {"PreToolUse": [{"matcher": "bash", "hooks": [{"type": "command", "command": "exit 2"}]}]}}"#,
        )
        .expect("write");
        let caps = Capabilities::load(
            &parse(&["--hooks", claude.to_str().expect("utf-8")]),
            dir.path(),
        )
        .expect("loads");
        assert_eq!(caps.hooks.len(), 1);

        let missing = dir.path().join("missing.json");
        let err = Capabilities::load(
            &parse(&["--hooks", missing.to_str().expect("utf-8")]),
            dir.path(),
        )
        .expect_err("missing");
        assert!(matches!(err, CapabilityError::Hooks(_)), "{err}");
        assert!(err.to_string().contains("missing.json"), "{err}");

        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{not json").expect("write");
        let err = Capabilities::load(
            &parse(&["--hooks", bad.to_str().expect("utf-8")]),
            dir.path(),
        )
        .expect_err("bad");
        assert!(err.to_string().starts_with("--hooks: "), "{err}");
    }

    #[test]
    fn the_mcp_file_is_parsed_and_validated_without_starting_anything() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("mcp.json");
        std::fs::write(
            &file,
            r#"{"mcpServers": {
                "files": {"command": "/nonexistent/never-started", "args": ["."]},
                "docs": {"type": "http", "url": "http://127.0.0.1:9/mcp"}
            }}"#,
        )
        .expect("write");
        let caps = Capabilities::load(
            &parse(&["--mcp-config", file.to_str().expect("utf-8")]),
            dir.path(),
        )
        .expect("loads");
        let names: Vec<&str> = caps.mcp_servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["files", "docs"]);
        assert_eq!(caps.mcp_options.cwd, dir.path());

        std::fs::write(&file, r#"{"mcpServers": {"x": {"args": ["no command"]}}}"#).expect("write");
        let err = Capabilities::load(
            &parse(&["--mcp-config", file.to_str().expect("utf-8")]),
            dir.path(),
        )
        .expect_err("invalid");
        assert!(matches!(err, CapabilityError::McpConfig { .. }), "{err}");
        assert!(err.to_string().contains("mcp.json"), "{err}");

        let err = Capabilities::load(
            &parse(&["--mcp-config", "/nonexistent/mcp.json"]),
            dir.path(),
        )
        .expect_err("missing");
        assert!(matches!(err, CapabilityError::McpRead { .. }), "{err}");
    }

    #[tokio::test]
    async fn no_mcp_servers_connect_to_an_empty_manager_at_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let caps = Capabilities::load(&parse(&[]), dir.path()).expect("loads");
        let manager = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            caps.connect_mcp(Vec::new()),
        )
        .await
        .expect("at once")
        .expect("connects");
        assert!(manager.is_empty());
        assert!(manager.status().is_empty());
        let before = tools_of(caps.apply(builder()));
        let after = tools_of(caps.apply_mcp(caps.apply(builder()), &manager));
        assert_eq!(before, after);
    }

    #[tokio::test]
    async fn a_server_that_cannot_start_is_skipped_and_duplicates_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let caps = Capabilities::load(&parse(&[]), dir.path()).expect("loads");
        let manager = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            caps.connect_mcp(vec![McpServerConfig::stdio(
                "ghost",
                "/nonexistent/mcp-server",
            )]),
        )
        .await
        .expect("bounded")
        .expect("connects");
        let status = manager.status();
        assert_eq!(status.len(), 1);
        assert!(manager.tools().is_empty());
        manager.shutdown().await;

        let mut caps = caps;
        caps.mcp_servers = vec![McpServerConfig::stdio("dup", "/nonexistent/a")];
        let err = caps
            .connect_mcp(vec![McpServerConfig::stdio("dup", "/nonexistent/b")])
            .await
            .expect_err("duplicate");
        assert!(matches!(err, CapabilityError::Mcp(_)), "{err}");
    }

    #[test]
    fn without_specialists_there_is_no_task_tool() {
        let dir = tempfile::tempdir().expect("tempdir");
        let caps = Capabilities::load(&parse(&[]), dir.path())
            .expect("loads")
            .without_specialists();
        assert!(caps.task_tools().is_empty());
        assert!(!tools_of(caps.apply(builder())).iter().any(|n| n == "Task"));
    }

    #[test]
    fn a_bad_project_manifest_is_a_warning() {
        let dir = tempfile::tempdir().expect("tempdir");
        let specialists = dir.path().join(".zero").join("specialists");
        std::fs::create_dir_all(&specialists).expect("mkdir");
        std::fs::write(specialists.join("broken.md"), "---\nname: [\n---\nbody\n").expect("write");
        let caps = Capabilities::load(&parse(&[]), dir.path()).expect("loads");
        assert!(
            caps.warnings().iter().any(|w| w.contains("broken.md")),
            "{:?}",
            caps.warnings()
        );
    }
}
