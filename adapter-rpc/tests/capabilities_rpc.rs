//! The SDK's capabilities through `adapter-rpc rpc` on a local mock model (or the scripted
//! provider): command hooks (`--hooks FILE`), the OS sandbox (`--sandbox`), sub-agents
//! (`Task`), the context budget (`--context-window`, `--auto-compact`), a key given with
//! `--api-key` scrubbed from tool errors, and the SIGTERM/SIGINT rule.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;

use common::*;
use serde_json::{json, Value};
use test_support::{sse, MockModel, Reply, Request, Script};

/// Writes `value` as `name` in `dir` and returns its path as a string.
fn write_json(dir: &Path, name: &str, value: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, value.to_string()).expect("write");
    path.display().to_string()
}

async fn prompt(rpc: &mut Rpc, id: &str, message: &str) -> Vec<Value> {
    let started = rpc
        .call(json!({"type": "prompt", "message": message}), id)
        .await;
    assert_eq!(started["data"]["started"], true, "{started}");
    rpc.until_type("done").await
}

async fn state(rpc: &mut Rpc, id: &str) -> Value {
    let response = rpc.call(json!({"type": "get_state"}), id).await;
    assert_eq!(response["success"], true, "{response}");
    response["data"].clone()
}

fn answer(frames: &[Value]) -> String {
    of_type(frames, "text_delta")
        .iter()
        .filter_map(|f| f["delta"].as_str())
        .collect()
}

async fn finish(rpc: &mut Rpc) {
    rpc.close();
    rpc.rest().await;
    assert!(rpc.exit().await.success());
}

// ---------------------------------------------------------------------------------------------
// Hooks
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_pre_tool_use_hook_vetoes_bash_and_the_model_gets_the_reason() {
    let model = MockModel::start(vec![
        Reply::chat_call("b1", "bash", json!({"command": "touch marker"})),
        Reply::chat_text("understood"),
    ]);
    let dir = tempfile::tempdir().expect("tempdir");
    let hooks = write_json(
        dir.path(),
        "settings.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "echo 'no shell in this repo' >&2; exit 2"}
        ]}]}}),
    );
    let root = dir.path().to_path_buf();
    let mut rpc = on_mock(&model.v1(), &["--hooks".into(), hooks], Some(dir));
    let frames = prompt(&mut rpc, "p", "make a marker").await;
    assert!(!root.join("marker").exists(), "the vetoed command ran");
    // The veto is the call's tool_result (zut's place for it); the call never executed.
    let result = result_of(&frames, "b1");
    assert_eq!(result["is_error"], true);
    let reason = result_text(result);
    assert!(
        reason.contains("blocked by hook") && reason.contains("no shell in this repo"),
        "{reason}"
    );
    assert!(of_type(&frames, "tool_execution_started").is_empty());
    assert!(of_type(&frames, "error").is_empty(), "{frames:#?}");
    let requests = model.wait_for_requests(2, WAIT).await.expect("two calls");
    assert_eq!(requests[1].tool_message("b1"), Some(reason));
    assert_eq!(answer(&frames), "understood");
    finish(&mut rpc).await;
}

#[tokio::test]
async fn after_tool_output_reaches_the_model() {
    let model = MockModel::start(vec![
        Reply::chat_call("b1", "bash", json!({"command": "echo ran"})),
        Reply::chat_text("ok"),
    ]);
    let dir = tempfile::tempdir().expect("tempdir");
    let hooks = write_json(
        dir.path(),
        "hooks.json",
        &json!({"enabled": true, "hooks": [
            {"id": "fmt", "event": "afterTool", "matcher": "bash", "command": "echo",
             "args": ["formatted 2 files"]}
        ]}),
    );
    let mut rpc = on_mock(&model.v1(), &["--hooks".into(), hooks], Some(dir));
    let frames = prompt(&mut rpc, "p", "go").await;
    let result = result_of(&frames, "b1");
    assert_eq!(result["is_error"], false);
    assert!(
        result_text(result).ends_with("Hook output:\nformatted 2 files"),
        "{result}"
    );
    let requests = model.wait_for_requests(2, WAIT).await.expect("two calls");
    let sent = requests[1].tool_message("b1").expect("tool message");
    assert!(
        sent.contains("ran") && sent.ends_with("formatted 2 files"),
        "{sent}"
    );
    finish(&mut rpc).await;
}

