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
    event::{CompactionReason, ErrorCode, StopReason as CoreStop, ToolStatus},
    hooks::{HookEvent, HookOutcome},
    permission::Block,
    sandbox::SandboxReport,
    tool::ProgressStream,
    AgentEvent, RunStatus,
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
mod tests {
    use super::*;
    use agent_core::testing::one_of_each as every_event;
    use agent_core::{
        tool::{PlanItem, PlanStatus},
        ContentBlock, SideEffect, Usage,
    };
    use serde_json::json;

    fn wire(update: &SessionUpdate) -> Value {
        serde_json::to_value(update).unwrap_or_default()
    }

    fn cwd() -> PathBuf {
        PathBuf::from("/work/ws")
    }

    #[test]
    fn text_and_thought_stream_as_chunks() {
        let mut m = TurnMapper::new(cwd());
        let text = m.map(&AgentEvent::TextDelta {
            delta: "Hello".into(),
        });
        assert_eq!(
            wire(&text[0]),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hello"}})
        );
        let thought = m.map(&AgentEvent::ReasoningDelta {
            delta: "hmm".into(),
        });
        assert_eq!(
            wire(&thought[0]),
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}})
        );
        assert!(m
            .map(&AgentEvent::TextDelta {
                delta: String::new()
            })
            .is_empty());
        assert!(m.map(&AgentEvent::AssistantStarted).is_empty());
    }

    #[test]
    fn map_each_hands_over_what_map_returns() {
        let events = [
            AgentEvent::TextDelta {
                delta: "Hello".into(),
            },
            AgentEvent::ReasoningDelta {
                delta: "hmm".into(),
            },
            AgentEvent::TextDelta {
                delta: String::new(),
            },
            AgentEvent::AssistantStarted,
            AgentEvent::ToolExecutionStarted {
                id: "c1".into(),
                name: "read_file".into(),
            },
        ];
        let (mut a, mut b) = (TurnMapper::new(cwd()), TurnMapper::new(cwd()));
        for event in &events {
            let mut each = Vec::new();
            a.map_each(event, |update| each.push(wire(&update)));
            let all: Vec<Value> = b.map(event).iter().map(wire).collect();
            assert_eq!(each, all, "{event:?}");
        }
    }

    #[test]
    fn edit_call_has_kind_location_and_diff_through_its_life() {
        let mut m = TurnMapper::new(cwd());
        let args = json!({"path": "src/a.rs", "old_string": "x = 1", "new_string": "x = 2"});
        let call = m.map(&AgentEvent::ToolCall {
            id: "c1".into(),
            name: "edit_file".into(),
            args: args.clone(),
            raw_args: None,
            side_effect: Some(SideEffect::Write),
        });
        let v = wire(&call[0]);
        assert_eq!(v["sessionUpdate"], "tool_call");
        assert_eq!(v["toolCallId"], "c1");
        assert_eq!(v["kind"], "edit");
        assert_eq!(v["title"], "Edit src/a.rs");
        // `pending` is the schema's default, which it leaves out.
        assert!(matches!(v.get("status"), None | Some(Value::String(_))));
        assert_ne!(v["status"], "in_progress");
        assert_eq!(v["locations"], json!([{"path": "/work/ws/src/a.rs"}]));
        assert_eq!(
            v["content"],
            json!([{"type": "diff", "path": "/work/ws/src/a.rs", "oldText": "x = 1", "newText": "x = 2"}])
        );
        assert_eq!(v["rawInput"], args);

        let started = m.map(&AgentEvent::ToolExecutionStarted {
            id: "c1".into(),
            name: "edit_file".into(),
        });
        assert_eq!(
            wire(&started[0]),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress"})
        );

        let done = m.map(&AgentEvent::ToolResult {
            id: "c1".into(),
            name: "edit_file".into(),
            status: ToolStatus::Ok,
            content: vec![ContentBlock::text("edited")],
            truncated: false,
            redacted: false,
            changed_files: vec!["src/a.rs".into()],
            duration_ms: 3,
        });
        let v = wire(&done[0]);
        assert_eq!(v["status"], "completed");
        assert_eq!(v["content"][0]["type"], "diff");
        assert_eq!(
            v["content"][1],
            json!({"type": "content", "content": {"type": "text", "text": "edited"}})
        );
    }

    #[test]
    fn failed_call_and_write_and_bash() {
        let mut m = TurnMapper::new(cwd());
        let write = m.map(&AgentEvent::ToolCall {
            id: "w".into(),
            name: "write_file".into(),
            args: json!({"path": "/abs/new.txt", "content": "hi\n"}),
            raw_args: None,
            side_effect: Some(SideEffect::Write),
        });
        let v = wire(&write[0]);
        assert_eq!(
            v["content"],
            json!([{"type": "diff", "path": "/abs/new.txt", "newText": "hi\n"}])
        );
        let bash = m.map(&AgentEvent::ToolCall {
            id: "b".into(),
            name: "bash".into(),
            args: json!({"command": "echo hi"}),
            raw_args: None,
            side_effect: Some(SideEffect::Shell),
        });
        let v = wire(&bash[0]);
        assert_eq!(v["kind"], "execute");
        assert_eq!(v["title"], "`echo hi`");
        assert!(v.get("locations").is_none() || v["locations"] == json!([]));
        let progress = m.map(&AgentEvent::ToolProgress {
            id: "b".into(),
            stream: ProgressStream::Stdout,
            text: "hi\n".into(),
        });
        assert_eq!(wire(&progress[0])["content"][0]["content"]["text"], "hi\n");
        let failed = m.map(&AgentEvent::ToolResult {
            id: "b".into(),
            name: "bash".into(),
            status: ToolStatus::Error,
            content: vec![ContentBlock::text("Error: denied")],
            truncated: false,
            redacted: false,
            changed_files: vec![],
            duration_ms: 0,
        });
        let v = wire(&failed[0]);
        assert_eq!(v["status"], "failed");
        assert_eq!(v["content"][0]["content"]["text"], "Error: denied");
        // A failed write shows no diff.
        let failed_write = m.map(&AgentEvent::ToolResult {
            id: "w".into(),
            name: "write_file".into(),
            status: ToolStatus::Error,
            content: vec![ContentBlock::text("Error: no")],
            truncated: false,
            redacted: false,
            changed_files: vec![],
            duration_ms: 0,
        });
        assert_eq!(wire(&failed_write[0])["content"][0]["type"], "content");
    }

    #[test]
    fn invalid_args_are_passed_raw() {
        let mut m = TurnMapper::new(cwd());
        let call = m.map(&AgentEvent::ToolCall {
            id: "x".into(),
            name: "grep".into(),
            args: Value::Null,
            raw_args: Some("{oops".into()),
            side_effect: None,
        });
        let v = wire(&call[0]);
        assert_eq!(v["rawInput"], json!({"raw": "{oops"}));
        assert_eq!(v["kind"], "search");
        assert_eq!(v["title"], "Search");
    }

    #[test]
    fn plan_and_usage() {
        let mut m = TurnMapper::new(cwd());
        let plan = m.map(&AgentEvent::PlanUpdated {
            id: None,
            explanation: None,
            plan: vec![
                PlanItem {
                    step: "read".into(),
                    status: PlanStatus::Completed,
                },
                PlanItem {
                    step: "write".into(),
                    status: PlanStatus::InProgress,
                },
            ],
        });
        assert_eq!(
            wire(&plan[0]),
            json!({"sessionUpdate": "plan", "entries": [
                {"content": "read", "priority": "medium", "status": "completed"},
                {"content": "write", "priority": "medium", "status": "in_progress"}
            ]})
        );
        // A call's usage carries the cost; the context usage after it is the update.
        let turn = Usage {
            input: 100,
            output: 20,
            cost_usd: Some(0.25),
            ..Default::default()
        };
        assert!(m
            .map(&AgentEvent::Usage {
                turn,
                cumulative: turn,
            })
            .is_empty());
        let usage = m.map(&AgentEvent::ContextUsage {
            used: 120,
            window: 128_000,
            percent: 0.1,
        });
        assert_eq!(
            wire(&usage[0]),
            json!({"sessionUpdate": "usage_update", "used": 120, "size": 128_000,
                   "cost": {"amount": 0.25, "currency": "USD"}})
        );
        // No price known: no cost.
        let mut m = TurnMapper::new(cwd());
        let usage = m.map(&AgentEvent::ContextUsage {
            used: 5,
            window: 10,
            percent: 50.0,
        });
        assert!(wire(&usage[0]).get("cost").is_none());
    }

    #[test]
    fn stop_reasons() {
        let mut m = TurnMapper::new(cwd());
        assert!(m
            .map(&AgentEvent::TurnEnded {
                step: 1,
                stop: CoreStop::Length,
                error: None
            })
            .is_empty());
        assert_eq!(m.last_stop(), Some(CoreStop::Length));
        let end = |status, stop, error, cancel| turn_end(status, stop, error, cancel);
        assert_eq!(
            end(RunStatus::Success, Some(CoreStop::End), None, false),
            TurnEnd::Stop(StopReason::EndTurn)
        );
        assert_eq!(
            end(RunStatus::Success, Some(CoreStop::Length), None, false),
            TurnEnd::Stop(StopReason::MaxTokens)
        );
        assert_eq!(
            end(RunStatus::Success, Some(CoreStop::Refusal), None, false),
            TurnEnd::Stop(StopReason::Refusal)
        );
        assert_eq!(
            end(
                RunStatus::Error,
                Some(CoreStop::ToolUse),
                Some((ErrorCode::MaxSteps, "limit")),
                false
            ),
            TurnEnd::Stop(StopReason::MaxTurnRequests)
        );
        assert_eq!(
            end(RunStatus::Aborted, None, None, false),
            TurnEnd::Stop(StopReason::Cancelled)
        );
        // A cancel that raced the end of the run still reports cancelled.
        assert_eq!(
            end(RunStatus::Success, Some(CoreStop::End), None, true),
            TurnEnd::Stop(StopReason::Cancelled)
        );
        assert_eq!(
            end(
                RunStatus::Error,
                None,
                Some((ErrorCode::Provider, "HTTP 500")),
                false
            ),
            TurnEnd::Failed("HTTP 500".into())
        );
    }

    fn result(id: &str, name: &str, status: ToolStatus, text: &str) -> AgentEvent {
        AgentEvent::ToolResult {
            id: id.into(),
            name: name.into(),
            status,
            content: vec![ContentBlock::text(text)],
            truncated: false,
            redacted: false,
            changed_files: vec![],
            duration_ms: 1,
        }
    }

    fn hook(event: HookEvent, outcome: HookOutcome, call_id: Option<&str>) -> AgentEvent {
        AgentEvent::HookDecided {
            hook: "guard".into(),
            event,
            outcome,
            reason: Some("not here".into()),
            call_id: call_id.map(str::to_string),
        }
    }

    #[test]
    fn hook_decisions_fail_the_call_or_refuse_the_prompt() {
        let mut m = TurnMapper::new(cwd());
        let denied = m.map(&hook(HookEvent::BeforeTool, HookOutcome::Deny, Some("c1")));
        assert_eq!(
            wire(&denied[0]),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "failed",
                   "content": [{"type": "content",
                                "content": {"type": "text", "text": "Blocked by hook \"guard\": not here"}}],
                   "_meta": {"hook": {"name": "guard", "event": "before_tool",
                                      "outcome": "deny", "reason": "not here"}}})
        );
        // Decisions that do not refuse the call only annotate it.
        let appended = m.map(&hook(HookEvent::AfterTool, HookOutcome::Append, Some("c1")));
        let v = wire(&appended[0]);
        assert!(
            v.get("status").is_none() && v.get("content").is_none(),
            "{v}"
        );
        assert_eq!(v["_meta"]["hook"]["outcome"], "append");
        // A stop hook's continuation is a thought.
        let go_on = m.map(&hook(HookEvent::Stop, HookOutcome::Continue, None));
        assert_eq!(wire(&go_on[0])["sessionUpdate"], "agent_thought_chunk");
        assert!(wire(&go_on[0])["content"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Hook \"guard\" (stop): continue: not here")));
        assert_eq!(m.last_stop(), None);
        // A blocked prompt says why and ends as a refusal.
        let blocked = m.map(&hook(HookEvent::UserPrompt, HookOutcome::Block, None));
        assert_eq!(
            wire(&blocked[0]),
            json!({"sessionUpdate": "agent_message_chunk",
                   "content": {"type": "text", "text": "The prompt was blocked by hook \"guard\": not here"}})
        );
        assert_eq!(
            turn_end(RunStatus::Success, m.last_stop(), None, false),
            TurnEnd::Stop(StopReason::Refusal)
        );
    }

    #[test]
    fn a_sandbox_block_is_part_of_the_calls_result() {
        let mut m = TurnMapper::new(cwd());
        let block = Block {
            code: agent_core::permission::BlockCode::Sandbox,
            tool_name: Some("bash".into()),
            action: agent_core::permission::PermissionAction::Deny,
            risk: Default::default(),
            path: Some("/etc/x".into()),
            reason: "the sandbox refused a write outside the workspace".into(),
            recoverable: true,
        };
        assert!(m
            .map(&AgentEvent::ToolBlocked {
                id: "b".into(),
                name: "bash".into(),
                block,
            })
            .is_empty());
        let done = m.map(&result("b", "bash", ToolStatus::Error, "Permission denied"));
        let v = wire(&done[0]);
        assert_eq!(v["status"], "failed");
        assert_eq!(v["content"][0]["content"]["text"], "Permission denied");
        assert_eq!(
            v["content"][1]["content"]["text"],
            "Blocked by the sandbox (sandbox): the sandbox refused a write outside the \
             workspace [/etc/x]"
        );
        assert_eq!(v["_meta"]["block"]["code"], "sandbox");
        assert_eq!(v["_meta"]["block"]["path"], "/etc/x");
        // The next call of the same id starts clean.
        let again = m.map(&result("b", "bash", ToolStatus::Ok, "ok"));
        assert!(wire(&again[0]).get("_meta").is_none());
    }

    #[test]
    fn a_weaker_sandbox_is_a_thought() {
        let mut m = TurnMapper::new(cwd());
        let policy = agent_core::sandbox::SandboxPolicy::workspace_write();
        let unsupported = agent_core::sandbox::SandboxSupport::unavailable("no Landlock");
        let weak = SandboxReport::new(&policy, Some(&unsupported));
        let updates = m.map(&AgentEvent::SandboxReport(weak.clone()));
        assert_eq!(wire(&updates[0])["sessionUpdate"], "agent_thought_chunk");
        assert!(wire(&updates[0])["content"]["text"]
            .as_str()
            .is_some_and(|t| t.contains(&weak.summary())));
        // No tool runs commands: nothing to confine, nothing to say.
        assert!(m
            .map(&AgentEvent::SandboxReport(SandboxReport::new(
                &policy, None
            )))
            .is_empty());
        let off = agent_core::sandbox::SandboxPolicy::off();
        assert!(m
            .map(&AgentEvent::SandboxReport(SandboxReport::new(&off, None)))
            .is_empty());
    }

    #[test]
    fn compaction_inside_a_prompt_is_a_thought() {
        let mut m = TurnMapper::new(cwd());
        let started = m.map(&AgentEvent::CompactionStarted {
            reason: CompactionReason::Overflow,
        });
        assert!(wire(&started[0])["content"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Compacting the context (overflow)")));
        let done = m.map(&AgentEvent::CompactionFinished {
            summary: "s".into(),
            before: 170_000,
            after: 2_100,
        });
        assert_eq!(
            wire(&done[0]),
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text",
                   "text": "Context compacted (overflow): 170 000 → 2 100 tokens.\n"}})
        );
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1 000");
        assert_eq!(thousands(1_234_567), "1 234 567");
    }

    #[test]
    fn a_subagent_runs_as_the_progress_of_its_call() {
        let mut m = TurnMapper::new(cwd());
        let call = m.map(&AgentEvent::ToolCall {
            id: "t".into(),
            name: "Task".into(),
            args: json!({"name": "explorer", "description": "find the tests", "prompt": "go"}),
            raw_args: None,
            side_effect: Some(SideEffect::None),
        });
        let v = wire(&call[0]);
        assert_eq!(v["kind"], "think");
        assert_eq!(v["title"], "explorer: find the tests");
        let started = m.map(&AgentEvent::SubagentStarted {
            task_id: "task_1".into(),
            name: "explorer".into(),
            call_id: "t".into(),
            description: Some("find the tests".into()),
            model: "m".into(),
            background: false,
            parent_session_id: None,
            depth: 1,
        });
        let v = wire(&started[0]);
        assert_eq!(v["toolCallId"], "t");
        assert_eq!(v["_meta"]["subagent"]["taskId"], "task_1");
        assert_eq!(
            v["content"][0]["content"]["text"],
            "explorer: find the tests (m)\n"
        );
        let wrap = |event: AgentEvent| AgentEvent::Subagent {
            task_id: "task_1".into(),
            name: "explorer".into(),
            call_id: "t".into(),
            event: Box::new(event),
        };
        // The child's own usage and context are not the session's.
        assert!(m
            .map(&wrap(AgentEvent::ContextUsage {
                used: 1,
                window: 2,
                percent: 50.0
            }))
            .is_empty());
        assert!(m
            .map(&wrap(AgentEvent::TextDelta {
                delta: "Looking.".into()
            }))
            .is_empty());
        let call = m.map(&wrap(AgentEvent::ToolCall {
            id: "k".into(),
            name: "read_file".into(),
            args: json!({"path": "a.rs"}),
            raw_args: None,
            side_effect: None,
        }));
        assert_eq!(
            wire(&call[0])["content"][0]["content"]["text"],
            "explorer: find the tests (m)\nLooking.\n→ Read a.rs\n"
        );
        // A grandchild's events are unwrapped to the innermost.
        let nested = m.map(&wrap(wrap(result("k", "read_file", ToolStatus::Ok, "x"))));
        assert!(wire(&nested[0])["content"][0]["content"]["text"]
            .as_str()
            .is_some_and(|t| t.ends_with("  ✓ read_file\n")));
        let finished = m.map(&AgentEvent::SubagentFinished {
            task_id: "task_1".into(),
            name: "explorer".into(),
            call_id: "t".into(),
            status: RunStatus::Success,
            final_text: Some("Tests are in tests/.".into()),
            error: None,
            usage: Usage::default(),
            duration_ms: 5,
        });
        assert!(wire(&finished[0])["content"][0]["content"]["text"]
            .as_str()
            .is_some_and(|t| t.ends_with("✓ done: Tests are in tests/.\n")));
        let done = m.map(&result("t", "Task", ToolStatus::Ok, "Tests are in tests/."));
        let v = wire(&done[0]);
        assert_eq!(v["status"], "completed");
        assert_eq!(v["content"][0]["content"]["text"], "Tests are in tests/.");
        // Events of a child whose call is over are dropped.
        assert!(m
            .map(&wrap(result("k", "grep", ToolStatus::Ok, "x")))
            .is_empty());
    }

    #[test]
    fn every_agent_event_is_mapped_or_listed_as_not_shown() {
        // The samples in their order through one mapper (a sub-agent's events need its
        // start, a block its call).
        let mut m = TurnMapper::new(cwd());
        let mut shown = Vec::new();
        for event in every_event() {
            let mut updates = 0;
            match m.map_each(&event, |_| updates += 1) {
                Coverage::Unknown => panic!("the ACP mapping does not know {event:?}"),
                Coverage::NotShown => assert_eq!(updates, 0, "{event:?} is not shown"),
                Coverage::Shown => {
                    // Every shown sample becomes an update, except: the stop of a model
                    // call (the prompt's stop reason), a sandbox block (a line of the
                    // call's result), a full sandbox report (logged only) and a sub-agent's
                    // streamed text (sent when its message ends).
                    match &event {
                        AgentEvent::TurnEnded { .. } => assert!(m.last_stop().is_some()),
                        AgentEvent::ToolBlocked { .. }
                        | AgentEvent::SandboxReport(_)
                        | AgentEvent::Subagent { .. } => {}
                        _ => assert!(updates > 0, "{event:?} maps to nothing"),
                    }
                    shown.push(agent_core::testing::type_of(&event));
                }
            }
        }
        for kind in [
            "hook_decided",
            "tool_blocked",
            "sandbox_report",
            "subagent_started",
            "subagent",
            "subagent_finished",
            "context_usage",
            "compaction_started",
            "compaction_finished",
        ] {
            assert!(
                shown.iter().any(|k| k == kind),
                "{kind} not shown: {shown:?}"
            );
        }
        assert!(shown.len() >= 17, "{shown:?}");
    }
}
