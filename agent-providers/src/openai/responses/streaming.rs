//! Responses API stream events and the decoder.
//!
//! Events are read by their `type`; unknown types and fields are ignored.

use std::collections::{HashMap, HashSet};

use agent_core::{
    provider::{ProviderError, ProviderErrorKind, ProviderEvent, ProviderStop},
    Usage,
};
use serde::Deserialize;
use serde_json::Value;

use crate::http::{api_error_kind, ErrorObject};
use crate::sse::{decode_error, truncated_stream, Decoder};
use crate::transcript::{lenient_count, lenient_nonempty, lenient_text, lenient_vec};

/// One stream event; only the fields this decoder reads.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct StreamEvent {
    #[serde(rename = "type", default, deserialize_with = "lenient_nonempty")]
    pub(crate) kind: Option<String>,
    #[serde(default, deserialize_with = "lenient_text")]
    pub(crate) delta: Option<String>,
    #[serde(default, deserialize_with = "lenient_nonempty")]
    pub(crate) item_id: Option<String>,
    #[serde(default, deserialize_with = "lenient_count")]
    pub(crate) output_index: Option<u64>,
    #[serde(default, deserialize_with = "lenient_count")]
    pub(crate) summary_index: Option<u64>,
    #[serde(default)]
    pub(crate) item: Option<Value>,
    #[serde(default)]
    pub(crate) response: Option<ResponseBody>,
    /// `error` events carry `code` and `message` at the top level…
    #[serde(default)]
    pub(crate) code: Option<Value>,
    #[serde(default, deserialize_with = "lenient_text")]
    pub(crate) message: Option<String>,
    /// …or nested.
    #[serde(default)]
    pub(crate) error: Option<ErrorObject>,
}

/// A response object (in `response.*` events, or a whole non-streaming body).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ResponseBody {
    #[serde(default, deserialize_with = "lenient_nonempty")]
    pub(crate) status: Option<String>,
    #[serde(default)]
    pub(crate) usage: Option<WireUsage>,
    #[serde(default)]
    pub(crate) incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    pub(crate) error: Option<ErrorObject>,
    #[serde(default, deserialize_with = "lenient_vec")]
    pub(crate) output: Vec<Value>,
}

/// Why a response is incomplete.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct IncompleteDetails {
    #[serde(default, deserialize_with = "lenient_nonempty")]
    pub(crate) reason: Option<String>,
}

/// Usage counts.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default, deserialize_with = "lenient_count")]
    pub(crate) input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient_count")]
    pub(crate) output_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    pub(crate) output_tokens_details: Option<OutputDetails>,
}

/// `input_tokens_details`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct InputDetails {
    #[serde(default, deserialize_with = "lenient_count")]
    pub(crate) cached_tokens: Option<u64>,
}

/// `output_tokens_details`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct OutputDetails {
    #[serde(default, deserialize_with = "lenient_count")]
    pub(crate) reasoning_tokens: Option<u64>,
}

impl WireUsage {
    fn to_usage(&self) -> Option<Usage> {
        if self.input_tokens.is_none() && self.output_tokens.is_none() {
            return None;
        }
        let input = self.input_tokens.unwrap_or(0);
        let cached = self
            .input_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0)
            .min(input);
        Some(Usage {
            input: input - cached,
            output: self.output_tokens.unwrap_or(0),
            reasoning: self
                .output_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens),
            cache_read: cached,
            cache_write: 0,
            cost_usd: None,
        })
    }
}

/// An output item; only the fields this decoder reads.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct OutputItem {
    #[serde(rename = "type", default, deserialize_with = "lenient_nonempty")]
    pub(crate) kind: Option<String>,
    #[serde(default, deserialize_with = "lenient_nonempty")]
    pub(crate) id: Option<String>,
    #[serde(default, deserialize_with = "lenient_nonempty")]
    pub(crate) call_id: Option<String>,
    #[serde(default, deserialize_with = "lenient_nonempty")]
    pub(crate) name: Option<String>,
    #[serde(default, deserialize_with = "lenient_text")]
    pub(crate) arguments: Option<String>,
    #[serde(default, deserialize_with = "lenient_vec")]
    pub(crate) summary: Vec<TextPart>,
    #[serde(default, deserialize_with = "lenient_vec")]
    pub(crate) content: Vec<TextPart>,
}

