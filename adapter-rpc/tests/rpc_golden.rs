//! Golden in-process tests of the RPC mapping: a fixed sequence of agent events becomes
//! exactly the event frames in `tests/golden/*.jsonl` (one JSON line each, as the server
//! serialises them), through [`RpcMapping`] over the turn's state, as the session's turn
//! feeds it. No binary is spawned. `UPDATE_GOLDEN=1` rewrites the files.

use adapter_rpc::processor::{RpcMapping, SharedMeter, UsageMeter};
use adapter_rpc::wire::FrameRef;
use agent_core::AgentEvent;
use agent_host::turn::Fold;
use serde_json::{json, Value};
use test_support::golden;

/// An event of the sub-agent `task_1` (started by call `t1`).
fn child(event: Value) -> Value {
    golden::subagent("task_1", "t1", event)
}

/// A transcript message at a fixed time.
fn message(role: &str, text: &str) -> Value {
    json!({"role": role, "content": [{"type": "text", "text": text}],
           "time": "2026-04-19T11:30:00.123456789Z"})
}

/// A whole prompt: framing, reasoning and text, streamed tool arguments, usage, a plan, a
/// `bash` call a hook rewrites and the sandbox blocks (twice), a sub-agent with a tool call
/// of its own and a grandchild, a compaction inside the prompt, a recovery, an aborted
/// model call's end, a recoverable error and the end.
fn a_prompt() -> Vec<AgentEvent> {
    let usage = golden::usage(100, 20, 30, Some(0.25));
    let block = golden::sandbox_block("bash", "medium");
    golden::events(
        [
            golden::prompt_opening("none", None, true, message("user", "fix <it> & go")),
            vec![
                golden::request_started(),
                json!({"type": "retry_scheduled", "scope": "provider", "attempt": 1,
                       "max_attempts": 6, "delay_ms": 250}),
                json!({"type": "assistant_started"}),
                json!({"type": "reasoning_delta", "delta": "Look first."}),
                json!({"type": "text_delta", "delta": "I will\u{2028}"}),
                json!({"type": "text_delta", "delta": "edit a.rs."}),
                json!({"type": "tool_use_started", "id": "b1", "name": "bash"}),
                json!({"type": "tool_use_args_delta", "id": "b1", "delta": "{\"command\":"}),
                json!({"type": "tool_use_args_delta", "id": "b1", "delta": "\"make\"}"}),
                json!({"type": "tool_use_ended", "id": "b1"}),
                json!({"type": "usage", "turn": usage, "cumulative": usage}),
                json!({"type": "assistant_message", "message": message("assistant", "I will edit a.rs.")}),
                json!({"type": "context_usage", "used": 120, "window": 128000, "percent": 0.1}),
                json!({"type": "tool_call", "id": "b1", "name": "bash", "args": {"command": "make"},
                       "side_effect": "shell"}),
                json!({"type": "tool_call", "id": "t1", "name": "Task",
                       "args": {"name": "explorer", "description": "find the tests", "prompt": "go"},
                       "side_effect": "none"}),
                json!({"type": "turn_ended", "step": 1, "stop": "tool_use"}),
                json!({"type": "hook_decided", "hook": "guard", "event": "before_tool",
                       "outcome": "rewrite", "reason": "normalised", "call_id": "b1"}),
                json!({"type": "tool_execution_started", "id": "b1", "name": "bash"}),
                json!({"type": "tool_progress", "id": "b1", "stream": "stdout", "text": "cc a.c\n"}),
                json!({"type": "tool_blocked", "id": "b1", "name": "bash", "block": block}),
                json!({"type": "tool_blocked", "id": "b1", "name": "bash",
                       "block": {"code": "network", "tool_name": "bash", "action": "deny",
                                 "risk": {"level": "high"}, "reason": "no network",
                                 "recoverable": false}}),
                golden::tool_result("b1", "bash", "error", "Permission denied", 9),
                json!({"type": "tool_execution_started", "id": "t1", "name": "Task"}),
                json!({"type": "subagent_started", "task_id": "task_1", "name": "explorer",
                       "call_id": "t1", "description": "find the tests", "model": "m", "depth": 1}),
                child(json!({"type": "run_started", "kind": "prompt"})),
                child(json!({"type": "text_delta", "delta": "Looking."})),
                child(json!({"type": "usage", "turn": usage, "cumulative": usage})),
                child(json!({"type": "tool_call", "id": "k1", "name": "grep",
                                             "args": {"pattern": "fn test"}})),
                child(golden::tool_result("k1", "grep", "error", "Error: bad\nmore", 1)),
                child(json!({"type": "subagent", "task_id": "task_2",
                       "name": "reader", "call_id": "k2", "event": {"type": "tool_result", "id": "g1",
                       "name": "read_file", "status": "ok", "content": [], "truncated": false,
                       "redacted": false, "changed_files": [], "duration_ms": 1}})),
                child(json!({"type": "error", "code": "provider", "message": "flaky",
                                             "recoverable": true})),
                json!({"type": "subagent_finished", "task_id": "task_1", "name": "explorer",
                       "call_id": "t1", "status": "success", "final_text": "Tests are in tests/.",
                       "usage": usage, "duration_ms": 40}),
                golden::tool_result("t1", "Task", "ok", "Tests are in tests/.", 41),
                json!({"type": "plan_updated", "id": "p", "explanation": "two steps",
                       "plan": [{"step": "read", "status": "completed"},
                                {"step": "write", "status": "in_progress"}]}),
                json!({"type": "compaction_started", "reason": "auto"}),
                json!({"type": "compaction_finished", "summary": "  s  ", "before": 170000,
                       "after": 2100}),
                json!({"type": "turn_started", "step": 2}),
                json!({"type": "turn_recovery", "reason": "missing_answer", "attempt": 1}),
                json!({"type": "hook_decided", "hook": "judge", "event": "stop",
                       "outcome": "continue", "reason": "check the tests"}),
                json!({"type": "turn_ended", "step": 2, "stop": "aborted", "error": "cancelled"}),
                json!({"type": "error", "code": "provider", "message": "slow", "recoverable": true}),
                json!({"type": "run_finished", "status": "aborted"}),
            ],
        ]
        .concat(),
    )
}

