//! [`AgentFactory`]: the one place an [`Agent`] is assembled — provider (and the model
//! fallback), tools ([`ToolRequest`], [`ToolFilter`]), system prompt and its appended
//! sections, reasoning, step limit, permission mode and approver, the MCP tool source,
//! and the process's [`Capabilities`] (hooks, sandbox, specialists, context budget, MCP
//! servers). The session host builds every session's agent with it ([`AgentFactory::build`]);
//! a one-agent front end (rpc, exec) builds its agent with [`AgentFactory::agent`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use agent_core::{
    editor::Editor,
    instructions::Instructions,
    sandbox::SandboxSupport,
    session::{SessionError, SessionRecord, SessionStore},
    skills::{Skills, SKILL_TOOL},
    tool_source::ToolSource,
    Agent, Approver, Message, PermissionMode, Provider, ReasoningLevel, Tool,
};
use agent_mcp::{ConfigError as McpConfigError, McpManager, McpServerConfig};
use agent_providers::{build_provider_on, http_for, ConfigError, ProviderConfig, SharedHttp};
use agent_specialists::{BackgroundTasks, SpecialistRegistry, TaskTools};

use super::client::SessionClient;
use super::tool_filter::{ToolFilter, ToolRequest};
use super::types::SessionMeta;
use crate::capabilities::Capabilities;
use crate::context_files::ProjectContext;

/// Building a session's agent failed.
#[derive(Debug, thiserror::Error)]
pub enum FactoryError {
    /// The provider could not be built.
    #[error("cannot build provider {provider}: {source}")]
    Provider {
        /// Provider id.
        provider: String,
        /// The cause.
        source: ConfigError,
    },
    /// The transcript could not be loaded or recorded.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The session's MCP server list is invalid (an entry, or two servers with one name;
    /// names the server). Nothing was started.
    #[error("invalid MCP server configuration: {0}")]
    Mcp(#[from] McpConfigError),
    /// The workspace's own settings file (`.claude/settings.json`) is malformed or holds a
    /// rule the syntax does not allow (names the file, the list and the rule).
    #[error("project settings {0}")]
    Settings(#[from] crate::guards::SettingsError),
}

/// A session's agent and what the session keeps of how it was built.
pub struct BuiltAgent {
    /// The agent.
    pub agent: Agent,
    /// The background tasks of its `Task` tools (empty when it has none).
    pub tasks: BackgroundTasks,
}

/// Where a factory's providers come from.
enum ProviderSource {
    /// A fresh provider per agent (so a scripted provider's script plays per session), all
    /// on one HTTP client (made on first use), so that a session's requests reuse the
    /// connection an earlier session or the model listing opened.
    Config {
        config: ProviderConfig,
        http: OnceLock<SharedHttp>,
    },
    /// One provider, built by the front end, shared by every agent.
    Instance {
        provider: Arc<dyn Provider>,
        model: Option<String>,
    },
}

/// How an agent records its transcript.
pub struct Recording {
    /// The store.
    pub store: Arc<dyn SessionStore>,
    /// The session id the agent records under (hooks' `sessionId`, sub-agents' parent).
    pub session_id: String,
    /// Load the transcript from the store (`true`), or start with `messages`.
    pub resume: bool,
    /// The starting transcript of a new session; recorded as its first record when not
    /// empty.
    pub messages: Vec<Message>,
}

/// What one agent is built of, besides the factory's settings.
pub struct AgentSpec {
    /// The workspace (the agent's working directory).
    pub workspace: PathBuf,
    /// The tools offered (from a [`ToolRequest`]), in order.
    pub tools: Vec<Arc<dyn Tool>>,
    /// The model; `None`: the factory's [`default_model`](AgentFactory::default_model).
    pub model: Option<String>,
    /// The reasoning level; `None`: the agent's default.
    pub reasoning: Option<ReasoningLevel>,
    /// Maximum model calls per prompt; `None`: the agent's default.
    pub max_steps: Option<u32>,
    /// The permission mode.
    pub permission_mode: PermissionMode,
    /// Who answers permission prompts; `None`: the agent's default.
    pub approver: Option<Arc<dyn Approver>>,
    /// More tools, listed anew before each model call (the MCP servers').
    pub tool_source: Option<Arc<dyn ToolSource>>,
    /// What the kernel lets the sandbox enforce, in place of the tools' own probe.
    pub sandbox_support: Option<SandboxSupport>,
    /// Where tool output over the budget spills; `None`: the agent's default.
    pub spill_dir: Option<PathBuf>,
    /// The session the agent records to, when it has one.
    pub recording: Option<Recording>,
    /// The instructions put in its system prompt (see [`ProjectContext`]).
    pub instructions: Option<Instructions>,
    /// Its skills: listed in the system prompt; the `skill` tool is added unless `tools`
    /// has it (a front end that filters tools adds [`Skills::tool`] to `tools` itself).
    pub skills: Option<Skills>,
    /// The client's text buffers and terminals its tools use (none: the local disk).
    pub editor: Editor,
}

impl AgentSpec {
    /// An agent in `workspace` offering `tools`, with every other setting the default
    /// (mode [`PermissionMode::Auto`]).
    pub fn new(workspace: impl Into<PathBuf>, tools: Vec<Arc<dyn Tool>>) -> Self {
        Self {
            workspace: workspace.into(),
            tools,
            model: None,
            reasoning: None,
            max_steps: None,
            permission_mode: PermissionMode::Auto,
            approver: None,
            tool_source: None,
            sandbox_support: None,
            spill_dir: None,
            recording: None,
            instructions: None,
            skills: None,
            editor: Editor::none(),
        }
    }
}

/// Builds agents: for the session host one per session (one provider instance per
/// session, all on one HTTP client; the default tools of the session's workspace minus the
/// disallowed ones; the session's mode, model and thought level), for a one-agent front end
/// its one agent.
pub struct AgentFactory {
    provider: ProviderSource,
    disallowed_tools: Vec<String>,
    extra_tools: Vec<Arc<dyn Tool>>,
    system_prompt: Option<String>,
    appended: Vec<String>,
    capabilities: Option<Arc<Capabilities>>,
    project: Option<Arc<ProjectContext>>,
    client: Option<Arc<dyn SessionClient>>,
}

impl std::fmt::Debug for AgentFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentFactory")
            .field("provider", &self.provider_id())
            .field("model", &self.configured_model())
            .field("disallowed_tools", &self.disallowed_tools)
            .field(
                "extra_tools",
                &self
                    .extra_tools
                    .iter()
                    .map(|t| t.name())
                    .collect::<Vec<_>>(),
            )
            .field("capabilities", &self.capabilities)
            .field("project", &self.project)
            .finish()
    }
}

