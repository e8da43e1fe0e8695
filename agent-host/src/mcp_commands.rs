//! MCP servers' prompts as slash commands: agent-core's [`CommandSource`] over an
//! [`McpManager`]. Each prompt is the command `/mcp__<server>__<prompt>` (agent-mcp's
//! naming), described by its description (else its title), with an argument hint naming
//! its arguments (`<required> [optional]`); `/mcp__server__prompt words…` asks the server
//! for the prompt (`prompts/get`, words mapped to the arguments in order) and sends the
//! text of its messages. A front end lists these after its command files (a file command
//! of the same name wins).

use agent_core::async_trait;
use agent_core::commands::{parse_invocation, Command, CommandSource, Commands};
use agent_mcp::{McpManager, PromptError};

use crate::text::text_of;

/// The prompts of a session's MCP servers, as commands.
#[derive(Debug, Clone)]
pub struct McpPromptCommands(pub McpManager);

impl McpPromptCommands {
    /// The prompts the connected servers offer now, as commands (no template: the server
    /// renders them).
    pub fn listed(&self) -> Commands {
        Commands::new(self.0.prompts().into_iter().map(|prompt| {
            let description = prompt
                .description
                .clone()
                .or_else(|| prompt.title.clone())
                .unwrap_or_else(|| {
                    format!("Prompt {} of MCP server {}", prompt.name, prompt.server)
                });
            let hint = prompt
                .arguments
                .iter()
                .map(|a| match a.required {
                    true => format!("<{}>", a.name),
                    false => format!("[{}]", a.name),
                })
                .collect::<Vec<_>>()
                .join(" ");
            let mut command = Command::new(prompt.command.clone(), description, String::new());
            command.argument_hint = Some(hint).filter(|h| !h.is_empty());
            command
        }))
    }

    /// The prompt text of `line` when it is `/mcp__…` naming one of the servers' prompts:
    /// the text of its messages, blank-line separated; an error in words for the user when
    /// the server could not render it (a missing argument names the usage). `None` for any
    /// other line (and for an `mcp__` name no server has: it is sent as it is).
    pub async fn expand_line(&self, line: &str) -> Option<Result<String, String>> {
        match self.0.expand_slash_command(line).await? {
            Ok(messages) => Some(Ok(messages
                .iter()
                .map(|m| text_of(&m.content))
                .filter(|t| !t.trim().is_empty())
                .collect::<Vec<_>>()
                .join("\n\n"))),
            Err(PromptError::Unknown(_)) => None,
            Err(err) => Some(Err(err.to_string())),
        }
    }
}

#[async_trait]
impl CommandSource for McpPromptCommands {
    async fn commands(&self) -> Vec<Command> {
        self.listed().iter().cloned().collect()
    }

    async fn expand(&self, name: &str, args: &str) -> Option<Result<String, String>> {
        let line = format!("/{name} {args}");
        parse_invocation(&line)?;
        self.expand_line(&line).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn no_servers_no_commands_and_lines_go_unchanged() {
        let source = McpPromptCommands(McpManager::empty());
        assert!(source.listed().is_empty());
        assert!(source.commands().await.is_empty());
        assert_eq!(source.expand_line("/mcp__github__review 42").await, None);
        assert_eq!(source.expand_line("/review x").await, None);
        assert_eq!(source.expand("mcp__a__b", "").await, None);
    }
}
