//! `GenerateContentResponse` chunks (one per server-sent event, or a whole JSON document or
//! array of them) and the decoder.
//!
//! Gemini has no terminal event: a chunk with a `finishReason` (or a prompt blocked by
//! `promptFeedback.blockReason`) completes the answer, and a body that ends without one was
//! cut. `usageMetadata` is cumulative; the last one counts.

use agent_core::{
    provider::{ProviderError, ProviderErrorKind, ProviderEvent, ProviderStop},
    Usage,
};
use serde::Deserialize;
use serde_json::Value;

use super::errors::{stream_error, GoogleError};
use super::request::CALL_ID_PREFIX;
use crate::opaque::Opaque;
use crate::sse::{decode_error, truncated_stream, Decoder};
use crate::transcript::{lenient_count, lenient_nonempty, lenient_text, lenient_vec};

/// One chunk of the answer.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Chunk {
    #[serde(default, deserialize_with = "lenient_vec")]
    pub(crate) candidates: Vec<Candidate>,
    #[serde(default)]
    pub(crate) usage_metadata: Option<UsageMetadata>,
    #[serde(default)]
    pub(crate) prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    pub(crate) error: Option<GoogleError>,
}

/// `candidates[]`: only the first is read (one is asked for).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Candidate {
    #[serde(default)]
    pub(crate) content: Option<ChunkContent>,
    #[serde(default, deserialize_with = "lenient_nonempty")]
    pub(crate) finish_reason: Option<String>,
    #[serde(default, deserialize_with = "lenient_nonempty")]
    pub(crate) finish_message: Option<String>,
}

/// `candidates[].content`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ChunkContent {
    #[serde(default, deserialize_with = "lenient_vec")]
    pub(crate) parts: Vec<ChunkPart>,
}

/// One part of a chunk; unknown kinds (code execution, files) carry nothing we show.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ChunkPart {
    #[serde(default, deserialize_with = "lenient_text")]
    pub(crate) text: Option<String>,
    #[serde(default)]
    pub(crate) thought: Option<bool>,
    #[serde(default, deserialize_with = "lenient_nonempty")]
    pub(crate) thought_signature: Option<String>,
    #[serde(default)]
    pub(crate) function_call: Option<WireCall>,
}

/// A function call, whole.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireCall {
    #[serde(default, deserialize_with = "lenient_nonempty")]
    pub(crate) id: Option<String>,
    #[serde(default, deserialize_with = "lenient_nonempty")]
    pub(crate) name: Option<String>,
    #[serde(default)]
    pub(crate) args: Option<Value>,
}

/// `usageMetadata`; every count may be missing.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UsageMetadata {
    #[serde(default, deserialize_with = "lenient_count")]
    pub(crate) prompt_token_count: Option<u64>,
    #[serde(default, deserialize_with = "lenient_count")]
    pub(crate) candidates_token_count: Option<u64>,
    #[serde(default, deserialize_with = "lenient_count")]
    pub(crate) thoughts_token_count: Option<u64>,
    #[serde(default, deserialize_with = "lenient_count")]
    pub(crate) cached_content_token_count: Option<u64>,
    #[serde(default, deserialize_with = "lenient_count")]
    pub(crate) tool_use_prompt_token_count: Option<u64>,
}

impl UsageMetadata {
    /// As the event model counts: `promptTokenCount` includes the cached tokens, the
    /// output includes the thoughts.
    fn usage(&self) -> Usage {
        let cached = self.cached_content_token_count.unwrap_or(0);
        let prompt =
            self.prompt_token_count.unwrap_or(0) + self.tool_use_prompt_token_count.unwrap_or(0);
        let thoughts = self.thoughts_token_count;
        Usage {
            input: prompt.saturating_sub(cached),
            output: self.candidates_token_count.unwrap_or(0) + thoughts.unwrap_or(0),
            reasoning: thoughts,
            cache_read: cached,
            cache_write: 0,
            cost_usd: None,
        }
    }
}

/// `promptFeedback`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptFeedback {
    #[serde(default, deserialize_with = "lenient_nonempty")]
    pub(crate) block_reason: Option<String>,
}

/// Decodes Gemini chunks into provider events.
#[derive(Debug, Default)]
pub(crate) struct GeminiDecoder {
    /// A thought summary is open; its signature if one came.
    thinking: Option<Option<String>>,
    /// The function whose arguments are the structured answer, if the request has one.
    answer_tool: Option<String>,
    answered: bool,
    any_call: bool,
    usage: Option<UsageMetadata>,
    finish: Option<String>,
    blocked: bool,
    finished: bool,
}

impl GeminiDecoder {
    /// A decoder; `answer_tool` names the function whose arguments are the answer.
    pub(crate) fn new(answer_tool: Option<String>) -> Self {
        Self {
            answer_tool,
            ..Self::default()
        }
    }

    fn close_thinking(&mut self, out: &mut Vec<ProviderEvent>) {
        if let Some(signature) = self.thinking.take() {
            out.push(ProviderEvent::ReasoningEnd {
                signature: None,
                opaque: signature.and_then(|s| {
                    Opaque::GeminiThought {
                        thought_signature: &s,
                    }
                    .to_value()
                }),
            });
        }
    }