/// Maps ZCode / Claude-style tool names to this project's names (`Bash` → `bash`, …);
/// other names are returned unchanged.
pub fn canonical_tool_name(name: &str) -> String {
    let mapped = match name {
        "Bash" => "bash",
        "Read" => "read_file",
        "Write" => "write_file",
        "Edit" | "MultiEdit" => "edit_file",
        "LS" | "List" => "list_dir",
        "Glob" => "glob",
        "Grep" => "grep",
        "TodoWrite" | "Plan" => "plan",
        "AskUserQuestion" => "ask_user",
        "ExitPlanMode" => "exit_plan_mode",
        other => other,
    };
    mapped.to_string()
}

impl AgentFactory {
    /// A factory for `provider`: a fresh provider per agent.
    pub fn new(provider: ProviderConfig) -> Self {
        Self::with_source(ProviderSource::Config {
            config: provider,
            http: OnceLock::new(),
        })
    }

    /// A factory whose agents share `provider` (built by the front end, which words its
    /// own errors), on `model` unless an agent names its own.
    pub fn from_provider(provider: Arc<dyn Provider>, model: Option<String>) -> Self {
        Self::with_source(ProviderSource::Instance { provider, model })
    }

    fn with_source(provider: ProviderSource) -> Self {
        Self {
            provider,
            disallowed_tools: Vec::new(),
            extra_tools: Vec::new(),
            system_prompt: None,
            appended: Vec::new(),
            capabilities: None,
            project: None,
            client: None,
        }
    }

    /// What the front end's client lends each session (an editor's buffers and terminals,
    /// a way to ask the user for its MCP servers); see [`SessionClient`].
    pub fn session_client(mut self, client: Arc<dyn SessionClient>) -> Self {
        self.client = Some(client);
        self
    }

    /// Where every session's agent finds the project's instructions, skills and commands
    /// (see [`crate::context_files`]): [`AgentFactory::build`] reads the instructions and
    /// discovers the skills (their frontmatter) of the session's workspace when it builds
    /// the session's agent, logging what it skipped. Without this call there are none.
    pub fn project_context(mut self, context: ProjectContext) -> Self {
        self.project = Some(Arc::new(context));
        self
    }

    /// The rule set with [`AgentFactory::project_context`], if any (the commands of a
    /// session's workspace are read through it).
    pub fn project(&self) -> Option<&ProjectContext> {
        self.project.as_deref()
    }

