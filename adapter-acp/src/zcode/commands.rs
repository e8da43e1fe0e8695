//! Slash commands on the ZCode app-server: the command files of a session's workspace
//! (agent-host's [`ProjectContext::editor`](agent_host::context_files::ProjectContext::editor)
//! rule) are listed in its snapshot's `slashCommands` (read once per session, and again on
//! each `session/send` that starts with `/`); a `session/send` whose content is `/name args`
//! naming one of them starts the turn with the command's prompt (agent-core's
//! [`Commands::expand`]). A `/name` that names no command is sent as it is.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use agent_core::commands::Commands;
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

    /// Reads the commands of `session`'s workspace and remembers them.
    fn read(&self, manager: &SessionManager, session: &Session) -> Commands {
        let commands = match manager.factory().project() {
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
    /// again now); `None` otherwise.
    pub(crate) fn expand(
        &self,
        manager: &SessionManager,
        session: &Session,
        content: &str,
    ) -> Option<String> {
        if !content.trim_start().starts_with('/') {
            return None;
        }
        let expansion = self.read(manager, session).expand(content)?;
        tracing::debug!(session = %session.id(), command = %expansion.name, "slash command expanded");
        Some(expansion.prompt)
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
