//! The ACP mapping's unit tests: events through [`AcpMapping`] over a turn state.

use std::path::PathBuf;

use agent_client_protocol::v1::schema::{SessionUpdate, StopReason};
use agent_core::{
    event::{CompactionReason, ErrorCode, StopReason as CoreStop, ToolStatus},
    hooks::{HookEvent, HookOutcome},
    permission::Block,
    sandbox::SandboxReport,
    tool::{PlanItem, PlanStatus, ProgressStream},
    AgentEvent, ContentBlock, RunStatus, SideEffect, Usage,
};
use agent_host::turn::coverage::assert_covers;
use agent_host::turn::{Coverage, Fold};
use serde_json::{json, Value};

use super::turn::thousands;
use super::*;

/// The mapping over its own turn state, as the session's turn driver feeds it.
struct Mapper(Fold<AcpMapping>);

impl Mapper {
    fn new(cwd: PathBuf) -> Self {
        Self(Fold::new(AcpMapping::new(cwd)))
    }

    fn map(&mut self, event: &AgentEvent) -> Vec<SessionUpdate> {
        self.0.frames(event)
    }

    fn map_each(&mut self, event: &AgentEvent, emit: impl FnMut(SessionUpdate)) -> Coverage {
        self.0.feed(event, emit)
    }

    fn last_stop(&self) -> Option<CoreStop> {
        stop_reason(self.0.state())
    }
}

fn wire(update: &SessionUpdate) -> Value {
    serde_json::to_value(update).unwrap_or_default()
}

fn cwd() -> PathBuf {
    PathBuf::from("/work/ws")
}

#[test]
fn text_and_thought_stream_as_chunks() {
    let mut m = Mapper::new(cwd());
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
    let (mut a, mut b) = (Mapper::new(cwd()), Mapper::new(cwd()));
    for event in &events {
        let mut each = Vec::new();
        a.map_each(event, |update| each.push(wire(&update)));
        let all: Vec<Value> = b.map(event).iter().map(wire).collect();
        assert_eq!(each, all, "{event:?}");
    }
}

#[test]
fn edit_call_has_kind_location_and_diff_through_its_life() {
    let mut m = Mapper::new(cwd());
    let args = json!({"path": "src/a.rs", "old_string": "x = 1", "new_string": "x = 2"});
    let call = m.map(&call_event(
        "c1",
        "edit_file",
        args.clone(),
        Some(SideEffect::Write),
    ));
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
    let mut m = Mapper::new(cwd());
    let write = m.map(&call_event(
        "w",
        "write_file",
        json!({"path": "/abs/new.txt", "content": "hi\n"}),
        Some(SideEffect::Write),
    ));
    let v = wire(&write[0]);
    assert_eq!(
        v["content"],
        json!([{"type": "diff", "path": "/abs/new.txt", "newText": "hi\n"}])
    );
    let bash = m.map(&call_event(
        "b",
        "bash",
        json!({"command": "echo hi"}),
        Some(SideEffect::Shell),
    ));
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
    let failed = m.map(&result("b", "bash", ToolStatus::Error, "Error: denied"));
    let v = wire(&failed[0]);
    assert_eq!(v["status"], "failed");
    assert_eq!(v["content"][0]["content"]["text"], "Error: denied");
    // A failed write shows no diff.
    let failed_write = m.map(&result("w", "write_file", ToolStatus::Error, "Error: no"));
    assert_eq!(wire(&failed_write[0])["content"][0]["type"], "content");
}

#[test]
fn invalid_args_are_passed_raw() {
    let mut m = Mapper::new(cwd());
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
    let mut m = Mapper::new(cwd());
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
    let mut m = Mapper::new(cwd());
    let usage = m.map(&AgentEvent::ContextUsage {
        used: 5,
        window: 10,
        percent: 50.0,
    });
    assert!(wire(&usage[0]).get("cost").is_none());
}

#[test]
fn stop_reasons() {
    let mut m = Mapper::new(cwd());
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

fn call_event(id: &str, name: &str, args: Value, side_effect: Option<SideEffect>) -> AgentEvent {
    AgentEvent::ToolCall {
        id: id.into(),
        name: name.into(),
        args,
        raw_args: None,
        side_effect,
    }
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
    let mut m = Mapper::new(cwd());
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
    let mut m = Mapper::new(cwd());
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
    let mut m = Mapper::new(cwd());
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
    let mut m = Mapper::new(cwd());
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
    let mut m = Mapper::new(cwd());
    let call = m.map(&call_event(
        "t",
        "Task",
        json!({"name": "explorer", "description": "find the tests", "prompt": "go"}),
        Some(SideEffect::None),
    ));
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
    let call = m.map(&wrap(call_event(
        "k",
        "read_file",
        json!({"path": "a.rs"}),
        None,
    )));
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
    // The samples in their order through one mapping (a sub-agent's events need its start,
    // a block its call), by the one harness.
    let report = assert_covers(AcpMapping::new(cwd()));
    for entry in &report.entries {
        // Every shown sample becomes an update, except: the stop of a model call (the
        // prompt's stop reason), a sandbox block (a line of the call's result), a full
        // sandbox report (logged only) and a sub-agent's streamed text (sent when its
        // message ends).
        if entry.coverage == Coverage::Shown {
            assert!(
                entry.frames > 0
                    || ["turn_ended", "tool_blocked", "sandbox_report", "subagent"]
                        .contains(&entry.kind.as_str()),
                "{} maps to nothing",
                entry.kind
            );
        }
    }
    let shown = report.shown();
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
        "turn_ended",
    ] {
        assert!(shown.contains(&kind), "{kind} not shown: {shown:?}");
    }
    assert!(shown.len() >= 17, "{shown:?}");
}
