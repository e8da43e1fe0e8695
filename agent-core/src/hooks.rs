//! Lifecycle hooks: typed callbacks the agent consults at fixed points of a run.
//!
//! A [`Hooks`] implementation sees a tool call before the permission gate
//! ([`Hooks::before_tool`]) and its result before the model does ([`Hooks::after_tool`]),
//! the user's prompt before it enters the transcript ([`Hooks::user_prompt`]), and the
//! model's final answer before the run ends ([`Hooks::stop`]). Session and compaction
//! hooks are advisory. Every method has a default that changes nothing, so a hook
//! implements only what it needs. Command hooks (Zero's `hooks.json`, Claude Code
//! settings) live in the `agent-hooks` crate and implement this same trait.
//!
//! # Where each hook runs
//!
//! - `before_tool`: after the call is known to name a tool and carry valid JSON arguments,
//!   before the tool's risk assessment and the permission gate, in every permission mode
//!   (plan mode included). [`ToolDecision::Deny`] makes the call's error result (the
//!   reason scrubbed of known secrets) and the model continues; [`ToolDecision::Ask`]
//!   turns a call the gate would allow into a permission prompt (it never loosens a
//!   denial); [`ToolDecision::Rewrite`] replaces the arguments, so the assessment, the gate
//!   and the tool all see the new ones; [`ToolDecision::Halt`] refuses the call, refuses
//!   the step's remaining calls, and ends the run (status `success`) after the step.
//! - `after_tool`: after a tool ran (successfully or not), before its result is reported
//!   and recorded. Not called for calls that did not run (refused, unknown, aborted).
//! - `user_prompt`: before the prompt is added to the transcript. A block ends the run
//!   (status `success`, no model call, nothing added to the transcript); context is added
//!   as synthetic user messages right after the prompt.
//! - `stop`: when the model answered and the run would end. A continuation adds the
//!   reason as a synthetic user message and calls the model again; at most
//!   [`DEFAULT_MAX_STOP_CONTINUATIONS`] times per run unless
//!   [`crate::AgentBuilder::max_stop_continuations`] says otherwise. Beyond the limit the
//!   request is reported as [`HookOutcome::Overruled`] and the run ends.
//! - `session_start` / `session_end`: when the host calls [`crate::Agent::session_start`]
//!   and [`crate::Agent::session_end`]. Context from `session_start` is queued like
//!   steering text and lands before the next model call.
//! - `pre_compact`: at the start of [`crate::Agent::compact`].
//! - `subagent_start` / `subagent_stop`: a sub-agent's run ([`crate::subagent`]) has
//!   these in place of `user_prompt` and `stop`, with [`HookContext::subagent`] naming the
//!   child. A child inherits its parent's hooks, so the same hooks see the child's tool
//!   calls (`before_tool` / `after_tool`, with the child's call ids). `subagent_start` runs
//!   when the child's run begins, before its prompt's first model call; context it adds is
//!   added after the prompt, as `user_prompt` context is. `subagent_stop` runs when the
//!   child answered and would end; a continuation makes the child go on, counted against
//!   the same per-run limit as `stop`. Their decisions are reported in the child's run,
//!   which the parent's stream carries wrapped.
//!
//! # Several hooks
//!
//! An agent holds a list of hooks ([`HookList`]); they are consulted one after another,
//! in the order they were added, each seeing what the earlier ones decided:
//!
//! - `before_tool`: the first [`ToolDecision::Deny`] (or [`ToolDecision::Halt`]) wins and
//!   the later hooks are not asked. Rewrites chain (each later hook sees the rewritten
//!   arguments). An `Ask` from any hook stands even if a later one allows.
//! - `after_tool`: every hook runs on the result as the earlier ones left it; appends
//!   accumulate and a replacement replaces what there was. A `Halt` stops the chain.
//! - `user_prompt`: the first block wins; context from every hook before it is kept.
//! - `stop` and `subagent_stop`: the first `Continue` wins.
//! - `session_start` and `subagent_start`: every hook runs; context accumulates.
//!   `session_end` and `pre_compact`: every hook runs.
//!
//! # Reporting
//!
//! Every decision that changes something (everything but `Allow`, `Keep` and `Accept`) is
//! reported as an [`crate::AgentEvent::HookDecided`] carrying the hook's
//! [`Hooks::name`]. A hook that stands for several (a command-hook file) may report under
//! its own names with [`HookContext::report`], which is also how it reports a failure of
//! its own (a command that could not start) as [`HookOutcome::Failed`].
//!
//! An agent without hooks pays nothing: every call site checks an empty list first.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::emit::Emitter;
use crate::event::{AgentEvent, RunStatus};
use crate::inner::Inner;
use crate::message::{ContentBlock, Message, ToolCall};
use crate::permission::{PermissionAction, PermissionMode, Verdict};
use crate::sandbox::SandboxContext;
use crate::secrets::scrub_known_values;
use crate::subagent::SubagentInfo;
use crate::tool::ToolOutput;

/// Default number of times per run a [`Hooks::stop`] hook may make the model go on.
pub const DEFAULT_MAX_STOP_CONTINUATIONS: u32 = 1;

/// The lifecycle point a hook ran at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookEvent {
    /// Before a tool call, ahead of the permission gate.
    BeforeTool,
    /// After a tool ran, before the model sees its result.
    AfterTool,
    /// Before a prompt enters the transcript.
    UserPrompt,
    /// When the model answered and the run would end.
    Stop,
    /// When the host starts (or resumes) a session.
    SessionStart,
    /// When the host ends a session.
    SessionEnd,
    /// Before a compaction.
    PreCompact,
    /// When a sub-agent's run begins (in place of `user_prompt`).
    SubagentStart,
    /// When a sub-agent answered and its run would end (in place of `stop`).
    SubagentStop,
}

