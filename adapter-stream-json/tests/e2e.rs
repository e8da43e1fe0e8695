//! End-to-end tests: spawn the built binary and check what Zero clients see.

mod common;

use std::io::Write;
use std::process::Stdio;

use base64::Engine;
use common::{session_events, session_meta, wait_output, Run, Sandbox, RUN_TIMEOUT};
use serde_json::{json, Value};
use test_support::{MockModel, Reply};

fn answer_script(text: &str) -> Value {
    json!({"turns": [{"steps": [
        {"reasoning": "thinking"},
        {"text": text},
        {"usage": {"input": 10, "output": 4, "cache_read": 6}}
    ]}]})
}

fn prompt_line(content: &str) -> String {
    json!({"schemaVersion": 2, "type": "prompt", "content": content}).to_string()
}

#[test]
fn happy_path_framing() {
    let sb = Sandbox::new();
    let script = sb.script("s.json", &answer_script("Hello there."));
    let run = sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "--script",
            script.to_str().expect("path"),
            "Say hi",
        ],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "", "clean stream-json runs keep stderr empty");
    run.assert_framing();
    assert_eq!(
        run.types(),
        [
            "run_start",
            "reasoning",
            "text",
            "usage",
            "final",
            "run_end"
        ]
    );
    let events = run.events();
    let start = &events[0];
    assert!(start["sessionId"]
        .as_str()
        .expect("sessionId")
        .starts_with("zero_"));
    assert_eq!(start["cwd"], sb.work().display().to_string());
    assert_eq!(start["provider"], "scripted");
    assert_eq!(start["model"], "scripted-demo");
    assert_eq!(start["apiModel"], "scripted-demo");
    assert!(start.get("permissionMode").is_none());
    assert_eq!(events[1]["delta"], "thinking");
    assert_eq!(events[2]["delta"], "Hello there.");
    assert_eq!(
        (
            events[3]["promptTokens"].as_u64(),
            events[3]["completionTokens"].as_u64(),
            events[3]["totalTokens"].as_u64()
        ),
        (Some(16), Some(4), Some(20))
    );
    assert_eq!(
        events[4]["text"], "Hello there.",
        "reasoning is not folded into final"
    );
    assert_eq!(events[5]["status"], "success");
    assert_eq!(events[5]["exitCode"], 0);

    // The session: exactly two message events, files private.
    let id = start["sessionId"].as_str().expect("id");
    let recorded = session_events(&sb.sessions(), id);
    let kinds: Vec<&str> = recorded.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(kinds, ["message", "provider_usage", "message"]);
    assert_eq!(recorded[0]["payload"]["content"], "Say hi");
    assert_eq!(recorded[0]["id"], format!("{id}:1"));
    assert_eq!(recorded[2]["payload"]["role"], "assistant");
    let meta = session_meta(&sb.sessions(), id);
    assert_eq!(meta["eventCount"], 3);
    assert_eq!(meta["title"], "Say hi");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(sb.sessions().join(id))
            .expect("dir")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}

