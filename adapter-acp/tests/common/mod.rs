//! A test client that spawns `adapter-acp app-server --stdio` and talks line-delimited JSON
//! over pipes, like the zcode-acp-server bridge does. Every read is bounded by [`WAIT`].

#![allow(dead_code)]

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use test_support::pipe::Pipe;
use test_support::scenarios::{Paths, Scenario};
use tokio::process::Command;

/// Bound on every single wait for a line or an exit.
pub const WAIT: Duration = Duration::from_secs(20);

/// Writes a scripted-provider script playing `turns` into `dir`.
pub fn write_script(dir: &Path, turns: Value) -> PathBuf {
    let path = dir.join("script.json");
    let script = json!({"model": "scripted-test", "turns": turns});
    std::fs::write(&path, serde_json::to_vec(&script).expect("script")).expect("write script");
    path
}

/// The arguments that make the server play `script` (scripted provider) with its data in
/// `data`.
pub fn scripted_args(script: &Path, data: &Path) -> Vec<String> {
    vec![
        "--provider".into(),
        "scripted".into(),
        "--script".into(),
        script.display().to_string(),
        "--data-dir".into(),
        data.display().to_string(),
    ]
}

/// A workspace and a data directory that outlive one server process.
pub struct Env {
    pub root: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Self {
        let root = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(root.path().join("ws")).expect("workspace");
        std::fs::create_dir_all(root.path().join("data")).expect("data");
        Self { root }
    }

    pub fn workspace(&self) -> PathBuf {
        self.root.path().join("ws")
    }

    pub fn data(&self) -> PathBuf {
        self.root.path().join("data")
    }

    /// [`scripted_args`] for `script` with this environment's data directory.
    pub fn scripted(&self, script: &Path) -> Vec<String> {
        scripted_args(script, &self.data())
    }

    pub fn workspace_str(&self) -> String {
        self.workspace().display().to_string()
    }

    /// Spawns the server playing `turns`.
    pub fn spawn(&self, turns: Value) -> Client {
        let script = write_script(self.root.path(), turns);
        let mut args: Vec<String> = ["app-server", "--stdio", "--disallowed-tools"]
            .map(String::from)
            .into();
        args.push("CronCreate CronList CronUpdate CronDelete".into());
        args.extend(self.scripted(&script));
        Client::spawn(&args)
    }
}

pub struct Client {
    /// The process and its pipes (also reached through `Deref`: `child`, `raw`, `pid`,
    /// `close_stdin`, `wait_exit`).
    pub pipe: Pipe,
    backlog: VecDeque<Value>,
    next_id: i64,
}

/// `Deref` and `DerefMut` of a client to its `pipe`.
macro_rules! deref_to_pipe {
    ($client:ty) => {
        impl std::ops::Deref for $client {
            type Target = Pipe;
            fn deref(&self) -> &Pipe {
                &self.pipe
            }
        }
        impl std::ops::DerefMut for $client {
            fn deref_mut(&mut self) -> &mut Pipe {
                &mut self.pipe
            }
        }
    };
}

deref_to_pipe!(Client);

pub mod acp_client;

/// A command for the built `adapter-acp` with `args`, `envs` and stderr to `stderr` (else
/// discarded), none of the `ADAPTER_ACP_*` settings of this environment leaking in.
pub fn command(args: &[String], envs: &[(&str, &str)], stderr: Option<&Path>) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_adapter-acp"));
    let stderr = match stderr {
        Some(path) => Stdio::from(std::fs::File::create(path).expect("stderr file")),
        None => Stdio::null(),
    };
    cmd.args(args)
        .env_remove("ADAPTER_ACP_PROVIDER")
        .env_remove("ADAPTER_ACP_MODEL")
        .env_remove("ADAPTER_ACP_SCRIPT")
        .env_remove("ADAPTER_ACP_DATA_DIR")
        .envs(envs.iter().copied())
        .stderr(stderr);
    cmd
}

impl Client {
    pub fn spawn(args: &[String]) -> Self {
        Self::spawn_with(args, &[], None)
    }

    /// Spawns with extra environment variables, and stderr to `stderr` (else discarded).
    pub fn spawn_with(args: &[String], envs: &[(&str, &str)], stderr: Option<&Path>) -> Self {
        Self {
            pipe: Pipe::spawn(&mut command(args, envs, stderr), WAIT),
            backlog: VecDeque::new(),
            next_id: 1,
        }
    }

    /// Sends one raw line.
    pub async fn send_raw(&mut self, line: &str) {
        self.pipe.send_line(line.as_bytes()).await;
    }

