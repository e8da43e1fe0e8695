//! Event sequences → the state they fold to.

use agent_core::testing::{one_of_each, type_of};
use agent_core::{
    event::{CompactionReason, ErrorCode, StopReason, ToolStatus},
    hooks::{HookEvent, HookOutcome},
    AgentEvent, RunStatus, Usage,
};
use serde_json::{json, Value};

use super::coverage::{assert_covers, coverage};
use super::*;

fn clock() -> i64 {
    1_000
}

fn events(values: Vec<Value>) -> Vec<AgentEvent> {
    values
        .into_iter()
        .map(|v| serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}")))
        .collect()
}

fn fold(values: Vec<Value>) -> TurnState {
    let mut state = TurnState::with_clock(clock);
    for event in events(values) {
        state.apply(&event);
    }
    state
}

fn usage(input: u64, output: u64, cost: Option<f64>) -> Value {
    json!({"input": input, "output": output, "reasoning": null, "cache_read": 0,
           "cache_write": 0, "cost_usd": cost})
}

fn result(id: &str, status: &str) -> Value {
    json!({"type": "tool_result", "id": id, "name": "bash", "status": status,
           "content": [], "truncated": false, "redacted": false, "changed_files": [],
           "duration_ms": 1})
}

fn block() -> Value {
    json!({"code": "sandbox", "tool_name": "bash", "action": "deny",
           "risk": {"level": "medium"}, "path": "/etc/x", "reason": "no",
           "recoverable": true})
}

#[test]
fn a_call_goes_from_pending_to_its_result_with_blocks_hooks_and_a_denial() {
    let state = fold(vec![
        json!({"type": "turn_started", "step": 2}),
        json!({"type": "tool_call", "id": "c", "name": "bash", "args": {"command": "ls"}}),
        json!({"type": "tool_call", "id": "d", "name": "bash", "args": {"command": "rm"}}),
    ]);
    let c = state.call("c").expect("call c");
    assert_eq!(c.status, ToolCallStatus::Pending);
    assert_eq!((c.name.as_str(), c.step), ("bash", 2));
    assert_eq!(c.args, json!({"command": "ls"}));
    assert_eq!(state.step_calls(), ["c", "d"]);
    assert!(!state.step_done());

    let decided = json!({"type": "permission_decided", "id": "d", "name": "bash",
        "args": {}, "mode": "auto", "permission": "prompt", "side_effect": "shell",
        "reason": null, "risk": {"level": "low"}, "block": null, "action": "deny",
        "granted": false});
    let state = fold(vec![
        json!({"type": "turn_started", "step": 1}),
        json!({"type": "tool_call", "id": "c", "name": "bash", "args": {}}),
        json!({"type": "tool_call", "id": "d", "name": "bash", "args": {}}),
        json!({"type": "hook_decided", "hook": "guard", "event": "before_tool",
               "outcome": "rewrite", "reason": "why", "call_id": "c"}),
        json!({"type": "tool_execution_started", "id": "c", "name": "bash"}),
        json!({"type": "tool_blocked", "id": "c", "name": "bash", "block": block()}),
        json!({"type": "tool_blocked", "id": "c", "name": "bash", "block": block()}),
        result("c", "error"),
        decided,
        result("d", "error"),
    ]);
    let c = state.call("c").expect("call c");
    assert_eq!(c.status, ToolCallStatus::Failed);
    assert_eq!((c.started_at, c.completed_at), (Some(1_000), Some(1_000)));
    assert_eq!(c.blocks.len(), 2);
    assert_eq!(c.block.as_ref().map(|b| b.reason.as_str()), Some("no"));
    assert_eq!(
        c.hooks,
        [HookNote {
            hook: "guard".into(),
            event: HookEvent::BeforeTool,
            outcome: HookOutcome::Rewrite,
            reason: Some("why".into()),
        }]
    );
    assert!(!c.denied);
    let d = state.call("d").expect("call d");
    assert!(d.denied);
    assert_eq!(
        d.started_at,
        Some(1_000),
        "a call not run gets its end as its start"
    );
    assert!(state.step_done());
    assert_eq!(state.tool_calls(), 2);
}

