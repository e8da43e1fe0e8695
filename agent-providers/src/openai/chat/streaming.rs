//! Chat Completions response wire types and the stream decoder.
//!
//! Tolerant by design: unknown fields are ignored, `finish_reason: ""` and an empty
//! `usage` count as absent, `[DONE]` ends the stream, reasoning arrives under
//! `reasoning_content` or `reasoning` (DeepSeek, llama.cpp, vLLM, OpenRouter), and tool
//! calls are matched by `index` (or by id when a server leaves the index out).

use agent_core::{
    provider::{ProviderError, ProviderEvent, ProviderStop},
    Usage,
};
use serde::Deserialize;

use crate::http::{api_error_kind, ErrorObject};
use crate::sse::{decode_error, truncated_stream, Decoder};
use crate::transcript::{lenient_count, lenient_nonempty, lenient_text, lenient_vec};

/// One `chat.completion.chunk` (or a whole `chat.completion`).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Chunk {
    #[serde(default, deserialize_with = "lenient_vec")]
    pub(crate) choices: Vec<Choice>,
    #[serde(default)]
    pub(crate) usage: Option<ChunkUsage>,
    #[serde(default)]
    pub(crate) error: Option<ErrorObject>,
}

/// One choice.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Choice {
    #[serde(default, deserialize_with = "lenient_count")]
    pub(crate) index: Option<u64>,
    /// Streaming responses.
    #[serde(default)]
    pub(crate) delta: Option<Delta>,
    /// Non-streaming responses.
    #[serde(default)]
    pub(crate) message: Option<Delta>,
    #[serde(default, deserialize_with = "lenient_nonempty")]
    pub(crate) finish_reason: Option<String>,
}

/// The new content of a chunk.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Delta {
    #[serde(default, deserialize_with = "lenient_text")]
    pub(crate) content: Option<String>,
    #[serde(default, deserialize_with = "lenient_text")]
    pub(crate) reasoning_content: Option<String>,
    #[serde(default, deserialize_with = "lenient_text")]
    pub(crate) reasoning: Option<String>,
    #[serde(default, deserialize_with = "lenient_text")]
    pub(crate) refusal: Option<String>,
    #[serde(default, deserialize_with = "lenient_vec")]
    pub(crate) tool_calls: Vec<ToolCallDelta>,
}

/// A fragment of a tool call.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ToolCallDelta {
    #[serde(default, deserialize_with = "lenient_count")]
    pub(crate) index: Option<u64>,
    #[serde(default, deserialize_with = "lenient_nonempty")]
    pub(crate) id: Option<String>,
    #[serde(default)]
    pub(crate) function: Option<FunctionDelta>,
}

/// Name and argument fragment.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct FunctionDelta {
    #[serde(default, deserialize_with = "lenient_nonempty")]
    pub(crate) name: Option<String>,
    #[serde(default, deserialize_with = "lenient_text")]
    pub(crate) arguments: Option<String>,
}

/// Token usage.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ChunkUsage {
    #[serde(default, deserialize_with = "lenient_count")]
    pub(crate) prompt_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient_count")]
    pub(crate) completion_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    pub(crate) completion_tokens_details: Option<CompletionDetails>,
    /// DeepSeek's cache hits.
    #[serde(default, deserialize_with = "lenient_count")]
    pub(crate) prompt_cache_hit_tokens: Option<u64>,
}

/// `prompt_tokens_details`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct PromptDetails {
    #[serde(default, deserialize_with = "lenient_count")]
    pub(crate) cached_tokens: Option<u64>,
}

/// `completion_tokens_details`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct CompletionDetails {
    #[serde(default, deserialize_with = "lenient_count")]
    pub(crate) reasoning_tokens: Option<u64>,
}