    /// Applies `capabilities` to every session's agent: the hooks, the sandbox policy and
    /// the context settings ([`Capabilities::apply_without_tasks`]), `Task` tools over the
    /// specialists with a handle on each session's background tasks, and the MCP servers
    /// of `--mcp-config`, which each session connects (with its own servers) in its
    /// workspace. Without this call an agent is built with none of them (and unconfined:
    /// a front end passes the capabilities so the default sandbox applies).
    pub fn capabilities(mut self, capabilities: Capabilities) -> Self {
        self.capabilities = Some(Arc::new(capabilities));
        self
    }

    /// The capabilities applied to every session, if any.
    pub fn capability_set(&self) -> Option<&Capabilities> {
        self.capabilities.as_deref()
    }

    /// Connects the MCP servers of a session in `workspace`: the capabilities' servers
    /// (`--mcp-config`) and the session's own, concurrently, each bounded by the connect
    /// timeout; stdio servers without their own `cwd` start in the workspace. A server that
    /// fails is skipped (see [`McpManager::status`]). With no server at all nothing
    /// starts and this returns at once. An invalid list (an entry, a name used twice) is
    /// an error and starts nothing.
    pub async fn connect_mcp(
        &self,
        workspace: &Path,
        session_servers: Vec<McpServerConfig>,
    ) -> Result<McpManager, FactoryError> {
        self.connect_session_mcp(None, workspace, session_servers)
            .await
    }

    /// [`connect_mcp`](Self::connect_mcp) for session `session_id`: its servers' questions
    /// and authorization URLs go to the user through the [`SessionClient`], when it has a
    /// way.
    pub async fn connect_session_mcp(
        &self,
        session_id: Option<&str>,
        workspace: &Path,
        session_servers: Vec<McpServerConfig>,
    ) -> Result<McpManager, FactoryError> {
        let (mut servers, mut options) = match &self.capabilities {
            Some(caps) => (caps.mcp_servers.clone(), caps.mcp_options.clone()),
            None => (Vec::new(), agent_mcp::McpOptions::default()),
        };
        servers.extend(session_servers);
        if servers.is_empty() {
            return Ok(McpManager::empty());
        }
        options.cwd = PathBuf::from(workspace);
        if let (Some(client), Some(id)) = (&self.client, session_id) {
            if let Some(elicitor) = client.elicitor(id) {
                options.elicitor = Some(elicitor);
            }
            if let Some(prompt) = client.authorization_prompt(id) {
                options.oauth.prompt = Some(prompt);
            }
        }
        Ok(McpManager::connect(servers, options).await?)
    }

    /// The specialists of a session in `workspace`: the capabilities' registry when the
    /// workspace is the one it was loaded for, else the same sources loaded for this
    /// workspace (its project manifests); none without capabilities or when they have
    /// none.
    fn specialists(&self, workspace: &Path) -> Option<Arc<SpecialistRegistry>> {
        let caps = self.capabilities.as_ref()?;
        if caps.specialists.is_empty() {
            return None;
        }
        if caps.cwd == workspace {
            return Some(caps.specialists.clone());
        }
        let registry = SpecialistRegistry::load_for_workspace(workspace);
        for error in registry.errors() {
            tracing::warn!(workspace = %workspace.display(), %error, "skipped specialist manifest");
        }
        Some(Arc::new(registry))
    }

    /// Tools never offered (names in this project's or ZCode's spelling; unknown names are
    /// ignored, as `--disallowed-tools` names tools of other agents too).
    pub fn disallowed_tools(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.disallowed_tools
            .extend(names.into_iter().map(|n| canonical_tool_name(&n)));
        self
    }

