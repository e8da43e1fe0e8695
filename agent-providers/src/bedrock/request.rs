//! Converse request wire types and the transcript mapping.

use agent_core::{
    message::Role,
    provider::{ProviderRequest, ToolSpec},
    ContentBlock,
};
use serde::Serialize;
use serde_json::Value;

use crate::anthropic::request::Thinking;
use crate::catalog::{self, Family, Reasoning};
use crate::opaque::Opaque;
use crate::transcript::{args_object, base64};

/// The body of `converse-stream`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConverseRequest {
    pub(crate) messages: Vec<Message>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) system: Vec<SystemBlock>,
    pub(crate) inference_config: InferenceConfig,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_config: Option<ToolConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) additional_model_request_fields: Option<AdditionalFields>,
}

/// `inferenceConfig`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InferenceConfig {
    pub(crate) max_tokens: u32,
}

/// `additionalModelRequestFields`: fields of the model's own API (Anthropic's here).
#[derive(Debug, Serialize)]
pub(crate) struct AdditionalFields {
    pub(crate) thinking: Thinking,
}

/// A system prompt block (`{"text": …}`).
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct SystemBlock {
    pub(crate) text: String,
}

/// `toolConfig`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolConfig {
    pub(crate) tools: Vec<Tool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_choice: Option<ToolChoice>,
}

/// A tool offered to the model (`{"toolSpec": …}`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Tool {
    pub(crate) tool_spec: ToolSpecification,
}

/// `toolSpec`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolSpecification {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) input_schema: InputSchema,
}

/// `inputSchema`: the tool's JSON schema.
#[derive(Debug, Serialize)]
pub(crate) struct InputSchema {
    pub(crate) json: Value,
}

impl Tool {
    fn new(name: &str, description: &str, schema: &Value) -> Self {
        Self {
            tool_spec: ToolSpecification {
                name: name.to_string(),
                description: description.to_string(),
                input_schema: InputSchema {
                    json: schema.clone(),
                },
            },
        }
    }
}

impl From<&ToolSpec> for Tool {
    fn from(spec: &ToolSpec) -> Self {
        Self::new(&spec.name, &spec.description, &spec.parameters)
    }
}

/// `toolChoice`.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) enum ToolChoice {
    /// The model must call one of the tools (`{"any": {}}`).
    Any {},
    /// The model must call the named tool.
    Tool {
        /// Tool name.
        name: String,
    },
}

/// One message: `role` and content blocks.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct Message {
    pub(crate) role: &'static str,
    pub(crate) content: Vec<Block>,
}

/// A content block: a one-key object named after its kind.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Block {
    Text(String),
    Image(Image),
    ReasoningContent(ReasoningContent),
    ToolUse(ToolUse),
    ToolResult(ToolResult),
}

/// An image: its format and bytes (base64 in JSON).
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct Image {
    pub(crate) format: String,
    pub(crate) source: ImageSource,
}

/// `source` of an image.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct ImageSource {
    pub(crate) bytes: String,
}

impl Image {
    fn new(mime_type: &str, data: &[u8]) -> Self {
        Self {
            format: image_format(mime_type).to_string(),
            source: ImageSource {
                bytes: base64(data),
            },
        }
    }
}

/// `reasoningContent`: signed reasoning text, or Claude's redacted reasoning.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) enum ReasoningContent {
    ReasoningText { text: String, signature: String },
    RedactedContent(String),
}

/// A tool call of the model, sent back.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolUse {
    pub(crate) tool_use_id: String,
    pub(crate) name: String,
    pub(crate) input: Value,
}

/// A tool's result.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolResult {
    pub(crate) tool_use_id: String,
    pub(crate) content: Vec<ResultBlock>,
    pub(crate) status: ToolStatus,
}

/// Content of a tool result.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) enum ResultBlock {
    Text(String),
    Image(Image),
}

/// `status` of a tool result.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) enum ToolStatus {
    Success,
    Error,
}

