//! The event processor: [`AgentEvent`] → zut RPC [`Event`] frames, plus the message, block
//! and usage conversions shared with the command responses.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, MutexGuard};

use agent_core::{
    event::{RecoveryReason, RequestScope, StopReason},
    hooks::{HookEvent, HookOutcome},
    message::Role,
    permission::{Block, BlockCode},
    provider::ModelInfo,
    tool::PlanItem,
    AgentEvent, ContentBlock, Message, RunStatus, Usage,
};

use agent_core::sandbox::{Enforcement, SandboxReport};
use agent_host::output::Frames;
use agent_host::turn::{Coverage, Mapping, TurnState};
use agent_mcp::{ServerState, ServerStatus};

use crate::wire::{
    Event, FrameRef, PlanStatus, Recovery, Scope, Stop, WireBlock, WireMcpServer, WireMessage,
    WireModel, WirePlanItem, WireRole, WireSandbox, WireToolBlock, WireUsage,
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
/// - `sandbox_report`: zut has no event for it; `get_state` carries the report
///   (`sandbox`), and the server writes a line to stderr when the kernel enforces less
///   than the policy asks;
/// - `context_usage`, `compaction_started`: zut has no event for them (`compact_done`
///   reports a finished compaction; the context figures are in `get_state.context`, from
///   `Agent::context_usage`; the `usage` event is unchanged).
///
/// Every other variant is mapped, some only in part ([`PARTLY_SHOWN`]); the coverage test
/// (`agent_host::turn::coverage::assert_covers`) feeds one of each through [`RpcMapping`]
/// and fails for a variant that is neither mapped nor declared not shown.
pub const NOT_SHOWN: [&str; 7] = [
    "run_started",
    "reasoning_delta",
    "permission_requested",
    "permission_decided",
    "sandbox_report",
    "context_usage",
    "compaction_started",
];

/// The variants shown only in part, or on another event's frame:
///
/// - `hook_decided`: a prompt refused by a `user_prompt` hook (`block`) and a run stopped
///   by a hook (`halt`) are an `error{message}` (then `done`, as for an empty prompt); a
///   vetoed tool call needs nothing more, because its `tool_result` (`is_error:true`)
///   already carries the hook's reason, the text the model gets; the other decisions
///   (rewrite, append, add_context, continue, …) change what the model sees and show
///   through the ordinary events, so they have no frame of their own;
/// - `tool_blocked`: the `block` field of the same call's `tool_result` (our extension).
pub const PARTLY_SHOWN: [&str; 2] = ["hook_decided", "tool_blocked"];

/// The zut RPC mapping of a run: each event, read with the turn's [`TurnState`] (which
/// holds each call's sandbox blocks), becomes at most one RPC event. Of its own it keeps
/// only the usage meter it records into, shared with `get_state`.
#[derive(Debug, Clone)]
pub struct RpcMapping {
    meter: SharedMeter,
}

impl RpcMapping {
    /// A mapping recording usage into `meter`.
    pub fn new(meter: SharedMeter) -> Self {
        Self { meter }
    }
}

impl Mapping for RpcMapping {
    type Frame<'e> = Event<'e>;

    /// The RPC event of `event`, if it has one, handed to `out`; `state` already includes
    /// `event`.
    fn map<'e>(
        &mut self,
        state: &TurnState,
        event: &'e AgentEvent,
        mut out: impl FnMut(Event<'e>),
    ) -> Coverage {
        let frame = match event {
            AgentEvent::RunStarted { .. } => return Coverage::NotShown,
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
            AgentEvent::ModelFallback { from, to, reason } => Event::ModelFallback {
                from: from.as_str().into(),
                to: to.as_str().into(),
                reason: reason.as_str().into(),
            },
            AgentEvent::AssistantStarted => Event::AssistantStart,
            // Nearly every event of a turn: built straight into `out`, not moved through
            // `frame` (callgrind, text load: 1443 → 1389 instructions per event).
            AgentEvent::TextDelta { delta } => {
                out(Event::TextDelta {
                    delta: delta.as_str().into(),
                });
                return Coverage::Shown;
            }
            AgentEvent::ReasoningDelta { .. } => return Coverage::NotShown,
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
            AgentEvent::PermissionRequested(_) => return Coverage::NotShown,
            AgentEvent::PermissionDecided { .. } => return Coverage::NotShown,
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
                is_error: *status == agent_core::event::ToolStatus::Error,
                content: blocks(content),
                // The first block the sandbox reported for this call (the state keeps them).
                block: state
                    .call(id)
                    .and_then(|call| call.blocks.first())
                    .map(tool_block),
            },
            // Shown on the call's `tool_result`, which follows.
            AgentEvent::ToolBlocked { .. } => return Coverage::NotShown,
            AgentEvent::SandboxReport(_) => return Coverage::NotShown,
            AgentEvent::ContextUsage { .. } => return Coverage::NotShown,
            AgentEvent::CompactionStarted { .. } => return Coverage::NotShown,
            AgentEvent::HookDecided {
                hook,
                event,
                outcome,
                reason,
                ..
            } => {
                if let Some(frame) = hook_error(hook, *event, *outcome, reason.as_deref()) {
                    out(frame);
                }
                return Coverage::Shown;
            }
            AgentEvent::SubagentStarted {
                name,
                call_id,
                description,
                background,
                ..
            } => {
                let what = description.as_deref().unwrap_or_default();
                let how = if *background {
                    " in the background"
                } else {
                    ""
                };
                Event::ToolProgress {
                    id: call_id.as_str().into(),
                    text: format!("[{name}] started{how}: {what}\n").into(),
                }
            }
            AgentEvent::Subagent {
                name,
                call_id,
                event,
                ..
            } => {
                if let Some(text) = subagent_progress(name, event.innermost()) {
                    out(Event::ToolProgress {
                        id: call_id.as_str().into(),
                        text,
                    });
                }
                return Coverage::Shown;
            }
            AgentEvent::SubagentFinished {
                name,
                call_id,
                status,
                error,
                ..
            } => {
                let text = match error {
                    Some(error) => format!("\n[{name}] {}: {error}\n", run_status(*status)),
                    None => format!("\n[{name}] {}\n", run_status(*status)),
                };
                Event::ToolProgress {
                    id: call_id.as_str().into(),
                    text: text.into(),
                }
            }
            AgentEvent::CompactionFinished { summary, .. } => Event::CompactDone {
                summary: summary.trim().into(),
            },
            AgentEvent::Error { message, .. } => Event::Error {
                message: message.as_str().into(),
            },
            AgentEvent::RunFinished { .. } => Event::Done,
            // `AgentEvent` is `#[non_exhaustive]`: a variant added later is unknown (not
            // shown, logged) until it is mapped, and the coverage test fails for it.
            other => return Coverage::rest(other),
        };
        out(frame);
        Coverage::Shown
    }
}

