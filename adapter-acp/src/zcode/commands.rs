//! Slash commands on the ZCode app-server: the command files of a session's workspace
//! (agent-host's [`ProjectContext::editor`](agent_host::context_files::ProjectContext::editor)
//! rule) are listed in its snapshot's `slashCommands` (read once per session, and again on
//! each `session/send` that starts with `/`); a `session/send` whose content is `/name args`
//! naming one of them starts the turn with the command's prompt (agent-core's
//! [`Commands::expand`]). The session's MCP servers' prompts are commands too
//! (`/mcp__<server>__<prompt> args`, rendered by their server; one that cannot be is the
//! request's invalid-params error). A `/name` that names no command is sent as it is.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use agent_core::commands::Commands;
use agent_host::mcp_commands::McpPromptCommands;
use agent_host::session::{Session, SessionManager};

use super::wire::SlashCommand;

/// The commands of each session, as last read.
#[derive(Default)]
pub(crate) struct SessionCommands {
    by_session: Mutex<HashMap<String, Commands>>,
}

impl SessionCommands {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Commands>> {
        self.by_session.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads the commands of `session`'s workspace, then its MCP servers' prompts, and
    /// remembers them.
    fn read(&self, manager: &SessionManager, session: &Session) -> Commands {
        let files = match manager.factory().project() {
            None => Commands::default(),
            Some(project) => {
                let workspace = session.meta().workspace_path;
                let loaded = project.commands(Path::new(&workspace));
                for warning in &loaded.warnings {
                    tracing::warn!(session = %session.id(), "{warning}");
                }
                loaded.commands
            }
        };
        let commands = files.merged(McpPromptCommands(session.mcp().clone()).listed());
        self.lock()
            .insert(session.id().to_string(), commands.clone());
        commands
    }

    /// The snapshot's `slashCommands` of `session` (read on first use).
    pub(crate) fn listed(&self, manager: &SessionManager, session: &Session) -> Vec<SlashCommand> {
        let known = self.lock().get(session.id()).cloned();
        let commands = known.unwrap_or_else(|| self.read(manager, session));
        wire(&commands)
    }

    /// `content` expanded when it is `/name args` naming one of `session`'s commands (read
    /// again now); `None` otherwise; an MCP prompt its server could not render is the
    /// error's message.
    pub(crate) async fn expand(
        &self,
        manager: &SessionManager,
        session: &Session,
        content: &str,
    ) -> Result<Option<String>, String> {
        if !content.trim_start().starts_with('/') {
            return Ok(None);
        }
        let prompt = match self.read(manager, session).expand(content) {
            Some(expansion) if !expansion.name.starts_with("mcp__") => expansion.prompt,
            _ => match McpPromptCommands(session.mcp().clone())
                .expand_line(content)
                .await
            {
                None => return Ok(None),
                Some(result) => result?,
            },
        };
        tracing::debug!(session = %session.id(), "slash command expanded");
        Ok(Some(prompt))
    }
}

/// `commands` as the snapshot lists them.
fn wire(commands: &Commands) -> Vec<SlashCommand> {
    commands
        .iter()
        .map(|c| SlashCommand {
            name: c.name.clone(),
            description: c.description.clone(),
            argument_hint: c.input_hint(),
        })
        .collect()
}
