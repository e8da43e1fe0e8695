//! Every capability through `adapter-acp acp` (the binary, over pipes, on the scripted
//! model), in ACP's own terms:
//!
//! - hooks (`--hooks FILE`, Claude Code's format): a `PreToolUse` veto of `bash` (the
//!   command never runs — a marker file — the call fails with the reason, and the reason is
//!   the result the model gets), a `PostToolUse` hook whose context reaches the result, a
//!   `UserPromptSubmit` block (`refusal`), a `Stop` hook forcing one continuation, a hook
//!   that hangs (killed at its timeout; the run completes), a hook command that is missing
//!   (reported; the run completes), and a hooks file that does not exist (the agent refuses
//!   to start, naming the flag);
//! - the sandbox: under the default `workspace-write` a command that writes outside the
//!   workspace is refused and its call's content says so; `--sandbox off` lets it write;
//! - sub-agents: a `Task` call is a `think` tool call whose updates carry the child's
//!   progress and end with its answer; a child's permission request is asked under
//!   `task_id/call_id`;
//! - the context budget: `usage_update {used, size, cost}` after every model call, and an
//!   automatic compaction as agent thoughts;
//! - a key given with `--api-key`, used as a file name that does not exist: the error
//!   result shows `[REDACTED]` and the key is nowhere on stdout.
//!
//! Every wait is bounded ([`WAIT`]).

mod common;

use std::path::PathBuf;

use common::acp_client::{content_text, of_call, Acp};
use common::{write_script, WAIT};
use serde_json::{json, Value};
use test_support::procs::pid_in;
use test_support::{sse, MockModel, Reply, Request, Script};

/// A workspace, a data directory and a home of their own, and the agent's process.
struct Fixture {
    root: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let root = tempfile::tempdir().expect("tempdir");
        for dir in ["ws", "data", "home", "config", "state"] {
            std::fs::create_dir_all(root.path().join(dir)).expect("mkdir");
        }
        Self { root }
    }

    fn ws(&self) -> PathBuf {
        self.root.path().join("ws")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    fn file(&self, name: &str, content: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, content).expect("write");
        path
    }

    /// The agent playing `turns`, with `extra` flags, started in the workspace, its user
    /// directories inside the fixture.
    fn spawn(&self, turns: Value, extra: &[&str]) -> Acp {
        let script = write_script(self.root.path(), turns);
        let mut args: Vec<String> = vec![
            "--provider".into(),
            "scripted".into(),
            "--script".into(),
            script.display().to_string(),
            "--data-dir".into(),
            self.path("data").display().to_string(),
        ];
        args.extend(extra.iter().map(|a| a.to_string()));
        let home = self.path("home");
        let config = self.path("config");
        let state = self.path("state");
        let envs = [
            ("HOME", home.to_str().expect("utf-8")),
            ("XDG_CONFIG_HOME", config.to_str().expect("utf-8")),
            ("XDG_DATA_HOME", state.to_str().expect("utf-8")),
        ];
        Acp::spawn_in(
            Some(&self.ws()),
            &args,
            &envs,
            Some(&self.path("stderr.log")),
        )
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.path("stderr.log")).unwrap_or_default()
    }

    /// The agent on the OpenAI-compatible mock model at `base`, with `extra` flags.
    fn spawn_on_mock(&self, base: &str, extra: &[&str]) -> Acp {
        let mut args: Vec<String> = [
            "--provider",
            "openai",
            "--base-url",
            base,
            "--api-key",
            "sk-test-key",
            "--model",
            "gpt-test",
            "--data-dir",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push(self.path("data").display().to_string());
        args.extend(extra.iter().map(|a| a.to_string()));
        let home = self.path("home");
        let config = self.path("config");
        let state = self.path("state");
        let envs = [
            ("HOME", home.to_str().expect("utf-8")),
            ("XDG_CONFIG_HOME", config.to_str().expect("utf-8")),
            ("XDG_DATA_HOME", state.to_str().expect("utf-8")),
            ("AGENT_SDK_MAX_RETRIES", "0"),
        ];
        Acp::spawn_in(
            Some(&self.ws()),
            &args,
            &envs,
            Some(&self.path("stderr.log")),
        )
    }
}

