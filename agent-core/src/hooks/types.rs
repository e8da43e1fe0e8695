//! The hooks' declarative types: lifecycle points, decisions, reports and [`HookContext`].

use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::permission::PermissionMode;
use crate::run_status::RunStatus;
use crate::sandbox::report::SandboxContext;
use crate::secrets::scrub_known_values;
use crate::subagent_info::SubagentInfo;
use crate::tool_output::ToolOutput;

use super::Hooks;

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

/// One reported hook decision; the payload of [`AgentEvent::HookDecided`](crate::AgentEvent::HookDecided).
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
    pub(crate) reports: Mutex<Vec<HookReport>>,
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
    pub(crate) fn fork(&self) -> Self {
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

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Vec<HookReport>> {
        self.reports.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `member`'s reports to this context, plus one for its `answer` unless it
    /// reported a decision itself.
    pub(crate) fn absorb(
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

/// `text` scrubbed of known secrets.
pub(crate) fn scrub(text: &str) -> String {
    scrub_known_values(text).into_owned()
}
