//! End-to-end tests of whole runs: spawn the built binary and check what Zero clients see
//! for provider errors, signals, sessions (resume, fork), `--list-tools`, the output
//! formats, a closed stdout and Zero's own flags.

mod common;

use std::io::Write;

use common::{
    answer_script, session_events, session_meta, tool_script, wait_output, Piped, Run, Sandbox,
    RUN_TIMEOUT,
};
use serde_json::{json, Value};
use test_support::{MockModel, Reply};

/// A model server answering every request with a 500 that says not to retry.
fn failing_server() -> MockModel {
    MockModel::start([Reply::json(
        500,
        json!({"error": {"message": "upstream exploded", "type": "server_error"}}),
    )
    .header("x-should-retry", "false")])
}

#[test]
fn provider_error_exits_3() {
    let sb = Sandbox::new();
    let server = failing_server();
    let url = server.v1();
    let mut args = common::openai_exec(&url, Some("key-never-echoed"));
    args.push("hi");
    let run = sb.run(&args, "");
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    run.assert_framing();
    assert_eq!(run.types(), ["run_start", "error", "run_end"]);
    let events = run.events();
    assert_eq!(events[0]["provider"], "openai-compatible");
    assert_eq!(events[0]["model"], "gpt-test");
    assert_eq!(events[1]["code"], "provider_error");
    assert_eq!(events[1]["recoverable"], false);
    assert_eq!(events[2]["status"], "error");
    assert!(server.request_count() >= 1, "the server was called");
    assert!(
        !run.stdout.contains("key-never-echoed"),
        "the api key is not echoed"
    );

    // A scripted stream error is a provider error too; no `final`.
    let script = sb.script(
        "e.json",
        &json!({"turns": [{"steps": [{"text": "partial"}, {"error": {"message": "boom"}}]}]}),
    );
    let run = sb.exec_script(&script, &["hi"], "");
    assert_eq!(run.code, 3);
    run.assert_framing();
    assert_eq!(run.types(), ["run_start", "text", "error", "run_end"]);
    assert_eq!(run.events()[2]["message"], "boom");
    // An unusable provider configuration is reported after the input was validated.
    let run = sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "--script",
            "/nonexistent/script.json",
            "hi",
        ],
        "",
    );
    assert_eq!(run.code, 3);
    assert_eq!(run.types(), ["error", "run_end"]);
    assert_eq!(run.events()[0]["code"], "provider_error");
    let run = sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "-i",
            "stream-json",
            "--script",
            "/nonexistent/script.json",
        ],
        "bad",
    );
    run.assert_usage_error("Invalid stream-json input at line 1: expected a JSON object.");
}

#[test]
fn sigterm_mid_stream_exits_130() {
    let sb = Sandbox::new();
    let script = sb.script(
        "slow.json",
        &json!({"turns": [{"steps": [{"text": "started"}, {"delay_ms": 60000}, {"text": "never"}]}]}),
    );
    let mut child = sb.script_command(&script, &["go"]).spawn_piped();
    let lines = common::line_reader(child.stdout.take().expect("stdout"));
    let mut seen = Vec::new();
    loop {
        let line = lines
            .recv_timeout(RUN_TIMEOUT)
            .expect("a line before the timeout");
        let event: Value = serde_json::from_str(&line).expect("json");
        seen.push(event.clone());
        if event["type"] == "text" {
            break;
        }
    }
    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    while let Ok(line) = lines.recv_timeout(RUN_TIMEOUT) {
        seen.push(serde_json::from_str(&line).expect("json"));
    }
    let output = wait_output(child, RUN_TIMEOUT);
    assert_eq!(output.status.code(), Some(130));
    let n = seen.len();
    assert_eq!(seen[n - 2]["type"], "error");
    assert_eq!(seen[n - 2]["code"], "interrupted");
    assert_eq!(seen[n - 2]["message"], "run cancelled by signal");
    assert_eq!(seen[n - 1]["type"], "run_end");
    assert_eq!(seen[n - 1]["status"], "interrupted");
    assert_eq!(seen[n - 1]["exitCode"], 130);
    assert!(!seen.iter().any(|e| e["type"] == "final"));
    assert!(!seen.iter().any(|e| e["delta"] == "never"));
}

