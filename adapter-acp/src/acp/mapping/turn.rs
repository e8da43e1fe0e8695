//! [`AcpMapping`]: the events of a prompt turn as ACP session updates.

use std::collections::HashMap;
use std::path::PathBuf;

use agent_client_protocol::v1::schema::{
    ContentChunk, Cost, SessionUpdate, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    UsageUpdate,
};
use agent_core::{
    event::{CompactionReason, ToolStatus},
    hooks::{HookEvent, HookOutcome},
    sandbox::SandboxReport,
    tool::ProgressStream,
    AgentEvent,
};
use agent_host::turn::{Coverage, Mapping, TurnState};
use agent_mcp::McpManager;

use super::meta::{self, BlockMeta, FallbackMeta, HookMeta, SubagentMeta};
use super::subagent::ChildProgress;
use super::tools::{self, plan_update, result_fields, text_block, update};

/// The ACP mapping of a prompt turn: each event, read with the turn's
/// [`TurnState`] (which holds the calls' arguments and sandbox blocks, the sub-agents, the
/// session's cost so far and the last model stop), becomes session updates. Of its own it
/// keeps its settings and the rendered progress of each sub-agent a call runs (ACP shows a
/// child's run as the text of its call).
#[derive(Debug, Clone)]
pub struct AcpMapping {
    cwd: PathBuf,
    mcp: Option<McpManager>,
    /// The progress text of each running sub-agent, by the call that runs it.
    children: HashMap<String, ChildProgress>,
}

