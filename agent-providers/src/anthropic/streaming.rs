//! Messages API stream events and the decoder.
//!
//! Unknown event types, block types and delta types are ignored; blocks are tracked by
//! index, so a block may start before the previous one stops (llama.cpp and LiteLLM do
//! that with parallel tool calls).
//!
//! Structured output: the input of the answer tool (the one named after the request's
//! output schema) streams out as answer text, not as a tool call, and a turn that only
//! called it ends as `end_turn`.

use std::collections::{BTreeMap, HashSet};

use agent_core::{
    provider::{ProviderError, ProviderErrorKind, ProviderEvent, ProviderStop},
    Usage,
};
use serde::Deserialize;
use serde_json::Value;

use crate::http::{api_error_kind, ErrorObject};
use crate::opaque::Opaque;
use crate::sse::{decode_error, truncated_stream, Decoder};
use crate::transcript::{lenient_count, lenient_nonempty, lenient_text, lenient_vec};

/// One stream event (the `type` of its data).
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum StreamEvent {
    MessageStart {
        #[serde(default)]
        message: MessageStart,
    },
    ContentBlockStart {
        #[serde(default, deserialize_with = "lenient_count")]
        index: Option<u64>,
        content_block: BlockStart,
    },
    ContentBlockDelta {
        #[serde(default, deserialize_with = "lenient_count")]
        index: Option<u64>,
        delta: BlockDelta,
    },
    ContentBlockStop {
        #[serde(default, deserialize_with = "lenient_count")]
        index: Option<u64>,
    },
    MessageDelta {
        #[serde(default)]
        delta: MessageDelta,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: ErrorObject,
    },
    #[serde(other)]
    Unknown,
}

/// `message_start.message`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct MessageStart {
    #[serde(default)]
    pub(crate) usage: Option<WireUsage>,
}

/// `message_delta.delta`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct MessageDelta {
    #[serde(default, deserialize_with = "lenient_nonempty")]
    pub(crate) stop_reason: Option<String>,
}

/// A content block as it starts (or, in a non-streaming response, whole).
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum BlockStart {
    Text {
        #[serde(default, deserialize_with = "lenient_text")]
        text: Option<String>,
    },
    Thinking {
        #[serde(default, deserialize_with = "lenient_text")]
        thinking: Option<String>,
        #[serde(default, deserialize_with = "lenient_nonempty")]
        signature: Option<String>,
    },
    RedactedThinking {
        #[serde(default, deserialize_with = "lenient_nonempty")]
        data: Option<String>,
    },
    ToolUse {
        #[serde(default, deserialize_with = "lenient_nonempty")]
        id: Option<String>,
        #[serde(default, deserialize_with = "lenient_nonempty")]
        name: Option<String>,
        #[serde(default)]
        input: Option<Value>,
    },
    #[serde(other)]
    Other,
}

/// A content block delta.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum BlockDelta {
    TextDelta {
        #[serde(default, deserialize_with = "lenient_text")]
        text: Option<String>,
    },
    ThinkingDelta {
        #[serde(default, deserialize_with = "lenient_text")]
        thinking: Option<String>,
    },
    SignatureDelta {
        #[serde(default, deserialize_with = "lenient_text")]
        signature: Option<String>,
    },
    InputJsonDelta {
        #[serde(default, deserialize_with = "lenient_text")]
        partial_json: Option<String>,
    },
    #[serde(other)]
    Other,
}

/// Usage counts; every field may be missing.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default, deserialize_with = "lenient_count")]
    pub(crate) input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient_count")]
    pub(crate) output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient_count")]
    pub(crate) cache_read_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient_count")]
    pub(crate) cache_creation_input_tokens: Option<u64>,
}

