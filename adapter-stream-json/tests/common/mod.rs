//! Helpers for the end-to-end tests: a sandbox (workspace + data dir), running the built
//! binary with a bounded wait, and reading its JSONL output.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

/// Longest a single binary run may take.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_adapter-stream-json")
}

/// A temporary workspace and data directory.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("work")).expect("work dir");
        std::fs::create_dir_all(dir.path().join("data")).expect("data dir");
        Self { dir }
    }

    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    pub fn sessions(&self) -> PathBuf {
        self.dir.path().join("data").join("zero").join("sessions")
    }

    /// `$XDG_CONFIG_HOME` of the binary: Zero's `zero/config.json`, `zero/hooks.json`,
    /// `zero/trust.json` and `zero/specialists/` live under it.
    pub fn config(&self) -> PathBuf {
        self.dir.path().join("config")
    }

    /// Writes `value` as JSON to `$XDG_CONFIG_HOME/zero/<name>`.
    pub fn zero_config(&self, name: &str, value: &Value) {
        let dir = self.config().join("zero");
        std::fs::create_dir_all(&dir).expect("config dir");
        std::fs::write(dir.join(name), serde_json::to_vec(value).expect("json")).expect("write");
    }

    /// Trusts the workspace the way `zero trust` does.
    pub fn trust_workspace(&self) {
        let root = std::fs::canonicalize(self.work()).expect("canonical workspace");
        self.zero_config("trust.json", &serde_json::json!({ "trusted": [root] }));
    }

    /// Writes a scripted-provider script and returns its path.
    pub fn script(&self, name: &str, script: &Value) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, serde_json::to_vec(script).expect("json")).expect("script");
        path
    }

    /// A command for the binary with a clean environment pointing at this sandbox.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin());
        cmd.args(args)
            .current_dir(self.work())
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .env("XDG_CONFIG_HOME", self.config())
            .env("HOME", self.dir.path())
            .env_remove("ZERO_PROVIDER")
            .env_remove("ZERO_CHECKPOINTS")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("ANTHROPIC_BASE_URL");
        cmd
    }

    /// Runs the binary with `stdin`, waiting at most [`RUN_TIMEOUT`].
    pub fn run(&self, args: &[&str], stdin: &str) -> Run {
        self.run_with(self.command(args), stdin)
    }

    /// Runs `exec -o stream-json --script <script> <args…>` with `stdin`, waiting at most
    /// [`RUN_TIMEOUT`].
    pub fn exec_script(&self, script: &Path, args: &[&str], stdin: &str) -> Run {
        self.run_with(self.script_command(script, args), stdin)
    }

    /// A [`Sandbox::command`] for `exec -o stream-json --script <script> <args…>`.
    pub fn script_command(&self, script: &Path, args: &[&str]) -> Command {
        let script = script.to_str().expect("script path");
        let mut all = vec!["exec", "-o", "stream-json", "--script", script];
        all.extend_from_slice(args);
        self.command(&all)
    }

    /// Runs `cmd` (from [`Sandbox::command`]) with `stdin`, waiting at most [`RUN_TIMEOUT`].
    pub fn run_with(&self, mut cmd: Command, stdin: &str) -> Run {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn binary");
        let mut input = child.stdin.take().expect("stdin");
        let data = stdin.as_bytes().to_vec();
        // Write on a thread: a large input must not deadlock against a full stdout pipe.
        let writer = std::thread::spawn(move || {
            let _ = input.write_all(&data);
        });
        let output = wait_output(child, RUN_TIMEOUT);
        let _ = writer.join();
        Run::from(output)
    }
}

/// Waits for `child` with a timeout; kills it and panics when the timeout passes.
pub fn wait_output(child: Child, timeout: Duration) -> Output {
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(timeout) {
        Ok(output) => output.expect("wait for binary"),
        Err(_) => {
            // SAFETY: sending SIGKILL to the child we spawned.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("the binary did not finish within {timeout:?}");
        }
    }
}

