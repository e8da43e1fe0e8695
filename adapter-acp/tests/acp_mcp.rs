//! MCP servers from `session/new` / `session/load` `mcpServers`, through `adapter-acp acp`,
//! against the MCP reference servers from npm (`@modelcontextprotocol/server-everything`,
//! `@modelcontextprotocol/server-filesystem`, pinned in `agent-mcp/tests/servers`
//! and installed on first use by `test_support::mcp`). Without Node or the packages these
//! tests print a `skipped: …` line, unless `AGENT_SDK_NODE=required` (CI), when they fail.
//!
//! - a stdio server's tools are ordinary `tool_call`s with the `kind` and title of their
//!   annotations, their results reach the model (the mock model's next request), and the
//!   server's `tools/list_changed` reaches the model's tool list; the session's
//!   `_meta.mcpServers` lists the server;
//! - the same over streamable HTTP (with a header);
//! - a server that does not exist is skipped (listed as failed), the run goes on; a
//!   destructive tool asks permission with kind `edit`;
//! - a server killed mid-call fails the call and the run goes on;
//! - `session/cancel` mid-call answers `cancelled` and the server keeps serving;
//! - after the agent exits no server process is left (checked by pid);
//! - `session/load` connects the servers it is given;
//! - an invalid `mcpServers` list is `invalid_params`, naming the server;
//! - the server's prompts are slash commands: listed in `available_commands_update`
//!   (`/mcp__<server>__<prompt>`, an input hint naming the arguments), `/mcp__… words`
//!   reaches the model as the prompt the server renders, a missing argument is
//!   `invalid_params`.

mod common;

use std::path::{Path, PathBuf};

use common::acp_client::{content_text, of_call, Acp};
use common::{wait_gone, write_script, WAIT};
use serde_json::{json, Value};
use test_support::mcp::{node, script, HttpEverything};
use test_support::{sse, MockModel, Reply};

fn everything_stdio(name: &str) -> Value {
    json!({"name": name, "command": node(), "args": [script("server-everything"), "stdio"], "env": []})
}

struct Fixture {
    root: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let root = tempfile::tempdir().expect("tempdir");
        for dir in ["ws", "data"] {
            std::fs::create_dir_all(root.path().join(dir)).expect("mkdir");
        }
        Self { root }
    }

    fn ws(&self) -> PathBuf {
        self.root.path().join("ws")
    }

    fn stderr(&self) -> PathBuf {
        self.root.path().join("stderr.log")
    }

    fn base_args(&self) -> Vec<String> {
        vec![
            "--data-dir".into(),
            self.root.path().join("data").display().to_string(),
        ]
    }

    /// The agent on the scripted model playing `turns`.
    fn scripted(&self, turns: Value) -> Acp {
        let script = write_script(self.root.path(), turns);
        let mut args = self.base_args();
        args.extend([
            "--provider".into(),
            "scripted".into(),
            "--script".into(),
            script.display().to_string(),
        ]);
        Acp::spawn_in(Some(&self.ws()), &args, &[], Some(&self.stderr()))
    }

    /// The agent on `mock` (OpenAI Chat Completions).
    fn mocked(&self, mock: &MockModel) -> Acp {
        let mut args = self.base_args();
        args.extend([
            "--provider".into(),
            "openai".into(),
            "--base-url".into(),
            mock.v1(),
            "--model".into(),
            "gpt-4o".into(),
            "--api-key".into(),
            "sk-mock-test-key-0123456789".into(),
        ]);
        Acp::spawn_in(Some(&self.ws()), &args, &[], Some(&self.stderr()))
    }
}

