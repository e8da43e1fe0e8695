//! Golden files for the in-process mapping tests: a fixed sequence of agent events in, the
//! frames a mapping makes out, compared line by line with `tests/golden/<name>.jsonl` of the
//! calling crate. `UPDATE_GOLDEN=1` rewrites the files.
//!
//! [`events`] sorts every JSON object's keys before it deserialises the events, so a tool
//! call's arguments come out in one order whether or not serde_json's `preserve_order` is on:
//! that feature is unified across the workspace (agent-client-protocol turns it on), so a
//! crate's tests built alone and built with the whole workspace would otherwise disagree.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::{json, Value};

/// `values` as events (any type that deserialises from them), every object's keys sorted.
/// Panics with the offending value when one does not deserialise.
pub fn events<T: DeserializeOwned>(values: Vec<Value>) -> Vec<T> {
    values
        .into_iter()
        .map(|mut value| {
            sort_keys(&mut value);
            serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("{value}: {e}"))
        })
        .collect()
}

fn sort_keys(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.sort_keys();
            map.values_mut().for_each(sort_keys);
        }
        Value::Array(items) => items.iter_mut().for_each(sort_keys),
        _ => {}
    }
}

/// A `subagent` event of the sub-agent `explorer` (task `task_id`, started by call
/// `call_id`) carrying `event`.
pub fn subagent(task_id: &str, call_id: &str, event: Value) -> Value {
    json!({"type": "subagent", "task_id": task_id, "name": "explorer", "call_id": call_id,
           "event": event})
}

/// A usage figure without reasoning tokens or cache writes.
pub fn usage(input: u64, output: u64, cache_read: u64, cost_usd: Option<f64>) -> Value {
    json!({"input": input, "output": output, "reasoning": null, "cache_read": cache_read,
           "cache_write": 0, "cost_usd": cost_usd})
}

/// The sandbox's refusal of `tool`'s write to `/etc/x`, outside the workspace, at risk
/// `level`.
pub fn sandbox_block(tool: &str, level: &str) -> Value {
    json!({"code": "sandbox", "tool_name": tool, "action": "deny",
           "risk": {"level": level}, "path": "/etc/x",
           "reason": "the sandbox refused a write outside the workspace",
           "recoverable": true})
}

/// The opening of a prompt run: `run_started`, the `sandbox_report` of a workspace-write
/// sandbox without network that enforces `enforced` (`landlock_abi`, `fallback_active`),
/// the user's `message` and `turn_started` of step 1.
pub fn prompt_opening(
    enforced: &str,
    landlock_abi: Option<u32>,
    fallback_active: bool,
    message: Value,
) -> Vec<Value> {
    vec![
        json!({"type": "run_started", "kind": "prompt"}),
        json!({"type": "sandbox_report", "mode": "workspace-write", "network": "deny",
               "enforced": enforced, "landlock_abi": landlock_abi, "network_filter": "none",
               "fallback": "prompt", "fallback_active": fallback_active}),
        json!({"type": "user_message", "message": message}),
        json!({"type": "turn_started", "step": 1}),
    ]
}

/// A prompt a `user_prompt` hook blocked (`run_started`, the hook's `block`), then a call
/// `c9` a `before_tool` hook denied.
pub fn blocked_prompt() -> Vec<Value> {
    vec![
        json!({"type": "run_started", "kind": "prompt"}),
        json!({"type": "hook_decided", "hook": "guard", "event": "user_prompt",
               "outcome": "block", "reason": "not here"}),
        json!({"type": "hook_decided", "hook": "guard", "event": "before_tool",
               "outcome": "deny", "reason": "no", "call_id": "c9"}),
    ]
}

/// `request_started` of the agent's first attempt at model `m` of provider `p`.
pub fn request_started() -> Value {
    json!({"type": "request_started", "scope": "agent", "provider": "p", "model": "m",
           "attempt": 1, "max_attempts": 6})
}

/// A model call that starts: `request_started`, `assistant_started`, the reasoning "Look
/// first." and the text "I will " then an empty delta.
pub fn first_words() -> Vec<Value> {
    vec![
        request_started(),
        json!({"type": "assistant_started"}),
        json!({"type": "reasoning_delta", "delta": "Look first."}),
        json!({"type": "text_delta", "delta": "I will "}),
        json!({"type": "text_delta", "delta": ""}),
    ]
}

/// A `tool_result` of call `id` with one text block, nothing truncated, redacted or changed.
pub fn tool_result(id: &str, name: &str, status: &str, text: &str, duration_ms: u64) -> Value {
    json!({"type": "tool_result", "id": id, "name": name, "status": status,
           "content": [{"type": "text", "text": text}], "truncated": false,
           "redacted": false, "changed_files": [], "duration_ms": duration_ms})
}

/// Asserts that `lines` are exactly `<manifest_dir>/tests/golden/<name>.jsonl`, line by line
/// (the first differing line is named); with `UPDATE_GOLDEN` set, writes them there first.
pub fn assert_golden(manifest_dir: &str, name: &str, lines: &[String]) {
    let path = Path::new(manifest_dir)
        .join("tests/golden")
        .join(format!("{name}.jsonl"));
    let got = lines.iter().map(|l| format!("{l}\n")).collect::<String>();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("the golden dir");
        std::fs::write(&path, &got).expect("write the golden file");
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("read {}: {e} (UPDATE_GOLDEN=1 writes it)", path.display()));
    let (want, got): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    for (i, (w, g)) in want.iter().zip(&got).enumerate() {
        assert_eq!(g, w, "{name}.jsonl line {}", i + 1);
    }
    assert_eq!(got.len(), want.len(), "{name}.jsonl: {got:#?}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_out_with_sorted_keys() {
        let got: Vec<Value> = events(vec![
            serde_json::json!({"b": {"z": 1, "a": [{"y": 0, "x": 0}]}, "a": 2}),
        ]);
        assert_eq!(
            got[0].to_string(),
            r#"{"a":2,"b":{"a":[{"x":0,"y":0}],"z":1}}"#
        );
    }
}
