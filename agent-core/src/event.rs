//! [`AgentEvent`]: the one event model every front end is a view of.
//!
//! # Order
//!
//! A prompt run emits, in this order:
//!
//! ```text
//! RunStarted
//! [SandboxReport]                        first prompt run of an agent that confines commands,
//!                                        and the first one after `AgentUpdate::sandbox`
//! [HookDecided{user_prompt}…]            a block ends the run here: RunFinished{success}
//! UserMessage
//! [UserMessage…]                         context added by user_prompt hooks (synthetic)
//! repeat for step = 1..:
//!   [UserMessage…]                       steering text queued while the run was in flight
//!   [CompactionStarted{auto|overflow}    the context crossed the auto-compact threshold,
//!    [HookDecided{pre_compact}…]         or the previous call overflowed the window
//!    [Usage]
//!    (CompactionFinished ContextUsage | Error{compaction})]
//!   [Error{budget_exceeded}]             the spend cap is reached: RunFinished{error}
//!   TurnStarted{step}
//!   RequestStarted{agent}  (RequestStarted{provider} | RetryScheduled{provider})*
//!   [ModelFallback RequestStarted{agent} (…)*]
//!                                        the call failed before any output (overload, rate
//!                                        limit, 5xx): made once more with the fallback model
//!   AssistantStarted
//!   (TextDelta | ReasoningDelta | ToolUseStarted ToolUseArgsDelta* ToolUseEnded | Usage)*
//!   [AssistantMessage]                   when the reply has content
//!   ContextUsage                         when the call completed: how full the window is
//!   ToolCall*                            one per call, in order
//!   [HookDecided{stop}…]                 only when the run would end (stop = end)
//!   TurnEnded{stop}                      end | tool_use | length | continue | error | aborted
//!                                        (continue: recovery, steering, a structured
//!                                        output repair turn, a stop hook, or a context
//!                                        overflow, then with `error` set: compaction and
//!                                        one retry follow)
//!   [TurnRecovery]                       after a `continue` caused by a missing answer
//!   for each call, in call order:
//!     [HookDecided{before_tool}…]        deny / ask / rewrite / halt / failed
//!     [PermissionRequested] [PermissionDecided]
//!     [ToolExecutionStarted ToolProgress* [PlanUpdated]]
//!                                        a call that runs a sub-agent (a `Task` call, an
//!                                        `Agent::as_tool` tool) adds, amid its progress:
//!                                        SubagentStarted Subagent* SubagentFinished
//!                                        (background: SubagentStarted only)
//!     [ToolBlocked]                      the sandbox refused something the call did
//!     [HookDecided{after_tool}…]         only when the tool ran
//!     ToolResult
//! [Error]
//! [SubagentFinished…]                    background sub-agents still running, stopped
//! RunFinished{status}
//! ```
//!
//! Read-only calls of one step may run in parallel, but their events are still emitted in
//! call order; as with a permission denial, a call's `before_tool` decisions are reported
//! when the call is checked, which for such a batch is before the earlier calls'
//! execution events (match them by `call_id`). A `stop` hook that makes the model go on
//! reports `HookDecided{stop, continue}` before `TurnEnded{continue}`; the next step
//! follows. A hook that halts the run refuses the step's remaining calls and the run
//! ends after the step with `RunFinished{success}`. See [`crate::hooks`] for what each hook
//! decision does.
//!
//! A compaction run ([`crate::Agent::compact`]) emits `RunStarted`,
//! `CompactionStarted{manual}`, `[HookDecided{pre_compact}…]`, `RequestStarted`, provider
//! events, `AssistantStarted`, `TextDelta`s of the summary, `Usage`, then
//! `CompactionFinished` and `ContextUsage` (or `Error`) and `RunFinished`; a transcript too
//! short to compact gets `Error` right after `RunStarted`.
//!
//! A compaction inside a prompt run (automatic at the threshold, or after a context
//! overflow) streams nothing: its summary is not assistant output. After
//! `CompactionStarted` and the `pre_compact` hook's decisions, only the `Usage` of the
//! summary call shows. An automatic compaction that fails is reported as a recoverable
//! `Error{compaction}` and the run goes on; an overflow compaction that fails ends the run
//! (`Error{compaction}`, `RunFinished{error}`), and so does a second overflow of the same
//! call (`TurnEnded{error}`, `Error{provider}`, `RunFinished{error}`).
//!
//! # Sub-agents
//!
//! A tool call may run a child agent ([`crate::subagent`]): the `Task` tool of
//! `agent-specialists`, or a tool made with [`crate::Agent::as_tool`]. The child's own run
//! follows this same grammar (from its `RunStarted` to its `RunFinished`), except that its
//! `user_prompt` and `stop` hook points are `subagent_start` and `subagent_stop`. Each of
//! its events reaches the parent's stream wrapped as [`AgentEvent::Subagent`], which names
//! the child (`task_id`, `name`) and the parent's call that runs it (`call_id`); a
//! grandchild's events are wrapped twice. Inside the running call they read:
//!
//! ```text
//! ToolExecutionStarted{Task}
//!   SubagentStarted{task_id}             once the child exists (not when it was refused)
//!   Subagent{task_id, event}*            the child's run, in its own order
//!   SubagentFinished{task_id, status, usage}
//! ToolResult{Task}                       the child's answer, or its failure as an error
//! ```
//!
//! A child that runs in the background (`Task` with `run_in_background`) reports
//! `SubagentStarted{background}` inside the launching call; its `Subagent` events and its
//! `SubagentFinished` come after that call's `ToolResult`, between any two events of the
//! parent, and before the parent's `RunFinished`: when the parent's run ends (or is
//! aborted) its background children still running are stopped and report
//! `SubagentFinished{aborted}` first.
//!
//! Usage: every model call of a child is a wrapped `Usage` event whose `cumulative` is the
//! child's own total; the same tokens are added to the parent's total, so the parent's next
//! `Usage{cumulative}` (and [`crate::Agent::state`]) includes its children, and
//! `SubagentFinished.usage` is the child's total (its own children included).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::hooks::{HookEvent, HookOutcome, HookReport};
use crate::message::{ContentBlock, Message};
use crate::permission::rules::DecidingRule;
use crate::permission::{Block, PermissionAction, PermissionMode, Risk};
pub use crate::run_status::RunStatus;
use crate::sandbox::report::SandboxReport;
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