#[test]
fn default_demo_runs_offline() {
    let sb = Sandbox::new();
    let run = sb.run(
        &["exec", "--output-format=stream-json", "What is here?"],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.assert_framing();
    let types = run.types();
    let call = types
        .iter()
        .position(|t| t == "tool_call")
        .expect("tool_call");
    assert_eq!(types[call + 1], "tool_result");
    assert_eq!(run.of("tool_result")[0]["status"], "ok");
}

#[test]
fn stdin_prompt_events_are_joined() {
    let sb = Sandbox::new();
    let script = sb.script("s.json", &answer_script("ok"));
    let input = format!(
        "{}\n{}\n",
        json!({"schemaVersion": 2, "type": "message", "role": "user", "content": "  Inspect this repo. "}),
        prompt_line("Return only blockers.")
    );
    let run = sb.run(
        &[
            "exec",
            "-i",
            "stream-json",
            "-o",
            "stream-json",
            "--script",
            script.to_str().expect("p"),
        ],
        &input,
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    run.assert_framing();
    let id = run.events()[0]["sessionId"]
        .as_str()
        .expect("id")
        .to_string();
    let recorded = session_events(&sb.sessions(), &id);
    assert_eq!(
        recorded[0]["payload"]["content"],
        "Inspect this repo.\n\nReturn only blockers."
    );
}

#[test]
fn blank_lines_and_crlf() {
    let sb = Sandbox::new();
    let script = sb.script("s.json", &answer_script("ok"));
    let args = [
        "exec",
        "-i",
        "stream-json",
        "-o",
        "stream-json",
        "--script",
        script.to_str().expect("p"),
    ];
    let good = format!(
        "\r\n{}\r\n\r\n   \r\n{}\r\n",
        prompt_line("a"),
        prompt_line("b")
    );
    let run = sb.run(&args, &good);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let id = run.events()[0]["sessionId"]
        .as_str()
        .expect("id")
        .to_string();
    assert_eq!(
        session_events(&sb.sessions(), &id)[0]["payload"]["content"],
        "a\n\nb"
    );
    // Blank lines count toward line numbers.
    let bad = format!("\r\n{}\r\n\r\n{{oops\r\n", prompt_line("a"));
    sb.run(&args, &bad)
        .assert_usage_error("Invalid stream-json input at line 4: expected a JSON object.");
}

#[test]
fn every_input_error_stays_in_the_protocol() {
    let sb = Sandbox::new();
    let line = |v: Value| v.to_string();
    let big = base64::engine::general_purpose::STANDARD.encode(vec![0u8; 10 * 1024 * 1024 + 1]);
    let cases: Vec<(String, String)> = vec![
        (
            "not json".into(),
            "Invalid stream-json input at line 1: expected a JSON object.".into(),
        ),
        (
            "[1,2]".into(),
            "Invalid stream-json input at line 1: expected a JSON object.".into(),
        ),
        (
            "null".into(),
            "Invalid stream-json input at line 1: schemaVersion must be 2".into(),
        ),
        (
            format!(
                "{}\n{}",
                prompt_line("ok"),
                line(json!({"schemaVersion": 2, "type": "prompt", "content": "x", "extra": true}))
            ),
            "Invalid stream-json input at line 2: unknown field extra".into(),
        ),
        (
            line(json!({"schemaVersion": 2, "type": "prompt", "Content": "x"})),
            "Invalid stream-json input at line 1: unknown field Content".into(),
        ),
        (
            line(json!({"schemaVersion": 2, "type": "prompt", "content": "x", "images": []})),
            "Invalid stream-json input at line 1: unknown field images".into(),
        ),
        (
            line(json!({"schemaVersion": "2", "type": "prompt", "content": "x"})),
            "Invalid stream-json input at line 1: expected a JSON object.".into(),
        ),
        (
            line(json!({"schemaVersion": 2, "type": "prompt", "content": 5})),
            "Invalid stream-json input at line 1: expected a JSON object.".into(),
        ),
        (
            line(json!({"type": "prompt", "content": "x"})),
            "Invalid stream-json input at line 1: schemaVersion must be 2".into(),
        ),
        (
            line(json!({"schemaVersion": 2, "type": "prompt", "content": "   "})),
            "Invalid stream-json input at line 1: content is required".into(),
        ),
        (
            line(json!({"schemaVersion": 2, "type": "foo", "content": ""})),
            "Invalid stream-json input at line 1: content is required".into(),
        ),
        (
            line(
                json!({"schemaVersion": 2, "type": "message", "role": "assistant", "content": "x"}),
            ),
            "Invalid stream-json input at line 1: role must be user".into(),
        ),
        (
            line(json!({"schemaVersion": 2, "type": "message", "content": "x"})),
            "Invalid stream-json input at line 1: role must be user".into(),
        ),
        (
            line(json!({"schemaVersion": 2, "type": "foo", "content": "x"})),
            "Invalid stream-json input at line 1: type must be prompt or message".into(),
        ),
        (
            line(json!({"schemaVersion": 2, "content": "x"})),
            "Invalid stream-json input at line 1: type must be prompt or message".into(),
        ),
        (
            "".into(),
            "Stream-json input must include at least one prompt or user message event.".into(),
        ),
        (
            "\n\n".into(),
            "Stream-json input must include at least one prompt or user message event.".into(),
        ),
        (
            line(
                json!({"schemaVersion": 2, "type": "message", "role": "user", "content": "x",
                "images": [{"mediaType": "image/png", "data": "not base64!!"}]}),
            ),
            "Stream-json image data is not valid base64: illegal base64 data at input byte 3"
                .into(),
        ),
        (
            line(
                json!({"schemaVersion": 2, "type": "message", "role": "user", "content": "x",
                "images": [{"mediaType": "image/svg+xml", "data": "aGVsbG8="}]}),
            ),
            "Stream-json image has an unsupported image media type \"image/svg+xml\".".into(),
        ),
        (
            line(
                json!({"schemaVersion": 2, "type": "message", "role": "user", "content": "x",
                "images": [{"mediaType": "image/png", "data": big}]}),
            ),
            "Stream-json image exceeds the 10485760 byte limit.".into(),
        ),
    ];
    for (input, message) in cases {
        let run = sb.run(
            &["exec", "-o", "stream-json", "--input-format", "stream-json"],
            &input,
        );
        run.assert_usage_error(&message);
    }
    // No session is created for rejected input.
    assert!(!sb.sessions().exists() || std::fs::read_dir(sb.sessions()).expect("dir").count() == 0);
}

#[test]
fn images_are_accepted_from_input_and_files() {
    let sb = Sandbox::new();
    let script = sb.script("s.json", &answer_script("I see it."));
    let png = b"\x89PNG\r\n\x1a\nfake";
    std::fs::write(sb.work().join("pic.png"), png).expect("png");
    let data = base64::engine::general_purpose::STANDARD.encode(png);
    // An image-only message runs with an empty prompt.
    let input = json!({"schemaVersion": 2, "type": "message", "role": "user", "content": "",
        "images": [{"mediaType": "jpg", "data": data, "ignored": true}]})
    .to_string();
    let run = sb.run(
        &[
            "exec",
            "-i",
            "stream-json",
            "-o",
            "stream-json",
            "--image",
            "pic.png",
            "--script",
            script.to_str().expect("p"),
        ],
        &input,
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.stderr, "");
    assert_eq!(run.of("final")[0]["text"], "I see it.");
    let missing = sb.run(
        &["exec", "-o", "stream-json", "--image", "nope.png", "look"],
        "",
    );
    missing.assert_usage_error(&format!(
        "image file not found: {}",
        sb.work().join("nope.png").display()
    ));
}

#[test]
fn usage_errors_stay_inside_the_protocol() {
    let sb = Sandbox::new();
    sb.run(&["exec", "-o", "stream-json", "--bogus"], "")
        .assert_usage_error("unknown exec flag \"--bogus\"");
    sb.run(&["exec", "-o", "stream-json", "--provider"], "")
        .assert_usage_error("--provider requires a value");
    // Zero sessions stay in Zero's files: a database is refused, its URL never shown.
    sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "--resume",
            "--session-store",
            "postgres://agent:pw-e2e-0123@127.0.0.1:1/agents",
            "x",
        ],
        "",
    )
    .assert_usage_error(
        "--session-store postgres is not supported by exec: Zero sessions stay in Zero's \
         on-disk layout ($XDG_DATA_HOME/zero/sessions). Sessions shared through PostgreSQL \
         are served by adapter-acp app-server and acp.",
    );
    sb.run(&["exec", "-o", "debug", "--max-turns", "0", "x"], "")
        .assert_usage_error("invalid --max-turns \"0\". Expected a positive integer.");
    sb.run(&["exec", "-o", "stream-json", "--auto=max", "x"], "")
        .assert_usage_error("Invalid autonomy level \"max\". Expected low, medium, or high.");
    sb.run(&["exec", "-o", "stream-json", "--permission-mode", "yolo", "x"], "")
        .assert_usage_error(
            "Invalid permission mode \"yolo\". Expected plan, spec-draft, auto, member, ask, or unsafe.",
        );
    sb.run(
        &["exec", "-o", "stream-json", "-i", "stream-json", "hello"],
        "",
    )
    .assert_usage_error(
        "Stream-json input does not accept positional prompt text. Pipe JSONL or use --file.",
    );
    sb.run(&["exec", "-o", "stream-json"], "")
        .assert_usage_error(
            "Prompt required. Use `zero exec \"prompt\"` or `zero exec --file prompt.txt`.",
        );
    sb.run(&["exec", "-o", "stream-json", "-C", "missing", "x"], "")
        .assert_usage_error(&format!(
            "cwd must be an existing directory: {}",
            sb.work().join("missing").display()
        ));
    sb.run(&["exec", "-o", "stream-json", "--file", "nope.txt"], "")
        .assert_usage_error(&format!(
            "prompt file not found: {}",
            sb.work().join("nope.txt").display()
        ));
    std::fs::write(sb.work().join("empty.txt"), "  \n").expect("write");
    sb.run(&["exec", "-o", "stream-json", "-f", "empty.txt"], "")
        .assert_usage_error(&format!(
            "prompt file is empty: {}",
            sb.work().join("empty.txt").display()
        ));
    sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "--enabled-tools",
            "read_file,nope",
            "x",
        ],
        "",
    )
    .assert_usage_error("Unknown tool: nope");
    sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "--enabled-tools=bash",
            "--disabled-tools=bash",
            "x",
        ],
        "",
    )
    .assert_usage_error("Tool cannot be both enabled and disabled: bash");
    sb.run(
        &["exec", "-o", "stream-json", "--disabled-tools", "a/b", "x"],
        "",
    )
    .assert_usage_error("Invalid tool name \"a/b\".");

    // Before `-o stream-json` is parsed, a parse error is plain text on stderr.
    let run = sb.run(&["exec", "--bogus", "-o", "stream-json"], "");
    assert_eq!(run.code, 2);
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr, "[zero] unknown exec flag \"--bogus\"\n");
    // Text and json formats report usage errors on stderr.
    let run = sb.run(&["exec", "-o", "json", "--max-turns=abc", "x"], "");
    assert_eq!((run.code, run.stdout.as_str()), (2, ""));
    assert_eq!(
        run.stderr,
        "[zero] invalid --max-turns \"abc\". Expected a positive integer.\n"
    );
    // Help exits 0 once the flags before it parse.
    let run = sb.run(&["exec", "--model", "m1", "--help", "--bogus"], "");
    assert_eq!(run.code, 0);
    assert!(run.stdout.contains("--output-format"), "{}", run.stdout);
}