    fn chunk(&mut self, chunk: Chunk, out: &mut Vec<ProviderEvent>) -> Result<(), ProviderError> {
        if let Some(error) = chunk.error {
            return Err(stream_error(&error));
        }
        if let Some(usage) = chunk.usage_metadata {
            self.usage = Some(usage);
        }
        if chunk.prompt_feedback.and_then(|f| f.block_reason).is_some() {
            self.blocked = true;
        }
        let Some(candidate) = chunk.candidates.into_iter().next() else {
            return Ok(());
        };
        for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
            self.part(part, out);
        }
        if let Some(reason) = candidate.finish_reason {
            self.close_thinking(out);
            if matches!(
                reason.as_str(),
                "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL" | "TOO_MANY_TOOL_CALLS"
            ) {
                let detail = candidate
                    .finish_message
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default();
                return Err(ProviderError::new(
                    ProviderErrorKind::Stream,
                    format!("the model's function call could not be used ({reason}){detail}"),
                ));
            }
            self.finish = Some(reason);
        }
        Ok(())
    }

    fn part(&mut self, part: ChunkPart, out: &mut Vec<ProviderEvent>) {
        if part.thought == Some(true) {
            let open = self.thinking.get_or_insert(None);
            if part.thought_signature.is_some() {
                *open = part.thought_signature;
            }
            if let Some(text) = part.text.filter(|t| !t.is_empty()) {
                out.push(ProviderEvent::ReasoningDelta(text));
            }
            return;
        }
        self.close_thinking(out);
        if let Some(call) = part.function_call {
            if call.name.is_some() && call.name == self.answer_tool {
                self.answered = true;
                let args = call
                    .args
                    .map_or_else(|| "{}".to_string(), |a| a.to_string());
                out.push(ProviderEvent::TextDelta(args));
                return;
            }
            let id = call
                .id
                .unwrap_or_else(|| agent_core::ids::prefixed_hex(CALL_ID_PREFIX, 24));
            if let Some(signature) = part.thought_signature {
                out.push(ProviderEvent::ReasoningEnd {
                    signature: None,
                    opaque: Opaque::GeminiSignature {
                        thought_signature: &signature,
                        call_id: Some(&id),
                    }
                    .to_value(),
                });
            }
            self.any_call = true;
            out.push(ProviderEvent::ToolCallStart {
                id: id.clone(),
                name: call.name.unwrap_or_default(),
            });
            let args = match call.args {
                Some(Value::Object(map)) if !map.is_empty() => Value::Object(map).to_string(),
                _ => "{}".to_string(),
            };
            out.push(ProviderEvent::ToolCallDelta {
                id: id.clone(),
                delta: args,
            });
            out.push(ProviderEvent::ToolCallEnd { id });
            return;
        }
        if let Some(text) = part.text.filter(|t| !t.is_empty()) {
            out.push(ProviderEvent::TextDelta(text));
        }
        if let Some(signature) = part.thought_signature {
            out.push(ProviderEvent::ReasoningEnd {
                signature: None,
                opaque: Opaque::GeminiSignature {
                    thought_signature: &signature,
                    call_id: None,
                }
                .to_value(),
            });
        }
    }
}

fn stop_reason(reason: &str, any_call: bool) -> ProviderStop {
    match reason {
        "MAX_TOKENS" => ProviderStop::MaxTokens,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY"
        | "LANGUAGE" => ProviderStop::Refusal,
        _ if any_call => ProviderStop::ToolUse,
        _ => ProviderStop::EndTurn,
    }
}

impl Decoder for GeminiDecoder {
    fn event(
        &mut self,
        _event: &str,
        data: &str,
        out: &mut Vec<ProviderEvent>,
    ) -> Result<(), ProviderError> {
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|e| decode_error("malformed Gemini stream chunk", e, data))?;
        self.chunk(chunk, out)
            .map_err(|e| if e.raw.is_none() { e.with_raw(data) } else { e })
    }

    fn body(&mut self, body: &str, out: &mut Vec<ProviderEvent>) -> Result<(), ProviderError> {
        // `generateContent` answers one response; `streamGenerateContent` without `alt=sse`
        // an array of them.
        let chunks: Vec<Chunk> = match serde_json::from_str::<Value>(body.trim()) {
            Ok(Value::Array(items)) => items
                .into_iter()
                .map(serde_json::from_value)
                .collect::<Result<_, _>>()
                .map_err(|e| decode_error("malformed Gemini response", e, body))?,
            Ok(value) => vec![serde_json::from_value(value)
                .map_err(|e| decode_error("malformed Gemini response", e, body))?],
            Err(e) => return Err(decode_error("malformed Gemini response", e, body)),
        };
        for chunk in chunks {
            self.chunk(chunk, out).map_err(|e| e.with_raw(body))?;
        }
        Ok(())
    }

    fn done(&self) -> bool {
        false
    }

    fn finish(&mut self, out: &mut Vec<ProviderEvent>) -> Result<(), ProviderError> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        if self.finish.is_none() && !self.blocked {
            return Err(truncated_stream("a chunk with a finishReason"));
        }
        self.close_thinking(out);
        if let Some(usage) = &self.usage {
            out.push(ProviderEvent::Usage(usage.usage()));
        }
        let stop = match &self.finish {
            Some(reason) if self.answered && !self.any_call => stop_reason(reason, false),
            Some(reason) => stop_reason(reason, self.any_call),
            None => ProviderStop::Refusal,
        };
        out.push(ProviderEvent::Stop(stop));
        Ok(())
    }
}
