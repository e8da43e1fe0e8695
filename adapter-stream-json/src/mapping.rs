//! The mapping: [`AgentEvent`]s in (already in [`crate::order::ZeroOrder`]'s order), Zero
//! stream-json events out. Nothing else happens here: the session recorder and file
//! checkpoints are separate observers of the same events ([`crate::record`]).
//!
//! Every [`AgentEvent`] variant is matched by name: the ones Zero shows are in [`SHOWN`], the
//! ones it has no line for in [`NOT_SHOWN`], and a test fails when a variant is in neither.

use std::collections::{BTreeMap, HashMap};

use agent_core::{
    event::{CompactionReason, ErrorCode, PermissionInfo, StopReason, ToolStatus},
    hooks::{HookEvent, HookOutcome},
    permission::{Block, PermissionAction, Risk},
    sandbox::SandboxReport,
    AgentEvent, RunStatus, SideEffect,
};
use agent_host::text::text_of;
use serde_json::Value;

use crate::wire::{
    Delta, ErrorEvent, EventBody, FinalEvent, PermissionEvent, RunEnd, ToolCallEvent,
    ToolResultEvent, UsageEvent, WarningEvent, WireBlock, WireRisk,
};

/// Largest `tool_result.output`, in bytes, before `\n[truncated]` is appended.
pub const TOOL_OUTPUT_LIMIT: usize = 10 * 1024;

/// Exit codes and their `run_end.status`.
pub mod exit {
    /// Success.
    pub const SUCCESS: i32 = 0;
    /// Crash (stdout write failure); no protocol guarantee.
    pub const CRASH: i32 = 1;
    /// Usage error.
    pub const USAGE: i32 = 2;
    /// Provider or runtime error.
    pub const PROVIDER: i32 = 3;
    /// The run stopped with work unfinished.
    pub const INCOMPLETE: i32 = 4;
    /// Interrupted by a signal.
    pub const INTERRUPTED: i32 = 130;
}

/// The [`AgentEvent`] variants (by their serde tag) that show up on the wire, alone or in a
/// later line (usage, tool calls, the length warning, errors, the terminal lines):
///
/// - `sandbox_report`: a `warning` when the sandbox enforces less than the flags ask;
/// - `hook_decided`: a `warning` when a hook blocked the prompt or halted the run (a vetoed
///   call's `tool_result` already says which hook refused it and why, in Zero's words);
/// - `tool_blocked`: the `block` of the call's `tool_result`;
/// - `compaction_finished`: a `warning` (`Context compacted (auto): 170000 → 2100 tokens.`).
pub const SHOWN: &[&str] = &[
    "text_delta",
    "reasoning_delta",
    "usage",
    "tool_call",
    "turn_ended",
    "permission_requested",
    "permission_decided",
    "tool_result",
    "error",
    "run_finished",
    "sandbox_report",
    "hook_decided",
    "tool_blocked",
    "compaction_finished",
];

/// The [`AgentEvent`] variants deliberately not shown: Zero has no line for them.
///
/// A sub-agent shows only as its `Task` call's `tool_call` and `tool_result`, as in Zero; its
/// events are recorded in its own child session ([`crate::record`]). `context_usage` has no
/// place in Zero's schema, and `compaction_started` only names the reason its
/// `compaction_finished` warning gives.
pub const NOT_SHOWN: &[&str] = &[
    "run_started",
    "user_message",
    "turn_started",
    "request_started",
    "retry_scheduled",
    "assistant_started",
    "tool_use_started",
    "tool_use_args_delta",
    "tool_use_ended",
    "assistant_message",
    "turn_recovery",
    "tool_execution_started",
    "tool_progress",
    "plan_updated",
    "subagent_started",
    "subagent",
    "subagent_finished",
    "context_usage",
    "compaction_started",
];

/// Cuts `output` to [`TOOL_OUTPUT_LIMIT`] bytes on a character boundary and appends
/// `\n[truncated]`; returns whether it cut.
pub fn cap_output(output: &str) -> (String, bool) {
    if output.len() <= TOOL_OUTPUT_LIMIT {
        return (output.to_string(), false);
    }
    let cut = agent_host::text::cut_utf8(output, TOOL_OUTPUT_LIMIT);
    (format!("{cut}\n[truncated]"), true)
}

/// What the mapping needs to know about the run.
#[derive(Debug, Clone, Default)]
pub struct MapperConfig {
    /// Session id written on permission events (empty without a session).
    pub session_id: String,
    /// Zero's name of the permission mode (`auto`, `ask`, `unsafe`, `plan`, …).
    pub permission_mode: String,
    /// The `--auto` level.
    pub autonomy: String,
}