#[test]
fn a_second_result_for_a_call_starts_a_fresh_entry() {
    let state = fold(vec![
        json!({"type": "tool_blocked", "id": "b", "name": "bash", "block": block()}),
        result("b", "error"),
    ]);
    assert_eq!(state.call("b").map(|c| c.blocks.len()), Some(1));
    let state = fold(vec![
        json!({"type": "tool_blocked", "id": "b", "name": "bash", "block": block()}),
        result("b", "error"),
        result("b", "ok"),
    ]);
    let b = state.call("b").expect("call b");
    assert!(b.blocks.is_empty() && b.block.is_none());
    assert_eq!(b.status, ToolCallStatus::Completed);
}

#[test]
fn the_subagent_tree_nests_and_sums_usage() {
    let wrap = |task: &str, call: &str, event: Value| {
        json!({"type": "subagent", "task_id": task, "name": "n", "call_id": call,
               "event": event})
    };
    let state = fold(vec![
        json!({"type": "tool_call", "id": "t", "name": "Task", "args": {}}),
        json!({"type": "subagent_started", "task_id": "task_1", "name": "explorer",
               "call_id": "t", "description": "find", "model": "m", "depth": 1}),
        wrap(
            "task_1",
            "t",
            json!({"type": "usage", "turn": usage(10, 5, None),
                                   "cumulative": usage(10, 5, None)}),
        ),
        wrap(
            "task_1",
            "t",
            json!({"type": "tool_call", "id": "k", "name": "Task",
                                   "args": {}}),
        ),
        wrap(
            "task_1",
            "t",
            json!({"type": "subagent_started", "task_id": "task_2",
               "name": "reader", "call_id": "k", "model": "m", "depth": 2}),
        ),
        wrap(
            "task_1",
            "t",
            wrap(
                "task_2",
                "k",
                json!({"type": "usage",
               "turn": usage(3, 1, None), "cumulative": usage(3, 1, None)}),
            ),
        ),
        wrap(
            "task_1",
            "t",
            wrap(
                "task_2",
                "k",
                json!({"type": "text_delta",
               "delta": "x"}),
            ),
        ),
    ]);
    let child = state.subagent_of_call("t").expect("the child of t");
    assert_eq!(child.task_id, "task_1");
    assert!(child.is_running());
    assert_eq!(child.description.as_deref(), Some("find"));
    assert_eq!(
        state.call("t").and_then(|c| c.subagent.as_deref()),
        Some("task_1")
    );
    // The child's own run: its calls, its child, its usage (its descendants' included).
    assert_eq!(child.run().tool_calls(), 1);
    assert_eq!(child.run().model_calls(), 1);
    assert_eq!((child.usage().input, child.usage().output), (13, 6));
    let grandchild = state.subagent("task_2").expect("found at depth 2");
    assert_eq!((grandchild.depth, grandchild.call_id.as_str()), (2, "k"));
    assert_eq!(grandchild.usage().input, 3);
    // The parent's usage has every descendant's model calls, but not their count.
    assert_eq!((state.usage().input, state.usage().output), (13, 6));
    assert_eq!(state.model_calls(), 0);

    let mut state = state;
    for event in events(vec![
        json!({"type": "subagent_finished", "task_id": "task_1",
        "name": "explorer", "call_id": "t", "status": "error", "error": "boom",
        "usage": usage(20, 10, None), "duration_ms": 7}),
    ]) {
        state.apply(&event);
    }
    let child = state.subagent("task_1").expect("still known");
    assert_eq!(child.status, Some(RunStatus::Error));
    assert_eq!(child.error.as_deref(), Some("boom"));
    assert_eq!((child.usage().input, child.duration_ms), (20, Some(7)));
}

#[test]
fn usage_cost_context_stops_and_compaction() {
    let state = fold(vec![
        json!({"type": "usage", "turn": usage(100, 20, Some(0.25)),
               "cumulative": usage(100, 20, Some(0.25))}),
        json!({"type": "usage", "turn": usage(1, 1, None), "cumulative": usage(101, 21, None)}),
        json!({"type": "context_usage", "used": 122, "window": 1000, "percent": 12.2}),
        json!({"type": "turn_ended", "step": 1, "stop": "length"}),
        json!({"type": "turn_ended", "step": 2, "stop": "end"}),
        json!({"type": "compaction_started", "reason": "overflow"}),
    ]);
    assert_eq!((state.usage().input, state.model_calls()), (101, 2));
    assert_eq!(
        state.cost_usd(),
        Some(0.25),
        "an unpriced call keeps the last cost"
    );
    assert_eq!(state.cumulative().map(|u| u.input), Some(101));
    assert_eq!(state.context(), Some((122, 1000)));
    assert_eq!(state.last_stop(), Some(StopReason::End));
    assert!(state.stopped_at_length());
    assert_eq!(
        state.compaction(),
        Some(Compaction {
            reason: CompactionReason::Overflow,
            sizes: None
        })
    );
    let mut state = state;
    let done = events(vec![json!({"type": "compaction_finished", "summary": "s",
                                  "before": 9, "after": 2})]);
    state.apply(&done[0]);
    assert_eq!(
        state.compaction().map(|c| (c.reason, c.sizes)),
        Some((CompactionReason::Overflow, Some((9, 2))))
    );
    // A finish without its start was automatic.
    state.apply(&done[0]);
    assert_eq!(
        state.compaction().map(|c| c.reason),
        Some(CompactionReason::Auto)
    );
}