impl AcpMapping {
    /// A mapping for a session working in `cwd`.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        Self {
            cwd: cwd.into(),
            mcp: None,
            children: HashMap::new(),
        }
    }

    /// Describes the tools of the session's MCP servers from `manager` (their `kind` and
    /// title come from the servers' annotations).
    pub fn mcp(mut self, manager: Option<McpManager>) -> Self {
        self.mcp = manager;
        self
    }

    /// [`Mapping::map`]: the updates of `event`, handed to `emit` in order.
    fn map_event(
        &mut self,
        state: &TurnState,
        event: &AgentEvent,
        mut emit: impl FnMut(SessionUpdate),
    ) -> Coverage {
        match event {
            AgentEvent::TextDelta { delta } => {
                if !delta.is_empty() {
                    emit(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                        text_block(delta.clone()),
                    )));
                }
            }
            AgentEvent::ReasoningDelta { delta } => {
                if !delta.is_empty() {
                    emit(thought(delta.clone()));
                }
            }
            AgentEvent::ToolCall {
                id,
                name,
                args,
                raw_args,
                ..
            } => {
                emit(SessionUpdate::ToolCall(tools::tool_call(
                    id,
                    name,
                    args,
                    raw_args.as_deref(),
                    &self.cwd,
                    self.mcp.as_ref(),
                )));
            }
            AgentEvent::ToolExecutionStarted { id, .. } => emit(update(
                id,
                ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
            )),
            AgentEvent::ToolProgress { id, stream, text } => {
                // Process streams report their recent tail: it replaces the content. Status
                // lines are not output.
                if *stream != ProgressStream::Status && !text.is_empty() {
                    emit(update(
                        id,
                        ToolCallUpdateFields::new().content(vec![text_block(text.clone()).into()]),
                    ));
                }
            }
            AgentEvent::PlanUpdated { plan, .. } => emit(plan_update(plan)),
            // Shown with the call's result, which follows (the state keeps it).
            AgentEvent::ToolBlocked { .. } => {}
            AgentEvent::ToolResult {
                id,
                name,
                status,
                content,
                ..
            } => {
                let ok = *status == ToolStatus::Ok;
                let call = state.call(id);
                let args = call.map(|call| tools::scrubbed_args(&call.args));
                let blocks = call.map(|call| call.blocks.as_slice()).unwrap_or_default();
                let fields = result_fields(name, args.as_deref(), ok, content, blocks, &self.cwd);
                self.children.remove(id);
                let mut update = ToolCallUpdate::new(id.clone(), fields);
                if let Some(block) = blocks.last() {
                    update = update.meta(meta::meta("block", BlockMeta::from(block)));
                }
                emit(SessionUpdate::ToolCallUpdate(update));
            }
            AgentEvent::HookDecided {
                hook,
                event,
                outcome,
                reason,
                call_id,
            } => self.hook_decided(hook, *event, *outcome, reason.as_deref(), call_id, &mut emit),
            AgentEvent::SandboxReport(report) => {
                if let Some(text) = sandbox_note(report) {
                    emit(thought(text));
                }
            }
            // Its cost goes out with the next `usage_update` (after `ContextUsage`).
            AgentEvent::Usage { .. } => return Coverage::NotShown,
            AgentEvent::ContextUsage { used, window, .. } => {
                let cost = state.cost_usd().map(|usd| Cost::new(usd, "USD"));
                emit(SessionUpdate::UsageUpdate(
                    UsageUpdate::new(*used, *window).cost(cost),
                ));
            }
            AgentEvent::CompactionStarted { reason } => {
                emit(thought(format!(
                    "\nCompacting the context ({})…\n",
                    reason.as_str()
                )));
            }
            AgentEvent::CompactionFinished { before, after, .. } => {
                let reason = state
                    .compaction()
                    .map_or(CompactionReason::Auto, |c| c.reason);
                emit(thought(format!(
                    "Context compacted ({}): {} → {} tokens.\n",
                    reason.as_str(),
                    thousands(*before),
                    thousands(*after)
                )));
            }
            AgentEvent::SubagentStarted {
                task_id,
                name,
                call_id,
                description,
                model,
                background,
                depth,
                ..
            } => {
                let child =
                    ChildProgress::new(name, description.as_deref(), model, *background);
                let subagent = SubagentMeta {
                    task_id,
                    name,
                    model,
                    background: *background,
                    depth: *depth,
                };
                let update = progress(call_id, &child).meta(meta::meta("subagent", subagent));
                emit(SessionUpdate::ToolCallUpdate(update));
                self.children.insert(call_id.clone(), child);
            }
            AgentEvent::Subagent { call_id, event, .. } => {
                let mcp = self.mcp.as_ref();
                if let Some(child) = self.children.get_mut(call_id) {
                    if child.event(event.innermost(), mcp) {
                        emit(SessionUpdate::ToolCallUpdate(progress(call_id, child)));
                    }
                }
            }
            AgentEvent::SubagentFinished {
                call_id,
                status,
                final_text,
                error,
                ..
            } => {
                if let Some(child) = self.children.get_mut(call_id) {
                    child.finished(*status, final_text.as_deref(), error.as_deref());
                    emit(SessionUpdate::ToolCallUpdate(progress(call_id, child)));
                }
            }
            // The prompt's stop reason ([`turn_end`], from the state's last stop).
            AgentEvent::TurnEnded { .. } => {}
            // A call a permission rule decided (never put to the client): the rule, in the
            // call's `_meta.permission`.
            AgentEvent::PermissionDecided { info, .. }
                if info
                    .rule
                    .as_ref()
                    .is_some_and(|r| r.action != agent_core::permission::rules::RuleAction::Ask) =>
            {
                let update = ToolCallUpdate::new(info.id.clone(), ToolCallUpdateFields::new())
                    .meta(meta::meta("permission", info.rule.as_ref()));
                emit(SessionUpdate::ToolCallUpdate(update));
            }
            AgentEvent::ModelFallback { from, to, reason } => {
                let text = format!("\nThe model {from} failed ({reason}); retrying with {to}.\n");
                let fallback = FallbackMeta { from, to, reason };
                let chunk = ContentChunk::new(text_block(text))
                    .meta(meta::meta("modelFallback", fallback));
                emit(SessionUpdate::AgentThoughtChunk(chunk));
            }
            // The spend cap: the prompt ends with `max_turn_requests` ([`turn_end`]), and
            // says why here.
            AgentEvent::Error {
                code: agent_core::event::ErrorCode::BudgetExceeded,
                message,
                ..
            } => emit(thought(format!("\n{message}\n"))),
            // Permission prompts reach the client as `session/request_permission` requests
            // (the session's approver), not as updates.
            AgentEvent::PermissionRequested(_)
            | AgentEvent::PermissionDecided { .. }
            // A fatal error and the end of the run are the prompt's response (the turn's
            // outcome, see the handlers); recoverable errors are only logged.
            | AgentEvent::Error { .. }
            | AgentEvent::RunFinished { .. } => return Coverage::NotShown,
            // The run's framing ([`agent_host::turn::FRAMING`]) has no ACP form.
            other => return Coverage::rest(other),
        }
        Coverage::Shown
    }

    fn hook_decided(
        &self,
        hook: &str,
        event: HookEvent,
        outcome: HookOutcome,
        reason: Option<&str>,
        call_id: &Option<String>,
        emit: &mut impl FnMut(SessionUpdate),
    ) {
        let because = reason.map(|r| format!(": {r}")).unwrap_or_default();
        match (call_id, event, outcome) {
            (Some(id), _, _) => {
                let mut fields = ToolCallUpdateFields::new();
                if event == HookEvent::BeforeTool
                    && matches!(outcome, HookOutcome::Deny | HookOutcome::Halt)
                {
                    fields = fields
                        .status(ToolCallStatus::Failed)
                        .content(vec![text_block(format!(
                            "Blocked by hook \"{hook}\"{because}"
                        ))
                        .into()]);
                }
                let hook = HookMeta {
                    name: hook,
                    event,
                    outcome,
                    reason,
                };
                emit(SessionUpdate::ToolCallUpdate(
                    ToolCallUpdate::new(id.clone(), fields).meta(meta::meta("hook", hook)),
                ));
            }
            (None, HookEvent::UserPrompt, HookOutcome::Block) => {
                // The prompt never entered the transcript: ACP's `refusal` ([`stop_reason`]).
                emit(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                    text_block(format!(
                        "The prompt was blocked by hook \"{hook}\"{because}"
                    )),
                )));
            }
            (None, _, _) => emit(thought(format!(
                "\nHook \"{hook}\" ({}): {}{because}\n",
                event.as_str(),
                outcome.as_str()
            ))),
        }
    }
}

