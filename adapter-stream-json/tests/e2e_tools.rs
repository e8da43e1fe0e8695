//! End-to-end tests of tool calls: spawn the built binary and check what Zero clients see
//! (calls paired with their results, permissions headless, checkpoints, unsafe modes,
//! redaction, the output cap).

mod common;

use common::{session_events, tool_script, Sandbox};
use serde_json::json;

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
    let run = sb.exec_script(&script, &["go"], "");
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
    let run = sb.exec_script(&script, &["go"], "");
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
    let run = sb.exec_script(&script, &["--permission-mode", "ask", "go"], "");
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
    let run = sb.exec_script(&script, &["go"], "");
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
    let run = sb.exec_script(&script, &["--skip-permissions-unsafe", "go"], "");
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
    let id = run.session_id();
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
    let run = sb.exec_script(&script, &["go"], "");
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