impl HookEvent {
    /// The canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BeforeTool => "before_tool",
            Self::AfterTool => "after_tool",
            Self::UserPrompt => "user_prompt",
            Self::Stop => "stop",
            Self::SessionStart => "session_start",
            Self::SessionEnd => "session_end",
            Self::PreCompact => "pre_compact",
            Self::SubagentStart => "subagent_start",
            Self::SubagentStop => "subagent_stop",
        }
    }
}

/// What a reported hook decision did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookOutcome {
    /// A tool call was refused ([`ToolDecision::Deny`]).
    Deny,
    /// A tool call must be approved ([`ToolDecision::Ask`]).
    Ask,
    /// A tool call's arguments were replaced ([`ToolDecision::Rewrite`]).
    Rewrite,
    /// The run ends after this step ([`ToolDecision::Halt`], [`ResultDecision::Halt`]).
    Halt,
    /// Text was added to a tool result ([`ResultDecision::Append`]).
    Append,
    /// A tool result was replaced ([`ResultDecision::Replace`]).
    Replace,
    /// A prompt was refused ([`PromptDecision::Block`]).
    Block,
    /// Context was added for the model ([`PromptDecision::AddContext`],
    /// [`StartDecision::AddContext`]).
    AddContext,
    /// The model was made to go on ([`StopDecision::Continue`]).
    Continue,
    /// A hook asked for something the agent did not do (a stop continuation beyond the
    /// per-run limit).
    Overruled,
    /// A hook failed (could not start, timed out, answered nonsense); what it did about
    /// it is reported separately, if anything.
    Failed,
}

impl HookOutcome {
    /// The canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Deny => "deny",
            Self::Ask => "ask",
            Self::Rewrite => "rewrite",
            Self::Halt => "halt",
            Self::Append => "append",
            Self::Replace => "replace",
            Self::Block => "block",
            Self::AddContext => "add_context",
            Self::Continue => "continue",
            Self::Overruled => "overruled",
            Self::Failed => "failed",
        }
    }
}

/// One reported hook decision; the payload of [`AgentEvent::HookDecided`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookReport {
    /// The hook that decided ([`Hooks::name`], or the name given to [`HookContext::report`]).
    pub hook: String,
    /// Where it ran.
    pub event: HookEvent,
    /// What it decided.
    pub outcome: HookOutcome,
    /// Why, scrubbed of known secrets.
    pub reason: Option<String>,
    /// The tool call, for tool events.
    pub call_id: Option<String>,
}

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

/// [`Hooks::before_tool`]'s answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum ToolDecision {
    /// No objection: the permission gate decides as usual.
    #[default]
    Allow,
    /// Refuse the call; `reason` becomes its error result and the model goes on.
    Deny {
        /// Why, shown to the model.
        reason: String,
    },
    /// Put the call to the approver even if the gate would allow it.
    Ask {
        /// Why, shown with the prompt.
        reason: Option<String>,
        /// Replacement arguments, as with [`ToolDecision::Rewrite`].
        args: Option<Value>,
    },
    /// Replace the arguments; the gate and the tool see the new ones.
    Rewrite {
        /// The new arguments.
        args: Value,
    },
    /// Refuse the call and end the run after this step.
    Halt {
        /// Why.
        reason: String,
    },
}

/// [`Hooks::after_tool`]'s answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum ResultDecision {
    /// Leave the result as it is.
    #[default]
    Keep,
    /// Add text to the result (after a blank line, or as its only text).
    Append {
        /// The text.
        text: String,
    },
    /// Replace the whole result.
    Replace {
        /// The new result.
        result: ToolOutput,
    },
    /// Keep the result and end the run after this step.
    Halt {
        /// Why.
        reason: String,
    },
}

/// [`Hooks::user_prompt`]'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum PromptDecision {
    /// Go on.
    #[default]
    Keep,
    /// Refuse the prompt: it is not added and the model is not called.
    Block {
        /// Why, for the user.
        reason: String,
    },
    /// Go on, adding context for the model after the prompt.
    AddContext {
        /// The context.
        text: String,
    },
}

/// [`Hooks::stop`]'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum StopDecision {
    /// Let the run end.
    #[default]
    Accept,
    /// Make the model go on; `reason` is its next instruction.
    Continue {
        /// What is left to do.
        reason: String,
    },
}

/// [`Hooks::session_start`]'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum StartDecision {
    /// Nothing to add.
    #[default]
    Keep,
    /// Context for the model, added before its next call.
    AddContext {
        /// The context.
        text: String,
    },
}

/// What the model's final answer looked like, for [`Hooks::stop`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopRequest {
    /// The final answer text, if the model gave one.
    pub final_text: Option<String>,
    /// How many times a stop hook already made the model go on in this run.
    pub continuations: u32,
}

impl StopRequest {
    /// True when this run already continued because of a stop hook (Claude Code's
    /// `stop_hook_active`).
    pub fn active(&self) -> bool {
        self.continuations > 0
    }
}

/// Why a session starts, for [`Hooks::session_start`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionSource {
    /// A new session.
    Startup,
    /// A session loaded from a store.
    Resume,
    /// The transcript was cleared.
    Clear,
    /// The transcript was compacted.
    Compact,
}

/// Why a session ends, for [`Hooks::session_end`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionEndReason {
    /// The transcript was cleared.
    Clear,
    /// The host's input ended (stdin closed, the last prompt of a headless run).
    Exit,
    /// Anything else.
    Other,
}

