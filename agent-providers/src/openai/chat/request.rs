//! Chat Completions request wire types and the transcript mapping.

use agent_core::{
    message::Role,
    provider::{OutputSchema, ProviderRequest, ToolSpec},
    ContentBlock, Message,
};
use serde::Serialize;
use serde_json::Value;

use crate::transcript::{args_text, data_url, text_of};

/// The body of `POST /chat/completions`.
#[derive(Debug, Serialize)]
pub(crate) struct ChatRequest {
    pub(crate) model: String,
    pub(crate) messages: Vec<ChatMessage>,
    pub(crate) stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) tools: Vec<ChatTool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reasoning_effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) response_format: Option<ResponseFormat>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) prompt_cache_key: Option<String>,
}

/// `response_format: {"type": "json_schema", "json_schema": {name, schema, strict}}`:
/// structured output.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct ResponseFormat {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) json_schema: JsonSchemaFormat,
}

/// The schema of a `json_schema` response format.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct JsonSchemaFormat {
    pub(crate) name: String,
    pub(crate) schema: Value,
    pub(crate) strict: bool,
}

impl From<&OutputSchema> for ResponseFormat {
    fn from(schema: &OutputSchema) -> Self {
        Self {
            kind: "json_schema",
            json_schema: JsonSchemaFormat {
                name: schema.name.clone(),
                schema: schema.schema.clone(),
                strict: schema.strict,
            },
        }
    }
}

/// `stream_options`.
#[derive(Debug, Serialize)]
pub(crate) struct StreamOptions {
    pub(crate) include_usage: bool,
}

/// One message of the request.
#[derive(Debug, Serialize, PartialEq)]
#[serde(tag = "role", rename_all = "lowercase")]
pub(crate) enum ChatMessage {
    System {
        content: String,
    },
    User {
        content: UserContent,
    },
    Assistant {
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ChatToolCall>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

/// User content: a plain string when it is text only (what every compatible server
/// accepts), else parts.
#[derive(Debug, Serialize, PartialEq)]
#[serde(untagged)]
pub(crate) enum UserContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

/// A content part.
#[derive(Debug, Serialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ContentPart {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

/// An image reference (a `data:` URL here).
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct ImageUrl {
    pub(crate) url: String,
}

/// An assistant tool call being sent back.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct ChatToolCall {
    pub(crate) id: String,
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) function: FunctionCall,
}

/// Name and argument text of a call.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct FunctionCall {
    pub(crate) name: String,
    pub(crate) arguments: String,
}

/// A tool offered to the model.
#[derive(Debug, Serialize)]
pub(crate) struct ChatTool {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) function: FunctionDef,
}

/// A function definition.
#[derive(Debug, Serialize)]
pub(crate) struct FunctionDef {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) parameters: Value,
}

impl From<&ToolSpec> for ChatTool {
    fn from(spec: &ToolSpec) -> Self {
        Self {
            kind: "function",
            function: FunctionDef {
                name: spec.name.clone(),
                description: spec.description.clone(),
                parameters: spec.parameters.clone(),
            },
        }
    }
}

/// The transcript as Chat Completions messages.
///
/// Assistant tool calls become `tool_calls`, each result a `tool` message with its
/// `tool_call_id`, in the order of the calls. Reasoning is not sent back (the API has no
/// input field for it). Tool messages carry text only, so images a tool returned follow
/// the tool messages in one user message.
pub(crate) fn messages(request: &ProviderRequest) -> Vec<ChatMessage> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    if let Some(system) = request.system.as_ref().filter(|s| !s.is_empty()) {
        out.push(ChatMessage::System {
            content: system.clone(),
        });
    }
    for message in &request.messages {
        push_message(&mut out, message);
    }
    out
}

fn push_message(out: &mut Vec<ChatMessage>, message: &Message) {
    match message.role {
        Role::User => {
            if let Some(content) = user_content(&message.content) {
                out.push(ChatMessage::User { content });
            }
        }
        Role::Assistant => {
            let mut text = String::new();
            let mut tool_calls = Vec::new();
            for block in &message.content {
                match block {
                    ContentBlock::Text { text: t } => text.push_str(t),
                    ContentBlock::ToolCall(call) => tool_calls.push(ChatToolCall {
                        id: call.id.clone(),
                        kind: "function",
                        function: FunctionCall {
                            name: call.name.clone(),
                            arguments: args_text(&call.args),
                        },
                    }),
                    _ => {}
                }
            }
            if text.is_empty() && tool_calls.is_empty() {
                return;
            }
            out.push(ChatMessage::Assistant {
                content: (!text.is_empty()).then_some(text),
                tool_calls,
            });
        }
        Role::Tool => {
            let mut images = Vec::new();
            for block in &message.content {
                match block {
                    ContentBlock::ToolResult {
                        call_id, content, ..
                    } => {
                        for part in content {
                            if let ContentBlock::Image { mime_type, data } = part {
                                images.push((call_id.clone(), data_url(mime_type, data)));
                            }
                        }
                        out.push(ChatMessage::Tool {
                            tool_call_id: call_id.clone(),
                            content: text_of(content),
                        });
                    }
                    // Stray text in a tool message: keep it visible to the model.
                    ContentBlock::Text { text } => out.push(ChatMessage::User {
                        content: UserContent::Text(text.clone()),
                    }),
                    _ => {}
                }
            }
            if !images.is_empty() {
                let mut parts = Vec::with_capacity(images.len() * 2);
                for (call_id, url) in images {
                    parts.push(ContentPart::Text {
                        text: format!("Image returned by tool call {call_id}:"),
                    });
                    parts.push(ContentPart::ImageUrl {
                        image_url: ImageUrl { url },
                    });
                }
                out.push(ChatMessage::User {
                    content: UserContent::Parts(parts),
                });
            }
        }
    }
}

fn user_content(blocks: &[ContentBlock]) -> Option<UserContent> {
    let has_image = blocks
        .iter()
        .any(|b| matches!(b, ContentBlock::Image { .. }));
    if !has_image {
        let text = text_of(blocks);
        return (!text.is_empty()).then_some(UserContent::Text(text));
    }
    let parts: Vec<ContentPart> = blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } if !text.is_empty() => {
                Some(ContentPart::Text { text: text.clone() })
            }
            ContentBlock::Image { mime_type, data } => Some(ContentPart::ImageUrl {
                image_url: ImageUrl {
                    url: data_url(mime_type, data),
                },
            }),
            _ => None,
        })
        .collect();
    Some(UserContent::Parts(parts))
}
