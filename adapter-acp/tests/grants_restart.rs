//! An "always allow" answer survives a restart of the server: answered in one process, the
//! session loaded (ACP `session/load`) or resumed (ZCode `session/resume`) in a new one runs
//! the same tool without asking, and says the session's answer decided (ACP
//! `_meta.permission`, ZCode `permission.resolved` with `decisionSource: "session"`). The
//! capability itself (the grant recorded with the session and restored) is agent-core's
//! (`tests/guards.rs`); this is each front end's one end-to-end test of it.

mod common;

use std::path::Path;

use common::acp_client::Acp;
use common::{scripted_args, write_script, Client, Env};
use serde_json::{json, Value};

fn write_call(id: &str, path: &str) -> Value {
    let args = json!({"path": path, "content": id}).to_string();
    json!({"tool_call": {"id": id, "name": "write_file", "args": [args]}})
}

/// A script of one call of `write_file` and an answer, in its own directory under `root`.
fn script(root: &Path, name: &str, call: &str, path: &str) -> std::path::PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).expect("script dir");
    write_script(
        &dir,
        json!([
            {"steps": [write_call(call, path)]},
            {"steps": [{"text": "written"}]}
        ]),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_an_always_answer_survives_a_restart_and_session_load() {
    let env = Env::new();
    let ws = env.workspace();
    let first = script(env.root.path(), "one", "w1", "first.txt");
    let mut acp = Acp::spawn(&scripted_args(&first, &env.data()), &[], None);
    acp.initialize().await;
    let sid = acp.new_session(&ws).await;
    let (done, _, asked) = acp.prompt_turn(&sid, "write", "allow_always").await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(asked.len(), 1, "the first write asks");
    assert!(ws.join("first.txt").exists());
    assert!(acp.shutdown().await, "clean exit");

    // A new process on the same data directory.
    let second = script(env.root.path(), "two", "w2", "second.txt");
    let mut acp = Acp::spawn(&scripted_args(&second, &env.data()), &[], None);
    acp.initialize().await;
    let loaded = acp
        .call_raw(
            "session/load",
            json!({"sessionId": sid, "cwd": ws, "mcpServers": []}),
        )
        .await;
    assert!(loaded.get("result").is_some(), "{loaded}");
    acp.backlog.clear();
    let (done, updates, asked) = acp.prompt_turn(&sid, "write again", "reject_once").await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert!(asked.is_empty(), "asked again after the restart: {asked:?}");
    assert!(ws.join("second.txt").exists(), "the call ran");
    let decided = updates
        .iter()
        .find(|u| u["toolCallId"] == "w2" && u["_meta"].to_string().contains("permission"))
        .unwrap_or_else(|| panic!("no decision shown: {updates:?}"));
    let meta = decided["_meta"].to_string();
    assert!(
        meta.contains("\"session\"") && meta.contains("write_file"),
        "{meta}"
    );
    assert!(acp.shutdown().await, "clean exit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zcode_an_always_answer_survives_a_restart_and_session_resume() {
    let env = Env::new();
    let ws = env.workspace_str();
    let spawn = |script: &Path| {
        let mut args: Vec<String> = ["app-server", "--stdio"].map(String::from).into();
        args.extend(env.scripted(script));
        Client::spawn(&args)
    };
    let first = script(env.root.path(), "one", "w1", "first.txt");
    let mut c = spawn(&first);
    let sid = c.create(&ws, "build").await;
    c.call("session/subscribe", json!({"sessionId": sid})).await;
    c.call(
        "session/send",
        json!({"sessionId": sid, "content": "write"}),
    )
    .await;
    let request = c.server_request("interaction/requestPermission").await;
    assert_eq!(request["params"]["toolCallId"], "w1");
    // The answer is the option's own response, as a client sends it.
    let always = request["params"]["options"]
        .as_array()
        .and_then(|options| options.iter().find(|o| o["optionId"] == "allow_always"))
        .map(|o| o["response"].clone())
        .unwrap_or_else(|| panic!("no allow_always option: {request}"));
    c.send(json!({"id": request["id"], "result": always})).await;
    c.events_until(&sid, &["turn.completed"]).await;
    assert!(env.workspace().join("first.txt").exists());
    assert!(c.shutdown().await, "clean exit");

    let second = script(env.root.path(), "two", "w2", "second.txt");
    let mut c = spawn(&second);
    c.call(
        "session/resume",
        json!({"sessionId": sid, "workspace": {"workspacePath": ws, "workspaceKey": ws}}),
    )
    .await;
    c.call("session/subscribe", json!({"sessionId": sid})).await;
    c.call(
        "session/send",
        json!({"sessionId": sid, "content": "write again"}),
    )
    .await;
    let events = c.events_until(&sid, &["turn.completed"]).await;
    assert!(
        !c.raw
            .iter()
            .any(|l| l.contains("interaction/requestPermission")),
        "asked again after the restart"
    );
    assert!(env.workspace().join("second.txt").exists(), "the call ran");
    let resolved = events
        .iter()
        .find(|e| e["type"] == "permission.resolved")
        .unwrap_or_else(|| panic!("no permission.resolved: {events:?}"));
    assert_eq!(resolved["payload"]["toolCallId"], "w2");
    assert_eq!(resolved["payload"]["decision"], "allow");
    assert_eq!(resolved["payload"]["decisionSource"], "session");
    assert!(c.shutdown().await, "clean exit");
}
