//! Every capability through `adapter-acp app-server --stdio`, in ZCode's terms: MCP servers
//! from `session/create` (`mcp/list`, tools called over stdio and streamable HTTP, a missing
//! server, a server killed or a call aborted mid-call, `list_changed`, no server left after
//! exit), `--hooks FILE`, the sandbox, sub-agents as child sessions, the context budget,
//! SIGTERM/SIGINT mid-turn and a key given with `--api-key` kept out of error text.
//!
//! The MCP tests drive the reference servers from npm, installed in
//! `crates/agent-mcp/tests/servers` by `npm ci` (`.ci/run` does it), on Node: without them
//! these tests fail, they are never skipped.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::{types, wait_gone, write_script, Client, Env, WAIT};
use serde_json::{json, Value};
use test_support::{sse, MockModel, Reply, Script};
use tokio::io::{AsyncBufReadExt, BufReader};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// `app-server --stdio` with its data directory, then `extra`.
fn args(env: &Env, extra: &[String]) -> Vec<String> {
    let mut args = strings(&["app-server", "--stdio", "--data-dir"]);
    args.push(env.data().display().to_string());
    args.extend(extra.iter().cloned());
    args
}

/// The server on the scripted model playing `turns`, with `extra` flags.
fn scripted(env: &Env, turns: Value, extra: &[&str]) -> Client {
    let script = write_script(env.root.path(), turns);
    let mut flags = strings(&["--provider", "scripted", "--script"]);
    flags.push(script.display().to_string());
    flags.extend(strings(extra));
    Client::spawn_with(
        &args(env, &flags),
        &[],
        Some(&env.root.path().join("stderr.log")),
    )
}

/// The server on OpenAI Chat Completions against `mock`, with `extra` flags.
fn mocked(env: &Env, mock: &MockModel, extra: &[&str]) -> Client {
    let mut flags = strings(&["--provider", "openai", "--model", "gpt-test", "--base-url"]);
    flags.push(mock.v1());
    flags.extend(strings(extra));
    Client::spawn_with(
        &args(env, &flags),
        &[("AGENT_SDK_MAX_RETRIES", "0")],
        Some(&env.root.path().join("stderr.log")),
    )
}

fn tool_call(id: &str, name: &str, args: Value) -> Value {
    json!({"tool_call": {"id": id, "name": name, "args": [args.to_string()]}})
}

fn text(t: &str) -> Value {
    json!({"text": t})
}

fn usage(input: u64, output: u64) -> Value {
    json!({"usage": {"input": input, "output": output}})
}

/// A chat stream calling one tool.
fn chat_call(id: &str, name: &str, args: Value) -> Reply {
    Reply::sse(
        sse::chat::Stream::new()
            .tool_call(id, name, &args.to_string())
            .finish("tool_calls")
            .usage(10, 5, 0)
            .done(),
    )
}

/// A chat stream calling several tools.
fn chat_calls(calls: &[(&str, &str, Value)]) -> Reply {
    let mut stream = sse::chat::Stream::new();
    for (id, name, args) in calls {
        stream = stream.tool_call(id, name, &args.to_string());
    }
    Reply::sse(stream.finish("tool_calls").usage(10, 5, 0).done())
}

fn chat_text(answer: &str) -> Reply {
    Reply::sse(sse::chat::text(answer))
}

