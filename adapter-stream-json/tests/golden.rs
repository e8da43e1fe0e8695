//! Golden in-process tests of the stream-json pipeline: a fixed sequence of agent events
//! goes through Zero's order, the turn fold and the renderer (no session, no binary) and
//! becomes exactly the lines in `tests/golden/*.jsonl`, as written to stdout (redacted, keys
//! sorted), then the exit code. `UPDATE_GOLDEN=1` rewrites the files.

use adapter_stream_json::cli::OutputFormat;
use adapter_stream_json::mapping::MappingConfig;
use adapter_stream_json::output::{Frames, Renderer};
use adapter_stream_json::pipeline::ZeroFold;
use agent_core::provider::OutputSchema;
use agent_core::structured::OutputSpec;
use agent_core::{AgentEvent, Message};
use serde_json::{json, Value};
use test_support::golden;

const RUN_ID: &str = "run_20260101000000_abcdef";

fn message(message: Message) -> Value {
    serde_json::to_value(message).expect("a message serialises")
}

fn wrap(event: Value) -> Value {
    golden::subagent("task_1", "t1", event)
}

fn result(id: &str, name: &str, status: &str, text: &str) -> Value {
    golden::tool_result(id, name, status, text, 1)
}

fn permission(kind: &str, id: &str, name: &str, extra: Value) -> Value {
    let mut event = json!({"type": kind, "id": id, "name": name, "args": {"command": "make"},
        "mode": "ask", "permission": "prompt", "side_effect": "shell",
        "reason": "bash needs approval", "risk": {"level": "medium", "categories": ["shell"]}});
    if let (Some(event), Some(extra)) = (event.as_object_mut(), extra.as_object()) {
        event.extend(extra.clone());
    }
    event
}