/// A whole non-streaming response.
#[derive(Debug, Deserialize)]
pub(crate) struct WholeMessage {
    #[serde(default, deserialize_with = "lenient_vec")]
    pub(crate) content: Vec<Value>,
    #[serde(default, deserialize_with = "lenient_nonempty")]
    pub(crate) stop_reason: Option<String>,
    #[serde(default)]
    pub(crate) usage: Option<WireUsage>,
}

fn stop_reason(reason: &str) -> Option<ProviderStop> {
    Some(match reason {
        "end_turn" | "stop_sequence" | "pause_turn" | "stop" => ProviderStop::EndTurn,
        "tool_use" | "tool_calls" => ProviderStop::ToolUse,
        "max_tokens" | "model_context_window_exceeded" | "length" => ProviderStop::MaxTokens,
        "refusal" => ProviderStop::Refusal,
        _ => return None,
    })
}

#[derive(Debug)]
enum Block {
    Text,
    Thinking {
        signature: String,
    },
    Redacted {
        data: String,
    },
    ToolUse {
        id: String,
    },
    /// The answer tool: its input is the answer text. `pending` holds a whole input that
    /// arrived with the block start (a non-streamed message) until the block ends.
    Answer {
        streamed: bool,
        pending: Option<String>,
    },
    Other,
}

/// The merged usage of `message_start` and `message_delta` (later values win).
#[derive(Debug, Default)]
struct UsageAcc {
    input: Option<u64>,
    output: Option<u64>,
    cache_read: Option<u64>,
    cache_write: Option<u64>,
}

impl UsageAcc {
    fn merge(&mut self, usage: &WireUsage) {
        self.input = usage.input_tokens.or(self.input);
        self.output = usage.output_tokens.or(self.output);
        self.cache_read = usage.cache_read_input_tokens.or(self.cache_read);
        self.cache_write = usage.cache_creation_input_tokens.or(self.cache_write);
    }

    fn usage(&self) -> Option<Usage> {
        if self.input.is_none()
            && self.output.is_none()
            && self.cache_read.is_none()
            && self.cache_write.is_none()
        {
            return None;
        }
        Some(Usage {
            input: self.input.unwrap_or(0),
            output: self.output.unwrap_or(0),
            reasoning: None,
            cache_read: self.cache_read.unwrap_or(0),
            cache_write: self.cache_write.unwrap_or(0),
            cost_usd: None,
        })
    }
}

/// Decodes a Messages stream into provider events.
#[derive(Debug, Default)]
pub(crate) struct AnthropicDecoder {
    /// The name of the structured-output answer tool, when the request had a schema.
    answer_tool: Option<String>,
    /// Whether the answer tool was called.
    answered: bool,
    blocks: BTreeMap<u64, Block>,
    /// Ids of the tool calls started so far; a repeat is a malformed stream.
    call_ids: HashSet<String>,
    next_index: u64,
    any_call: bool,
    usage: UsageAcc,
    stop: Option<ProviderStop>,
    saw_stop_reason: bool,
    saw_start: bool,
    done: bool,
    finished: bool,
}

impl AnthropicDecoder {
    /// A decoder; `answer_tool` names the structured-output tool whose input is the answer.
    pub(crate) fn new(answer_tool: Option<String>) -> Self {
        Self {
            answer_tool,
            ..Self::default()
        }
    }

    fn index(&mut self, index: Option<u64>) -> u64 {
        index.unwrap_or(self.next_index.saturating_sub(1))
    }

