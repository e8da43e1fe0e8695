//! End-to-end tests of the input side: spawn the built binary and check what Zero clients
//! see for prompts (arguments, stdin, stream-json input lines, images) and for usage and
//! input errors, which stay inside the protocol.

mod common;

use base64::Engine;
use common::{answer_script, prompt_line, session_events, session_meta, Sandbox};
use serde_json::{json, Value};

#[test]
fn happy_path_framing() {
    let sb = Sandbox::new();
    let script = sb.script("s.json", &answer_script("Hello there."));
    let run = sb.exec_script(&script, &["Say hi"], "");
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
    let run = sb.exec_script(&script, &["-i", "stream-json"], &input);
    assert_eq!(run.code, 0, "{}", run.stdout);
    run.assert_framing();
    let id = run.session_id();
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
    let id = run.session_id();
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
    let run = sb.exec_script(
        &script,
        &["-i", "stream-json", "--image", "pic.png"],
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