/// Creates a session with `extra` params merged in; returns the id.
async fn create(c: &mut Client, ws: &str, mode: &str, extra: Value) -> String {
    let mut params = json!({"workspace": {"workspacePath": ws, "workspaceKey": ws}, "mode": mode});
    if let (Some(params), Some(extra)) = (params.as_object_mut(), extra.as_object()) {
        params.extend(extra.clone());
    }
    let created = c.call("session/create", params).await;
    created["session"]["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_string()
}

/// Subscribes, sends `prompt` and returns the turn's events up to its end.
async fn turn(c: &mut Client, sid: &str, prompt: &str) -> Vec<Value> {
    c.call("session/subscribe", json!({"sessionId": sid})).await;
    c.call("session/send", json!({"sessionId": sid, "content": prompt}))
        .await;
    c.events_until(sid, &["turn.completed", "turn.failed"])
        .await
}

/// The `tool.updated` `result` or `error` of call `id`.
fn outcome_of<'a>(events: &'a [Value], id: &str) -> &'a Value {
    events
        .iter()
        .find(|e| {
            e["type"] == "tool.updated"
                && e["payload"]["toolCallId"] == id
                && (e["payload"]["kind"] == "result" || e["payload"]["kind"] == "error")
        })
        .unwrap_or_else(|| panic!("no outcome of {id} in {:?}", types(events)))
}

/// The tool part of call `id` in `session/messages`.
async fn tool_part(c: &mut Client, sid: &str, id: &str) -> Value {
    let messages = c.call("session/messages", json!({"sessionId": sid})).await;
    messages["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
        .find(|p| p["callId"] == id)
        .unwrap_or_else(|| panic!("no tool part {id} in {messages}"))
}

/// Every text of the messages of a session.
async fn message_texts(c: &mut Client, sid: &str) -> Vec<String> {
    let messages = c.call("session/messages", json!({"sessionId": sid})).await;
    messages["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
        .filter(|p| p["type"] == "text")
        .filter_map(|p| p["text"].as_str().map(str::to_string))
        .collect()
}

fn signal(pid: i32, signal: i32) {
    // SAFETY: sending a signal to a process this test started (or one of its servers).
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "kill {pid}");
}

// ---------------------------------------------------------------------------------------
// MCP
// ---------------------------------------------------------------------------------------

fn servers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../agent-mcp/tests/servers")
}

/// The installed reference server `package`; fails the test when it is missing.
fn server_script(package: &str) -> String {
    let path = servers_dir()
        .join("node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(
        path.is_file(),
        "{} is missing: run `npm ci` in {} (.ci/run does)",
        path.display(),
        servers_dir().display()
    );
    path.display().to_string()
}

fn node() -> String {
    let found = std::process::Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(found, "node is not on PATH; the reference MCP servers need it");
    "node".to_string()
}

/// `server-everything` over streamable HTTP on 127.0.0.1 (a free port).
struct HttpEverything {
    _child: tokio::process::Child,
    url: String,
}

async fn everything_http() -> HttpEverything {
    let mut child = tokio::process::Command::new(node())
        .arg("--require")
        .arg(servers_dir().join("listen-port.cjs"))
        .arg(server_script("server-everything"))
        .arg("streamableHttp")
        .env("PORT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node starts");
    let stderr = child.stderr.take().expect("piped");
    let port = tokio::time::timeout(WAIT, async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(port) = line.strip_prefix("AGENT_MCP_TEST_PORT=") {
                return port.trim().parse::<u16>().ok();
            }
        }
        None
    })
    .await
    .expect("the server reported its port in time")
    .expect("a port");
    HttpEverything {
        _child: child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    }
}

/// `mcp/list` of a session, by server name.
async fn mcp_list(c: &mut Client, sid: &str) -> Vec<Value> {
    let listed = c.call("mcp/list", json!({"sessionId": sid})).await;
    listed["servers"].as_array().expect("servers").clone()
}

fn server<'a>(servers: &'a [Value], name: &str) -> &'a Value {
    servers
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no server {name} in {servers:?}"))
}

