//! A harness that spawns `adapter-rpc rpc` and drives it over pipes.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use test_support::pipe::Pipe;
use tokio::process::Command;

/// Bound on every single wait for a line or an exit.
pub const WAIT: Duration = Duration::from_secs(20);

pub struct Rpc {
    /// The process and its pipes (`raw`: every line read so far).
    pub pipe: Pipe,
    /// The workspace (also `--cwd`).
    pub dir: tempfile::TempDir,
}

#[derive(Default)]
pub struct Opts<'a> {
    pub args: Vec<String>,
    pub env: Vec<(&'a str, &'a str)>,
    /// Turns of a scripted provider; `None` means the args choose the provider.
    pub script: Option<Value>,
    pub dir: Option<tempfile::TempDir>,
    /// The `--cwd` given (default: `dir`).
    pub cwd: Option<PathBuf>,
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_adapter-rpc")
}

/// Writes a script file for `turns` into `dir`.
pub fn write_script(dir: &Path, turns: Value) -> PathBuf {
    let path = dir.join("script.json");
    let script = json!({"model": "scripted-test", "turns": turns});
    std::fs::write(&path, serde_json::to_vec(&script).expect("script")).expect("write script");
    path
}

impl Rpc {
    /// Spawns with a scripted provider playing `turns`.
    pub fn scripted(turns: Value) -> Self {
        Self::spawn(Opts {
            script: Some(turns),
            ..Opts::default()
        })
    }

    pub fn spawn(opts: Opts<'_>) -> Self {
        let dir = opts
            .dir
            .unwrap_or_else(|| tempfile::tempdir().expect("tempdir"));
        let mut cmd = Command::new(bin());
        cmd.arg("rpc")
            .arg("--cwd")
            .arg(opts.cwd.as_deref().unwrap_or(dir.path()))
            .current_dir(dir.path());
        if let Some(turns) = opts.script {
            let path = write_script(dir.path(), turns);
            cmd.arg("--provider")
                .arg("scripted")
                .arg("--script")
                .arg(path);
        }
        cmd.args(&opts.args)
            .env_remove("ZUTCORE_RPC_TOKEN")
            .envs(opts.env.iter().copied())
            .stderr(Stdio::piped());
        Self {
            pipe: Pipe::spawn(&mut cmd, WAIT),
            dir,
        }
    }

    /// Writes raw bytes (a line should end with `\n`).
    pub async fn write(&mut self, bytes: &[u8]) {
        self.pipe.write(bytes).await;
    }

    /// Sends one raw line.
    pub async fn send_raw(&mut self, line: &str) {
        self.write(format!("{line}\n").as_bytes()).await;
    }

    /// Sends one command.
    pub async fn send(&mut self, command: Value) {
        self.send_raw(&command.to_string()).await;
    }

    /// Closes stdin.
    pub fn close(&mut self) {
        self.pipe.close_stdin();
    }

    /// The next line, parsed; `None` at end of output.
    pub async fn try_next(&mut self) -> Option<Value> {
        let line = self.pipe.next_line().await?;
        let value: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
        assert!(value.is_object(), "frame is not an object: {line}");
        Some(value)
    }

    /// The next line, parsed.
    pub async fn next(&mut self) -> Value {
        self.try_next().await.expect("stdout closed")
    }

