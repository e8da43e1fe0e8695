//! A raw JSON-RPC client for `adapter-acp acp` over pipes. Every read is bounded by
//! [`WAIT`](super::WAIT).

use std::collections::VecDeque;
use std::path::Path;

use serde_json::{json, Value};
use test_support::pipe::Pipe;

use super::WAIT;

pub struct Acp {
    /// The process and its pipes (also reached through `Deref`: `child`, `raw`, `pid`,
    /// `close_stdin`, `wait_exit`).
    pub pipe: Pipe,
    pub backlog: VecDeque<Value>,
    next_id: i64,
}

deref_to_pipe!(Acp);

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
        let mut command = super::command(&[], envs, stderr);
        command.arg("acp").args(args);
        if let Some(dir) = dir {
            command.current_dir(dir);
        }
        Self {
            pipe: Pipe::spawn(&mut command, WAIT),
            backlog: VecDeque::new(),
            next_id: 1,
        }
    }

    pub async fn send_raw(&mut self, line: &[u8]) {
        self.pipe.send_line(line).await;
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
            let line = self
                .pipe
                .next_line()
                .await
                .expect("the agent closed its output");
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

    /// The next `session/update`'s `update`.
    pub async fn update(&mut self) -> Value {
        self.next_matching(|m| m["method"] == "session/update")
            .await["params"]["update"]
            .clone()
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

    /// Initializes, creates a session in `cwd` and sets it to mode `yolo`; returns its id.
    pub async fn yolo_session(&mut self, cwd: &Path) -> String {
        self.initialize().await;
        let sid = self.new_session(cwd).await;
        self.call(
            "session/set_mode",
            json!({"sessionId": sid, "modeId": "yolo"}),
        )
        .await;
        sid
    }

    /// Sends `session/prompt` with `text` to `session`; returns the request id.
    pub async fn request_prompt(&mut self, session: &str, text: &str) -> i64 {
        self.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
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
        let id = self.request_prompt(sid, text).await;
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

    /// Closes stdin and waits for a clean exit; `raw` then holds all of stdout.
    pub async fn shutdown_keep_raw(&mut self) -> bool {
        self.pipe.shutdown().await
    }

    pub async fn shutdown(mut self) -> bool {
        self.pipe.shutdown().await
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