/// The tool names a chat request offered.
fn offered(request: &test_support::Request) -> Vec<String> {
    request.json()["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

/// The tool messages a chat request carried, as text.
fn tool_messages(request: &test_support::Request) -> Vec<String> {
    request.json()["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_servers_of_session_create_over_stdio_and_http_a_missing_one_and_no_server_left() {
    let env = Env::new();
    let ws = env.workspace_str();
    let http = everything_http().await;
    let mock = MockModel::start([
        chat_calls(&[
            ("e1", "mcp_everything_echo", json!({"message": "hello over stdio"})),
            ("w1", "mcp_web_get_sum", json!({"a": 2, "b": 40})),
        ]),
        chat_text("Both tools answered."),
        chat_text("Resumed with the list shape."),
    ]);
    let mut c = mocked(&env, &mock, &[]);
    // Claude-style map: a stdio server, an HTTP server with a header, one that does not exist.
    let sid = create(
        &mut c,
        &ws,
        "yolo",
        json!({"mcpServers": {
            "everything": {"command": node(), "args": [server_script("server-everything"), "stdio"]},
            "web": {"type": "http", "url": http.url, "headers": {"X-Test": "1"}},
            "ghost": {"command": env.root.path().join("no-such-server").display().to_string()}
        }}),
    )
    .await;
    let servers = mcp_list(&mut c, &sid).await;
    assert_eq!(servers.len(), 3, "{servers:?}");
    let everything = server(&servers, "everything");
    assert_eq!(everything["status"], "connected", "{everything}");
    assert_eq!(everything["transport"], "stdio");
    assert_eq!(everything["sessionId"], sid.as_str());
    assert!(everything["tools"]
        .as_array()
        .expect("tools")
        .contains(&json!("mcp_everything_echo")));
    let pid = everything["pid"].as_i64().expect("pid") as i32;
    let web = server(&servers, "web");
    assert_eq!(web["status"], "connected", "{web}");
    assert_eq!(web["transport"], "http");
    let ghost = server(&servers, "ghost");
    assert_eq!(ghost["status"], "failed");
    assert!(
        ghost["reason"].as_str().is_some_and(|r| !r.is_empty()),
        "{ghost}"
    );

    // MCP tools are ordinary tool calls; their results reach the model.
    let events = turn(&mut c, &sid, "use the tools").await;
    let done = events.last().expect("end");
    assert_eq!(done["type"], "turn.completed", "{done}");
    assert_eq!(done["payload"]["response"], "Both tools answered.");
    let echo = outcome_of(&events, "e1");
    assert_eq!(echo["payload"]["kind"], "result", "{echo}");
    assert_eq!(echo["payload"]["toolName"], "mcp_everything_echo");
    assert!(echo["payload"]["result"]["content"]
        .as_str()
        .is_some_and(|t| t.contains("hello over stdio")));
    assert!(outcome_of(&events, "w1")["payload"]["result"]["content"]
        .as_str()
        .is_some_and(|t| t.contains("42")));
    let requests = mock.wait_for_requests(2, WAIT).await.expect("two requests");
    let results = tool_messages(&requests[1]);
    assert!(
        results.iter().any(|r| r.contains("hello over stdio")) && results.iter().any(|r| r.contains("42")),
        "{results:?}"
    );
    assert!(offered(&requests[0]).contains(&"mcp_web_echo".to_string()));
    // server-everything announces its task tool with notifications/tools/list_changed once
    // initialized: the refresh before a model call lists it.
    let servers = mcp_list(&mut c, &sid).await;
    assert!(
        server(&servers, "everything")["tools"]
            .as_array()
            .expect("tools")
            .contains(&json!("mcp_everything_simulate_research_query")),
        "{servers:?}"
    );
    assert!(offered(&requests[1]).contains(&"mcp_everything_simulate_research_query".to_string()));
    let part = tool_part(&mut c, &sid, "e1").await;
    assert_eq!(part["state"]["status"], "completed");

    // Closing the session ends its servers; resuming with ACP's list shape starts them.
    let closed = c.call("session/close", json!({"sessionId": sid})).await;
    assert_eq!(closed["closed"], true);
    assert!(wait_gone(&[pid]).await.is_empty(), "server {pid} left after close");
    let resumed = c
        .call(
            "session/resume",
            json!({"sessionId": sid, "mcpServers": [
                {"name": "again", "command": node(), "args": [server_script("server-everything"), "stdio"], "env": []}
            ]}),
        )
        .await;
    assert_eq!(resumed["session"]["sessionId"], sid.as_str());
    let servers = mcp_list(&mut c, &sid).await;
    assert_eq!(servers.len(), 1);
    assert_eq!(server(&servers, "again")["status"], "connected");
    let again = server(&servers, "again")["pid"].as_i64().expect("pid") as i32;
    let events = turn(&mut c, &sid, "still there?").await;
    assert_eq!(
        events.last().expect("end")["payload"]["response"],
        "Resumed with the list shape."
    );
    // An invalid list is the protocol's invalid-params error naming mcpServers.
    let err = c
        .call_err(
            "session/create",
            json!({"workspace": {"workspacePath": ws, "workspaceKey": ws},
                   "mcpServers": [{"name": "bad", "args": ["no command"]}]}),
        )
        .await;
    assert_eq!(err["code"], -32602, "{err}");
    assert!(err["message"].as_str().unwrap_or("").contains("mcpServers"), "{err}");

    // Exit: no MCP server process is left.
    assert!(c.shutdown().await, "clean exit");
    assert!(wait_gone(&[again]).await.is_empty(), "server {again} left after exit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_call_aborted_and_server_killed_mid_call() {
    let env = Env::new();
    let ws = env.workspace_str();
    let long = json!({"duration": 300, "steps": 300});
    let mock = MockModel::start([
        chat_call("long1", "mcp_everything_trigger_long_running_operation", long.clone()),
        chat_call("long2", "mcp_everything_trigger_long_running_operation", long),
        chat_text("Went on after the crash."),
    ]);
    let mut c = mocked(&env, &mock, &[]);
    let sid = create(
        &mut c,
        &ws,
        "yolo",
        json!({"mcpServers": {"everything": {"command": node(),
            "args": [server_script("server-everything"), "stdio"]}}}),
    )
    .await;
    let pid = server(&mcp_list(&mut c, &sid).await, "everything")["pid"]
        .as_i64()
        .expect("pid") as i32;

    // Abort mid-call: session/stop ends the turn cancelled; the server keeps serving.
    c.call("session/subscribe", json!({"sessionId": sid})).await;
    c.call("session/send", json!({"sessionId": sid, "content": "wait"}))
        .await;
    loop {
        let event = c.event(&sid).await;
        if event["type"] == "tool.updated" && event["payload"]["kind"] == "started" {
            break;
        }
    }
    let stopped = c.call("session/stop", json!({"sessionId": sid})).await;
    assert_eq!(stopped["stopped"], true);
    let events = c
        .events_until(&sid, &["turn.completed", "turn.failed"])
        .await;
    assert_eq!(
        events.last().expect("end")["payload"]["resultType"],
        "cancelled"
    );
    let servers = mcp_list(&mut c, &sid).await;
    assert_eq!(server(&servers, "everything")["status"], "connected");
    assert!(!common::process_gone(pid), "the server survived the abort");

    // Killed mid-call: the call fails, the run goes on, mcp/list says failed.
    c.call("session/send", json!({"sessionId": sid, "content": "again"}))
        .await;
    loop {
        let event = c.event(&sid).await;
        if event["type"] == "tool.updated" && event["payload"]["kind"] == "started" {
            break;
        }
    }
    signal(pid, libc::SIGKILL);
    let events = c
        .events_until(&sid, &["turn.completed", "turn.failed"])
        .await;
    let failed = outcome_of(&events, "long2");
    assert_eq!(failed["payload"]["kind"], "error", "{failed}");
    let done = events.last().expect("end");
    assert_eq!(done["payload"]["response"], "Went on after the crash.", "{done}");
    let servers = mcp_list(&mut c, &sid).await;
    assert_eq!(server(&servers, "everything")["status"], "failed", "{servers:?}");
    assert!(c.shutdown().await);
}