    fn handle(
        &mut self,
        event: StreamEvent,
        out: &mut Vec<ProviderEvent>,
    ) -> Result<(), ProviderError> {
        match event {
            StreamEvent::MessageStart { message } => {
                self.saw_start = true;
                if let Some(usage) = &message.usage {
                    self.usage.merge(usage);
                }
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                let index = index.unwrap_or(self.next_index);
                if let BlockStart::ToolUse { id, .. } = &content_block {
                    let id = id.clone().unwrap_or_else(|| format!("toolu_{index}"));
                    if !self.call_ids.insert(id.clone()) {
                        return Err(ProviderError::new(
                            ProviderErrorKind::Decode,
                            format!("malformed event stream: tool call {id:?} started twice"),
                        )
                        .retryable(false));
                    }
                }
                // An index is the server's: the largest one must not overflow.
                self.next_index = self.next_index.max(index.saturating_add(1));
                self.start(index, content_block, out);
            }
            StreamEvent::ContentBlockDelta { index, delta } => {
                let index = self.index(index);
                self.delta(index, delta, out);
            }
            StreamEvent::ContentBlockStop { index } => {
                let index = self.index(index);
                if let Some(block) = self.blocks.remove(&index) {
                    end_block(block, out);
                }
            }
            StreamEvent::MessageDelta { delta, usage } => {
                if let Some(usage) = &usage {
                    self.usage.merge(usage);
                }
                if let Some(reason) = delta.stop_reason {
                    self.saw_stop_reason = true;
                    if let Some(stop) = stop_reason(&reason) {
                        self.stop = Some(stop);
                    }
                }
            }
            StreamEvent::MessageStop => self.done = true,
            StreamEvent::Ping | StreamEvent::Unknown => {}
            StreamEvent::Error { error } => return Err(api_error(&error)),
        }
        Ok(())
    }

    fn start(&mut self, index: u64, block: BlockStart, out: &mut Vec<ProviderEvent>) {
        // A block restarted at the same index ends the old one first.
        if let Some(previous) = self.blocks.remove(&index) {
            end_block(previous, out);
        }
        let state = match block {
            BlockStart::Text { text } => {
                if let Some(text) = text.filter(|t| !t.is_empty()) {
                    out.push(ProviderEvent::TextDelta(text));
                }
                Block::Text
            }
            BlockStart::Thinking {
                thinking,
                signature,
            } => {
                if let Some(text) = thinking.filter(|t| !t.is_empty()) {
                    out.push(ProviderEvent::ReasoningDelta(text));
                }
                Block::Thinking {
                    signature: signature.unwrap_or_default(),
                }
            }
            BlockStart::RedactedThinking { data } => Block::Redacted {
                data: data.unwrap_or_default(),
            },
            BlockStart::ToolUse { name, input, .. }
                if name.is_some() && name == self.answer_tool =>
            {
                self.answered = true;
                Block::Answer {
                    streamed: false,
                    pending: input
                        .filter(|v| v.as_object().is_none_or(|o| !o.is_empty()))
                        .map(|v| v.to_string()),
                }
            }
            BlockStart::ToolUse { id, name, input } => {
                let id = id.unwrap_or_else(|| format!("toolu_{index}"));
                self.any_call = true;
                out.push(ProviderEvent::ToolCallStart {
                    id: id.clone(),
                    name: name.unwrap_or_default(),
                });
                // Streams start with `{}` and send the input as deltas; a whole message
                // carries the input here.
                if let Some(input) = input.filter(|v| v.as_object().is_some_and(|o| !o.is_empty()))
                {
                    out.push(ProviderEvent::ToolCallDelta {
                        id: id.clone(),
                        delta: input.to_string(),
                    });
                }
                Block::ToolUse { id }
            }
            BlockStart::Other => Block::Other,
        };
        self.blocks.insert(index, state);
    }

