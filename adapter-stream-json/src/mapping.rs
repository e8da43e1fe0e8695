//! The mapping: [`AgentEvent`]s in (already in [`crate::order::ZeroOrder`]'s order), Zero
//! stream-json events out ([`ZeroMapping`], an [`agent_host::turn::Mapping`] over the
//! turn's [`TurnState`]), and the terminal lines of the run from its one outcome,
//! [`TurnOutcome`](agent_host::turn::TurnOutcome) ([`Terminal`]). Nothing else happens
//! here: the session recorder and file checkpoints are separate observers of the same
//! events ([`crate::record`]).
//!
//! Every [`AgentEvent`] variant Zero shows, or deliberately does not, is matched by name;
//! the others fall to [`Coverage::rest`], and the coverage test runs agent-host's harness
//! (`agent_host::turn::coverage`) over the mapping.

mod terminal;

use std::collections::BTreeMap;

use agent_core::{
    event::{CompactionReason, PermissionInfo, ToolStatus},
    hooks::{HookEvent, HookOutcome},
    permission::{Block, PermissionAction, Risk},
    sandbox::SandboxReport,
    AgentEvent, SideEffect,
};
use agent_host::text::text_of;
use agent_host::turn::{Coverage, Mapping, TurnState};
use serde_json::Value;

use crate::wire::{
    Delta, EventBody, PermissionEvent, ToolCallEvent, ToolResultEvent, UsageEvent, WarningEvent,
    WireBlock, WireRisk,
};

pub use terminal::{exit, EndRecord, Terminal};

/// Largest `tool_result.output`, in bytes, before `\n[truncated]` is appended.
pub const TOOL_OUTPUT_LIMIT: usize = 10 * 1024;

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
pub struct MappingConfig {
    /// Session id written on permission events (empty without a session).
    pub session_id: String,
    /// Zero's name of the permission mode (`auto`, `ask`, `unsafe`, `plan`, …).
    pub permission_mode: String,
    /// The `--auto` level.
    pub autonomy: String,
}

fn side_effect_name(side_effect: Option<SideEffect>) -> &'static str {
    side_effect.map(SideEffect::as_str).unwrap_or("unknown")
}

/// The wire form of a risk.
fn wire_risk(risk: &Risk) -> WireRisk {
    WireRisk {
        categories: risk
            .categories
            .iter()
            .map(|c| c.as_str().to_owned())
            .collect(),
        level: risk.level.as_str().to_string(),
        reason: risk.reason(),
    }
}

/// The wire form of a block.
pub fn wire_block(block: &Block) -> WireBlock {
    WireBlock {
        action: block.action.as_str().to_owned(),
        code: block.code.as_str().to_owned(),
        path: block.path.clone().unwrap_or_default(),
        reason: block.reason.clone(),
        recoverable: block.recoverable,
        risk: wire_risk(&block.risk),
        tool_name: block.tool_name.clone().unwrap_or_default(),
    }
}

