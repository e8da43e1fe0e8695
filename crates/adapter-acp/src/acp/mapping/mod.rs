//! The pure part of the ACP front end: [`AgentEvent`]s of a prompt turn become ACP
//! [`SessionUpdate`]s ([`TurnMapper`]), a finished run becomes a [`StopReason`]
//! ([`turn_end`]), a stored transcript becomes the updates that replay it and an ACP prompt
//! becomes a [`UserInput`](agent_core::UserInput) ([`history`]); [`tools`] describes tool
//! calls for editors.

pub mod history;
pub mod tools;

use std::collections::HashMap;
use std::path::PathBuf;

use agent_client_protocol::v1::schema::{
    ContentChunk, SessionUpdate, StopReason, ToolCallStatus, ToolCallUpdateFields, UsageUpdate,
};
use agent_core::{
    AgentEvent, ErrorCode, ProgressStream, RunStatus, StopReason as CoreStop, ToolStatus,
};
use serde_json::Value;

pub use history::{prompt_input, replay, PromptError};
pub use tools::{
    content_block, permission_tool_call, plan_update, tool_call, tool_kind, tool_locations,
    tool_preview, tool_title,
};

use crate::coverage::Coverage;
use tools::{result_content, text_block, update};

/// Maps the events of one prompt turn to session updates. It remembers each call's name
/// and arguments (for the content of its result) and the last model stop (for the turn's
/// stop reason).
#[derive(Debug, Clone)]
pub struct TurnMapper {
    cwd: PathBuf,
    context_window: u64,
    calls: HashMap<String, (String, Value)>,
    last_stop: Option<CoreStop>,
}

impl TurnMapper {
    /// A mapper for a session working in `cwd` on a model with `context_window` tokens.
    pub fn new(cwd: impl Into<PathBuf>, context_window: u64) -> Self {
        Self {
            cwd: cwd.into(),
            context_window,
            calls: HashMap::new(),
            last_stop: None,
        }
    }

    /// The stop of the turn's last model call.
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
                    emit(SessionUpdate::AgentThoughtChunk(ContentChunk::new(
                        text_block(delta.clone()),
                    )));
                }
            }
            AgentEvent::ToolCall {
                id,
                name,
                args,
                raw_args,
                ..
            } => {
                self.calls.insert(id.clone(), (name.clone(), args.clone()));
                emit(SessionUpdate::ToolCall(tools::tool_call(
                    id,
                    name,
                    args,
                    raw_args.as_deref(),
                    &self.cwd,
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
            AgentEvent::ToolResult {
                id,
                name,
                status,
                content,
                ..
            } => {
                let ok = *status == ToolStatus::Ok;
                let args = self.calls.get(id).map(|(_, args)| args);
                let content = result_content(name, args, ok, content, &self.cwd);
                let status = match ok {
                    true => ToolCallStatus::Completed,
                    false => ToolCallStatus::Failed,
                };
                emit(update(
                    id,
                    ToolCallUpdateFields::new().status(status).content(content),
                ));
            }
            AgentEvent::Usage { turn, .. } => emit(SessionUpdate::UsageUpdate(UsageUpdate::new(
                turn.total_tokens(),
                self.context_window,
            ))),
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
            // ACP has no compaction event. The context events (issue 20: `usage_update`, a
            // note for a compaction inside a prompt) are mapped by a later task.
            | AgentEvent::CompactionFinished { .. }
            | AgentEvent::CompactionStarted { .. }
            | AgentEvent::ContextUsage { .. }
            // ACP has no sandbox status or hook decisions; what a block or a hook refused
            // shows in the call's failed `tool_call_update` (its `ToolResult`).
            | AgentEvent::SandboxReport(_)
            | AgentEvent::HookDecided { .. }
            | AgentEvent::ToolBlocked { .. }
            | AgentEvent::SubagentStarted { .. }
            | AgentEvent::Subagent { .. }
            | AgentEvent::SubagentFinished { .. }
            // A fatal error and the end of the run are the prompt's response (the turn's
            // outcome, see the handlers); recoverable errors are only logged.
            | AgentEvent::Error { .. }
            | AgentEvent::RunFinished { .. } => return Coverage::NotShown,
            other => return Coverage::unknown(other),
        }
        Coverage::Shown
    }
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
        ContentBlock, PlanItem, PlanStatus, ProgressStream, SideEffect, ToolStatus, Usage,
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
        let mut m = TurnMapper::new(cwd(), 1000);
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
        let (mut a, mut b) = (TurnMapper::new(cwd(), 1000), TurnMapper::new(cwd(), 1000));
        for event in &events {
            let mut each = Vec::new();
            a.map_each(event, |update| each.push(wire(&update)));
            let all: Vec<Value> = b.map(event).iter().map(wire).collect();
            assert_eq!(each, all, "{event:?}");
        }
    }

    #[test]
    fn edit_call_has_kind_location_and_diff_through_its_life() {
        let mut m = TurnMapper::new(cwd(), 1000);
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
        let mut m = TurnMapper::new(cwd(), 1000);
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
        let mut m = TurnMapper::new(cwd(), 1000);
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
        let mut m = TurnMapper::new(cwd(), 128_000);
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
        let turn = Usage {
            input: 100,
            output: 20,
            ..Default::default()
        };
        let usage = m.map(&AgentEvent::Usage {
            turn,
            cumulative: turn,
        });
        let v = wire(&usage[0]);
        assert_eq!(v["sessionUpdate"], "usage_update");
        assert_eq!(v["used"], json!(turn.total_tokens()));
        assert_eq!(v["size"], 128_000);
    }

    #[test]
    fn stop_reasons() {
        let mut m = TurnMapper::new(cwd(), 1);
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

    #[test]
    fn every_agent_event_is_mapped_or_listed_as_not_shown() {
        let mut shown = Vec::new();
        for event in every_event() {
            let mut m = TurnMapper::new(cwd(), 1000);
            let mut updates = 0;
            match m.map_each(&event, |_| updates += 1) {
                Coverage::Unknown => panic!("the ACP mapping does not know {event:?}"),
                Coverage::NotShown => assert_eq!(updates, 0, "{event:?} is not shown"),
                Coverage::Shown => shown.push(event),
            }
        }
        // Every shown sample (each carries content) becomes an update, except the stop of
        // a model call, which becomes the prompt's stop reason.
        for event in &shown {
            let mut m = TurnMapper::new(cwd(), 1000);
            let updates = m.map(event);
            match event {
                AgentEvent::TurnEnded { .. } => assert!(m.last_stop().is_some()),
                _ => assert!(!updates.is_empty(), "{event:?} maps to nothing"),
            }
        }
        assert!(shown.len() >= 9, "{shown:?}");
    }
}
