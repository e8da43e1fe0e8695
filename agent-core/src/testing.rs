//! Test support for front ends (feature `test-util`): one sample of every [`AgentEvent`]
//! variant, and the variant names as serde knows them.
//!
//! A front end's mapping test feeds [`one_of_each`] through its mapper and checks each
//! variant is either shown or on its list of variants deliberately not shown; because
//! [`variant_names`] comes from serde, a variant added to agent-core fails such a test until
//! the front end decides what to do with it. agent-core's own test keeps [`one_of_each`]
//! complete.

use serde_json::{json, Value};

use crate::event::AgentEvent;
use crate::message::Message;
use crate::usage::Usage;

/// The serde `type` tag of every [`AgentEvent`] variant, read from serde's own error for an
/// unknown tag (so it can never go stale).
pub fn variant_names() -> Vec<String> {
    let message = match serde_json::from_value::<AgentEvent>(json!({"type": "__no_such__"})) {
        Ok(_) => return Vec::new(),
        Err(err) => err.to_string(),
    };
    let Some((_, list)) = message.split_once("expected one of") else {
        return Vec::new();
    };
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The serde `type` tag of `event`.
pub fn type_of(event: &AgentEvent) -> String {
    serde_json::to_value(event)
        .ok()
        .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_default()
}

/// One realistic event of every variant, in the order a run could emit them (tool events
/// for call `c`, a `bash` call).
pub fn one_of_each() -> Vec<AgentEvent> {
    let usage = serde_json::to_value(Usage {
        input: 10,
        output: 5,
        ..Usage::default()
    })
    .unwrap_or(Value::Null);
    let block = json!({
        "code": "sandbox", "tool_name": "bash", "action": "prompt",
        "risk": {"level": "medium"}, "path": "/etc/x",
        "reason": "the sandbox refused a write outside the workspace", "recoverable": true
    });
    let permission = json!({
        "id": "c", "name": "bash", "args": {"command": "ls"}, "mode": "auto",
        "permission": "prompt", "side_effect": "shell", "reason": null,
        "risk": {"level": "low"}, "block": null
    });
    let mut decided = permission.clone();
    decided["action"] = json!("allow");
    decided["granted"] = json!(true);
    decided["rule"] = json!({"rule": "Bash(ls:*)", "action": "allow", "source": "sdk"});
    let message = |m: Message| serde_json::to_value(m).unwrap_or(Value::Null);
    let with_type = |ty: &str, mut v: Value| {
        v["type"] = json!(ty);
        v
    };
    let values = vec![
        json!({"type": "run_started", "kind": "prompt"}),
        json!({"type": "sandbox_report", "mode": "workspace-write", "network": "deny",
               "enforced": "full", "landlock_abi": 6, "network_filter": "seccomp_and_landlock_tcp",
               "fallback": "prompt", "fallback_active": false}),
        json!({"type": "user_message", "message": message(Message::user_text("hi"))}),
        json!({"type": "turn_started", "step": 1}),
        json!({"type": "request_started", "scope": "agent", "provider": "p", "model": "m",
               "attempt": 1, "max_attempts": 6}),
        json!({"type": "retry_scheduled", "scope": "provider", "attempt": 2,
               "max_attempts": 6, "delay_ms": 10}),
        json!({"type": "model_fallback", "from": "m", "to": "m-mini",
               "reason": "the model is overloaded"}),
        json!({"type": "assistant_started"}),
        json!({"type": "reasoning_delta", "delta": "thinking"}),
        json!({"type": "text_delta", "delta": "Let me look."}),
        json!({"type": "tool_use_started", "id": "c", "name": "bash"}),
        json!({"type": "tool_use_args_delta", "id": "c", "delta": "{\"command\":\"ls\"}"}),
        json!({"type": "tool_use_ended", "id": "c"}),
        json!({"type": "usage", "turn": usage, "cumulative": usage}),
        json!({"type": "assistant_message",
               "message": message(Message::assistant_text("Let me look."))}),
        json!({"type": "context_usage", "used": 15, "window": 200000, "percent": 0.0}),
        json!({"type": "tool_call", "id": "c", "name": "bash", "args": {"command": "ls"},
               "side_effect": "shell"}),
        json!({"type": "turn_ended", "step": 1, "stop": "tool_use"}),
        json!({"type": "turn_recovery", "reason": "missing_answer", "attempt": 1}),
        json!({"type": "hook_decided", "hook": "guard", "event": "before_tool",
               "outcome": "rewrite", "reason": "normalised the command", "call_id": "c"}),
        with_type("permission_requested", permission),
        with_type("permission_decided", decided),
        json!({"type": "tool_execution_started", "id": "c", "name": "bash"}),
        json!({"type": "tool_progress", "id": "c", "stream": "stdout", "text": "a.txt\n"}),
        json!({"type": "plan_updated", "id": "c", "explanation": null,
               "plan": [{"step": "look", "status": "in_progress"}]}),
        json!({"type": "tool_blocked", "id": "c", "name": "bash", "block": block}),
        json!({"type": "tool_result", "id": "c", "name": "bash", "status": "ok",
               "content": [{"type": "text", "text": "a.txt\n"}], "truncated": false,
               "redacted": false, "changed_files": [], "duration_ms": 3}),
        json!({"type": "subagent_started", "task_id": "task_1", "name": "explorer",
               "call_id": "t", "description": "find the tests", "model": "m", "depth": 1}),
        json!({"type": "subagent", "task_id": "task_1", "name": "explorer", "call_id": "t",
               "event": {"type": "text_delta", "delta": "Looking."}}),
        json!({"type": "subagent_finished", "task_id": "task_1", "name": "explorer",
               "call_id": "t", "status": "success", "final_text": "Tests are in tests/.",
               "usage": usage, "duration_ms": 40}),
        json!({"type": "compaction_started", "reason": "auto"}),
        json!({"type": "compaction_finished", "summary": "the user asked to list files",
               "before": 170000, "after": 2100}),
        json!({"type": "error", "code": "provider", "message": "boom", "recoverable": true}),
        json!({"type": "run_finished", "status": "success", "final_text": "Done."}),
    ];
    values
        .into_iter()
        .filter_map(|v| serde_json::from_value(v).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_of_each_covers_every_variant_exactly_once() {
        let names = variant_names();
        assert!(names.len() >= 25, "serde listed {names:?}");
        let samples = one_of_each();
        let kinds: Vec<String> = samples.iter().map(type_of).collect();
        for name in &names {
            assert_eq!(
                kinds.iter().filter(|k| *k == name).count(),
                1,
                "testing::one_of_each needs exactly one `{name}` (a sample that does not \
                 deserialize is dropped)"
            );
        }
        assert_eq!(kinds.len(), names.len());
    }
}
