//! A raw JSON-RPC client for `adapter-acp acp` over pipes. Every read is bounded by
//! [`WAIT`](super::WAIT).

use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::WAIT;

pub struct Acp {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    pub backlog: VecDeque<Value>,
    next_id: i64,
    /// Every line read so far, raw.
    pub raw: Vec<String>,
}

impl Acp {
    /// Spawns `adapter-acp acp` with `args` after `acp`, extra environment variables, and
    /// stderr to `stderr` (else discarded).
    pub fn spawn(args: &[String], envs: &[(&str, &str)], stderr: Option<&Path>) -> Self {
        Self::spawn_in(None, args, envs, stderr)
    }

    /// [`Acp::spawn`] with the process started in `dir` (else this process's directory).
    pub fn spawn_in(
        dir: Option<&Path>,
        args: &[String],
        envs: &[(&str, &str)],
        stderr: Option<&Path>,
    ) -> Self {
        let stderr = match stderr {
            Some(path) => Stdio::from(std::fs::File::create(path).expect("stderr file")),
            None => Stdio::null(),
        };
        let mut command = Command::new(env!("CARGO_BIN_EXE_adapter-acp"));
        if let Some(dir) = dir {
            command.current_dir(dir);
        }
        let mut child = command
            .arg("acp")
            .args(args)
            .env_remove("ADAPTER_ACP_PROVIDER")
            .env_remove("ADAPTER_ACP_MODEL")
            .env_remove("ADAPTER_ACP_SCRIPT")
            .env_remove("ADAPTER_ACP_DATA_DIR")
            .envs(envs.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .expect("spawn adapter-acp acp");
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

    pub fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    pub async fn send_raw(&mut self, line: &[u8]) {
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
        let mut message = message;
        message["jsonrpc"] = json!("2.0");
        self.send_raw(message.to_string().as_bytes()).await;
    }

    pub async fn next_matching(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(pos) = self.backlog.iter().position(&pred) {
            return self.backlog.remove(pos).expect("valid position");
        }
        loop {
            let line = tokio::time::timeout(WAIT, self.lines.next_line())
                .await
                .expect("timed out waiting for a line")
                .expect("read stdout")
                .expect("the agent closed its output");
            self.raw.push(line.clone());
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
            assert_eq!(message["jsonrpc"], "2.0", "{line}");
            if pred(&message) {
                return message;
            }
            self.backlog.push_back(message);
        }
    }

    /// Sends a request; returns its id.
    pub async fn request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"id": id, "method": method, "params": params}))
            .await;
        id
    }

    pub async fn reply(&mut self, id: i64) -> Value {
        self.next_matching(|m| m["id"] == json!(id) && m.get("method").is_none())
            .await
    }

    pub async fn call_raw(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params).await;
        self.reply(id).await
    }

    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let reply = self.call_raw(method, params).await;
        assert!(reply.get("error").is_none(), "{method} failed: {reply}");
        reply["result"].clone()
    }

    pub async fn initialize(&mut self) {
        let init = self
            .call(
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": {}}),
            )
            .await;
        assert_eq!(init["protocolVersion"], 1);
    }

    /// `session/new` in `cwd`; returns the session id.
    pub async fn new_session(&mut self, cwd: &Path) -> String {
        let created = self
            .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
            .await;
        created["sessionId"]
            .as_str()
            .expect("sessionId")
            .to_string()
    }

    /// Prompts and returns the whole reply (result with stopReason, or error).
    pub async fn prompt(&mut self, session: &str, text: &str) -> Value {
        self.call_raw(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
    }

    /// Answers every `session/request_permission` with `option` until `id` is answered;
    /// returns the reply and the `session/update`s (their `update`) that came before it,
    /// in order, and the permission requests answered.
    pub async fn turn(&mut self, id: i64, option: &str) -> (Value, Vec<Value>, Vec<Value>) {
        let mut updates = Vec::new();
        let mut asked = Vec::new();
        loop {
            let message = self
                .next_matching(|m| {
                    (m["id"] == json!(id) && m.get("method").is_none())
                        || m["method"] == "session/request_permission"
                        || m["method"] == "session/update"
                })
                .await;
            if message["method"] == "session/update" {
                updates.push(message["params"]["update"].clone());
                continue;
            }
            if message["method"] == "session/request_permission" {
                self.send(json!({"id": message["id"],
                    "result": {"outcome": {"outcome": "selected", "optionId": option}}}))
                    .await;
                asked.push(message);
                continue;
            }
            return (message, updates, asked);
        }
    }

    /// Sends `session/prompt` with `text` to session `sid` and plays the turn as
    /// [`Acp::turn`] does, answering permission requests with `option`.
    pub async fn prompt_turn(
        &mut self,
        sid: &str,
        text: &str,
        option: &str,
    ) -> (Value, Vec<Value>, Vec<Value>) {
        let id = self
            .request(
                "session/prompt",
                json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]}),
            )
            .await;
        self.turn(id, option).await
    }

    /// Answers every `session/request_permission` with `option` until `id` is answered;
    /// returns the reply.
    pub async fn reply_answering(&mut self, id: i64, option: &str) -> Value {
        loop {
            let message = self
                .next_matching(|m| {
                    (m["id"] == json!(id) && m.get("method").is_none())
                        || m["method"] == "session/request_permission"
                })
                .await;
            if message["method"] == "session/request_permission" {
                self.send(json!({"id": message["id"],
                    "result": {"outcome": {"outcome": "selected", "optionId": option}}}))
                    .await;
                continue;
            }
            return message;
        }
    }

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
            .expect("the agent did not exit")
            .expect("wait")
    }

    /// Closes stdin and waits for a clean exit; [`Acp::raw`] then holds all of stdout.
    pub async fn shutdown_keep_raw(&mut self) -> bool {
        self.stdin = None;
        self.wait_exit().await.success()
    }

    pub async fn shutdown(mut self) -> bool {
        self.stdin = None;
        self.wait_exit().await.success()
    }
}

/// The updates of tool call `id` (its `tool_call` and `tool_call_update`s).
pub fn of_call<'a>(updates: &'a [Value], id: &str) -> Vec<&'a Value> {
    updates.iter().filter(|u| u["toolCallId"] == id).collect()
}

/// The text of an update's content list.
pub fn content_text(update: &Value) -> String {
    update["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["content"]["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}