/// A prompt a `user_prompt` hook blocked, and a run a hook halted.
fn a_blocked_prompt() -> Vec<AgentEvent> {
    golden::events(
        [
            golden::blocked_prompt(),
            vec![
                json!({"type": "hook_decided", "hook": "stopper", "event": "before_tool",
               "outcome": "halt", "reason": " "}),
                json!({"type": "run_finished", "status": "success"}),
            ],
        ]
        .concat(),
    )
}

fn golden(name: &str, lines: &[String]) {
    golden::assert_golden(env!("CARGO_MANIFEST_DIR"), name, lines);
}

/// The frames of `events` through one mapping over its turn state (an OpenAI meter, so
/// every call's cache figures count as measured), each as its JSON line.
fn lines(events: &[AgentEvent]) -> Vec<String> {
    let meter = SharedMeter::new(UsageMeter::new("openai"));
    let mut fold = Fold::new(RpcMapping::new(meter.clone()));
    let mut out = Vec::new();
    for event in events {
        for frame in fold.frames(event) {
            out.push(serde_json::to_string(&FrameRef::Event(frame)).expect("serialise"));
        }
    }
    let cumulative = fold.state().cumulative().unwrap_or_default();
    out.push(format!(
        "get_state.usage: {}",
        serde_json::to_string(&meter.lock().cumulative(&cumulative)).expect("serialise")
    ));
    out
}

#[test]
fn a_whole_prompt_maps_to_these_frames() {
    golden("rpc_prompt", &lines(&a_prompt()));
}

#[test]
fn a_blocked_prompt_and_a_halt_map_to_these_frames() {
    golden("rpc_blocked", &lines(&a_blocked_prompt()));
}
