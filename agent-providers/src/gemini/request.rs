//! `GenerateContentRequest` wire types (the Gemini API's and Vertex AI's) and the transcript
//! mapping.

use std::collections::HashMap;

use agent_core::{
    message::Role,
    provider::{ProviderRequest, ToolSpec},
    ContentBlock, Message, ReasoningLevel,
};
use serde::Serialize;
use serde_json::Value;

use crate::catalog::{self, Family, Reasoning};
use crate::opaque::Opaque;
use crate::transcript::{args_object, base64, text_of};

/// Prefix of the call ids made here for calls Gemini sent without one; never sent back.
pub(crate) const CALL_ID_PREFIX: &str = "gemini_call";
/// Google's documented placeholder for a function call whose signature is unknown (history
/// from another model): it tells Gemini 3 to skip the signature check.
pub(crate) const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

/// Which service the body is for: Vertex AI knows no function-call `id`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// The Gemini API.
    Gemini,
    /// Vertex AI.
    Vertex,
}

/// The body of `:streamGenerateContent`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GenerateContentRequest {
    pub(crate) contents: Vec<Content>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) system_instruction: Option<Content>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) tools: Vec<Tool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_config: Option<ToolConfig>,
    pub(crate) generation_config: GenerationConfig,
}

/// `toolConfig`.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolConfig {
    pub(crate) function_calling_config: FunctionCallingConfig,
}

/// `functionCallingConfig`.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct FunctionCallingConfig {
    pub(crate) mode: FunctionCallingMode,
}

/// How the model may call functions.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub(crate) enum FunctionCallingMode {
    /// The model must call a function.
    Any,
}

/// A turn: its role and parts.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct Content {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) role: Option<&'static str>,
    pub(crate) parts: Vec<Part>,
}

/// One part: its data, whether it is a thought, and its thought signature.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Part {
    #[serde(flatten)]
    pub(crate) data: PartData,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) thought: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) thought_signature: Option<String>,
}

impl Part {
    fn new(data: PartData) -> Self {
        Self {
            data,
            thought: false,
            thought_signature: None,
        }
    }
}

/// What a part holds.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) enum PartData {
    Text(String),
    InlineData(Blob),
    FunctionCall(FunctionCall),
    FunctionResponse(FunctionResponse),
}

/// Inline bytes (`inlineData`).
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Blob {
    pub(crate) mime_type: String,
    pub(crate) data: String,
}

/// A function call of the model, sent back.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct FunctionCall {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<String>,
    pub(crate) name: String,
    pub(crate) args: Value,
}

/// A tool's result.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct FunctionResponse {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<String>,
    pub(crate) name: String,
    pub(crate) response: ResponseBody,
}

/// `response` of a tool's result: `{"output": …}`, or `{"error": …}` when it failed.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ResponseBody {
    Output(String),
    Error(String),
}

/// `tools: [{"functionDeclarations": [...]}]`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Tool {
    pub(crate) function_declarations: Vec<FunctionDeclaration>,
}

/// A function the model may call.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FunctionDeclaration {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) parameters_json_schema: Value,
}

impl From<&ToolSpec> for FunctionDeclaration {
    fn from(spec: &ToolSpec) -> Self {
        Self {
            name: spec.name.clone(),
            description: spec.description.clone(),
            parameters_json_schema: spec.parameters.clone(),
        }
    }
}

/// `generationConfig`.
#[derive(Debug, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GenerationConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) thinking_config: Option<ThinkingConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) response_mime_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) response_json_schema: Option<Value>,
}

/// `thinkingConfig`.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ThinkingConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) thinking_budget: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) thinking_level: Option<&'static str>,
    pub(crate) include_thoughts: bool,
}

/// The thinking settings of `model` for `level`, from the catalogue (none for models it
/// does not know to think).
fn thinking(model: &str, level: ReasoningLevel) -> Option<ThinkingConfig> {
    match catalog::lookup(model)
        .filter(|m| m.family == Family::Gemini)
        .map(|m| m.reasoning)?
    {
        Reasoning::ThinkingBudget { min, max } => {
            let budget = catalog::gemini_budget(level, min, max);
            Some(ThinkingConfig {
                thinking_budget: Some(budget),
                thinking_level: None,
                include_thoughts: budget > 0,
            })
        }
        Reasoning::ThinkingLevel(accepted) => Some(ThinkingConfig {
            thinking_budget: None,
            thinking_level: catalog::gemini_level(level, accepted),
            include_thoughts: true,
        }),
        _ => None,
    }
}

