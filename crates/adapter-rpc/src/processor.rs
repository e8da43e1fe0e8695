//! The event processor: [`AgentEvent`] → zut RPC [`Event`] frames, plus the message, block
//! and usage conversions shared with the command responses.

use std::sync::{Arc, Mutex, MutexGuard};

use agent_core::{
    AgentEvent, ContentBlock, Message, ModelInfo, PlanItem, RecoveryReason, RequestScope, Role,
    StopReason, Usage,
};

use crate::wire::{
    Event, PlanStatus, Recovery, Scope, Stop, WireBlock, WireMessage, WireModel, WirePlanItem,
    WireRole, WireUsage,
};

/// The `turn_end.error` of an aborted model call, in zut's words (Go's `context.Canceled`).
pub const ABORTED_ERROR: &str = "context canceled";

/// Provider ids whose usage always carries measured prompt-cache figures (a zero cache read is
/// a real miss there, not a missing number).
const CACHE_MEASURING_PROVIDERS: [&str; 3] = ["openai", "openai-responses", "anthropic"];

/// Tracks the "measured" cache figures of `usage`, which agent-core's [`Usage`] has no field
/// for.
///
/// zut computes cache-hit ratios from `cache_measured_read / cache_measured_prompt`, counting
/// only calls whose provider reported cache figures. A call counts as measured when its
/// provider always reports them (OpenAI Chat Completions, OpenAI Responses, Anthropic), or when
/// it reported a non-zero cache read or write (any other provider, e.g. the scripted one or an
/// OpenAI-compatible server that happens to report caching). For a measured call,
/// `cache_measured_prompt` is its prompt tokens (uncached + cache read + cache write) and
/// `cache_measured_read` its cache-read tokens; an unmeasured call adds 0 to both.
#[derive(Debug, Clone, Default)]
pub struct UsageMeter {
    always_measured: bool,
    measured_prompt: u64,
    measured_read: u64,
}

impl UsageMeter {
    /// A meter for the provider `provider_id`.
    pub fn new(provider_id: &str) -> Self {
        Self {
            always_measured: CACHE_MEASURING_PROVIDERS.contains(&provider_id),
            ..Self::default()
        }
    }

    /// Converts one call's usage, adding its measured figures to the running totals.
    pub fn record(&mut self, turn: &Usage) -> WireUsage {
        let (prompt, read) = if self.always_measured || turn.cache_read + turn.cache_write > 0 {
            (turn.prompt_tokens(), turn.cache_read)
        } else {
            (0, 0)
        };
        self.measured_prompt += prompt;
        self.measured_read += read;
        wire_usage(turn, prompt, read)
    }

    /// The wire form of agent-core's cumulative usage with this meter's measured totals.
    pub fn cumulative(&self, cumulative: &Usage) -> WireUsage {
        wire_usage(cumulative, self.measured_prompt, self.measured_read)
    }
}

fn wire_usage(usage: &Usage, measured_prompt: u64, measured_read: u64) -> WireUsage {
    WireUsage {
        input: usage.input,
        output: usage.output,
        reasoning: usage.reasoning,
        cache_read: usage.cache_read,
        cache_write: usage.cache_write,
        cache_measured_prompt: measured_prompt,
        cache_measured_read: measured_read,
        cost_usd: usage.cost_usd.unwrap_or(0.0),
    }
}

/// A [`UsageMeter`] shared between the event processor and `get_state`.
#[derive(Debug, Clone, Default)]
pub struct SharedMeter(Arc<Mutex<UsageMeter>>);

impl SharedMeter {
    /// Wraps `meter`.
    pub fn new(meter: UsageMeter) -> Self {
        Self(Arc::new(Mutex::new(meter)))
    }

    /// Locks the meter (recovering it if a holder panicked; nothing panics while holding it).
    pub fn lock(&self) -> MutexGuard<'_, UsageMeter> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Maps the events of one run to RPC events.
#[derive(Debug, Clone)]
pub struct EventProcessor {
    meter: SharedMeter,
}

impl EventProcessor {
    /// A processor recording usage into `meter`.
    pub fn new(meter: SharedMeter) -> Self {
        Self { meter }
    }