/// `png`, `jpeg`, `gif` or `webp` of an image MIME type.
fn image_format(mime_type: &str) -> &str {
    match mime_type.trim_start_matches("image/") {
        "jpg" => "jpeg",
        other => other,
    }
}

/// The body for `request` on `model` (a Bedrock model id).
pub(crate) fn body(request: &ProviderRequest, model: &str) -> ConverseRequest {
    let spec = super::anthropic_id(model)
        .and_then(catalog::lookup)
        .filter(|m| m.family == Family::Anthropic);
    let max_tokens = request
        .max_output_tokens
        .or(spec.map(|s| s.max_output))
        .unwrap_or(catalog::UNKNOWN_MAX_OUTPUT)
        .max(1);
    let thinking = match (spec.map(|s| s.reasoning), &request.output_schema) {
        (Some(Reasoning::Budget | Reasoning::BudgetAndEffort(_)), None) => {
            catalog::thinking_budget(request.reasoning, max_tokens)
        }
        _ => None,
    };
    let mut tools: Vec<Tool> = request.tools.iter().map(Tool::from).collect();
    let tool_choice = request.output_schema.as_ref().map(|schema| {
        let choice = match tools.is_empty() {
            true => ToolChoice::Tool {
                name: schema.name.clone(),
            },
            false => ToolChoice::Any {},
        };
        tools.push(Tool::new(
            &schema.name,
            "Give the final answer: call this tool exactly once, with the answer as its input, \
             matching the input schema.",
            &schema.schema,
        ));
        choice
    });
    ConverseRequest {
        messages: messages(request),
        system: request
            .system
            .iter()
            .filter(|s| !s.is_empty())
            .map(|text| SystemBlock { text: text.clone() })
            .collect(),
        inference_config: InferenceConfig { max_tokens },
        tool_config: (!tools.is_empty()).then_some(ToolConfig { tools, tool_choice }),
        additional_model_request_fields: thinking.map(|budget| AdditionalFields {
            thinking: Thinking {
                kind: "enabled",
                budget_tokens: budget,
            },
        }),
    }
}

/// The transcript as Converse messages: tool results in user turns, consecutive turns of
/// one role merged (Converse requires alternation), reasoning sent back only when it is
/// signed or redacted (Claude's, from Bedrock or Anthropic).
pub(crate) fn messages(request: &ProviderRequest) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(request.messages.len());
    for message in &request.messages {
        let role = match message.role {
            Role::Assistant => "assistant",
            Role::User | Role::Tool => "user",
        };
        let blocks: Vec<Block> = message.content.iter().filter_map(block).collect();
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => out.push(Message {
                role,
                content: blocks,
            }),
        }
    }
    out
}