fn tool_script(calls: Value, answer: &str) -> Value {
    let steps: Vec<Value> = calls
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| json!({"tool_call": {"id": c[0], "name": c[1], "args": [c[2].to_string()]}}))
        .collect();
    json!({"turns": [{"steps": steps}, {"steps": [{"text": answer}]}]})
}

#[test]
fn tool_calls_pair_with_their_results_in_order() {
    let sb = Sandbox::new();
    std::fs::write(sb.work().join("a.txt"), "alpha\n").expect("write");
    let script = sb.script(
        "s.json",
        &tool_script(
            json!([
                ["c1", "read_file", {"path": "a.txt"}],
                ["c2", "list_dir", {}],
                ["c3", "no_such_tool", {"x": 1}]
            ]),
            "Done.",
        ),
    );
    let run = sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "--script",
            script.to_str().expect("p"),
            "go",
        ],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    run.assert_framing();
    let events = run.events();
    let tools: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["type"] == "tool_call" || e["type"] == "tool_result")
        .map(|e| {
            (
                e["type"].as_str().unwrap_or_default().into(),
                e["id"].as_str().unwrap_or_default().into(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = ["c1", "c2", "c3"]
        .iter()
        .flat_map(|id| {
            [
                ("tool_call".to_string(), id.to_string()),
                ("tool_result".to_string(), id.to_string()),
            ]
        })
        .collect();
    assert_eq!(tools, expected);
    let calls = run.of("tool_call");
    assert_eq!(calls[0]["sideEffect"], "read");
    assert_eq!(calls[0]["args"], json!({"path": "a.txt"}));
    assert_eq!(calls[2]["sideEffect"], "unknown");
    let results = run.of("tool_result");
    assert_eq!(results[0]["status"], "ok");
    assert!(results[0]["output"]
        .as_str()
        .expect("output")
        .contains("alpha"));
    assert_eq!(results[0]["truncated"], false);
    assert_eq!(results[2]["status"], "error");
    assert_eq!(run.of("final")[0]["text"], "Done.");
    // Plain allow tools emit no permission event.
    assert!(run.of("permission_decision").is_empty());
}

#[test]
fn headless_prompt_gets_permission_request_then_error_result() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        &tool_script(
            json!([["call_sh", "bash", {"command": "touch made.txt"}]]),
            "I could not run it.",
        ),
    );
    let run = sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "--script",
            script.to_str().expect("p"),
            "go",
        ],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    run.assert_framing();
    let types = run.types();
    let at = types
        .iter()
        .position(|t| t == "tool_call")
        .expect("tool_call");
    assert_eq!(
        &types[at..at + 3],
        ["tool_call", "permission_request", "tool_result"]
    );
    let events = run.events();
    let request = &events[at + 1];
    assert_eq!(request["id"], "call_sh");
    assert_eq!(request["name"], "bash");
    assert_eq!(request["action"], "prompt");
    assert_eq!(request["permission"], "prompt");
    assert_eq!(request["permissionMode"], "auto");
    assert_eq!(request["permissionGranted"], false);
    assert_eq!(request["autonomy"], "low");
    assert_eq!(request["sideEffect"], "shell");
    assert!(request["risk"]["level"].is_string());
    assert_eq!(request["sessionId"], events[0]["sessionId"]);
    let result = &events[at + 2];
    assert_eq!(result["status"], "error");
    let output = result["output"].as_str().expect("output");
    assert!(
        output.starts_with("Error: Permission required for bash: "),
        "{output}"
    );
    assert!(
        output.ends_with("The tool is marked \"prompt\" and was not executed."),
        "{output}"
    );
    assert!(!sb.work().join("made.txt").exists(), "the tool did not run");
    assert_eq!(
        run.of("final")[0]["text"],
        "I could not run it.",
        "the model continues"
    );
    // Ask mode prompts even for workspace writes.
    let script = sb.script(
        "w.json",
        &tool_script(
            json!([["call_write", "write_file", {"path": "w.txt", "content": "x"}]]),
            "ok",
        ),
    );
    let run = sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "--permission-mode",
            "ask",
            "--script",
            script.to_str().expect("p"),
            "go",
        ],
        "",
    );
    let request = &run.of("permission_request")[0];
    assert_eq!(request["permissionMode"], "ask");
    assert_eq!(request["sideEffect"], "write");
    assert!(request["reason"]
        .as_str()
        .expect("reason")
        .contains("Creates or overwrites files"));
    assert!(!sb.work().join("w.txt").exists());
}

