//! The event processor: [`AgentEvent`] → zut RPC [`Event`] frames, plus the message, block
//! and usage conversions shared with the command responses.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, MutexGuard};

use agent_core::{
    AgentEvent, ContentBlock, Message, ModelInfo, PlanItem, RecoveryReason, RequestScope, Role,
    StopReason, Usage,
};

use agent_host::output::Frames;

use crate::wire::{
    Event, FrameRef, PlanStatus, Recovery, Scope, Stop, WireBlock, WireMessage, WireModel,
    WirePlanItem, WireRole, WireUsage,
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

/// The [`AgentEvent`] variants (by their serde `type`) that have no zut RPC event, and why:
///
/// - `run_started`: the `{"started":true}` response already said it;
/// - `reasoning_delta`: zut has no reasoning event (reasoning is dropped from messages too);
/// - `permission_requested`, `permission_decided`: RPC runs tools without confirmation, so
///   no client ever answers a permission prompt (see [`crate::cli::AllowAll`]);
/// - `sandbox_report`, `hook_decided`, `tool_blocked`, `subagent*`: not wired into this front end yet;
/// - `context_usage`, `compaction_started`: zut has no event for them (`compact_done`
///   reports a finished compaction; the context figures belong in `get_state`, from
///   `Agent::context_usage`).
///
/// Every other variant is mapped; a test feeds one of each and fails for a variant that is
/// neither mapped nor listed here.
pub const NOT_SHOWN: [&str; 12] = [
    "run_started",
    "reasoning_delta",
    "permission_requested",
    "permission_decided",
    "sandbox_report",
    "hook_decided",
    "tool_blocked",
    "subagent_started",
    "subagent",
    "subagent_finished",
    "context_usage",
    "compaction_started",
];

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

    /// The RPC event for `event`, borrowing its text, if it has one (see [`NOT_SHOWN`]);
    /// `RunFinished` gives `done`.
    pub fn map<'a>(&mut self, event: &'a AgentEvent) -> Option<Event<'a>> {
        Some(match event {
            AgentEvent::RunStarted { .. } => return None,
            AgentEvent::UserMessage { message } => Event::UserMessage {
                content: blocks(&message.content),
                time: message.time,
            },
            AgentEvent::TurnStarted { step } => Event::TurnStart { step: *step },
            AgentEvent::RequestStarted {
                scope,
                provider,
                model,
                attempt,
                max_attempts,
            } => Event::RequestStarted {
                provider: provider.as_str().into(),
                model: model.as_str().into(),
                scope: wire_scope(*scope),
                attempt: *attempt,
                max_attempts: *max_attempts,
            },
            AgentEvent::RetryScheduled {
                scope,
                attempt,
                max_attempts,
                delay_ms,
            } => Event::RetryScheduled {
                scope: wire_scope(*scope),
                attempt: *attempt,
                max_attempts: *max_attempts,
                delay_ms: *delay_ms,
            },
            AgentEvent::AssistantStarted => Event::AssistantStart,
            AgentEvent::TextDelta { delta } => Event::TextDelta {
                delta: delta.as_str().into(),
            },
            AgentEvent::ReasoningDelta { .. } => return None,
            AgentEvent::ToolUseStarted { id, name } => Event::ToolUseStart {
                id: id.as_str().into(),
                name: name.as_str().into(),
            },
            AgentEvent::ToolUseArgsDelta { id, delta } => Event::ToolUseArgs {
                id: id.as_str().into(),
                delta: delta.as_str().into(),
            },
            AgentEvent::ToolUseEnded { id } => Event::ToolUseEnd {
                id: id.as_str().into(),
            },
            AgentEvent::Usage { turn, cumulative } => {
                let mut meter = self.meter.lock();
                let turn = meter.record(turn);
                Event::Usage {
                    turn,
                    cumulative: meter.cumulative(cumulative),
                }
            }
            AgentEvent::AssistantMessage { message } => Event::AssistantMessage {
                content: blocks(&message.content),
                time: message.time,
            },
            AgentEvent::ToolCall { id, name, args, .. } => Event::ToolCall {
                id: id.as_str().into(),
                name: name.as_str().into(),
                args: Cow::Borrowed(args),
            },
            AgentEvent::TurnEnded { stop, error, .. } => {
                let error = error.as_deref().map(Cow::Borrowed);
                let (stop, error) = match stop {
                    StopReason::End | StopReason::Refusal => (Stop::End, error),
                    StopReason::Continue => (Stop::Continue, error),
                    StopReason::ToolUse => (Stop::ToolUse, error),
                    StopReason::Length => (Stop::Length, error),
                    StopReason::Error => (Stop::Error, error),
                    StopReason::Aborted => (Stop::Aborted, Some(Cow::Borrowed(ABORTED_ERROR))),
                };
                Event::TurnEnd { stop, error }
            }
            AgentEvent::TurnRecovery { reason, attempt } => Event::TurnRecovery {
                reason: match reason {
                    RecoveryReason::MissingAnswer => Recovery::MissingAnswer,
                    RecoveryReason::CommentaryOnly => Recovery::CommentaryOnly,
                },
                attempt: *attempt,
            },
            AgentEvent::PermissionRequested(_) => return None,
            AgentEvent::PermissionDecided { .. } => return None,
            AgentEvent::ToolExecutionStarted { id, name } => Event::ToolExecutionStarted {
                id: id.as_str().into(),
                name: name.as_str().into(),
            },
            AgentEvent::ToolProgress { id, text, .. } => Event::ToolProgress {
                id: id.as_str().into(),
                text: text.as_str().into(),
            },
            AgentEvent::PlanUpdated {
                id,
                explanation,
                plan,
            } => Event::PlanUpdate {
                id: id.as_deref().filter(|id| !id.is_empty()).map(Cow::Borrowed),
                explanation: explanation.as_deref().map(Cow::Borrowed),
                plan: plan.iter().map(plan_item).collect(),
            },
            AgentEvent::ToolResult {
                id,
                status,
                content,
                ..
            } => Event::ToolResult {
                id: id.as_str().into(),
                is_error: *status == agent_core::ToolStatus::Error,
                content: blocks(content),
            },
            AgentEvent::CompactionFinished { summary, .. } => Event::CompactDone {
                summary: summary.trim().into(),
            },
            AgentEvent::Error { message, .. } => Event::Error {
                message: message.as_str().into(),
            },
            AgentEvent::RunFinished { .. } => Event::Done,
            // `AgentEvent` is `#[non_exhaustive]`, so the compiler demands this arm; every
            // variant of this agent-core is matched above. A variant added later lands here
            // (not shown) until it is mapped, and `every_variant_is_mapped_or_not_shown`
            // fails for it meanwhile.
            _ => return None,
        })
    }

    /// [`map`](Self::map) for an event the caller gives away: the frame owns its text.
    /// The streaming deltas move their strings into the frame (no copy); other events are
    /// mapped by [`map`](Self::map) and detached.
    pub fn process(&mut self, event: AgentEvent) -> Option<Event<'static>> {
        match event {
            AgentEvent::TextDelta { delta } => Some(Event::TextDelta {
                delta: delta.into(),
            }),
            AgentEvent::ToolUseArgsDelta { id, delta } => Some(Event::ToolUseArgs {
                id: id.into(),
                delta: delta.into(),
            }),
            other => self.map(&other).map(Event::into_owned),
        }
    }

    /// Appends the line of `event`'s frame, if it has one, to `frames` (a frame that cannot
    /// be serialised is reported on stderr and left out).
    pub fn map_into(&mut self, event: &AgentEvent, frames: &mut Frames) {
        if let Some(event) = self.map(event) {
            if let Err(err) = frames.push(&FrameRef::Event(event)) {
                eprintln!("adapter-rpc: cannot serialise a frame: {err}");
            }
        }
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
    fn every_variant_is_mapped_or_deliberately_not_shown() {
        let names = agent_core::testing::variant_names();
        assert!(names.len() >= 25, "serde listed {names:?}");
        let samples = agent_core::testing::one_of_each();
        let mut p = processor("openai");
        for name in &names {
            let sample = samples
                .iter()
                .find(|e| agent_core::testing::type_of(e) == *name)
                .unwrap_or_else(|| {
                    panic!(
                        "AgentEvent `{name}` is new: map it in EventProcessor::map (or list it \
                         in NOT_SHOWN with the reason), then add a sample of it here"
                    )
                });
            let mapped = p.map(sample);
            match NOT_SHOWN.contains(&name.as_str()) {
                true => assert!(mapped.is_none(), "`{name}` is listed as not shown"),
                false => assert!(
                    mapped.is_some(),
                    "`{name}` is neither mapped nor listed in NOT_SHOWN"
                ),
            }
        }
        for name in NOT_SHOWN {
            assert!(
                names.iter().any(|n| n == name),
                "NOT_SHOWN names `{name}`, which agent-core no longer has"
            );
        }
    }

    #[test]
    fn frames_borrow_the_events_text_and_owned_frames_match() {
        let (mut p, mut twin) = (processor("openai"), processor("openai"));
        for event in agent_core::testing::one_of_each() {
            // Two processors, as usage is metered per processor.
            let borrowed = p.map(&event);
            let owned = twin.process(event.clone());
            assert_eq!(borrowed, owned, "{event:?}");
            if let Some(Event::TextDelta { delta }) = &borrowed {
                assert!(matches!(delta, Cow::Borrowed(_)), "no copy of a delta");
            }
        }
        let mut frames = Frames::with_escapes(agent_host::text::JsonEscapes::LineSeparators);
        p.map_into(
            &AgentEvent::TextDelta {
                delta: "a\u{2028}b".into(),
            },
            &mut frames,
        );
        p.map_into(
            &AgentEvent::ReasoningDelta { delta: "r".into() },
            &mut frames,
        );
        assert_eq!(
            frames.bytes(),
            b"{\"type\":\"text_delta\",\"delta\":\"a\\u2028b\"}\n"
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
