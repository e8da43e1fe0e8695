//! A session's history in ACP form: a stored transcript as the `session/update`s that
//! replay it on `session/load`, and an ACP prompt as the agent's [`UserInput`].

use std::collections::HashMap;
use std::path::Path;

use agent_client_protocol::v1::schema::{
    BlobResourceContents, ContentBlock as AcpBlock, ContentChunk, EmbeddedResourceResource,
    SessionUpdate,
};
use agent_core::{message::Role, ContentBlock, Message, UserInput};
use agent_mcp::McpManager;
use base64::Engine as _;
use serde_json::Value;

use super::tools::{content_block, result_fields, text_block, tool_call, update};

/// The updates that replay a transcript to a client loading the session: the user's text
/// and images, the agent's text and reasoning, each tool call (`tool_call`, then a
/// `tool_call_update` with its final status and content). Messages the agent wrote itself
/// (recovery nudges, compaction notes) are not replayed. `mcp`, the session's MCP servers,
/// describes their tools' calls.
pub fn replay(messages: &[Message], cwd: &Path, mcp: Option<&McpManager>) -> Vec<SessionUpdate> {
    let mut out = Vec::new();
    let mut calls: HashMap<String, (String, Value)> = HashMap::new();
    for message in messages.iter().filter(|m| !m.synthetic) {
        for block in &message.content {
            match (message.role, block) {
                // The agent's empty text is not replayed; the user's is.
                (Role::Assistant, ContentBlock::Text { text }) if text.is_empty() => {}
                (
                    Role::User | Role::Assistant,
                    ContentBlock::Text { .. } | ContentBlock::Image { .. },
                ) => {
                    let chunk = content_block(block).map(ContentChunk::new);
                    out.extend(chunk.map(|chunk| match message.role {
                        Role::User => SessionUpdate::UserMessageChunk(chunk),
                        _ => SessionUpdate::AgentMessageChunk(chunk),
                    }));
                }
                (Role::Assistant, ContentBlock::Reasoning { text, .. }) if !text.is_empty() => out
                    .push(SessionUpdate::AgentThoughtChunk(ContentChunk::new(
                        text_block(text.clone()),
                    ))),
                (Role::Assistant, ContentBlock::ToolCall(call)) => {
                    let shown = super::tools::scrubbed_args(&call.args).into_owned();
                    calls.insert(call.id.clone(), (call.name.clone(), shown));
                    out.push(SessionUpdate::ToolCall(tool_call(
                        &call.id, &call.name, &call.args, None, cwd, mcp,
                    )));
                }
                (
                    _,
                    ContentBlock::ToolResult {
                        call_id,
                        is_error,
                        content,
                    },
                ) => {
                    let (name, args) = match calls.get(call_id) {
                        Some((name, args)) => (name.as_str(), Some(args)),
                        None => ("", None),
                    };
                    let fields = result_fields(name, args, !is_error, content, &[], cwd);
                    out.push(update(call_id, fields));
                }
                _ => {}
            }
        }
    }
    out
}

/// A prompt the agent cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    /// Audio is not a prompt capability of this agent.
    #[error("audio prompts are not supported")]
    Audio,
    /// Base64 data that does not decode.
    #[error("prompt block {index}: invalid base64 data: {message}")]
    Base64 {
        /// Index of the block in the prompt.
        index: usize,
        /// The decoder's message.
        message: String,
    },
    /// Nothing to send.
    #[error("the prompt is empty")]
    Empty,
}

fn decode(index: usize, data: &str) -> Result<Vec<u8>, PromptError> {
    base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| PromptError::Base64 {
            index,
            message: e.to_string(),
        })
}

/// What the agent read of a prompt's `resource_link` before the turn (the handler reads
/// it: a file of the workspace, an MCP resource).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkRead {
    /// The text for the model: the content, or why it could not be read.
    pub text: String,
    /// The images it holds, as `(mime type, bytes)`.
    pub images: Vec<(String, Vec<u8>)>,
}

/// One `<context ref="URI">` section of a prompt.
fn context_section(uri: &str, text: &str) -> String {
    format!("\n<context ref=\"{uri}\">\n{text}\n</context>")
}