/// A finished run.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(output: Output) -> Self {
        Self {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl Run {
    /// Every stdout line parsed as JSON.
    pub fn events(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l:?}: {e}")))
            .collect()
    }

    /// The `sessionId` of the first event.
    pub fn session_id(&self) -> String {
        self.events()[0]["sessionId"]
            .as_str()
            .expect("sessionId")
            .to_string()
    }

    pub fn types(&self) -> Vec<String> {
        self.events()
            .iter()
            .map(|e| e["type"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// Events of one type.
    pub fn of(&self, kind: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["type"] == kind)
            .collect()
    }

    /// Asserts the stream-json framing rules every run obeys.
    pub fn assert_framing(&self) {
        let events = self.events();
        assert!(!events.is_empty(), "no output");
        let run_id = events[0]["runId"].as_str().expect("runId").to_string();
        assert!(is_run_id(&run_id), "bad runId {run_id}");
        for (line, event) in self.stdout.lines().zip(&events) {
            assert_eq!(event["schemaVersion"], 2, "{line}");
            assert_eq!(event["runId"], run_id.as_str(), "one runId per run: {line}");
            assert!(event["type"].is_string(), "{line}");
            let keys: Vec<&String> = event.as_object().expect("object").keys().collect();
            let mut sorted = keys.clone();
            sorted.sort();
            assert_eq!(keys, sorted, "keys sorted: {line}");
        }
        let ends: Vec<&Value> = events.iter().filter(|e| e["type"] == "run_end").collect();
        assert_eq!(ends.len(), 1, "exactly one run_end:\n{}", self.stdout);
        let last = events.last().expect("last");
        assert_eq!(last["type"], "run_end", "run_end is last");
        assert_eq!(
            last["exitCode"], self.code,
            "exitCode equals the process exit code"
        );
        for (i, e) in events.iter().enumerate() {
            if e["type"] == "error" {
                assert_eq!(
                    events[i + 1]["type"],
                    "run_end",
                    "error is followed by run_end"
                );
            }
        }
    }

    /// Asserts exactly `error{usage_error, message}` + `run_end{error, 2}`.
    pub fn assert_usage_error(&self, message: &str) {
        assert_eq!(
            self.code, 2,
            "stdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        self.assert_framing();
        let events = self.events();
        assert_eq!(events.len(), 2, "{}", self.stdout);
        assert_eq!(events[0]["type"], "error");
        assert_eq!(events[0]["code"], "usage_error");
        assert_eq!(events[0]["message"], message);
        assert_eq!(events[0]["recoverable"], false);
        assert_eq!(events[1]["status"], "error");
        assert_eq!(events[1]["exitCode"], 2);
        assert_eq!(self.stderr, "", "stderr stays empty");
    }
}

/// `run_<14 digits>_<6 lowercase hex>`.
pub fn is_run_id(id: &str) -> bool {
    let Some(rest) = id.strip_prefix("run_") else {
        return false;
    };
    let mut parts = rest.split('_');
    let (Some(stamp), Some(hex), None) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    stamp.len() == 14
        && stamp.bytes().all(|b| b.is_ascii_digit())
        && hex.len() == 6
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Reads a spawned child's stdout lines on a thread.
pub fn line_reader(stdout: std::process::ChildStdout) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            match line {
                Ok(line) => {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
    });
    rx
}

/// Session events of `id` as JSON values.
pub fn session_events(sessions: &Path, id: &str) -> Vec<Value> {
    let data = std::fs::read_to_string(sessions.join(id).join("events.jsonl")).expect("events");
    data.lines()
        .map(|l| serde_json::from_str(l).expect("event json"))
        .collect()
}

pub fn session_meta(sessions: &Path, id: &str) -> Value {
    let data = std::fs::read_to_string(sessions.join(id).join("metadata.json")).expect("meta");
    serde_json::from_str(&data).expect("meta json")
}

/// A mock model script: reasoning, then `text`, then a usage.
pub fn answer_script(text: &str) -> Value {
    serde_json::json!({"turns": [{"steps": [
        {"reasoning": "thinking"},
        {"text": text},
        {"usage": {"input": 10, "output": 4, "cache_read": 6}}
    ]}]})
}

/// A stream-json `prompt` input line.
pub fn prompt_line(content: &str) -> String {
    serde_json::json!({"schemaVersion": 2, "type": "prompt", "content": content}).to_string()
}

/// A mock model script: one turn of tool calls (`[[id, name, args], …]`), then `answer`.
pub fn tool_script(calls: Value, answer: &str) -> Value {
    let steps: Vec<Value> = calls
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| {
            serde_json::json!({"tool_call": {"id": c[0], "name": c[1], "args": [c[2].to_string()]}})
        })
        .collect();
    serde_json::json!({"turns": [{"steps": steps}, {"steps": [{"text": answer}]}]})
}

/// `exec -o stream-json` against the OpenAI-compatible server at `url` (model `gpt-test`),
/// with `--api-key key` when `key` is given.
pub fn openai_exec<'a>(url: &'a str, key: Option<&'a str>) -> Vec<&'a str> {
    let mut args = vec!["exec", "-o", "stream-json", "--provider", "openai"];
    args.extend(["--base-url", url, "--model", "gpt-test"]);
    if let Some(key) = key {
        args.extend(["--api-key", key]);
    }
    args
}

/// Spawning a [`Sandbox::command`] whose output a test reads as it comes.
pub trait Piped {
    /// Spawns with stdin closed and stdout and stderr piped.
    fn spawn_piped(&mut self) -> Child;
}

impl Piped for Command {
    fn spawn_piped(&mut self) -> Child {
        self.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn")
    }
}