#[tokio::test]
async fn a_user_prompt_submit_block_is_an_error_and_never_reaches_the_model() {
    let model = MockModel::start(vec![Reply::chat_text("fine")]);
    let dir = tempfile::tempdir().expect("tempdir");
    let hooks = write_json(
        dir.path(),
        "settings.json",
        &json!({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command":
            "if grep -q forbidden; then echo 'not that topic' >&2; exit 2; fi"}]}]}}),
    );
    let mut rpc = on_mock(&model.v1(), &["--hooks".into(), hooks], Some(dir));
    let blocked = prompt(&mut rpc, "p1", "do the forbidden thing").await;
    assert_eq!(types(&events(&blocked)), ["error", "done"], "{blocked:#?}");
    let message = of_type(&blocked, "error")[0]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(message.contains("not that topic"), "{message}");
    assert_eq!(model.request_count(), 0);
    // Another prompt goes through.
    let frames = prompt(&mut rpc, "p2", "something else").await;
    assert_eq!(answer(&frames), "fine");
    finish(&mut rpc).await;
}

#[tokio::test]
async fn a_stop_hook_forces_one_continuation() {
    let model = MockModel::start(vec![
        Reply::chat_text("first answer"),
        Reply::chat_text("tests pass"),
    ]);
    let dir = tempfile::tempdir().expect("tempdir");
    let hooks = write_json(
        dir.path(),
        "settings.json",
        &json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command":
            "if grep -q '\"stop_hook_active\":true'; then exit 0; fi; echo 'run the tests first' >&2; exit 2"}]}]}}),
    );
    let mut rpc = on_mock(&model.v1(), &["--hooks".into(), hooks], Some(dir));
    let frames = prompt(&mut rpc, "p", "work").await;
    let stops: Vec<&str> = of_type(&frames, "turn_end")
        .iter()
        .filter_map(|f| f["stop"].as_str())
        .collect();
    assert_eq!(stops, ["continue", "end"], "{frames:#?}");
    assert_eq!(answer(&frames), "first answertests pass");
    let requests = model.wait_for_requests(2, WAIT).await.expect("two calls");
    assert_eq!(requests.len(), 2);
    let last = requests[1].json()["messages"]
        .as_array()
        .and_then(|m| m.last().cloned())
        .expect("messages");
    assert!(last.to_string().contains("run the tests first"), "{last}");
    finish(&mut rpc).await;
}

#[tokio::test]
async fn a_hanging_hook_is_killed_at_its_timeout_and_the_run_completes() {
    let model = MockModel::start(vec![
        Reply::chat_call("b1", "bash", json!({"command": "touch marker"})),
        Reply::chat_text("done anyway"),
    ]);
    let dir = tempfile::tempdir().expect("tempdir");
    let hooks = write_json(
        dir.path(),
        "settings.json",
        &json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command",
            "command": "sleep 600 & echo $! > child.pid; echo $$ > hook.pid; wait", "timeout": 2}]}]}}),
    );
    let root = dir.path().to_path_buf();
    let mut rpc = on_mock(&model.v1(), &["--hooks".into(), hooks], Some(dir));
    let frames = prompt(&mut rpc, "p", "go").await;
    // Claude Code's hooks fail open: the call ran after the timeout.
    assert_eq!(result_of(&frames, "b1")["is_error"], false);
    assert!(root.join("marker").exists());
    assert_eq!(answer(&frames), "done anyway");
    for file in ["hook.pid", "child.pid"] {
        let pid: i32 = std::fs::read_to_string(root.join(file))
            .expect("the hook recorded its pid")
            .trim()
            .parse()
            .expect("pid");
        assert_gone(pid, file).await;
    }
    finish(&mut rpc).await;
}

#[tokio::test]
async fn a_missing_hook_command_fails_closed_for_zeros_before_tool() {
    let model = MockModel::start(vec![
        Reply::chat_call("b1", "bash", json!({"command": "touch marker"})),
        Reply::chat_text("ok"),
    ]);
    let dir = tempfile::tempdir().expect("tempdir");
    let hooks = write_json(
        dir.path(),
        "hooks.json",
        &json!({"hooks": [{"id": "gone", "event": "beforeTool", "command": "/nonexistent/guard"}]}),
    );
    let root = dir.path().to_path_buf();
    let mut rpc = on_mock(&model.v1(), &["--hooks".into(), hooks], Some(dir));
    let frames = prompt(&mut rpc, "p", "go").await;
    assert!(!root.join("marker").exists());
    let result = result_of(&frames, "b1");
    assert_eq!(result["is_error"], true);
    assert!(result_text(result).contains("\"gone\""), "{result}");
    assert_eq!(answer(&frames), "ok");
    finish(&mut rpc).await;
}