impl Mapping for AcpMapping {
    type Frame<'e> = SessionUpdate;

    fn map<'e>(
        &mut self,
        state: &TurnState,
        event: &'e AgentEvent,
        out: impl FnMut(Self::Frame<'e>),
    ) -> Coverage {
        self.map_event(state, event, out)
    }
}

fn thought(text: String) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(ContentChunk::new(text_block(text)))
}

/// The progress of the sub-agent `call_id` runs.
fn progress(call_id: &str, child: &ChildProgress) -> ToolCallUpdate {
    let content = vec![text_block(child.render()).into()];
    ToolCallUpdate::new(
        call_id.to_string(),
        ToolCallUpdateFields::new().content(content),
    )
}

/// The sandbox report, logged; a note for the user when the sandbox enforces less than
/// its policy asks (or its fallback is in force).
fn sandbox_note(report: &SandboxReport) -> Option<String> {
    let summary = report.summary();
    // Nothing runs commands (or the sandbox is off, which is only ever asked for): the
    // log says so quietly.
    if !report.falls_short() {
        tracing::info!(sandbox = %summary, "sandbox");
        return None;
    }
    tracing::warn!(sandbox = %summary, "sandbox");
    Some(format!("\nSandbox: {summary}\n"))
}

/// `170000` as `170 000`.
pub(super) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}