impl ChunkUsage {
    /// The usage, or `None` when the object carries no counts.
    fn to_usage(&self) -> Option<Usage> {
        if self.prompt_tokens.is_none() && self.completion_tokens.is_none() {
            return None;
        }
        let prompt = self.prompt_tokens.unwrap_or(0);
        let cached = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .or(self.prompt_cache_hit_tokens)
            .unwrap_or(0)
            .min(prompt);
        Some(Usage {
            input: prompt - cached,
            output: self.completion_tokens.unwrap_or(0),
            reasoning: self
                .completion_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens),
            cache_read: cached,
            cache_write: 0,
            cost_usd: None,
        })
    }
}

fn stop_reason(reason: &str) -> Option<ProviderStop> {
    Some(match reason {
        "stop" | "end_turn" | "eos" | "stop_sequence" => ProviderStop::EndTurn,
        "tool_calls" | "function_call" | "tool_use" => ProviderStop::ToolUse,
        "length" | "max_tokens" | "model_length" => ProviderStop::MaxTokens,
        "content_filter" | "refusal" | "safety" => ProviderStop::Refusal,
        _ => return None,
    })
}

#[derive(Debug)]
struct Call {
    index: Option<u64>,
    id: Option<String>,
    name: Option<String>,
    started_id: Option<String>,
    pending_args: String,
}

/// Decodes a Chat Completions stream into provider events.
#[derive(Debug, Default)]
pub(crate) struct ChatDecoder {
    calls: Vec<Call>,
    reasoning_open: bool,
    saw_finish: bool,
    stop: Option<ProviderStop>,
    usage: Option<Usage>,
    done: bool,
    finished: bool,
}

impl ChatDecoder {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn close_reasoning(&mut self, out: &mut Vec<ProviderEvent>) {
        if self.reasoning_open {
            self.reasoning_open = false;
            out.push(ProviderEvent::ReasoningEnd {
                signature: None,
                opaque: None,
            });
        }
    }

    fn chunk(&mut self, chunk: Chunk, out: &mut Vec<ProviderEvent>) -> Result<(), ProviderError> {
        if let Some(err) = chunk.error {
            return Err(stream_error(&err));
        }
        if let Some(usage) = chunk.usage.as_ref().and_then(ChunkUsage::to_usage) {
            self.usage = Some(usage);
        }
        for choice in chunk.choices {
            // Only the first choice (we never ask for more than one).
            if choice.index.is_some_and(|i| i != 0) {
                continue;
            }
            if let Some(delta) = choice.delta.or(choice.message) {
                self.delta(delta, out);
            }
            if let Some(reason) = choice.finish_reason {
                self.saw_finish = true;
                if let Some(stop) = stop_reason(&reason) {
                    self.stop = Some(stop);
                }
            }
        }
        Ok(())
    }