    /// The RPC event for `event`, if it has one.
    ///
    /// `RunStarted`, reasoning deltas and the permission events have no zut counterpart and
    /// give `None`; `RunFinished` gives `done`.
    pub fn process(&mut self, event: AgentEvent) -> Option<Event> {
        Some(match event {
            AgentEvent::UserMessage { message } => Event::UserMessage {
                content: blocks(&message.content),
                time: message.time,
            },
            AgentEvent::TurnStarted { step } => Event::TurnStart { step },
            AgentEvent::RequestStarted {
                scope,
                provider,
                model,
                attempt,
                max_attempts,
            } => Event::RequestStarted {
                provider,
                model,
                scope: wire_scope(scope),
                attempt,
                max_attempts,
            },
            AgentEvent::RetryScheduled {
                scope,
                attempt,
                max_attempts,
                delay_ms,
            } => Event::RetryScheduled {
                scope: wire_scope(scope),
                attempt,
                max_attempts,
                delay_ms,
            },
            AgentEvent::AssistantStarted => Event::AssistantStart,
            AgentEvent::TextDelta { delta } => Event::TextDelta { delta },
            AgentEvent::ToolUseStarted { id, name } => Event::ToolUseStart { id, name },
            AgentEvent::ToolUseArgsDelta { id, delta } => Event::ToolUseArgs { id, delta },
            AgentEvent::ToolUseEnded { id } => Event::ToolUseEnd { id },
            AgentEvent::Usage { turn, cumulative } => {
                let mut meter = self.meter.lock();
                let turn = meter.record(&turn);
                Event::Usage {
                    turn,
                    cumulative: meter.cumulative(&cumulative),
                }
            }
            AgentEvent::AssistantMessage { message } => Event::AssistantMessage {
                content: blocks(&message.content),
                time: message.time,
            },
            AgentEvent::ToolCall { id, name, args, .. } => Event::ToolCall { id, name, args },
            AgentEvent::TurnEnded { stop, error, .. } => {
                let (stop, error) = match stop {
                    StopReason::End | StopReason::Refusal => (Stop::End, error),
                    StopReason::Continue => (Stop::Continue, error),
                    StopReason::ToolUse => (Stop::ToolUse, error),
                    StopReason::Length => (Stop::Length, error),
                    StopReason::Error => (Stop::Error, error),
                    StopReason::Aborted => (Stop::Aborted, Some(ABORTED_ERROR.to_string())),
                };
                Event::TurnEnd { stop, error }
            }
            AgentEvent::TurnRecovery { reason, attempt } => Event::TurnRecovery {
                reason: match reason {
                    RecoveryReason::MissingAnswer => Recovery::MissingAnswer,
                    RecoveryReason::CommentaryOnly => Recovery::CommentaryOnly,
                },
                attempt,
            },
            AgentEvent::ToolExecutionStarted { id, name } => {
                Event::ToolExecutionStarted { id, name }
            }
            AgentEvent::ToolProgress { id, text, .. } => Event::ToolProgress { id, text },
            AgentEvent::PlanUpdated {
                id,
                explanation,
                plan,
            } => Event::PlanUpdate {
                id: id.filter(|id| !id.is_empty()),
                explanation,
                plan: plan.iter().map(plan_item).collect(),
            },
            AgentEvent::ToolResult {
                id,
                status,
                content,
                ..
            } => Event::ToolResult {
                id,
                is_error: status == agent_core::ToolStatus::Error,
                content: blocks(&content),
            },
            AgentEvent::CompactionFinished { summary, .. } => Event::CompactDone {
                summary: summary.trim().to_string(),
            },
            AgentEvent::Error { message, .. } => Event::Error { message },
            AgentEvent::RunFinished { .. } => Event::Done,
            // RunStarted: the `started` response already said it. ReasoningDelta: zut has no
            // reasoning event. Permission events: RPC tools run without confirmation.
            _ => return None,
        })
    }
}

fn wire_scope(scope: RequestScope) -> Scope {
    match scope {
        RequestScope::Agent => Scope::Agent,
        RequestScope::Provider => Scope::Provider,
    }
}

fn plan_item(item: &PlanItem) -> WirePlanItem {
    WirePlanItem {
        step: item.step.clone(),
        status: match item.status {
            agent_core::PlanStatus::Pending => PlanStatus::Pending,
            agent_core::PlanStatus::InProgress => PlanStatus::InProgress,
            agent_core::PlanStatus::Completed => PlanStatus::Completed,
        },
    }
}

/// The wire form of a transcript message.
pub fn message(message: &Message) -> WireMessage {
    WireMessage {
        role: match message.role {
            Role::User => WireRole::User,
            Role::Assistant => WireRole::Assistant,
            Role::Tool => WireRole::Tool,
        },
        content: blocks(&message.content),
        time: message.time,
    }
}

/// The wire form of content blocks: reasoning dropped, images as byte counts.
pub fn blocks(content: &[ContentBlock]) -> Vec<WireBlock> {
    content
        .iter()
        .filter_map(|block| {
            Some(match block {
                ContentBlock::Text { text } => WireBlock::Text { text: text.clone() },
                ContentBlock::Image { mime_type, data } => WireBlock::Image {
                    mime_type: mime_type.clone(),
                    bytes: data.len() as u64,
                },
                ContentBlock::ToolCall(call) => WireBlock::ToolCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    args: call.args.clone(),
                },
                ContentBlock::ToolResult {
                    call_id,
                    is_error,
                    content,
                } => WireBlock::ToolResult {
                    call_id: call_id.clone(),
                    is_error: *is_error,
                    content: blocks(content),
                },
                ContentBlock::Reasoning { .. } => return None,
            })
        })
        .collect()
}

