//! What only `adapter-acp app-server --stdio` has among the capabilities (the scenarios
//! every front end shares are run by `tests/app_server_capabilities.rs`): MCP servers from
//! `session/create` (`mcp/list`, tools called over stdio and streamable HTTP, a missing
//! server, a server killed or a call aborted mid-call, `list_changed`, no server left after
//! exit), a background task listed and cancelled, SIGTERM/SIGINT mid-turn (exit 0, the
//! session resumable) and spans exported to an OTLP endpoint.
//!
//! The MCP tests drive the reference servers from npm, pinned in `agent-mcp/tests/servers`
//! and installed on first use by `test_support::mcp`, on Node: without them these tests
//! print a `skipped: …` line, unless `AGENT_SDK_NODE=required` (CI), when they fail.

mod common;

use common::{
    message_texts, outcome_of, send_turn, text, tool_part, types, wait_gone, write_script, Client,
    Env, WAIT,
};
use serde_json::{json, Value};
use test_support::mcp::{node, script, HttpEverything};
use test_support::{sse, MockModel, Reply, Script};

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
    scripted_with_env(env, turns, extra, &[])
}

/// [`scripted`] with extra environment variables.
fn scripted_with_env(env: &Env, turns: Value, extra: &[&str], vars: &[(&str, &str)]) -> Client {
    let script = write_script(env.root.path(), turns);
    let mut flags = strings(&["--provider", "scripted", "--script"]);
    flags.push(script.display().to_string());
    flags.extend(strings(extra));
    Client::spawn_with(
        &args(env, &flags),
        vars,
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

/// A chat stream calling several tools.
fn chat_calls(calls: &[(&str, &str, Value)]) -> Reply {
    let mut stream = sse::chat::Stream::new();
    for (id, name, args) in calls {
        stream = stream.tool_call(id, name, &args.to_string());
    }
    Reply::sse(stream.finish("tool_calls").usage(10, 5, 0).done())
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
    send_turn(c, sid, prompt).await
}

fn signal(pid: i32, signal: i32) {
    // SAFETY: sending a signal to a process this test started (or one of its servers).
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "kill {pid}");
}
// ---------------------------------------------------------------------------------------
// MCP
// ---------------------------------------------------------------------------------------

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
    if !test_support::mcp::ready() {
        return;
    }
    let env = Env::new();
    let ws = env.workspace_str();
    let http = HttpEverything::start();
    let mock = MockModel::start([
        chat_calls(&[
            (
                "e1",
                "mcp_everything_echo",
                json!({"message": "hello over stdio"}),
            ),
            ("w1", "mcp_web_get_sum", json!({"a": 2, "b": 40})),
        ]),
        Reply::chat_text("Both tools answered."),
        Reply::chat_text("Resumed with the list shape."),
    ]);
    let mut c = mocked(&env, &mock, &[]);
    // Claude-style map: a stdio server, an HTTP server with a header, one that does not exist.
    let sid = create(
        &mut c,
        &ws,
        "yolo",
        json!({"mcpServers": {
            "everything": {"command": node(), "args": [script("server-everything"), "stdio"]},
            "web": {"type": "http", "url": http.url(), "headers": {"X-Test": "1"}},
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
        results.iter().any(|r| r.contains("hello over stdio"))
            && results.iter().any(|r| r.contains("42")),
        "{results:?}"
    );
    assert!(requests[0]
        .offered_tools()
        .contains(&"mcp_web_echo".to_string()));
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
    assert!(requests[1]
        .offered_tools()
        .contains(&"mcp_everything_simulate_research_query".to_string()));
    let part = tool_part(&mut c, &sid, "e1").await;
    assert_eq!(part["state"]["status"], "completed");

    // Closing the session ends its servers; resuming with ACP's list shape starts them.
    let closed = c.call("session/close", json!({"sessionId": sid})).await;
    assert_eq!(closed["closed"], true);
    assert!(
        wait_gone(&[pid]).await.is_empty(),
        "server {pid} left after close"
    );
    let resumed = c
        .call(
            "session/resume",
            json!({"sessionId": sid, "mcpServers": [
                {"name": "again", "command": node(), "args": [script("server-everything"), "stdio"], "env": []}
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
    assert!(
        err["message"].as_str().unwrap_or("").contains("mcpServers"),
        "{err}"
    );

    // Exit: no MCP server process is left.
    assert!(c.shutdown().await, "clean exit");
    assert!(
        wait_gone(&[again]).await.is_empty(),
        "server {again} left after exit"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_call_aborted_and_server_killed_mid_call() {
    if !test_support::mcp::ready() {
        return;
    }
    let env = Env::new();
    let ws = env.workspace_str();
    let long = json!({"duration": 300, "steps": 300});
    let mock = MockModel::start([
        Reply::chat_call(
            "long1",
            "mcp_everything_trigger_long_running_operation",
            long.clone(),
        ),
        Reply::chat_call(
            "long2",
            "mcp_everything_trigger_long_running_operation",
            long,
        ),
        Reply::chat_text("Went on after the crash."),
    ]);
    let mut c = mocked(&env, &mock, &[]);
    let sid = create(
        &mut c,
        &ws,
        "yolo",
        json!({"mcpServers": {"everything": {"command": node(),
            "args": [script("server-everything"), "stdio"]}}}),
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
    c.call(
        "session/send",
        json!({"sessionId": sid, "content": "again"}),
    )
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
    assert_eq!(
        done["payload"]["response"], "Went on after the crash.",
        "{done}"
    );
    let servers = mcp_list(&mut c, &sid).await;
    assert_eq!(
        server(&servers, "everything")["status"],
        "failed",
        "{servers:?}"
    );
    assert!(c.shutdown().await);
}

/// True for a chat request of the `worker` specialist's child.
fn worker_request(request: &test_support::Request) -> bool {
    request.contains("Specialist: worker")
}

/// Assistant messages in a chat request (the model calls before it).
fn steps(request: &test_support::Request) -> usize {
    request.json()["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "assistant")
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_task_is_listed_and_cancel_background_task_stops_it() {
    let env = Env::new();
    let ws = env.workspace_str();
    let mock = MockModel::start(Script::respond(|request, _| {
        if worker_request(request) {
            return match steps(request) {
                0 => Reply::chat_call("k1", "bash", json!({"command": "sleep 60"})),
                _ => Reply::chat_text("child done"),
            };
        }
        match steps(request) {
            0 => Reply::chat_call(
                "t1",
                "Task",
                json!({"name": "worker", "description": "sleepy", "prompt": "sleep a while",
                       "run_in_background": true}),
            ),
            1 => {
                let body = request.text();
                let task_id = body
                    .split("task_id: ")
                    .nth(1)
                    .map(|rest| {
                        rest.chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
                            .collect::<String>()
                    })
                    .unwrap_or_default();
                Reply::chat_call(
                    "o1",
                    "TaskOutput",
                    json!({"task_id": task_id, "block": true, "timeout": 60000}),
                )
            }
            _ => Reply::chat_text("parent done"),
        }
    }));
    let mut c = mocked(&env, &mock, &[]);
    let sid = create(&mut c, &ws, "yolo", json!({})).await;
    c.call("session/subscribe", json!({"sessionId": sid})).await;
    c.call(
        "session/send",
        json!({"sessionId": sid, "content": "start it"}),
    )
    .await;
    let started = loop {
        let event = c.event(&sid).await;
        if event["type"] == "session.updated" && event["payload"]["status"] == "running" {
            break event;
        }
        assert_ne!(event["type"], "turn.completed", "{event}");
    };
    let task_id = started["payload"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_string();
    assert_eq!(started["payload"]["toolCallId"], "t1");
    assert_eq!(started["payload"]["toolName"], "Task");
    assert_eq!(started["payload"]["description"], "sleepy");

    // The child's bash runs on the child's own stream.
    let sub = c
        .call(
            "session/subscribe",
            json!({"sessionId": task_id, "afterSeq": 0}),
        )
        .await;
    let mut seen = sub["events"].as_array().expect("events").clone();
    let bash_started = |e: &Value| e["type"] == "tool.updated" && e["payload"]["kind"] == "started";
    while !seen.iter().any(bash_started) {
        seen.push(c.event(&task_id).await);
    }
    assert_eq!(seen[0]["type"], "turn.started", "{:?}", types(&seen));
    let started_bash = seen.iter().find(|e| bash_started(e)).expect("started");
    assert_eq!(started_bash["payload"]["toolCallId"], "k1");
    let listed = c.call("session/subagents", json!({"sessionId": sid})).await;
    assert_eq!(listed["subagents"][0]["background"], true, "{listed}");
    assert_eq!(listed["subagents"][0]["status"], "running");
    let read = c.call("session/read", json!({"sessionId": sid})).await;
    let jobs = read["projection"]["backgroundJobs"]
        .as_array()
        .expect("jobs");
    assert!(
        jobs.iter()
            .any(|j| j["taskId"] == task_id.as_str() && j["status"] == "running"),
        "{jobs:?}"
    );

    let cancelled = c
        .call(
            "session/cancelBackgroundTask",
            json!({"sessionId": sid, "taskId": task_id}),
        )
        .await;
    assert_eq!(cancelled["cancelled"], true, "{cancelled}");
    assert_eq!(cancelled["status"], "cancelled");
    let events = c
        .events_until(&sid, &["turn.completed", "turn.failed"])
        .await;
    assert_eq!(
        events.last().expect("end")["payload"]["response"],
        "parent done"
    );
    assert!(
        events.iter().any(|e| e["type"] == "session.updated"
            && e["payload"]["taskId"] == task_id.as_str()
            && e["payload"]["status"] == "cancelled"),
        "{:?}",
        types(&events)
    );
    let child_end = c
        .events_until(&task_id, &["turn.completed", "turn.failed"])
        .await;
    assert_eq!(
        child_end.last().expect("end")["payload"]["resultType"],
        "cancelled"
    );
    let listed = c.call("session/subagents", json!({"sessionId": sid})).await;
    assert_eq!(listed["subagents"][0]["status"], "cancelled", "{listed}");
    // Cancelling again: it had finished already.
    let again = c
        .call(
            "session/cancelBackgroundTask",
            json!({"sessionId": sid, "taskId": task_id}),
        )
        .await;
    assert_eq!(again["cancelled"], false);
    let unknown = c
        .call(
            "session/cancelBackgroundTask",
            json!({"sessionId": sid, "taskId": "specialist_nope"}),
        )
        .await;
    assert_eq!(unknown["status"], "not_found");
    assert!(c.shutdown().await);
}

// ---------------------------------------------------------------------------------------
// SIGTERM / SIGINT, and spans
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_and_sigint_mid_turn_end_the_turn_stop_tools_and_servers_and_exit_0() {
    if !test_support::mcp::ready() {
        return;
    }
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let env = Env::new();
        let ws = env.workspace_str();
        let command = "echo $$ > shell.pid; sleep 300 & echo $! > child.pid; wait";
        let mut c = scripted(
            &env,
            json!([
                {"steps": [tool_call("b1", "bash", json!({"command": command, "timeout_ms": 600_000}))]},
                {"steps": [text("never")]}
            ]),
            &[],
        );
        let sid = create(
            &mut c,
            &ws,
            "yolo",
            json!({"mcpServers": {"everything": {"command": node(),
                "args": [script("server-everything"), "stdio"]}}}),
        )
        .await;
        let server_pid = server(&mcp_list(&mut c, &sid).await, "everything")["pid"]
            .as_i64()
            .expect("pid") as i32;
        c.call("session/subscribe", json!({"sessionId": sid})).await;
        c.call("session/send", json!({"sessionId": sid, "content": "run"}))
            .await;
        let mut pids = common::bash_pids(&env.workspace()).await;
        signal(c.pid() as i32, sig);
        // What was in flight is written: the turn ends cancelled.
        let events = c
            .events_until(&sid, &["turn.completed", "turn.failed"])
            .await;
        let done = events.last().expect("end");
        assert_eq!(
            done["payload"]["resultType"], "cancelled",
            "signal {sig}: {done}"
        );
        assert_eq!(c.wait_exit().await.code(), Some(0), "signal {sig}");
        pids.push(server_pid);
        assert!(
            wait_gone(&pids).await.is_empty(),
            "signal {sig}: processes left: {pids:?}"
        );
        // The session was flushed: it lists and resumes in a new process.
        let mut again = scripted(&env, json!([]), &[]);
        let list = again.call("session/list", json!({})).await;
        assert_eq!(list["sessions"][0]["sessionId"], sid.as_str(), "{list}");
        again
            .call("session/resume", json!({"sessionId": sid}))
            .await;
        let texts = message_texts(&mut again, &sid).await;
        assert!(texts.iter().any(|t| t == "run"), "{texts:?}");
        assert!(again.shutdown().await);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_are_exported_when_an_otlp_endpoint_is_set() {
    let env = Env::new();
    let ws = env.workspace_str();
    let collector = MockModel::start([Reply::json(200, "{}")]);
    let url = collector.url();
    let mut c = scripted_with_env(
        &env,
        json!([{"steps": [text("traced")]}]),
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", url.as_str()),
            ("NO_PROXY", "127.0.0.1,localhost"),
        ],
    );
    let sid = create(&mut c, &ws, "yolo", json!({})).await;
    let events = turn(&mut c, &sid, "trace this").await;
    assert_eq!(events.last().expect("end")["payload"]["response"], "traced");
    // The spans are flushed at exit at the latest.
    assert!(c.shutdown().await);
    let requests = collector
        .wait_for_requests(1, WAIT)
        .await
        .expect("spans exported");
    assert_eq!(requests[0].path, "/v1/traces");
    assert!(
        requests.iter().any(|r| r.contains("agent.run")),
        "no agent.run span exported"
    );
    assert!(requests.iter().any(|r| r.contains("adapter-acp")));
}