#[tokio::test]
async fn a_missing_hooks_file_is_a_startup_error() {
    let mut rpc = Rpc::spawn(Opts {
        args: vec!["--hooks".into(), "/nonexistent/hooks.json".into()],
        ..Opts::default()
    });
    assert!(rpc.rest().await.is_empty(), "stdout stays empty");
    assert_eq!(rpc.exit().await.code(), Some(1));
    let stderr = rpc.stderr().await;
    assert!(
        stderr.contains("--hooks") && stderr.contains("/nonexistent/hooks.json"),
        "{stderr}"
    );
}

/// Claude Code settings whose `SessionStart` hook adds context (its stdout) and whose
/// `SessionEnd` hook saves its payload as `end.json` in the workspace.
fn session_hooks(dir: &Path) -> String {
    write_json(
        dir,
        "settings.json",
        &json!({"hooks": {
            "SessionStart": [{"hooks": [{"type": "command",
                "command": "cat > start.json; echo START-CONTEXT-42"}]}],
            "SessionEnd": [{"hooks": [{"type": "command", "command": "cat > end.json"}]}]
        }}),
    )
}

fn read_payload(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{} was not written: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[tokio::test]
async fn session_start_runs_before_the_first_prompt_and_session_end_at_end_of_input() {
    let model = MockModel::start(vec![Reply::chat_text("hi")]);
    let dir = tempfile::tempdir().expect("tempdir");
    let hooks = session_hooks(dir.path());
    let root = dir.path().to_path_buf();
    let mut rpc = on_mock(&model.v1(), &["--hooks".into(), hooks], Some(dir));
    let frames = prompt(&mut rpc, "p", "hello").await;
    assert_eq!(answer(&frames), "hi");
    let start = read_payload(&root.join("start.json"));
    assert_eq!(start["hook_event_name"], "SessionStart", "{start}");
    assert_eq!(start["source"], "startup", "{start}");
    // Its context reached the first model call.
    let requests = model.wait_for_requests(1, WAIT).await.expect("one call");
    assert!(
        requests[0].json().to_string().contains("START-CONTEXT-42"),
        "{}",
        requests[0].json()
    );
    // The session is still open.
    assert!(!root.join("end.json").exists());
    finish(&mut rpc).await;
    let end = read_payload(&root.join("end.json"));
    assert_eq!(end["hook_event_name"], "SessionEnd", "{end}");
    assert_eq!(end["reason"], "prompt_input_exit", "{end}");
    // Once per process.
    assert_eq!(model.request_count(), 1);
}

#[tokio::test]
async fn sigterm_runs_the_session_end_hooks_before_the_process_dies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let hooks = session_hooks(dir.path());
    let root = dir.path().to_path_buf();
    let mut rpc = Rpc::spawn(Opts {
        script: Some(json!([text_turn("unused")])),
        args: vec!["--hooks".into(), hooks],
        dir: Some(dir),
        ..Opts::default()
    });
    // Up and answering: then a signal while idle.
    state(&mut rpc, "s").await;
    rpc.kill(libc::SIGTERM);
    assert!(rpc.rest().await.is_empty());
    let status = rpc.exit().await;
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    let end = read_payload(&root.join("end.json"));
    assert_eq!(end["hook_event_name"], "SessionEnd", "{end}");
    assert_eq!(end["reason"], "other", "{end}");
}