/// How a session ended, for [`Hooks::session_end`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionEnd {
    /// Why.
    pub reason: SessionEndReason,
    /// How the last run ended, if the host knows.
    pub last_status: Option<RunStatus>,
    /// Model calls of the last run, if the host knows.
    pub turns: Option<u32>,
    /// The error that ended the session, if any.
    pub error: Option<String>,
}

impl SessionEnd {
    /// A session end for `reason` with nothing else known.
    pub fn new(reason: SessionEndReason) -> Self {
        Self {
            reason,
            last_status: None,
            turns: None,
            error: None,
        }
    }
}

/// What started a compaction, for [`Hooks::pre_compact`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactTrigger {
    /// The host asked for it.
    Manual,
    /// The agent decided on its own.
    Auto,
}

/// What every hook call gets besides its arguments: where the agent stands, and a place
/// to report decisions under names of its own.
#[derive(Debug)]
pub struct HookContext {
    /// The agent's session id, if it records to a session.
    pub session_id: Option<String>,
    /// The workspace directory.
    pub cwd: PathBuf,
    /// The active permission mode.
    pub mode: PermissionMode,
    /// Provider id.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// The lifecycle point.
    pub event: HookEvent,
    /// The tool call, for tool events.
    pub call_id: Option<String>,
    /// When the agent is a sub-agent: which one, and where it was started from.
    pub subagent: Option<SubagentInfo>,
    /// The OS sandbox in force for the agent's commands (policy and kernel view), which
    /// command hooks run under as well; off in a context made with [`HookContext::new`].
    pub sandbox: SandboxContext,
    reports: Mutex<Vec<HookReport>>,
}

impl HookContext {
    /// A context for calling hooks outside an agent (tests, hosts).
    pub fn new(event: HookEvent, cwd: impl Into<PathBuf>) -> Self {
        Self {
            session_id: None,
            cwd: cwd.into(),
            mode: PermissionMode::default(),
            provider: String::new(),
            model: String::new(),
            event,
            call_id: None,
            subagent: None,
            sandbox: SandboxContext::default(),
            reports: Mutex::new(Vec::new()),
        }
    }

    /// The same context with `sandbox` for command hooks.
    #[must_use = "returns the changed value"]
    pub fn with_sandbox(mut self, sandbox: SandboxContext) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// The same context for a sub-agent.
    #[must_use = "returns the changed value"]
    pub fn with_subagent(mut self, subagent: SubagentInfo) -> Self {
        self.subagent = Some(subagent);
        self
    }

    /// The same context with no reports, for asking one member of a list.
    fn fork(&self) -> Self {
        Self {
            session_id: self.session_id.clone(),
            cwd: self.cwd.clone(),
            mode: self.mode,
            provider: self.provider.clone(),
            model: self.model.clone(),
            event: self.event,
            call_id: self.call_id.clone(),
            subagent: self.subagent.clone(),
            sandbox: self.sandbox.clone(),
            reports: Mutex::new(Vec::new()),
        }
    }

    /// Reports a decision (or a failure) under `hook`'s name. The reason is scrubbed of
    /// known secrets. A hook that reports any decision itself (any outcome but
    /// [`HookOutcome::Failed`]) is taken to have reported its answer: the agent does not
    /// report it a second time under [`Hooks::name`].
    pub fn report(&self, hook: impl Into<String>, outcome: HookOutcome, reason: Option<String>) {
        let report = HookReport {
            hook: hook.into(),
            event: self.event,
            outcome,
            reason: reason.map(|r| scrub(&r)),
            call_id: self.call_id.clone(),
        };
        self.lock().push(report);
    }

