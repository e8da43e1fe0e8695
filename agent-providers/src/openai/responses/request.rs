//! Responses API request wire types and the transcript mapping.

use agent_core::{
    message::Role,
    provider::{OutputSchema, ProviderRequest, ToolSpec},
    ContentBlock,
};
use serde::Serialize;
use serde_json::Value;

use crate::transcript::{args_text, data_url};

/// The body of `POST /responses`.
#[derive(Debug, Serialize)]
pub(crate) struct ResponsesRequest {
    pub(crate) model: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) instructions: Option<String>,
    pub(crate) input: Vec<InputItem>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) tools: Vec<FunctionTool>,
    pub(crate) stream: bool,
    pub(crate) store: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) include: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reasoning: Option<ReasoningParam>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) text: Option<TextParam>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) prompt_cache_key: Option<String>,
}

/// `text: {"format": {"type": "json_schema", name, schema, strict}}`: structured output.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct TextParam {
    pub(crate) format: TextFormat,
}

/// A `json_schema` text format.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct TextFormat {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) name: String,
    pub(crate) schema: Value,
    pub(crate) strict: bool,
}

impl From<&OutputSchema> for TextParam {
    fn from(schema: &OutputSchema) -> Self {
        Self {
            format: TextFormat {
                kind: "json_schema",
                name: schema.name.clone(),
                schema: schema.schema.clone(),
                strict: schema.strict,
            },
        }
    }
}

/// `reasoning`.
#[derive(Debug, Serialize)]
pub(crate) struct ReasoningParam {
    pub(crate) effort: &'static str,
    pub(crate) summary: &'static str,
}

/// One input item.
#[derive(Debug, Serialize, PartialEq)]
#[serde(untagged)]
pub(crate) enum InputItem {
    Message(MessageItem),
    FunctionCall(FunctionCallItem),
    FunctionCallOutput(FunctionCallOutputItem),
    /// A reasoning item from an earlier response, verbatim.
    Raw(Value),
}

/// `{"type": "message", "role": …, "content": …}`.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct MessageItem {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) role: &'static str,
    pub(crate) content: MessageContent,
}

/// Message content: plain text (assistant turns) or input parts (user turns).
#[derive(Debug, Serialize, PartialEq)]
#[serde(untagged)]
pub(crate) enum MessageContent {
    Text(String),
    Parts(Vec<InputContent>),
}

/// An input content part.
#[derive(Debug, Serialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum InputContent {
    InputText {
        text: String,
    },
    InputImage {
        image_url: String,
        detail: &'static str,
    },
}

/// `{"type": "function_call", …}`.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct FunctionCallItem {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) call_id: String,
    pub(crate) name: String,
    pub(crate) arguments: String,
}

/// `{"type": "function_call_output", …}`.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct FunctionCallOutputItem {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) call_id: String,
    pub(crate) output: MessageContent,
}

/// A function tool.
#[derive(Debug, Serialize)]
pub(crate) struct FunctionTool {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) parameters: Value,
    pub(crate) strict: bool,
}

impl From<&ToolSpec> for FunctionTool {
    fn from(spec: &ToolSpec) -> Self {
        Self {
            kind: "function",
            name: spec.name.clone(),
            description: spec.description.clone(),
            parameters: spec.parameters.clone(),
            strict: false,
        }
    }
}

fn parts(blocks: &[ContentBlock]) -> Vec<InputContent> {
    blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } if !text.is_empty() => {
                Some(InputContent::InputText { text: text.clone() })
            }
            ContentBlock::Image { mime_type, data } => Some(InputContent::InputImage {
                image_url: data_url(mime_type, data),
                detail: "auto",
            }),
            _ => None,
        })
        .collect()
}

/// Whether `opaque` is a reasoning item that can be replayed without server-side storage.
fn replayable_reasoning(opaque: &Value) -> bool {
    opaque.get("type").and_then(Value::as_str) == Some("reasoning")
        && opaque
            .get("encrypted_content")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
}

/// The transcript as Responses input items.
///
/// Assistant tool calls become `function_call` items and results `function_call_output`
/// items with the same `call_id`; reasoning items from earlier responses go back verbatim,
/// in transcript order (each before the output it led to).
pub(crate) fn input(request: &ProviderRequest) -> Vec<InputItem> {
    let mut out = Vec::with_capacity(request.messages.len());
    for message in &request.messages {
        match message.role {
            Role::User => {
                let content = parts(&message.content);
                if !content.is_empty() {
                    out.push(InputItem::Message(MessageItem {
                        kind: "message",
                        role: "user",
                        content: MessageContent::Parts(content),
                    }));
                }
            }
            Role::Assistant => {
                let mut text = String::new();
                let flush = |text: &mut String, out: &mut Vec<InputItem>| {
                    if !text.is_empty() {
                        out.push(InputItem::Message(MessageItem {
                            kind: "message",
                            role: "assistant",
                            content: MessageContent::Text(std::mem::take(text)),
                        }));
                    }
                };
                for block in &message.content {
                    match block {
                        ContentBlock::Text { text: t } => text.push_str(t),
                        ContentBlock::Reasoning {
                            opaque: Some(opaque),
                            ..
                        } if replayable_reasoning(opaque) => {
                            flush(&mut text, &mut out);
                            out.push(InputItem::Raw(opaque.clone()));
                        }
                        ContentBlock::ToolCall(call) => {
                            flush(&mut text, &mut out);
                            out.push(InputItem::FunctionCall(FunctionCallItem {
                                kind: "function_call",
                                call_id: call.id.clone(),
                                name: call.name.clone(),
                                arguments: args_text(&call.args),
                            }));
                        }
                        _ => {}
                    }
                }
                flush(&mut text, &mut out);
            }
            Role::Tool => {
                for block in &message.content {
                    if let ContentBlock::ToolResult {
                        call_id, content, ..
                    } = block
                    {
                        let has_image = content
                            .iter()
                            .any(|b| matches!(b, ContentBlock::Image { .. }));
                        let output = match has_image {
                            true => MessageContent::Parts(parts(content)),
                            false => MessageContent::Text(crate::transcript::text_of(content)),
                        };
                        out.push(InputItem::FunctionCallOutput(FunctionCallOutputItem {
                            kind: "function_call_output",
                            call_id: call_id.clone(),
                            output,
                        }));
                    }
                }
            }
        }
    }
    out
}