#[tokio::test]
async fn a_projects_own_hooks_file_has_no_effect() {
    // `.zero/hooks.json` in the workspace would veto every bash call; rpc reads hooks only
    // from `--hooks`.
    let model = MockModel::start(vec![
        Reply::chat_call("b1", "bash", json!({"command": "touch marker"})),
        Reply::chat_text("ok"),
    ]);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join(".zero")).expect("mkdir");
    write_json(
        &dir.path().join(".zero"),
        "hooks.json",
        &json!({"enabled": true, "hooks": [
            {"id": "veto", "event": "beforeTool", "matcher": "bash",
             "command": "sh", "args": ["-c", "touch vetoed; echo project veto; exit 1"]},
            {"id": "start", "event": "sessionStart", "command": "touch", "args": ["started"]}
        ]}),
    );
    let root = dir.path().to_path_buf();
    let config = tempfile::tempdir().expect("config home");
    let mut rpc = Rpc::spawn(Opts {
        args: openai_args(&model.v1()),
        env: vec![
            ("AGENT_SDK_MAX_RETRIES", "0"),
            ("XDG_CONFIG_HOME", config.path().to_str().expect("utf-8")),
        ],
        dir: Some(dir),
        ..Opts::default()
    });
    let frames = prompt(&mut rpc, "p", "go").await;
    assert_eq!(result_of(&frames, "b1")["is_error"], false, "{frames:#?}");
    assert!(root.join("marker").exists(), "the call did not run");
    finish(&mut rpc).await;
    assert!(!root.join("vetoed").exists(), "the project's hook ran");
    assert!(!root.join("started").exists(), "the project's hook ran");
}

// ---------------------------------------------------------------------------------------------
// Sandbox
// ---------------------------------------------------------------------------------------------

/// A bash call writing `$HOME/<name>` (HOME is a temp dir outside the workspace).
fn write_home(name: &str) -> Reply {
    Reply::chat_call(
        "w1",
        "bash",
        json!({"command": format!("echo hi > \"$HOME/{name}\"")}),
    )
}

fn sandboxed(model: &MockModel, mode: &str, home: &Path) -> Rpc {
    let mut args = openai_args(&model.v1());
    args.extend(["--sandbox".to_string(), mode.to_string()]);
    Rpc::spawn(Opts {
        args,
        env: vec![
            ("HOME", home.to_str().expect("utf-8")),
            ("AGENT_SDK_MAX_RETRIES", "0"),
        ],
        ..Opts::default()
    })
}

#[tokio::test]
async fn workspace_write_refuses_a_write_to_home_with_the_block_shown_and_off_allows_it() {
    let home = tempfile::tempdir().expect("home");
    let model = MockModel::start(vec![write_home("confined"), Reply::chat_text("blocked")]);
    let mut rpc = sandboxed(&model, "workspace-write", home.path());
    let before = state(&mut rpc, "s").await;
    assert_eq!(before["sandbox"]["mode"], "workspace-write", "{before}");
    assert_eq!(before["sandbox"]["network"], "deny");
    assert_eq!(before["sandbox"]["enforced"], "full", "{before}");
    let frames = prompt(&mut rpc, "p", "write home").await;
    assert!(
        !home.path().join("confined").exists(),
        "the sandbox let it write"
    );
    let result = result_of(&frames, "w1");
    let block = &result["block"];
    assert_eq!(block["code"], "sandbox", "{result}");
    assert_eq!(block["tool_name"], "bash");
    assert_eq!(block["recoverable"], true);
    assert!(block["reason"].as_str().is_some_and(|r| !r.is_empty()));
    finish(&mut rpc).await;

    let model = MockModel::start(vec![write_home("free"), Reply::chat_text("written")]);
    let mut rpc = sandboxed(&model, "off", home.path());
    let frames = prompt(&mut rpc, "p", "write home").await;
    let result = result_of(&frames, "w1");
    assert_eq!(result["is_error"], false, "{result}");
    assert!(result.get("block").is_none(), "{result}");
    assert_eq!(
        std::fs::read_to_string(home.path().join("free")).expect("written"),
        "hi\n"
    );
    assert_eq!(state(&mut rpc, "s").await["sandbox"]["mode"], "off");
    finish(&mut rpc).await;
}

#[tokio::test]
async fn a_bad_sandbox_value_names_the_flag() {
    let mut rpc = Rpc::spawn(Opts {
        args: vec!["--sandbox".into(), "sometimes".into()],
        ..Opts::default()
    });
    assert!(rpc.rest().await.is_empty());
    assert_eq!(rpc.exit().await.code(), Some(1));
    let stderr = rpc.stderr().await;
    assert!(
        stderr.contains("--sandbox") && stderr.contains("sometimes"),
        "{stderr}"
    );
}