    /// Sends one line of raw bytes (a newline is added).
    pub async fn send_bytes(&mut self, line: &[u8]) {
        self.pipe.send_line(line).await;
    }

    pub async fn send(&mut self, message: Value) {
        self.send_raw(&message.to_string()).await;
    }

    /// The next line from the server, parsed; `None` at end of output.
    async fn read(&mut self) -> Option<Value> {
        let line = self.pipe.next_line().await?;
        let value: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
        assert!(
            value.get("jsonrpc").is_none(),
            "server wrote jsonrpc: {line}"
        );
        Some(value)
    }

    /// The first message (backlog first) matching `pred`; others stay in the backlog.
    pub async fn next_matching(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(pos) = self.backlog.iter().position(&pred) {
            return self.backlog.remove(pos).expect("position is valid");
        }
        loop {
            let message = self.read().await.expect("server closed its output");
            if pred(&message) {
                return message;
            }
            self.backlog.push_back(message);
        }
    }

    /// Sends a request with a fresh integer id and returns the whole reply (result or error).
    pub async fn call_raw(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"id": id, "method": method, "params": params}))
            .await;
        self.reply(json!(id)).await
    }

    /// The reply to request `id`.
    pub async fn reply(&mut self, id: Value) -> Value {
        self.next_matching(|m| m.get("id") == Some(&id) && m.get("method").is_none())
            .await
    }

    /// Sends a request and returns its result, failing on an error reply.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let reply = self.call_raw(method, params).await;
        assert!(reply.get("error").is_none(), "{method} failed: {reply}");
        reply["result"].clone()
    }

    /// Sends a request expecting an error; returns the error object.
    pub async fn call_err(&mut self, method: &str, params: Value) -> Value {
        let reply = self.call_raw(method, params).await;
        assert!(reply.get("result").is_none(), "{method} succeeded: {reply}");
        reply["error"].clone()
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"method": method, "params": params})).await;
    }

    /// The next `session/event` of `session` (in arrival order).
    pub async fn event(&mut self, session: &str) -> Value {
        let session = session.to_string();
        let message = self
            .next_matching(move |m| {
                m["method"] == "session/event" && m["params"]["sessionId"] == session.as_str()
            })
            .await;
        message["params"].clone()
    }

    /// Events of `session` up to and including the first whose type is in `last`.
    pub async fn events_until(&mut self, session: &str, last: &[&str]) -> Vec<Value> {
        let mut events = Vec::new();
        loop {
            let event = self.event(session).await;
            let done = last.iter().any(|t| event["type"] == *t);
            events.push(event);
            if done {
                return events;
            }
        }
    }

    /// The next server → client request with `method`.
    pub async fn server_request(&mut self, method: &str) -> Value {
        let method = method.to_string();
        self.next_matching(move |m| m["method"] == method.as_str() && m.get("id").is_some())
            .await
    }

    /// Creates a session in `workspace` with `mode`; returns its id.
    pub async fn create(&mut self, workspace: &str, mode: &str) -> String {
        let result = self
            .call(
                "session/create",
                json!({"workspace": {"workspacePath": workspace, "workspaceKey": workspace},
                       "mode": mode}),
            )
            .await;
        result["session"]["sessionId"]
            .as_str()
            .expect("sessionId")
            .to_string()
    }

    /// Closes stdin and waits for the exit, keeping the client (and its `raw` lines).
    pub async fn shutdown_keep(&mut self) -> bool {
        self.pipe.shutdown().await
    }

    /// Closes stdin and waits for the process to exit; returns whether it exited cleanly.
    pub async fn shutdown(mut self) -> bool {
        self.pipe.shutdown().await
    }
}

/// A scripted text step.
pub fn text(t: &str) -> Value {
    json!({"text": t})
}

/// A scripted usage step.
pub fn usage(input: u64, output: u64) -> Value {
    json!({"usage": {"input": input, "output": output}})
}