/// Why the transcript is being compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionReason {
    /// The context crossed the auto-compact threshold after a model call.
    Auto,
    /// The host asked for it ([`crate::Agent::compact`]).
    Manual,
    /// The provider said the prompt did not fit the context window; the call is retried
    /// once after the compaction.
    Overflow,
}

impl CompactionReason {
    /// The lower-case name (`auto`, `manual`, `overflow`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Manual => "manual",
            Self::Overflow => "overflow",
        }
    }
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
    /// The spend cap ([`crate::AgentBuilder::max_budget_usd`]) was reached, or cannot be
    /// enforced because a model has no prices: the run ends before its next model call.
    BudgetExceeded,
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
    /// The permission rule that decided the call ([`crate::permission::rules`]), or the
    /// session's "always allow" answer that let it run; absent when the mode decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<DecidingRule>,
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
    /// A model call failed (the model overloaded, rate-limited after its retries, or a
    /// server error) before it produced anything, and is made once more with the fallback
    /// model ([`crate::AgentBuilder::fallback_model`]); its `RequestStarted` follows.
    ModelFallback {
        /// The model that failed.
        from: String,
        /// The fallback model the call is made with.
        to: String,
        /// The failure, in the provider's words.
        reason: String,
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
    /// How full the model's context window is: after every model call that completed, and
    /// after a compaction. `used` is the provider's reported input + output tokens of the
    /// call when it reports usage, else an estimate from the transcript
    /// ([`crate::context::estimate_request_tokens`]).
    ContextUsage {
        /// Tokens in the context.
        used: u64,
        /// The model's context window in tokens.
        window: u64,
        /// `used` as a percentage of `window`, to one decimal (may exceed 100).
        percent: f64,
    },
    /// A compaction of the transcript begins.
    CompactionStarted {
        /// Why.
        reason: CompactionReason,
    },
    /// Compaction replaced the transcript with a summary.
    CompactionFinished {
        /// The summary text (without the pinned notes the compacted transcript carries).
        summary: String,
        /// Context tokens before the compaction (as the last `ContextUsage` counted them).
        #[serde(default)]
        before: u64,
        /// Context tokens after it (estimated: no model call has seen the new transcript).
        #[serde(default)]
        after: u64,
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
    /// A sub-agent (a child agent run by a tool call: `Task`, or [`crate::Agent::as_tool`])
    /// started; see [Sub-agents](crate::event#sub-agents) for where its events go.
    SubagentStarted {
        /// The child's id; also its session id when it records to the parent's store.
        task_id: String,
        /// The sub-agent's name (the specialist, or the `as_tool` tool name).
        name: String,
        /// The parent's tool call that started it.
        call_id: String,
        /// The caller's short label for the task.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// The model the child calls.
        model: String,
        /// The child runs in the background: the launching call returned at once.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        background: bool,
        /// The parent's session id, when the child records its transcript to the parent's
        /// session store (under `task_id`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_session_id: Option<String>,
        /// How deep the child is nested: 1 for a child of a top-level agent.
        depth: u32,
    },
    /// One event of a running sub-agent, wrapped with its origin.
    Subagent {
        /// The child's id (as in [`AgentEvent::SubagentStarted`]).
        task_id: String,
        /// The sub-agent's name.
        name: String,
        /// The parent's tool call that started it.
        call_id: String,
        /// The child's event.
        event: Box<AgentEvent>,
    },
    /// A sub-agent's run ended.
    SubagentFinished {
        /// The child's id.
        task_id: String,
        /// The sub-agent's name.
        name: String,
        /// The parent's tool call that started it.
        call_id: String,
        /// How its run ended.
        status: RunStatus,
        /// Its final answer, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        final_text: Option<String>,
        /// What ended it, when `status` is `error`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Token usage and cost of the child (with its own children's); already part of
        /// the parent's cumulative usage.
        usage: Usage,
        /// Wall time of the child's run in milliseconds.
        duration_ms: u64,
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

    /// The event itself, or for a [`AgentEvent::Subagent`] the innermost wrapped event
    /// (a grandchild's events are wrapped twice).
    pub fn innermost(&self) -> &AgentEvent {
        let mut event = self;
        while let Self::Subagent { event: inner, .. } = event {
            event = inner;
        }
        event
    }
}

// The hook report's event lives here, beside the event, so hooks need not know events.
impl HookReport {
    /// The report as an event.
    pub fn into_event(self) -> AgentEvent {
        AgentEvent::HookDecided {
            hook: self.hook,
            event: self.event,
            outcome: self.outcome,
            reason: self.reason,
            call_id: self.call_id,
        }
    }
}
