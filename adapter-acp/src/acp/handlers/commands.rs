//! Slash commands on ACP: the command files of a session's workspace (agent-host's
//! [`ProjectContext::editor`](agent_host::context_files::ProjectContext::editor) rule) are
//! announced with `available_commands_update` after `session/new` and `session/load` (when
//! there is at least one), and again before a prompt when the set changed; a prompt whose
//! first text block is `/name args` naming one of them is sent to the model expanded
//! (agent-core's [`Commands::expand`]). A `/name` that names no command goes as it is.

use std::path::Path;

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, ContentBlock as AcpBlock,
    SessionId, SessionNotification, SessionUpdate, TextContent, UnstructuredCommandInput,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use agent_core::commands::Commands;

use super::{notify, Shared};

/// The commands of `workspace`, read now (what was skipped is logged).
fn load(s: &Shared, workspace: &Path) -> Commands {
    let Some(project) = s.manager.factory().project() else {
        return Commands::default();
    };
    let loaded = project.commands(workspace);
    for warning in &loaded.warnings {
        tracing::warn!(workspace = %workspace.display(), "{warning}");
    }
    loaded.commands
}

/// `commands` as ACP lists them: name, description, and an unstructured `input` with its
/// hint for a command that takes arguments.
pub(crate) fn update(commands: &Commands) -> SessionUpdate {
    let available = commands
        .iter()
        .map(|command| {
            let mut entry =
                AvailableCommand::new(command.name.clone(), command.description.clone());
            if let Some(hint) = command.input_hint() {
                entry = entry.input(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new(hint),
                ));
            }
            entry
        })
        .collect();
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(available))
}

/// Reads the commands of session `id`'s `workspace`, remembers them, and returns the
/// update to send: after `session/new`/`session/load` (`announce`) when there are any,
/// otherwise when they differ from those last announced.
fn refresh(
    s: &Shared,
    id: &str,
    workspace: &Path,
    announce: bool,
) -> (Commands, Option<SessionUpdate>) {
    let commands = load(s, workspace);
    let previous = s.commands().insert(id.to_string(), commands.clone());
    let changed = match (announce, previous) {
        (true, _) => !commands.is_empty(),
        (false, None) => !commands.is_empty(),
        (false, Some(previous)) => previous != commands,
    };
    let update = changed.then(|| update(&commands));
    (commands, update)
}

/// Announces session `id`'s commands after its `session/new` or `session/load` response:
/// through the SDK, after that response.
fn announce(s: &Shared, cx: &ConnectionTo<Client>, id: &str, workspace: &Path) {
    let (_, update) = refresh(s, id, workspace, true);
    if let Some(update) = update {
        let notification = SessionNotification::new(SessionId::new(id), update);
        if let Err(err) = cx.send_notification(notification) {
            tracing::debug!(session = %id, error = ?err, "cannot send available_commands_update");
        }
    }
}

/// [`announce`] for session `id`, whose workspace is its own (a loaded session keeps
/// the one it was created in).
pub(super) fn announce_session(s: &Shared, cx: &ConnectionTo<Client>, id: &str) {
    if let Some(session) = s.manager.get(id) {
        let workspace = session.meta().workspace_path;
        announce(s, cx, id, Path::new(&workspace));
    }
}

/// The prompt's blocks with a leading `/name args` expanded when `name` is one of the
/// session's commands (re-read now; a change is announced first); the blocks as they are
/// otherwise.
pub(super) fn expand(
    s: &Shared,
    cx: &ConnectionTo<Client>,
    id: &str,
    workspace: &Path,
    blocks: &[AcpBlock],
) -> Option<Vec<AcpBlock>> {
    let Some(AcpBlock::Text(first)) = blocks.first() else {
        return None;
    };
    if !first.text.trim_start().starts_with('/') {
        return None;
    }
    let (commands, update) = refresh(s, id, workspace, false);
    if let Some(update) = update {
        notify(s, cx, &SessionId::new(id), update);
    }
    let expansion = commands.expand(&first.text)?;
    tracing::debug!(session = %id, command = %expansion.name, "slash command expanded");
    let mut blocks = blocks.to_vec();
    blocks[0] = AcpBlock::Text(TextContent::new(expansion.prompt));
    Some(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::commands::Command;

    #[test]
    fn commands_with_arguments_carry_an_input_hint() {
        let mut hinted = Command::new("fix", "Fix an issue", "Fix it.");
        hinted.argument_hint = Some("<issue>".into());
        let commands = Commands::new([
            Command::new("review", "Review a file", "Review $1."),
            Command::new("plain", "User command: /plain", "Do it."),
            hinted,
        ]);
        let json = serde_json::to_value(update(&commands)).expect("json");
        assert_eq!(json["sessionUpdate"], "available_commands_update");
        let list = &json["availableCommands"];
        assert_eq!(list[0]["name"], "fix");
        assert_eq!(list[0]["input"]["hint"], "<issue>");
        assert_eq!(list[1]["name"], "plain");
        assert!(list[1].get("input").is_none(), "{list}");
        assert_eq!(list[2]["description"], "Review a file");
        assert_eq!(list[2]["input"]["hint"], "arguments");
    }
}