/// The name of the function whose arguments are the structured answer, when `request` asks
/// for one on a model that cannot combine function calling with a JSON response (before
/// Gemini 3): the model is made to call a function (`mode: ANY`) and this one gives the
/// answer, as Anthropic's answer tool does.
pub(crate) fn answer_tool(request: &ProviderRequest, model: &str) -> Option<String> {
    request
        .output_schema
        .as_ref()
        .filter(|_| !request.tools.is_empty() && !checks_signatures(model))
        .map(|schema| schema.name.clone())
}

/// The body for `request` on `model`.
pub(crate) fn body(
    request: &ProviderRequest,
    model: &str,
    dialect: Dialect,
) -> GenerateContentRequest {
    let answer = answer_tool(request, model);
    let schema = request.output_schema.as_ref().filter(|_| answer.is_none());
    let mut declarations: Vec<FunctionDeclaration> = request
        .tools
        .iter()
        .map(FunctionDeclaration::from)
        .collect();
    let tool_config = match (&answer, &request.output_schema) {
        (Some(name), Some(output)) => {
            declarations.push(FunctionDeclaration {
                name: name.clone(),
                description: "Give the final answer: call this function exactly once, with the \
                              answer as its arguments, matching its parameters."
                    .to_string(),
                parameters_json_schema: output.schema.clone(),
            });
            Some(ToolConfig {
                function_calling_config: FunctionCallingConfig {
                    mode: FunctionCallingMode::Any,
                },
            })
        }
        _ => None,
    };
    GenerateContentRequest {
        contents: contents(&request.messages, model, dialect),
        system_instruction: request
            .system
            .as_ref()
            .filter(|s| !s.is_empty())
            .map(|text| Content {
                role: None,
                parts: vec![Part::new(PartData::Text(text.clone()))],
            }),
        tools: match declarations.is_empty() {
            true => Vec::new(),
            false => vec![Tool {
                function_declarations: declarations,
            }],
        },
        tool_config,
        generation_config: GenerationConfig {
            max_output_tokens: request.max_output_tokens,
            thinking_config: thinking(model, request.reasoning),
            response_mime_type: schema.map(|_| "application/json"),
            response_json_schema: schema.map(|s| s.schema.clone()),
        },
    }
}

/// Whether `model` checks function-call signatures (Gemini 3 and later): the placeholder
/// is sent only to those.
fn checks_signatures(model: &str) -> bool {
    let model = model.rsplit('/').next().unwrap_or(model);
    !["gemini-1", "gemini-2"]
        .iter()
        .any(|p| model.starts_with(p))
}

/// The transcript as Gemini contents.
///
/// Assistant turns become `model` contents whose parts carry back the thought signatures
/// they came with; tool results become `functionResponse` parts of a `user` content, named
/// after their call (found in the earlier assistant turns). Consecutive contents of one
/// role are merged, and contents without parts are left out.
pub(crate) fn contents(messages: &[Message], model: &str, dialect: Dialect) -> Vec<Content> {
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut out: Vec<Content> = Vec::with_capacity(messages.len());
    for message in messages {
        let (role, parts) = match message.role {
            Role::Assistant => ("model", model_parts(message, model, dialect, &mut names)),
            Role::User | Role::Tool => ("user", user_parts(message, dialect, &names)),
        };
        if parts.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == Some(role) => last.parts.extend(parts),
            _ => out.push(Content {
                role: Some(role),
                parts,
            }),
        }
    }
    out
}

fn call_id(id: &str, dialect: Dialect) -> Option<String> {
    (dialect == Dialect::Gemini && !id.is_empty() && !id.starts_with(CALL_ID_PREFIX))
        .then(|| id.to_string())
}