#[test]
fn resume_and_fork_sessions() {
    let sb = Sandbox::new();
    let first = sb.script("1.json", &answer_script("The capital is Paris."));
    let run = sb.exec_script(
        &first,
        &["--init-session-id", "s1", "What is the capital of France?"],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.events()[0]["sessionId"], "s1");

    let second = sb.script("2.json", &answer_script("Still Paris."));
    let run = sb.exec_script(&second, &["--resume", "s1", "Are you sure?"], "");
    assert_eq!(run.code, 0, "{}", run.stdout);
    run.assert_framing();
    assert_eq!(
        run.events()[0]["sessionId"],
        "s1",
        "resume keeps the session id"
    );
    let recorded = session_events(&sb.sessions(), "s1");
    let messages: Vec<&Value> = recorded.iter().filter(|e| e["type"] == "message").collect();
    assert_eq!(messages.len(), 4);
    assert_eq!(
        messages[2]["payload"]["content"], "Are you sure?",
        "the raw prompt is recorded"
    );
    let sequences: Vec<u64> = recorded
        .iter()
        .filter_map(|e| e["sequence"].as_u64())
        .collect();
    assert_eq!(sequences, (1..=sequences.len() as u64).collect::<Vec<_>>());

    // Fork into a new id: events copied (no usage), lineage recorded.
    let third = sb.script("3.json", &answer_script("Forked answer."));
    let run = sb.exec_script(
        &third,
        &["--fork", "s1", "--init-session-id", "f1", "Branch off"],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.events()[0]["sessionId"], "f1");
    let meta = session_meta(&sb.sessions(), "f1");
    assert_eq!(meta["sessionKind"], "fork");
    assert_eq!(meta["parentSessionId"], "s1");
    assert_eq!(meta["rootSessionId"], "s1");
    assert_eq!(meta["title"], "What is the capital of France? (fork)");
    let forked = session_events(&sb.sessions(), "f1");
    let fork_at = forked
        .iter()
        .position(|e| e["type"] == "session_fork")
        .expect("session_fork");
    let copied: Vec<&str> = forked[..fork_at]
        .iter()
        .filter_map(|e| e["type"].as_str())
        .collect();
    assert_eq!(
        copied,
        ["message", "message", "message", "message"],
        "usage is not copied"
    );
    let fork_event = &forked[fork_at];
    assert_eq!(fork_event["payload"]["parentSessionId"], "s1");
    assert_eq!(fork_event["payload"]["copiedEventCount"], 4);
    assert_eq!(forked[0]["id"], "f1:1");
    // The parent is untouched by the fork's run.
    assert_eq!(session_events(&sb.sessions(), "s1").len(), recorded.len());

    // `--resume` alone picks the newest resumable session (the fork).
    let path = second.to_str().expect("p");
    let run = sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "--resume",
            "--script",
            path,
            "again",
        ],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.events()[0]["sessionId"], "f1");

    // A crash mid-append leaves a torn line; the session stays usable.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(sb.sessions().join("s1").join("events.jsonl"))
        .expect("open");
    f.write_all(b"{\"id\":\"s1:99\",\"sessi")
        .expect("torn write");
    drop(f);
    let run = sb.exec_script(&second, &["--resume", "s1", "after crash"], "");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.stderr, "");
    let recovered = session_events(&sb.sessions(), "s1");
    assert_eq!(recovered.last().expect("last")["type"], "message");

    // Preflight errors, in Zero's words, inside the protocol.
    sb.run(&["exec", "-o", "stream-json", "--resume", "nope", "x"], "")
        .assert_usage_error("Zero session not found: nope");
    sb.run(&["exec", "-o", "stream-json", "--fork", "nope", "x"], "")
        .assert_usage_error("Zero session not found: nope");
    sb.run(
        &["exec", "-o", "stream-json", "--resume=../escape", "x"],
        "",
    )
    .assert_usage_error("invalid zero session id \"../escape\"");
    sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "--resume",
            "s1",
            "--fork",
            "s1",
            "x",
        ],
        "",
    )
    .assert_usage_error("Use either --resume or --fork, not both.");
    sb.run(
        &["exec", "-o", "stream-json", "--init-session-id", "s1", "x"],
        "",
    )
    .assert_usage_error("zero session already exists: s1");
    sb.run(
        &["exec", "-o", "stream-json", "--init-session-id=bad/id", "x"],
        "",
    )
    .assert_usage_error("invalid --init-session-id \"bad/id\"");
    let empty = Sandbox::new();
    empty
        .run(&["exec", "-o", "stream-json", "--resume", "x", "p"], "")
        .assert_usage_error("Zero session not found: x");
    // Quirk: `--resume foo` always takes `foo` as the id, so no prompt is left.
    empty
        .run(&["exec", "-o", "stream-json", "--resume", "x"], "")
        .assert_usage_error(
            "Prompt required. Use `zero exec \"prompt\"` or `zero exec --file prompt.txt`.",
        );
    empty
        .run(&["exec", "-o", "stream-json", "--resume"], "")
        .assert_usage_error(
            "Prompt required. Use `zero exec \"prompt\"` or `zero exec --file prompt.txt`.",
        );
    empty
        .run(&["exec", "-o", "stream-json", "--resume=", "p"], "")
        .assert_usage_error("No Zero sessions available to resume.");
}

