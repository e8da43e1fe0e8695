//! MCP servers through `adapter-rpc rpc --mcp-config FILE` on a local mock model: the
//! reference servers from npm (`@modelcontextprotocol/server-everything`, pinned in
//! agent-mcp/tests/servers and installed on first use by `test_support::mcp`) over stdio and
//! streamable HTTP, and a small node fixture for `list_changed`. Without Node or the
//! packages these tests print a `skipped: …` line, unless `AGENT_SDK_NODE=required` (CI),
//! when they fail.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::{json, Value};
use test_support::mcp::{node, script, HttpEverything};
use test_support::{MockModel, Reply};

/// Writes `{"mcpServers": servers}` into `dir` and returns the flags naming it.
fn mcp_config(dir: &Path, servers: Value) -> Vec<String> {
    let path = dir.join("mcp.json");
    std::fs::write(&path, json!({ "mcpServers": servers }).to_string()).expect("write config");
    vec!["--mcp-config".into(), path.display().to_string()]
}

fn everything() -> Value {
    json!({"command": node(), "args": [script("server-everything"), "stdio"]})
}

async fn state(rpc: &mut Rpc, id: &str) -> Value {
    let response = rpc.call(json!({"type": "get_state"}), id).await;
    assert_eq!(response["success"], true, "{response}");
    response["data"].clone()
}

/// Sends a prompt and reads to its `done`.
async fn prompt(rpc: &mut Rpc, id: &str) -> Vec<Value> {
    let started = rpc
        .call(json!({"type": "prompt", "message": "use the tools"}), id)
        .await;
    assert_eq!(started["data"]["started"], true, "{started}");
    rpc.until_type("done").await
}