/// A whole turn: a sandbox that enforces less than asked, reasoning and text (an empty
/// delta too), usage, three calls announced together and regrouped per call (a read, a
/// `bash` call a hook rewrites, that asks and is refused, a write the sandbox blocks, a
/// secret in its output), a sub-agent with calls of its own, a recoverable error, a
/// compaction, a second model call cut by the output limit, and the end.
fn a_turn() -> Vec<AgentEvent> {
    let usage = golden::usage(100, 20, 30, Some(0.25));
    let block = golden::sandbox_block("write_file", "high");
    golden::events(
        [
            golden::prompt_opening(
                "partial",
                None,
                false,
                message(Message::user_text("fix it")),
            ),
            golden::first_words(),
            vec![
                json!({"type": "usage", "turn": usage, "cumulative": usage}),
                json!({"type": "text_delta", "delta": "fix it."}),
                json!({"type": "tool_use_started", "id": "r1", "name": "read_file"}),
                json!({"type": "tool_use_args_delta", "id": "r1", "delta": "{}"}),
                json!({"type": "tool_use_ended", "id": "r1"}),
                json!({"type": "assistant_message",
               "message": message(Message::assistant_text("I will fix it."))}),
                json!({"type": "context_usage", "used": 150, "window": 128000, "percent": 0.1}),
                json!({"type": "tool_call", "id": "r1", "name": "read_file",
               "args": {"path": "src/a.rs"}, "side_effect": "read"}),
                json!({"type": "tool_call", "id": "b1", "name": "bash", "args": {"command": "make"},
               "raw_args": "{\"command\": \"make\"}", "side_effect": "shell"}),
                json!({"type": "tool_call", "id": "w1", "name": "write_file",
               "args": {"path": "/etc/x", "content": "x"}, "side_effect": "write"}),
                json!({"type": "tool_call", "id": "t1", "name": "Task",
               "args": {"name": "explorer", "description": "find the tests", "prompt": "go"}}),
                json!({"type": "turn_ended", "step": 1, "stop": "tool_use"}),
                json!({"type": "tool_execution_started", "id": "r1", "name": "read_file"}),
                json!({"type": "tool_progress", "id": "r1", "stream": "status", "text": "reading"}),
                result(
                    "r1",
                    "read_file",
                    "ok",
                    "key sk-abcdefghijklmnopqrstuv here",
                ),
                json!({"type": "hook_decided", "hook": "guard", "event": "before_tool",
               "outcome": "rewrite", "reason": "normalised", "call_id": "b1"}),
                permission("permission_requested", "b1", "bash", json!({})),
                permission(
                    "permission_decided",
                    "b1",
                    "bash",
                    json!({"action": "deny", "granted": false}),
                ),
                result("b1", "bash", "error", "Error: permission denied"),
                json!({"type": "tool_execution_started", "id": "w1", "name": "write_file"}),
                json!({"type": "tool_blocked", "id": "w1", "name": "write_file", "block": block}),
                result(
                    "w1",
                    "write_file",
                    "error",
                    "Error: the sandbox refused the write",
                ),
                json!({"type": "tool_execution_started", "id": "t1", "name": "Task"}),
                json!({"type": "subagent_started", "task_id": "task_1", "name": "explorer",
               "call_id": "t1", "description": "find the tests", "model": "m", "depth": 1}),
                wrap(json!({"type": "text_delta", "delta": "Looking."})),
                wrap(json!({"type": "usage", "turn": usage, "cumulative": usage})),
                wrap(json!({"type": "tool_call", "id": "k1", "name": "grep",
                    "args": {"pattern": "fn test"}})),
                wrap(result("k1", "grep", "ok", "tests/a.rs")),
                wrap(json!({"type": "run_finished", "status": "success",
                    "final_text": "Tests are in tests/."})),
                json!({"type": "subagent_finished", "task_id": "task_1", "name": "explorer",
               "call_id": "t1", "status": "success", "final_text": "Tests are in tests/.",
               "usage": usage, "duration_ms": 40}),
                result("t1", "Task", "ok", "Tests are in tests/."),
                json!({"type": "plan_updated", "id": "p", "explanation": null,
               "plan": [{"step": "read", "status": "completed"}]}),
                json!({"type": "error", "code": "provider", "message": "slow down",
               "recoverable": true}),
                json!({"type": "compaction_started", "reason": "overflow"}),
                json!({"type": "compaction_finished", "summary": "s", "before": 170000,
               "after": 2100}),
                json!({"type": "turn_started", "step": 2}),
                json!({"type": "text_delta", "delta": "Done."}),
                json!({"type": "usage", "turn": usage, "cumulative": usage}),
                json!({"type": "turn_ended", "step": 2, "stop": "length"}),
                json!({"type": "run_finished", "status": "success", "final_text": "Done."}),
            ],
        ]
        .concat(),
    )
}

/// Runs that end otherwise: the step limit, a provider error, a prompt a hook blocked, a
/// hook that halts, a stream cut off without its end, a compaction whose start was not
/// seen.
fn endings() -> Vec<(&'static str, Vec<AgentEvent>)> {
    let usage = golden::usage(1, 1, 0, None);
    let run = |mut body: Vec<Value>, end: Value| {
        body.push(end);
        golden::events(body)
    };
    vec![
        (
            "max_steps",
            run(
                vec![
                    json!({"type": "text_delta", "delta": "partial"}),
                    json!({"type": "error", "code": "max_steps",
                           "message": "step limit reached", "recoverable": false}),
                ],
                json!({"type": "run_finished", "status": "error", "final_text": "partial"}),
            ),
        ),
        (
            "provider_error",
            run(
                vec![
                    json!({"type": "error", "code": "provider", "message": "HTTP 500",
                            "recoverable": false}),
                ],
                json!({"type": "run_finished", "status": "error"}),
            ),
        ),
        (
            "error_without_message",
            golden::events(vec![json!({"type": "run_finished", "status": "error"})]),
        ),
        (
            "blocked_prompt",
            run(
                vec![
                    json!({"type": "hook_decided", "hook": "guard", "event": "user_prompt",
                            "outcome": "block", "reason": "not here"}),
                ],
                json!({"type": "run_finished", "status": "success"}),
            ),
        ),
        (
            "halted",
            run(
                vec![
                    json!({"type": "hook_decided", "hook": "judge", "event": "stop",
                            "outcome": "halt", "reason": " "}),
                ],
                json!({"type": "run_finished", "status": "aborted"}),
            ),
        ),
        (
            "cut_off",
            golden::events(vec![
                json!({"type": "text_delta", "delta": "so far"}),
                json!({"type": "tool_call", "id": "c1", "name": "list_dir", "args": {}}),
                json!({"type": "usage", "turn": usage, "cumulative": usage}),
            ]),
        ),
        (
            "compaction",
            run(
                vec![
                    json!({"type": "compaction_finished", "summary": "s", "before": 9,
                            "after": 1}),
                ],
                json!({"type": "run_finished", "status": "success", "final_text": ""}),
            ),
        ),
    ]
}