#[test]
fn workspace_write_is_allowed_in_auto_with_a_checkpoint() {
    let sb = Sandbox::new();
    std::fs::write(sb.work().join("w.txt"), "before").expect("write");
    let script = sb.script(
        "s.json",
        &tool_script(
            json!([["call_write", "write_file", {"path": "w.txt", "content": "after"}]]),
            "Written.",
        ),
    );
    let run = sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "--script",
            script.to_str().expect("p"),
            "go",
        ],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    let types = run.types();
    let at = types
        .iter()
        .position(|t| t == "tool_call")
        .expect("tool_call");
    assert_eq!(
        &types[at..at + 4],
        [
            "tool_call",
            "checkpoint",
            "permission_decision",
            "tool_result"
        ]
    );
    let events = run.events();
    let checkpoint = &events[at + 1]["checkpoint"];
    assert_eq!(checkpoint["tool"], "write_file");
    assert_eq!(checkpoint["files"], json!(["w.txt"]));
    let decision = &events[at + 2];
    assert_eq!(decision["action"], "allow");
    assert_eq!(decision["permission"], "prompt");
    assert_eq!(decision["permissionGranted"], false);
    assert_eq!(decision["reason"], "workspace write is allowed");
    assert_eq!(decision["risk"]["level"], "medium");
    assert_eq!(
        std::fs::read_to_string(sb.work().join("w.txt")).expect("read"),
        "after"
    );
    // The checkpoint is a session event with the before-content stored.
    let id = events[0]["sessionId"].as_str().expect("id");
    let recorded = session_events(&sb.sessions(), id);
    let cp = recorded
        .iter()
        .find(|e| e["type"] == "session_checkpoint")
        .expect("checkpoint recorded");
    assert_eq!(cp["sequence"], checkpoint["sequence"]);
    let blob = cp["payload"]["files"][0]["blob"].as_str().expect("blob");
    let saved =
        std::fs::read_to_string(sb.sessions().join(id).join("blobs").join(blob)).expect("blob");
    assert_eq!(saved, "before");
}