/// The wire form of a catalogue entry.
pub fn model(info: &ModelInfo) -> WireModel {
    WireModel {
        id: info.id.clone(),
        provider: info.provider.clone(),
        context_window: u64::from(info.context_window),
        max_output: u64::from(info.max_output),
        reasoning: info.reasoning,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::{RunStatus, ToolCall};
    use serde_json::json;

    fn processor(provider: &str) -> EventProcessor {
        EventProcessor::new(SharedMeter::new(UsageMeter::new(provider)))
    }

    #[test]
    fn reasoning_is_dropped_and_images_are_counted() {
        let content = vec![
            ContentBlock::Reasoning {
                text: "hmm".into(),
                signature: None,
                opaque: None,
            },
            ContentBlock::text("hi"),
            ContentBlock::image("image/png", vec![0u8; 7]),
            ContentBlock::ToolCall(ToolCall {
                id: "c".into(),
                name: "t".into(),
                args: json!({"a": 1}),
            }),
        ];
        let value = serde_json::to_value(blocks(&content)).expect("serialise");
        assert_eq!(
            value,
            json!([
                {"type": "text", "text": "hi"},
                {"type": "image", "mime_type": "image/png", "bytes": 7},
                {"type": "tool_call", "id": "c", "name": "t", "args": {"a": 1}}
            ])
        );
    }

    #[test]
    fn stops_map_to_zut_values() {
        let mut p = processor("scripted");
        let end = |stop| AgentEvent::TurnEnded {
            step: 1,
            stop,
            error: None,
        };
        assert_eq!(
            p.process(end(StopReason::Refusal)),
            Some(Event::TurnEnd {
                stop: Stop::End,
                error: None
            })
        );
        assert_eq!(
            p.process(AgentEvent::TurnEnded {
                step: 1,
                stop: StopReason::Aborted,
                error: Some("aborted".into())
            }),
            Some(Event::TurnEnd {
                stop: Stop::Aborted,
                error: Some(ABORTED_ERROR.into())
            })
        );
        assert_eq!(
            p.process(AgentEvent::RunFinished {
                status: RunStatus::Success,
                final_text: None
            }),
            Some(Event::Done)
        );
        assert_eq!(
            p.process(AgentEvent::ReasoningDelta { delta: "x".into() }),
            None
        );
    }

    #[test]
    fn measured_cache_figures_follow_the_provider() {
        let usage = Usage {
            input: 10,
            output: 5,
            reasoning: None,
            cache_read: 0,
            cache_write: 0,
            cost_usd: None,
        };
        let mut scripted = UsageMeter::new("scripted");
        let wire = scripted.record(&usage);
        assert_eq!(
            (wire.cache_measured_prompt, wire.cache_measured_read),
            (0, 0)
        );
        let cached = Usage {
            cache_read: 30,
            ..usage
        };
        let wire = scripted.record(&cached);
        assert_eq!(
            (wire.cache_measured_prompt, wire.cache_measured_read),
            (40, 30)
        );
        assert_eq!(scripted.cumulative(&usage).cache_measured_prompt, 40);

        let mut openai = UsageMeter::new("openai");
        let wire = openai.record(&usage);
        assert_eq!(
            (wire.cache_measured_prompt, wire.cache_measured_read),
            (10, 0)
        );
        assert_eq!(wire.cost_usd, 0.0);
    }
}