#[test]
fn the_outcome_is_the_runs_end() {
    let state = fold(vec![json!({"type": "run_started", "kind": "prompt"})]);
    assert_eq!(state.status(), None);
    assert_eq!(state.outcome(), TurnOutcome::default());

    let state = fold(vec![
        json!({"type": "hook_decided", "hook": "g", "event": "user_prompt",
               "outcome": "block"}),
        json!({"type": "run_finished", "status": "success"}),
    ]);
    assert!(state.prompt_blocked());
    assert!(state.outcome().is_success());

    let state = fold(vec![
        json!({"type": "tool_call", "id": "c", "name": "bash", "args": {}}),
        json!({"type": "usage", "turn": usage(4, 2, None), "cumulative": usage(4, 2, None)}),
        json!({"type": "error", "code": "provider", "message": "slow", "recoverable": true}),
        json!({"type": "error", "code": "max_steps", "message": "limit",
               "recoverable": false}),
        json!({"type": "compaction_finished", "summary": "sum", "before": 1, "after": 0}),
        json!({"type": "run_finished", "status": "error", "final_text": "partial"}),
    ]);
    let outcome = state.outcome();
    assert_eq!(
        outcome,
        TurnOutcome {
            status: RunStatus::Error,
            final_text: Some("partial".into()),
            error: Some((ErrorCode::MaxSteps, "limit".into())),
            usage: Usage {
                input: 4,
                output: 2,
                ..Usage::default()
            },
            model_calls: 1,
            tool_calls: 1,
            duration_ms: 0,
            summary: Some("sum".into()),
        }
    );
    assert_eq!(state.error(), Some((ErrorCode::MaxSteps, "limit")));
    assert_eq!(
        outcome.run_error().map(|e| e.code),
        Some(ErrorCode::MaxSteps)
    );
    let unused = ToolStatus::Ok;
    assert_eq!(unused, ToolStatus::Ok);
}

#[test]
fn framing_names_the_variants_is_framing_matches() {
    let framing: Vec<String> = one_of_each()
        .iter()
        .filter(|e| is_framing(e))
        .map(type_of)
        .collect();
    assert_eq!(framing, FRAMING);
}

/// A mapping that shows text and calls, declares the framing not shown through
/// [`Coverage::rest`], and forgets everything else.
struct Partial;

impl Mapping for Partial {
    type Frame<'e> = &'e str;

    fn map<'e>(
        &mut self,
        state: &TurnState,
        event: &'e AgentEvent,
        mut out: impl FnMut(&'e str),
    ) -> Coverage {
        match event {
            AgentEvent::TextDelta { delta } => out(delta),
            AgentEvent::ToolCall { id, .. } => {
                assert!(state.call(id).is_some(), "the state is applied first");
                out(id)
            }
            other => return Coverage::rest(other),
        }
        Coverage::Shown
    }
}

#[test]
fn the_harness_names_every_variant_a_mapping_does_not_know() {
    let report = coverage(Fold::new(Partial), one_of_each());
    assert_eq!(report.shown(), ["text_delta", "tool_call"]);
    assert_eq!(report.not_shown(), FRAMING);
    assert_eq!(report.get("text_delta").map(|e| e.frames), Some(1));
    let failed = std::panic::catch_unwind(|| assert_covers(Partial));
    let message = failed
        .err()
        .and_then(|e| e.downcast::<String>().ok())
        .map(|s| *s)
        .unwrap_or_default();
    assert!(
        message.contains("`tool_result` is neither mapped nor declared not shown"),
        "{message}"
    );
    assert!(!message.contains("`text_delta`"), "{message}");
}