/// How a run ended, as Zero reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The model finished: `final`, then `run_end{success}`.
    Success {
        /// The final answer.
        text: String,
        /// The output token limit cut an answer (a warning precedes `final`).
        cut_by_length: bool,
    },
    /// The step limit stopped the run: `final`, `error{incomplete}`, `run_end{incomplete}`.
    Incomplete {
        /// The last answer text.
        text: String,
        /// Why.
        message: String,
    },
    /// A provider or runtime error: `error{provider_error}`, `run_end{error}`.
    Failed {
        /// The error.
        message: String,
    },
    /// The final answer does not match `--output-schema` (after the repair turn):
    /// `error{output_schema_error}`, `run_end{error}`.
    InvalidOutput {
        /// Why, naming the place in the answer.
        message: String,
    },
    /// A signal or an abort: `error{interrupted}`, `run_end{interrupted}`.
    Interrupted,
}

/// The terminal lines of a run and the process exit code.
#[derive(Debug, Clone, PartialEq)]
pub struct Terminal {
    /// The terminal events (ending with `run_end`).
    pub events: Vec<EventBody>,
    /// The process exit code.
    pub exit_code: i32,
}

impl Outcome {
    /// The process exit code.
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Success { .. } => exit::SUCCESS,
            Self::Incomplete { .. } => exit::INCOMPLETE,
            Self::Failed { .. } | Self::InvalidOutput { .. } => exit::PROVIDER,
            Self::Interrupted => exit::INTERRUPTED,
        }
    }

    /// The terminal lines: `[warning] final run_end`, `final error run_end` or `error run_end`.
    pub fn terminal(&self) -> Terminal {
        let error = |code: &str, message: &str| {
            EventBody::Error(ErrorEvent {
                code: code.into(),
                message: message.into(),
                recoverable: false,
            })
        };
        let final_text = |text: &str| {
            EventBody::Final(FinalEvent {
                meta: None,
                text: text.into(),
            })
        };
        let mut events = Vec::with_capacity(3);
        let status = match self {
            Self::Success {
                text,
                cut_by_length,
            } => {
                if *cut_by_length {
                    events.push(EventBody::Warning(WarningEvent {
                        message: "The model's answer was cut off by its output token limit.".into(),
                    }));
                }
                events.push(final_text(text));
                "success"
            }
            Self::Incomplete { text, message } => {
                events.push(final_text(text));
                events.push(error("incomplete", message));
                "incomplete"
            }
            Self::Failed { message } => {
                events.push(error("provider_error", message));
                "error"
            }
            Self::InvalidOutput { message } => {
                events.push(error("output_schema_error", message));
                "error"
            }
            Self::Interrupted => {
                events.push(error("interrupted", "run cancelled by signal"));
                "interrupted"
            }
        };
        let exit_code = self.exit_code();
        events.push(EventBody::RunEnd(RunEnd {
            exit_code,
            status: status.into(),
        }));
        Terminal { events, exit_code }
    }
}

fn side_effect_name(side_effect: Option<SideEffect>) -> &'static str {
    side_effect.map(SideEffect::as_str).unwrap_or("unknown")
}

/// The name serde gives a unit enum value (`"prompt"`, `"network"`, …).
fn enum_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => name,
        _ => String::new(),
    }
}

fn wire_risk(risk: &Risk) -> WireRisk {
    WireRisk {
        categories: risk.categories.iter().map(enum_name).collect(),
        level: risk.level.as_str().to_string(),
        reason: risk.reason(),
    }
}

/// The wire form of a block.
pub fn wire_block(block: &Block) -> WireBlock {
    WireBlock {
        action: enum_name(&block.action),
        code: enum_name(&block.code),
        path: block.path.clone().unwrap_or_default(),
        reason: block.reason.clone(),
        recoverable: block.recoverable,
        risk: wire_risk(&block.risk),
        tool_name: block.tool_name.clone().unwrap_or_default(),
    }
}

/// The permission fields Zero shows for a check of `info` that came out as `action`.
pub fn permission_event(
    config: &MapperConfig,
    info: &PermissionInfo,
    action: PermissionAction,
    granted: bool,
) -> PermissionEvent {
    let reason = info.reason.clone().unwrap_or_default();
    let decision_reason = match action {
        PermissionAction::Deny | PermissionAction::Cancel => reason.clone(),
        _ => String::new(),
    };
    PermissionEvent {
        action: enum_name(&action),
        autonomy: config.autonomy.clone(),
        block: info.block.as_ref().map(wire_block),
        decision_reason,
        grant: None,
        grant_matched: false,
        id: info.id.clone(),
        name: info.name.clone(),
        permission: info.permission.as_str().to_string(),
        permission_granted: granted,
        permission_mode: config.permission_mode.clone(),
        reason,
        risk: wire_risk(&info.risk),
        session_id: config.session_id.clone(),
        side_effect: info.side_effect.as_str().to_string(),
    }
}

