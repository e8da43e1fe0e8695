//! One model call: streaming its events and assembling the assistant message.

use futures::StreamExt;
use serde_json::Value;

use crate::emit::{Burst, Emitter};
use crate::event::{AgentEvent, RequestScope};
use crate::inner::Inner;
use crate::message::{ContentBlock, Message, Role, ToolCall};
use crate::provider::{ProviderError, ProviderEvent, ProviderRequest, ProviderStop};
use crate::telemetry;

pub(crate) enum CallEnd {
    Completed(Option<ProviderStop>),
    Aborted,
    Failed(ProviderError),
}

pub(crate) struct CallOutcome {
    /// The assistant message assembled from the stream.
    pub(crate) message: Message,
    /// Tool calls with their raw argument text when it was not valid JSON.
    pub(super) calls: Vec<(ToolCall, Option<String>)>,
    pub(crate) end: CallEnd,
    /// The call's usage, when the provider reported it.
    pub(crate) usage: Option<crate::usage::Usage>,
}

/// Assembles streamed deltas into content blocks.
#[derive(Default)]
struct Assembler {
    blocks: Vec<ContentBlock>,
    reasoning_open: bool,
    /// Open tool calls: id, block index, argument text.
    calls: Vec<(String, usize, String)>,
}

impl Assembler {
    fn text(&mut self, delta: &str) {
        self.reasoning_open = false;
        match self.blocks.last_mut() {
            Some(ContentBlock::Text { text }) => text.push_str(delta),
            _ => self.blocks.push(ContentBlock::text(delta)),
        }
    }

    fn reasoning(&mut self, delta: &str) {
        if self.reasoning_open {
            if let Some(ContentBlock::Reasoning { text, .. }) = self.blocks.last_mut() {
                text.push_str(delta);
                return;
            }
        }
        self.reasoning_open = true;
        self.blocks.push(ContentBlock::Reasoning {
            text: delta.to_string(),
            signature: None,
            opaque: None,
        });
    }

    fn reasoning_end(&mut self, sig: Option<String>, data: Option<Value>) {
        let open = self.reasoning_open;
        self.reasoning_open = false;
        if open {
            if let Some(ContentBlock::Reasoning {
                signature, opaque, ..
            }) = self.blocks.last_mut()
            {
                *signature = sig;
                *opaque = data;
                return;
            }
        }
        self.blocks.push(ContentBlock::Reasoning {
            text: String::new(),
            signature: sig,
            opaque: data,
        });
    }

    fn call_start(&mut self, id: &str, name: &str) {
        self.reasoning_open = false;
        self.calls
            .push((id.to_string(), self.blocks.len(), String::new()));
        self.blocks.push(ContentBlock::ToolCall(ToolCall {
            id: id.to_string(),
            name: name.to_string(),
            args: Value::Null,
        }));
    }

    fn call_delta(&mut self, id: &str, delta: &str) {
        if let Some((_, _, args)) = self.calls.iter_mut().find(|(cid, _, _)| cid == id) {
            args.push_str(delta);
        }
    }

    fn finish(mut self) -> (Message, Vec<(ToolCall, Option<String>)>) {
        let mut calls = Vec::with_capacity(self.calls.len());
        for (_, index, raw) in self.calls {
            let (args, raw) = parse_args(raw);
            if let Some(ContentBlock::ToolCall(call)) = self.blocks.get_mut(index) {
                call.args = args;
                calls.push((call.clone(), raw));
            }
        }
        (Message::new(Role::Assistant, self.blocks), calls)
    }
}

/// Parses tool-call argument text: blank means `{}`; invalid JSON gives `null` plus the raw
/// text.
fn parse_args(raw: String) -> (Value, Option<String>) {
    if raw.trim().is_empty() {
        return (Value::Object(Default::default()), None);
    }
    match serde_json::from_str(&raw) {
        Ok(value) => (value, None),
        Err(_) => (Value::Null, Some(raw)),
    }
}