/// The text parts of one ZCode message, joined.
pub fn message_text(message: &Value) -> String {
    message["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["type"] == "text")
        .map(|p| p["text"].as_str().unwrap_or_default())
        .collect()
}

/// The text parts of a `session/messages` result, in order.
pub fn texts_of(result: &Value) -> Vec<String> {
    result["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
        .filter(|p| p["type"] == "text")
        .filter_map(|p| p["text"].as_str().map(str::to_string))
        .collect()
}

/// Every text of the messages of a session.
pub async fn message_texts(c: &mut Client, sid: &str) -> Vec<String> {
    texts_of(&c.call("session/messages", json!({"sessionId": sid})).await)
}

/// The tool part of call `id` in `session/messages`.
pub async fn tool_part(c: &mut Client, sid: &str, id: &str) -> Value {
    let messages = c.call("session/messages", json!({"sessionId": sid})).await;
    messages["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
        .find(|p| p["callId"] == id)
        .unwrap_or_else(|| panic!("no tool part {id} in {messages}"))
}

/// The `tool.updated` `result` or `error` of call `id`.
pub fn outcome_of<'a>(events: &'a [Value], id: &str) -> &'a Value {
    events
        .iter()
        .find(|e| {
            e["type"] == "tool.updated"
                && e["payload"]["toolCallId"] == id
                && (e["payload"]["kind"] == "result" || e["payload"]["kind"] == "error")
        })
        .unwrap_or_else(|| panic!("no outcome of {id} in {:?}", types(events)))
}

/// Sends a prompt and returns the turn's events up to its terminal one.
pub async fn send_turn(c: &mut Client, sid: &str, prompt: &str) -> Vec<Value> {
    c.call("session/send", json!({"sessionId": sid, "content": prompt}))
        .await;
    c.events_until(sid, &["turn.completed", "turn.failed"])
        .await
}

/// `session/subscribe` as the desktop does, after `after` when given.
pub async fn subscribe(c: &mut Client, sid: &str, after: Option<u64>) -> Value {
    let mut params = json!({"sessionId": sid, "deliveryKind": "desktop-continuous"});
    if let Some(after) = after {
        params["afterSeq"] = json!(after);
    }
    c.call("session/subscribe", params).await
}

/// The ids in a `session/list` result (either protocol's).
pub fn session_ids(listed: &Value) -> Vec<&str> {
    listed["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .filter_map(|s| s["sessionId"].as_str())
        .collect()
}

/// The `seq` of every event.
pub fn seqs(events: &[Value]) -> Vec<u64> {
    events
        .iter()
        .map(|e| e["seq"].as_u64().expect("seq"))
        .collect()
}

/// The `events` of a `session/events` result.
pub fn events_of(result: &Value) -> Vec<Value> {
    result["events"].as_array().expect("events").clone()
}

/// Capability scenario `name` set up under a new root (workspace `ws`, home `home`): the
/// root, its paths, the scenario with its files written, and the mock model playing it.
pub fn scenario(name: &str) -> (tempfile::TempDir, Paths, Scenario, test_support::MockModel) {
    let root = tempfile::tempdir().expect("tempdir");
    let paths = Paths::new(
        root.path(),
        &root.path().join("ws"),
        &root.path().join("home"),
    );
    let mut scenario = test_support::scenarios::build(name, &paths);
    scenario.write_files(&paths);
    let model = test_support::MockModel::start(std::mem::take(&mut scenario.model));
    (root, paths, scenario, model)
}

/// The server's stderr in a capability scenario's root.
pub fn scenario_stderr(paths: &Paths) -> String {
    std::fs::read_to_string(paths.root.join("stderr.log")).unwrap_or_default()
}

/// From [`test_support::procs`] (not every test binary uses it).
#[allow(unused_imports)]
pub use test_support::procs::gone as process_gone;

/// Waits (bounded by [`WAIT`]) until every pid is gone; returns those still alive.
pub async fn wait_gone(pids: &[i32]) -> Vec<i32> {
    test_support::procs::wait_gone(pids, WAIT).await
}

/// Waits (bounded by [`WAIT`]) until a bash call wrote `shell.pid` and `child.pid` into
/// `ws` (`echo $$ > shell.pid; sleep 300 & echo $! > child.pid; wait`); returns both.
pub async fn bash_pids(ws: &Path) -> Vec<i32> {
    vec![
        test_support::procs::pid_in(&ws.join("shell.pid"), WAIT).await,
        test_support::procs::pid_in(&ws.join("child.pid"), WAIT).await,
    ]
}

/// Every file under `dir`.
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Types of a list of events.
pub fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            let t = e["type"].as_str().unwrap_or_default().to_string();
            match e["payload"]["kind"].as_str() {
                Some(kind) => format!("{t}:{kind}"),
                None => t,
            }
        })
        .collect()
}

/// Asserts the seqs of `events` are consecutive.
pub fn assert_consecutive(events: &[Value]) {
    for pair in events.windows(2) {
        assert_eq!(
            pair[1]["seq"].as_u64(),
            pair[0]["seq"].as_u64().map(|s| s + 1),
            "seq gap between {} and {}",
            pair[0],
            pair[1]
        );
    }
}