/// A session in the fixture's workspace, in `mode`.
async fn session(acp: &mut Acp, f: &Fixture, mode: &str) -> String {
    acp.initialize().await;
    let sid = acp.new_session(&f.ws()).await;
    acp.call(
        "session/set_mode",
        json!({"sessionId": sid, "modeId": mode}),
    )
    .await;
    sid
}

fn kinds(updates: &[Value], kind: &str) -> String {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

/// The tool results of the session's transcript, as a client loading it sees them (the
/// results the model is sent): `(status, text)` per call id.
async fn replayed_result(acp: &mut Acp, f: &Fixture, sid: &str, call: &str) -> (String, String) {
    acp.backlog.clear();
    let loaded = acp
        .call_raw(
            "session/load",
            json!({"sessionId": sid, "cwd": f.ws(), "mcpServers": []}),
        )
        .await;
    assert!(loaded.get("result").is_some(), "{loaded}");
    let last = acp
        .backlog
        .iter()
        .rfind(|m| {
            m["params"]["update"]["toolCallId"] == call
                && m["params"]["update"]["sessionUpdate"] == "tool_call_update"
        })
        .map(|m| m["params"]["update"].clone())
        .unwrap_or_default();
    (
        last["status"].as_str().unwrap_or_default().to_string(),
        content_text(&last),
    )
}

fn claude_hooks(
    f: &Fixture,
    event: &str,
    matcher: Option<&str>,
    command: &str,
    timeout: u64,
) -> PathBuf {
    let mut entry = json!({"hooks": [{"type": "command", "command": command, "timeout": timeout}]});
    if let Some(matcher) = matcher {
        entry["matcher"] = json!(matcher);
    }
    let settings = json!({"hooks": {event: [entry]}});
    f.file("hooks.json", &settings.to_string())
}

fn bash(id: &str, command: &str) -> Value {
    json!({"tool_call": {"id": id, "name": "bash", "args": [json!({"command": command}).to_string()]}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pre_tool_use_hook_vetoes_bash_and_the_model_gets_the_reason() {
    let f = Fixture::new();
    let hooks = claude_hooks(
        &f,
        "PreToolUse",
        Some("Bash"),
        "echo 'no shell in this repo' >&2; exit 2",
        30,
    );
    let mut acp = f.spawn(
        json!([
            {"steps": [bash("b1", "touch vetoed.marker")]},
            {"steps": [{"text": "Understood."}]}
        ]),
        &["--hooks", hooks.to_str().expect("utf-8")],
    );
    let sid = session(&mut acp, &f, "yolo").await;
    let (reply, updates, asked) = acp.prompt_turn(&sid, "touch it", "allow_once").await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    assert!(asked.is_empty(), "a vetoed call asks nothing: {asked:?}");
    assert!(
        !f.ws().join("vetoed.marker").exists(),
        "the command never ran"
    );
    let call = of_call(&updates, "b1");
    let decided = call
        .iter()
        .find(|u| u["_meta"]["hook"].is_object())
        .unwrap_or_else(|| panic!("no hook decision in {call:?}"));
    assert_eq!(decided["status"], "failed");
    assert_eq!(decided["_meta"]["hook"]["event"], "before_tool");
    assert_eq!(decided["_meta"]["hook"]["outcome"], "deny");
    assert!(
        content_text(decided).contains("no shell in this repo"),
        "{decided}"
    );
    let last = call.last().expect("updates");
    assert_eq!(last["status"], "failed");
    assert!(
        content_text(last).contains("no shell in this repo"),
        "{last}"
    );
    assert!(
        !call.iter().any(|u| u["status"] == "in_progress"),
        "never ran: {call:?}"
    );
    // What the model was sent for the call: the veto with the reason.
    let (status, text) = replayed_result(&mut acp, &f, &sid, "b1").await;
    assert_eq!(status, "failed");
    assert!(
        text.contains("blocked by hook") && text.contains("no shell in this repo"),
        "{text}"
    );
    assert!(acp.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_tool_use_hook_adds_to_the_result() {
    let f = Fixture::new();
    std::fs::write(f.ws().join("notes.txt"), "remember the milk\n").expect("write");
    let output = json!({"hookSpecificOutput": {"hookEventName": "PostToolUse",
        "additionalContext": "checked by the audit hook"}});
    let hooks = claude_hooks(
        &f,
        "PostToolUse",
        Some("Read|read_file"),
        &format!("echo '{output}'"),
        30,
    );
    let mut acp = f.spawn(
        json!([
            {"steps": [{"tool_call": {"id": "r1", "name": "read_file", "args": ["{\"path\": \"notes.txt\"}"]}}]},
            {"steps": [{"text": "Read it."}]}
        ]),
        &["--hooks", hooks.to_str().expect("utf-8")],
    );
    let sid = session(&mut acp, &f, "build").await;
    let (reply, updates, _) = acp.prompt_turn(&sid, "read the notes", "allow_once").await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    let call = of_call(&updates, "r1");
    let hook = call
        .iter()
        .find(|u| u["_meta"]["hook"].is_object())
        .unwrap_or_else(|| panic!("no hook decision in {call:?}"));
    assert_eq!(hook["_meta"]["hook"]["event"], "after_tool");
    let last = call.last().expect("updates");
    assert_eq!(last["status"], "completed");
    let text = content_text(last);
    assert!(text.contains("remember the milk"), "{text}");
    assert!(text.contains("checked by the audit hook"), "{text}");
    let (_, sent) = replayed_result(&mut acp, &f, &sid, "r1").await;
    assert!(sent.contains("checked by the audit hook"), "{sent}");
    assert!(acp.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_prompt_submit_hook_blocks_the_prompt_as_a_refusal() {
    let f = Fixture::new();
    let hooks = claude_hooks(
        &f,
        "UserPromptSubmit",
        None,
        "echo 'prompts about secrets are not allowed' >&2; exit 2",
        30,
    );
    let mut acp = f.spawn(
        json!([{"steps": [{"text": "never said"}]}, {"steps": [{"text": "Hello."}]}]),
        &["--hooks", hooks.to_str().expect("utf-8")],
    );
    let sid = session(&mut acp, &f, "build").await;
    let (reply, updates, _) = acp
        .prompt_turn(&sid, "tell me the secrets", "reject_once")
        .await;
    assert_eq!(reply["result"]["stopReason"], "refusal", "{reply}");
    let said = kinds(&updates, "agent_message_chunk");
    assert!(
        said.contains("blocked by hook") && said.contains("prompts about secrets are not allowed"),
        "{said}"
    );
    assert!(
        !said.contains("never said"),
        "the model was not called: {said}"
    );
    assert!(acp.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_hook_forces_one_continuation() {
    let f = Fixture::new();
    // Blocks the stop unless the payload says a stop hook already continued once.
    let hooks = claude_hooks(
        &f,
        "Stop",
        None,
        "if grep -q '\"stop_hook_active\":true' ; then exit 0; fi; echo 'run the tests too' >&2; exit 2",
        30,
    );
    let mut acp = f.spawn(
        json!([
            {"steps": [{"text": "Fixed."}]},
            {"steps": [{"text": " Tests pass."}]},
            {"steps": [{"text": " never"}]}
        ]),
        &["--hooks", hooks.to_str().expect("utf-8")],
    );
    let sid = session(&mut acp, &f, "build").await;
    let (reply, updates, _) = acp.prompt_turn(&sid, "fix it", "reject_once").await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    assert_eq!(kinds(&updates, "agent_message_chunk"), "Fixed. Tests pass.");
    let thought = kinds(&updates, "agent_thought_chunk");
    assert!(
        thought.contains("(stop): continue") && thought.contains("run the tests too"),
        "{thought}"
    );
    assert!(acp.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_hook_is_killed_at_its_timeout_and_a_missing_one_is_reported() {
    let f = Fixture::new();
    let settings = json!({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [
            {"type": "command", "command": "echo $$ > hook.pid; exec sleep 300", "timeout": 1},
            {"type": "command", "command": "/nonexistent/hook-command", "timeout": 5}
        ]}
    ]}});
    let hooks = f.file("hooks.json", &settings.to_string());
    let mut acp = f.spawn(
        json!([
            {"steps": [bash("b1", "echo ran > ran.marker")]},
            {"steps": [{"text": "Done."}]}
        ]),
        &["--hooks", hooks.to_str().expect("utf-8")],
    );
    let sid = session(&mut acp, &f, "yolo").await;
    let (reply, updates, _) =
        tokio::time::timeout(WAIT, acp.prompt_turn(&sid, "run", "allow_once"))
            .await
            .expect("the run completes despite the hanging hook");
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    // Claude Code's rule: a hook that times out or cannot start is a non-blocking error.
    assert!(f.ws().join("ran.marker").exists(), "the call ran");
    let failed: Vec<&Value> = of_call(&updates, "b1")
        .into_iter()
        .filter(|u| u["_meta"]["hook"]["outcome"] == "failed")
        .collect();
    assert_eq!(failed.len(), 2, "{updates:?}");
    let pid: i32 = std::fs::read_to_string(f.ws().join("hook.pid"))
        .expect("the hook started")
        .trim()
        .parse()
        .expect("pid");
    assert!(
        common::wait_gone(&[pid]).await.is_empty(),
        "the hung hook was killed"
    );
    assert!(acp.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hooks_file_that_does_not_exist_refuses_to_start() {
    let f = Fixture::new();
    let missing = f.path("missing-hooks.json");
    let mut acp = f.spawn(
        json!([{"steps": [{"text": "x"}]}]),
        &["--hooks", missing.to_str().expect("utf-8")],
    );
    let status = acp.wait_exit().await;
    assert!(!status.success(), "{status:?}");
    let stderr = f.stderr();
    assert!(
        stderr.contains("--hooks") && stderr.contains("missing-hooks.json"),
        "{stderr}"
    );
    assert!(acp.raw.is_empty(), "nothing on stdout: {:?}", acp.raw);
}

/// A command that writes outside the workspace (into the fixture's home).
fn escape(f: &Fixture) -> String {
    format!(
        "echo out > {}",
        f.path("home").join("escaped.txt").display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_refuses_a_write_outside_the_workspace_and_off_allows_it() {
    let f = Fixture::new();
    let turns = json!([
        {"steps": [bash("b1", &escape(&f))]},
        {"steps": [{"text": "Done."}]}
    ]);
    // Default: workspace-write.
    let mut acp = f.spawn(turns.clone(), &[]);
    let sid = session(&mut acp, &f, "yolo").await;
    let (reply, updates, _) = acp.prompt_turn(&sid, "write outside", "allow_once").await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    assert!(!f.path("home").join("escaped.txt").exists(), "confined");
    let last = *of_call(&updates, "b1").last().expect("updates");
    let text = content_text(last);
    assert!(text.contains("Blocked by the sandbox"), "{last}");
    assert!(last["_meta"]["block"]["code"].is_string(), "{last}");
    assert!(acp.shutdown().await);

    // Off: the write lands.
    let mut acp = f.spawn(turns, &["--sandbox", "off"]);
    let sid = session(&mut acp, &f, "yolo").await;
    let (reply, updates, _) = acp.prompt_turn(&sid, "write outside", "allow_once").await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    assert!(f.path("home").join("escaped.txt").exists(), "not confined");
    let last = *of_call(&updates, "b1").last().expect("updates");
    assert_eq!(last["status"], "completed", "{last}");
    assert!(last.get("_meta").is_none(), "{last}");
    assert!(acp.shutdown().await);

    // A bad value names the flag.
    let mut acp = f.spawn(json!([]), &["--sandbox", "sometimes"]);
    assert!(!acp.wait_exit().await.success());
    assert!(f.stderr().contains("--sandbox"), "{}", f.stderr());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_call_shows_the_childs_progress_and_answer() {
    let f = Fixture::new();
    std::fs::write(f.ws().join("notes.txt"), "the tests live in tests/\n").expect("write");
    let task = |name: &str, description: &str| {
        json!({"tool_call": {"id": "t1", "name": "Task", "args": [json!({
            "name": name, "description": description, "prompt": "Look it up."
        }).to_string()]}})
    };
    let mut acp = f.spawn(
        json!([
            // Prompt 1: explorer reads a file.
            {"steps": [task("explorer", "find the tests")]},
            {"steps": [{"text": "Reading."},
                       {"tool_call": {"id": "k1", "name": "read_file", "args": ["{\"path\": \"notes.txt\"}"]}}]},
            {"steps": [{"text": "The tests live in tests/."}]},
            {"steps": [{"text": "Found them."}]},
            // Prompt 2: worker runs a command, which asks permission.
            {"steps": [task("worker", "count the files")]},
            {"steps": [bash("k2", "ls | wc -l")]},
            {"steps": [{"text": "Counted."}]},
            {"steps": [{"text": "Done."}]}
        ]),
        &[],
    );
    let sid = session(&mut acp, &f, "build").await;
    let (reply, updates, asked) = acp
        .prompt_turn(&sid, "where are the tests?", "allow_once")
        .await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    assert!(asked.is_empty(), "{asked:?}");
    let call = of_call(&updates, "t1");
    assert_eq!(call[0]["sessionUpdate"], "tool_call");
    assert_eq!(call[0]["kind"], "think");
    assert_eq!(call[0]["title"], "explorer: find the tests");
    let started = call
        .iter()
        .find(|u| u["_meta"]["subagent"].is_object())
        .unwrap_or_else(|| panic!("no sub-agent start in {call:?}"));
    assert_eq!(started["_meta"]["subagent"]["name"], "explorer");
    let progress: Vec<String> = call.iter().map(|u| content_text(u)).collect();
    assert!(
        progress.iter().any(|p| p.contains("→ Read notes.txt")),
        "{progress:?}"
    );
    assert!(
        progress.iter().any(|p| p.contains("✓ read_file")),
        "{progress:?}"
    );
    let last = call.last().expect("updates");
    assert_eq!(last["status"], "completed", "{last}");
    assert!(
        content_text(last).contains("The tests live in tests/."),
        "{last}"
    );
    // The child's text is not the parent's.
    assert_eq!(kinds(&updates, "agent_message_chunk"), "Found them.");

    let (reply, updates, asked) = acp.prompt_turn(&sid, "count the files", "allow_once").await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    let task_id = of_call(&updates, "t1")
        .iter()
        .find_map(|u| u["_meta"]["subagent"]["taskId"].as_str())
        .expect("task id")
        .to_string();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["params"]["sessionId"], json!(sid));
    assert_eq!(
        asked[0]["params"]["toolCall"]["toolCallId"],
        json!(format!("{task_id}/k2"))
    );
    assert_eq!(asked[0]["params"]["toolCall"]["kind"], "execute");
    let last = *of_call(&updates, "t1").last().expect("updates");
    assert_eq!(last["status"], "completed", "{last}");
    assert!(content_text(last).contains("Counted."), "{last}");
    assert!(acp.shutdown().await);
}

fn task_step(id: &str, name: &str, prompt: &str) -> Value {
    json!({"tool_call": {"id": id, "name": "Task", "args": [json!({
        "name": name, "description": format!("{name} task"), "prompt": prompt
    }).to_string()]}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_explorer_is_refused_a_write_and_usage_of_parent_and_child_adds_up() {
    let f = Fixture::new();
    let write = json!({"tool_call": {"id": "k1", "name": "write_file",
        "args": [json!({"path": "pwned.txt", "content": "x"}).to_string()]}});
    let mut acp = f.spawn(
        json!([
            {"steps": [task_step("t1", "explorer", "Write pwned.txt."), {"usage": {"input": 10, "output": 5}}]},
            {"steps": [write, {"usage": {"input": 7, "output": 2}}]},
            {"steps": [{"text": "I may not write."}, {"usage": {"input": 5, "output": 1}}]},
            {"steps": [{"text": "Done."}, {"usage": {"input": 20, "output": 4}}]}
        ]),
        &[],
    );
    let sid = session(&mut acp, &f, "yolo").await;
    let (reply, updates, asked) = acp.prompt_turn(&sid, "delegate", "allow_once").await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    assert!(asked.is_empty(), "{asked:?}");
    assert!(!f.ws().join("pwned.txt").exists(), "the explorer wrote");
    let call = of_call(&updates, "t1");
    let progress: Vec<String> = call.iter().map(|u| content_text(u)).collect();
    assert!(
        progress.iter().any(|p| p.contains("write_file")),
        "{progress:?}"
    );
    let last = call.last().expect("updates");
    assert_eq!(last["status"], "completed", "{last}");
    assert!(content_text(last).contains("I may not write."), "{last}");
    // The model got the refusal as the child's tool result.
    let (status, text) = replayed_result(&mut acp, &f, &sid, "t1").await;
    assert_eq!(status, "completed");
    assert!(text.contains("I may not write."), "{text}");
    // The turn's usage: parent and child together.
    let usage = &reply["result"]["_meta"]["usage"];
    assert_eq!(usage["inputTokens"], 10 + 7 + 5 + 20, "{usage}");
    assert_eq!(usage["outputTokens"], 5 + 2 + 1 + 4, "{usage}");
    assert_eq!(usage["totalTokens"], 54, "{usage}");
    assert!(acp.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_fails_ends_the_task_call_failed_and_the_parent_goes_on() {
    let f = Fixture::new();
    let mut acp = f.spawn(
        json!([
            {"steps": [task_step("t1", "explorer", "Look.")]},
            {"steps": [{"error": {"kind": "bad_request", "message": "the child's request is refused"}}]},
            {"steps": [{"text": "The explorer failed, moving on."}]}
        ]),
        &[],
    );
    let sid = session(&mut acp, &f, "yolo").await;
    let (reply, updates, _) = acp.prompt_turn(&sid, "delegate", "allow_once").await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    let last = *of_call(&updates, "t1").last().expect("updates");
    assert_eq!(last["status"], "failed", "{last}");
    assert!(
        content_text(last).contains("the child's request is refused"),
        "{last}"
    );
    assert_eq!(
        kinds(&updates, "agent_message_chunk"),
        "The explorer failed, moving on."
    );
    assert!(acp.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_cancel_during_a_child_bash_call_fails_the_task_and_leaves_no_process() {
    let f = Fixture::new();
    let mut acp = f.spawn(
        json!([
            {"steps": [task_step("t1", "worker", "Wait a long time.")]},
            {"steps": [bash("k1", "sleep 300 & echo $! > sleep.pid; echo $$ > bash.pid; wait")]},
            {"steps": [{"text": "never"}]}
        ]),
        &[],
    );
    let sid = session(&mut acp, &f, "yolo").await;
    let id = acp
        .request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": "delegate"}]}),
        )
        .await;
    let shell = pid_in(&f.ws().join("bash.pid"), WAIT).await;
    let sleeper = pid_in(&f.ws().join("sleep.pid"), WAIT).await;
    assert!(!common::process_gone(sleeper), "the child's command runs");
    acp.send(json!({"method": "session/cancel", "params": {"sessionId": sid}}))
        .await;
    let (reply, updates, _) = acp.turn(id, "allow_once").await;
    assert_eq!(reply["result"]["stopReason"], "cancelled", "{reply}");
    let last = *of_call(&updates, "t1").last().expect("updates");
    assert_eq!(last["status"], "failed", "{last}");
    assert_eq!(
        common::wait_gone(&[shell, sleeper]).await,
        Vec::<i32>::new()
    );
    assert!(acp.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_background_tasks_are_read_with_task_output() {
    let model = MockModel::start(Script::respond(|request: &Request, _| {
        if request.specialist_call("explorer") {
            let topic = match request.contains("Look at alpha") {
                true => "alpha",
                false => "beta",
            };
            return Reply::chat_text(&format!("{topic} result"));
        }
        match request.earlier_calls() {
            0 => {
                let task = |topic: &str| {
                    json!({"name": "explorer", "description": topic,
                           "prompt": format!("Look at {topic}."), "run_in_background": true})
                };
                Reply::sse(
                    sse::chat::Stream::new()
                        .tool_call("t1", "Task", &task("alpha").to_string())
                        .tool_call("t2", "Task", &task("beta").to_string())
                        .finish("tool_calls")
                        .usage(10, 1, 0)
                        .done(),
                )
            }
            1 => {
                let mut stream = sse::chat::Stream::new();
                for (i, id) in request.task_ids().iter().enumerate() {
                    let args = json!({"task_id": id, "block": true, "timeout": 30000});
                    stream =
                        stream.tool_call(&format!("o{}", i + 1), "TaskOutput", &args.to_string());
                }
                Reply::sse(stream.finish("tool_calls").usage(10, 1, 0).done())
            }
            _ => Reply::chat_text("both read"),
        }
    }));
    let f = Fixture::new();
    let mut acp = f.spawn_on_mock(&model.v1(), &[]);
    let sid = session(&mut acp, &f, "yolo").await;
    let (reply, updates, _) = acp
        .prompt_turn(&sid, "explore in the background", "allow_once")
        .await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    for (call, topic) in [("o1", "alpha"), ("o2", "beta")] {
        let last = *of_call(&updates, call).last().expect("updates");
        assert_eq!(last["status"], "completed", "{last}");
        let text = content_text(last);
        assert!(
            text.contains("status: completed") && text.contains(&format!("{topic} result")),
            "{text}"
        );
    }
    for call in ["t1", "t2"] {
        let updates = of_call(&updates, call);
        assert!(
            updates
                .iter()
                .any(|u| u["_meta"]["subagent"]["background"] == true),
            "{updates:?}"
        );
    }
    assert_eq!(kinds(&updates, "agent_message_chunk"), "both read");
    assert!(acp.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_manifest_overrides_the_builtin_and_a_malformed_one_is_named_with_its_line() {
    let model = MockModel::start(
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
    let f = Fixture::new();
    let specialists = f.ws().join(".zero").join("specialists");
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
    let mut acp = f.spawn_on_mock(&model.v1(), &[]);
    let sid = session(&mut acp, &f, "yolo").await;
    let (reply, updates, _) = acp.prompt_turn(&sid, "delegate", "allow_once").await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    let last = *of_call(&updates, "t1").last().expect("updates");
    assert_eq!(last["status"], "completed", "{last}");
    assert!(
        content_text(last).contains("project explorer here"),
        "{last}"
    );
    let requests = model.requests();
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
    assert!(acp.shutdown().await);
    let stderr = f.stderr();
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("skipped specialist manifest") && l.contains("bad.md:6:")),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projects_own_hooks_file_has_no_effect() {
    // `.zero/hooks.json` in the workspace would veto every bash call; ACP reads hooks only
    // from `--hooks`.
    let f = Fixture::new();
    std::fs::create_dir_all(f.ws().join(".zero")).expect("mkdir");
    std::fs::write(
        f.ws().join(".zero").join("hooks.json"),
        json!({"enabled": true, "hooks": [
            {"id": "veto", "event": "beforeTool", "matcher": "bash",
             "command": "sh", "args": ["-c", "touch vetoed; echo project veto; exit 1"]},
            {"id": "start", "event": "sessionStart", "command": "touch", "args": ["started"]}
        ]})
        .to_string(),
    )
    .expect("write");
    let mut acp = f.spawn(
        json!([
            {"steps": [bash("b1", "touch marker")]},
            {"steps": [{"text": "ok"}]}
        ]),
        &[],
    );
    let sid = session(&mut acp, &f, "yolo").await;
    let (reply, updates, _) = acp.prompt_turn(&sid, "go", "allow_once").await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    let last = *of_call(&updates, "b1").last().expect("updates");
    assert_eq!(last["status"], "completed", "{last}");
    assert!(f.ws().join("marker").exists(), "the call did not run");
    assert!(acp.shutdown().await);
    assert!(!f.ws().join("vetoed").exists(), "the project's hook ran");
    assert!(!f.ws().join("started").exists(), "the project's hook ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_usage_and_an_automatic_compaction() {
    let f = Fixture::new();
    std::fs::write(f.ws().join("a.txt"), "a\n").expect("write");
    let read = |id: &str| json!({"tool_call": {"id": id, "name": "read_file", "args": ["{\"path\": \"a.txt\"}"]}});
    let mut acp = f.spawn(
        json!([
            {"steps": [read("r1"), {"usage": {"input": 300, "output": 20}}]},
            {"steps": [read("r2"), {"usage": {"input": 1500, "output": 100}}]},
            {"steps": [{"text": "Summary: read a.txt twice."}, {"usage": {"input": 400, "output": 30}}]},
            {"steps": [{"text": "Done."}, {"usage": {"input": 200, "output": 5}}]}
        ]),
        &["--context-window", "2000", "--auto-compact", "50"],
    );
    let sid = session(&mut acp, &f, "build").await;
    let (reply, updates, _) = acp.prompt_turn(&sid, "read it twice", "reject_once").await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    let usage: Vec<&Value> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "usage_update")
        .collect();
    assert!(usage.len() >= 3, "{usage:?}");
    assert_eq!(usage[0]["used"], 320);
    assert_eq!(usage[0]["size"], 2000);
    assert_eq!(usage[1]["used"], 1600);
    // The scripted model has (fictitious) prices: the session's cost so far, growing.
    let costs: Vec<f64> = usage
        .iter()
        .filter_map(|u| u["cost"]["amount"].as_f64())
        .collect();
    assert_eq!(costs.len(), usage.len(), "{usage:?}");
    assert!(
        costs.windows(2).all(|w| w[0] <= w[1]) && costs[0] > 0.0,
        "{costs:?}"
    );
    assert_eq!(usage[0]["cost"]["currency"], "USD");
    let thought = kinds(&updates, "agent_thought_chunk");
    assert!(
        thought.contains("Compacting the context (auto)"),
        "{thought}"
    );
    // "Context compacted (auto): 1 608 → 2 449 tokens.": from what the last count said.
    let compacted = thought
        .lines()
        .find_map(|l| l.strip_prefix("Context compacted (auto): "))
        .unwrap_or_else(|| panic!("{thought}"));
    let before: u64 = compacted
        .split(" → ")
        .next()
        .map(|n| n.replace(' ', ""))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{compacted}"));
    assert!(before >= 1600, "{compacted}");
    assert!(compacted.ends_with(" tokens."), "{compacted}");
    // The summary is not answer text.
    assert_eq!(kinds(&updates, "agent_message_chunk"), "Done.");
    assert!(acp.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_key_used_as_a_missing_file_name_is_redacted() {
    let f = Fixture::new();
    let key = "sk-acp-test-9f8e7d6c5b4a39281706";
    let mut acp = f.spawn(
        json!([
            {"steps": [{"tool_call": {"id": "r1", "name": "read_file",
                "args": [json!({"path": format!("{key}.txt")}).to_string()]}}]},
            {"steps": [{"text": "No such file."}]}
        ]),
        &["--api-key", key],
    );
    let sid = session(&mut acp, &f, "build").await;
    let (reply, updates, _) = acp
        .prompt_turn(&sid, "read the key file", "reject_once")
        .await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    let last = *of_call(&updates, "r1").last().expect("updates");
    assert_eq!(last["status"], "failed", "{last}");
    assert!(content_text(last).contains("[REDACTED]"), "{last}");
    assert!(acp.shutdown_keep_raw().await);
    let stdout = acp.raw.join("\n");
    assert!(!stdout.contains(key), "the key reached stdout: {stdout}");
    assert!(!f.stderr().contains(key), "the key reached stderr");
}
