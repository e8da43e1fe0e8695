//! Servers' prompts (`prompts/list`, `prompts/get`) for a host's slash commands: each prompt
//! is the command `/mcp__<server>__<prompt>` (Claude Code's naming), its words mapped to the
//! prompt's arguments in order.
//!
//! ```no_run
//! # async fn demo(mcp: agent_mcp::McpManager) {
//! for prompt in mcp.prompts() {
//!     println!("/{}  {}", prompt.command, prompt.description.unwrap_or_default());
//! }
//! if let Some(expanded) = mcp.expand_slash_command("/mcp__github__review 42 \"be brief\"").await {
//!     let messages = expanded.expect("the prompt renders");
//!     // … send `messages` as the turn's input
//! #   drop(messages);
//! }
//! # }
//! ```

use agent_core::message::Role;
use agent_core::{ContentBlock, Message};
use base64::Engine;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::client::{RemoteContent, RemotePrompt, RemotePromptMessage};

/// One argument of a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpPromptArgument {
    /// Its name.
    pub name: String,
    /// What it is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the prompt needs it.
    pub required: bool,
}

/// A prompt a connected server offers, as a host lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpPrompt {
    /// The server's configured name.
    pub server: String,
    /// The prompt's name on that server.
    pub name: String,
    /// Its title, when the server gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments, in the order a slash command's words fill them.
    pub arguments: Vec<McpPromptArgument>,
    /// The slash command without its `/`: `mcp__<server>__<prompt>`.
    pub command: String,
}

/// Why a prompt could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    /// No connected server offers that prompt.
    #[error("no MCP prompt {0}")]
    Unknown(String),
    /// The command lacks a required argument.
    #[error("/{command} needs the argument `{argument}` (arguments: {usage})")]
    MissingArgument {
        /// The command.
        command: String,
        /// The missing argument.
        argument: String,
        /// Every argument, in order.
        usage: String,
    },
    /// The server failed to render it.
    #[error("MCP server {server} could not render prompt {prompt}: {message}")]
    Failed {
        /// The server.
        server: String,
        /// The prompt.
        prompt: String,
        /// Why.
        message: String,
    },
}

/// One name part of a command: characters outside `[A-Za-z0-9_-]` become `_`.
fn part(text: &str) -> String {
    text.trim()
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                true => c,
                false => '_',
            },
        )
        .collect()
}

/// The slash command (without `/`) of prompt `prompt` of server `server`.
pub fn slash_name(server: &str, prompt: &str) -> String {
    format!("mcp__{}__{}", part(server), part(prompt))
}