    /// Takes the reports made so far.
    pub fn take_reports(&self) -> Vec<HookReport> {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<HookReport>> {
        self.reports.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `member`'s reports to this context, plus one for its `answer` unless it
    /// reported a decision itself.
    fn absorb(
        &self,
        member: &dyn Hooks,
        sub: HookContext,
        answer: Option<(HookOutcome, Option<String>)>,
    ) {
        let mut own = sub.take_reports();
        if let Some((outcome, reason)) = answer {
            // A hook that reported a decision of its own (a list, a command-hook file)
            // stands by its reports.
            if !own.iter().any(|r| r.outcome != HookOutcome::Failed) {
                own.push(HookReport {
                    hook: member.name().to_string(),
                    event: self.event,
                    outcome,
                    reason: reason.map(|r| scrub(&r)),
                    call_id: self.call_id.clone(),
                });
            }
        }
        self.lock().extend(own);
    }
}

fn scrub(text: &str) -> String {
    scrub_known_values(text).into_owned()
}

/// Typed lifecycle hooks. Every method is optional: the defaults change nothing.
///
/// ```
/// use agent_core::{async_trait, hooks::{HookContext, Hooks, ToolDecision}, message::ToolCall};
///
/// /// Refuses every shell command that mentions `rm -rf`.
/// struct NoRmRf;
///
/// #[async_trait]
/// impl Hooks for NoRmRf {
///     fn name(&self) -> &str { "no-rm-rf" }
///     async fn before_tool(&self, _ctx: &HookContext, call: &ToolCall) -> ToolDecision {
///         match call.args["command"].as_str() {
///             Some(command) if call.name == "bash" && command.contains("rm -rf") => {
///                 ToolDecision::Deny { reason: "rm -rf is not allowed here".into() }
///             }
///             _ => ToolDecision::Allow,
///         }
///     }
/// }
/// # let _ = NoRmRf;
/// ```
///
/// Install it with [`crate::AgentBuilder::hook`] (or [`crate::Agent::set_hooks`]).
#[async_trait]
pub trait Hooks: Send + Sync + 'static {
    /// The name decisions are reported under.
    fn name(&self) -> &str {
        "hooks"
    }

    /// Before a tool call, ahead of the permission gate (in every mode).
    async fn before_tool(&self, ctx: &HookContext, call: &ToolCall) -> ToolDecision {
        let _ = (ctx, call);
        ToolDecision::Allow
    }

    /// After a tool ran, before its result is reported and recorded.
    async fn after_tool(
        &self,
        ctx: &HookContext,
        call: &ToolCall,
        result: &ToolOutput,
    ) -> ResultDecision {
        let _ = (ctx, call, result);
        ResultDecision::Keep
    }

    /// Before a prompt enters the transcript; `prompt` is its text.
    async fn user_prompt(&self, ctx: &HookContext, prompt: &str) -> PromptDecision {
        let _ = (ctx, prompt);
        PromptDecision::Keep
    }

    /// When the model answered and the run would end.
    async fn stop(&self, ctx: &HookContext, stop: &StopRequest) -> StopDecision {
        let _ = (ctx, stop);
        StopDecision::Accept
    }

    /// When the host starts or resumes a session ([`crate::Agent::session_start`]).
    async fn session_start(&self, ctx: &HookContext, source: SessionSource) -> StartDecision {
        let _ = (ctx, source);
        StartDecision::Keep
    }

    /// When the host ends a session ([`crate::Agent::session_end`]). Advisory.
    async fn session_end(&self, ctx: &HookContext, end: &SessionEnd) {
        let _ = (ctx, end);
    }

    /// Before a compaction. Advisory.
    async fn pre_compact(&self, ctx: &HookContext, trigger: CompactTrigger) {
        let _ = (ctx, trigger);
    }

    /// When a sub-agent's run begins, before its first model call ([`HookContext::subagent`]
    /// names it); `prompt` is the child's prompt text. Runs in place of
    /// [`Hooks::user_prompt`] for a sub-agent; its context is added after the prompt.
    async fn subagent_start(&self, ctx: &HookContext, prompt: &str) -> StartDecision {
        let _ = (ctx, prompt);
        StartDecision::Keep
    }

    /// When a sub-agent answered and its run would end; runs in place of [`Hooks::stop`]
    /// for a sub-agent. A continuation makes the child go on.
    async fn subagent_stop(&self, ctx: &HookContext, stop: &StopRequest) -> StopDecision {
        let _ = (ctx, stop);
        StopDecision::Accept
    }
}

/// Several hooks consulted in order, composed as the [module docs](self) describe.
#[derive(Clone, Default)]
pub struct HookList {
    members: Vec<Arc<dyn Hooks>>,
}

impl std::fmt::Debug for HookList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.members.iter().map(|m| m.name()).collect();
        f.debug_struct("HookList").field("members", &names).finish()
    }
}

impl HookList {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a hook at the end.
    pub fn push(&mut self, hooks: Arc<dyn Hooks>) {
        self.members.push(hooks);
    }

    /// True when there are no hooks.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Number of hooks.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// The hooks, in order.
    pub fn members(&self) -> &[Arc<dyn Hooks>] {
        &self.members
    }
}

impl FromIterator<Arc<dyn Hooks>> for HookList {
    fn from_iter<I: IntoIterator<Item = Arc<dyn Hooks>>>(iter: I) -> Self {
        Self {
            members: iter.into_iter().collect(),
        }
    }
}

/// Appends `text` to a tool result: to its last text block after a blank line, or as a
/// new text block.
pub fn append_to_output(output: &mut ToolOutput, text: &str) {
    if text.trim().is_empty() {
        return;
    }
    match output.content.iter_mut().rev().find_map(|b| match b {
        ContentBlock::Text { text } => Some(text),
        _ => None,
    }) {
        Some(last) if !last.trim().is_empty() => {
            last.push_str("\n\n");
            last.push_str(text);
        }
        Some(last) => *last = text.to_string(),
        None => output.content.push(ContentBlock::text(text)),
    }
}

#[async_trait]
impl Hooks for HookList {
    async fn before_tool(&self, ctx: &HookContext, call: &ToolCall) -> ToolDecision {
        let mut current = call.clone();
        let mut rewritten = false;
        let mut ask: Option<Option<String>> = None;
        for member in &self.members {
            let sub = ctx.fork();
            let decision = member.before_tool(&sub, &current).await;
            let answer = match &decision {
                ToolDecision::Allow => None,
                ToolDecision::Deny { reason } => Some((HookOutcome::Deny, Some(reason.clone()))),
                ToolDecision::Ask { reason, .. } => Some((HookOutcome::Ask, reason.clone())),
                ToolDecision::Rewrite { .. } => Some((HookOutcome::Rewrite, None)),
                ToolDecision::Halt { reason } => Some((HookOutcome::Halt, Some(reason.clone()))),
            };
            ctx.absorb(member.as_ref(), sub, answer);
            match decision {
                ToolDecision::Allow => {}
                ToolDecision::Deny { .. } | ToolDecision::Halt { .. } => return decision,
                ToolDecision::Rewrite { args } => {
                    current.args = args;
                    rewritten = true;
                }
                ToolDecision::Ask { reason, args } => {
                    if let Some(args) = args {
                        current.args = args;
                        rewritten = true;
                    }
                    if ask.is_none() {
                        ask = Some(reason);
                    }
                }
            }
        }
        let args = rewritten.then_some(current.args);
        match (ask, args) {
            (Some(reason), args) => ToolDecision::Ask { reason, args },
            (None, Some(args)) => ToolDecision::Rewrite { args },
            (None, None) => ToolDecision::Allow,
        }
    }