/// Appends the line of `event` to `frames` (a frame that cannot be serialised is reported
/// on stderr and left out).
pub fn push_frame(frames: &mut Frames, event: Event<'_>) {
    if let Err(err) = frames.push(&FrameRef::Event(event)) {
        eprintln!("adapter-rpc: cannot serialise a frame: {err}");
    }
}

/// The `error{message}` of a hook decision that ended a prompt without an answer: a
/// `user_prompt` block or a halt. Other decisions show through the ordinary events.
fn hook_error<'a>(
    hook: &str,
    event: HookEvent,
    outcome: HookOutcome,
    reason: Option<&str>,
) -> Option<Event<'a>> {
    let reason = reason
        .filter(|r| !r.trim().is_empty())
        .unwrap_or("no reason given");
    let message = match (event, outcome) {
        (HookEvent::UserPrompt, HookOutcome::Block) => {
            format!("prompt was blocked by hook {hook:?}: {reason}")
        }
        (_, HookOutcome::Halt) => format!("the run was stopped by hook {hook:?}: {reason}"),
        _ => return None,
    };
    Some(Event::Error {
        message: message.into(),
    })
}

/// Longest tool-result excerpt in a sub-agent's progress line, in bytes.
const SUBAGENT_EXCERPT: usize = 200;