/// Streams one model call, forwarding its events.
pub(crate) async fn stream_call(
    inner: &Inner,
    em: &Emitter,
    request: ProviderRequest,
    with_tools: bool,
) -> CallOutcome {
    let provider = inner.provider.id().to_string();
    let model = request.model.clone();
    let pricing = inner.provider.model_info(&model).and_then(|m| m.pricing);
    let mut burst = Burst::new(em);
    burst.push(AgentEvent::RequestStarted {
        scope: RequestScope::Agent,
        provider: provider.clone(),
        model: model.clone(),
        attempt: 1,
        max_attempts: 1,
    });
    let mut stream = inner.provider.stream(request);
    let mut asm = Assembler::default();
    let mut started = false;
    let mut stop = None;
    let mut usage = None;
    let cancelled = em.cancel.cancelled();
    tokio::pin!(cancelled);
    let end = loop {
        if burst.full() {
            burst.flush().await;
            // A stream that is always ready never reaches the `select!` below: look at the
            // token once per burst (checking it costs a lock).
            if em.cancel.is_cancelled() {
                break CallEnd::Aborted;
            }
        }
        // What the stream has ready is taken without waiting; before the loop waits for the
        // provider, everything it has so far goes to the reader.
        let item = match futures::poll!(stream.next()) {
            std::task::Poll::Ready(item) => item,
            std::task::Poll::Pending => {
                burst.flush().await;
                tokio::select! {
                    biased;
                    _ = &mut cancelled => break CallEnd::Aborted,
                    item = stream.next() => item,
                }
            }
        };
        let event = match item {
            None => break CallEnd::Completed(stop),
            Some(Err(err)) => {
                telemetry::record_call_error(&err);
                break CallEnd::Failed(err);
            }
            Some(Ok(event)) => event,
        };
        let content = matches!(
            event,
            ProviderEvent::TextDelta(_)
                | ProviderEvent::ReasoningDelta(_)
                | ProviderEvent::ReasoningEnd { .. }
                | ProviderEvent::ToolCallStart { .. }
        );
        if !started && (content || matches!(event, ProviderEvent::ResponseStarted)) {
            started = true;
            burst.push(AgentEvent::AssistantStarted);
        }
        match event {
            ProviderEvent::RequestStarted {
                attempt,
                max_attempts,
            } => burst.push(AgentEvent::RequestStarted {
                scope: RequestScope::Provider,
                provider: provider.clone(),
                model: model.clone(),
                attempt,
                max_attempts,
            }),
            ProviderEvent::RetryScheduled {
                attempt,
                max_attempts,
                delay,
            } => burst.push(AgentEvent::RetryScheduled {
                scope: RequestScope::Provider,
                attempt,
                max_attempts,
                delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            }),
            ProviderEvent::ResponseStarted => {}
            ProviderEvent::TextDelta(delta) => {
                if !delta.is_empty() {
                    asm.text(&delta);
                    burst.push(AgentEvent::TextDelta { delta });
                }
            }
            ProviderEvent::ReasoningDelta(delta) => {
                if !delta.is_empty() {
                    asm.reasoning(&delta);
                    burst.push(AgentEvent::ReasoningDelta { delta });
                }
            }
            ProviderEvent::ReasoningEnd { signature, opaque } => {
                asm.reasoning_end(signature, opaque)
            }
            ProviderEvent::ToolCallStart { id, name } if with_tools => {
                asm.call_start(&id, &name);
                burst.push(AgentEvent::ToolUseStarted { id, name });
            }
            ProviderEvent::ToolCallDelta { id, delta } if with_tools => {
                asm.call_delta(&id, &delta);
                burst.push(AgentEvent::ToolUseArgsDelta { id, delta });
            }
            ProviderEvent::ToolCallEnd { id } if with_tools => {
                burst.push(AgentEvent::ToolUseEnded { id });
            }
            ProviderEvent::ToolCallStart { .. }
            | ProviderEvent::ToolCallDelta { .. }
            | ProviderEvent::ToolCallEnd { .. } => {}
            ProviderEvent::Usage(mut turn) => {
                telemetry::record_usage(&turn);
                if turn.cost_usd.is_none() {
                    turn.cost_usd = pricing.map(|p| p.cost(&turn));
                }
                let cumulative = {
                    let mut state = inner.state();
                    state.add_usage(&turn);
                    state.usage
                };
                usage = Some(turn);
                burst.push(AgentEvent::Usage { turn, cumulative });
            }
            ProviderEvent::Stop(reason) => {
                telemetry::record_stop(reason);
                stop = Some(reason)
            }
        }
    };
    burst.flush().await;
    let (message, calls) = asm.finish();
    CallOutcome {
        message,
        calls,
        end,
        usage,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_args_are_an_empty_object_and_bad_args_keep_raw_text() {
        assert_eq!(parse_args("  ".into()), (serde_json::json!({}), None));
        assert_eq!(
            parse_args("{\"a\":1}".into()),
            (serde_json::json!({"a": 1}), None)
        );
        assert_eq!(
            parse_args("{\"a\":".into()),
            (Value::Null, Some("{\"a\":".to_string()))
        );
    }

    #[test]
    fn assembler_splits_reasoning_and_text_blocks() {
        let mut asm = Assembler::default();
        asm.reasoning("think");
        asm.reasoning("ing");
        asm.reasoning_end(Some("sig".into()), None);
        asm.text("hel");
        asm.text("lo");
        asm.call_start("c1", "read_file");
        asm.call_delta("c1", "{\"path\":");
        asm.call_delta("c1", "\"a\"}");
        let (message, calls) = asm.finish();
        assert_eq!(message.content.len(), 3);
        assert_eq!(
            message.content[0],
            ContentBlock::Reasoning {
                text: "thinking".into(),
                signature: Some("sig".into()),
                opaque: None
            }
        );
        assert_eq!(message.text(), "hello");
        assert_eq!(calls[0].0.args, serde_json::json!({"path": "a"}));
    }
}