/// The permission fields Zero shows for a check of `info` that came out as `action`.
pub fn permission_event(
    config: &MappingConfig,
    info: &PermissionInfo,
    action: PermissionAction,
    granted: bool,
) -> PermissionEvent {
    let reason = info.reason.clone().unwrap_or_default();
    // Zero's `decisionReason`: why a denial was made, and which permission rule (or grant)
    // decided a call.
    let decision_reason = match (action, &info.rule) {
        (PermissionAction::Deny | PermissionAction::Cancel, _) => reason.clone(),
        (_, Some(rule)) => rule.describe(),
        _ => String::new(),
    };
    let grant_matched = info
        .rule
        .as_ref()
        .is_some_and(|r| r.source == "session" || r.source.starts_with("grants "));
    PermissionEvent {
        action: action.as_str().to_owned(),
        autonomy: config.autonomy.clone(),
        block: info.block.as_ref().map(wire_block),
        decision_reason,
        grant: None,
        grant_matched,
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

/// Zero's mapping of a run: each event, in Zero's order and read with the turn's
/// [`TurnState`] (which holds a call's sandbox block until its result and the reason of
/// the compaction under way), becomes output events. It keeps only its settings; the
/// terminal lines come from the state's outcome ([`Terminal::of`]).
#[derive(Debug, Clone, Default)]
pub struct ZeroMapping {
    config: MappingConfig,
}

impl ZeroMapping {
    /// The mapping of one run.
    pub fn new(config: MappingConfig) -> Self {
        Self { config }
    }

    /// The run's settings.
    pub fn config(&self) -> &MappingConfig {
        &self.config
    }
}

impl Mapping for ZeroMapping {
    type Frame<'e> = EventBody;

    /// The lines of `event` (often none; the terminal lines come from the state's outcome,
    /// [`Terminal::of`]).
    fn map<'e>(
        &mut self,
        state: &TurnState,
        event: &'e AgentEvent,
        mut out: impl FnMut(Self::Frame<'e>),
    ) -> Coverage {
        let warning = |message| EventBody::Warning(WarningEvent { message });
        match event {
            // An empty delta has no line.
            AgentEvent::TextDelta { delta } => {
                if !delta.is_empty() {
                    out(EventBody::Text(Delta {
                        delta: delta.clone(),
                    }));
                }
            }
            AgentEvent::ReasoningDelta { delta } => {
                if !delta.is_empty() {
                    out(EventBody::Reasoning(Delta {
                        delta: delta.clone(),
                    }));
                }
            }
            AgentEvent::Usage { turn, .. } => {
                let prompt = turn.prompt_tokens();
                out(EventBody::Usage(UsageEvent {
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
            } => out(EventBody::ToolCall(tool_call_event(
                id,
                name,
                args,
                raw_args.as_deref(),
                *side_effect,
            ))),
            AgentEvent::PermissionRequested(info) => {
                let event = permission_event(&self.config, info, PermissionAction::Prompt, false);
                out(EventBody::PermissionRequest(Box::new(event)));
            }
            AgentEvent::PermissionDecided {
                info,
                action,
                granted,
                ..
            } => {
                let event = Box::new(permission_event(&self.config, info, *action, *granted));
                out(match action {
                    PermissionAction::Prompt => EventBody::Permission(event),
                    _ => EventBody::PermissionDecision(event),
                });
            }
            AgentEvent::ModelFallback { from, to, reason } => out(warning(format!(
                "Model {from} failed ({reason}); retrying the call with the fallback model {to}."
            ))),
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
                let (output, cut) = cap_output(&text_of(content));
                let block = state.call(id).and_then(|call| call.block.as_ref());
                out(EventBody::ToolResult(ToolResultEvent {
                    block: block.map(|b| Box::new(wire_block(b))),
                    changed_files: changed_files.clone(),
                    display: None,
                    id: id.clone(),
                    meta: BTreeMap::new(),
                    name: name.clone(),
                    output,
                    redacted: redacted.then_some(true),
                    status: status_name(*status).to_string(),
                    truncated: cut || *truncated,
                }));
            }
            // A recoverable error is a warning; a fatal one ends the run (its terminal lines).
            AgentEvent::Error {
                message,
                recoverable,
                ..
            } => {
                if *recoverable {
                    out(warning(message.clone()));
                }
            }
            AgentEvent::SandboxReport(report) => {
                if let Some(message) = sandbox_warning(report) {
                    out(warning(message));
                }
            }
            AgentEvent::HookDecided {
                hook,
                event,
                outcome,
                reason,
                ..
            } => {
                if let Some(message) = hook_warning(hook, *event, *outcome, reason.as_deref()) {
                    out(warning(message));
                }
            }
            AgentEvent::CompactionFinished { before, after, .. } => {
                let reason = state
                    .compaction()
                    .map_or(CompactionReason::Auto, |c| c.reason);
                out(warning(format!(
                    "Context compacted ({}): {before} \u{2192} {after} tokens.",
                    reason.as_str()
                )));
            }
            // Shown later: the length warning before `final`, the `block` of the call's
            // `tool_result`, the terminal lines (all read from the state).
            AgentEvent::TurnEnded { .. }
            | AgentEvent::ToolBlocked { .. }
            | AgentEvent::RunFinished { .. } => {}
            // Zero has no line for these. A sub-agent shows only as its `Task` call's
            // `tool_call` and `tool_result`, as in Zero; its events are recorded in its own
            // child session ([`crate::record`]). `context_usage` has no place in Zero's
            // schema, and `compaction_started` only names the reason its
            // `compaction_finished` warning gives.
            AgentEvent::ToolExecutionStarted { .. }
            | AgentEvent::ToolProgress { .. }
            | AgentEvent::PlanUpdated { .. }
            | AgentEvent::ContextUsage { .. }
            | AgentEvent::CompactionStarted { .. }
            | AgentEvent::SubagentStarted { .. }
            | AgentEvent::Subagent { .. }
            | AgentEvent::SubagentFinished { .. } => return Coverage::NotShown,
            // The run's framing, and variants added to agent-core later (Zero clients
            // ignore event types they do not know; so does this mapping).
            other => return Coverage::rest(other),
        }
        Coverage::Shown
    }
}

#[cfg(test)]
mod tests;