fn block(block: &ContentBlock) -> Option<Block> {
    Some(match block {
        ContentBlock::Text { text } if text.is_empty() => return None,
        ContentBlock::Text { text } => Block::Text(text.clone()),
        ContentBlock::Image { mime_type, data } => Block::Image(Image::new(mime_type, data)),
        ContentBlock::Reasoning {
            text,
            signature,
            opaque,
        } => {
            let redacted = match opaque.as_ref().and_then(Opaque::of) {
                Some(Opaque::RedactedThinking { data }) => Some(data),
                _ => None,
            };
            Block::ReasoningContent(
                match (redacted, signature.as_deref().filter(|s| !s.is_empty())) {
                    (Some(data), _) => ReasoningContent::RedactedContent(data.to_string()),
                    (None, Some(signature)) => ReasoningContent::ReasoningText {
                        text: text.clone(),
                        signature: signature.to_string(),
                    },
                    (None, None) => return None,
                },
            )
        }
        ContentBlock::ToolCall(call) => Block::ToolUse(ToolUse {
            tool_use_id: call.id.clone(),
            name: call.name.clone(),
            input: args_object(&call.args),
        }),
        ContentBlock::ToolResult {
            call_id,
            is_error,
            content,
        } => {
            let mut parts: Vec<ResultBlock> = content
                .iter()
                .filter_map(|part| match part {
                    ContentBlock::Text { text } if !text.is_empty() => {
                        Some(ResultBlock::Text(text.clone()))
                    }
                    ContentBlock::Image { mime_type, data } => {
                        Some(ResultBlock::Image(Image::new(mime_type, data)))
                    }
                    _ => None,
                })
                .collect();
            if parts.is_empty() {
                parts.push(ResultBlock::Text("(no output)".into()));
            }
            Block::ToolResult(ToolResult {
                tool_use_id: call_id.clone(),
                content: parts,
                status: match is_error {
                    true => ToolStatus::Error,
                    false => ToolStatus::Success,
                },
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::{message::ToolCall, provider::OutputSchema, Message, ReasoningLevel};
    use serde_json::json;

    #[test]
    fn every_block_kind_and_the_answer_tool_have_converse_shapes() {
        let request = ProviderRequest {
            model: "m".into(),
            system: Some("Be brief.".into()),
            messages: vec![
                Message::new(
                    Role::User,
                    vec![
                        ContentBlock::text("look"),
                        ContentBlock::image("image/jpg", vec![1u8, 2]),
                    ],
                ),
                Message::new(
                    Role::Assistant,
                    vec![
                        ContentBlock::Reasoning {
                            text: "hidden".into(),
                            signature: None,
                            opaque: Some(json!({"type": "redacted_thinking", "data": "RED"})),
                        },
                        ContentBlock::Reasoning {
                            text: "unsigned".into(),
                            signature: None,
                            opaque: None,
                        },
                        ContentBlock::ToolCall(ToolCall {
                            id: "t1".into(),
                            name: "read".into(),
                            args: Value::Null,
                        }),
                    ],
                ),
                Message::new(
                    Role::Tool,
                    vec![ContentBlock::ToolResult {
                        call_id: "t1".into(),
                        is_error: true,
                        content: vec![],
                    }],
                ),
                Message::new(
                    Role::User,
                    vec![ContentBlock::ToolResult {
                        call_id: "t2".into(),
                        is_error: false,
                        content: vec![
                            ContentBlock::text("seen"),
                            ContentBlock::image("image/png", vec![3u8]),
                        ],
                    }],
                ),
            ],
            tools: vec![ToolSpec {
                name: "read".into(),
                description: "Reads.".into(),
                parameters: json!({"type": "object"}),
            }],
            reasoning: ReasoningLevel::default(),
            max_output_tokens: Some(100),
            output_schema: Some(OutputSchema {
                name: "verdict".into(),
                schema: json!({"type": "object"}),
                strict: true,
            }),
            session_id: None,
        };
        let wire = serde_json::to_value(body(
            &request,
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        ))
        .expect("serializes");
        let answer = "Give the final answer: call this tool exactly once, with the answer as its \
                      input, matching the input schema.";
        assert_eq!(
            wire,
            json!({
                "messages": [
                    {"role": "user", "content": [
                        {"text": "look"},
                        {"image": {"format": "jpeg", "source": {"bytes": "AQI="}}}
                    ]},
                    {"role": "assistant", "content": [
                        {"reasoningContent": {"redactedContent": "RED"}},
                        {"toolUse": {"toolUseId": "t1", "name": "read", "input": {}}}
                    ]},
                    {"role": "user", "content": [
                        {"toolResult": {"toolUseId": "t1", "content": [{"text": "(no output)"}], "status": "error"}},
                        {"toolResult": {"toolUseId": "t2", "content": [
                            {"text": "seen"},
                            {"image": {"format": "png", "source": {"bytes": "Aw=="}}}
                        ], "status": "success"}}
                    ]}
                ],
                "system": [{"text": "Be brief."}],
                "inferenceConfig": {"maxTokens": 100},
                "toolConfig": {
                    "tools": [
                        {"toolSpec": {"name": "read", "description": "Reads.", "inputSchema": {"json": {"type": "object"}}}},
                        {"toolSpec": {"name": "verdict", "description": answer, "inputSchema": {"json": {"type": "object"}}}}
                    ],
                    "toolChoice": {"any": {}}
                }
            })
        );
    }
}
