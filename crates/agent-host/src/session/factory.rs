//! [`AgentFactory`]: how a session's [`Agent`] is built — provider, tools, prompt, mode.

use std::path::Path;
use std::sync::Arc;

use agent_core::{
    Agent, Approver, Message, Provider, SessionError, SessionRecord, SessionStore, Tool,
};
use agent_providers::{build_provider, ConfigError, ProviderConfig, ProviderId};
use agent_tools::ToolSet;

use super::types::SessionMeta;

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
}

/// Builds agents for sessions: one provider instance per session (so a scripted provider's
/// script plays per session), the default tools of the session's workspace minus the
/// disallowed ones, and the session's mode, model and thought level.
pub struct AgentFactory {
    provider: ProviderConfig,
    disallowed_tools: Vec<String>,
    extra_tools: Vec<Arc<dyn Tool>>,
    system_prompt: Option<String>,
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
        }
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
    /// (tools bound to this session) besides the defaults. With `resume`, the transcript is
    /// loaded from the store; otherwise it starts as `messages` (which are recorded as the
    /// session's first record when not empty).
    pub async fn build(
        &self,
        meta: &SessionMeta,
        approver: Arc<dyn Approver>,
        store: Arc<dyn SessionStore>,
        session_tools: Vec<Arc<dyn Tool>>,
        resume: bool,
        messages: Vec<Message>,
    ) -> Result<Agent, FactoryError> {
        let provider = self.provider()?;
        let tools = self.tools(
            Path::new(&meta.workspace_path),
            meta.tool_allowlist.as_deref(),
            &meta.tool_denylist,
            session_tools,
        );
        let builder = Agent::builder_arc(provider)
            .model(meta.model.clone())
            .reasoning(meta.thought_level)
            .system_prompt(self.system_text(meta))
            .tools(tools)
            .permission_mode(meta.mode.permission_mode())
            .approver_arc(approver)
            .cwd(&meta.workspace_path);
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
        Ok(builder.build())
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