/// Splits a command's argument text into words: whitespace-separated, with `"…"` or `'…'`
/// grouping words and `\` escaping the next character.
pub fn split_arguments(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (_, '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
                in_word = true;
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

impl McpPrompt {
    pub(crate) fn new(server: &str, remote: &RemotePrompt) -> Self {
        Self {
            server: server.to_string(),
            name: remote.name.clone(),
            title: remote.title.clone(),
            description: remote.description.clone(),
            arguments: remote
                .arguments
                .iter()
                .map(|a| McpPromptArgument {
                    name: a.name.clone(),
                    description: a.description.clone(),
                    required: a.required,
                })
                .collect(),
            command: slash_name(server, &remote.name),
        }
    }

    /// The arguments of `words`, in order; words beyond the last argument join it. A
    /// required argument without a word is an error.
    pub fn bind(&self, words: &[String]) -> Result<Map<String, Value>, PromptError> {
        let mut bound = Map::new();
        let count = self.arguments.len();
        for (i, argument) in self.arguments.iter().enumerate() {
            let value = match (i + 1 == count, words.get(i)) {
                (true, Some(_)) => Some(words[i..].join(" ")),
                (_, word) => word.cloned(),
            };
            match value {
                Some(value) => {
                    bound.insert(argument.name.clone(), Value::String(value));
                }
                None if argument.required => {
                    return Err(PromptError::MissingArgument {
                        command: self.command.clone(),
                        argument: argument.name.clone(),
                        usage: self
                            .arguments
                            .iter()
                            .map(|a| match a.required {
                                true => format!("<{}>", a.name),
                                false => format!("[{}]", a.name),
                            })
                            .collect::<Vec<_>>()
                            .join(" "),
                    })
                }
                None => {}
            }
        }
        Ok(bound)
    }
}

/// A rendered prompt's messages as agent messages.
pub(crate) fn messages(remote: Vec<RemotePromptMessage>) -> Vec<Message> {
    remote
        .into_iter()
        .map(|m| {
            let role = match m.assistant {
                true => Role::Assistant,
                false => Role::User,
            };
            Message::new(role, vec![block(m.content)])
        })
        .collect()
}

fn block(content: RemoteContent) -> ContentBlock {
    match content {
        RemoteContent::Text(text) => ContentBlock::text(text),
        RemoteContent::Image { mime_type, data } => {
            match base64::engine::general_purpose::STANDARD.decode(data.trim()) {
                Ok(bytes) => ContentBlock::Image {
                    mime_type,
                    data: bytes.into(),
                },
                Err(_) => ContentBlock::text(format!(
                    "[an {mime_type} image with invalid base64 data was dropped]"
                )),
            }
        }
        RemoteContent::Audio { mime_type } => ContentBlock::text(format!(
            "[{mime_type} audio content, which cannot be shown]"
        )),
        RemoteContent::Resource {
            uri,
            mime_type,
            text: Some(text),
        } => {
            let mime = mime_type.map(|m| format!(" ({m})")).unwrap_or_default();
            ContentBlock::text(format!("[resource {uri}{mime}]\n{text}"))
        }
        RemoteContent::Resource { uri, mime_type, .. } => ContentBlock::text(format!(
            "[resource {uri}: {} content, which cannot be shown]",
            mime_type.unwrap_or_else(|| "binary".into())
        )),
        RemoteContent::Link {
            uri,
            name,
            description,
        } => {
            let description = description.map(|d| format!(": {d}")).unwrap_or_default();
            ContentBlock::text(format!("[resource link {name} <{uri}>{description}]"))
        }
        RemoteContent::Unknown => ContentBlock::text("[a content block of an unknown type]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::RemotePromptArgument;

    fn prompt(arguments: &[(&str, bool)]) -> McpPrompt {
        McpPrompt::new(
            "git hub",
            &RemotePrompt {
                name: "review.pr".into(),
                title: None,
                description: None,
                arguments: arguments
                    .iter()
                    .map(|(name, required)| RemotePromptArgument {
                        name: name.to_string(),
                        description: None,
                        required: *required,
                    })
                    .collect(),
            },
        )
    }

    #[test]
    fn commands_are_named_like_claude_codes() {
        assert_eq!(prompt(&[]).command, "mcp__git_hub__review_pr");
        assert_eq!(slash_name("docs", "search-all"), "mcp__docs__search-all");
    }

    #[test]
    fn words_split_with_quotes_and_escapes() {
        assert_eq!(
            split_arguments(r#"  42 "be brief" 'a b'c \"x  "#),
            ["42", "be brief", "a bc", "\"x"]
        );
        assert_eq!(split_arguments(r#""""#), [""]);
        assert!(split_arguments("   ").is_empty());
    }

    #[test]
    fn words_fill_arguments_in_order_the_last_taking_the_rest() {
        let p = prompt(&[("pr", true), ("style", false), ("note", false)]);
        let words = split_arguments("42 terse please look at tests");
        let bound = p.bind(&words).unwrap();
        assert_eq!(bound["pr"], "42");
        assert_eq!(bound["style"], "terse");
        assert_eq!(bound["note"], "please look at tests");
        let one = p.bind(&["7".into()]).unwrap();
        assert_eq!(Value::Object(one), serde_json::json!({"pr": "7"}));
        let err = p.bind(&[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "/mcp__git_hub__review_pr needs the argument `pr` (arguments: <pr> [style] [note])"
        );
    }
}