#[test]
fn list_tools_emits_three_events() {
    let sb = Sandbox::new();
    let run = sb.run(&["exec", "--list-tools", "-o", "stream-json"], "");
    assert_eq!(run.code, 0);
    run.assert_framing();
    assert_eq!(run.types(), ["run_start", "final", "run_end"]);
    let events = run.events();
    let start = events[0].as_object().expect("object");
    let mut keys: Vec<&str> = start.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["cwd", "runId", "schemaVersion", "type"]);
    let text = events[1]["text"].as_str().expect("text");
    assert!(text.starts_with("Tools visible to model:\n"), "{text}");
    assert!(text.contains("\n  bash [shell/prompt] - "), "{text}");
    assert!(text.contains("\n  read_file [read/allow] - "), "{text}");
    assert!(!sb.sessions().exists(), "no session for --list-tools");

    let run = sb.run(
        &[
            "exec",
            "--list-tools",
            "-o",
            "stream-json",
            "--enabled-tools",
            "read_file grep",
        ],
        "",
    );
    let text = run.events()[1]["text"].as_str().expect("text").to_string();
    assert_eq!(text.lines().count(), 3, "{text}");
    let run = sb.run(&["exec", "--list-tools", "-o", "stream-json", "--plan"], "");
    let text = run.events()[1]["text"].as_str().expect("text").to_string();
    assert!(
        !text.contains("write_file") && !text.contains("bash ["),
        "plan hides writers: {text}"
    );
    let run = sb.run(
        &[
            "exec",
            "--list-tools",
            "-o",
            "stream-json",
            "--enabled-tools",
            "update_plan",
            "--disabled-tools",
            "update_plan",
        ],
        "",
    );
    run.assert_usage_error("Tool cannot be both enabled and disabled: update_plan");
    let run = sb.run(&["exec", "--list-tools"], "");
    assert_eq!(run.code, 0);
    assert!(run.stdout.starts_with("Tools visible to model:\n"));
    let run = sb.run(&["exec", "--list-tools", "-o", "json"], "");
    let value: Value = serde_json::from_str(run.stdout.trim()).expect("json");
    assert_eq!(value["type"], "tools");
    assert!(value["tools"].as_array().expect("tools").len() >= 2);
}