// ---------------------------------------------------------------------------------------------
// Sub-agents
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_task_call_streams_the_child_as_progress_lines_never_as_top_level_text() {
    // Parent: Task(explorer); child: one answer; parent: the final answer.
    let model = MockModel::start(vec![
        Reply::chat_call(
            "t1",
            "Task",
            json!({"name": "explorer", "description": "find the tests", "prompt": "Where are the tests?"}),
        ),
        Reply::chat_text("CHILD-ANSWER tests live in tests/"),
        Reply::chat_text("parent done"),
    ]);
    let mut rpc = on_mock(&model.v1(), &[], None);
    let tools = state(&mut rpc, "s").await["tools"].clone();
    assert!(
        tools.as_array().expect("tools").contains(&json!("Task")),
        "{tools}"
    );
    let frames = prompt(&mut rpc, "p", "delegate").await;
    assert_eq!(of_type(&frames, "tool_call")[0]["name"], "Task");
    let progress: String = of_type(&frames, "tool_progress")
        .iter()
        .map(|f| {
            assert_eq!(f["id"], "t1", "{f}");
            f["text"].as_str().unwrap_or_default()
        })
        .collect();
    assert!(
        progress.contains("[explorer] started: find the tests"),
        "{progress}"
    );
    assert!(
        progress.contains("CHILD-ANSWER tests live in tests/"),
        "{progress}"
    );
    assert!(progress.contains("[explorer] finished"), "{progress}");
    let result = result_of(&frames, "t1");
    assert_eq!(result["is_error"], false);
    assert!(result_text(result).contains("CHILD-ANSWER"), "{result}");
    // The child's text never shows as the parent's own.
    assert_eq!(answer(&frames), "parent done");
    assert_eq!(model.request_count(), 3);
    finish(&mut rpc).await;
}

/// A model turn answering `text`, with its own usage.
fn text_with_usage(answer: &str, prompt: u64, completion: u64) -> Reply {
    Reply::sse(
        sse::chat::Stream::new()
            .text(answer)
            .finish("stop")
            .usage(prompt, completion, 0)
            .done(),
    )
}

fn task(name: &str, prompt: &str) -> Value {
    json!({"name": name, "description": format!("{name} task"), "prompt": prompt})
}

/// The text of the `tool_progress` lines of call `id`, concatenated (they stream).
fn progress_of(frames: &[Value], id: &str) -> String {
    of_type(frames, "tool_progress")
        .iter()
        .filter(|f| f["id"] == id)
        .filter_map(|f| f["text"].as_str())
        .collect()
}

