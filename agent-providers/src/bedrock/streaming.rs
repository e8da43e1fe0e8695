//! The ConverseStream answer: Amazon's binary event-stream messages (prelude, headers,
//! payload, two CRC-32s), decoded by `aws-smithy-eventstream`, each an event
//! (`:message-type: event`, `:event-type: messageStart | contentBlockStart |
//! contentBlockDelta | contentBlockStop | messageStop | metadata`) or an exception
//! (`:message-type: exception`, `:exception-type: throttlingException | …`) with a JSON
//! payload.

use std::collections::{BTreeMap, HashSet};

use agent_core::{
    provider::{ProviderError, ProviderErrorKind, ProviderEvent, ProviderStop},
    Usage,
};
use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder};
use aws_smithy_types::event_stream::{HeaderValue, Message};
use bytes::{Buf, BytesMut};
use serde::Deserialize;
use serde_json::Value;

use crate::opaque::Opaque;
use crate::sse::{decode_error, truncated_stream, Decoder};
use crate::transcript::{lenient_count, lenient_nonempty, lenient_text};

/// Largest message accepted (Amazon's framing allows 16 MiB).
const MAX_BUFFER: usize = 24 << 20;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockEvent {
    #[serde(default, deserialize_with = "lenient_count")]
    content_block_index: Option<u64>,
    #[serde(default)]
    start: Option<BlockStart>,
    #[serde(default)]
    delta: Option<BlockDelta>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockStart {
    #[serde(default)]
    tool_use: Option<ToolUseStart>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolUseStart {
    #[serde(default, deserialize_with = "lenient_nonempty")]
    tool_use_id: Option<String>,
    #[serde(default, deserialize_with = "lenient_nonempty")]
    name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockDelta {
    #[serde(default, deserialize_with = "lenient_text")]
    text: Option<String>,
    #[serde(default)]
    tool_use: Option<ToolUseDelta>,
    #[serde(default)]
    reasoning_content: Option<ReasoningDelta>,
}

#[derive(Debug, Default, Deserialize)]
struct ToolUseDelta {
    #[serde(default, deserialize_with = "lenient_text")]
    input: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReasoningDelta {
    #[serde(default, deserialize_with = "lenient_text")]
    text: Option<String>,
    #[serde(default, deserialize_with = "lenient_text")]
    signature: Option<String>,
    #[serde(default, deserialize_with = "lenient_nonempty")]
    redacted_content: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageStop {
    #[serde(default, deserialize_with = "lenient_nonempty")]
    stop_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Metadata {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireUsage {
    #[serde(default, deserialize_with = "lenient_count")]
    input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient_count")]
    output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient_count")]
    cache_read_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient_count")]
    cache_write_input_tokens: Option<u64>,
}

#[derive(Debug)]
enum Block {
    Text,
    Reasoning {
        signature: String,
        redacted: Option<String>,
    },
    ToolUse {
        id: String,
    },
    /// The structured-output tool: its input is the answer text.
    Answer,
}

/// Decodes a ConverseStream body into provider events.
pub(crate) struct BedrockDecoder {
    frames: MessageFrameDecoder,
    buffer: BytesMut,
    answer_tool: Option<String>,
    answered: bool,
    blocks: BTreeMap<u64, Block>,
    call_ids: HashSet<String>,
    any_call: bool,
    stop: Option<ProviderStop>,
    stopped: bool,
    usage: Option<Usage>,
    done: bool,
    finished: bool,
}

impl BedrockDecoder {
    /// A decoder; `answer_tool` names the structured-output tool whose input is the answer.
    pub(crate) fn new(answer_tool: Option<String>) -> Self {
        Self {
            frames: MessageFrameDecoder::new(),
            buffer: BytesMut::new(),
            answer_tool,
            answered: false,
            blocks: BTreeMap::new(),
            call_ids: HashSet::new(),
            any_call: false,
            stop: None,
            stopped: false,
            usage: None,
            done: false,
            finished: false,
        }
    }

    fn header<'a>(message: &'a Message, name: &str) -> Option<&'a str> {
        message
            .headers()
            .iter()
            .find(|h| h.name().as_str() == name)
            .and_then(|h| match h.value() {
                HeaderValue::String(s) => Some(s.as_str()),
                _ => None,
            })
    }

    fn message(
        &mut self,
        message: Message,
        out: &mut Vec<ProviderEvent>,
    ) -> Result<(), ProviderError> {
        let payload = std::str::from_utf8(message.payload()).unwrap_or("");
        match Self::header(&message, ":message-type") {
            Some("exception") | Some("error") => {
                let kind = Self::header(&message, ":exception-type")
                    .or_else(|| Self::header(&message, ":error-code"))
                    .unwrap_or("unknownException");
                let text = serde_json::from_str::<Value>(payload)
                    .ok()
                    .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_string))
                    .or_else(|| Self::header(&message, ":error-message").map(str::to_string))
                    .unwrap_or_else(|| payload.to_string());
                return Err(stream_exception(kind, &text).with_raw(payload));
            }
            Some("event") | None => {}
            Some(_) => return Ok(()),
        }
        let event = Self::header(&message, ":event-type")
            .unwrap_or("")
            .to_string();
        let parse = |what: &str| -> Result<Value, ProviderError> {
            serde_json::from_str(payload).map_err(|e| decode_error(what, e, payload))
        };
        match event.as_str() {
            "contentBlockStart" | "contentBlockDelta" | "contentBlockStop" => {
                let block: BlockEvent = serde_json::from_value(parse("malformed Converse event")?)
                    .map_err(|e| decode_error("malformed Converse event", e, payload))?;
                let index = block.content_block_index.unwrap_or(0);
                match event.as_str() {
                    "contentBlockStart" => self.start(index, block.start, out)?,
                    "contentBlockDelta" => self.delta(index, block.delta, out),
                    _ => {
                        if let Some(block) = self.blocks.remove(&index) {
                            end(block, out);
                        }
                    }
                }
            }
            "messageStop" => {
                let stop: MessageStop =
                    serde_json::from_value(parse("malformed messageStop")?).unwrap_or_default();
                self.stopped = true;
                self.stop = stop.stop_reason.as_deref().and_then(stop_reason);
            }
            "metadata" => {
                let meta: Metadata =
                    serde_json::from_value(parse("malformed metadata")?).unwrap_or_default();
                if let Some(u) = meta.usage {
                    self.usage = Some(Usage {
                        input: u.input_tokens.unwrap_or(0),
                        output: u.output_tokens.unwrap_or(0),
                        reasoning: None,
                        cache_read: u.cache_read_input_tokens.unwrap_or(0),
                        cache_write: u.cache_write_input_tokens.unwrap_or(0),
                        cost_usd: None,
                    });
                }
                self.done = true;
            }
            _ => {}
        }
        Ok(())
    }

    fn start(
        &mut self,
        index: u64,
        start: Option<BlockStart>,
        out: &mut Vec<ProviderEvent>,
    ) -> Result<(), ProviderError> {
        if let Some(previous) = self.blocks.remove(&index) {
            end(previous, out);
        }
        let Some(tool) = start.and_then(|s| s.tool_use) else {
            return Ok(());
        };
        if tool.name.is_some() && tool.name == self.answer_tool {
            self.answered = true;
            self.blocks.insert(index, Block::Answer);
            return Ok(());
        }
        let id = tool
            .tool_use_id
            .unwrap_or_else(|| format!("tooluse_{index}"));
        if !self.call_ids.insert(id.clone()) {
            return Err(ProviderError::new(
                ProviderErrorKind::Decode,
                format!("malformed event stream: tool call {id:?} started twice"),
            )
            .retryable(false));
        }
        self.any_call = true;
        out.push(ProviderEvent::ToolCallStart {
            id: id.clone(),
            name: tool.name.unwrap_or_default(),
        });
        self.blocks.insert(index, Block::ToolUse { id });
        Ok(())
    }

    fn delta(&mut self, index: u64, delta: Option<BlockDelta>, out: &mut Vec<ProviderEvent>) {
        let Some(delta) = delta else { return };
        if let Some(text) = delta.text.filter(|t| !t.is_empty()) {
            self.blocks.entry(index).or_insert(Block::Text);
            out.push(ProviderEvent::TextDelta(text));
        }
        if let Some(reasoning) = delta.reasoning_content {
            let block = self.blocks.entry(index).or_insert(Block::Reasoning {
                signature: String::new(),
                redacted: None,
            });
            if let Block::Reasoning {
                signature,
                redacted,
            } = block
            {
                if let Some(part) = reasoning.signature {
                    signature.push_str(&part);
                }
                if let Some(data) = reasoning.redacted_content {
                    *redacted = Some(data);
                }
            }
            if let Some(text) = reasoning.text.filter(|t| !t.is_empty()) {
                out.push(ProviderEvent::ReasoningDelta(text));
            }
        }
        if let Some(input) = delta
            .tool_use
            .and_then(|t| t.input)
            .filter(|i| !i.is_empty())
        {
            match self.blocks.get(&index) {
                Some(Block::ToolUse { id }) => out.push(ProviderEvent::ToolCallDelta {
                    id: id.clone(),
                    delta: input,
                }),
                Some(Block::Answer) => out.push(ProviderEvent::TextDelta(input)),
                _ => {}
            }
        }
    }
}

fn end(block: Block, out: &mut Vec<ProviderEvent>) {
    match block {
        Block::Reasoning {
            signature,
            redacted,
        } => out.push(ProviderEvent::ReasoningEnd {
            signature: (!signature.is_empty()).then_some(signature),
            opaque: redacted.and_then(|data| Opaque::RedactedThinking { data: &data }.to_value()),
        }),
        Block::ToolUse { id } => out.push(ProviderEvent::ToolCallEnd { id }),
        Block::Text | Block::Answer => {}
    }
}

fn stop_reason(reason: &str) -> Option<ProviderStop> {
    Some(match reason {
        "end_turn" | "stop_sequence" => ProviderStop::EndTurn,
        "tool_use" => ProviderStop::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => ProviderStop::MaxTokens,
        "guardrail_intervened" | "content_filtered" => ProviderStop::Refusal,
        _ => return None,
    })
}

/// The error an exception message inside the stream becomes.
fn stream_exception(kind: &str, message: &str) -> ProviderError {
    let lower = kind.to_ascii_lowercase();
    let error_kind = match lower.trim_end_matches("exception") {
        "throttling" => ProviderErrorKind::RateLimited,
        "serviceunavailable" | "modelnotready" => ProviderErrorKind::Overloaded,
        "internalserver" | "modelstreamerror" => ProviderErrorKind::Server,
        "modeltimeout" => ProviderErrorKind::Timeout,
        "validation" if crate::http::is_context_length(message) => ProviderErrorKind::ContextLength,
        "validation" => ProviderErrorKind::BadRequest,
        "accessdenied" | "expiredtoken" | "unrecognizedclient" | "invalidsignature" => {
            ProviderErrorKind::Auth
        }
        _ => ProviderErrorKind::Stream,
    };
    ProviderError::new(
        error_kind,
        format!("the API reported an error ({kind}): {message}"),
    )
}

impl Decoder for BedrockDecoder {
    fn event(&mut self, _: &str, _: &str, _: &mut Vec<ProviderEvent>) -> Result<(), ProviderError> {
        Ok(())
    }

    /// A JSON body on a 2xx answer: Bedrock sends one only for an error.
    fn body(&mut self, body: &str, _out: &mut Vec<ProviderEvent>) -> Result<(), ProviderError> {
        let message = serde_json::from_str::<Value>(body.trim())
            .ok()
            .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| crate::http::truncate(body.trim(), 500));
        Err(ProviderError::new(
            ProviderErrorKind::Decode,
            format!("expected an event stream, got a JSON body: {message}"),
        )
        .retryable(false)
        .with_raw(crate::http::truncate(body, 8000)))
    }

    fn done(&self) -> bool {
        self.done
    }

    fn finish(&mut self, out: &mut Vec<ProviderEvent>) -> Result<(), ProviderError> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        if !self.stopped {
            return Err(match self.buffer.is_empty() {
                true => truncated_stream("messageStop"),
                false => truncated_stream("messageStop (inside a frame)"),
            });
        }
        for (_, block) in std::mem::take(&mut self.blocks) {
            end(block, out);
        }
        if let Some(usage) = self.usage {
            out.push(ProviderEvent::Usage(usage));
        }
        let stop = match self.stop {
            Some(ProviderStop::ToolUse) if self.answered && !self.any_call => ProviderStop::EndTurn,
            Some(stop) => stop,
            None if self.any_call => ProviderStop::ToolUse,
            None => ProviderStop::EndTurn,
        };
        out.push(ProviderEvent::Stop(stop));
        Ok(())
    }

    fn binary(&self) -> bool {
        true
    }

    fn bytes(&mut self, chunk: &[u8], out: &mut Vec<ProviderEvent>) -> Result<(), ProviderError> {
        self.buffer.extend_from_slice(chunk);
        if self.buffer.len() > MAX_BUFFER {
            return Err(ProviderError::new(
                ProviderErrorKind::Decode,
                "an event-stream message exceeded 24 MiB",
            )
            .retryable(false));
        }
        while !self.done && self.buffer.has_remaining() {
            let frame = self.frames.decode_frame(&mut self.buffer).map_err(|e| {
                ProviderError::new(
                    ProviderErrorKind::Decode,
                    format!("malformed event-stream frame: {e}"),
                )
                .retryable(false)
            })?;
            match frame {
                DecodedFrame::Complete(message) => self.message(message, out)?,
                DecodedFrame::Incomplete => break,
            }
        }
        Ok(())
    }
}