    fn delta(&mut self, delta: Delta, out: &mut Vec<ProviderEvent>) {
        let reasoning = delta
            .reasoning_content
            .filter(|r| !r.is_empty())
            .or(delta.reasoning.filter(|r| !r.is_empty()));
        if let Some(reasoning) = reasoning {
            self.reasoning_open = true;
            out.push(ProviderEvent::ReasoningDelta(reasoning));
        }
        if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
            self.close_reasoning(out);
            out.push(ProviderEvent::TextDelta(text));
        }
        if let Some(text) = delta.refusal.filter(|t| !t.is_empty()) {
            self.close_reasoning(out);
            self.stop = Some(ProviderStop::Refusal);
            out.push(ProviderEvent::TextDelta(text));
        }
        for (position, fragment) in delta.tool_calls.into_iter().enumerate() {
            self.close_reasoning(out);
            self.tool_call(position, fragment, out);
        }
    }

    fn tool_call(
        &mut self,
        position: usize,
        fragment: ToolCallDelta,
        out: &mut Vec<ProviderEvent>,
    ) {
        let slot = match (fragment.index, fragment.id.as_deref()) {
            (Some(index), id) => self.calls.iter().rposition(|c| {
                c.index == Some(index)
                    && match (id, c.id.as_deref()) {
                        // A new id at a used index is a new call (servers that reuse 0).
                        (Some(new), Some(old)) => new == old,
                        _ => true,
                    }
            }),
            (None, Some(id)) => self.calls.iter().rposition(|c| c.id.as_deref() == Some(id)),
            (None, None) => self.calls.len().checked_sub(1),
        };
        let slot = match slot {
            Some(slot) => slot,
            None => {
                self.calls.push(Call {
                    index: fragment.index.or(Some(position as u64 + 1000)),
                    id: None,
                    name: None,
                    started_id: None,
                    pending_args: String::new(),
                });
                self.calls.len() - 1
            }
        };
        let number = slot;
        let call = &mut self.calls[slot];
        if call.id.is_none() {
            call.id = fragment.id;
        }
        let (name, args) = match fragment.function {
            Some(f) => (f.name, f.arguments.unwrap_or_default()),
            None => (None, String::new()),
        };
        if call.name.is_none() {
            call.name = name;
        }
        match &call.started_id {
            Some(id) => {
                if !args.is_empty() {
                    out.push(ProviderEvent::ToolCallDelta {
                        id: id.clone(),
                        delta: args,
                    });
                }
            }
            None => {
                call.pending_args.push_str(&args);
                if let Some(name) = &call.name {
                    let id = call.id.clone().unwrap_or_else(|| format!("call_{number}"));
                    call.started_id = Some(id.clone());
                    out.push(ProviderEvent::ToolCallStart {
                        id: id.clone(),
                        name: name.clone(),
                    });
                    if !call.pending_args.is_empty() {
                        out.push(ProviderEvent::ToolCallDelta {
                            id,
                            delta: std::mem::take(&mut call.pending_args),
                        });
                    }
                }
            }
        }
    }
}

/// An error object inside a 2xx stream.
pub(crate) fn stream_error(err: &ErrorObject) -> ProviderError {
    let code = err.code_str();
    let message = err
        .message
        .clone()
        .unwrap_or_else(|| "unknown error".into());
    let kind = api_error_kind(code.as_deref(), err.kind.as_deref(), &message);
    let mut e = ProviderError::new(kind, format!("the API reported an error: {message}"));
    if let Some(status) = code.and_then(|c| c.parse::<u16>().ok()) {
        e = e.with_status(status);
    }
    e
}

impl Decoder for ChatDecoder {
    fn event(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<ProviderEvent>,
    ) -> Result<(), ProviderError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if event == "error" {
            let err = crate::http::parse_error_body(data).unwrap_or(ErrorObject {
                message: Some(data.to_string()),
                ..ErrorObject::default()
            });
            return Err(stream_error(&err).with_raw(data));
        }
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|e| decode_error("malformed chat completion chunk", e, data))?;
        self.chunk(chunk, out)
    }

    fn body(&mut self, body: &str, out: &mut Vec<ProviderEvent>) -> Result<(), ProviderError> {
        let chunk: Chunk = serde_json::from_str(body.trim())
            .map_err(|e| decode_error("malformed chat completion", e, body))?;
        if chunk.choices.is_empty() && chunk.error.is_none() {
            return Err(decode_error(
                "malformed chat completion",
                "no choices in the response",
                body,
            ));
        }
        self.chunk(chunk, out)?;
        self.done = true;
        Ok(())
    }

    fn done(&self) -> bool {
        self.done
    }

    fn finish(&mut self, out: &mut Vec<ProviderEvent>) -> Result<(), ProviderError> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        if !self.done && !self.saw_finish {
            return Err(truncated_stream("the model finished (no finish_reason)"));
        }
        self.close_reasoning(out);
        let mut any_call = false;
        for call in &self.calls {
            if let Some(id) = &call.started_id {
                any_call = true;
                out.push(ProviderEvent::ToolCallEnd { id: id.clone() });
            }
        }
        if let Some(usage) = self.usage.take() {
            out.push(ProviderEvent::Usage(usage));
        }
        let stop = match self.stop {
            Some(ProviderStop::EndTurn) | None if any_call => ProviderStop::ToolUse,
            Some(stop) => stop,
            None => ProviderStop::EndTurn,
        };
        out.push(ProviderEvent::Stop(stop));
        Ok(())
    }
}