#[test]
fn unsafe_modes_warn_and_pre_approve() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        &tool_script(
            json!([["call_sh", "bash", {"command": "echo ran > made.txt"}]]),
            "Ran it.",
        ),
    );
    let p = script.to_str().expect("p");
    for (flags, why) in [
        (
            vec!["--skip-permissions-unsafe"],
            "--skip-permissions-unsafe",
        ),
        (
            vec!["--permission-mode", "unsafe"],
            "--permission-mode unsafe",
        ),
        (vec!["--auto", "high"], "--auto high"),
    ] {
        let _ = std::fs::remove_file(sb.work().join("made.txt"));
        let mut args = vec!["exec", "-o", "stream-json", "--script", p];
        args.extend(flags);
        args.push("go");
        let run = sb.run(&args, "");
        assert_eq!(run.code, 0, "{}", run.stdout);
        run.assert_framing();
        let events = run.events();
        assert_eq!(events[0]["type"], "run_start");
        assert_eq!(events[1]["type"], "warning");
        assert_eq!(
            events[1]["message"],
            format!("Unsafe permissions are active for this run because {why} was passed.")
        );
        let decision = &run.of("permission_decision")[0];
        assert_eq!(decision["action"], "allow");
        assert_eq!(decision["permissionGranted"], true);
        assert_eq!(decision["permissionMode"], "unsafe");
        assert_eq!(run.of("tool_result")[0]["status"], "ok");
        assert!(sb.work().join("made.txt").exists(), "pre-approved tool ran");
    }
}

