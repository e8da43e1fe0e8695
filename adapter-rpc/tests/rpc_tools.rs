//! End-to-end tests with the real tool set and a local OpenAI-compatible server: spawn
//! `adapter-rpc rpc` and drive it over pipes.

mod common;

use common::{events, text_turn, types, Opts, Rpc};
use serde_json::{json, Value};
use test_support::{sse, MockModel, Reply, Sse};

// ---------------------------------------------------------------------------------------------
// Tools (the real agent-tools set)
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn tool_events_include_progress_and_plan_update() {
    let plan_args = json!({"explanation": "two steps", "plan": [
        {"step": "look around", "status": "in_progress"},
        {"step": "report", "status": "pending"}
    ]})
    .to_string();
    let bash_args = json!({"command": "echo hello-from-bash"}).to_string();
    let mut rpc = Rpc::scripted(json!([
        {"steps": [
            {"tool_call": {"id": "call_plan", "name": "plan", "args": [plan_args]}},
            {"tool_call": {"id": "call_bash", "name": "bash", "args": [bash_args]}}
        ]},
        text_turn("all done")
    ]));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "work"}))
        .await;
    let frames = rpc.until_type("done").await;
    let evs = events(&frames);
    let kinds = types(&evs);
    let turn_end = kinds.iter().position(|k| k == "turn_end").unwrap();
    let second_turn = kinds.iter().rposition(|k| k == "turn_start").unwrap();
    assert_eq!(
        evs[turn_end],
        json!({"type": "turn_end", "stop": "tool_use"})
    );
    // tool_call events come after assistant_message and before turn_end.
    assert_eq!(
        kinds[turn_end - 3..turn_end],
        ["assistant_message", "tool_call", "tool_call"]
    );
    assert_eq!(
        evs[turn_end - 2],
        json!({"type": "tool_call", "id": "call_plan", "name": "plan",
               "args": serde_json::from_str::<Value>(&plan_args).unwrap()})
    );
    let tools: Vec<Value> = evs[turn_end + 1..second_turn].to_vec();
    let tool_kinds = types(&tools);
    assert_eq!(
        tool_kinds[..3],
        ["tool_execution_started", "plan_update", "tool_result"]
    );
    assert_eq!(
        tools[0],
        json!({"type": "tool_execution_started", "id": "call_plan", "name": "plan"})
    );
    assert_eq!(
        tools[1],
        json!({"type": "plan_update", "id": "call_plan", "explanation": "two steps", "plan": [
            {"step": "look around", "status": "in_progress"},
            {"step": "report", "status": "pending"}
        ]})
    );
    assert_eq!(tools[2]["id"], "call_plan");
    assert_eq!(tools[2]["is_error"], false);
    assert_eq!(
        tools[3],
        json!({"type": "tool_execution_started", "id": "call_bash", "name": "bash"})
    );
    let progress: Vec<&Value> = tools
        .iter()
        .filter(|t| t["type"] == "tool_progress")
        .collect();
    assert!(
        !progress.is_empty(),
        "bash reports progress: {tool_kinds:?}"
    );
    assert!(progress.iter().all(|p| p["id"] == "call_bash"));
    assert!(progress
        .iter()
        .any(|p| p["text"].as_str().unwrap().contains("hello-from-bash")));
    let result = tools.last().unwrap();
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["id"], "call_bash");
    assert_eq!(result["is_error"], false);
    assert!(result["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("hello-from-bash"));
    assert!(
        !kinds.iter().any(|k| k.starts_with("permission")),
        "permission events are not part of zut RPC"
    );

    // The transcript holds the tool results as a role "tool" message.
    let messages = rpc.call(json!({"type": "get_messages"}), "m").await;
    let list = messages["data"]["messages"].as_array().unwrap();
    assert_eq!(list.len(), 4);
    assert_eq!(list[2]["role"], "tool");
    assert_eq!(list[2]["content"][0]["type"], "tool_result");
    assert_eq!(list[2]["content"][0]["call_id"], "call_plan");
    assert_eq!(list[2]["content"][1]["call_id"], "call_bash");
    assert_eq!(list[1]["content"][0]["type"], "tool_call");
}

#[tokio::test]
async fn unknown_tools_get_an_error_result_without_execution() {
    let mut rpc = Rpc::scripted(json!([
        {"steps": [{"tool_call": {"id": "c1", "name": "teleport", "args": ["{}"]}}]},
        text_turn("ok")
    ]));
    rpc.send(json!({"type": "prompt", "message": "go"})).await;
    let frames = rpc.until_type("done").await;
    let evs = events(&frames);
    assert!(!evs.iter().any(|e| e["type"] == "tool_execution_started"));
    let result = evs
        .iter()
        .find(|e| e["type"] == "tool_result")
        .expect("tool_result");
    assert_eq!(result["is_error"], true);
}

#[tokio::test]
async fn abort_mid_tool_ends_with_an_error_result_then_done() {
    let bash_args = json!({"command": "echo started; sleep 60"}).to_string();
    let mut rpc = Rpc::scripted(json!([
        {"steps": [{"tool_call": {"id": "c1", "name": "bash", "args": [bash_args]}}]},
        text_turn("never")
    ]));
    rpc.send(json!({"type": "prompt", "message": "go"})).await;
    rpc.until_type("tool_execution_started").await;
    rpc.send(json!({"id": "a", "type": "abort"})).await;
    let frames = rpc.until_type("done").await;
    assert_eq!(frames[0]["id"], "a", "the abort response comes first");
    let evs = events(&frames);
    let result = evs
        .iter()
        .position(|e| e["type"] == "tool_result")
        .expect("tool_result");
    assert_eq!(evs[result]["id"], "c1");
    assert_eq!(evs[result]["is_error"], true);
    assert_eq!(
        types(&evs[result + 1..]),
        ["done"],
        "no turn_end after an aborted tool"
    );
    let state = rpc.call(json!({"type": "get_state"}), "s").await;
    assert_eq!(state["data"]["busy"], false);
}

// ---------------------------------------------------------------------------------------------
// A local OpenAI-compatible HTTP provider
// ---------------------------------------------------------------------------------------------

/// A Chat Completions answer "Hello" in two deltas, with usage (5 of 20 prompt tokens cached).
fn openai_sse() -> Sse {
    sse::chat::Stream::new()
        .delta("Hel")
        .delta("lo")
        .finish("stop")
        .usage(20, 2, 5)
        .done()
}

/// The binary on the OpenAI provider against a mock model answering every request with
/// [`openai_sse`].
fn http_rpc(extra: &[&str]) -> (Rpc, MockModel) {
    let server = MockModel::start([Reply::sse(openai_sse())]);
    let base = server.v1();
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("AGENTS.md"), "MARKER-agents-md-rules").expect("write");
    let mut args = common::openai_args(&base);
    args.extend(extra.iter().map(|s| s.to_string()));
    let rpc = Rpc::spawn(Opts {
        args,
        dir: Some(dir),
        env: vec![
            ("OPENAI_API_KEY", "unused"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:9"),
        ],
        ..Opts::default()
    });
    (rpc, server)
}

#[tokio::test]
async fn full_prompt_on_a_local_openai_compatible_server() {
    let (mut rpc, server) = http_rpc(&[]);
    let hello = rpc.call(json!({"type": "hello"}), "h").await;
    assert_eq!(hello["data"]["provider"], "openai");
    assert_eq!(hello["data"]["model"], "gpt-test");
    let frames = common::say_hello(&mut rpc).await;
    assert_eq!(frames[3]["scope"], "agent");
    assert_eq!(frames[3]["provider"], "openai");
    assert_eq!(frames[3]["model"], "gpt-test");
    assert_eq!(frames[4]["scope"], "provider");
    let usage = &frames[8];
    assert_eq!(
        usage["input"].as_u64().unwrap()
            + usage["cache_read"].as_u64().unwrap()
            + usage["cache_write"].as_u64().unwrap(),
        20
    );
    assert_eq!(usage["cache_read"], 5);
    assert_eq!(usage["cache_measured_prompt"], 20);
    assert_eq!(usage["cache_measured_read"], 5);
    assert_eq!(usage["output"], 2);
    assert_eq!(
        frames[9]["content"],
        json!([{"type": "text", "text": "Hello"}])
    );
    assert_eq!(frames[10], json!({"type": "turn_end", "stop": "end"}));

    let requests = server
        .wait_for_requests(1, common::WAIT)
        .await
        .expect("request");
    let (head, body) = (requests[0].head(), requests[0].json());
    assert!(head.starts_with("POST /v1/chat/completions "), "{head}");
    assert!(head
        .to_ascii_lowercase()
        .contains("authorization: bearer sk-test-key"));
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["stream"], true);
    let system = body["messages"][0].to_string();
    assert!(
        system.contains("MARKER-agents-md-rules"),
        "AGENTS.md is in the system prompt: {system}"
    );
    // The key never reaches stdout.
    assert!(rpc.pipe.raw.iter().all(|l| !l.contains("sk-test-key")));
    rpc.close();
    assert!(rpc.exit().await.success());
}