/// Turns an ACP prompt into the agent's input: text blocks in order, resource links as
/// Markdown links, images (and embedded image blobs) as images; embedded text resources,
/// and what was read of each resource link (`read`, by block index), appended as
/// `<context ref="URI">` sections.
pub fn prompt_input(
    blocks: &[AcpBlock],
    read: &HashMap<usize, LinkRead>,
) -> Result<UserInput, PromptError> {
    let mut text = String::new();
    let mut context = String::new();
    let mut input = UserInput::default();
    for (index, block) in blocks.iter().enumerate() {
        match block {
            AcpBlock::Text(t) => text.push_str(&t.text),
            AcpBlock::ResourceLink(link) => {
                text.push_str(&format!("[@{}]({})", link.name, link.uri));
                if let Some(read) = read.get(&index) {
                    context.push_str(&context_section(&link.uri, &read.text));
                    for (mime, data) in &read.images {
                        input = input.with_image(mime.clone(), data.clone());
                    }
                }
            }
            AcpBlock::Image(image) => {
                let data = decode(index, &image.data)?;
                input = input.with_image(image.mime_type.clone(), data);
            }
            AcpBlock::Audio(_) => return Err(PromptError::Audio),
            AcpBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(r) => {
                    context.push_str(&context_section(&r.uri, &r.text));
                }
                EmbeddedResourceResource::BlobResourceContents(BlobResourceContents {
                    blob,
                    mime_type: Some(mime),
                    ..
                }) if mime.starts_with("image/") => {
                    let data = decode(index, blob)?;
                    input = input.with_image(mime.clone(), data);
                }
                EmbeddedResourceResource::BlobResourceContents(r) => {
                    text.push_str(&format!("[@{}]({})", r.uri, r.uri));
                }
                _ => {}
            },
            _ => {}
        }
    }
    if !context.is_empty() {
        text.push('\n');
        text.push_str(&context);
    }
    input.text = text;
    if input.is_empty() {
        return Err(PromptError::Empty);
    }
    Ok(input)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        EmbeddedResource, ImageContent, ResourceLink, TextResourceContents,
    };
    use serde_json::json;
    use std::path::PathBuf;

    fn wire(update: &SessionUpdate) -> Value {
        serde_json::to_value(update).unwrap_or_default()
    }

    fn cwd() -> PathBuf {
        PathBuf::from("/work/ws")
    }

    #[test]
    fn replay_rebuilds_the_conversation() {
        let messages = vec![
            Message::user_text("fix it"),
            Message::new(
                Role::Assistant,
                vec![
                    ContentBlock::Reasoning {
                        text: "think".into(),
                        signature: None,
                        opaque: None,
                    },
                    ContentBlock::text("Running."),
                    ContentBlock::ToolCall(agent_core::message::ToolCall {
                        id: "c1".into(),
                        name: "bash".into(),
                        args: json!({"command": "echo hi"}),
                    }),
                ],
            ),
            Message::new(
                Role::Tool,
                vec![ContentBlock::ToolResult {
                    call_id: "c1".into(),
                    is_error: false,
                    content: vec![ContentBlock::text("hi")],
                }],
            ),
            Message::user_text(agent_core::RECOVERY_PROMPT).synthetic(),
            Message::assistant_text("Done."),
        ];
        let updates: Vec<Value> = replay(&messages, &cwd(), None).iter().map(wire).collect();
        let kinds: Vec<&str> = updates
            .iter()
            .map(|u| u["sessionUpdate"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(
            kinds,
            [
                "user_message_chunk",
                "agent_thought_chunk",
                "agent_message_chunk",
                "tool_call",
                "tool_call_update",
                "agent_message_chunk"
            ]
        );
        assert_eq!(updates[0]["content"]["text"], "fix it");
        assert_eq!(updates[3]["kind"], "execute");
        assert_eq!(updates[4]["status"], "completed");
        assert_eq!(updates[4]["content"][0]["content"]["text"], "hi");
        assert_eq!(updates[5]["content"]["text"], "Done.");
    }

    #[test]
    fn prompts_become_input() {
        let png = base64::engine::general_purpose::STANDARD.encode([1u8, 2, 3]);
        let blocks = vec![
            text_block("look at "),
            AcpBlock::ResourceLink(ResourceLink::new("a.rs", "file:///w/a.rs")),
            AcpBlock::Image(ImageContent::new(png, "image/png")),
            AcpBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn main() {}",
                    "file:///w/main.rs",
                )),
            )),
        ];
        let none = HashMap::new();
        let input = prompt_input(&blocks, &none).unwrap_or_default();
        assert!(input.text.starts_with("look at [@a.rs](file:///w/a.rs)"));
        assert!(input
            .text
            .contains("<context ref=\"file:///w/main.rs\">\nfn main() {}\n</context>"));
        assert_eq!(input.images.len(), 1);
        assert_eq!(input.images[0].1.as_ref(), &[1u8, 2, 3]);
        assert_eq!(prompt_input(&[], &none), Err(PromptError::Empty));
        assert!(matches!(
            prompt_input(
                &[AcpBlock::Image(ImageContent::new("@@", "image/png"))],
                &none
            ),
            Err(PromptError::Base64 { index: 0, .. })
        ));
        // What was read of a link goes to the model after the prompt, as context.
        let read = HashMap::from([(
            1,
            LinkRead {
                text: "pub fn a() {}".into(),
                images: vec![("image/png".into(), vec![9])],
            },
        )]);
        let input = prompt_input(&blocks, &read).unwrap_or_default();
        assert!(input
            .text
            .contains("<context ref=\"file:///w/a.rs\">\npub fn a() {}\n</context>"));
        assert_eq!(input.images.len(), 2);
    }
}