#[test]
fn secrets_are_redacted_in_args_output_and_text() {
    let sb = Sandbox::new();
    let secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123";
    let script = sb.script(
        "s.json",
        &json!({"turns": [
            {"steps": [
                {"tool_call": {"id": "c1", "name": "bash", "args": [json!({"command": format!("echo {secret}"), "api_key": "plain-value"}).to_string()]}},
                {"tool_call": {"id": "c2", "name": "write_file", "args": [json!({"path": "k.txt", "content": format!("API_KEY={secret}")}).to_string()]}},
            ]},
            {"steps": [{"text": "Use Authorization: Bearer abcdefghijklmnopqrstuvwxyz please"}]}
        ]}),
    );
    let run = sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "--skip-permissions-unsafe",
            "--script",
            script.to_str().expect("p"),
            "go",
        ],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(!run.stdout.contains(secret), "{}", run.stdout);
    assert!(!run.stdout.contains("plain-value"));
    assert!(!run.stdout.contains("abcdefghijklmnopqrstuvwxyz please"));
    let calls = run.of("tool_call");
    assert_eq!(calls[0]["args"]["api_key"], "[REDACTED]");
    assert_eq!(calls[0]["args"]["command"], "echo [REDACTED]");
    assert_eq!(calls[1]["args"]["content"], "API_KEY=[REDACTED]");
    let result = &run.of("tool_result")[0];
    assert!(result["output"]
        .as_str()
        .expect("out")
        .contains("[REDACTED]"));
    assert_eq!(result["redacted"], true, "the tool boundary scrubbed it");
    assert_eq!(
        run.of("final")[0]["text"],
        "Use Authorization: Bearer [REDACTED] please"
    );
    // Session files carry no secret either.
    let id = run.events()[0]["sessionId"]
        .as_str()
        .expect("id")
        .to_string();
    let raw = std::fs::read_to_string(sb.sessions().join(id).join("events.jsonl")).expect("events");
    assert!(!raw.contains(secret));
}