    /// Reads until `stop` matches a frame (inclusive).
    pub async fn until(&mut self, stop: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let frame = self.next().await;
            let done = stop(&frame);
            out.push(frame);
            if done {
                return out;
            }
        }
    }

    /// Reads until a frame of `type`.
    pub async fn until_type(&mut self, kind: &str) -> Vec<Value> {
        self.until(|f| f["type"] == kind).await
    }

    /// Sends `command` with `id` and returns its response (asserting nothing else came first).
    pub async fn call(&mut self, mut command: Value, id: &str) -> Value {
        command["id"] = json!(id);
        self.send(command).await;
        let frame = self.next().await;
        assert_eq!(
            frame["type"], "response",
            "expected a response, got {frame}"
        );
        assert_eq!(frame["id"], id, "response to another id: {frame}");
        frame
    }

    /// Reads everything until stdout closes.
    pub async fn rest(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some(frame) = self.try_next().await {
            out.push(frame);
        }
        out
    }

    /// Waits for the process to exit.
    pub async fn exit(&mut self) -> ExitStatus {
        self.pipe.exit().await
    }

    /// The process id.
    pub fn pid(&self) -> i32 {
        self.pipe.pid() as i32
    }

    /// Sends `signal` to the process.
    pub fn kill(&self, signal: i32) {
        // SAFETY: kill(2) with a pid of our own child and a valid signal number.
        let rc = unsafe { libc::kill(self.pid(), signal) };
        assert_eq!(rc, 0, "kill failed");
    }

    /// Everything the process wrote to stderr (after it exited).
    pub async fn stderr(&mut self) -> String {
        use tokio::io::AsyncReadExt;
        let mut text = String::new();
        if let Some(mut err) = self.pipe.child.stderr.take() {
            let _ = tokio::time::timeout(WAIT, err.read_to_string(&mut text)).await;
        }
        text
    }
}

/// The `type`s of `frames`.
pub fn types(frames: &[Value]) -> Vec<String> {
    frames
        .iter()
        .map(|f| f["type"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// The frames of `frames` that are events (not responses).
pub fn events(frames: &[Value]) -> Vec<Value> {
    frames
        .iter()
        .filter(|f| f["type"] != "response")
        .cloned()
        .collect()
}

/// A scripted text turn.
pub fn text_turn(text: &str) -> Value {
    json!({"steps": [{"text": text}, {"usage": {"input": 10, "output": 2}}]})
}

/// Sends the prompt "say hello" and returns its frames, asserting their types: one model
/// call (its `request_started` of the agent, then of the provider) streaming two text
/// deltas and a usage.
pub async fn say_hello(rpc: &mut Rpc) -> Vec<Value> {
    rpc.send(json!({"id": "1", "type": "prompt", "message": "say hello"}))
        .await;
    let frames = rpc.until_type("done").await;
    assert_eq!(
        types(&frames),
        [
            "response",
            "user_message",
            "turn_start",
            "request_started",
            "request_started",
            "assistant_start",
            "text_delta",
            "text_delta",
            "usage",
            "assistant_message",
            "turn_end",
            "done"
        ]
    );
    frames
}

/// Args for the openai provider against `base` (a mock model's `/v1`).
pub fn openai_args(base: &str) -> Vec<String> {
    [
        "--provider",
        "openai",
        "--base-url",
        base,
        "--api-key",
        "sk-test-key",
        "--model",
        "gpt-test",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Spawns against the mock model `base` with `extra` args, in `dir` when given.
pub fn on_mock(base: &str, extra: &[String], dir: Option<tempfile::TempDir>) -> Rpc {
    let mut args = openai_args(base);
    args.extend(extra.iter().cloned());
    Rpc::spawn(Opts {
        args,
        dir,
        env: vec![("AGENT_SDK_MAX_RETRIES", "0")],
        ..Opts::default()
    })
}

/// From [`test_support::procs`] (not every test binary uses it).
#[allow(unused_imports)]
pub use test_support::procs::alive;

/// Waits (bounded) until `pid` is gone.
pub async fn assert_gone(pid: i32, what: &str) {
    assert!(
        test_support::procs::wait_gone(&[pid], WAIT)
            .await
            .is_empty(),
        "{what} (pid {pid}) outlived the server"
    );
}

/// The frames of `frames` of `type`.
pub fn of_type<'a>(frames: &'a [Value], kind: &str) -> Vec<&'a Value> {
    frames.iter().filter(|f| f["type"] == kind).collect()
}

/// The `tool_result` frame of call `id`.
pub fn result_of<'a>(frames: &'a [Value], id: &str) -> &'a Value {
    frames
        .iter()
        .find(|f| f["type"] == "tool_result" && f["id"] == id)
        .unwrap_or_else(|| panic!("no tool_result for {id} in {frames:#?}"))
}

/// The text of a `tool_result` frame's content.
pub fn result_text(frame: &Value) -> String {
    frame["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("")
        })
        .unwrap_or_default()
}