fn golden(name: &str, lines: &[String]) {
    golden::assert_golden(env!("CARGO_MANIFEST_DIR"), name, lines);
}

/// What a run of `events` writes in `format`, each event lent as the turn driver lends it,
/// then `exit: N`; `interrupted`: a signal ended it.
fn run_ended(
    format: OutputFormat,
    events: &[AgentEvent],
    mut fold: ZeroFold,
    interrupted: bool,
) -> Vec<String> {
    let mut renderer = Renderer::new(
        format,
        RUN_ID,
        Box::new(std::io::sink()),
        Box::new(std::io::sink()),
    );
    let mut frames = Frames::new();
    for event in events {
        fold.map(event, &mut renderer, &mut frames).expect("render");
    }
    let code = fold
        .finish(interrupted, &mut renderer, &mut frames)
        .expect("finish");
    let text = String::from_utf8(frames.bytes().to_vec()).expect("utf-8");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.push(format!("exit: {code}"));
    lines
}

fn run(format: OutputFormat, events: &[AgentEvent], fold: ZeroFold) -> Vec<String> {
    run_ended(format, events, fold, false)
}

fn config() -> MappingConfig {
    MappingConfig {
        session_id: "ses_1".into(),
        permission_mode: "ask".into(),
        autonomy: "low".into(),
    }
}

fn fold() -> ZeroFold {
    ZeroFold::new(config(), None)
}

#[test]
fn a_whole_turn_writes_these_lines() {
    golden("turn", &run(OutputFormat::StreamJson, &a_turn(), fold()));
}

#[test]
fn a_whole_turn_writes_these_json_lines() {
    golden("turn_json", &run(OutputFormat::Json, &a_turn(), fold()));
}

#[test]
fn other_endings_write_these_lines() {
    let mut lines = Vec::new();
    for (name, events) in endings() {
        lines.push(format!("# {name}"));
        lines.extend(run(OutputFormat::StreamJson, &events, fold()));
    }
    golden("endings", &lines);
}

/// `--output-schema`: a successful run whose answer fails the check ends
/// `output_schema_error`; one that passes ends as usual; a failed run is not checked.
#[test]
fn the_output_schema_decides_a_successful_end() {
    let spec = || {
        let schema = OutputSchema {
            name: "answer".into(),
            schema: json!({"type": "object"}),
            strict: false,
        };
        Some(OutputSpec::new(schema, |answer| {
            match answer.starts_with('{') {
                true => Ok(()),
                false => Err(format!("`{answer}` is not an object")),
            }
        }))
    };
    let end = |text: &str| {
        golden::events(vec![
            json!({"type": "run_finished", "status": "success", "final_text": text}),
        ])
    };
    let mut lines = Vec::new();
    for (name, events) in [
        ("invalid", end("plain")),
        ("valid", end("{}")),
        (
            "failed",
            golden::events(vec![json!({"type": "run_finished", "status": "error"})]),
        ),
    ] {
        lines.push(format!("# {name}"));
        lines.extend(run(
            OutputFormat::StreamJson,
            &events,
            fold().check_output(spec()),
        ));
    }
    golden("output_schema", &lines);
}

/// A signal ends the run `interrupted`, whatever its `RunFinished` said.
#[test]
fn an_interrupted_run_ends_interrupted() {
    let end = golden::events(vec![
        json!({"type": "run_finished", "status": "success", "final_text": "x"}),
    ]);
    let lines = run_ended(OutputFormat::StreamJson, &end, fold(), true);
    golden("interrupted", &lines);
}
