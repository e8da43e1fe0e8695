//! An agent's hooks and the loop's calls into them (crate-internal).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::emit::Emitter;
use crate::inner::Inner;
use crate::message::{ContentBlock, Message, ToolCall};
use crate::permission::{PermissionAction, Verdict};
use crate::tool::ToolOutput;

use crate::hooks::types::{
    scrub, CompactTrigger, HookContext, HookEvent, HookOutcome, HookReport, PromptDecision,
    ResultDecision, SessionEnd, SessionSource, StartDecision, StopDecision, StopRequest,
    ToolDecision, DEFAULT_MAX_STOP_CONTINUATIONS,
};
use crate::hooks::{append_to_output, HookList, Hooks};

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