/// A part with text (`summary_text`, `output_text`, `reasoning_text`, `refusal`).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct TextPart {
    #[serde(rename = "type", default, deserialize_with = "lenient_nonempty")]
    pub(crate) kind: Option<String>,
    #[serde(default, deserialize_with = "lenient_text")]
    pub(crate) text: Option<String>,
    #[serde(default, deserialize_with = "lenient_text")]
    pub(crate) refusal: Option<String>,
}

#[derive(Debug, Default)]
struct ItemState {
    /// The call id, for function calls.
    call_id: Option<String>,
    streamed: bool,
    ended: bool,
    last_summary: Option<u64>,
}

/// Decodes a Responses stream into provider events.
#[derive(Debug, Default)]
pub(crate) struct ResponsesDecoder {
    /// By item id.
    items: HashMap<String, ItemState>,
    /// Item id by output index.
    by_index: HashMap<u64, String>,
    /// Ids of the function calls started so far; a repeat is a malformed stream.
    call_ids: HashSet<String>,
    any_call: bool,
    refusal: bool,
    stop: Option<ProviderStop>,
    usage: Option<Usage>,
    done: bool,
    finished: bool,
}

impl ResponsesDecoder {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn item_key(&self, event: &StreamEvent) -> Option<String> {
        event.item_id.clone().or_else(|| {
            event
                .output_index
                .and_then(|i| self.by_index.get(&i).cloned())
        })
    }

    fn added(
        &mut self,
        output_index: Option<u64>,
        item: OutputItem,
        out: &mut Vec<ProviderEvent>,
    ) -> Result<(), ProviderError> {
        let key = item
            .id
            .clone()
            .or_else(|| item.call_id.clone())
            .unwrap_or_else(|| format!("item_{}", output_index.unwrap_or(self.items.len() as u64)));
        if self.items.contains_key(&key) {
            // Its state (and the call it started) would be lost.
            return Err(ProviderError::new(
                ProviderErrorKind::Decode,
                format!("malformed event stream: output item {key:?} added twice"),
            )
            .retryable(false));
        }
        if let Some(index) = output_index {
            self.by_index.insert(index, key.clone());
        }
        let mut state = ItemState::default();
        if item.kind.as_deref() == Some("function_call") {
            let call_id = item.call_id.clone().unwrap_or_else(|| key.clone());
            if !self.call_ids.insert(call_id.clone()) {
                return Err(ProviderError::new(
                    ProviderErrorKind::Decode,
                    format!("malformed event stream: function call {call_id:?} started twice"),
                )
                .retryable(false));
            }
            self.any_call = true;
            out.push(ProviderEvent::ToolCallStart {
                id: call_id.clone(),
                name: item.name.clone().unwrap_or_default(),
            });
            state.call_id = Some(call_id);
        }
        self.items.insert(key, state);
        Ok(())
    }

