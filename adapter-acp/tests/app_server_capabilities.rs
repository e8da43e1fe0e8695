//! Every capability through `adapter-acp app-server --stdio`, in ZCode's terms: MCP servers
//! from `session/create` (`mcp/list`, tools called over stdio and streamable HTTP, a missing
//! server, a server killed or a call aborted mid-call, `list_changed`, no server left after
//! exit), `--hooks FILE`, the sandbox, sub-agents as child sessions, the context budget,
//! SIGTERM/SIGINT mid-turn and a key given with `--api-key` kept out of error text.
//!
//! The MCP tests drive the reference servers from npm, pinned in `agent-mcp/tests/servers`
//! and installed on first use by `test_support::mcp`, on Node: without them these tests
//! print a `skipped: …` line, unless `AGENT_SDK_NODE=required` (CI), when they fail.

mod common;

use common::{types, wait_gone, write_script, Client, Env, WAIT};
use serde_json::{json, Value};
use test_support::mcp::{node, script, HttpEverything};
use test_support::procs::pid_in;
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

fn text(t: &str) -> Value {
    json!({"text": t})
}

fn usage(input: u64, output: u64) -> Value {
    json!({"usage": {"input": input, "output": output}})
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

// ---------------------------------------------------------------------------------------
// Hooks
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_file_vetoes_appends_blocks_continues_and_survives_a_hang_and_a_missing_hook() {
    let env = Env::new();
    let ws = env.workspace_str();
    std::fs::write(env.workspace().join("notes.txt"), "some notes\n").expect("notes");
    let marker = env.workspace().join("marker.txt");
    // In the workspace: hook commands run under the session's sandbox (workspace-write).
    let hang_pid = env.workspace().join("hang.pid");
    let hooks = json!({"hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command",
                "command": "echo 'no bash here' >&2; exit 2"}]},
            {"matcher": "list_dir", "hooks": [{"type": "command", "timeout": 1,
                "command": format!("echo $$ > '{}'; exec sleep 60", hang_pid.display())}]},
            {"matcher": "glob", "hooks": [{"type": "command",
                "command": env.root.path().join("no-such-hook").display().to_string()}]}
        ],
        "PostToolUse": [{"matcher": "read_file", "hooks": [{"type": "command",
            "command": "echo 'AFTER-HOOK-NOTE' >&2; exit 2"}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command",
            "command": "grep -q forbidden && { echo 'prompt refused by policy' >&2; exit 2; }; exit 0"}]}],
        "Stop": [{"hooks": [{"type": "command",
            "command": "grep -q 'first answer' && { echo 'keep going' >&2; exit 2; }; exit 0"}]}]
    }});
    let hooks_file = env.root.path().join("hooks.json");
    std::fs::write(&hooks_file, hooks.to_string()).expect("hooks file");
    let mut c = scripted(
        &env,
        json!([
            {"steps": [tool_call("b1", "bash", json!({"command": format!("touch '{}'", marker.display())}))]},
            {"steps": [text("bash was refused")]},
            {"steps": [tool_call("r1", "read_file", json!({"path": "notes.txt"}))]},
            {"steps": [text("read done")]},
            {"steps": [text("first answer")]},
            {"steps": [text("second answer")]},
            {"steps": [tool_call("l1", "list_dir", json!({"path": "."}))]},
            {"steps": [text("listed")]},
            {"steps": [tool_call("g1", "glob", json!({"pattern": "*.txt"}))]},
            {"steps": [text("globbed")]}
        ]),
        &["--hooks", &hooks_file.display().to_string()],
    );
    let sid = create(&mut c, &ws, "yolo", json!({})).await;

    // A PreToolUse veto: the command never runs, the call's error names the hook's reason.
    let events = turn(&mut c, &sid, "run bash").await;
    assert!(!marker.exists(), "the vetoed command ran");
    let vetoed = outcome_of(&events, "b1");
    assert_eq!(vetoed["payload"]["kind"], "error", "{vetoed}");
    let error = &vetoed["payload"]["error"];
    assert_eq!(error["type"], "hook_denied", "{error}");
    assert_eq!(error["code"], "hook_denied");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or("")
            .contains("no bash here"),
        "{error}"
    );
    assert_eq!(error["data"]["hooks"][0]["outcome"], "deny", "{error}");
    assert!(error["data"]["hooks"][0]["reason"]
        .as_str()
        .unwrap_or("")
        .contains("no bash here"));
    // The part (what the model got back) shows the reason.
    let part = tool_part(&mut c, &sid, "b1").await;
    assert_eq!(part["state"]["status"], "error");
    assert!(
        part["state"]["error"]
            .as_str()
            .unwrap_or("")
            .contains("no bash here"),
        "{part}"
    );
    assert_eq!(
        part["state"]["metadata"]["hooks"][0]["event"],
        "before_tool"
    );
    assert_eq!(
        events.last().expect("end")["payload"]["response"],
        "bash was refused"
    );

    // A PostToolUse hook's output reaches the model with the result.
    let events = turn(&mut c, &sid, "read the notes").await;
    let read = outcome_of(&events, "r1");
    assert_eq!(read["payload"]["kind"], "result", "{read}");
    let content = read["payload"]["result"]["content"].as_str().unwrap_or("");
    assert!(
        content.contains("some notes") && content.contains("AFTER-HOOK-NOTE"),
        "{content}"
    );
    assert_eq!(
        read["payload"]["result"]["metadata"]["hooks"][0]["outcome"],
        "append"
    );
    let part = tool_part(&mut c, &sid, "r1").await;
    assert!(part["state"]["output"]
        .as_str()
        .unwrap_or("")
        .contains("AFTER-HOOK-NOTE"));

    // A UserPromptSubmit block: the turn ends at once, the model is not called.
    let events = turn(&mut c, &sid, "do the forbidden thing").await;
    let done = events.last().expect("end");
    assert_eq!(done["type"], "turn.completed", "{done}");
    assert_eq!(done["payload"]["response"], "");
    assert!(!types(&events)
        .iter()
        .any(|t| t.starts_with("model.streaming")));

    // A Stop hook makes the model go on once.
    let events = turn(&mut c, &sid, "answer").await;
    assert_eq!(
        events.last().expect("end")["payload"]["response"],
        "second answer"
    );

    // A hook that hangs is killed at its timeout; the call and the run go on.
    let events = turn(&mut c, &sid, "list").await;
    assert_eq!(events.last().expect("end")["payload"]["response"], "listed");
    assert_eq!(outcome_of(&events, "l1")["payload"]["kind"], "result");
    let pid: i32 = std::fs::read_to_string(&hang_pid)
        .expect("the hanging hook ran")
        .trim()
        .parse()
        .expect("pid");
    assert!(
        wait_gone(&[pid]).await.is_empty(),
        "the hanging hook {pid} was not killed"
    );

    // A hook command that does not exist does not stop the call.
    let events = turn(&mut c, &sid, "glob").await;
    assert_eq!(
        events.last().expect("end")["payload"]["response"],
        "globbed"
    );
    assert_eq!(outcome_of(&events, "g1")["payload"]["kind"], "result");
    assert!(c.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hooks_file_that_does_not_exist_is_a_usage_error() {
    let env = Env::new();
    let missing = env.root.path().join("missing-hooks.json");
    let mut c = scripted(
        &env,
        json!([]),
        &["--hooks", &missing.display().to_string()],
    );
    let status = c.wait_exit().await;
    assert_eq!(status.code(), Some(2));
    let stderr = std::fs::read_to_string(env.root.path().join("stderr.log")).expect("stderr");
    assert!(stderr.contains("missing-hooks.json"), "{stderr}");
    assert!(c.raw.is_empty(), "nothing on stdout: {:?}", c.raw);
}

// ---------------------------------------------------------------------------------------
// Sandbox
// ---------------------------------------------------------------------------------------

/// The `session.updated{sandbox}` of a turn.
fn sandbox_report(events: &[Value]) -> Value {
    events
        .iter()
        .find(|e| e["type"] == "session.updated" && e["payload"]["sandbox"].is_object())
        .unwrap_or_else(|| panic!("no sandbox report in {:?}", types(events)))["payload"]["sandbox"]
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_confines_bash_by_default_refuses_without_enforcement_and_is_off_on_request() {
    let env = Env::new();
    let ws = env.workspace_str();
    let outside = env.root.path().join("outside");
    std::fs::create_dir_all(&outside).expect("outside dir");
    let target = outside.join("escaped.txt");
    let bash = json!({"command": format!("touch '{}' && echo made-it", target.display())});
    let turns = json!([
        {"steps": [tool_call("s1", "bash", bash.clone())]},
        {"steps": [text("tried")]}
    ]);

    // Default (workspace-write) with --sandbox-fallback refuse: a write outside the
    // workspace never happens — refused by Landlock with a block, or, on a kernel that
    // cannot enforce it, the command is refused outright.
    let mut c = scripted(&env, turns.clone(), &["--sandbox-fallback", "refuse"]);
    let sid = create(&mut c, &ws, "yolo", json!({})).await;
    let events = turn(&mut c, &sid, "escape").await;
    let report = sandbox_report(&events);
    assert_eq!(report["mode"], "workspace-write", "{report}");
    assert_eq!(report["network"], "deny");
    assert!(report["summary"]
        .as_str()
        .is_some_and(|s| s.contains("workspace-write")));
    assert!(
        !target.exists(),
        "a sandboxed command wrote outside the workspace"
    );
    let outcome = outcome_of(&events, "s1");
    let block = match outcome["payload"]["kind"].as_str() {
        Some("error") => outcome["payload"]["error"]["data"]["block"].clone(),
        _ => outcome["payload"]["result"]["metadata"]["block"].clone(),
    };
    assert_eq!(block["code"], "sandbox", "{outcome}");
    assert!(
        block["reason"].as_str().is_some_and(|r| !r.is_empty()),
        "{block}"
    );
    if report["enforced"] == "full" {
        assert_eq!(outcome["payload"]["error"]["code"], "sandbox", "{outcome}");
    }
    let part = tool_part(&mut c, &sid, "s1").await;
    assert_eq!(
        part["state"]["metadata"]["block"]["code"], "sandbox",
        "{part}"
    );
    assert!(c.shutdown().await);

    // --sandbox off: the same command writes where it likes.
    let env2 = Env::new();
    let mut c = scripted(&env2, turns, &["--sandbox", "off"]);
    let ws2 = env2.workspace_str();
    let sid = create(&mut c, &ws2, "yolo", json!({})).await;
    let events = turn(&mut c, &sid, "escape").await;
    assert_eq!(outcome_of(&events, "s1")["payload"]["kind"], "result");
    assert!(target.exists(), "--sandbox off still confined the command");
    assert!(c.shutdown().await);

    // A bad value is a usage error naming the flag.
    let mut c = scripted(&env, json!([]), &["--sandbox", "sometimes"]);
    assert_eq!(c.wait_exit().await.code(), Some(2));
    let stderr = std::fs::read_to_string(env.root.path().join("stderr.log")).expect("stderr");
    assert!(stderr.contains("--sandbox"), "{stderr}");
}

// ---------------------------------------------------------------------------------------
// Sub-agents
// ---------------------------------------------------------------------------------------

/// Runs a prompt to its end, allowing every permission request; returns the turn's events
/// and the params of the requests.
async fn turn_allowing(c: &mut Client, sid: &str, prompt: &str) -> (Vec<Value>, Vec<Value>) {
    c.call("session/subscribe", json!({"sessionId": sid})).await;
    c.call("session/send", json!({"sessionId": sid, "content": prompt}))
        .await;
    let (mut events, mut requests) = (Vec::new(), Vec::new());
    loop {
        let session = sid.to_string();
        let message = c
            .next_matching(move |m| {
                (m["method"] == "session/event" && m["params"]["sessionId"] == session.as_str())
                    || (m["method"] == "interaction/requestPermission" && m.get("id").is_some())
            })
            .await;
        if message["method"] == "interaction/requestPermission" {
            let allow = message["params"]["options"]
                .as_array()
                .expect("options")
                .iter()
                .find(|o| o["optionId"] == "allow_once")
                .expect("allow_once")["response"]
                .clone();
            c.send(json!({"id": message["id"].clone(), "result": allow}))
                .await;
            requests.push(message["params"].clone());
            continue;
        }
        let event = message["params"].clone();
        let done = event["type"] == "turn.completed" || event["type"] == "turn.failed";
        events.push(event);
        if done {
            return (events, requests);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_call_runs_a_child_session_with_its_own_events_messages_and_permissions() {
    let env = Env::new();
    let ws = env.workspace_str();
    let task = json!({"name": "worker", "description": "write the file",
                      "prompt": "Write done.txt saying the child was here."});
    // The child shares the parent's scripted model: parent, child, child, parent.
    let mut c = scripted(
        &env,
        json!([
            {"steps": [tool_call("t1", "Task", task), usage(10, 2)]},
            {"steps": [tool_call("w1", "write_file", json!({"path": "done.txt", "content": "child was here"})),
                       usage(5, 1)]},
            {"steps": [text("The child wrote done.txt."), usage(6, 2)]},
            {"steps": [text("The worker is done."), usage(20, 3)]}
        ]),
        &[],
    );
    let sid = create(&mut c, &ws, "build", json!({})).await;
    let (events, requests) = turn_allowing(&mut c, &sid, "delegate it").await;
    let done = events.last().expect("end");
    assert_eq!(done["payload"]["response"], "The worker is done.", "{done}");
    assert_eq!(
        std::fs::read_to_string(env.workspace().join("done.txt")).expect("written"),
        "child was here"
    );

    // The Task call names its child.
    let progress = events
        .iter()
        .find(|e| e["payload"]["kind"] == "progress" && e["payload"]["source"] == "subagent")
        .unwrap_or_else(|| panic!("no sub-agent progress in {:?}", types(&events)));
    assert_eq!(progress["payload"]["toolCallId"], "t1");
    assert_eq!(progress["payload"]["agentType"], "worker");
    assert_eq!(progress["payload"]["background"], false);
    assert_eq!(progress["payload"]["description"], "write the file");
    let child = progress["payload"]["childSessionId"]
        .as_str()
        .expect("childSessionId")
        .to_string();
    assert_eq!(progress["payload"]["agentId"], child.as_str());
    let result = outcome_of(&events, "t1");
    assert_eq!(result["payload"]["kind"], "result", "{result}");
    assert_eq!(result["payload"]["childSessionId"], child.as_str());
    assert_eq!(
        result["payload"]["result"]["metadata"]["childSessionId"],
        child.as_str()
    );
    // Usage of parent and child add up in the turn's usage.
    assert_eq!(done["payload"]["usage"]["totalTokens"], 12 + 6 + 8 + 23);

    // The child's write was asked about in the child's name, with its own call id.
    assert!(
        requests
            .iter()
            .any(|r| r["sessionId"] == child.as_str() && r["toolCallId"] == "w1"),
        "{requests:?}"
    );

    // session/subagents lists it; it is a session of its own.
    let listed = c.call("session/subagents", json!({"sessionId": sid})).await;
    let subagents = listed["subagents"].as_array().expect("subagents");
    assert_eq!(subagents.len(), 1, "{listed}");
    let entry = &subagents[0];
    assert_eq!(entry["session"]["sessionId"], child.as_str());
    assert_eq!(entry["session"]["parentSessionId"], sid.as_str());
    assert_eq!(entry["session"]["sessionKind"], "subagent");
    assert_eq!(entry["session"]["title"], "worker: write the file");
    assert_eq!(entry["agentType"], "worker");
    assert_eq!(entry["toolCallId"], "t1");
    assert_eq!(entry["status"], "completed");
    assert_eq!(entry["finalText"], "The child wrote done.txt.");
    assert_eq!(entry["usage"]["totalTokens"], 14);
    let read = c.call("session/read", json!({"sessionId": child})).await;
    assert_eq!(read["session"]["parentSessionId"], sid.as_str());
    assert_eq!(read["projection"]["status"], "idle");
    let texts = message_texts(&mut c, &child).await;
    assert!(
        texts.iter().any(|t| t == "The child wrote done.txt."),
        "{texts:?}"
    );
    assert!(
        texts.iter().any(|t| t.contains("Write done.txt")),
        "{texts:?}"
    );
    let part = tool_part(&mut c, &child, "w1").await;
    assert_eq!(part["state"]["status"], "completed");

    // Its own event stream, replayed from the start.
    let sub = c
        .call(
            "session/subscribe",
            json!({"sessionId": child, "afterSeq": 0}),
        )
        .await;
    let replay = sub["events"].as_array().expect("events").clone();
    let kinds = types(&replay);
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("turn.started"),
        "{kinds:?}"
    );
    assert_eq!(replay[0]["payload"]["inputSource"], "subagent");
    assert!(replay.iter().all(|e| e["sessionId"] == child.as_str()));
    assert!(
        kinds.contains(&"model.streaming:tool_call".to_string()),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&"tool.updated:result".to_string()),
        "{kinds:?}"
    );
    let last = replay.last().expect("events");
    assert_eq!(last["type"], "turn.completed", "{kinds:?}");
    assert_eq!(last["payload"]["response"], "The child wrote done.txt.");

    // Not a root session, and it takes no prompts of its own.
    let list = c.call("session/list", json!({})).await;
    let ids: Vec<&Value> = list["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| &s["sessionId"])
        .collect();
    assert_eq!(ids, [&json!(sid)], "{list}");
    let err = c
        .call_err("session/send", json!({"sessionId": child, "content": "hi"}))
        .await;
    assert_eq!(err["code"], -32602, "{err}");
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

/// The `childSessionId` of the sub-agent progress of call `id`.
fn child_of_call(events: &[Value], id: &str) -> String {
    events
        .iter()
        .find(|e| {
            e["payload"]["kind"] == "progress"
                && e["payload"]["source"] == "subagent"
                && e["payload"]["toolCallId"] == id
        })
        .and_then(|e| e["payload"]["childSessionId"].as_str())
        .unwrap_or_else(|| panic!("no sub-agent progress of {id} in {:?}", types(events)))
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_explorer_is_refused_a_write_in_its_own_session() {
    let env = Env::new();
    let ws = env.workspace_str();
    let task =
        json!({"name": "explorer", "description": "try to write", "prompt": "Write pwned.txt."});
    let mut c = scripted(
        &env,
        json!([
            {"steps": [tool_call("t1", "Task", task)]},
            {"steps": [tool_call("k1", "write_file", json!({"path": "pwned.txt", "content": "x"}))]},
            {"steps": [text("I may not write.")]},
            {"steps": [text("The explorer could not write.")]}
        ]),
        &[],
    );
    let sid = create(&mut c, &ws, "yolo", json!({})).await;
    let events = turn(&mut c, &sid, "delegate").await;
    let done = events.last().expect("end");
    assert_eq!(done["type"], "turn.completed", "{done}");
    assert_eq!(done["payload"]["response"], "The explorer could not write.");
    assert!(
        !env.workspace().join("pwned.txt").exists(),
        "the explorer wrote"
    );
    let result = outcome_of(&events, "t1");
    assert_eq!(result["payload"]["kind"], "result", "{result}");
    assert!(
        result["payload"].to_string().contains("I may not write."),
        "{result}"
    );
    // In the child's session, the write is a failed call: the tool is not the explorer's.
    let child = child_of_call(&events, "t1");
    let part = tool_part(&mut c, &child, "k1").await;
    assert_eq!(part["state"]["status"], "error", "{part}");
    assert!(
        part.to_string().contains("unknown tool: write_file"),
        "{part}"
    );
    assert!(c.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_fails_is_the_task_error_and_the_parent_goes_on() {
    let env = Env::new();
    let ws = env.workspace_str();
    let task = json!({"name": "explorer", "description": "look", "prompt": "Look."});
    let mut c = scripted(
        &env,
        json!([
            {"steps": [tool_call("t1", "Task", task)]},
            {"steps": [{"error": {"kind": "bad_request", "message": "the child's request is refused"}}]},
            {"steps": [text("The explorer failed, moving on.")]}
        ]),
        &[],
    );
    let sid = create(&mut c, &ws, "yolo", json!({})).await;
    let events = turn(&mut c, &sid, "delegate").await;
    let done = events.last().expect("end");
    assert_eq!(done["type"], "turn.completed", "{done}");
    assert_eq!(
        done["payload"]["response"],
        "The explorer failed, moving on."
    );
    let failed = outcome_of(&events, "t1");
    assert_eq!(failed["payload"]["kind"], "error", "{failed}");
    assert!(
        failed["payload"]["error"]
            .to_string()
            .contains("the child's request is refused"),
        "{failed}"
    );
    let listed = c.call("session/subagents", json!({"sessionId": sid})).await;
    assert_ne!(listed["subagents"][0]["status"], "completed", "{listed}");
    assert!(c.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_stop_during_a_foreground_child_ends_both_and_leaves_no_process() {
    let env = Env::new();
    let ws = env.workspace_str();
    let task = json!({"name": "worker", "description": "wait", "prompt": "Wait a long time."});
    let mut c = scripted(
        &env,
        json!([
            {"steps": [tool_call("t1", "Task", task)]},
            {"steps": [tool_call("k1", "bash",
                json!({"command": "sleep 300 & echo $! > sleep.pid; echo $$ > bash.pid; wait"}))]},
            {"steps": [text("never")]}
        ]),
        &[],
    );
    let sid = create(&mut c, &ws, "yolo", json!({})).await;
    c.call("session/subscribe", json!({"sessionId": sid})).await;
    c.call(
        "session/send",
        json!({"sessionId": sid, "content": "delegate"}),
    )
    .await;
    let shell = pid_in(&env.workspace().join("bash.pid"), WAIT).await;
    let sleeper = pid_in(&env.workspace().join("sleep.pid"), WAIT).await;
    assert!(!common::process_gone(sleeper), "the child's command runs");
    let stopped = c.call("session/stop", json!({"sessionId": sid})).await;
    assert_eq!(stopped["stopped"], true, "{stopped}");
    let events = c
        .events_until(&sid, &["turn.completed", "turn.failed"])
        .await;
    let done = events.last().expect("end");
    assert_eq!(done["payload"]["resultType"], "cancelled", "{done}");
    assert_eq!(outcome_of(&events, "t1")["payload"]["kind"], "error");
    assert_eq!(wait_gone(&[shell, sleeper]).await, Vec::<i32>::new());
    let listed = c.call("session/subagents", json!({"sessionId": sid})).await;
    assert_ne!(listed["subagents"][0]["status"], "running", "{listed}");
    assert!(c.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_background_tasks_are_read_with_task_output() {
    let env = Env::new();
    let ws = env.workspace_str();
    let mock = MockModel::start(Script::respond(|request, _| {
        if request.specialist_call("explorer") {
            let topic = match request.contains("Look at alpha") {
                true => "alpha",
                false => "beta",
            };
            return Reply::chat_text(&format!("{topic} result"));
        }
        match steps(request) {
            0 => {
                let task = |topic: &str| {
                    json!({"name": "explorer", "description": topic,
                           "prompt": format!("Look at {topic}."), "run_in_background": true})
                };
                chat_calls(&[("t1", "Task", task("alpha")), ("t2", "Task", task("beta"))])
            }
            1 => {
                let ids = request.task_ids();
                let calls: Vec<(String, Value)> = ids
                    .iter()
                    .enumerate()
                    .map(|(i, id)| {
                        (
                            format!("o{}", i + 1),
                            json!({"task_id": id, "block": true, "timeout": 30000}),
                        )
                    })
                    .collect();
                let calls: Vec<(&str, &str, Value)> = calls
                    .iter()
                    .map(|(id, args)| (id.as_str(), "TaskOutput", args.clone()))
                    .collect();
                chat_calls(&calls)
            }
            _ => Reply::chat_text("both read"),
        }
    }));
    let mut c = mocked(&env, &mock, &[]);
    let sid = create(&mut c, &ws, "yolo", json!({})).await;
    let events = turn(&mut c, &sid, "explore in the background").await;
    let done = events.last().expect("end");
    assert_eq!(done["payload"]["response"], "both read", "{done}");
    for (call, topic) in [("o1", "alpha"), ("o2", "beta")] {
        let result = outcome_of(&events, call);
        assert_eq!(result["payload"]["kind"], "result", "{result}");
        let text = result["payload"]["result"].to_string();
        assert!(
            text.contains("status: completed") && text.contains(&format!("{topic} result")),
            "{text}"
        );
    }
    let listed = c.call("session/subagents", json!({"sessionId": sid})).await;
    let subagents = listed["subagents"].as_array().expect("subagents");
    assert_eq!(subagents.len(), 2, "{listed}");
    for entry in subagents {
        assert_eq!(entry["background"], true, "{entry}");
        assert_eq!(entry["status"], "completed", "{entry}");
    }
    let mut finals: Vec<&str> = subagents
        .iter()
        .filter_map(|e| e["finalText"].as_str())
        .collect();
    finals.sort();
    assert_eq!(finals, ["alpha result", "beta result"]);
    assert!(c.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_manifest_overrides_the_builtin_and_a_malformed_one_is_named_with_its_line() {
    let env = Env::new();
    let ws = env.workspace_str();
    let specialists = env.workspace().join(".zero").join("specialists");
    std::fs::create_dir_all(&specialists).expect("mkdir");
    std::fs::write(
        specialists.join("explorer.md"),
        "---\nname: explorer\ndescription: The project's explorer.\ntools: [read-only]\n---\nPROJECT-EXPLORER-PROMPT: look in src/ first.\n",
    )
    .expect("write");
    std::fs::write(
        specialists.join("bad.md"),
        "---\nname: bad\ndescription: Broken.\ntools:\n  - read-only\n  - Task\n---\nprompt\n",
    )
    .expect("write");
    let mock = MockModel::start(
        Script::new()
            .route(
                |r| r.specialist_call("explorer"),
                [Reply::chat_text("project explorer here")],
            )
            .fallback([
                Reply::chat_call(
                    "t1",
                    "Task",
                    json!({"name": "explorer", "description": "who", "prompt": "Who are you?"}),
                ),
                Reply::chat_text("done"),
            ]),
    );
    let mut c = mocked(&env, &mock, &[]);
    let sid = create(&mut c, &ws, "yolo", json!({})).await;
    let events = turn(&mut c, &sid, "delegate").await;
    assert_eq!(events.last().expect("end")["payload"]["response"], "done");
    let result = outcome_of(&events, "t1");
    assert!(
        result["payload"]
            .to_string()
            .contains("project explorer here"),
        "{result}"
    );
    let requests = mock.requests();
    let child = requests
        .iter()
        .find(|r| r.specialist_call("explorer"))
        .expect("a child call");
    let system = child.json()["messages"][0]["content"].to_string();
    assert!(system.contains("PROJECT-EXPLORER-PROMPT"), "{system}");
    assert!(
        !system.contains("read-only codebase exploration specialist"),
        "{system}"
    );
    let offered = requests[0].text();
    assert!(offered.contains("The project's explorer."));
    assert!(
        !offered.contains("- bad: Broken."),
        "the bad manifest is offered"
    );
    assert!(c.shutdown().await);
    let stderr = std::fs::read_to_string(env.root.path().join("stderr.log")).unwrap_or_default();
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("skipped specialist manifest") && l.contains("bad.md:6:")),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projects_own_hooks_file_has_no_effect() {
    // `.zero/hooks.json` in the workspace would veto every bash call; the app server reads
    // hooks only from `--hooks`.
    let env = Env::new();
    let ws = env.workspace_str();
    std::fs::create_dir_all(env.workspace().join(".zero")).expect("mkdir");
    std::fs::write(
        env.workspace().join(".zero").join("hooks.json"),
        json!({"enabled": true, "hooks": [
            {"id": "veto", "event": "beforeTool", "matcher": "bash",
             "command": "sh", "args": ["-c", "touch vetoed; echo project veto; exit 1"]},
            {"id": "start", "event": "sessionStart", "command": "touch", "args": ["started"]}
        ]})
        .to_string(),
    )
    .expect("write");
    let mut c = scripted(
        &env,
        json!([
            {"steps": [tool_call("b1", "bash", json!({"command": "touch marker"}))]},
            {"steps": [text("ok")]}
        ]),
        &[],
    );
    let sid = create(&mut c, &ws, "yolo", json!({})).await;
    let events = turn(&mut c, &sid, "go").await;
    assert_eq!(outcome_of(&events, "b1")["payload"]["kind"], "result");
    assert!(
        env.workspace().join("marker").exists(),
        "the call did not run"
    );
    assert!(c.shutdown().await);
    assert!(
        !env.workspace().join("vetoed").exists(),
        "the project's hook ran"
    );
    assert!(
        !env.workspace().join("started").exists(),
        "the project's hook ran"
    );
}

// ---------------------------------------------------------------------------------------
// Context budget
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_usage_and_automatic_compaction_show_in_events_read_and_messages() {
    let env = Env::new();
    let ws = env.workspace_str();
    let mut c = scripted(
        &env,
        json!([
            {"steps": [text("first answer"), usage(500, 10)]},
            {"steps": [text("second answer"), usage(600, 10)]},
            {"steps": [text("third answer"), usage(700, 10)]},
            {"steps": [text("SUMMARY: three questions answered"), usage(100, 10)]},
            {"steps": [text("fourth answer"), usage(60, 5)]}
        ]),
        &["--context-window", "1000", "--auto-compact", "70"],
    );
    let sid = create(&mut c, &ws, "yolo", json!({})).await;
    let read = c.call("session/read", json!({"sessionId": sid})).await;
    assert_eq!(read["projection"]["contextWindow"], 1000);

    // Each model call's context usage is a session.updated.
    let events = turn(&mut c, &sid, "one").await;
    let context = events
        .iter()
        .find(|e| e["type"] == "session.updated" && e["payload"]["contextUsed"].is_u64())
        .unwrap_or_else(|| panic!("no context update in {:?}", types(&events)));
    assert_eq!(context["payload"]["contextUsed"], 510);
    assert_eq!(context["payload"]["contextWindow"], 1000);
    let read = c.call("session/read", json!({"sessionId": sid})).await;
    assert!(
        read["projection"]["contextUsed"]
            .as_u64()
            .is_some_and(|u| u >= 510),
        "{read}"
    );
    assert_eq!(read["runtime"]["contextUsage"]["window"], 1000);

    // The third answer leaves 710 of 1000 in the context, over 70 %: the next prompt
    // compacts first, inside its turn.
    turn(&mut c, &sid, "two").await;
    turn(&mut c, &sid, "three").await;
    let events = turn(&mut c, &sid, "four").await;
    let compaction: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "session.updated" && e["payload"]["compaction"].is_object())
        .collect();
    assert_eq!(compaction.len(), 2, "{:?}", types(&events));
    assert_eq!(compaction[0]["payload"]["compaction"]["state"], "running");
    assert_eq!(compaction[0]["payload"]["compaction"]["auto"], true);
    assert_eq!(compaction[0]["payload"]["compaction"]["reason"], "auto");
    assert_eq!(compaction[1]["payload"]["compaction"]["state"], "completed");
    assert!(compaction[1]["payload"]["compaction"]["before"]
        .as_u64()
        .is_some_and(|b| b >= 710));
    let done = events.last().expect("end");
    assert_eq!(done["payload"]["response"], "fourth answer", "{done}");
    // The summary is not streamed as the answer.
    assert!(!events.iter().any(|e| e["payload"]["delta"]
        .as_str()
        .is_some_and(|d| d.contains("SUMMARY"))));
    let read = c.call("session/read", json!({"sessionId": sid})).await;
    assert!(
        read["projection"]["contextUsed"]
            .as_u64()
            .is_some_and(|u| u < 700),
        "{read}"
    );
    // The compacted transcript starts with a compaction part.
    let messages = c.call("session/messages", json!({"sessionId": sid})).await;
    let first = &messages["messages"][0];
    assert_eq!(first["parts"][0]["type"], "compaction", "{first}");
    assert_eq!(first["parts"][0]["auto"], true);
    assert!(c.shutdown().await);
}

// ---------------------------------------------------------------------------------------
// SIGTERM / SIGINT, and a key from the command line
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
async fn a_key_given_with_api_key_is_redacted_from_a_tool_error() {
    let env = Env::new();
    let ws = env.workspace_str();
    let key = "sk-zcode-test-5f3a9c1e7b2d4086";
    let mut c = scripted(
        &env,
        json!([
            {"steps": [tool_call("r1", "read_file", json!({"path": key}))]},
            {"steps": [text("could not read it")]}
        ]),
        &["--api-key", key],
    );
    let sid = create(&mut c, &ws, "yolo", json!({})).await;
    let events = turn(&mut c, &sid, "read the file named like the key").await;
    let failed = outcome_of(&events, "r1");
    assert_eq!(failed["payload"]["kind"], "error", "{failed}");
    let message = failed["payload"]["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("[REDACTED]"), "{message}");
    let part = tool_part(&mut c, &sid, "r1").await;
    assert!(
        part["state"]["error"]
            .as_str()
            .unwrap_or("")
            .contains("[REDACTED]"),
        "{part}"
    );
    // The call's own arguments are the model's words and are shown as such; no result
    // or error line carries the key.
    assert!(c.shutdown_keep().await);
    let leaks: Vec<&String> = c
        .raw
        .iter()
        .filter(|line| line.contains(key))
        .filter(|line| line.contains("\"kind\":\"error\"") || line.contains("\"kind\":\"result\""))
        .collect();
    assert!(
        leaks.is_empty(),
        "the key reached a tool outcome: {leaks:?}"
    );
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
