//! Messages API request wire types and the transcript mapping.

use agent_core::{
    message::Role,
    provider::{OutputSchema, ProviderRequest, ToolSpec},
    ContentBlock,
};
use serde::Serialize;
use serde_json::Value;

use crate::opaque::Opaque;
use crate::transcript::{args_object, base64};

/// The body of `POST /v1/messages`.
#[derive(Debug, Serialize)]
pub(crate) struct MessagesRequest {
    /// Empty on Vertex AI, whose URL names the model.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) model: String,
    pub(crate) max_tokens: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) system: Vec<SystemBlock>,
    pub(crate) messages: Vec<WireMessage>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) tools: Vec<WireTool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_choice: Option<ToolChoice>,
    pub(crate) stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) output_config: Option<OutputConfig>,
}

/// `tool_choice`.
#[derive(Debug, Serialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ToolChoice {
    /// The model must call one of the tools.
    Any {
        /// At most one tool call per turn.
        disable_parallel_tool_use: bool,
    },
    /// The model must call the named tool.
    Tool {
        /// Tool name.
        name: String,
    },
}

/// `output_config`: how much effort the model spends on its answer.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct OutputConfig {
    pub(crate) effort: &'static str,
}

/// `{"type": "ephemeral"}`: a prompt-cache breakpoint.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub(crate) struct CacheControl {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
}

const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

/// A system prompt block.
#[derive(Debug, Serialize)]
pub(crate) struct SystemBlock {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cache_control: Option<CacheControl>,
}

/// Extended thinking settings.
#[derive(Debug, Serialize)]
pub(crate) struct Thinking {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) budget_tokens: u32,
}

/// One message.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct WireMessage {
    pub(crate) role: &'static str,
    pub(crate) content: Vec<WireBlock>,
}

/// A content block.
#[derive(Debug, Serialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum WireBlock {
    Text {
        text: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Image {
        source: ImageSource,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: String,
        content: Vec<ResultBlock>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
}

impl WireBlock {
    /// Puts a cache breakpoint on this block; false for blocks that cannot carry one.
    fn mark_cache(&mut self) -> bool {
        match self {
            Self::Text { cache_control, .. }
            | Self::Image { cache_control, .. }
            | Self::ToolUse { cache_control, .. }
            | Self::ToolResult { cache_control, .. } => {
                *cache_control = Some(EPHEMERAL);
                true
            }
            Self::Thinking { .. } | Self::RedactedThinking { .. } => false,
        }
    }
}

/// Content of a tool result.
#[derive(Debug, Serialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ResultBlock {
    Text { text: String },
    Image { source: ImageSource },
}

/// A base64 image.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct ImageSource {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) media_type: String,
    pub(crate) data: String,
}

impl ImageSource {
    fn new(mime_type: &str, data: &[u8]) -> Self {
        Self {
            kind: "base64",
            media_type: mime_type.to_string(),
            data: base64(data),
        }
    }
}

/// A tool offered to the model.
#[derive(Debug, Serialize)]
pub(crate) struct WireTool {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) input_schema: Value,
}

impl WireTool {
    /// The tool whose input is the structured answer: named after the schema, with the
    /// schema as its input schema.
    pub(crate) fn answer(schema: &OutputSchema) -> Self {
        Self {
            name: schema.name.clone(),
            description: "Give the final answer: call this tool exactly once, with the answer \
                          as its input, matching the input schema."
                .to_string(),
            input_schema: schema.schema.clone(),
        }
    }
}

impl From<&ToolSpec> for WireTool {
    fn from(spec: &ToolSpec) -> Self {
        Self {
            name: spec.name.clone(),
            description: spec.description.clone(),
            input_schema: spec.parameters.clone(),
        }
    }
}

/// The system prompt as one cached block.
pub(crate) fn system(request: &ProviderRequest) -> Vec<SystemBlock> {
    match request.system.as_ref().filter(|s| !s.is_empty()) {
        Some(text) => vec![SystemBlock {
            kind: "text",
            text: text.clone(),
            cache_control: Some(EPHEMERAL),
        }],
        None => Vec::new(),
    }
}

/// The transcript as Messages API turns.
///
/// Tool results (role `tool`) become `tool_result` blocks with their `tool_use_id` in a
/// user turn; consecutive turns of the same role are merged, as the API requires
/// alternation. Reasoning goes back as `thinking` with its signature (or verbatim
/// `redacted_thinking`); unsigned reasoning (from another provider) is dropped. The last
/// block of the newest message gets a cache breakpoint.
pub(crate) fn messages(request: &ProviderRequest) -> Vec<WireMessage> {
    let mut out: Vec<WireMessage> = Vec::with_capacity(request.messages.len());
    for message in &request.messages {
        let role = match message.role {
            Role::Assistant => "assistant",
            Role::User | Role::Tool => "user",
        };
        let blocks: Vec<WireBlock> = message.content.iter().filter_map(block).collect();
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => out.push(WireMessage {
                role,
                content: blocks,
            }),
        }
    }
    if let Some(last) = out.last_mut() {
        if let Some(block) = last.content.iter_mut().rev().find(|b| {
            !matches!(
                b,
                WireBlock::Thinking { .. } | WireBlock::RedactedThinking { .. }
            )
        }) {
            block.mark_cache();
        }
    }
    out
}

fn block(block: &ContentBlock) -> Option<WireBlock> {
    Some(match block {
        ContentBlock::Text { text } if text.is_empty() => return None,
        ContentBlock::Text { text } => WireBlock::Text {
            text: text.clone(),
            cache_control: None,
        },
        ContentBlock::Image { mime_type, data } => WireBlock::Image {
            source: ImageSource::new(mime_type, data),
            cache_control: None,
        },
        ContentBlock::Reasoning {
            text,
            signature,
            opaque,
        } => {
            if let Some(Opaque::RedactedThinking { data }) = opaque.as_ref().and_then(Opaque::of) {
                WireBlock::RedactedThinking {
                    data: data.to_string(),
                }
            } else {
                WireBlock::Thinking {
                    thinking: text.clone(),
                    signature: signature.clone().filter(|s| !s.is_empty())?,
                }
            }
        }
        ContentBlock::ToolCall(call) => WireBlock::ToolUse {
            id: call.id.clone(),
            name: call.name.clone(),
            input: args_object(&call.args),
            cache_control: None,
        },
        ContentBlock::ToolResult {
            call_id,
            is_error,
            content,
        } => {
            let mut parts: Vec<ResultBlock> = content
                .iter()
                .filter_map(|part| match part {
                    ContentBlock::Text { text } if !text.is_empty() => {
                        Some(ResultBlock::Text { text: text.clone() })
                    }
                    ContentBlock::Image { mime_type, data } => Some(ResultBlock::Image {
                        source: ImageSource::new(mime_type, data),
                    }),
                    _ => None,
                })
                .collect();
            if parts.is_empty() {
                parts.push(ResultBlock::Text {
                    text: "(no output)".into(),
                });
            }
            WireBlock::ToolResult {
                tool_use_id: call_id.clone(),
                content: parts,
                is_error: *is_error,
                cache_control: None,
            }
        }
    })
}