    async fn after_tool(
        &self,
        ctx: &HookContext,
        call: &ToolCall,
        result: &ToolOutput,
    ) -> ResultDecision {
        let mut current: Option<ToolOutput> = None;
        for member in &self.members {
            let sub = ctx.fork();
            let decision = member
                .after_tool(&sub, call, current.as_ref().unwrap_or(result))
                .await;
            let answer = match &decision {
                ResultDecision::Keep => None,
                ResultDecision::Append { text } => Some((HookOutcome::Append, Some(text.clone()))),
                ResultDecision::Replace { .. } => Some((HookOutcome::Replace, None)),
                ResultDecision::Halt { reason } => Some((HookOutcome::Halt, Some(reason.clone()))),
            };
            ctx.absorb(member.as_ref(), sub, answer);
            match decision {
                ResultDecision::Keep => {}
                ResultDecision::Append { text } => {
                    let output = current.get_or_insert_with(|| result.clone());
                    append_to_output(output, &text);
                }
                ResultDecision::Replace { result } => current = Some(result),
                ResultDecision::Halt { reason } => {
                    // The halt is in the reports (the loop looks there); what earlier
                    // hooks changed is kept.
                    return match current {
                        Some(result) => ResultDecision::Replace { result },
                        None => ResultDecision::Halt { reason },
                    };
                }
            }
        }
        match current {
            Some(result) => ResultDecision::Replace { result },
            None => ResultDecision::Keep,
        }
    }

    async fn user_prompt(&self, ctx: &HookContext, prompt: &str) -> PromptDecision {
        let mut context = Vec::new();
        for member in &self.members {
            let sub = ctx.fork();
            let decision = member.user_prompt(&sub, prompt).await;
            let answer = match &decision {
                PromptDecision::Keep => None,
                PromptDecision::Block { reason } => {
                    Some((HookOutcome::Block, Some(reason.clone())))
                }
                PromptDecision::AddContext { text } => {
                    Some((HookOutcome::AddContext, Some(text.clone())))
                }
            };
            ctx.absorb(member.as_ref(), sub, answer);
            match decision {
                PromptDecision::Keep => {}
                PromptDecision::Block { .. } => return decision,
                PromptDecision::AddContext { text } => context.push(text),
            }
        }
        join_context(context).map_or(PromptDecision::Keep, |text| PromptDecision::AddContext {
            text,
        })
    }

    async fn stop(&self, ctx: &HookContext, stop: &StopRequest) -> StopDecision {
        for member in &self.members {
            let sub = ctx.fork();
            let decision = member.stop(&sub, stop).await;
            let answer = stop_answer(&decision);
            ctx.absorb(member.as_ref(), sub, answer);
            if let StopDecision::Continue { .. } = decision {
                return decision;
            }
        }
        StopDecision::Accept
    }

    async fn subagent_start(&self, ctx: &HookContext, prompt: &str) -> StartDecision {
        let mut context = Vec::new();
        for member in &self.members {
            let sub = ctx.fork();
            let decision = member.subagent_start(&sub, prompt).await;
            let answer = match &decision {
                StartDecision::Keep => None,
                StartDecision::AddContext { text } => {
                    Some((HookOutcome::AddContext, Some(text.clone())))
                }
            };
            ctx.absorb(member.as_ref(), sub, answer);
            if let StartDecision::AddContext { text } = decision {
                context.push(text);
            }
        }
        join_context(context).map_or(StartDecision::Keep, |text| StartDecision::AddContext {
            text,
        })
    }

    async fn subagent_stop(&self, ctx: &HookContext, stop: &StopRequest) -> StopDecision {
        for member in &self.members {
            let sub = ctx.fork();
            let decision = member.subagent_stop(&sub, stop).await;
            let answer = stop_answer(&decision);
            ctx.absorb(member.as_ref(), sub, answer);
            if let StopDecision::Continue { .. } = decision {
                return decision;
            }
        }
        StopDecision::Accept
    }

    async fn session_start(&self, ctx: &HookContext, source: SessionSource) -> StartDecision {
        let mut context = Vec::new();
        for member in &self.members {
            let sub = ctx.fork();
            let decision = member.session_start(&sub, source).await;
            let answer = match &decision {
                StartDecision::Keep => None,
                StartDecision::AddContext { text } => {
                    Some((HookOutcome::AddContext, Some(text.clone())))
                }
            };
            ctx.absorb(member.as_ref(), sub, answer);
            if let StartDecision::AddContext { text } = decision {
                context.push(text);
            }
        }
        join_context(context).map_or(StartDecision::Keep, |text| StartDecision::AddContext {
            text,
        })
    }

    async fn session_end(&self, ctx: &HookContext, end: &SessionEnd) {
        for member in &self.members {
            let sub = ctx.fork();
            member.session_end(&sub, end).await;
            ctx.absorb(member.as_ref(), sub, None);
        }
    }

    async fn pre_compact(&self, ctx: &HookContext, trigger: CompactTrigger) {
        for member in &self.members {
            let sub = ctx.fork();
            member.pre_compact(&sub, trigger).await;
            ctx.absorb(member.as_ref(), sub, None);
        }
    }
}

/// What a stop decision reports (`None`: accepted, nothing to report).
fn stop_answer(decision: &StopDecision) -> Option<(HookOutcome, Option<String>)> {
    match decision {
        StopDecision::Accept => None,
        StopDecision::Continue { reason } => Some((HookOutcome::Continue, Some(reason.clone()))),
    }
}

