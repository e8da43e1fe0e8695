//! Golden in-process tests of the ZCode mapping: a fixed sequence of agent events becomes
//! exactly the `session/event` types and payloads in `tests/golden/zcode_*.jsonl` (one line
//! each: the stream, `-` for the turn's own session or the sub-agent's task id, then the
//! event as serde writes it), the turn's last event included. No binary is spawned; a fixed
//! clock stamps the calls. `UPDATE_GOLDEN=1` rewrites the files.

use adapter_acp::zcode::mapping::{Totals, ZcodeMapping};
use agent_core::{event::RunKind, AgentEvent, Message};
use agent_host::turn::{Fold, TurnState};
use serde_json::{json, Value};
use test_support::golden;

/// The tests' clock: every call starts and ends at this instant.
fn clock() -> i64 {
    1_750_000_000_000
}

/// An event of the sub-agent `task_1` (started by call `t1`).
fn child(event: Value) -> Value {
    golden::subagent("task_1", "t1", event)
}

fn message(message: Message) -> Value {
    serde_json::to_value(message).expect("a message serialises")
}

fn usage(input: u64, output: u64) -> Value {
    golden::usage(input, output, 0, None)
}

fn result(id: &str, name: &str, status: &str, text: &str) -> Value {
    golden::tool_result(id, name, status, text, 7)
}

fn permission(id: &str, name: &str, args: Value, action: &str, granted: bool) -> Value {
    json!({"type": "permission_decided", "id": id, "name": name, "args": args,
           "mode": "auto", "permission": "prompt", "side_effect": "shell", "reason": null,
           "risk": {"level": "low"}, "block": null, "action": action, "granted": granted})
}

/// A prompt: reasoning and text, usage and context, a plan, the sandbox report, and four
/// calls of one step: a write that succeeds (a hook noted it), a `bash` call the user
/// refused, a `bash` call the sandbox blocked (progress on stdout, stderr and a status
/// line) and a read a hook vetoed; then their batch, a compaction and the final answer.
fn a_turn() -> Vec<AgentEvent> {
    let block = golden::sandbox_block("bash", "medium");
    golden::events(
        [
            golden::prompt_opening("full", Some(6), false, message(Message::user_text("fix it"))),
            vec![
                json!({"type": "reasoning_delta", "delta": "Look first."}),
                json!({"type": "text_delta", "delta": "I will "}),
                json!({"type": "text_delta", "delta": "fix it."}),
                json!({"type": "usage", "turn": usage(100, 20), "cumulative": usage(100, 20)}),
                json!({"type": "assistant_message",
                       "message": message(Message::assistant_text("I will fix it."))}),
                json!({"type": "context_usage", "used": 120, "window": 200000, "percent": 0.1}),
                json!({"type": "tool_call", "id": "w1", "name": "write_file",
                       "args": {"path": "a.txt", "content": "x"}, "side_effect": "write"}),
                json!({"type": "tool_call", "id": "b1", "name": "bash", "args": {"command": "rm -rf /"},
                       "side_effect": "shell"}),
                json!({"type": "tool_call", "id": "b2", "name": "bash", "args": {"command": "make"},
                       "side_effect": "shell"}),
                json!({"type": "tool_call", "id": "r1", "name": "read_file", "args": {"path": ".env"},
                       "side_effect": "none"}),
                json!({"type": "turn_ended", "step": 1, "stop": "tool_use"}),
                permission("w1", "write_file", json!({"path": "a.txt"}), "allow", true),
                json!({"type": "tool_execution_started", "id": "w1", "name": "write_file"}),
                json!({"type": "hook_decided", "hook": "audit", "event": "after_tool",
                       "outcome": "append", "reason": "logged", "call_id": "w1"}),
                json!({"type": "tool_result", "id": "w1", "name": "write_file", "status": "ok",
                       "content": [{"type": "text", "text": "wrote a.txt"}], "truncated": false,
                       "redacted": false, "changed_files": ["a.txt"], "duration_ms": 3}),
                json!({"type": "permission_requested", "id": "b1", "name": "bash",
                       "args": {"command": "rm -rf /"}, "mode": "auto", "permission": "prompt",
                       "side_effect": "shell", "reason": null, "risk": {"level": "high"},
                       "block": null}),
                permission("b1", "bash", json!({"command": "rm -rf /"}), "deny", false),
                result("b1", "bash", "error", "The user refused the call."),
                json!({"type": "tool_execution_started", "id": "b2", "name": "bash"}),
                json!({"type": "tool_progress", "id": "b2", "stream": "stdout", "text": "cc a.c\n"}),
                json!({"type": "tool_progress", "id": "b2", "stream": "stderr", "text": "warning\n"}),
                json!({"type": "tool_progress", "id": "b2", "stream": "status", "text": "running"}),
                json!({"type": "tool_blocked", "id": "b2", "name": "bash", "block": block}),
                result("b2", "bash", "error", "Permission denied"),
                json!({"type": "hook_decided", "hook": "guard", "event": "before_tool",
                       "outcome": "deny", "reason": "secrets", "call_id": "r1"}),
                result("r1", "read_file", "error", "Blocked by hook guard: secrets"),
                json!({"type": "plan_updated", "id": "p", "explanation": null,
                       "plan": [{"step": "read", "status": "completed"},
                                {"step": "write", "status": "in_progress"},
                                {"step": "test", "status": "pending"}]}),
                json!({"type": "turn_started", "step": 2}),
                json!({"type": "compaction_started", "reason": "overflow"}),
                json!({"type": "compaction_finished", "summary": "s", "before": 170000,
                       "after": 2100}),
                json!({"type": "text_delta", "delta": "Done."}),
                json!({"type": "usage", "turn": usage(50, 5), "cumulative": usage(150, 25)}),
                json!({"type": "turn_ended", "step": 2, "stop": "end"}),
                json!({"type": "error", "code": "provider", "message": "slow", "recoverable": true}),
                json!({"type": "run_finished", "status": "success", "final_text": "Done."}),
            ],
        ]
        .concat(),
    )
}

