//! The pure part of the ACP front end: [`AgentEvent`]s of a prompt turn become ACP
//! [`SessionUpdate`]s ([`TurnMapper`]), a finished run becomes a [`StopReason`]
//! ([`turn_end`]), a stored transcript becomes the updates that replay it and an ACP prompt
//! becomes a [`UserInput`](agent_core::UserInput) ([`history`]); [`tools`] describes tool
//! calls for editors, [`subagent`] a sub-agent's run as its call's progress, [`meta`] the
//! `_meta` of tool call updates, [`servers`] a session's `mcpServers` as MCP server
//! configurations.
//!
//! What each capability looks like on ACP:
//!
//! - MCP tools are ordinary `tool_call`s, their `kind` and title from the server's
//!   annotations ([`tools::mcp_kind`]).
//! - A hook's decision on a call is a `tool_call_update` with `_meta.hook`; a `before_tool`
//!   deny or halt also fails the call with the reason. A prompt a `user_prompt` hook blocked
//!   is an `agent_message_chunk` with the reason and the stop reason `refusal` (the prompt is
//!   not in the transcript, as ACP's `refusal` means); other decisions not bound to a call
//!   (a stop hook's continuation, a hook that failed) are `agent_thought_chunk`s.
//! - A sandbox block is a line of the call's final content (and `_meta.block`); the
//!   sandbox report is logged, and is an `agent_thought_chunk` when the sandbox enforces
//!   less than asked.
//! - A sub-agent's run is the progress of its call ([`subagent`]).
//! - `ContextUsage` is a `usage_update {used, size, cost}` (cost: the session's cumulative
//!   cost in USD, when the model's price is known); a compaction inside a prompt is an
//!   `agent_thought_chunk` ("Context compacted (auto): 170 000 → 2 100 tokens.").

pub mod history;
pub mod meta;
pub mod servers;
pub mod subagent;
pub mod tools;

use std::collections::HashMap;
use std::path::PathBuf;

use agent_client_protocol::v1::schema::{
    ContentChunk, Cost, SessionUpdate, StopReason, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields, UsageUpdate,
};
use agent_core::{
    AgentEvent, Block, CompactionReason, ErrorCode, HookEvent, HookOutcome, ProgressStream,
    RunStatus, SandboxReport, StopReason as CoreStop, ToolStatus,
};
use agent_mcp::McpManager;
use serde_json::Value;

pub use history::{prompt_input, replay, PromptError};
pub use servers::mcp_servers;
pub use tools::{
    block_text, content_block, describe, mcp_kind, mcp_title, permission_tool_call, plan_update,
    tool_call, tool_kind, tool_locations, tool_preview, tool_title,
};

use crate::coverage::Coverage;
use meta::{BlockMeta, HookMeta, SubagentMeta};
use subagent::ChildProgress;
use tools::{result_content, text_block, update};

/// Maps the events of one prompt turn to session updates. It remembers each call's name
/// and arguments (for the content of its result), the sandbox blocks of running calls, the
/// progress of the sub-agents they run, the session's cost so far and the last model stop
/// (for the turn's stop reason).
#[derive(Debug, Clone)]
pub struct TurnMapper {
    cwd: PathBuf,
    mcp: Option<McpManager>,
    calls: HashMap<String, (String, Value)>,
    blocks: HashMap<String, Vec<Block>>,
    children: HashMap<String, ChildProgress>,
    compaction: Option<CompactionReason>,
    cost_usd: Option<f64>,
    last_stop: Option<CoreStop>,
}