    fn delta(&mut self, index: u64, delta: BlockDelta, out: &mut Vec<ProviderEvent>) {
        let block = self.blocks.get_mut(&index);
        match (delta, block) {
            (BlockDelta::TextDelta { text: Some(text) }, _) if !text.is_empty() => {
                out.push(ProviderEvent::TextDelta(text))
            }
            (
                BlockDelta::ThinkingDelta {
                    thinking: Some(text),
                },
                _,
            ) if !text.is_empty() => out.push(ProviderEvent::ReasoningDelta(text)),
            (
                BlockDelta::SignatureDelta {
                    signature: Some(part),
                },
                Some(Block::Thinking { signature }),
            ) => signature.push_str(&part),
            (
                BlockDelta::InputJsonDelta {
                    partial_json: Some(part),
                },
                Some(Block::ToolUse { id }),
            ) if !part.is_empty() => out.push(ProviderEvent::ToolCallDelta {
                id: id.clone(),
                delta: part,
            }),
            (
                BlockDelta::InputJsonDelta {
                    partial_json: Some(part),
                },
                Some(Block::Answer { streamed, .. }),
            ) if !part.is_empty() => {
                *streamed = true;
                out.push(ProviderEvent::TextDelta(part));
            }
            _ => {}
        }
    }
}

fn end_block(block: Block, out: &mut Vec<ProviderEvent>) {
    match block {
        Block::Thinking { signature } => out.push(ProviderEvent::ReasoningEnd {
            signature: (!signature.is_empty()).then_some(signature),
            opaque: None,
        }),
        Block::Redacted { data } => out.push(ProviderEvent::ReasoningEnd {
            signature: None,
            opaque: Opaque::RedactedThinking { data: &data }.to_value(),
        }),
        Block::ToolUse { id } => out.push(ProviderEvent::ToolCallEnd { id }),
        // An answer whose input never streamed: the whole input (or `{}`) is the text.
        Block::Answer {
            streamed: false,
            pending,
        } => out.push(ProviderEvent::TextDelta(
            pending.unwrap_or_else(|| "{}".to_string()),
        )),
        Block::Answer { .. } | Block::Text | Block::Other => {}
    }
}

/// The error an `error` event (or error body) becomes.
pub(crate) fn api_error(err: &ErrorObject) -> ProviderError {
    let message = err
        .message
        .clone()
        .unwrap_or_else(|| "unknown error".into());
    let kind = api_error_kind(None, err.kind.as_deref(), &message);
    ProviderError::new(kind, format!("the API reported an error: {message}"))
}

impl Decoder for AnthropicDecoder {
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
        let event: StreamEvent = serde_json::from_str(data)
            .map_err(|e| decode_error("malformed Messages stream event", e, data))?;
        self.handle(event, out)
            .map_err(|e| if e.raw.is_none() { e.with_raw(data) } else { e })
    }

    fn body(&mut self, body: &str, out: &mut Vec<ProviderEvent>) -> Result<(), ProviderError> {
        if let Some(err) = crate::http::parse_error_body(body) {
            return Err(api_error(&err).with_raw(body));
        }
        let message: WholeMessage = serde_json::from_str(body.trim())
            .map_err(|e| decode_error("malformed Messages response", e, body))?;
        if let Some(usage) = &message.usage {
            self.usage.merge(usage);
        }
        for (index, value) in message.content.into_iter().enumerate() {
            let Ok(block) = serde_json::from_value::<BlockStart>(value) else {
                continue;
            };
            let index = index as u64;
            self.start(index, block, out);
            if let Some(block) = self.blocks.remove(&index) {
                end_block(block, out);
            }
        }
        if let Some(reason) = message.stop_reason {
            self.saw_stop_reason = true;
            self.stop = stop_reason(&reason);
        }
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
        if !self.done && !self.saw_stop_reason {
            return Err(truncated_stream("message_stop"));
        }
        for (_, block) in std::mem::take(&mut self.blocks) {
            end_block(block, out);
        }
        if let Some(usage) = self.usage.usage() {
            out.push(ProviderEvent::Usage(usage));
        }
        let stop = match self.stop {
            // Only the answer tool was called: the answer is complete.
            Some(ProviderStop::ToolUse) if self.answered && !self.any_call => ProviderStop::EndTurn,
            Some(stop) => stop,
            None if self.any_call => ProviderStop::ToolUse,
            None => ProviderStop::EndTurn,
        };
        out.push(ProviderEvent::Stop(stop));
        Ok(())
    }
}
