//! Golden in-process tests of the ACP mapping: a fixed sequence of agent events becomes
//! exactly the `session/update` payloads in `tests/golden/*.jsonl` (one JSON line each, as
//! serde writes them). No binary is spawned. `UPDATE_GOLDEN=1` rewrites the files.

use adapter_acp::acp::mapping::{stop_reason, AcpMapping};
use agent_core::{AgentEvent, Message};
use agent_host::turn::Fold;
use serde_json::{json, Value};
use test_support::golden;

/// An event of the sub-agent `task_1` (started by call `t1`).
fn child(event: Value) -> Value {
    golden::subagent("task_1", "t1", event)
}

fn message(message: Message) -> Value {
    serde_json::to_value(message).expect("a message serialises")
}

/// A whole turn: reasoning and text, a usage with a price, the context, an edit and a
/// `bash` call (a hook rewrites it, the sandbox blocks it), a plan, a sub-agent with a tool
/// call of its own and a grandchild, a compaction, a stop hook's continuation and the end.
fn a_turn() -> Vec<AgentEvent> {
    let usage = golden::usage(100, 20, 0, Some(0.25));
    let block = golden::sandbox_block("bash", "medium");
    golden::events(
        [
            golden::prompt_opening("none", None, true, message(Message::user_text("fix it"))),
            golden::first_words(),
            vec![
                json!({"type": "text_delta", "delta": "edit a.rs."}),
                json!({"type": "tool_use_started", "id": "e1", "name": "edit_file"}),
                json!({"type": "tool_use_args_delta", "id": "e1", "delta": "{}"}),
                json!({"type": "tool_use_ended", "id": "e1"}),
                json!({"type": "usage", "turn": usage, "cumulative": usage}),
                json!({"type": "assistant_message",
                       "message": message(Message::assistant_text("I will edit a.rs."))}),
                json!({"type": "context_usage", "used": 120, "window": 128000, "percent": 0.1}),
                json!({"type": "tool_call", "id": "e1", "name": "edit_file",
                       "args": {"path": "src/a.rs", "old_string": "x = 1", "new_string": "x = 2"},
                       "side_effect": "write"}),
                json!({"type": "tool_call", "id": "b1", "name": "bash", "args": {"command": "make"},
                       "side_effect": "shell"}),
                json!({"type": "tool_call", "id": "t1", "name": "Task",
                       "args": {"name": "explorer", "description": "find the tests", "prompt": "go"},
                       "side_effect": "none"}),
                json!({"type": "turn_ended", "step": 1, "stop": "tool_use"}),
                json!({"type": "tool_execution_started", "id": "e1", "name": "edit_file"}),
                json!({"type": "tool_result", "id": "e1", "name": "edit_file", "status": "ok",
                       "content": [{"type": "text", "text": "edited"}], "truncated": false,
                       "redacted": false, "changed_files": ["src/a.rs"], "duration_ms": 3}),
                json!({"type": "hook_decided", "hook": "guard", "event": "before_tool",
                       "outcome": "rewrite", "reason": "normalised", "call_id": "b1"}),
                json!({"type": "tool_execution_started", "id": "b1", "name": "bash"}),
                json!({"type": "tool_progress", "id": "b1", "stream": "status", "text": "running"}),
                json!({"type": "tool_progress", "id": "b1", "stream": "stdout", "text": "cc a.c\n"}),
                json!({"type": "tool_blocked", "id": "b1", "name": "bash", "block": block}),
                json!({"type": "tool_blocked", "id": "b1", "name": "bash", "block": block}),
                json!({"type": "hook_decided", "hook": "audit", "event": "after_tool",
                       "outcome": "append", "call_id": "b1"}),
                golden::tool_result("b1", "bash", "error", "Permission denied", 9),
                json!({"type": "tool_execution_started", "id": "t1", "name": "Task"}),
                json!({"type": "subagent_started", "task_id": "task_1", "name": "explorer",
                       "call_id": "t1", "description": "find the tests", "model": "m", "depth": 1}),
                child(json!({"type": "run_started", "kind": "prompt"})),
                child(json!({"type": "text_delta", "delta": "Looking."})),
                child(json!({"type": "usage", "turn": usage, "cumulative": usage})),
                child(json!({"type": "context_usage", "used": 1, "window": 2,
                                             "percent": 50.0})),
                child(json!({"type": "assistant_message",
                       "message": message(Message::assistant_text("Looking."))})),
                child(json!({"type": "tool_call", "id": "k1", "name": "grep",
                                             "args": {"pattern": "fn test"}})),
                child(golden::tool_result("k1", "grep", "error", "Error: bad\nmore", 1)),
                child(json!({"type": "subagent_started", "task_id": "task_2",
                       "name": "reader", "call_id": "k2", "description": "read", "model": "m",
                       "depth": 2})),
                child(json!({"type": "subagent", "task_id": "task_2", "name": "reader",
                       "call_id": "k2", "event": {"type": "tool_call", "id": "g1",
                       "name": "read_file", "args": {"path": "b.rs"}}})),
                json!({"type": "subagent_finished", "task_id": "task_1", "name": "explorer",
                       "call_id": "t1", "status": "success", "final_text": "Tests are in tests/.",
                       "usage": usage, "duration_ms": 40}),
                golden::tool_result("t1", "Task", "ok", "Tests are in tests/.", 41),
                child(json!({"type": "text_delta", "delta": "late"})),
                json!({"type": "plan_updated", "id": "p", "explanation": null,
                       "plan": [{"step": "read", "status": "completed"},
                                {"step": "write", "status": "in_progress"}]}),
                json!({"type": "compaction_started", "reason": "auto"}),
                json!({"type": "usage", "turn": usage, "cumulative": {"input": 300, "output": 60,
                       "reasoning": null, "cache_read": 0, "cache_write": 0, "cost_usd": 0.75}}),
                json!({"type": "compaction_finished", "summary": "s", "before": 170000,
                       "after": 2100}),
                json!({"type": "context_usage", "used": 2100, "window": 128000, "percent": 1.6}),
                json!({"type": "turn_started", "step": 2}),
                json!({"type": "text_delta", "delta": "Done."}),
                json!({"type": "hook_decided", "hook": "judge", "event": "stop",
                       "outcome": "continue", "reason": "check the tests"}),
                json!({"type": "turn_ended", "step": 2, "stop": "length"}),
                json!({"type": "error", "code": "provider", "message": "slow", "recoverable": true}),
                json!({"type": "run_finished", "status": "success", "final_text": "Done."}),
            ],
        ]
        .concat(),
    )
}

/// A prompt a `user_prompt` hook blocked.
fn a_blocked_prompt() -> Vec<AgentEvent> {
    golden::events(
        [
            golden::blocked_prompt(),
            vec![json!({"type": "run_finished", "status": "success"})],
        ]
        .concat(),
    )
}

fn golden(name: &str, lines: &[String]) {
    golden::assert_golden(env!("CARGO_MANIFEST_DIR"), name, lines);
}

/// The updates of `events` through one mapping over its turn state, each as its JSON
/// line, then the stop.
fn lines(events: &[AgentEvent]) -> Vec<String> {
    let mut fold = Fold::new(AcpMapping::new("/work/ws"));
    let mut out = Vec::new();
    for event in events {
        for update in fold.frames(event) {
            out.push(serde_json::to_string(&update).expect("serialise"));
        }
    }
    out.push(format!("stop: {:?}", stop_reason(fold.state())));
    out
}

#[test]
fn a_whole_turn_maps_to_these_updates() {
    golden("acp_turn", &lines(&a_turn()));
}

#[test]
fn a_blocked_prompt_maps_to_these_updates() {
    golden("acp_blocked", &lines(&a_blocked_prompt()));
}