impl TurnMapper {
    /// A mapper for a session working in `cwd`.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        Self {
            cwd: cwd.into(),
            mcp: None,
            calls: HashMap::new(),
            blocks: HashMap::new(),
            children: HashMap::new(),
            compaction: None,
            cost_usd: None,
            last_stop: None,
        }
    }

    /// Describes the tools of the session's MCP servers from `manager` (their `kind` and
    /// title come from the servers' annotations).
    pub fn mcp(mut self, manager: Option<McpManager>) -> Self {
        self.mcp = manager;
        self
    }

    /// The stop of the turn's last model call; `Refusal` when a hook blocked the prompt.
    pub fn last_stop(&self) -> Option<CoreStop> {
        self.last_stop
    }

    /// The updates one event becomes (often none).
    pub fn map(&mut self, event: &AgentEvent) -> Vec<SessionUpdate> {
        let mut out = Vec::new();
        self.map_each(event, |update| out.push(update));
        out
    }

    /// Hands `emit` the updates one event becomes (often none), in order, without a `Vec`
    /// (the streamed deltas are the events of almost every turn), and says whether the
    /// event's kind is shown on ACP at all.
    pub fn map_each(
        &mut self,
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
                let shown = tools::scrubbed_args(args).into_owned();
                self.calls.insert(id.clone(), (name.clone(), shown));
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
            AgentEvent::ToolBlocked { id, block, .. } => {
                // Shown with the call's result, which follows.
                self.blocks.entry(id.clone()).or_default().push(block.clone());
            }
            AgentEvent::ToolResult {
                id,
                name,
                status,
                content,
                ..
            } => {
                let ok = *status == ToolStatus::Ok;
                let args = self.calls.get(id).map(|(_, args)| args);
                let mut content = result_content(name, args, ok, content, &self.cwd);
                let blocks = self.blocks.remove(id).unwrap_or_default();
                for block in &blocks {
                    content.push(text_block(block_text(block)).into());
                }
                self.children.remove(id);
                let status = match ok {
                    true => ToolCallStatus::Completed,
                    false => ToolCallStatus::Failed,
                };
                let mut update = ToolCallUpdate::new(
                    id.clone(),
                    ToolCallUpdateFields::new().status(status).content(content),
                );
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
            AgentEvent::Usage { cumulative, .. } => {
                // Its cost goes out with the next `usage_update` (after `ContextUsage`).
                if cumulative.cost_usd.is_some() {
                    self.cost_usd = cumulative.cost_usd;
                }
                return Coverage::NotShown;
            }
            AgentEvent::ContextUsage { used, window, .. } => {
                let cost = self.cost_usd.map(|usd| Cost::new(usd, "USD"));
                emit(SessionUpdate::UsageUpdate(
                    UsageUpdate::new(*used, *window).cost(cost),
                ));
            }
            AgentEvent::CompactionStarted { reason } => {
                self.compaction = Some(*reason);
                emit(thought(format!(
                    "\nCompacting the context ({})…\n",
                    reason.as_str()
                )));
            }
            AgentEvent::CompactionFinished { before, after, .. } => {
                let reason = self.compaction.take().unwrap_or(CompactionReason::Auto);
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
                emit(SessionUpdate::ToolCallUpdate(
                    ToolCallUpdate::new(
                        call_id.clone(),
                        ToolCallUpdateFields::new()
                            .content(vec![text_block(child.render()).into()]),
                    )
                    .meta(meta::meta("subagent", subagent)),
                ));
                self.children.insert(call_id.clone(), child);
            }
            AgentEvent::Subagent { call_id, event, .. } => {
                let mcp = self.mcp.as_ref();
                if let Some(child) = self.children.get_mut(call_id) {
                    if child.event(event.innermost(), mcp) {
                        emit(progress(call_id, child));
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
                    emit(progress(call_id, child));
                }
            }
            // The prompt's stop reason ([`turn_end`]).
            AgentEvent::TurnEnded { stop, .. } => self.last_stop = Some(*stop),
            // The client sent the prompt itself; the turn's framing, request attempts and
            // the streamed arguments of a call have no ACP form (the call is announced whole
            // by `ToolCall`); the assistant's message was streamed as chunks.
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
            // Permission prompts reach the client as `session/request_permission` requests
            // (the session's approver), not as updates.
            | AgentEvent::PermissionRequested(_)
            | AgentEvent::PermissionDecided { .. }
            // A fatal error and the end of the run are the prompt's response (the turn's
            // outcome, see the handlers); recoverable errors are only logged.
            | AgentEvent::Error { .. }
            | AgentEvent::RunFinished { .. } => return Coverage::NotShown,
            other => return Coverage::unknown(other),
        }
        Coverage::Shown
    }

    fn hook_decided(
        &mut self,
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
                // The prompt never entered the transcript: ACP's `refusal`.
                self.last_stop = Some(CoreStop::Refusal);
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

fn thought(text: String) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(ContentChunk::new(text_block(text)))
}

/// The progress of the sub-agent `call_id` runs.
fn progress(call_id: &str, child: &ChildProgress) -> SessionUpdate {
    update(
        call_id,
        ToolCallUpdateFields::new().content(vec![text_block(child.render()).into()]),
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
fn thousands(n: u64) -> String {
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

/// How a prompt turn ends on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEnd {
    /// `session/prompt` answers with this stop reason.
    Stop(StopReason),
    /// `session/prompt` answers with an internal error carrying this message.
    Failed(String),
}

/// The stop reason of a finished run: `cancelled` when the client cancelled (or the run was
/// aborted), `max_tokens` / `refusal` from the last model stop, `max_turn_requests` when
/// the step limit ended it, another error as a failure, else `end_turn`.
pub fn turn_end(
    status: RunStatus,
    last_stop: Option<CoreStop>,
    error: Option<(ErrorCode, &str)>,
    cancel_requested: bool,
) -> TurnEnd {
    if cancel_requested || status == RunStatus::Aborted {
        return TurnEnd::Stop(StopReason::Cancelled);
    }
    match (status, error) {
        (RunStatus::Error, Some((ErrorCode::MaxSteps, _))) => {
            TurnEnd::Stop(StopReason::MaxTurnRequests)
        }
        (RunStatus::Error, Some((_, message))) => TurnEnd::Failed(message.to_string()),
        (RunStatus::Error, None) => TurnEnd::Failed("the agent run failed".to_string()),
        _ => TurnEnd::Stop(match last_stop {
            Some(CoreStop::Length) => StopReason::MaxTokens,
            Some(CoreStop::Refusal) => StopReason::Refusal,
            _ => StopReason::EndTurn,
        }),
    }
}

#[cfg(test)]
mod tests;
