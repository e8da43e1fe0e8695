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

use async_trait::async_trait;

use crate::message::ToolCall;
use crate::tool_output::ToolOutput;

mod list;
#[cfg(test)]
mod tests;
pub(crate) mod types;

pub use list::{append_to_output, HookList};
pub use types::{
    CompactTrigger, HookContext, HookEvent, HookOutcome, HookReport, PromptDecision,
    ResultDecision, SessionEnd, SessionEndReason, SessionSource, StartDecision, StopDecision,
    StopRequest, ToolDecision, DEFAULT_MAX_STOP_CONTINUATIONS,
};

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
/// Install it with [`crate::AgentBuilder::hook`] (or [`crate::AgentUpdate::hooks`]).
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
