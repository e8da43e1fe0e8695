//! Slash commands on ACP: the command files of a session's workspace (agent-host's
//! [`ProjectContext::editor`](agent_host::context_files::ProjectContext::editor) rule) are
//! announced with `available_commands_update` after `session/new` and `session/load` (when
//! there is at least one), and again before a prompt when the set changed; a prompt whose
//! first text block is `/name args` naming one of them is sent to the model expanded
//! (agent-core's [`Commands::expand`]). The prompts of the session's MCP servers are
//! commands too (`/mcp__<server>__<prompt> args`, agent-host's [`McpPromptCommands`]),
//! listed after the files' and rendered by their server; one that cannot be rendered (a
//! missing argument, a failing server) is the prompt's `invalid_params` error. A `/name`
//! that names no command goes as it is. The agent's own `/rewind` (see
//! [`rewind`](super::rewind)) ends every list, so every session announces at least it.

use std::path::Path;

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, ContentBlock as AcpBlock,
    SessionId, SessionNotification, SessionUpdate, TextContent, UnstructuredCommandInput,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use agent_client_protocol::Error;
use agent_core::commands::Commands;
use agent_host::mcp_commands::McpPromptCommands;
use agent_host::session::Session;

use super::{invalid_params, notify, Shared};

/// The commands of `session`'s workspace, read now (what was skipped is logged), then its
/// MCP servers' prompts.
fn load(s: &Shared, session: &Session) -> Commands {
    let files = match s.manager.factory().project() {
        None => Commands::default(),
        Some(project) => {
            let workspace = session.meta().workspace_path;
            let loaded = project.commands(Path::new(&workspace));
            for warning in &loaded.warnings {
                tracing::warn!(workspace = %workspace, "{warning}");
            }
            loaded.commands
        }
    };
    files.merged(McpPromptCommands(session.mcp().clone()).listed())
}

/// `commands` as ACP lists them: name, description, and an unstructured `input` with its
/// hint for a command that takes arguments; then `/rewind`, which a command of that name
/// cannot replace (the prompt takes `/rewind` before any command).
pub(crate) fn update(commands: &Commands) -> SessionUpdate {
    let rewind = super::rewind::available();
    let shadowed = rewind.name.clone();
    let available = commands
        .iter()
        .filter(|command| command.name != shadowed)
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
        .chain([rewind])
        .collect();
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(available))
}

/// Reads the commands of `session`, remembers them, and returns the update to send: after
/// `session/new`/`session/load` (`announce`) and for a session not announced yet (there is
/// always `/rewind`), otherwise when they differ from those last announced.
fn refresh(s: &Shared, session: &Session, announce: bool) -> (Commands, Option<SessionUpdate>) {
    let commands = load(s, session);
    let previous = s
        .commands()
        .insert(session.id().to_string(), commands.clone());
    let changed = match (announce, previous) {
        (true, _) | (false, None) => true,
        (false, Some(previous)) => previous != commands,
    };
    let update = changed.then(|| update(&commands));
    (commands, update)
}

/// Announces session `id`'s commands after its `session/new` or `session/load` response
/// (through the SDK, after that response).
pub(super) fn announce_session(s: &Shared, cx: &ConnectionTo<Client>, id: &str) {
    let Some(session) = s.manager.get(id) else {
        return;
    };
    let (_, update) = refresh(s, &session, true);
    if let Some(update) = update {
        let notification = SessionNotification::new(SessionId::new(id), update);
        if let Err(err) = cx.send_notification(notification) {
            tracing::debug!(session = %id, error = ?err, "cannot send available_commands_update");
        }
    }
}

/// The prompt's blocks with a leading `/name args` expanded when `name` is one of
/// `session`'s commands (re-read now; a change is announced first); `None`: the blocks as
/// they are. An MCP prompt the server could not render is `invalid_params`.
pub(super) async fn expand(
    s: &Shared,
    cx: &ConnectionTo<Client>,
    session: &Session,
    blocks: &[AcpBlock],
) -> Result<Option<Vec<AcpBlock>>, Error> {
    let Some(AcpBlock::Text(first)) = blocks.first() else {
        return Ok(None);
    };
    if !first.text.trim_start().starts_with('/') {
        return Ok(None);
    }
    let id = session.id();
    let (commands, update) = refresh(s, session, false);
    if let Some(update) = update {
        notify(s, cx, &SessionId::new(id), update);
    }
    let prompt = match commands.expand(&first.text) {
        Some(expansion) if !expansion.name.starts_with("mcp__") => expansion.prompt,
        _ => match McpPromptCommands(session.mcp().clone())
            .expand_line(&first.text)
            .await
        {
            None => return Ok(None),
            Some(Ok(prompt)) => prompt,
            Some(Err(message)) => return Err(invalid_params(message)),
        },
    };
    tracing::debug!(session = %id, "slash command expanded");
    let mut blocks = blocks.to_vec();
    blocks[0] = AcpBlock::Text(TextContent::new(prompt));
    Ok(Some(blocks))
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
        // The agent's own /rewind ends the list.
        assert_eq!(list[3]["name"], "rewind");
        assert_eq!(list[3]["input"]["hint"], "[checkpoint] [--force]");
        assert_eq!(list.as_array().map(Vec::len), Some(4));
    }

    #[test]
    fn rewind_is_listed_once_and_with_no_workspace_command() {
        let json = serde_json::to_value(update(&Commands::default())).expect("json");
        let names = |json: &serde_json::Value| -> Vec<String> {
            json["availableCommands"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["name"].as_str().map(str::to_string))
                .collect()
        };
        assert_eq!(names(&json), ["rewind"]);
        // A workspace command named rewind is shadowed by the agent's (the prompt takes
        // `/rewind` first), so it is not listed beside it.
        let shadowed = Commands::new([
            Command::new("rewind", "Mine", "Undo."),
            Command::new("review", "Review a file", "Review $1."),
        ]);
        let json = serde_json::to_value(update(&shadowed)).expect("json");
        assert_eq!(names(&json), ["review", "rewind"]);
        assert_ne!(json["availableCommands"][1]["description"], "Mine");
    }
}
