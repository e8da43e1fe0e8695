//! Converse request wire types and the transcript mapping.

use agent_core::{message::Role, provider::ProviderRequest, ContentBlock};
use serde::Serialize;
use serde_json::{json, Value};

use crate::catalog::{self, Family, Reasoning};
use crate::transcript::{args_object, base64};

/// The body of `converse-stream`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConverseRequest {
    pub(crate) messages: Vec<Message>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) system: Vec<Value>,
    pub(crate) inference_config: InferenceConfig,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_config: Option<ToolConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) additional_model_request_fields: Option<Value>,
}

/// `inferenceConfig`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InferenceConfig {
    pub(crate) max_tokens: u32,
}

/// `toolConfig`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolConfig {
    pub(crate) tools: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_choice: Option<Value>,
}

/// One message: `role` and content blocks (each a one-key object).
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct Message {
    pub(crate) role: &'static str,
    pub(crate) content: Vec<Value>,
}

fn tool_spec(name: &str, description: &str, schema: &Value) -> Value {
    json!({"toolSpec": {"name": name, "description": description, "inputSchema": {"json": schema}}})
}

/// `png`, `jpeg`, `gif` or `webp` of an image MIME type.
fn image_format(mime_type: &str) -> &str {
    match mime_type.trim_start_matches("image/") {
        "jpg" => "jpeg",
        other => other,
    }
}

fn image(mime_type: &str, data: &[u8]) -> Value {
    json!({"image": {"format": image_format(mime_type), "source": {"bytes": base64(data)}}})
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
    let mut tools: Vec<Value> = request
        .tools
        .iter()
        .map(|t| tool_spec(&t.name, &t.description, &t.parameters))
        .collect();
    let tool_choice = request.output_schema.as_ref().map(|schema| {
        let choice = match tools.is_empty() {
            true => json!({"tool": {"name": schema.name}}),
            false => json!({"any": {}}),
        };
        tools.push(tool_spec(
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
            .map(|text| json!({"text": text}))
            .collect(),
        inference_config: InferenceConfig { max_tokens },
        tool_config: (!tools.is_empty()).then_some(ToolConfig { tools, tool_choice }),
        additional_model_request_fields: thinking
            .map(|budget| json!({"thinking": {"type": "enabled", "budget_tokens": budget}})),
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
        let blocks: Vec<Value> = message.content.iter().filter_map(block).collect();
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

fn block(block: &ContentBlock) -> Option<Value> {
    Some(match block {
        ContentBlock::Text { text } if text.is_empty() => return None,
        ContentBlock::Text { text } => json!({"text": text}),
        ContentBlock::Image { mime_type, data } => image(mime_type, data),
        ContentBlock::Reasoning {
            text,
            signature,
            opaque,
        } => {
            let redacted = opaque
                .as_ref()
                .filter(|o| o.get("type").and_then(Value::as_str) == Some("redacted_thinking"))
                .and_then(|o| o.get("data"))
                .and_then(Value::as_str);
            match (redacted, signature.as_deref().filter(|s| !s.is_empty())) {
                (Some(data), _) => json!({"reasoningContent": {"redactedContent": data}}),
                (None, Some(signature)) => json!({"reasoningContent": {
                    "reasoningText": {"text": text, "signature": signature}}}),
                (None, None) => return None,
            }
        }
        ContentBlock::ToolCall(call) => json!({"toolUse": {
            "toolUseId": call.id, "name": call.name, "input": args_object(&call.args)}}),
        ContentBlock::ToolResult {
            call_id,
            is_error,
            content,
        } => {
            let mut parts: Vec<Value> = content
                .iter()
                .filter_map(|part| match part {
                    ContentBlock::Text { text } if !text.is_empty() => Some(json!({"text": text})),
                    ContentBlock::Image { mime_type, data } => Some(image(mime_type, data)),
                    _ => None,
                })
                .collect();
            if parts.is_empty() {
                parts.push(json!({"text": "(no output)"}));
            }
            json!({"toolResult": {
                "toolUseId": call_id,
                "content": parts,
                "status": if *is_error { "error" } else { "success" },
            }})
        }
    })
}