/// The `status` string of a tool result.
pub fn status_name(status: ToolStatus) -> &'static str {
    match status {
        ToolStatus::Ok => "ok",
        ToolStatus::Error => "error",
    }
}

/// The `tool_call` line of a call.
pub fn tool_call_event(
    id: &str,
    name: &str,
    args: &Value,
    raw_args: Option<&str>,
    side_effect: Option<SideEffect>,
) -> ToolCallEvent {
    let args = match (raw_args, args) {
        (Some(raw), _) if raw.trim().is_empty() => None,
        (Some(raw), _) => Some(Value::String(raw.to_string())),
        (None, Value::Null) => None,
        (None, args) => Some(args.clone()),
    };
    ToolCallEvent {
        args,
        id: id.to_string(),
        name: name.to_string(),
        side_effect: side_effect_name(side_effect).to_string(),
    }
}

/// Maps one run's [`AgentEvent`]s (in Zero's order) to Zero output events.
#[derive(Debug)]
pub struct Mapper {
    config: MapperConfig,
    /// The first fatal error, reported when the run ends.
    fatal: Option<(ErrorCode, String)>,
    /// A turn stopped at the output token limit.
    cut_by_length: bool,
    /// `RunFinished`'s status and final text.
    finished: Option<(RunStatus, Option<String>)>,
    /// Blocks of calls whose results have not come yet, by call id.
    blocks: HashMap<String, Block>,
    /// Why the compaction under way started.
    compaction: Option<CompactionReason>,
}

/// The `warning` for a sandbox that enforces less than asked, if it does.
pub fn sandbox_warning(report: &SandboxReport) -> Option<String> {
    match report.falls_short() {
        false => None,
        true => Some(format!(
            "The sandbox enforces less than asked: {}.",
            report.summary()
        )),
    }
}

/// The `warning` for a hook decision Zero's lines would not otherwise show.
fn hook_warning(
    hook: &str,
    event: HookEvent,
    outcome: HookOutcome,
    reason: Option<&str>,
) -> Option<String> {
    let why = reason
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    match (event, outcome) {
        (HookEvent::UserPrompt, HookOutcome::Block) => Some(format!(
            "The prompt was blocked by hook {}{why}",
            crate::input::go_quote(hook)
        )),
        (_, HookOutcome::Halt) => Some(format!(
            "Hook {} stopped the run{why}",
            crate::input::go_quote(hook)
        )),
        _ => None,
    }
}

impl Mapper {
    /// A mapper for one run.
    pub fn new(config: MapperConfig) -> Self {
        Self {
            config,
            fatal: None,
            cut_by_length: false,
            finished: None,
            blocks: HashMap::new(),
            compaction: None,
        }
    }

    /// The run's settings.
    pub fn config(&self) -> &MapperConfig {
        &self.config
    }

