//! [`AgentEvent`]: the one event model every front end is a view of.
//!
//! # Order
//!
//! A prompt run emits, in this order:
//!
//! ```text
//! RunStarted
//! [SandboxReport]                        first prompt run of an agent that confines commands,
//!                                        and the first one after `Agent::set_sandbox`
//! [HookDecided{user_prompt}…]            a block ends the run here: RunFinished{success}
//! UserMessage
//! [UserMessage…]                         context added by user_prompt hooks (synthetic)
//! repeat for step = 1..:
//!   [UserMessage…]                       steering text queued while the run was in flight
//!   TurnStarted{step}
//!   RequestStarted{agent}  (RequestStarted{provider} | RetryScheduled{provider})*
//!   AssistantStarted
//!   (TextDelta | ReasoningDelta | ToolUseStarted ToolUseArgsDelta* ToolUseEnded | Usage)*
//!   [AssistantMessage]                   when the reply has content
//!   ToolCall*                            one per call, in order
//!   [HookDecided{stop}…]                 only when the run would end (stop = end)
//!   TurnEnded{stop}                      end | tool_use | length | continue | error | aborted
//!                                        (continue: recovery, steering, a structured
//!                                        output repair turn, or a stop hook)
//!   [TurnRecovery]                       after a `continue` caused by a missing answer
//!   for each call, in call order:
//!     [HookDecided{before_tool}…]        deny / ask / rewrite / halt / failed
//!     [PermissionRequested] [PermissionDecided]
//!     [ToolExecutionStarted ToolProgress* [PlanUpdated]]
//!     [ToolBlocked]                      the sandbox refused something the call did
//!     [HookDecided{after_tool}…]         only when the tool ran
//!     ToolResult
//! [Error]
//! RunFinished{status}
//! ```
//!
//! Read-only calls of one step may run in parallel, but their events are still emitted in
//! call order; as with a permission denial, a call's `before_tool` decisions are reported
//! when the call is checked, which for such a batch is before the earlier calls'
//! execution events (match them by `call_id`). A `stop` hook that makes the model go on
//! reports `HookDecided{stop, continue}` before `TurnEnded{continue}`; the next step
//! follows. A hook that halts the run refuses the step's remaining calls and the run
//! ends after the step with `RunFinished{success}`. A compaction run emits `RunStarted`,
//! `[HookDecided{pre_compact}…]`, `RequestStarted`, provider events, `AssistantStarted`,
//! `TextDelta`s of the summary, `Usage`, then `CompactionFinished` (or `Error`) and
//! `RunFinished`. See [`crate::hooks`] for what each hook decision does.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::hooks::{HookEvent, HookOutcome};
use crate::message::{ContentBlock, Message};
use crate::permission::{Block, PermissionAction, PermissionMode, Risk};
use crate::sandbox::SandboxReport;
use crate::tool::{Permission, PlanItem, ProgressStream, SideEffect};
use crate::usage::Usage;

/// What kind of work a run does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// A prompt: the model/tool loop.
    Prompt,
    /// A compaction of the transcript.
    Compact,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The model finished (or the compaction succeeded).
    Success,
    /// An error ended the run; an [`AgentEvent::Error`] preceded this.
    Error,
    /// The run was aborted.
    Aborted,
}

/// Why one model call (a turn) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model answered and the run is done.
    End,
    /// The model asked for tool calls; another call follows their results.
    ToolUse,
    /// The output token limit cut the answer.
    Length,
    /// The call failed.
    Error,
    /// The run was aborted during the call.
    Aborted,
    /// The call ended but the run goes on with another call (recovery, steering, or the
    /// one repair turn of a structured-output run whose answer failed its check).
    Continue,
    /// The provider refused to answer.
    Refusal,
}

/// Which layer a request attempt belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestScope {
    /// One model call of the agent loop.
    Agent,
    /// One HTTP attempt inside the provider.
    Provider,
}

/// Why a turn was continued without new user input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryReason {
    /// The model stopped with no text and no tool calls.
    MissingAnswer,
    /// The model produced only reasoning.
    CommentaryOnly,
}

/// Outcome of a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// The tool ran and succeeded.
    Ok,
    /// The tool failed, was refused, or was not run.
    Error,
}

/// Machine-readable error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The model provider failed.
    Provider,
    /// The step limit was reached.
    MaxSteps,
    /// The prompt had no content.
    EmptyPrompt,
    /// Compaction could not run.
    Compaction,
    /// Recording to the session store failed.
    Session,
}

/// Details of a permission check, shared by the request and decision events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionInfo {
    /// Tool call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Parsed call arguments.
    pub args: Value,
    /// Active permission mode.
    pub mode: PermissionMode,
    /// The tool's static permission.
    pub permission: Permission,
    /// The tool's side effect.
    pub side_effect: SideEffect,
    /// Why the check came out as it did.
    pub reason: Option<String>,
    /// Risk classification of the call.
    pub risk: Risk,
    /// Sandbox metadata, when the call hit a block.
    pub block: Option<Block>,
}

