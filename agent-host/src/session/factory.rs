//! [`AgentFactory`]: how a session's [`Agent`] is built — provider, tools, prompt, mode,
//! and the process's [`Capabilities`] (hooks, sandbox, specialists, context budget, MCP
//! servers), applied to every session's agent.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_core::{
    session::{SessionError, SessionRecord, SessionStore},
    Agent, Approver, Message, Provider, Tool,
};
use agent_mcp::{ConfigError as McpConfigError, McpManager, McpServerConfig};
use agent_providers::{build_provider, ConfigError, ProviderConfig, ProviderId};
use agent_specialists::{BackgroundTasks, SpecialistRegistry, TaskTools};
use agent_tools::ToolSet;

use super::types::SessionMeta;
use crate::capabilities::Capabilities;

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
}

/// A session's agent and what the session keeps of how it was built.
pub struct BuiltAgent {
    /// The agent.
    pub agent: Agent,
    /// The background tasks of its `Task` tools (empty when it has none).
    pub tasks: BackgroundTasks,
}

/// Builds agents for sessions: one provider instance per session (so a scripted provider's
/// script plays per session), the default tools of the session's workspace minus the
/// disallowed ones, and the session's mode, model and thought level.
pub struct AgentFactory {
    provider: ProviderConfig,
    disallowed_tools: Vec<String>,
    extra_tools: Vec<Arc<dyn Tool>>,
    system_prompt: Option<String>,
    capabilities: Option<Arc<Capabilities>>,
}

impl std::fmt::Debug for AgentFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentFactory")
            .field("provider", &self.provider.id)
            .field("model", &self.provider.model)
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
    /// A factory for `provider`.
    pub fn new(provider: ProviderConfig) -> Self {
        Self {
            provider,
            disallowed_tools: Vec::new(),
            extra_tools: Vec::new(),
            system_prompt: None,
            capabilities: None,
        }
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
        let (mut servers, mut options) = match &self.capabilities {
            Some(caps) => (caps.mcp_servers.clone(), caps.mcp_options.clone()),
            None => (Vec::new(), agent_mcp::McpOptions::default()),
        };
        servers.extend(session_servers);
        if servers.is_empty() {
            return Ok(McpManager::empty());
        }
        options.cwd = PathBuf::from(workspace);
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

    /// The provider id sessions use.
    pub fn provider_id(&self) -> ProviderId {
        self.provider.id
    }

    /// Builds a fresh provider.
    pub fn provider(&self) -> Result<Arc<dyn Provider>, FactoryError> {
        build_provider(&self.provider).map_err(|source| FactoryError::Provider {
            provider: self.provider.id.to_string(),
            source,
        })
    }

    /// The model a new session starts on: the configured one, else the provider's default.
    pub fn default_model(&self, provider: &dyn Provider) -> String {
        self.provider
            .model
            .clone()
            .or_else(|| provider.models().first().map(|m| m.id.clone()))
            .unwrap_or_else(|| "default".to_string())
    }

    /// The tools of a session in `workspace` (the defaults, the factory's extra tools and
    /// the session's own), filtered by the factory's and the session's lists.
    pub fn tools(
        &self,
        workspace: &Path,
        allow: Option<&[String]>,
        deny: &[String],
        session_tools: Vec<Arc<dyn Tool>>,
    ) -> Vec<Arc<dyn Tool>> {
        let mut set = ToolSet::defaults(workspace);
        for tool in self.extra_tools.iter().cloned().chain(session_tools) {
            set.push(tool);
        }
        let allow: Option<Vec<String>> =
            allow.map(|names| names.iter().map(|n| canonical_tool_name(n)).collect());
        set.into_tools()
            .into_iter()
            .filter(|t| {
                let name = t.name();
                allow.as_ref().is_none_or(|a| a.iter().any(|n| n == name))
                    && !self.disallowed_tools.iter().any(|n| n == name)
                    && !deny.iter().any(|n| canonical_tool_name(n) == name)
            })
            .collect()
    }

    fn system_text(&self, meta: &SessionMeta) -> String {
        match &self.system_prompt {
            Some(prompt) => prompt.clone(),
            None => format!(
                "You are a coding agent working in the workspace {}. Use the tools to inspect \
                 and change files; keep answers short and concrete.",
                meta.workspace_path
            ),
        }
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
        let provider = self.provider()?;
        let workspace = Path::new(&meta.workspace_path);
        let (task_tools, tasks) = match self.specialists(workspace) {
            Some(registry) => TaskTools::new(registry)
                .base_system_prompt(self.system_text(meta))
                .build_with_tasks(),
            None => (Vec::new(), BackgroundTasks::default()),
        };
        let mut session_tools = session_tools;
        session_tools.extend(task_tools);
        let tools = self.tools(
            workspace,
            meta.tool_allowlist.as_deref(),
            &meta.tool_denylist,
            session_tools,
        );
        let mut builder = Agent::builder(provider)
            .model(meta.model.clone())
            .reasoning(meta.thought_level)
            .system_prompt(self.system_text(meta))
            .tools(tools)
            .permission_mode(meta.mode.permission_mode())
            .approver(approver)
            .cwd(&meta.workspace_path);
        if let Some(caps) = &self.capabilities {
            builder = caps.apply_mcp(caps.apply_without_tasks(builder), mcp);
        } else if !mcp.is_empty() {
            builder = builder.tool_source(mcp.clone());
        }
        if let Some(dir) = spill_dir {
            builder = builder.spill_dir(dir);
        }
        let builder = if resume {
            builder.resume(store, meta.session_id.clone()).await?
        } else {
            if !messages.is_empty() {
                store
                    .append(
                        &meta.session_id,
                        &SessionRecord::Replaced {
                            messages: messages.clone(),
                        },
                    )
                    .await?;
            }
            builder
                .messages(messages)
                .session(store, meta.session_id.clone())
        };
        Ok(BuiltAgent {
            agent: builder.build(),
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