    /// Appends the lines of `event` to `out` (often none: see [`NOT_SHOWN`]; the terminal
    /// lines come from [`Mapper::outcome`]).
    pub fn map(&mut self, event: AgentEvent, out: &mut Vec<EventBody>) {
        match event {
            AgentEvent::TextDelta { delta } if !delta.is_empty() => {
                out.push(EventBody::Text(Delta { delta }));
            }
            AgentEvent::ReasoningDelta { delta } if !delta.is_empty() => {
                out.push(EventBody::Reasoning(Delta { delta }));
            }
            // An empty delta has no line.
            AgentEvent::TextDelta { .. } | AgentEvent::ReasoningDelta { .. } => {}
            AgentEvent::Usage { turn, .. } => {
                let prompt = turn.prompt_tokens();
                out.push(EventBody::Usage(UsageEvent {
                    completion_tokens: turn.output,
                    prompt_tokens: prompt,
                    total_tokens: prompt + turn.output,
                }));
            }
            AgentEvent::ToolCall {
                id,
                name,
                args,
                raw_args,
                side_effect,
            } => out.push(EventBody::ToolCall(tool_call_event(
                &id,
                &name,
                &args,
                raw_args.as_deref(),
                side_effect,
            ))),
            AgentEvent::TurnEnded { stop, .. } => {
                self.cut_by_length |= stop == StopReason::Length;
            }
            AgentEvent::PermissionRequested(info) => {
                let event = permission_event(&self.config, &info, PermissionAction::Prompt, false);
                out.push(EventBody::PermissionRequest(Box::new(event)));
            }
            AgentEvent::PermissionDecided {
                info,
                action,
                granted,
                ..
            } => {
                let event = Box::new(permission_event(&self.config, &info, action, granted));
                out.push(match action {
                    PermissionAction::Prompt => EventBody::Permission(event),
                    _ => EventBody::PermissionDecision(event),
                });
            }
            AgentEvent::ToolResult {
                id,
                name,
                status,
                content,
                truncated,
                redacted,
                changed_files,
                ..
            } => {
                let (output, cut) = cap_output(&text_of(&content));
                out.push(EventBody::ToolResult(ToolResultEvent {
                    block: self.blocks.remove(&id).map(|b| Box::new(wire_block(&b))),
                    changed_files,
                    display: None,
                    id,
                    meta: BTreeMap::new(),
                    name,
                    output,
                    redacted: redacted.then_some(true),
                    status: status_name(status).to_string(),
                    truncated: cut || truncated,
                }));
            }
            AgentEvent::Error {
                code,
                message,
                recoverable,
            } => {
                if recoverable {
                    out.push(EventBody::Warning(WarningEvent { message }));
                } else if self.fatal.is_none() {
                    self.fatal = Some((code, message));
                }
            }
            // The end of the run: its lines come from `outcome`.
            AgentEvent::RunFinished { status, final_text } => {
                self.finished = Some((status, final_text));
            }
            AgentEvent::SandboxReport(report) => {
                if let Some(message) = sandbox_warning(&report) {
                    out.push(EventBody::Warning(WarningEvent { message }));
                }
            }
            AgentEvent::ToolBlocked { id, block, .. } => {
                self.blocks.insert(id, block);
            }
            AgentEvent::HookDecided {
                hook,
                event,
                outcome,
                reason,
                ..
            } => {
                if let Some(message) = hook_warning(&hook, event, outcome, reason.as_deref()) {
                    out.push(EventBody::Warning(WarningEvent { message }));
                }
            }
            AgentEvent::CompactionStarted { reason } => self.compaction = Some(reason),
            AgentEvent::CompactionFinished { before, after, .. } => {
                let reason = self.compaction.take().unwrap_or(CompactionReason::Auto);
                out.push(EventBody::Warning(WarningEvent {
                    message: format!(
                        "Context compacted ({}): {before} \u{2192} {after} tokens.",
                        reason.as_str()
                    ),
                }));
            }
            // Zero has no line for these (`NOT_SHOWN`).
            AgentEvent::RunStarted { .. }
            | AgentEvent::UserMessage { .. }
            | AgentEvent::TurnStarted { .. }
            | AgentEvent::RequestStarted { .. }
            | AgentEvent::RetryScheduled { .. }
            | AgentEvent::AssistantStarted
            | AgentEvent::ToolUseStarted { .. }
            | AgentEvent::ToolUseArgsDelta { .. }
            | AgentEvent::ToolUseEnded { .. }
            | AgentEvent::AssistantMessage { .. }
            | AgentEvent::TurnRecovery { .. }
            | AgentEvent::ToolExecutionStarted { .. }
            | AgentEvent::ToolProgress { .. }
            | AgentEvent::PlanUpdated { .. }
            | AgentEvent::ContextUsage { .. }
            | AgentEvent::SubagentStarted { .. }
            | AgentEvent::Subagent { .. }
            | AgentEvent::SubagentFinished { .. } => {}
            // `AgentEvent` is `#[non_exhaustive]`, so the compiler demands an arm for variants
            // added to agent-core later; the test `every_variant_is_shown_or_not_shown` fails
            // until such a variant is mapped above or listed in `NOT_SHOWN`.
            // Zero clients ignore event types they do not know; so does this mapping.
            _added_later => {}
        }
    }

    /// Whether `RunFinished` was mapped.
    pub fn is_finished(&self) -> bool {
        self.finished.is_some()
    }

    /// `RunFinished`'s status, once mapped.
    pub fn status(&self) -> Option<RunStatus> {
        self.finished.as_ref().map(|(status, _)| *status)
    }

    /// How the run ended: from `RunFinished` (an abort when the stream ended without one), or
    /// `interrupted` by a signal.
    pub fn outcome(&mut self, interrupted: bool) -> Outcome {
        let (status, final_text) = self.finished.take().unwrap_or((RunStatus::Aborted, None));
        let text = final_text.unwrap_or_default();
        if interrupted || status == RunStatus::Aborted {
            return Outcome::Interrupted;
        }
        if status == RunStatus::Error {
            let (code, message) = self
                .fatal
                .take()
                .unwrap_or((ErrorCode::Provider, "agent run failed".into()));
            return match code {
                ErrorCode::MaxSteps => Outcome::Incomplete { text, message },
                _ => Outcome::Failed { message },
            };
        }
        Outcome::Success {
            text,
            cut_by_length: self.cut_by_length,
        }
    }
}

#[cfg(test)]
mod tests;