fn join_context(context: Vec<String>) -> Option<String> {
    let parts: Vec<String> = context
        .into_iter()
        .filter(|t| !t.trim().is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// Hook settings collected by the builder.
#[derive(Clone)]
pub(crate) struct HookSetup {
    pub(crate) list: HookList,
    pub(crate) max_continuations: u32,
}

impl Default for HookSetup {
    fn default() -> Self {
        Self {
            list: HookList::new(),
            max_continuations: DEFAULT_MAX_STOP_CONTINUATIONS,
        }
    }
}

/// An agent's hooks and their per-run state.
pub(crate) struct AgentHooks {
    list: RwLock<Option<Arc<HookList>>>,
    max_continuations: AtomicU32,
    /// A hook halted the run in flight; its remaining calls are refused and it ends after
    /// the step.
    halted: AtomicBool,
}

impl AgentHooks {
    pub(crate) fn new(setup: HookSetup) -> Self {
        Self {
            list: RwLock::new((!setup.list.is_empty()).then(|| Arc::new(setup.list))),
            max_continuations: AtomicU32::new(setup.max_continuations),
            halted: AtomicBool::new(false),
        }
    }

    /// The same hooks for a forked agent, with fresh per-run state.
    pub(crate) fn fork(&self) -> Self {
        Self {
            list: RwLock::new(self.active()),
            max_continuations: AtomicU32::new(self.max_continuations.load(Ordering::Relaxed)),
            halted: AtomicBool::new(false),
        }
    }

    /// The hooks, or `None` when there are none.
    pub(crate) fn active(&self) -> Option<Arc<HookList>> {
        self.list.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn set(&self, list: HookList) {
        *self.list.write().unwrap_or_else(|e| e.into_inner()) =
            (!list.is_empty()).then(|| Arc::new(list));
    }

    pub(crate) fn set_max_continuations(&self, n: u32) {
        self.max_continuations.store(n, Ordering::Relaxed);
    }

    /// True (once) when a hook halted the run in flight.
    pub(crate) fn take_halt(&self) -> bool {
        self.halted.swap(false, Ordering::Relaxed)
    }
}

/// A hook context for `inner`'s current state.
pub(crate) fn context(inner: &Inner, event: HookEvent, call_id: Option<String>) -> HookContext {
    let (mode, model) = {
        let state = inner.state();
        (state.mode, state.model.clone())
    };
    HookContext {
        session_id: inner.session.as_ref().map(|(_, id)| id.clone()),
        cwd: inner.cwd.clone(),
        mode,
        provider: inner.provider.id().to_string(),
        model,
        event,
        call_id,
        subagent: inner.subagent.as_deref().cloned(),
        sandbox: inner.sandbox.context(&inner.tools, None),
        reports: Mutex::new(Vec::new()),
    }
}

async fn emit_reports(em: &Emitter, ctx: &HookContext) {
    for report in ctx.take_reports() {
        em.emit(report.into_event()).await;
    }
}

/// Runs `fut` unless the run is aborted first (`None`).
async fn unless_aborted<T>(em: &Emitter, fut: impl std::future::Future<Output = T>) -> Option<T> {
    tokio::select! {
        biased;
        _ = em.cancel.cancelled() => None,
        value = fut => Some(value),
    }
}

/// What the loop does with a call after its `before_tool` hooks.
pub(crate) enum BeforeTool {
    /// Go on to the gate; force a prompt when `ask` is set (with its reason).
    Proceed { ask: Option<Option<String>> },
    /// Refuse the call with this error text.
    Refuse(String),
    /// The run was aborted while a hook ran.
    Aborted,
}

/// Runs the `before_tool` hooks on `call` (rewriting its arguments in place).
pub(crate) async fn before_tool(
    inner: &Inner,
    em: &Emitter,
    hooks: &HookList,
    call: &mut ToolCall,
) -> BeforeTool {
    if inner.hooks.halted.load(Ordering::Relaxed) {
        return BeforeTool::Refuse(format!(
            "Error: {:?} was not run: a hook ended the run",
            call.name
        ));
    }
    let ctx = context(inner, HookEvent::BeforeTool, Some(call.id.clone()));
    let Some(decision) = unless_aborted(em, hooks.before_tool(&ctx, call)).await else {
        return BeforeTool::Aborted;
    };
    let blamed = ctx
        .lock()
        .iter()
        .find(|r| matches!(r.outcome, HookOutcome::Deny | HookOutcome::Halt))
        .map(|r| r.hook.clone())
        .unwrap_or_else(|| "hooks".to_string());
    emit_reports(em, &ctx).await;
    let refuse = |reason: &str| {
        let reason = match reason.trim() {
            "" => "blocked by a hook",
            reason => reason,
        };
        BeforeTool::Refuse(scrub(&format!(
            "Error: {:?} was blocked by hook {blamed:?}: {reason}",
            call.name
        )))
    };
    match decision {
        ToolDecision::Allow => BeforeTool::Proceed { ask: None },
        ToolDecision::Deny { reason } => refuse(&reason),
        ToolDecision::Halt { reason } => {
            inner.hooks.halted.store(true, Ordering::Relaxed);
            refuse(&reason)
        }
        ToolDecision::Rewrite { args } => {
            call.args = args;
            BeforeTool::Proceed { ask: None }
        }
        ToolDecision::Ask { reason, args } => {
            if let Some(args) = args {
                call.args = args;
            }
            BeforeTool::Proceed {
                ask: Some(reason.map(|r| scrub(&r))),
            }
        }
    }
}

/// Turns a verdict that would let a call run into a permission prompt (a hook asked for
/// approval); a denial stays a denial.
pub(crate) fn force_prompt(verdict: &mut Verdict, reason: Option<String>) {
    if verdict.action == PermissionAction::Allow {
        verdict.action = PermissionAction::Prompt;
        verdict.granted = false;
    }
    if verdict.action == PermissionAction::Prompt {
        verdict.reason = Some(reason.unwrap_or_else(|| "a hook asked for approval".to_string()));
    }
}

/// Runs the `after_tool` hooks on a call's output.
pub(crate) async fn after_tool(
    inner: &Inner,
    em: &Emitter,
    call: &ToolCall,
    output: ToolOutput,
) -> ToolOutput {
    let Some(hooks) = inner.hooks.active() else {
        return output;
    };
    if em.cancel.is_cancelled() {
        return output;
    }
    let ctx = context(inner, HookEvent::AfterTool, Some(call.id.clone()));
    let Some(decision) = unless_aborted(em, hooks.after_tool(&ctx, call, &output)).await else {
        return output;
    };
    if ctx.lock().iter().any(|r| r.outcome == HookOutcome::Halt)
        || matches!(decision, ResultDecision::Halt { .. })
    {
        inner.hooks.halted.store(true, Ordering::Relaxed);
    }
    emit_reports(em, &ctx).await;
    match decision {
        ResultDecision::Keep | ResultDecision::Halt { .. } => output,
        ResultDecision::Append { text } => {
            let mut output = output;
            append_to_output(&mut output, &scrub(&text));
            output
        }
        ResultDecision::Replace { mut result } => {
            for block in &mut result.content {
                if let ContentBlock::Text { text } = block {
                    *text = scrub(text);
                }
            }
            // What the tool changed on disk stays true whatever the hook says.
            if result.changed_files.is_empty() {
                result.changed_files = output.changed_files;
            }
            if result.plan.is_none() {
                result.plan = output.plan;
            }
            // So does what the sandbox refused.
            if result.block.is_none() {
                result.block = output.block;
            }
            result
        }
    }
}

/// What the loop does with a prompt after its `user_prompt` hooks.
pub(crate) enum UserPrompt {
    /// Go on, adding this context after the prompt.
    Proceed(Option<String>),
    /// The prompt was refused (or the run aborted).
    Stop,
}

/// Starts a run's hook state and runs the `user_prompt` hooks on its prompt's text.
pub(crate) async fn user_prompt(inner: &Inner, em: &Emitter, prompt: &Message) -> UserPrompt {
    inner.hooks.halted.store(false, Ordering::Relaxed);
    let Some(hooks) = inner.hooks.active() else {
        return UserPrompt::Proceed(None);
    };
    let text = prompt.text();
    if inner.subagent.is_some() {
        let ctx = context(inner, HookEvent::SubagentStart, None);
        let Some(decision) = unless_aborted(em, hooks.subagent_start(&ctx, &text)).await else {
            return UserPrompt::Stop;
        };
        emit_reports(em, &ctx).await;
        return match decision {
            StartDecision::Keep => UserPrompt::Proceed(None),
            StartDecision::AddContext { text } => UserPrompt::Proceed(Some(scrub(&text))),
        };
    }
    let ctx = context(inner, HookEvent::UserPrompt, None);
    let Some(decision) = unless_aborted(em, hooks.user_prompt(&ctx, &text)).await else {
        return UserPrompt::Stop;
    };
    emit_reports(em, &ctx).await;
    match decision {
        PromptDecision::Keep => UserPrompt::Proceed(None),
        PromptDecision::Block { .. } => UserPrompt::Stop,
        PromptDecision::AddContext { text } => UserPrompt::Proceed(Some(scrub(&text))),
    }
}

/// Runs the `stop` hooks; returns the instruction to continue with, if the model must go
/// on (counting it against the run's limit).
pub(crate) async fn stop(
    inner: &Inner,
    em: &Emitter,
    final_text: Option<&str>,
    continuations: &mut u32,
) -> Option<String> {
    let hooks = inner.hooks.active()?;
    let request = StopRequest {
        final_text: final_text.map(str::to_string),
        continuations: *continuations,
    };
    let (ctx, decision) = match inner.subagent.is_some() {
        true => {
            let ctx = context(inner, HookEvent::SubagentStop, None);
            let decision = unless_aborted(em, hooks.subagent_stop(&ctx, &request)).await?;
            (ctx, decision)
        }
        false => {
            let ctx = context(inner, HookEvent::Stop, None);
            let decision = unless_aborted(em, hooks.stop(&ctx, &request)).await?;
            (ctx, decision)
        }
    };
    let StopDecision::Continue { reason } = decision else {
        emit_reports(em, &ctx).await;
        return None;
    };
    let max = inner.hooks.max_continuations.load(Ordering::Relaxed);
    if *continuations >= max {
        let mut reports = ctx.take_reports();
        for report in &mut reports {
            if report.outcome == HookOutcome::Continue {
                report.outcome = HookOutcome::Overruled;
                let asked = report.reason.take().unwrap_or_default();
                report.reason = Some(format!(
                    "{asked} (not continued: the limit of {max} forced continuation(s) per run was reached)"
                ));
            }
        }
        for report in reports {
            em.emit(report.into_event()).await;
        }
        return None;
    }
    emit_reports(em, &ctx).await;
    *continuations += 1;
    let reason = match reason.trim() {
        "" => "A stop hook asked you to continue.".to_string(),
        reason => scrub(reason),
    };
    Some(reason)
}

/// Runs the `pre_compact` hooks.
pub(crate) async fn pre_compact(inner: &Inner, em: &Emitter, trigger: CompactTrigger) {
    let Some(hooks) = inner.hooks.active() else {
        return;
    };
    let ctx = context(inner, HookEvent::PreCompact, None);
    if unless_aborted(em, hooks.pre_compact(&ctx, trigger))
        .await
        .is_some()
    {
        emit_reports(em, &ctx).await;
    }
}

/// Runs the `session_start` hooks; returns their reports and the context they added.
pub(crate) async fn session_start(
    inner: &Inner,
    source: SessionSource,
) -> (Vec<HookReport>, Option<String>) {
    let Some(hooks) = inner.hooks.active() else {
        return (Vec::new(), None);
    };
    let ctx = context(inner, HookEvent::SessionStart, None);
    let decision = hooks.session_start(&ctx, source).await;
    let context = match decision {
        StartDecision::Keep => None,
        StartDecision::AddContext { text } => Some(scrub(&text)),
    };
    (ctx.take_reports(), context)
}

/// Runs the `session_end` hooks; returns their reports.
pub(crate) async fn session_end(inner: &Inner, end: &SessionEnd) -> Vec<HookReport> {
    let Some(hooks) = inner.hooks.active() else {
        return Vec::new();
    };
    let ctx = context(inner, HookEvent::SessionEnd, None);
    hooks.session_end(&ctx, end).await;
    ctx.take_reports()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(&'static str, ToolDecision);

    #[async_trait]
    impl Hooks for Fixed {
        fn name(&self) -> &str {
            self.0
        }
        async fn before_tool(&self, _ctx: &HookContext, call: &ToolCall) -> ToolDecision {
            match &self.1 {
                // Echo what this hook saw, so chaining is visible.
                ToolDecision::Rewrite { args } if args.is_null() => ToolDecision::Rewrite {
                    args: serde_json::json!({"seen": call.args.clone()}),
                },
                other => other.clone(),
            }
        }
    }

    fn list(members: Vec<Fixed>) -> HookList {
        members
            .into_iter()
            .map(|m| Arc::new(m) as Arc<dyn Hooks>)
            .collect()
    }

    fn call() -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: "bash".into(),
            args: serde_json::json!({"command": "ls"}),
        }
    }

    #[tokio::test]
    async fn first_deny_wins_and_later_hooks_are_not_asked() {
        let hooks = list(vec![
            Fixed(
                "asks",
                ToolDecision::Ask {
                    reason: Some("look".into()),
                    args: None,
                },
            ),
            Fixed(
                "denies",
                ToolDecision::Deny {
                    reason: "no".into(),
                },
            ),
            Fixed(
                "halts",
                ToolDecision::Halt {
                    reason: "never asked".into(),
                },
            ),
        ]);
        let ctx = HookContext::new(HookEvent::BeforeTool, ".");
        let decision = hooks.before_tool(&ctx, &call()).await;
        assert_eq!(
            decision,
            ToolDecision::Deny {
                reason: "no".into()
            }
        );
        let reports: Vec<(String, HookOutcome)> = ctx
            .take_reports()
            .into_iter()
            .map(|r| (r.hook, r.outcome))
            .collect();
        assert_eq!(
            reports,
            vec![
                ("asks".into(), HookOutcome::Ask),
                ("denies".into(), HookOutcome::Deny)
            ]
        );
    }

    #[tokio::test]
    async fn rewrites_chain_and_an_ask_survives_a_later_allow() {
        let hooks = list(vec![
            Fixed("first", ToolDecision::Rewrite { args: Value::Null }),
            Fixed(
                "asks",
                ToolDecision::Ask {
                    reason: None,
                    args: None,
                },
            ),
            Fixed("second", ToolDecision::Rewrite { args: Value::Null }),
            Fixed("allows", ToolDecision::Allow),
        ]);
        let ctx = HookContext::new(HookEvent::BeforeTool, ".");
        let decision = hooks.before_tool(&ctx, &call()).await;
        let expected = serde_json::json!({"seen": {"seen": {"command": "ls"}}});
        assert_eq!(
            decision,
            ToolDecision::Ask {
                reason: None,
                args: Some(expected)
            }
        );
    }

    struct Appends(&'static str);

    #[async_trait]
    impl Hooks for Appends {
        fn name(&self) -> &str {
            self.0
        }
        async fn after_tool(
            &self,
            _: &HookContext,
            _: &ToolCall,
            _: &ToolOutput,
        ) -> ResultDecision {
            ResultDecision::Append {
                text: self.0.into(),
            }
        }
    }

    #[tokio::test]
    async fn a_nested_list_reports_its_members_once() {
        let inner: HookList = [
            Arc::new(Appends("a")) as Arc<dyn Hooks>,
            Arc::new(Appends("b")),
        ]
        .into_iter()
        .collect();
        let outer: HookList = [Arc::new(inner) as Arc<dyn Hooks>, Arc::new(Appends("c"))]
            .into_iter()
            .collect();
        let ctx = HookContext::new(HookEvent::AfterTool, ".");
        let decision = outer
            .after_tool(&ctx, &call(), &ToolOutput::text("out"))
            .await;
        match decision {
            ResultDecision::Replace { result } => {
                assert_eq!(result.text_content(), "out\n\na\n\nb\n\nc")
            }
            other => panic!("{other:?}"),
        }
        let reports: Vec<(String, HookOutcome)> = ctx
            .take_reports()
            .into_iter()
            .map(|r| (r.hook, r.outcome))
            .collect();
        assert_eq!(
            reports,
            vec![
                ("a".into(), HookOutcome::Append),
                ("b".into(), HookOutcome::Append),
                ("c".into(), HookOutcome::Append)
            ]
        );
    }

    #[test]
    fn append_goes_after_a_blank_line_or_stands_alone() {
        let mut output = ToolOutput::text("done");
        append_to_output(&mut output, "Hook output:\nok");
        assert_eq!(output.text_content(), "done\n\nHook output:\nok");
        let mut empty = ToolOutput::default();
        append_to_output(&mut empty, "only");
        assert_eq!(empty.text_content(), "only");
        append_to_output(&mut empty, "  ");
        assert_eq!(empty.text_content(), "only");
    }
}