/// `session/new` with `servers`; returns the session id and `_meta.mcpServers`.
async fn session_with(acp: &mut Acp, cwd: &Path, servers: Value) -> (String, Vec<Value>) {
    acp.initialize().await;
    let created = acp
        .call("session/new", json!({"cwd": cwd, "mcpServers": servers}))
        .await;
    let sid = created["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_string();
    let status = created["_meta"]["mcpServers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    (sid, status)
}

fn pid_of(status: &[Value], name: &str) -> i32 {
    status
        .iter()
        .find(|s| s["name"] == name)
        .and_then(|s| s["pid"].as_i64())
        .and_then(|p| i32::try_from(p).ok())
        .unwrap_or_else(|| panic!("no pid for {name} in {status:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_from_session_new_serves_the_model() {
    if !test_support::mcp::ready() {
        return;
    }
    let f = Fixture::new();
    let mock = MockModel::start(vec![
        Reply::sse(
            sse::chat::Stream::new()
                .tool_call(
                    "e1",
                    "mcp_everything_echo",
                    r#"{"message":"hello over acp"}"#,
                )
                .tool_call("s1", "mcp_everything_get_sum", r#"{"a":2,"b":40}"#)
                .finish("tool_calls")
                .done(),
        ),
        Reply::chat_text("The sum is 42."),
    ]);
    let mut acp = f.mocked(&mock);
    let (sid, status) =
        session_with(&mut acp, &f.ws(), json!([everything_stdio("everything")])).await;
    assert_eq!(status.len(), 1, "{status:?}");
    assert_eq!(status[0]["status"], "connected", "{status:?}");
    assert_eq!(status[0]["transport"], "stdio");
    assert!(
        status[0]["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|n| n == "mcp_everything_echo")),
        "{status:?}"
    );
    let pid = pid_of(&status, "everything");

    let (reply, updates, asked) = acp.prompt_turn(&sid, "use the tools", "reject_once").await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    assert!(asked.is_empty(), "read-only tools ask nothing: {asked:?}");
    let echo = of_call(&updates, "e1");
    assert_eq!(echo[0]["sessionUpdate"], "tool_call");
    assert_eq!(echo[0]["kind"], "read", "{}", echo[0]);
    assert_eq!(echo[0]["title"], "Echo Tool", "{}", echo[0]);
    let done = echo.last().expect("updates");
    assert_eq!(done["status"], "completed");
    assert!(
        content_text(done).contains("Echo: hello over acp"),
        "{done}"
    );
    let sum = of_call(&updates, "s1");
    assert!(content_text(sum.last().expect("updates")).contains("42"));

    // The results reached the model, and so did the tool the server announced with
    // notifications/tools/list_changed once initialized.
    let requests = mock
        .wait_for_requests(2, WAIT)
        .await
        .expect("two model requests");
    let second = requests[1].json();
    let sent = second["messages"].to_string();
    assert!(sent.contains("Echo: hello over acp"), "{sent}");
    let tools = requests[1].offered_tools();
    assert!(
        tools.iter().any(|n| n == "mcp_everything_echo"),
        "{tools:?}"
    );
    assert!(
        requests.iter().any(|r| r
            .offered_tools()
            .iter()
            .any(|n| n == "mcp_everything_simulate_research_query")),
        "list_changed never reached the model's tools"
    );

    assert!(acp.shutdown().await, "clean exit");
    assert!(
        wait_gone(&[pid]).await.is_empty(),
        "no server left after exit"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamable_http_server_with_headers() {
    if !test_support::mcp::ready() {
        return;
    }
    let f = Fixture::new();
    let server = HttpEverything::start();
    let mut acp = f.scripted(json!([
        {"steps": [{"tool_call": {"id": "e1", "name": "mcp_web_echo", "args": ["{\"message\": \"over http\"}"]}}]},
        {"steps": [{"text": "Done."}]}
    ]));
    let servers = json!([{"type": "http", "name": "web", "url": server.url(),
                          "headers": [{"name": "X-Test", "value": "1"}]}]);
    let (sid, status) = session_with(&mut acp, &f.ws(), servers).await;
    assert_eq!(status[0]["status"], "connected", "{status:?}");
    assert_eq!(status[0]["transport"], "http");
    let (reply, updates, _) = acp.prompt_turn(&sid, "echo", "reject_once").await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    let echo = of_call(&updates, "e1");
    assert_eq!(echo[0]["kind"], "read");
    let done = echo.last().expect("updates");
    assert_eq!(done["status"], "completed", "{done}");
    assert!(content_text(done).contains("Echo: over http"), "{done}");
    assert!(acp.shutdown().await);
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_server_is_skipped_and_a_destructive_tool_asks() {
    if !test_support::mcp::ready() {
        return;
    }
    let f = Fixture::new();
    let root = f.ws().canonicalize().expect("canonical");
    std::fs::write(root.join("notes.txt"), "remember the milk").expect("write");
    let out = root.join("out.txt");
    let mut acp = f.scripted(json!([
        {"steps": [
            {"tool_call": {"id": "r1", "name": "mcp_fs_read_text_file",
                           "args": [json!({"path": root.join("notes.txt")}).to_string()]}},
            {"tool_call": {"id": "w1", "name": "mcp_fs_write_file",
                           "args": [json!({"path": out, "content": "written over MCP"}).to_string()]}}
        ]},
        {"steps": [{"text": "Done."}]}
    ]));
    let servers = json!([
        {"name": "ghost", "command": "/nonexistent/mcp-server", "args": [], "env": []},
        {"name": "fs", "command": node(), "args": [script("server-filesystem"), root], "env": []}
    ]);
    let (sid, status) = session_with(&mut acp, &f.ws(), servers).await;
    let ghost = status
        .iter()
        .find(|s| s["name"] == "ghost")
        .expect("ghost listed");
    assert_eq!(ghost["status"], "failed", "{ghost}");
    assert!(
        ghost["reason"].as_str().is_some_and(|r| !r.is_empty()),
        "{ghost}"
    );
    let fs = status
        .iter()
        .find(|s| s["name"] == "fs")
        .expect("fs listed");
    assert_eq!(fs["status"], "connected", "{fs}");
    let pid = pid_of(&status, "fs");

    let (reply, updates, asked) = acp.prompt_turn(&sid, "read and write", "allow_once").await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    let read = of_call(&updates, "r1");
    assert_eq!(read[0]["kind"], "read", "{}", read[0]);
    assert!(content_text(read.last().expect("updates")).contains("remember the milk"));
    // The destructive write asked first, as an edit.
    assert_eq!(asked.len(), 1, "{asked:?}");
    let tool_call = &asked[0]["params"]["toolCall"];
    assert_eq!(tool_call["toolCallId"], "w1");
    assert_eq!(tool_call["kind"], "edit", "{tool_call}");
    assert_eq!(
        std::fs::read_to_string(&out).expect("written"),
        "written over MCP"
    );
    assert_eq!(
        of_call(&updates, "w1").last().expect("updates")["status"],
        "completed"
    );
    assert!(acp.shutdown().await);
    assert!(
        wait_gone(&[pid]).await.is_empty(),
        "no server left after exit"
    );
}

fn long_operation(id: &str) -> Value {
    json!({"tool_call": {"id": id, "name": "mcp_everything_trigger_long_running_operation",
                         "args": ["{\"duration\": 300, \"steps\": 300}"]}})
}

/// Reads updates until call `id` is in progress.
async fn until_running(acp: &mut Acp, id: &str) {
    acp.next_matching(|m| {
        m["params"]["update"]["toolCallId"] == id
            && m["params"]["update"]["status"] == "in_progress"
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_call_fails_the_call_and_the_run_goes_on() {
    if !test_support::mcp::ready() {
        return;
    }
    let f = Fixture::new();
    let mut acp = f.scripted(json!([
        {"steps": [long_operation("l1")]},
        {"steps": [{"text": "The server died; going on."}]}
    ]));
    let (sid, status) =
        session_with(&mut acp, &f.ws(), json!([everything_stdio("everything")])).await;
    let pid = pid_of(&status, "everything");
    let id = acp.request_prompt(&sid, "wait").await;
    until_running(&mut acp, "l1").await;
    // SAFETY: killing the MCP server our child started (its pid, from the session).
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let (reply, updates, _) = acp.turn(id, "reject_once").await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    let last = *of_call(&updates, "l1").last().expect("updates");
    assert_eq!(last["status"], "failed", "{last}");
    let said: String = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert_eq!(said, "The server died; going on.");
    assert!(acp.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_mid_call_answers_cancelled_and_the_server_keeps_serving() {
    if !test_support::mcp::ready() {
        return;
    }
    let f = Fixture::new();
    let mut acp = f.scripted(json!([
        {"steps": [long_operation("l1")]},
        {"steps": [{"tool_call": {"id": "e1", "name": "mcp_everything_echo", "args": ["{\"message\": \"still here\"}"]}}]},
        {"steps": [{"text": "Still serving."}]}
    ]));
    let (sid, status) =
        session_with(&mut acp, &f.ws(), json!([everything_stdio("everything")])).await;
    let pid = pid_of(&status, "everything");
    let id = acp.request_prompt(&sid, "wait").await;
    until_running(&mut acp, "l1").await;
    acp.send(json!({"method": "session/cancel", "params": {"sessionId": sid}}))
        .await;
    let (reply, updates, _) = tokio::time::timeout(WAIT, acp.turn(id, "reject_once"))
        .await
        .expect("the call ends promptly");
    assert_eq!(reply["result"]["stopReason"], "cancelled", "{reply}");
    assert_eq!(
        of_call(&updates, "l1").last().expect("updates")["status"],
        "failed"
    );
    assert!(!common::process_gone(pid), "the server still runs");
    let (reply, updates, _) = acp.prompt_turn(&sid, "echo", "reject_once").await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    let echo = *of_call(&updates, "e1").last().expect("updates");
    assert_eq!(echo["status"], "completed", "{echo}");
    assert!(content_text(echo).contains("Echo: still here"), "{echo}");
    assert!(acp.shutdown().await);
    assert!(
        wait_gone(&[pid]).await.is_empty(),
        "no server left after exit"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_server_list_is_invalid_params() {
    let f = Fixture::new();
    let mut acp = f.scripted(json!([{"steps": [{"text": "x"}]}]));
    acp.initialize().await;
    let twice = acp
        .call_raw(
            "session/new",
            json!({"cwd": f.ws(), "mcpServers": [
                {"name": "a", "command": "/bin/true", "args": [], "env": []},
                {"name": "a", "command": "/bin/true", "args": [], "env": []}
            ]}),
        )
        .await;
    assert_eq!(twice["error"]["code"], -32602, "{twice}");
    assert!(
        twice["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("\"a\"")),
        "{twice}"
    );
    let bad_url = acp
        .call_raw(
            "session/new",
            json!({"cwd": f.ws(), "mcpServers": [
                {"type": "http", "name": "web", "url": "ftp://example.com/mcp", "headers": []}
            ]}),
        )
        .await;
    assert_eq!(bad_url["error"]["code"], -32602, "{bad_url}");
    // No servers: nothing listed, nothing started.
    let created = acp
        .call("session/new", json!({"cwd": f.ws(), "mcpServers": []}))
        .await;
    assert!(created.get("_meta").is_none(), "{created}");
    assert!(acp.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_load_connects_the_servers_it_is_given() {
    if !test_support::mcp::ready() {
        return;
    }
    let f = Fixture::new();
    let turns = json!([
        {"steps": [{"tool_call": {"id": "e1", "name": "mcp_everything_echo", "args": ["{\"message\": \"after load\"}"]}}]},
        {"steps": [{"text": "Loaded and echoed."}]}
    ]);
    // A session made without servers…
    let mut acp = f.scripted(turns.clone());
    acp.initialize().await;
    let sid = acp.new_session(&f.ws()).await;
    assert!(acp.shutdown().await);

    // …loaded in a new process with one.
    let mut acp = f.scripted(turns);
    acp.initialize().await;
    let loaded = acp
        .call(
            "session/load",
            json!({"sessionId": sid, "cwd": f.ws(), "mcpServers": [everything_stdio("everything")]}),
        )
        .await;
    let status = loaded["_meta"]["mcpServers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(status.len(), 1, "{loaded}");
    assert_eq!(status[0]["status"], "connected", "{loaded}");
    let pid = pid_of(&status, "everything");
    let (reply, updates, _) = acp.prompt_turn(&sid, "echo", "reject_once").await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    let echo = *of_call(&updates, "e1").last().expect("updates");
    assert_eq!(echo["status"], "completed", "{echo}");
    assert!(content_text(echo).contains("Echo: after load"), "{echo}");
    assert!(acp.shutdown().await);
    assert!(
        wait_gone(&[pid]).await.is_empty(),
        "no server left after exit"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_prompts_are_slash_commands() {
    if !test_support::mcp::ready() {
        return;
    }
    let f = Fixture::new();
    let mock = MockModel::start(vec![Reply::chat_text("Sunny.")]);
    let mut acp = f.mocked(&mock);
    let (sid, status) =
        session_with(&mut acp, &f.ws(), json!([everything_stdio("everything")])).await;
    assert_eq!(status[0]["status"], "connected", "{status:?}");
    let pid = pid_of(&status, "everything");
    // Announced after the response: the server's prompts, with their arguments as a hint.
    let announced = acp
        .next_matching(|m| {
            m["method"] == "session/update"
                && m["params"]["update"]["sessionUpdate"] == "available_commands_update"
        })
        .await;
    let list = announced["params"]["update"]["availableCommands"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let command = |name: &str| {
        list.iter()
            .find(|c| c["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {list:?}"))
    };
    let args = command("mcp__everything__args-prompt");
    assert_eq!(
        args["description"],
        "A prompt with two arguments, one required and one optional"
    );
    assert_eq!(args["input"]["hint"], "<city> [state]", "{args}");
    assert!(command("mcp__everything__simple-prompt")
        .get("input")
        .is_none());

    // A required argument missing: the prompt's error, naming the usage; no model call.
    let refused = acp.prompt(&sid, "/mcp__everything__args-prompt").await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("city")),
        "{refused}"
    );
    // The words fill the arguments in order; the server's prompt reaches the model.
    let (reply, _, _) = acp
        .prompt_turn(
            &sid,
            "/mcp__everything__args-prompt Paris France",
            "reject_once",
        )
        .await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    let requests = mock.wait_for_requests(1, WAIT).await.expect("a request");
    assert_eq!(requests.len(), 1, "the refused prompt called no model");
    let sent = requests[0].json()["messages"].to_string();
    assert!(sent.contains("What's weather in Paris, France?"), "{sent}");
    assert!(!sent.contains("/mcp__everything"), "{sent}");

    assert!(acp.shutdown().await, "clean exit");
    assert!(wait_gone(&[pid]).await.is_empty(), "no server left");
}