/// Everything the agent reports while it works.
///
/// Serialised with a `type` tag in snake_case. New variants may be added, so match with a
/// wildcard arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentEvent {
    /// A run (prompt or compaction) took the agent; emitted once, first.
    RunStarted {
        /// Prompt or compaction.
        kind: RunKind,
    },
    /// What the OS sandbox enforces on the commands this agent runs: after `RunStarted` of
    /// the agent's first prompt run, and of the first one after the policy changed. Front
    /// ends show it (a warning when `enforced` is not `full` or the fallback is active).
    SandboxReport(SandboxReport),
    /// A user message was added to the transcript (the prompt, or steering text).
    UserMessage {
        /// The message as stored.
        message: Message,
    },
    /// A model call of the loop begins.
    TurnStarted {
        /// 1-based index of the model call within this run.
        step: u32,
    },
    /// A request attempt begins, at the agent or provider layer.
    RequestStarted {
        /// Which layer.
        scope: RequestScope,
        /// Provider id.
        provider: String,
        /// Model id.
        model: String,
        /// 1-based attempt number.
        attempt: u32,
        /// Attempts allowed.
        max_attempts: u32,
    },
    /// A failed attempt will be retried after a delay.
    RetryScheduled {
        /// Which layer.
        scope: RequestScope,
        /// The upcoming attempt's number.
        attempt: u32,
        /// Attempts allowed.
        max_attempts: u32,
        /// Delay before it, in milliseconds.
        delay_ms: u64,
    },
    /// The provider's response stream opened.
    AssistantStarted,
    /// A chunk of answer text.
    TextDelta {
        /// The text.
        delta: String,
    },
    /// A chunk of reasoning text; never part of the answer.
    ReasoningDelta {
        /// The text.
        delta: String,
    },
    /// The provider began streaming a tool call.
    ToolUseStarted {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// A fragment of a tool call's JSON arguments.
    ToolUseArgsDelta {
        /// Call id.
        id: String,
        /// Argument text fragment.
        delta: String,
    },
    /// The provider finished streaming a tool call's arguments.
    ToolUseEnded {
        /// Call id.
        id: String,
    },
    /// Token usage of one model call, and the agent's running total.
    Usage {
        /// This call.
        turn: Usage,
        /// Everything since the agent was built (or cleared).
        cumulative: Usage,
    },
    /// The assistant's message for this call, as added to the transcript.
    AssistantMessage {
        /// The message.
        message: Message,
    },
    /// The model proposed a tool call.
    ToolCall {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Parsed arguments; `null` when they were not valid JSON.
        args: Value,
        /// The raw argument text, present only when it was not valid JSON.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        raw_args: Option<String>,
        /// The tool's side effect; absent for unknown tools.
        side_effect: Option<SideEffect>,
    },
    /// A model call ended.
    TurnEnded {
        /// 1-based index of the call.
        step: u32,
        /// Why.
        stop: StopReason,
        /// The error text, when `stop` is `error` (or the abort reason).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The model ended without an answer, so one bounded continuation was added.
    TurnRecovery {
        /// What was missing.
        reason: RecoveryReason,
        /// Always 1: recovery happens at most once per run.
        attempt: u32,
    },
    /// A call needs approval; the approver (if any) is being asked.
    PermissionRequested(Box<PermissionInfo>),
    /// A gated call was decided (allowed, denied, or cancelled by an abort).
    PermissionDecided {
        /// The checked call.
        #[serde(flatten)]
        info: Box<PermissionInfo>,
        /// The decision.
        action: PermissionAction,
        /// True when the call was pre-approved (unsafe mode, a standing grant) or the
        /// approver allowed it.
        granted: bool,
        /// True when the approver granted the tool for the rest of the session.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        always: bool,
    },
    /// A lifecycle hook decided something (see [`crate::hooks`]); decisions that change
    /// nothing (allow, keep, accept) are not reported.
    HookDecided {
        /// The hook that decided.
        hook: String,
        /// Where it ran.
        event: HookEvent,
        /// What it decided.
        outcome: HookOutcome,
        /// Why, scrubbed of known secrets.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// The tool call, for `before_tool` and `after_tool`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
    },
    /// Checks passed; the tool is about to run.
    ToolExecutionStarted {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// Progress from a running tool.
    ToolProgress {
        /// Call id.
        id: String,
        /// Where it came from.
        stream: ProgressStream,
        /// The text.
        text: String,
    },
    /// The plan tool changed the session checklist.
    PlanUpdated {
        /// The call that changed it.
        id: Option<String>,
        /// Why it changed.
        explanation: Option<String>,
        /// The whole checklist.
        plan: Vec<PlanItem>,
    },
    /// The sandbox (or the tool's own confinement) refused something a running call did: a
    /// path outside the writable roots, a connection. The call's `ToolResult` follows; front
    /// ends attach the block to it.
    ToolBlocked {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// What was refused, and how to recover.
        block: Block,
    },
    /// A tool call finished (or was refused, or not run).
    ToolResult {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Outcome.
        status: ToolStatus,
        /// Text and image blocks given to the model.
        content: Vec<ContentBlock>,
        /// Output was cut to the cap.
        truncated: bool,
        /// Secrets were removed from the output.
        redacted: bool,
        /// Files the call changed.
        changed_files: Vec<String>,
        /// Wall time of the call in milliseconds (0 when it did not run).
        duration_ms: u64,
    },
    /// Compaction replaced the transcript with a summary.
    CompactionFinished {
        /// The summary text.
        summary: String,
    },
    /// Something failed; a [`AgentEvent::RunFinished`] follows when it is fatal.
    Error {
        /// Machine-readable code.
        code: ErrorCode,
        /// Human-readable message.
        message: String,
        /// True when the run goes on despite it.
        recoverable: bool,
    },
    /// The run is over; always the last event of a run, exactly once.
    RunFinished {
        /// How it ended.
        status: RunStatus,
        /// The final answer text (of the last assistant message), if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        final_text: Option<String>,
    },
}

impl AgentEvent {
    /// True for the run's last event.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::RunFinished { .. })
    }
}