    /// Adds a tool to every session (after the defaults; replaces one of the same name).
    pub fn extra_tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.extra_tools.push(tool);
        self
    }

    /// Replaces the system prompt.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Appends a section to the system prompt (after a blank line; repeatable).
    pub fn append_system_prompt(mut self, section: impl Into<String>) -> Self {
        self.appended.push(section.into());
        self
    }

    /// The provider id agents use.
    pub fn provider_id(&self) -> String {
        match &self.provider {
            ProviderSource::Config { config, .. } => config.id.to_string(),
            ProviderSource::Instance { provider, .. } => provider.id().to_string(),
        }
    }

    /// The model configured (`--model`), if any.
    pub fn configured_model(&self) -> Option<&str> {
        match &self.provider {
            ProviderSource::Config { config, .. } => config.model.as_deref(),
            ProviderSource::Instance { model, .. } => model.as_deref(),
        }
    }

    /// A provider: a fresh one, or the shared instance.
    pub fn provider(&self) -> Result<Arc<dyn Provider>, FactoryError> {
        match &self.provider {
            ProviderSource::Config { config, http } => {
                let error = |source| FactoryError::Provider {
                    provider: config.id.to_string(),
                    source,
                };
                let http = match http.get() {
                    Some(http) => http,
                    None => {
                        let fresh = http_for(config).map_err(error)?;
                        http.get_or_init(|| fresh)
                    }
                };
                build_provider_on(config, http).map_err(error)
            }
            ProviderSource::Instance { provider, .. } => Ok(provider.clone()),
        }
    }

    /// The model an agent starts on when it names none: the configured one, else the
    /// provider's first, else `"default"`.
    pub fn default_model(&self, provider: &dyn Provider) -> String {
        self.configured_model()
            .map(str::to_string)
            .or_else(|| provider.models().first().map(|m| m.id.clone()))
            .unwrap_or_else(|| "default".to_string())
    }

    /// The tools of a session in `workspace` (the defaults, the factory's extra tools, the
    /// session's own and, with capabilities, its language-server tools), filtered by the
    /// factory's and the session's lists (names in this project's or ZCode's spelling;
    /// unknown names are ignored); with capabilities, the file-writing tools append the
    /// changed file's errors ([`crate::lsp`]).
    pub fn tools(
        &self,
        workspace: &Path,
        allow: Option<&[String]>,
        deny: &[String],
        session_tools: Vec<Arc<dyn Tool>>,
    ) -> Vec<Arc<dyn Tool>> {
        let filter = ToolFilter::lists(allow.map(<[String]>::to_vec), deny.to_vec())
            .canonical()
            .deny(self.disallowed_tools.iter().cloned());
        let mut request = ToolRequest::new(workspace);
        // The session's language servers (with the capabilities; nothing starts until used).
        let lsp = self.capabilities.as_ref().map(|c| c.lsp_session(workspace));
        let lsp_tools = lsp
            .iter()
            .flat_map(|l| l.tools(crate::lsp::Dialect::Sdk, &[]));
        request.extra = self
            .extra_tools
            .iter()
            .cloned()
            .chain(session_tools)
            .chain(lsp_tools)
            .collect();
        request.filter = filter;
        // No names are checked: the build cannot fail.
        let tools = request.build().unwrap_or_default();
        match lsp {
            Some(lsp) => lsp.wrap_writers(tools, crate::lsp::Dialect::Sdk),
            None => tools,
        }
    }

    /// The system prompt of an agent in `workspace`, without the appended sections.
    fn system_text(&self, workspace: &Path) -> String {
        match &self.system_prompt {
            Some(prompt) => prompt.clone(),
            None => format!(
                "You are a coding agent working in the workspace {}. Use the tools to inspect \
                 and change files; keep answers short and concrete.",
                workspace.display()
            ),
        }
    }

    /// Builds one agent: the provider, `spec.model` (else [`default_model`](Self::default_model)),
    /// the system prompt and its appended sections, the tools, the mode and approver, the
    /// capabilities' hooks, sandbox policy and context settings
    /// ([`Capabilities::apply_without_tasks`]: `Task` tools are among `spec.tools` when
    /// offered), the tool source, and the recording. Fails when the provider cannot be built
    /// or the transcript cannot be loaded or recorded.
    pub async fn agent(&self, spec: AgentSpec) -> Result<Agent, FactoryError> {
        let provider = self.provider()?;
        let model = spec
            .model
            .unwrap_or_else(|| self.default_model(provider.as_ref()));
        let mut builder = Agent::builder(provider)
            .model(model)
            .system_prompt(self.system_text(&spec.workspace));
        for section in &self.appended {
            builder = builder.append_system_prompt(section.clone());
        }
        builder = builder
            .tools(spec.tools)
            .permission_mode(spec.permission_mode)
            .cwd(&spec.workspace);
        if let Some(level) = spec.reasoning {
            builder = builder.reasoning(level);
        }
        if let Some(steps) = spec.max_steps {
            builder = builder.max_steps(steps);
        }
        if let Some(approver) = spec.approver {
            builder = builder.approver(approver);
        }
        if let Some(caps) = &self.capabilities {
            builder = caps.apply_without_tasks(builder);
            let project = caps.guards.project_rules(&spec.workspace)?;
            if !project.is_empty() {
                builder = builder.permission_rules(project);
            }
        }
        if let Some(source) = spec.tool_source {
            builder = builder.tool_source(source);
        }
        if let Some(support) = spec.sandbox_support {
            builder = builder.sandbox_support(support);
        }
        if let Some(dir) = spec.spill_dir {
            builder = builder.spill_dir(dir);
        }
        if let Some(instructions) = spec.instructions {
            builder = builder.instructions(instructions);
        }
        if let Some(skills) = spec.skills {
            builder = builder.skills(skills);
        }
        if !spec.editor.is_empty() {
            builder = builder.editor(spec.editor);
        }
        let builder = match spec.recording {
            None => builder,
            Some(Recording {
                store,
                session_id,
                resume: true,
                ..
            }) => builder.resume(store, session_id).await?,
            Some(Recording {
                store,
                session_id,
                resume: false,
                messages,
            }) => {
                if !messages.is_empty() {
                    store
                        .append(
                            &session_id,
                            &SessionRecord::Replaced {
                                messages: messages.clone(),
                            },
                        )
                        .await?;
                }
                builder.messages(messages).session(store, session_id)
            }
        };
        Ok(builder.build())
    }

    /// The instructions and the skills (when there is one) of a session in `workspace`,
    /// by [`AgentFactory::project_context`]; what was skipped is logged.
    fn project_parts(&self, workspace: &Path) -> (Option<Instructions>, Option<Skills>) {
        let Some(project) = &self.project else {
            return (None, None);
        };
        let loaded = project.instructions(workspace);
        for warning in &loaded.warnings {
            tracing::warn!(workspace = %workspace.display(), "{warning}");
        }
        let found = project.skills(workspace);
        for warning in &found.warnings {
            tracing::warn!(workspace = %workspace.display(), "{warning}");
        }
        let instructions = Some(loaded.instructions).filter(|i| !i.is_empty());
        let skills = Some(found.skills).filter(|s| !s.is_empty());
        (instructions, skills)
    }

    /// Builds the agent of session `meta`, recording to `store`, with `session_tools`
    /// (tools bound to this session) besides the defaults, the capabilities' (hooks,
    /// sandbox, context settings, `Task` tools) and the tools of `mcp` (its tool source,
    /// when it has servers). Tool output over the budget spills to `spill_dir` (the
    /// session's directory). With `resume`, the transcript is loaded from the store;
    /// otherwise it starts as `messages` (which are recorded as the session's first record
    /// when not empty).
    #[allow(clippy::too_many_arguments)]
    pub async fn build(
        &self,
        meta: &SessionMeta,
        approver: Arc<dyn Approver>,
        store: Arc<dyn SessionStore>,
        session_tools: Vec<Arc<dyn Tool>>,
        mcp: &McpManager,
        spill_dir: Option<PathBuf>,
        resume: bool,
        messages: Vec<Message>,
    ) -> Result<BuiltAgent, FactoryError> {
        let workspace = Path::new(&meta.workspace_path);
        let (task_tools, tasks) = match self.specialists(workspace) {
            Some(registry) => TaskTools::new(registry)
                .base_system_prompt(self.system_text(workspace))
                .build_with_tasks(),
            None => (Vec::new(), BackgroundTasks::default()),
        };
        let mut session_tools = session_tools;
        session_tools.extend(task_tools);
        let (instructions, skills) = self.project_parts(workspace);
        if let Some(skills) = &skills {
            session_tools.push(Arc::new(skills.tool()));
        }
        let tools = self.tools(
            workspace,
            meta.tool_allowlist.as_deref(),
            &meta.tool_denylist,
            session_tools,
        );
        // Listed only where the filters left the tool that loads them.
        let skills = skills.filter(|_| tools.iter().any(|t| t.name() == SKILL_TOOL));
        let mut spec = AgentSpec::new(workspace, tools);
        spec.instructions = instructions;
        spec.skills = skills;
        spec.model = Some(meta.model.clone());
        spec.reasoning = Some(meta.thought_level);
        spec.permission_mode = meta.mode.permission_mode();
        spec.approver = Some(approver);
        spec.tool_source = (!mcp.is_empty()).then(|| Arc::new(mcp.clone()) as Arc<dyn ToolSource>);
        spec.spill_dir = spill_dir;
        if let Some(client) = &self.client {
            spec.editor = client.editor(&meta.session_id);
        }
        spec.recording = Some(Recording {
            store,
            session_id: meta.session_id.clone(),
            resume,
            messages,
        });
        Ok(BuiltAgent {
            agent: self.agent(spec).await?,
            tasks,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zcode_tool_names_map_to_ours() {
        assert_eq!(canonical_tool_name("Bash"), "bash");
        assert_eq!(canonical_tool_name("CronCreate"), "CronCreate");
    }
}