fn model_parts<'a>(
    message: &'a Message,
    model: &str,
    dialect: Dialect,
    names: &mut HashMap<&'a str, &'a str>,
) -> Vec<Part> {
    // Signatures of calls come before their call: collect them first.
    let call_signatures: HashMap<&str, &str> = message
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Reasoning {
                opaque: Some(opaque),
                ..
            } => match Opaque::of(opaque)? {
                Opaque::GeminiSignature {
                    thought_signature,
                    call_id: Some(call),
                } => Some((call, thought_signature)),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let mut parts: Vec<Part> = Vec::new();
    let mut first_call = true;
    for block in &message.content {
        match block {
            ContentBlock::Text { text } if !text.is_empty() => {
                parts.push(Part::new(PartData::Text(text.clone())))
            }
            ContentBlock::Image { mime_type, data } => {
                parts.push(Part::new(PartData::InlineData(Blob {
                    mime_type: mime_type.clone(),
                    data: base64(data),
                })))
            }
            ContentBlock::Reasoning {
                text,
                opaque: Some(opaque),
                ..
            } => match Opaque::of(opaque) {
                Some(Opaque::GeminiThought { thought_signature }) => parts.push(Part {
                    data: PartData::Text(text.clone()),
                    thought: true,
                    thought_signature: Some(thought_signature.to_string()),
                }),
                // A text part's signature: back on the text it followed.
                Some(Opaque::GeminiSignature {
                    thought_signature: signature,
                    call_id: None,
                }) => {
                    if let Some(part) = parts.last_mut().filter(|p| {
                        !p.thought
                            && p.thought_signature.is_none()
                            && matches!(p.data, PartData::Text(_))
                    }) {
                        part.thought_signature = Some(signature.to_string());
                    }
                }
                _ => {}
            },
            ContentBlock::ToolCall(call) => {
                names.insert(call.id.as_str(), call.name.as_str());
                let signature = call_signatures
                    .get(call.id.as_str())
                    .map(|s| s.to_string())
                    .or_else(|| {
                        (first_call && checks_signatures(model)).then(|| SKIP_SIGNATURE.to_string())
                    });
                first_call = false;
                parts.push(Part {
                    data: PartData::FunctionCall(FunctionCall {
                        id: call_id(&call.id, dialect),
                        name: call.name.clone(),
                        args: args_object(&call.args),
                    }),
                    thought: false,
                    thought_signature: signature,
                });
            }
            _ => {}
        }
    }
    parts
}

fn user_parts(message: &Message, dialect: Dialect, names: &HashMap<&str, &str>) -> Vec<Part> {
    let mut parts: Vec<Part> = Vec::new();
    let mut images: Vec<Part> = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::Text { text } if !text.is_empty() => {
                parts.push(Part::new(PartData::Text(text.clone())))
            }
            ContentBlock::Image { mime_type, data } => {
                parts.push(Part::new(PartData::InlineData(Blob {
                    mime_type: mime_type.clone(),
                    data: base64(data),
                })))
            }
            ContentBlock::ToolResult {
                call_id: id,
                is_error,
                content,
            } => {
                let text = text_of(content);
                let response = match is_error {
                    true => ResponseBody::Error(text),
                    false => ResponseBody::Output(text),
                };
                parts.push(Part::new(PartData::FunctionResponse(FunctionResponse {
                    id: call_id(id, dialect),
                    name: names
                        .get(id.as_str())
                        .copied()
                        .unwrap_or("unknown_tool")
                        .to_string(),
                    response,
                })));
                images.extend(content.iter().filter_map(|part| match part {
                    ContentBlock::Image { mime_type, data } => {
                        Some(Part::new(PartData::InlineData(Blob {
                            mime_type: mime_type.clone(),
                            data: base64(data),
                        })))
                    }
                    _ => None,
                }));
            }
            _ => {}
        }
    }
    parts.extend(images);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::message::ToolCall;
    use serde_json::json;

    fn reasoning(text: &str, opaque: Value) -> ContentBlock {
        ContentBlock::Reasoning {
            text: text.into(),
            signature: None,
            opaque: Some(opaque),
        }
    }

    #[test]
    fn signatures_go_back_on_their_parts() {
        let assistant = Message::new(
            Role::Assistant,
            vec![
                reasoning(
                    "planning",
                    json!({"type": "gemini_thought", "thoughtSignature": "T1"}),
                ),
                ContentBlock::text("Checking."),
                reasoning(
                    "",
                    json!({"type": "gemini_signature", "thoughtSignature": "S0"}),
                ),
                reasoning(
                    "",
                    json!({"type": "gemini_signature", "thoughtSignature": "S1", "callId": "gemini_call_1"}),
                ),
                ContentBlock::ToolCall(ToolCall {
                    id: "gemini_call_1".into(),
                    name: "get_weather".into(),
                    args: json!({"city": "Paris"}),
                }),
                ContentBlock::ToolCall(ToolCall {
                    id: "fc-7".into(),
                    name: "get_weather".into(),
                    args: Value::Null,
                }),
            ],
        );
        let results = Message::new(
            Role::Tool,
            vec![
                ContentBlock::ToolResult {
                    call_id: "gemini_call_1".into(),
                    is_error: false,
                    content: vec![
                        ContentBlock::text("sunny"),
                        ContentBlock::image("image/png", vec![1u8, 2]),
                    ],
                },
                ContentBlock::ToolResult {
                    call_id: "fc-7".into(),
                    is_error: true,
                    content: vec![ContentBlock::text("no such city")],
                },
            ],
        );
        let messages = [Message::user_text("weather?"), assistant, results];
        let wire =
            serde_json::to_value(contents(&messages, "gemini-3-pro-preview", Dialect::Gemini))
                .expect("serializes");
        assert_eq!(
            wire,
            json!([
                {"role": "user", "parts": [{"text": "weather?"}]},
                {"role": "model", "parts": [
                    {"text": "planning", "thought": true, "thoughtSignature": "T1"},
                    {"text": "Checking.", "thoughtSignature": "S0"},
                    {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "S1"},
                    {"functionCall": {"id": "fc-7", "name": "get_weather", "args": {}}}
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "get_weather", "response": {"output": "sunny"}}},
                    {"functionResponse": {"id": "fc-7", "name": "get_weather", "response": {"error": "no such city"}}},
                    {"inlineData": {"mimeType": "image/png", "data": "AQI="}}
                ]}
            ])
        );
        // Vertex has no call ids.
        let wire =
            serde_json::to_value(contents(&messages, "gemini-3-pro-preview", Dialect::Vertex))
                .expect("serializes");
        assert!(!wire.to_string().contains("fc-7"), "{wire}");
    }

    #[test]
    fn calls_from_another_model_get_the_placeholder_on_gemini_3_only() {
        let assistant = Message::new(
            Role::Assistant,
            vec![ContentBlock::ToolCall(ToolCall {
                id: "toolu_1".into(),
                name: "read".into(),
                args: json!({}),
            })],
        );
        let sent = |model: &str| {
            serde_json::to_value(contents(
                std::slice::from_ref(&assistant),
                model,
                Dialect::Gemini,
            ))
            .expect("serializes")[0]["parts"][0]["thoughtSignature"]
                .clone()
        };
        assert_eq!(sent("gemini-3-pro-preview"), SKIP_SIGNATURE);
        assert_eq!(sent("gemini-2.5-flash"), Value::Null);
    }
    #[test]
    fn an_answer_function_is_forced_with_mode_any_before_gemini_3() {
        let request = ProviderRequest {
            model: "gemini-2.5-flash".into(),
            system: None,
            messages: vec![Message::user_text("verdict?")],
            tools: vec![ToolSpec {
                name: "read".into(),
                description: "Reads.".into(),
                parameters: json!({"type": "object"}),
            }],
            reasoning: ReasoningLevel::default(),
            max_output_tokens: None,
            output_schema: Some(agent_core::provider::OutputSchema {
                name: "verdict".into(),
                schema: json!({"type": "object"}),
                strict: true,
            }),
            session_id: None,
        };
        let wire = serde_json::to_value(body(&request, "gemini-2.5-flash", Dialect::Gemini))
            .expect("serializes");
        assert_eq!(
            wire["toolConfig"],
            json!({"functionCallingConfig": {"mode": "ANY"}})
        );
        assert_eq!(
            wire["tools"][0]["functionDeclarations"][1]["name"],
            "verdict"
        );
        assert!(wire["generationConfig"].get("responseJsonSchema").is_none());
        let wire = serde_json::to_value(body(&request, "gemini-3-pro-preview", Dialect::Gemini))
            .expect("serializes");
        assert!(wire.get("toolConfig").is_none(), "{wire}");
    }
}