/// The `tool_progress` text of one event of a sub-agent (its innermost event): its answer
/// text as it streams, its tool calls and their outcomes, its errors. Lifecycle, usage and
/// the rest are left out.
fn subagent_progress<'a>(name: &str, event: &'a AgentEvent) -> Option<Cow<'a, str>> {
    Some(match event {
        AgentEvent::TextDelta { delta } => Cow::Borrowed(delta.as_str()),
        AgentEvent::ToolCall {
            name: tool, args, ..
        } => format!("\n[{name}] {tool} {args}\n").into(),
        AgentEvent::ToolResult {
            name: tool,
            status,
            content,
            ..
        } => match status {
            agent_core::event::ToolStatus::Error => {
                let text = agent_host::text::text_of(content);
                let first = text.lines().next().unwrap_or_default();
                let (excerpt, cut) = agent_host::text::truncate_utf8(first, SUBAGENT_EXCERPT);
                let more = if cut { "…" } else { "" };
                format!("[{name}] {tool} failed: {excerpt}{more}\n").into()
            }
            _ => format!("[{name}] {tool} done\n").into(),
        },
        AgentEvent::Error { message, .. } => format!("\n[{name}] error: {message}\n").into(),
        _ => return None,
    })
}

/// The `get_state.sandbox` form of a sandbox report.
pub fn sandbox(report: &SandboxReport) -> WireSandbox {
    WireSandbox {
        mode: report.mode.as_str().to_string(),
        network: report.network.as_str().to_string(),
        enforced: match report.enforced {
            Enforcement::Full => "full",
            Enforcement::Partial => "partial",
            Enforcement::None => "none",
        }
        .to_string(),
        landlock_abi: report.landlock_abi,
        fallback: report.fallback.as_str().to_string(),
        fallback_active: report.fallback_active,
        reason: report.reason.clone(),
    }
}

/// The `get_state.mcp_servers[]` form of one MCP server.
pub fn mcp_server(status: &ServerStatus) -> WireMcpServer {
    let (state, reason) = match &status.state {
        ServerState::Connected => ("connected", None),
        ServerState::Failed { reason } => ("failed", Some(reason.clone())),
    };
    WireMcpServer {
        name: status.name.clone(),
        transport: status.transport.as_str().to_string(),
        status: state.to_string(),
        reason,
        tools: status.tools.clone(),
        pid: status.pid,
    }
}

/// agent-core's name of a block code (its serde name).
fn block_code(code: BlockCode) -> &'static str {
    match code {
        BlockCode::ContextCanceled => "context_canceled",
        BlockCode::DeniedPermission => "denied_permission",
        BlockCode::OutsideWorkspace => "outside_workspace",
        BlockCode::SymlinkTraversal => "symlink_traversal",
        BlockCode::Network => "network",
        BlockCode::Sandbox => "sandbox",
        BlockCode::DestructiveCommand => "destructive_command",
        BlockCode::PersistentDeny => "persistent_deny",
        BlockCode::Denied => "denied",
    }
}

/// How a sub-agent's run ended, in words.
fn run_status(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Success => "finished",
        RunStatus::Error => "failed",
        RunStatus::Aborted => "aborted",
    }
}

/// The wire form of a sandbox block.
pub fn tool_block(block: &Block) -> WireToolBlock {
    WireToolBlock {
        code: block_code(block.code).to_string(),
        tool_name: block.tool_name.clone(),
        path: block.path.clone(),
        reason: block.reason.clone(),
        recoverable: block.recoverable,
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
            agent_core::tool::PlanStatus::Pending => PlanStatus::Pending,
            agent_core::tool::PlanStatus::InProgress => PlanStatus::InProgress,
            agent_core::tool::PlanStatus::Completed => PlanStatus::Completed,
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
mod tests;