#[tokio::test]
async fn the_explorer_is_refused_a_write_and_usage_of_parent_and_child_adds_up() {
    let model = MockModel::start(
        Script::new()
            .route(
                |r| r.specialist_call("explorer"),
                [
                    Reply::sse(
                        sse::chat::Stream::new()
                            .tool_call("k1", "write_file", r#"{"path":"pwned.txt","content":"x"}"#)
                            .finish("tool_calls")
                            .usage(7, 2, 0)
                            .done(),
                    ),
                    text_with_usage("I may not write.", 5, 1),
                ],
            )
            .fallback([
                Reply::chat_call("t1", "Task", task("explorer", "Write pwned.txt.")),
                text_with_usage("parent done", 20, 4),
            ]),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    let mut rpc = on_mock(&model.v1(), &[], Some(dir));
    let frames = prompt(&mut rpc, "p", "delegate").await;
    assert!(!root.join("pwned.txt").exists(), "the explorer wrote");
    let progress = progress_of(&frames, "t1");
    assert!(progress.contains("write_file"), "{progress}");
    assert!(progress.contains("unknown tool: write_file"), "{progress}");
    let result = result_of(&frames, "t1");
    assert_eq!(result["is_error"], false, "{result}");
    assert!(
        result_text(result).ends_with("I may not write."),
        "{result}"
    );
    assert_eq!(answer(&frames), "parent done");
    // The parent's calls are its `usage` events; the cumulative figures hold the child's.
    let usage = of_type(&frames, "usage");
    let turns: Vec<(u64, u64)> = usage
        .iter()
        .map(|u| {
            (
                u["input"].as_u64().unwrap_or(0),
                u["output"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(turns, [(10, 5), (20, 4)], "{usage:#?}");
    let last = &usage[usage.len() - 1]["cumulative"];
    assert_eq!(last["input"], 10 + 7 + 5 + 20, "{last}");
    assert_eq!(last["output"], 5 + 2 + 1 + 4, "{last}");
    let total = state(&mut rpc, "s").await["usage"].clone();
    assert_eq!(
        (total["input"].clone(), total["output"].clone()),
        (json!(42), json!(12)),
        "{total}"
    );
    finish(&mut rpc).await;
}

#[tokio::test]
async fn a_child_that_fails_is_the_task_error_result_and_the_parent_goes_on() {
    let model = MockModel::start(
        Script::new()
            .route(
                |r| r.specialist_call("explorer"),
                [Reply::error(
                    400,
                    "invalid_request_error",
                    "the child's request is refused",
                )],
            )
            .fallback([
                Reply::chat_call("t1", "Task", task("explorer", "Look.")),
                Reply::chat_text("the explorer failed, moving on"),
            ]),
    );
    let mut rpc = on_mock(&model.v1(), &[], None);
    let frames = prompt(&mut rpc, "p", "delegate").await;
    let result = result_of(&frames, "t1");
    assert_eq!(result["is_error"], true, "{result}");
    let text = result_text(result);
    assert!(text.contains("specialist explorer failed"), "{text}");
    assert!(of_type(&frames, "error").is_empty(), "{frames:#?}");
    assert_eq!(answer(&frames), "the explorer failed, moving on");
    // The model got the failure as the call's result.
    let requests = model.wait_for_requests(3, WAIT).await.expect("three calls");
    let last = requests.last().expect("a request");
    assert!(
        last.tool_message("t1")
            .is_some_and(|m| m.contains("specialist explorer failed")),
        "{}",
        last.json()
    );
    finish(&mut rpc).await;
}

#[tokio::test]
async fn abort_during_a_child_bash_call_ends_the_task_and_leaves_no_process() {
    let model = MockModel::start(
        Script::new()
            .route(
                |r| r.specialist_call("worker"),
                [Reply::chat_call(
                    "c1",
                    "bash",
                    json!({"command": "sleep 300 & echo $! > sleep.pid; echo $$ > bash.pid; wait"}),
                )],
            )
            .fallback([Reply::chat_call(
                "t1",
                "Task",
                task("worker", "Wait a long time."),
            )]),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    let mut rpc = on_mock(&model.v1(), &[], Some(dir));
    let started = rpc
        .call(json!({"type": "prompt", "message": "delegate"}), "p")
        .await;
    assert_eq!(started["data"]["started"], true, "{started}");
    let pid_in = |name: &str| {
        let path = root.join(name);
        async move {
            let deadline = std::time::Instant::now() + WAIT;
            loop {
                if let Some(pid) = std::fs::read_to_string(&path)
                    .ok()
                    .and_then(|s| s.trim().parse::<i32>().ok())
                {
                    return pid;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "the child's bash never started"
                );
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    };
    let shell = pid_in("bash.pid").await;
    let sleeper = pid_in("sleep.pid").await;
    assert!(alive(sleeper));
    rpc.send(json!({"id": "a", "type": "abort"})).await;
    let frames = rpc.until_type("done").await;
    let aborted = frames
        .iter()
        .find(|f| f["type"] == "response" && f["id"] == "a")
        .expect("the abort is answered");
    assert_eq!(aborted["success"], true, "{aborted}");
    let result = result_of(&frames, "t1");
    assert_eq!(result["is_error"], true, "{result}");
    assert_gone(shell, "the child's shell").await;
    assert_gone(sleeper, "the child's command").await;
    // The session goes on.
    assert_eq!(model.request_count(), 2);
    finish(&mut rpc).await;
}

#[tokio::test]
async fn two_background_tasks_are_read_with_task_output() {
    let model = MockModel::start(Script::respond(|request: &Request, _| {
        if request.specialist_call("explorer") {
            let topic = match request.contains("Look at alpha") {
                true => "alpha",
                false => "beta",
            };
            return text_with_usage(&format!("{topic} result"), 3, 1);
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
            _ => text_with_usage("both read", 10, 1),
        }
    }));
    let mut rpc = on_mock(&model.v1(), &[], None);
    let frames = prompt(&mut rpc, "p", "explore in the background").await;
    for id in ["t1", "t2"] {
        let launched = result_of(&frames, id);
        assert_eq!(launched["is_error"], false, "{launched}");
        assert!(
            result_text(launched).starts_with("Task launched in background."),
            "{launched}"
        );
    }
    let first = result_text(result_of(&frames, "o1"));
    let second = result_text(result_of(&frames, "o2"));
    assert!(
        first.contains("status: completed") && first.contains("alpha result"),
        "{first}"
    );
    assert!(
        second.contains("status: completed") && second.contains("beta result"),
        "{second}"
    );
    // The children's lines are progress of their launching calls, never top-level text.
    assert!(
        progress_of(&frames, "t1").contains("alpha result"),
        "{frames:#?}"
    );
    assert!(
        progress_of(&frames, "t2").contains("beta result"),
        "{frames:#?}"
    );
    assert_eq!(answer(&frames), "both read");
    let usage = of_type(&frames, "usage");
    let last = &usage[usage.len() - 1]["cumulative"];
    assert_eq!(last["input"], 10 + 10 + 10 + 3 + 3, "{last}");
    finish(&mut rpc).await;
}

#[tokio::test]
async fn a_project_manifest_overrides_the_builtin_and_a_malformed_one_is_named_with_its_line() {
    let model = MockModel::start(
        Script::new()
            .route(
                |r| r.specialist_call("explorer"),
                [Reply::chat_text("project explorer here")],
            )
            .fallback([
                Reply::chat_call("t1", "Task", task("explorer", "Who are you?")),
                Reply::chat_text("done"),
            ]),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let specialists = dir.path().join(".zero").join("specialists");
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
    let mut rpc = on_mock(&model.v1(), &[], Some(dir));
    let frames = prompt(&mut rpc, "p", "delegate").await;
    assert!(
        result_text(result_of(&frames, "t1")).ends_with("project explorer here"),
        "{frames:#?}"
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
    finish(&mut rpc).await;
    let stderr = rpc.stderr().await;
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("skipped specialist manifest") && l.contains("bad.md:6:")),
        "{stderr}"
    );
}

#[tokio::test]
async fn without_tools_there_is_no_task_tool() {
    let mut rpc = Rpc::spawn(Opts {
        args: vec!["--no-tools".into()],
        ..Opts::default()
    });
    assert_eq!(state(&mut rpc, "s").await["tools"], json!([]));
    finish(&mut rpc).await;

    let mut rpc = Rpc::spawn(Opts {
        args: vec!["--tools".into(), "read_file,Task".into()],
        ..Opts::default()
    });
    assert_eq!(
        state(&mut rpc, "s").await["tools"],
        json!(["read_file", "Task", "TaskOutput", "TaskStop"])
    );
    finish(&mut rpc).await;
}

// ---------------------------------------------------------------------------------------------
// Context budget
// ---------------------------------------------------------------------------------------------

fn listing(id: &str, prompt_tokens: u64) -> Reply {
    Reply::sse(
        sse::chat::Stream::new()
            .tool_call(id, "list_dir", "{}")
            .finish("tool_calls")
            .usage(prompt_tokens, 50, 0)
            .done(),
    )
}

#[tokio::test]
async fn context_usage_is_in_get_state_and_an_auto_compaction_is_compact_done() {
    // The second call fills 95% of a 1000-token window: the agent compacts before the third.
    let model = MockModel::start(vec![
        listing("c1", 100),
        listing("c2", 900),
        Reply::chat_text("SUMMARY-OF-THE-WORK"),
        Reply::chat_text("finished"),
    ]);
    let mut rpc = on_mock(
        &model.v1(),
        &[
            "--context-window".into(),
            "1k".into(),
            "--auto-compact".into(),
            "80".into(),
        ],
        None,
    );
    let before = state(&mut rpc, "s0").await;
    assert_eq!(before["context"]["window"], 1000, "{before}");
    let frames = prompt(&mut rpc, "p", "look around").await;
    let compact = of_type(&frames, "compact_done");
    assert_eq!(compact.len(), 1, "{frames:#?}");
    assert_eq!(compact[0]["summary"], "SUMMARY-OF-THE-WORK");
    // Inside the prompt, before its final model call; the summary is not assistant text.
    let at = |kind: &str| frames.iter().position(|f| f["type"] == kind);
    assert!(at("compact_done") < frames.iter().rposition(|f| f["type"] == "turn_start"));
    assert_eq!(answer(&frames), "finished");
    // `usage` is unchanged: one per model call of the prompt proper.
    assert!(of_type(&frames, "usage").len() >= 3);
    let after = state(&mut rpc, "s1").await;
    let context = &after["context"];
    assert_eq!(context["window"], 1000);
    assert!(context["used"].as_u64().is_some_and(|u| u > 0), "{after}");
    assert!(context["percent"].as_f64().is_some(), "{after}");
    finish(&mut rpc).await;
}

#[tokio::test]
async fn auto_compact_off_never_compacts() {
    let model = MockModel::start(vec![
        listing("c1", 100),
        listing("c2", 990),
        Reply::sse(
            sse::chat::Stream::new()
                .text("finished")
                .finish("stop")
                .usage(990, 5, 0)
                .done(),
        ),
    ]);
    let mut rpc = on_mock(
        &model.v1(),
        &[
            "--context-window".into(),
            "1000".into(),
            "--auto-compact".into(),
            "off".into(),
        ],
        None,
    );
    let frames = prompt(&mut rpc, "p", "look around").await;
    assert!(of_type(&frames, "compact_done").is_empty(), "{frames:#?}");
    assert_eq!(model.request_count(), 3);
    let context = state(&mut rpc, "s").await["context"].clone();
    assert!(
        context["percent"].as_f64().is_some_and(|p| p > 90.0),
        "{context}"
    );
    finish(&mut rpc).await;
}

// ---------------------------------------------------------------------------------------------
// Issue 24: the key of --api-key never reaches a tool error; SIGTERM/SIGINT
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_key_used_as_a_missing_file_name_is_redacted_in_the_error_result() {
    let key = "sk-rpc-redact-0123456789abcdef";
    let turns = json!([
        {"steps": [{"tool_call": {"id": "r1", "name": "read_file",
            "args": [json!({"path": key}).to_string()]}}]},
        text_turn("done")
    ]);
    let mut rpc = Rpc::spawn(Opts {
        script: Some(turns),
        args: vec!["--api-key".into(), key.into()],
        ..Opts::default()
    });
    let frames = prompt(&mut rpc, "p", "read it").await;
    let result = result_of(&frames, "r1");
    assert_eq!(result["is_error"], true);
    assert!(result_text(result).contains("[REDACTED]"), "{result}");
    finish(&mut rpc).await;
    // Only the model's own words (its tool call) may carry the text it chose.
    for line in &rpc.raw {
        let frame: Value = serde_json::from_str(line).expect("json");
        if matches!(frame["type"].as_str(), Some("tool_result" | "error")) {
            assert!(!line.contains(key), "the key reached stdout: {line}");
        }
    }
}

/// A scripted bash call that records its pid and runs for 300 s.
fn long_bash(dir: &Path) -> (Value, std::path::PathBuf) {
    let pid_file = dir.join("bash.pid");
    let command = format!("sleep 300 & echo $$ > {}; wait", pid_file.display());
    let turns = json!([
        {"steps": [{"tool_call": {"id": "b1", "name": "bash",
            "args": [json!({"command": command}).to_string()]}}]},
        text_turn("never")
    ]);
    (turns, pid_file)
}

async fn signal_mid_turn(signal: i32) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (turns, pid_file) = long_bash(dir.path());
    let mut rpc = Rpc::spawn(Opts {
        script: Some(turns),
        dir: Some(dir),
        ..Opts::default()
    });
    rpc.send(json!({"id": "p", "type": "prompt", "message": "go"}))
        .await;
    // A second prompt queued behind the first never starts.
    rpc.send(json!({"id": "q", "type": "prompt", "message": "later"}))
        .await;
    rpc.until(|f| f["type"] == "tool_execution_started").await;
    let deadline = std::time::Instant::now() + WAIT;
    let pgid: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(std::time::Instant::now() < deadline, "bash never started");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    rpc.kill(signal);
    let rest = rpc.rest().await;
    let result = result_of(&rest, "b1");
    assert_eq!(result["is_error"], true, "{result}");
    assert_eq!(types(&rest).last().map(String::as_str), Some("done"));
    assert!(
        !rest.iter().any(|f| f["id"] == "q"),
        "the queued prompt was answered: {rest:#?}"
    );
    let status = rpc.exit().await;
    assert_eq!(status.signal(), Some(signal), "{status:?}");
    assert_gone(pgid, "the bash call").await;
}

#[tokio::test]
async fn sigterm_mid_turn_writes_the_turns_end_kills_the_tool_and_dies_of_sigterm() {
    signal_mid_turn(libc::SIGTERM).await;
}

#[tokio::test]
async fn sigint_mid_turn_does_the_same() {
    signal_mid_turn(libc::SIGINT).await;
}