/// Sub-agents: a foreground `Task` child with text, a call, usage, a compaction and a
/// grandchild of its own that fails; a background child that finishes after the call.
fn subagents() -> Vec<AgentEvent> {
    let grandchild = |event: Value| {
        child(
            json!({"type": "subagent", "task_id": "task_2", "name": "reader",
                   "call_id": "k2", "event": event}),
        )
    };
    golden::events(vec![
        json!({"type": "run_started", "kind": "prompt"}),
        json!({"type": "turn_started", "step": 1}),
        json!({"type": "tool_call", "id": "t1", "name": "Task",
               "args": {"name": "explorer", "description": "find the tests", "prompt": "go"},
               "side_effect": "none"}),
        json!({"type": "tool_call", "id": "t2", "name": "Task",
               "args": {"name": "watcher", "prompt": "watch", "background": true},
               "side_effect": "none"}),
        json!({"type": "tool_execution_started", "id": "t1", "name": "Task"}),
        json!({"type": "subagent_started", "task_id": "task_1", "name": "explorer",
               "call_id": "t1", "description": "find the tests", "model": "m", "depth": 1}),
        child(json!({"type": "run_started", "kind": "prompt"})),
        child(json!({"type": "turn_started", "step": 1})),
        child(json!({"type": "text_delta", "delta": "Looking."})),
        child(json!({"type": "usage", "turn": usage(10, 2), "cumulative": usage(10, 2)})),
        child(json!({"type": "tool_call", "id": "k1", "name": "grep",
                   "args": {"pattern": "fn test"}})),
        child(json!({"type": "tool_call", "id": "k2", "name": "Task",
                   "args": {"name": "reader", "prompt": "read"}})),
        child(json!({"type": "tool_execution_started", "id": "k1", "name": "grep"})),
        child(result("k1", "grep", "ok", "tests/a.rs")),
        child(
            json!({"type": "subagent_started", "task_id": "task_2", "name": "reader",
                   "call_id": "k2", "description": "read", "model": "m", "depth": 2}),
        ),
        grandchild(json!({"type": "text_delta", "delta": "Reading"})),
        child(
            json!({"type": "subagent_finished", "task_id": "task_2", "name": "reader",
                   "call_id": "k2", "status": "error", "error": "no such file",
                   "usage": usage(0, 0), "duration_ms": 4}),
        ),
        child(result("k2", "Task", "error", "no such file")),
        child(json!({"type": "compaction_started", "reason": "auto"})),
        child(
            json!({"type": "compaction_finished", "summary": "s", "before": 900,
                   "after": 100}),
        ),
        child(json!({"type": "text_delta", "delta": " Found them."})),
        json!({"type": "subagent_finished", "task_id": "task_1", "name": "explorer",
               "call_id": "t1", "status": "success", "usage": usage(10, 2),
               "duration_ms": 40}),
        result("t1", "Task", "ok", "Looking. Found them."),
        json!({"type": "tool_execution_started", "id": "t2", "name": "Task"}),
        json!({"type": "subagent_started", "task_id": "task_3", "name": "watcher",
               "call_id": "t2", "model": "m", "background": true, "depth": 1}),
        result("t2", "Task", "ok", "started task_3"),
        json!({"type": "turn_ended", "step": 1, "stop": "tool_use"}),
        golden::subagent(
            "task_3",
            "t2",
            json!({"type": "text_delta", "delta": "Watching."}),
        ),
        json!({"type": "subagent_finished", "task_id": "task_3", "name": "watcher",
               "call_id": "t2", "status": "aborted", "final_text": "Stopped watching.",
               "usage": usage(3, 1), "duration_ms": 90}),
        json!({"type": "run_finished", "status": "success", "final_text": "All found."}),
    ])
}