fn server<'a>(state: &'a Value, name: &str) -> &'a Value {
    state["mcp_servers"]
        .as_array()
        .and_then(|servers| servers.iter().find(|s| s["name"] == name))
        .unwrap_or_else(|| panic!("no MCP server {name} in {state}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_reference_servers_tool_is_called_and_its_result_reaches_the_model() {
    if !test_support::mcp::ready() {
        return;
    }
    let model = MockModel::start(vec![
        Reply::chat_call(
            "e1",
            "mcp_everything_echo",
            json!({"message": "hello from rpc"}),
        ),
        Reply::chat_text("all done"),
    ]);
    let dir = tempfile::tempdir().expect("tempdir");
    let flags = mcp_config(dir.path(), json!({"everything": everything()}));
    let mut rpc = on_mock(&model.v1(), &flags, Some(dir));

    let before = state(&mut rpc, "s0").await;
    let everything = server(&before, "everything");
    assert_eq!(everything["status"], "connected", "{before}");
    assert_eq!(everything["transport"], "stdio");
    let pid = everything["pid"].as_i64().expect("pid") as i32;
    assert!(alive(pid));
    let tools: Vec<&str> = before["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(tools.contains(&"mcp_everything_echo"), "{tools:?}");
    assert!(
        tools.contains(&"read") && tools.contains(&"Task"),
        "{tools:?}"
    );

    let frames = prompt(&mut rpc, "p").await;
    // Ordinary tool events.
    let call = of_type(&frames, "tool_call");
    assert_eq!(call[0]["name"], "mcp_everything_echo");
    assert_eq!(call[0]["args"], json!({"message": "hello from rpc"}));
    assert_eq!(of_type(&frames, "tool_execution_started")[0]["id"], "e1");
    let result = result_of(&frames, "e1");
    assert_eq!(result["is_error"], false, "{result}");
    assert!(result_text(result).contains("hello from rpc"), "{result}");
    // The result reached the model, which saw the MCP tool offered.
    let requests = model
        .wait_for_requests(2, WAIT)
        .await
        .expect("two model calls");
    assert!(requests[0]
        .offered_tools()
        .contains(&"mcp_everything_echo".to_string()));
    let sent = requests[1].tool_message("e1").expect("tool message");
    assert!(sent.contains("hello from rpc"), "{sent}");

    // stdin EOF: the server exits 0 and no MCP child is left.
    rpc.close();
    rpc.rest().await;
    assert!(rpc.exit().await.success());
    assert_gone(pid, "the MCP server").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamable_http_server_works_the_same() {
    if !test_support::mcp::ready() {
        return;
    }
    let everything = HttpEverything::start();
    let url = everything.url();

    let model = MockModel::start(vec![
        Reply::chat_call(
            "h1",
            "mcp_web_echo",
            json!({"message": "over streamable http"}),
        ),
        Reply::chat_text("done"),
    ]);
    let dir = tempfile::tempdir().expect("tempdir");
    let flags = mcp_config(
        dir.path(),
        json!({"web": {"type": "http", "url": url, "headers": {"X-Test": "1"}}}),
    );
    let mut rpc = on_mock(&model.v1(), &flags, Some(dir));
    let before = state(&mut rpc, "s").await;
    let web = server(&before, "web");
    assert_eq!(
        (web["status"].as_str(), web["transport"].as_str()),
        (Some("connected"), Some("http")),
        "{before}"
    );
    let frames = prompt(&mut rpc, "p").await;
    let result = result_of(&frames, "h1");
    assert_eq!(result["is_error"], false, "{result}");
    let requests = model.wait_for_requests(2, WAIT).await.expect("two calls");
    let sent = requests[1].tool_message("h1").expect("tool message");
    assert!(sent.contains("over streamable http"), "{sent}");
    rpc.close();
    rpc.rest().await;
    assert!(rpc.exit().await.success());
    drop(everything);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_does_not_exist_is_skipped_and_the_run_goes_on() {
    let model = MockModel::start(vec![Reply::chat_text("still fine")]);
    let dir = tempfile::tempdir().expect("tempdir");
    let flags = mcp_config(
        dir.path(),
        json!({"ghost": {"command": "/nonexistent/mcp-server", "args": ["--stdio"]}}),
    );
    let mut rpc = on_mock(&model.v1(), &flags, Some(dir));
    let before = state(&mut rpc, "s").await;
    let ghost = server(&before, "ghost");
    assert_eq!(ghost["status"], "failed", "{before}");
    assert!(ghost["reason"].as_str().is_some_and(|r| !r.is_empty()));
    assert!(
        !before["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .any(|t| t.as_str().is_some_and(|t| t.starts_with("mcp_"))),
        "{before}"
    );
    let frames = prompt(&mut rpc, "p").await;
    assert!(of_type(&frames, "error").is_empty(), "{frames:#?}");
    let text: String = of_type(&frames, "text_delta")
        .iter()
        .filter_map(|f| f["delta"].as_str())
        .collect();
    assert_eq!(text, "still fine");
    rpc.close();
    rpc.rest().await;
    assert!(rpc.exit().await.success());
    let stderr = rpc.stderr().await;
    assert!(
        stderr.contains("MCP server \"ghost\" skipped"),
        "stderr: {stderr}"
    );
}

/// A call of server-everything's long operation that would run for 300 s.
fn long_call(id: &str) -> Reply {
    Reply::chat_call(
        id,
        "mcp_everything_trigger_long_running_operation",
        json!({"duration": 300, "steps": 300}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_call_is_an_error_result_and_the_run_goes_on() {
    if !test_support::mcp::ready() {
        return;
    }
    let model = MockModel::start(vec![long_call("l1"), Reply::chat_text("recovered")]);
    let dir = tempfile::tempdir().expect("tempdir");
    let flags = mcp_config(dir.path(), json!({"everything": everything()}));
    let mut rpc = on_mock(&model.v1(), &flags, Some(dir));
    let pid = server(&state(&mut rpc, "s").await, "everything")["pid"]
        .as_i64()
        .expect("pid") as i32;
    rpc.send(json!({"id": "p", "type": "prompt", "message": "go"}))
        .await;
    let mut frames = rpc.until(|f| f["type"] == "tool_execution_started").await;
    // SAFETY: kill(2) on the MCP server's pid with SIGKILL.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    frames.extend(rpc.until_type("done").await);
    let result = result_of(&frames, "l1");
    assert_eq!(result["is_error"], true, "{result}");
    let answer: String = of_type(&frames, "text_delta")
        .iter()
        .filter_map(|f| f["delta"].as_str())
        .collect();
    assert_eq!(answer, "recovered");
    let requests = model.wait_for_requests(2, WAIT).await.expect("two calls");
    assert!(requests[1].tool_message("l1").is_some());
    // The dead server is reported failed and offers no tools.
    let after = state(&mut rpc, "s2").await;
    assert_eq!(server(&after, "everything")["status"], "failed", "{after}");
    rpc.close();
    rpc.rest().await;
    assert!(rpc.exit().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_mid_call_ends_the_call_and_the_server_stays_connected() {
    if !test_support::mcp::ready() {
        return;
    }
    let model = MockModel::start(vec![long_call("l1"), Reply::chat_text("never")]);
    let dir = tempfile::tempdir().expect("tempdir");
    let flags = mcp_config(dir.path(), json!({"everything": everything()}));
    let mut rpc = on_mock(&model.v1(), &flags, Some(dir));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "go"}))
        .await;
    let mut frames = rpc.until(|f| f["type"] == "tool_execution_started").await;
    rpc.send(json!({"id": "a", "type": "abort"})).await;
    frames.extend(rpc.until_type("done").await);
    let result = result_of(&frames, "l1");
    assert_eq!(result["is_error"], true, "{result}");
    assert_eq!(model.request_count(), 1, "no model call after the abort");
    let after = state(&mut rpc, "s").await;
    let everything = server(&after, "everything");
    assert_eq!(everything["status"], "connected", "{after}");
    let pid = everything["pid"].as_i64().expect("pid") as i32;
    rpc.close();
    rpc.rest().await;
    assert!(rpc.exit().await.success());
    assert_gone(pid, "the MCP server").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_offers_the_new_tool_before_the_next_model_call() {
    if !test_support::mcp::ready() {
        return;
    }
    let model = MockModel::start(vec![
        Reply::chat_call("g1", "mcp_dyn_grow", json!({})),
        Reply::chat_call("x1", "mcp_dyn_extra", json!({})),
        Reply::chat_text("done"),
    ]);
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/list_changed_server.cjs");
    let flags = mcp_config(
        dir.path(),
        json!({"dyn": {"command": node(), "args": [fixture.display().to_string()]}}),
    );
    let mut rpc = on_mock(&model.v1(), &flags, Some(dir));
    let before = state(&mut rpc, "s0").await;
    assert_eq!(server(&before, "dyn")["tools"], json!(["mcp_dyn_grow"]));
    let frames = prompt(&mut rpc, "p").await;
    let extra = result_of(&frames, "x1");
    assert_eq!(extra["is_error"], false, "{extra}");
    assert_eq!(result_text(extra), "extra called");
    let requests = model.wait_for_requests(3, WAIT).await.expect("three calls");
    let first = requests[0].offered_tools();
    let second = requests[1].offered_tools();
    assert!(!first.contains(&"mcp_dyn_extra".to_string()), "{first:?}");
    assert!(second.contains(&"mcp_dyn_extra".to_string()), "{second:?}");
    let after = state(&mut rpc, "s1").await;
    assert_eq!(
        server(&after, "dyn")["tools"],
        json!(["mcp_dyn_grow", "mcp_dyn_extra"])
    );
    rpc.close();
    rpc.rest().await;
    assert!(rpc.exit().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_leaves_no_mcp_server_behind() {
    if !test_support::mcp::ready() {
        return;
    }
    let model = MockModel::start(vec![long_call("l1"), Reply::chat_text("never")]);
    let dir = tempfile::tempdir().expect("tempdir");
    let flags = mcp_config(dir.path(), json!({"everything": everything()}));
    let mut rpc = on_mock(&model.v1(), &flags, Some(dir));
    let pid = server(&state(&mut rpc, "s").await, "everything")["pid"]
        .as_i64()
        .expect("pid") as i32;
    rpc.send(json!({"id": "p", "type": "prompt", "message": "go"}))
        .await;
    rpc.until(|f| f["type"] == "tool_execution_started").await;
    rpc.kill(libc::SIGTERM);
    let rest = rpc.rest().await;
    assert_eq!(result_of(&rest, "l1")["is_error"], true, "{rest:#?}");
    assert_eq!(rest.last().map(|f| f["type"].clone()), Some(json!("done")));
    let status = rpc.exit().await;
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    assert_gone(pid, "the MCP server").await;
}