#[test]
fn tool_output_is_capped_at_10240_bytes() {
    let sb = Sandbox::new();
    let big: String = (0..3000)
        .map(|i| format!("line {i:05} of a long file\n"))
        .collect();
    std::fs::write(sb.work().join("big.txt"), big).expect("write");
    let script = sb.script(
        "s.json",
        &tool_script(json!([["c1", "read_file", {"path": "big.txt"}]]), "ok"),
    );
    let run = sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "--script",
            script.to_str().expect("p"),
            "go",
        ],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    let result = &run.of("tool_result")[0];
    let output = result["output"].as_str().expect("output");
    assert_eq!(result["truncated"], true);
    // read_file pages within the cap and keeps its hint (the agent's tool-output budget).
    assert!(
        output.ends_with("to continue]"),
        "{}",
        &output[output.len().saturating_sub(40)..]
    );
    assert!(output.len() <= 10240, "{}", output.len());
}

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
    let run = sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "--provider",
            "openai",
            "--base-url",
            &url,
            "--api-key",
            "key-never-echoed",
            "--model",
            "gpt-test",
            "hi",
        ],
        "",
    );
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
    let run = sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "--script",
            script.to_str().expect("p"),
            "hi",
        ],
        "",
    );
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
    let mut child = sb
        .command(&[
            "exec",
            "-o",
            "stream-json",
            "--script",
            script.to_str().expect("p"),
            "go",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
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
    let run = sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "--init-session-id",
            "s1",
            "--script",
            first.to_str().expect("p"),
            "What is the capital of France?",
        ],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.events()[0]["sessionId"], "s1");

    let second = sb.script("2.json", &answer_script("Still Paris."));
    let run = sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "--resume",
            "s1",
            "--script",
            second.to_str().expect("p"),
            "Are you sure?",
        ],
        "",
    );
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
    let run = sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "--fork",
            "s1",
            "--init-session-id",
            "f1",
            "--script",
            third.to_str().expect("p"),
            "Branch off",
        ],
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
    let run = sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "--resume",
            "--script",
            second.to_str().expect("p"),
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
    let run = sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "--resume",
            "s1",
            "--script",
            second.to_str().expect("p"),
            "after crash",
        ],
        "",
    );
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
            "plan",
            "--disabled-tools",
            "plan",
        ],
        "",
    );
    run.assert_usage_error("Tool cannot be both enabled and disabled: plan");
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
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
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
    let id = run.events()[0]["sessionId"]
        .as_str()
        .expect("id")
        .to_string();
    assert_eq!(
        session_events(&sb.sessions(), &id)[0]["payload"]["content"],
        "hello"
    );
    let run = sb.run(&["frobnicate"], "");
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("adapter-stream-json exec"));
}
