//! An "always allow" that outlives the process, in exec's terms: Zero keeps it in its
//! sandbox grants file (`$XDG_CONFIG_HOME/zero/sandbox-grants.json`, written by Zero's "always
//! allow" and `zero sandbox grants`), and a later `exec` run reads it. Without the grant an
//! ask-mode `bash` call is refused (exec has nobody to ask); with Zero's command-prefix grant
//! the same call runs, `permission_decision` naming the grant, and a compound command that
//! only starts with the prefix is still refused.

mod common;

use common::Sandbox;
use serde_json::json;

fn run(sb: &Sandbox) -> common::Run {
    let script = common::tool_script(
        json!([
            ["b1", "bash", {"command": "echo granted"}],
            ["b2", "bash", {"command": "echo granted; touch compound"}]
        ]),
        "done",
    );
    let script = sb.script("bash.json", &script);
    let run = sb.exec_script(&script, &["--permission-mode", "ask", "run it"], "");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    run
}

fn result(run: &common::Run, id: &str) -> serde_json::Value {
    run.of("tool_result")
        .into_iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no result of {id}: {}", run.stdout))
}

#[test]
fn a_grant_in_zeros_grants_file_lets_a_later_run_go_without_asking() {
    let sb = Sandbox::new();
    let before = run(&sb);
    assert_eq!(result(&before, "b1")["status"], "error", "no grant yet");
    assert_eq!(
        before.of("permission_request").len(),
        2,
        "{}",
        before.stdout
    );

    // What Zero's "always allow `echo …`" leaves behind.
    sb.zero_config(
        "sandbox-grants.json",
        &json!({"schemaVersion": 3, "policyVersion": 2, "grants": {},
                "commandPrefixes": {"bash": [{"toolName": "bash", "prefix": ["echo"],
                                              "approvedAt": "2026-01-01T00:00:00Z"}]}}),
    );
    let after = run(&sb);
    let ran = result(&after, "b1");
    assert_eq!(ran["status"], "ok", "{}", after.stdout);
    assert!(ran["output"].as_str().unwrap_or("").contains("granted"));
    let decision = after
        .of("permission_decision")
        .into_iter()
        .find(|d| d["id"] == "b1")
        .unwrap_or_else(|| panic!("no decision for b1: {}", after.stdout));
    assert_eq!(decision["action"], "allow");
    assert_eq!(decision["grantMatched"], true);
    assert!(
        decision["decisionReason"]
            .as_str()
            .is_some_and(|r| r.contains("bash(echo:*)") && r.contains("sandbox-grants.json")),
        "{decision}"
    );
    assert!(after
        .of("permission_request")
        .iter()
        .all(|r| r["id"] != "b1"));
    assert_eq!(
        result(&after, "b2")["status"],
        "error",
        "a compound command"
    );
    assert!(!sb.work().join("compound").exists());
}