#[test]
fn text_and_json_formats() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        &tool_script(json!([["c1", "list_dir", {}]]), "All done."),
    );
    let p = script.to_str().expect("p");
    let run = sb.run(&["exec", "--script", p, "go"], "");
    assert_eq!(run.code, 0);
    assert_eq!(run.stdout, "All done.\n");
    assert!(run.stderr.contains("[tool] list_dir\n"), "{}", run.stderr);
    assert!(run.stderr.contains("[result] "), "{}", run.stderr);
    assert!(!sb.sessions().exists(), "text runs record no session");

    let run = sb.run(&["exec", "-o", "json", "--script", p, "go"], "");
    assert_eq!(run.code, 0);
    let types = run.types();
    assert_eq!(types.first().map(String::as_str), Some("run_start"));
    assert_eq!(&types[types.len() - 2..], ["final", "done"]);
    let events = run.events();
    assert_eq!(events[0]["permission_mode"], "auto");
    assert!(events.iter().all(|e| e.get("schemaVersion").is_none()));
    assert_eq!(events.last().expect("done")["exit_code"], 0);
    let call = &run.of("tool_call")[0];
    assert_eq!(call["arguments"], "{}");

    let bad = sb.script(
        "e.json",
        &json!({"turns": [{"steps": [{"error": {"message": "boom"}}]}]}),
    );
    let run = sb.run(
        &[
            "exec",
            "-o",
            "json",
            "--script",
            bad.to_str().expect("p"),
            "go",
        ],
        "",
    );
    assert_eq!(run.code, 3);
    let events = run.events();
    let n = events.len();
    assert_eq!(
        events[n - 2],
        json!({"type": "error", "code": "provider_error", "message": "boom"})
    );
    assert_eq!(events[n - 1], json!({"type": "done", "exit_code": 3}));
    let run = sb.run(&["exec", "--script", bad.to_str().expect("p"), "go"], "");
    assert_eq!((run.code, run.stdout.as_str()), (3, ""));
    assert_eq!(run.stderr, "[zero] boom\n");
}

/// Text of two assistant messages is separated by a newline (it once ran together as
/// `…the workspace.This is…`); the stream-json deltas stay exactly as streamed.
#[test]
fn text_output_separates_assistant_messages() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        &json!({"turns": [
            {"steps": [
                {"text": "I'll look at the workspace."},
                {"tool_call": {"id": "c1", "name": "list_dir", "args": ["{}"]}}
            ]},
            {"steps": [{"text": "This is "}, {"text": "the workspace."}]}
        ]}),
    );
    let p = script.to_str().expect("p");
    let run = sb.run(&["exec", "--script", p, "go"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "I'll look at the workspace.\nThis is the workspace.\n"
    );
    let run = sb.run(&["exec", "What is here?"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .starts_with("Let me look at the workspace.\nThis is "),
        "{}",
        run.stdout
    );
    let run = sb.run(&["exec", "-o", "stream-json", "--script", p, "go"], "");
    let deltas: Vec<Value> = run.of("text").iter().map(|e| e["delta"].clone()).collect();
    assert_eq!(
        deltas,
        ["I'll look at the workspace.", "This is ", "the workspace."]
    );
}

#[test]
fn closed_stdout_does_not_panic() {
    let sb = Sandbox::new();
    let mut child = sb
        .command(&["exec", "-o", "stream-json", "hi"])
        .spawn_piped();
    drop(child.stdout.take());
    let output = wait_output(child, RUN_TIMEOUT);
    let run = Run::from(output);
    assert_eq!(
        run.code, 1,
        "a stdout write failure is a crash exit: {}",
        run.stderr
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

#[test]
fn zero_style_prompt_flag_and_usage() {
    let sb = Sandbox::new();
    let script = sb.script("s.json", &answer_script("yes"));
    let run = sb.run(
        &[
            "-p",
            "hello",
            "-o",
            "stream-json",
            "--script",
            script.to_str().expect("p"),
        ],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    let id = run.session_id();
    assert_eq!(
        session_events(&sb.sessions(), &id)[0]["payload"]["content"],
        "hello"
    );
    let run = sb.run(&["frobnicate"], "");
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("adapter-stream-json exec"));
}