    fn item_done(
        &mut self,
        output_index: Option<u64>,
        raw: Value,
        out: &mut Vec<ProviderEvent>,
    ) -> Result<(), ProviderError> {
        let item: OutputItem = serde_json::from_value(raw.clone())
            .map_err(|e| decode_error("malformed output item", e, &raw.to_string()))?;
        let key = item
            .id
            .clone()
            .or_else(|| item.call_id.clone())
            .or_else(|| output_index.and_then(|i| self.by_index.get(&i).cloned()));
        let known = key.as_ref().is_some_and(|k| self.items.contains_key(k));
        if !known {
            // A server that skipped `output_item.added`.
            let value = OutputItem {
                kind: item.kind.clone(),
                id: item.id.clone(),
                call_id: item.call_id.clone(),
                name: item.name.clone(),
                ..OutputItem::default()
            };
            self.added(output_index, value, out)?;
        }
        let key = item
            .id
            .clone()
            .or_else(|| item.call_id.clone())
            .or_else(|| output_index.and_then(|i| self.by_index.get(&i).cloned()))
            .unwrap_or_default();
        let Some(state) = self.items.get_mut(&key) else {
            return Ok(());
        };
        if state.ended {
            return Ok(());
        }
        state.ended = true;
        // A call that was started ends here, whatever the done item claims to be (a call
        // the stream never started is not ended either).
        if let Some(id) = state.call_id.clone() {
            if !state.streamed {
                if let Some(args) = item.arguments.filter(|a| !a.is_empty()) {
                    out.push(ProviderEvent::ToolCallDelta {
                        id: id.clone(),
                        delta: args,
                    });
                }
            }
            out.push(ProviderEvent::ToolCallEnd { id });
            return Ok(());
        }
        match item.kind.as_deref() {
            Some("reasoning") => {
                if !state.streamed {
                    let text: Vec<String> = item
                        .summary
                        .iter()
                        .chain(item.content.iter())
                        .filter_map(|p| p.text.clone())
                        .filter(|t| !t.is_empty())
                        .collect();
                    if !text.is_empty() {
                        out.push(ProviderEvent::ReasoningDelta(text.join("\n\n")));
                    }
                }
                out.push(ProviderEvent::ReasoningEnd {
                    signature: None,
                    opaque: Some(raw),
                });
            }
            Some("message") if !state.streamed => {
                for part in &item.content {
                    match part.kind.as_deref() {
                        Some("refusal") => {
                            if let Some(text) = part.refusal.clone().filter(|t| !t.is_empty()) {
                                self.refusal = true;
                                out.push(ProviderEvent::TextDelta(text));
                            }
                        }
                        _ => {
                            if let Some(text) = part.text.clone().filter(|t| !t.is_empty()) {
                                out.push(ProviderEvent::TextDelta(text));
                            }
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn completed(
        &mut self,
        response: Option<ResponseBody>,
        out: &mut Vec<ProviderEvent>,
    ) -> Result<(), ProviderError> {
        let response = response.unwrap_or_default();
        if let Some(err) = &response.error {
            return Err(api_error(err));
        }
        if let Some(usage) = response.usage.as_ref().and_then(WireUsage::to_usage) {
            self.usage = Some(usage);
        }
        if let Some(reason) = response
            .incomplete_details
            .as_ref()
            .and_then(|d| d.reason.as_deref())
        {
            self.stop = Some(match reason {
                "content_filter" => ProviderStop::Refusal,
                _ => ProviderStop::MaxTokens,
            });
        } else if response.status.as_deref() == Some("incomplete") {
            self.stop = Some(ProviderStop::MaxTokens);
        }
        let _ = out;
        self.done = true;
        Ok(())
    }

    fn handle(
        &mut self,
        event: StreamEvent,
        out: &mut Vec<ProviderEvent>,
    ) -> Result<(), ProviderError> {
        let Some(kind) = event.kind.clone() else {
            return Ok(());
        };
        match kind.as_str() {
            "response.output_item.added" => {
                if let Some(raw) = event.item {
                    let item: OutputItem = serde_json::from_value(raw.clone())
                        .map_err(|e| decode_error("malformed output item", e, &raw.to_string()))?;
                    self.added(event.output_index, item, out)?;
                }
            }
            "response.output_item.done" => {
                if let Some(raw) = event.item {
                    self.item_done(event.output_index, raw, out)?;
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                if kind == "response.refusal.delta" {
                    self.refusal = true;
                }
                if let Some(key) = self.item_key(&event) {
                    if let Some(state) = self.items.get_mut(&key) {
                        state.streamed = true;
                    }
                }
                if let Some(delta) = event.delta.filter(|d| !d.is_empty()) {
                    out.push(ProviderEvent::TextDelta(delta));
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let mut separator = false;
                if let Some(key) = self.item_key(&event) {
                    if let Some(state) = self.items.get_mut(&key) {
                        state.streamed = true;
                        if let Some(index) = event.summary_index {
                            separator = state.last_summary.is_some_and(|last| last != index);
                            state.last_summary = Some(index);
                        }
                    }
                }
                if let Some(delta) = event.delta.filter(|d| !d.is_empty()) {
                    if separator {
                        out.push(ProviderEvent::ReasoningDelta("\n\n".into()));
                    }
                    out.push(ProviderEvent::ReasoningDelta(delta));
                }
            }
            "response.function_call_arguments.delta" => {
                let Some(key) = self.item_key(&event) else {
                    return Ok(());
                };
                let Some(state) = self.items.get_mut(&key) else {
                    return Ok(());
                };
                // Arguments after `output_item.done` came too late: the call is closed and
                // its final arguments were already taken from the done item.
                if state.ended {
                    return Ok(());
                }
                // Arguments of an item that is not a started call (an `added` item that was
                // not a function call) have no call to go to.
                let Some(id) = state.call_id.clone() else {
                    return Ok(());
                };
                state.streamed = true;
                if let Some(delta) = event.delta.filter(|d| !d.is_empty()) {
                    out.push(ProviderEvent::ToolCallDelta { id, delta });
                }
            }
            "response.completed" | "response.incomplete" | "response.done" => {
                self.completed(event.response, out)?;
            }
            "response.failed" => {
                let err = event
                    .response
                    .and_then(|r| r.error)
                    .unwrap_or_else(|| ErrorObject {
                        message: Some("the response failed".into()),
                        ..ErrorObject::default()
                    });
                return Err(api_error(&err));
            }
            "error" => {
                let err = event.error.unwrap_or(ErrorObject {
                    message: event.message,
                    kind: None,
                    code: event.code,
                });
                return Err(api_error(&err));
            }
            _ => {}
        }
        Ok(())
    }
}

/// The error a `response.failed` or `error` event becomes.
pub(crate) fn api_error(err: &ErrorObject) -> ProviderError {
    let message = err
        .message
        .clone()
        .unwrap_or_else(|| "unknown error".into());
    let kind = api_error_kind(err.code_str().as_deref(), err.kind.as_deref(), &message);
    ProviderError::new(kind, format!("the API reported an error: {message}"))
}

impl Decoder for ResponsesDecoder {
    fn event(
        &mut self,
        _event: &str,
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
        let event: StreamEvent = serde_json::from_str(data)
            .map_err(|e| decode_error("malformed Responses stream event", e, data))?;
        self.handle(event, out)
            .map_err(|e| if e.raw.is_none() { e.with_raw(data) } else { e })
    }

    fn body(&mut self, body: &str, out: &mut Vec<ProviderEvent>) -> Result<(), ProviderError> {
        let mut response: ResponseBody = serde_json::from_str(body.trim())
            .map_err(|e| decode_error("malformed Responses body", e, body))?;
        if let Some(err) = &response.error {
            return Err(api_error(err).with_raw(body));
        }
        let output = std::mem::take(&mut response.output);
        for (index, item) in output.into_iter().enumerate() {
            self.item_done(Some(index as u64), item, out)?;
        }
        self.completed(Some(response), out)
    }

    fn done(&self) -> bool {
        self.done
    }

    fn finish(&mut self, out: &mut Vec<ProviderEvent>) -> Result<(), ProviderError> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        if !self.done {
            return Err(truncated_stream("response.completed"));
        }
        // Calls whose `output_item.done` never came.
        let mut open: Vec<String> = self
            .items
            .values()
            .filter(|s| !s.ended)
            .filter_map(|s| s.call_id.clone())
            .collect();
        open.sort();
        for id in open {
            out.push(ProviderEvent::ToolCallEnd { id });
        }
        if let Some(usage) = self.usage.take() {
            out.push(ProviderEvent::Usage(usage));
        }
        let stop = match self.stop {
            Some(stop) => stop,
            None if self.refusal => ProviderStop::Refusal,
            None if self.any_call => ProviderStop::ToolUse,
            None => ProviderStop::EndTurn,
        };
        out.push(ProviderEvent::Stop(stop));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by `prop_sse`: arguments for an output item that is not a function call made
    /// a delta of a call that was never started.
    #[test]
    fn arguments_of_an_item_that_is_no_call_are_dropped() {
        let mut decoder = ResponsesDecoder::new();
        let mut out = Vec::new();
        for data in [
            r#"{"type":"response.output_item.added","output_index":1,"item":[]}"#,
            r#"{"type":"response.function_call_arguments.delta","output_index":1,"delta":"{\"a\":1}"}"#,
        ] {
            decoder.event("", data, &mut out).expect("decodes");
        }
        assert!(out.is_empty(), "{out:?}");
    }

    /// Found by `prop_sse`: an item added twice replaced the first one's state, and the call
    /// it had started never ended.
    #[test]
    fn an_item_added_twice_is_a_malformed_stream() {
        let mut decoder = ResponsesDecoder::new();
        let mut out = Vec::new();
        let first = r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc1","call_id":"c1","name":"f"}}"#;
        let again = r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc1","name":"f"}}"#;
        decoder.event("", first, &mut out).expect("decodes");
        let err = decoder.event("", again, &mut out).expect_err("a repeat");
        assert_eq!(err.kind, ProviderErrorKind::Decode);
        assert!(err.message.contains("added twice"), "{}", err.message);
    }
}