#[tokio::test]
async fn no_context_files_keeps_agents_md_out_of_the_prompt() {
    let (mut rpc, server) = http_rpc(&[
        "--no-context-files",
        "--append-system-prompt",
        "EXTRA-SECTION",
    ]);
    rpc.send(json!({"type": "prompt", "message": "hi"})).await;
    rpc.until_type("done").await;
    let requests = server
        .wait_for_requests(1, common::WAIT)
        .await
        .expect("request");
    let body = requests[0].json();
    let all = body["messages"].to_string();
    assert!(!all.contains("MARKER-agents-md-rules"), "{all}");
    assert!(all.contains("EXTRA-SECTION"), "{all}");
}

#[tokio::test]
async fn a_link_named_zut_works_as_zut_rpc() {
    let dir = tempfile::tempdir().expect("tempdir");
    let link = dir.path().join("zut");
    std::os::unix::fs::symlink(common::bin(), &link).expect("symlink");
    let mut child = tokio::process::Command::new(&link)
        .args(["rpc", "--provider", "scripted"])
        .current_dir(dir.path())
        .env_remove("ZUTCORE_RPC_TOKEN")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn zut");
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(b"{\"id\":\"1\",\"type\":\"ping\"}\n")
            .await
            .expect("write");
    }
    let output = tokio::time::timeout(common::WAIT, child.wait_with_output())
        .await
        .expect("zut exited")
        .expect("output");
    assert!(output.status.success());
    let line: Value = serde_json::from_slice(&output.stdout).expect("one JSON line");
    assert_eq!(line["data"]["pong"], true);

    let failed = tokio::process::Command::new(&link)
        .args(["rpc", "--provider", "nope"])
        .stdin(std::process::Stdio::null())
        .output();
    let failed = tokio::time::timeout(common::WAIT, failed)
        .await
        .expect("exit")
        .expect("output");
    assert_eq!(failed.status.code(), Some(1));
    assert!(failed.stdout.is_empty());
    assert!(String::from_utf8_lossy(&failed.stderr).starts_with("zut: "));
}
