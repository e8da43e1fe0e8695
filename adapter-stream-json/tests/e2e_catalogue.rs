//! Zero's tool catalogue through the exec binary: `--list-tools` and the stream-json
//! `tool_call`s carry Zero's names and argument shapes, and the new tools run
//! (`apply_patch`, `update_plan`, `exec_command`/`write_stdin`, `ask_user` headless).

mod common;

use common::{tool_script, Sandbox};
use serde_json::json;

#[test]
fn list_tools_shows_zeros_names() {
    let sb = Sandbox::new();
    let run = sb.run(&["exec", "--list-tools", "-o", "stream-json"], "");
    assert_eq!(run.code, 0, "{}", run.stdout);
    let text = run.events()[1]["text"].as_str().expect("text").to_string();
    for name in [
        "apply_patch",
        "ask_user",
        "exec_command",
        "list_directory",
        "update_plan",
        "view_image",
        "web_fetch",
        "write_stdin",
    ] {
        assert!(text.contains(&format!("\n  {name} [")), "{name}: {text}");
    }
    for sdk in ["list_dir [", "plan [", "web_page ["] {
        assert!(!text.contains(&format!("\n  {sdk}")), "{sdk}: {text}");
    }
    assert!(
        !text.contains("web_search ["),
        "no backend, no web_search: {text}"
    );
    // The filters take Zero's names (and an SDK name of a renamed tool).
    let run = sb.run(
        &[
            "exec",
            "--list-tools",
            "-o",
            "stream-json",
            "--enabled-tools",
            "list_directory update_plan",
        ],
        "",
    );
    let text = run.events()[1]["text"].as_str().expect("text").to_string();
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(text.contains("\n  list_directory ["), "{text}");
}

#[test]
fn zeros_tools_run_under_zeros_names() {
    let sb = Sandbox::new();
    std::fs::write(sb.work().join("a.txt"), "one\ntwo\n").expect("write");
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+TWO\n*** Add File: b.txt\n+bee\n*** End Patch";
    let script = sb.script(
        "s.json",
        &tool_script(
            json!([
                ["p1", "apply_patch", {"patch": patch}],
                ["u1", "update_plan", {"plan": [{"content": "patch", "status": "done"}]}],
                ["q1", "ask_user", {"questions": [{"question": "Which?"}]}],
                ["e1", "exec_command", {"cmd": "echo from-a-pty", "yield_time_ms": 5000}],
                ["l1", "list_dir", {"path": "."}]
            ]),
            "Done.",
        ),
    );
    let run = sb.exec_script(&script, &["--auto", "high", "go"], "");
    assert_eq!(run.code, 0, "{}", run.stdout);
    let calls = run.of("tool_call");
    let names: Vec<&str> = calls.iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "apply_patch",
            "update_plan",
            "ask_user",
            "exec_command",
            "list_dir"
        ]
    );
    let results = run.of("tool_result");
    let output = |i: usize| {
        results[i]["output"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(results[0]["status"], "ok", "{}", output(0));
    assert_eq!(output(0), "Patch applied successfully.");
    assert_eq!(
        std::fs::read_to_string(sb.work().join("a.txt")).expect("read"),
        "one\nTWO\n"
    );
    assert_eq!(output(1), "Current Plan:\n1. [completed] patch");
    assert!(
        output(2).starts_with("No interactive user is available"),
        "{}",
        output(2)
    );
    assert!(output(3).contains("from-a-pty"), "{}", output(3));
    assert!(output(3).contains("exit_code: 0"), "{}", output(3));
    // A call under the SDK's earlier name still runs (a transcript recorded before).
    assert_eq!(results[4]["status"], "ok", "{}", output(4));
    assert!(output(4).contains("a.txt"), "{}", output(4));
}