/// A run that streamed some text and failed at the step limit.
fn a_failure() -> Vec<AgentEvent> {
    golden::events(vec![
        json!({"type": "run_started", "kind": "prompt"}),
        json!({"type": "turn_started", "step": 1}),
        json!({"type": "text_delta", "delta": "Trying"}),
        json!({"type": "error", "code": "max_steps", "message": "the step limit (1) was reached",
               "recoverable": false}),
        json!({"type": "run_finished", "status": "error"}),
    ])
}

/// A run the client stopped mid-answer, a call cancelled at its approval.
fn a_cancel() -> Vec<AgentEvent> {
    golden::events(vec![
        json!({"type": "run_started", "kind": "prompt"}),
        json!({"type": "turn_started", "step": 1}),
        json!({"type": "tool_call", "id": "b1", "name": "bash", "args": {"command": "ls"},
               "side_effect": "shell"}),
        permission("b1", "bash", json!({"command": "ls"}), "cancel", false),
        result("b1", "bash", "error", "The run was aborted."),
        json!({"type": "turn_started", "step": 2}),
        json!({"type": "text_delta", "delta": "Half an "}),
        json!({"type": "text_delta", "delta": "answer"}),
        json!({"type": "run_finished", "status": "aborted"}),
    ])
}

/// A compaction turn (`session/compact`): only its usage and context show, then its end.
fn a_compaction() -> Vec<AgentEvent> {
    golden::events(vec![
        json!({"type": "run_started", "kind": "compact"}),
        json!({"type": "compaction_started", "reason": "manual"}),
        json!({"type": "text_delta", "delta": "the summary"}),
        json!({"type": "usage", "turn": usage(900, 60), "cumulative": usage(900, 60)}),
        json!({"type": "compaction_finished", "summary": "the summary", "before": 9000,
               "after": 600}),
        json!({"type": "context_usage", "used": 600, "window": 200000, "percent": 0.3}),
        json!({"type": "run_finished", "status": "success", "final_text": "the summary"}),
    ])
}

fn golden(name: &str, lines: &[String]) {
    golden::assert_golden(env!("CARGO_MANIFEST_DIR"), name, lines);
}

/// The events of turn `turn_1` of `kind` through one mapping over its turn state (the
/// sub-agents' streams opened with turn ids of their own, the session's totals fixed),
/// each as its line, then the turn's end (its outcome as the state sums it up, 12 ms).
fn lines(kind: RunKind, events: &[AgentEvent]) -> Vec<String> {
    let mut mapping = ZcodeMapping::new("turn_1", kind)
        .with_subagents(true)
        .with_clock(clock);
    for task in ["task_1", "task_2"] {
        mapping.open_subagent(task, format!("turn_of_{task}"));
    }
    mapping.set_totals(Totals {
        context_window: 200_000,
        total_tokens: 4_321,
    });
    let mut fold = Fold::with_state(TurnState::with_clock(clock), mapping);
    let line = |stream: Option<&str>, body| {
        let body = serde_json::to_string(&body).expect("serialise");
        format!("{} {body}", stream.unwrap_or("-"))
    };
    let mut out = Vec::new();
    if let Some(started) = fold.mapping().turn_started(3, "fix it", Some("in_1")) {
        out.push(line(None, started));
    }
    for event in events {
        for frame in fold.frames(event) {
            out.push(line(frame.stream, frame.body));
        }
    }
    let mut outcome = fold.state().outcome();
    outcome.duration_ms = 12;
    out.push(line(None, fold.mapping().turn_end(&outcome, Some("in_1"))));
    out
}

#[test]
fn a_whole_turn_maps_to_these_events() {
    golden("zcode_turn", &lines(RunKind::Prompt, &a_turn()));
}

#[test]
fn sub_agents_map_to_their_own_streams() {
    golden("zcode_subagents", &lines(RunKind::Prompt, &subagents()));
}

#[test]
fn a_failed_run_ends_with_turn_failed() {
    golden("zcode_failed", &lines(RunKind::Prompt, &a_failure()));
}

#[test]
fn a_cancelled_run_ends_cancelled_with_the_streamed_text() {
    golden("zcode_cancelled", &lines(RunKind::Prompt, &a_cancel()));
}

#[test]
fn a_compaction_turn_shows_its_usage_and_its_end() {
    golden(
        "zcode_compaction",
        &lines(RunKind::Compact, &a_compaction()),
    );
}
