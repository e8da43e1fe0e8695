//! A test client that spawns `adapter-acp app-server --stdio` and talks line-delimited JSON
//! over pipes, like the zcode-acp-server bridge does. Every read is bounded by [`WAIT`].

#![allow(dead_code)]

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Bound on every single wait for a line or an exit.
pub const WAIT: Duration = Duration::from_secs(20);

/// Writes a scripted-provider script playing `turns` into `dir`.
pub fn write_script(dir: &Path, turns: Value) -> PathBuf {
    let path = dir.join("script.json");
    let script = json!({"model": "scripted-test", "turns": turns});
    std::fs::write(&path, serde_json::to_vec(&script).expect("script")).expect("write script");
    path
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

    pub fn workspace_str(&self) -> String {
        self.workspace().display().to_string()
    }

    /// Spawns the server playing `turns`.
    pub fn spawn(&self, turns: Value) -> Client {
        let script = write_script(self.root.path(), turns);
        Client::spawn(&[
            "app-server".into(),
            "--stdio".into(),
            "--disallowed-tools".into(),
            "CronCreate CronList CronUpdate CronDelete".into(),
            "--provider".into(),
            "scripted".into(),
            "--script".into(),
            script.display().to_string(),
            "--data-dir".into(),
            self.data().display().to_string(),
        ])
    }
}

pub mod acp_client;

pub struct Client {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    backlog: VecDeque<Value>,
    next_id: i64,
    /// Every line read so far, raw.
    pub raw: Vec<String>,
}

impl Client {
    pub fn spawn(args: &[String]) -> Self {
        Self::spawn_with(args, &[], None)
    }

    /// Spawns with extra environment variables, and stderr to `stderr` (else discarded).
    pub fn spawn_with(args: &[String], envs: &[(&str, &str)], stderr: Option<&Path>) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_adapter-acp"));
        let stderr = match stderr {
            Some(path) => Stdio::from(std::fs::File::create(path).expect("stderr file")),
            None => Stdio::null(),
        };
        cmd.args(args)
            .envs(envs.iter().copied())
            .env_remove("ADAPTER_ACP_PROVIDER")
            .env_remove("ADAPTER_ACP_MODEL")
            .env_remove("ADAPTER_ACP_SCRIPT")
            .env_remove("ADAPTER_ACP_DATA_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true);
        let mut child = cmd.spawn().expect("spawn adapter-acp");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        Self {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
            backlog: VecDeque::new(),
            next_id: 1,
            raw: Vec::new(),
        }
    }

    /// Sends one raw line.
    pub async fn send_raw(&mut self, line: &str) {
        self.send_bytes(line.as_bytes()).await;
    }

    /// Sends one line of raw bytes (a newline is added).
    pub async fn send_bytes(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        tokio::time::timeout(WAIT, async {
            stdin.write_all(line).await.expect("write");
            stdin.write_all(b"\n").await.expect("write");
            stdin.flush().await.expect("flush");
        })
        .await
        .expect("write timed out");
    }

    pub async fn send(&mut self, message: Value) {
        self.send_raw(&message.to_string()).await;
    }

    /// The next line from the server, parsed; `None` at end of output.
    async fn read(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(WAIT, self.lines.next_line())
            .await
            .expect("timed out waiting for a line from the server")
            .expect("read stdout")?;
        self.raw.push(line.clone());
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

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    /// Closes stdin (the process sees end of input).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Reads the rest of stdout and waits (bounded) for the exit status.
    pub async fn wait_exit(&mut self) -> std::process::ExitStatus {
        let mut rest = String::new();
        let _ = tokio::time::timeout(WAIT, self.lines.get_mut().read_to_string(&mut rest)).await;
        self.raw.extend(rest.lines().map(str::to_string));
        tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("the server did not exit")
            .expect("wait")
    }

    /// Closes stdin and waits for the exit, keeping the client (and [`Self::raw`]).
    pub async fn shutdown_keep(&mut self) -> bool {
        self.stdin = None;
        self.wait_exit().await.success()
    }

    /// Closes stdin and waits for the process to exit; returns whether it exited cleanly.
    pub async fn shutdown(mut self) -> bool {
        self.stdin = None;
        let mut rest = String::new();
        let _ = tokio::time::timeout(WAIT, self.lines.get_mut().read_to_string(&mut rest)).await;
        let status = tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("server did not exit after stdin closed")
            .expect("wait");
        status.success()
    }
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
