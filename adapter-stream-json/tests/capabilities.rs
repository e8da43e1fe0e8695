//! Every SDK capability through the `exec` binary on a local mock model: hooks (Zero's files
//! and `--hooks FILE`), the OS sandbox, specialists with child sessions, the context budget,
//! `--output-schema`, and key redaction in tool errors. (MCP is in `tests/mcp.rs`.)

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{session_events, session_meta, Run, Sandbox, RUN_TIMEOUT};
use serde_json::{json, Value};
use test_support::procs::{gone, wait_gone_blocking};
use test_support::{sse, MockModel, Reply, Request, Script};

/// `exec -o stream-json` against `model`, with `flags` before the prompt.
fn exec(sb: &Sandbox, model: &MockModel, flags: &[&str]) -> Run {
    let url = model.v1();
    let mut args = vec![
        "exec",
        "-o",
        "stream-json",
        "--provider",
        "openai",
        "--base-url",
        &url,
        "--api-key",
        "sk-capability-tests-0123456789",
        "--model",
        "gpt-test",
    ];
    args.extend_from_slice(flags);
    args.push("Do the task.");
    let mut cmd = sb.command(&args);
    cmd.env("AGENT_SDK_MAX_RETRIES", "0");
    let run = sb.run_with(cmd, "");
    run.assert_framing();
    run
}

fn bash(command: &str) -> Value {
    json!({ "command": command })
}

/// The tool results of a run.
fn results(run: &Run) -> Vec<Value> {
    run.of("tool_result")
}

/// The text a request carries (its JSON body as text).
fn body(model: &MockModel, index: usize) -> String {
    let requests = model.requests();
    assert!(
        requests.len() > index,
        "expected request {index}, got {}",
        requests.len()
    );
    requests[index].text()
}

fn write(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("dir");
    }
    std::fs::write(path, text).expect("write");
}

// ---------------------------------------------------------------------------------------------
// Hooks
// ---------------------------------------------------------------------------------------------

/// A Zero `hooks.json` with one hook.
fn zero_hooks(id: &str, event: &str, matcher: &str, script: &str) -> Value {
    json!({"enabled": true, "hooks": [{
        "id": id, "event": event, "matcher": matcher,
        "command": "sh", "args": ["-c", script]
    }]})
}

#[test]
fn a_before_tool_hook_vetoes_bash_the_command_never_runs_and_the_model_gets_the_reason() {
    let sb = Sandbox::new();
    sb.zero_config(
        "hooks.json",
        &zero_hooks(
            "no-shell",
            "beforeTool",
            "bash",
            "echo 'shell is off today' >&2; exit 1",
        ),
    );
    let model = MockModel::start(vec![
        Reply::chat_call("b1", "bash", bash("touch marker")),
        Reply::chat_text("understood"),
    ]);
    let run = exec(&sb, &model, &["--skip-permissions-unsafe"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(!sb.work().join("marker").exists(), "the vetoed command ran");
    let results = results(&run);
    assert_eq!(results[0]["status"], "error", "{}", results[0]);
    assert_eq!(
        results[0]["output"],
        "Error: \"bash\" was blocked by hook \"no-shell\": shell is off today"
    );
    assert!(
        body(&model, 1).contains("shell is off today"),
        "the model got the reason"
    );
    // Zero shows a veto only as the call's error result: no permission line.
    assert!(run.of("permission_decision").is_empty(), "{}", run.stdout);
    // Zero's audit log records the hook run.
    let audit = sb.dir.path().join("data/zero/hooks/audit.jsonl");
    let audit = std::fs::read_to_string(&audit).expect("audit log");
    assert!(audit.contains("no-shell"), "{audit}");
}

#[test]
fn an_after_tool_hook_s_output_reaches_the_model() {
    let sb = Sandbox::new();
    sb.zero_config(
        "hooks.json",
        &zero_hooks(
            "fmt",
            "afterTool",
            "list_dir",
            "echo 'formatter: all clean'",
        ),
    );
    let model = MockModel::start(vec![
        Reply::chat_call("l1", "list_dir", json!({"path": "."})),
        Reply::chat_text("done"),
    ]);
    let run = exec(&sb, &model, &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(results(&run)[0]["output"]
        .as_str()
        .expect("output")
        .contains("Hook output:\nformatter: all clean"));
    assert!(body(&model, 1).contains("formatter: all clean"));
}

#[test]
fn a_user_prompt_submit_hook_blocks_the_prompt_with_a_warning() {
    let sb = Sandbox::new();
    let file = sb.dir.path().join("claude-hooks.json");
    write(
        &file,
        &json!({"hooks": {"UserPromptSubmit": [{"hooks": [
            {"type": "command", "command": "echo 'prompts are closed' >&2; exit 2"}
        ]}]}})
        .to_string(),
    );
    let model = MockModel::start(vec![Reply::chat_text("never")]);
    let run = exec(&sb, &model, &["--hooks", &file.display().to_string()]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(
        model.request_count(),
        0,
        "a blocked prompt reaches no model"
    );
    let warnings = run.of("warning");
    assert_eq!(warnings.len(), 1, "{}", run.stdout);
    let message = warnings[0]["message"].as_str().expect("message");
    assert!(message.contains("blocked by hook"), "{message}");
    assert!(message.contains("prompts are closed"), "{message}");
    assert_eq!(run.types().last().map(String::as_str), Some("run_end"));
}

#[test]
fn a_stop_hook_forces_exactly_one_continuation() {
    let sb = Sandbox::new();
    let file = sb.work().join("hooks.json");
    write(
        &file,
        &json!({"hooks": {"Stop": [{"hooks": [
            {"type": "command", "command": "echo 'also run the tests' >&2; exit 2"}
        ]}]}})
        .to_string(),
    );
    let model = MockModel::start(vec![
        Reply::chat_text("first answer"),
        Reply::chat_text("tests pass"),
    ]);
    // A relative --hooks file resolves against the workspace.
    let run = exec(&sb, &model, &["--hooks", "hooks.json"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(model.request_count(), 2, "one continuation, then the limit");
    assert!(body(&model, 1).contains("also run the tests"));
    assert_eq!(run.of("final")[0]["text"], "tests pass");
}

#[test]
fn a_hook_that_hangs_is_killed_at_its_timeout_and_the_run_completes() {
    let sb = Sandbox::new();
    let pid_file = sb.work().join("hook.pid");
    let file = sb.dir.path().join("hooks.json");
    write(
        &file,
        &json!({"hooks": {"PreToolUse": [{"matcher": "list_dir", "hooks": [{
            "type": "command", "timeout": 1,
            "command": format!("echo $$ > {}; exec sleep 600", pid_file.display())
        }]}]}})
        .to_string(),
    );
    let model = MockModel::start(vec![
        Reply::chat_call("l1", "list_dir", json!({"path": "."})),
        Reply::chat_text("done"),
    ]);
    let started = Instant::now();
    let run = exec(&sb, &model, &["--hooks", &file.display().to_string()]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the hang held up the run"
    );
    // Claude Code's hooks fail open: the call ran.
    assert_eq!(results(&run)[0]["status"], "ok", "{}", run.stdout);
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .expect("the hook started")
        .trim()
        .parse()
        .expect("pid");
    assert!(
        wait_gone_blocking(&[pid], RUN_TIMEOUT).is_empty(),
        "the hung hook {pid} outlived its timeout"
    );
}

#[test]
fn a_missing_hook_command_fails_closed_before_a_tool_and_open_after_it() {
    let sb = Sandbox::new();
    sb.zero_config(
        "hooks.json",
        &json!({"enabled": true, "hooks": [
            {"id": "gone-before", "event": "beforeTool", "matcher": "bash",
             "command": "/nonexistent/zero-hook"},
            {"id": "gone-after", "event": "afterTool", "matcher": "list_dir",
             "command": "/nonexistent/zero-hook"}
        ]}),
    );
    let model = MockModel::start(vec![
        Reply::sse(
            sse::chat::Stream::new()
                .tool_call("l1", "list_dir", &json!({"path": "."}).to_string())
                .tool_call("b1", "bash", &bash("touch marker").to_string())
                .finish("tool_calls")
                .usage(10, 5, 0)
                .done(),
        ),
        Reply::chat_text("done"),
    ]);
    let run = exec(&sb, &model, &["--skip-permissions-unsafe"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let results = results(&run);
    assert_eq!(results[0]["status"], "ok", "advisory: {}", results[0]);
    assert_eq!(results[1]["status"], "error", "{}", results[1]);
    assert!(results[1]["output"]
        .as_str()
        .expect("output")
        .contains("gone-before"));
    assert!(!sb.work().join("marker").exists());
    assert_eq!(run.of("final")[0]["text"], "done");
}

#[test]
fn project_hooks_run_only_in_a_trusted_workspace() {
    let sb = Sandbox::new();
    write(
        &sb.work().join(".zero/hooks.json"),
        &zero_hooks(
            "project-guard",
            "beforeTool",
            "bash",
            "echo 'project says no' >&2; exit 1",
        )
        .to_string(),
    );
    let script = || {
        MockModel::start(vec![
            Reply::chat_call("b1", "bash", bash("touch marker")),
            Reply::chat_text("done"),
        ])
    };
    let model = script();
    let run = exec(&sb, &model, &["--skip-permissions-unsafe"]);
    assert_eq!(results(&run)[0]["status"], "ok", "{}", run.stdout);
    assert!(sb.work().join("marker").exists(), "untrusted: not vetoed");
    assert!(
        run.stderr
            .contains("ignoring project hooks/plugins/MCP servers in an untrusted workspace"),
        "{}",
        run.stderr
    );

    std::fs::remove_file(sb.work().join("marker")).expect("remove marker");
    sb.trust_workspace();
    let model = script();
    let run = exec(&sb, &model, &["--skip-permissions-unsafe"]);
    assert_eq!(results(&run)[0]["status"], "error", "{}", run.stdout);
    assert!(!sb.work().join("marker").exists(), "trusted: vetoed");
    assert_eq!(run.stderr, "");
}

#[test]
fn session_hooks_run_around_the_run_with_zero_s_payload() {
    let sb = Sandbox::new();
    let log = sb.work().join("session.log");
    sb.zero_config(
        "hooks.json",
        &json!({"enabled": true, "hooks": [
            {"id": "start", "event": "sessionStart", "command": "sh",
             "args": ["-c", format!("cat >> {}; echo >> {}", log.display(), log.display())]},
            {"id": "end", "event": "sessionEnd", "command": "sh",
             "args": ["-c", format!("cat >> {}; echo >> {}", log.display(), log.display())]}
        ]}),
    );
    let model = MockModel::start(vec![Reply::chat_text("hi")]);
    let run = exec(&sb, &model, &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let session = run.of("run_start")[0]["sessionId"]
        .as_str()
        .expect("session")
        .to_string();
    let text = std::fs::read_to_string(&log).expect("both hooks ran");
    let payloads: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("payload json"))
        .collect();
    assert_eq!(payloads.len(), 2, "{text}");
    assert_eq!(payloads[0]["event"], "sessionStart");
    assert_eq!(payloads[1]["event"], "sessionEnd");
    for payload in &payloads {
        assert_eq!(payload["sessionId"], session.as_str(), "{payload}");
    }
}

// ---------------------------------------------------------------------------------------------
// Sandbox
// ---------------------------------------------------------------------------------------------

#[test]
fn workspace_write_refuses_a_write_outside_with_a_block_and_off_allows_it() {
    let sb = Sandbox::new();
    let outside = sb.dir.path().join("outside.txt");
    let command = format!("echo escaped > {}", outside.display());
    let escalate = json!({"command": command, "sandbox_permissions": "require_escalated"});
    let model = MockModel::start(vec![
        Reply::chat_call("b1", "bash", bash(&command)),
        Reply::chat_call("b2", "bash", escalate),
        Reply::chat_text("could not"),
    ]);
    // Unsafe mode skips prompts; it does not turn the sandbox off.
    let run = exec(&sb, &model, &["--skip-permissions-unsafe"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(!outside.exists(), "the sandbox let the write through");
    let results = results(&run);
    let block = &results[0]["block"];
    assert_eq!(block["code"], "sandbox", "{}", results[0]);
    assert_eq!(block["toolName"], "bash");
    assert_eq!(block["recoverable"], true);
    // Asking to run outside the sandbox is the approver's call; headless, it is refused
    // after a permission_request carrying the block, as Zero's example shows.
    let requests = run.of("permission_request");
    assert_eq!(requests.len(), 1, "{}", run.stdout);
    assert_eq!(requests[0]["id"], "b2");
    assert!(requests[0]["block"].is_object(), "{}", requests[0]);
    assert_eq!(results[1]["status"], "error");
    assert!(!outside.exists());
    let session = run.of("run_start")[0]["sessionId"]
        .as_str()
        .expect("session")
        .to_string();
    let recorded = session_events(&sb.sessions(), &session);
    let result = recorded
        .iter()
        .find(|e| e["type"] == "tool_result")
        .expect("tool_result recorded");
    assert_eq!(result["payload"]["block"]["code"], "sandbox", "{result}");

    let model = MockModel::start(vec![
        Reply::chat_call("b1", "bash", bash(&command)),
        Reply::chat_text("ok"),
    ]);
    let run = exec(
        &sb,
        &model,
        &["--skip-permissions-unsafe", "--sandbox", "off"],
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    let off = run.of("tool_result");
    assert_eq!(off[0]["status"], "ok", "{}", run.stdout);
    assert!(off[0].get("block").is_none());
    assert_eq!(
        std::fs::read_to_string(&outside).expect("written").trim(),
        "escaped"
    );
    // A full sandbox says nothing; the sandbox off is what was asked.
    assert!(run.of("warning").iter().all(|w| !w["message"]
        .as_str()
        .unwrap_or_default()
        .contains("sandbox")));
}

#[test]
fn add_dir_makes_a_directory_writable() {
    let sb = Sandbox::new();
    let shared = sb.dir.path().join("shared");
    std::fs::create_dir_all(&shared).expect("shared");
    let command = format!("echo shared > {}/note.txt", shared.display());
    let model = MockModel::start(vec![
        Reply::chat_call("b1", "bash", bash(&command)),
        Reply::chat_text("ok"),
    ]);
    let run = exec(
        &sb,
        &model,
        &[
            "--skip-permissions-unsafe",
            "--add-dir",
            &shared.display().to_string(),
        ],
    );
    assert_eq!(results(&run)[0]["status"], "ok", "{}", run.stdout);
    assert!(shared.join("note.txt").exists());
}

// ---------------------------------------------------------------------------------------------
// Specialists
// ---------------------------------------------------------------------------------------------

fn list_tools(sb: &Sandbox, flags: &[&str]) -> String {
    let mut args = vec!["exec", "-o", "stream-json", "--list-tools"];
    args.extend_from_slice(flags);
    let run = sb.run(&args, "");
    run.assert_framing();
    assert_eq!(run.code, 0, "{}", run.stdout);
    run.of("final")[0]["text"]
        .as_str()
        .expect("text")
        .to_string()
}

#[test]
fn task_is_offered_where_zero_offers_it() {
    let sb = Sandbox::new();
    assert!(
        !list_tools(&sb, &[]).contains("  Task ["),
        "--auto low: no Task"
    );
    let tools = list_tools(&sb, &["--auto", "medium"]);
    assert!(tools.contains("  Task ["), "{tools}");
    assert!(tools.contains("  TaskOutput ["), "{tools}");
    assert!(!list_tools(&sb, &["--auto", "high", "--tag", "specialist"]).contains("  Task ["));
}

#[test]
fn a_task_call_runs_a_specialist_whose_session_is_a_child_session() {
    let sb = Sandbox::new();
    std::fs::write(sb.work().join("a.txt"), "hello").expect("file");
    let model = MockModel::start(vec![
        // The parent delegates.
        Reply::chat_call(
            "t1",
            "Task",
            json!({"name": "explorer", "description": "look around", "prompt": "List the workspace."}),
        ),
        // The child (explorer: read-only tools) lists, then tries to write, then answers.
        Reply::chat_call("c1", "list_dir", json!({"path": "."})),
        Reply::chat_call(
            "c2",
            "write_file",
            json!({"path": "b.txt", "content": "no"}),
        ),
        Reply::chat_text("The workspace holds a.txt."),
        // The parent finishes with the child's answer.
        Reply::chat_text("Explorer says: a.txt."),
    ]);
    let run = exec(&sb, &model, &["--auto", "medium"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    // Zero shows a specialist only as its Task call.
    let calls: Vec<Value> = run.of("tool_call");
    assert_eq!(calls.len(), 1, "{}", run.stdout);
    assert_eq!(calls[0]["name"], "Task");
    let results = results(&run);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["status"], "ok", "{}", results[0]);
    assert!(results[0]["output"]
        .as_str()
        .expect("output")
        .contains("The workspace holds a.txt."));
    assert!(!sb.work().join("b.txt").exists(), "explorer may not write");
    assert!(body(&model, 4).contains("The workspace holds a.txt."));
    assert_eq!(run.of("final")[0]["text"], "Explorer says: a.txt.");

    // The parent's session: the Task call with Zero's specialist accounting inside it.
    let parent = run.of("run_start")[0]["sessionId"]
        .as_str()
        .expect("session")
        .to_string();
    let events = session_events(&sb.sessions(), &parent);
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    let at = |k: &str| kinds.iter().position(|x| *x == k).unwrap_or(usize::MAX);
    assert!(at("tool_call") < at("specialist_start"), "{kinds:?}");
    assert!(at("specialist_start") < at("specialist_stop"), "{kinds:?}");
    assert!(at("specialist_stop") < at("tool_result"), "{kinds:?}");
    let start = &events[at("specialist_start")]["payload"];
    assert_eq!(start["specialist"], "explorer");
    assert_eq!(start["toolCallId"], "t1");
    let child = start["childSessionId"]
        .as_str()
        .expect("child id")
        .to_string();
    let stop = &events[at("specialist_stop")]["payload"];
    assert_eq!(stop["status"], "success", "{stop}");
    assert_eq!(stop["exitCode"], 0);
    let rollup = events
        .iter()
        .find(|e| e["type"] == "provider_usage" && e["payload"]["source"] == "specialist")
        .expect("child usage rolled up");
    assert_eq!(rollup["payload"]["childSessionId"], child.as_str());
    assert!(rollup["payload"]["totalTokens"].as_u64().unwrap_or(0) > 0);

    // The child's session, where Zero keeps a specialist's.
    let meta = session_meta(&sb.sessions(), &child);
    assert_eq!(meta["sessionKind"], "child", "{meta}");
    assert_eq!(meta["parentSessionId"], parent.as_str());
    assert_eq!(meta["rootSessionId"], parent.as_str());
    assert_eq!(meta["tag"], "specialist");
    assert_eq!(meta["depth"], 1);
    assert_eq!(meta["agentName"], "explorer");
    assert_eq!(meta["taskId"], child.as_str());
    assert_eq!(meta["spawnedFromEventId"], "t1");
    assert_eq!(meta["title"], "explorer: look around");
    let child_events = session_events(&sb.sessions(), &child);
    let kinds: Vec<&str> = child_events
        .iter()
        .filter_map(|e| e["type"].as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "provider_usage",
            "tool_call",
            "tool_result",
            "provider_usage",
            "tool_call",
            "tool_result",
            "provider_usage",
            "message"
        ],
        "{child_events:?}"
    );
    assert_eq!(child_events[0]["payload"]["role"], "user");
    // The child's prompt: the Task's prompt in the specialist envelope.
    assert!(child_events[0]["payload"]["content"]
        .as_str()
        .expect("content")
        .contains("List the workspace."));
    assert_eq!(child_events[6]["payload"]["status"], "error");
    assert_eq!(child_events[8]["payload"]["role"], "assistant");
    assert_eq!(
        child_events[8]["payload"]["content"],
        "The workspace holds a.txt."
    );
    // A child session is not resumable.
    let resumed = sb.run(
        &["exec", "-o", "stream-json", "--resume", &child, "again"],
        "",
    );
    resumed.assert_usage_error(&format!("Zero session is not resumable: {child}"));
}

#[test]
fn a_child_that_fails_is_the_task_s_error_result_and_the_parent_goes_on() {
    let sb = Sandbox::new();
    let model = MockModel::start(vec![
        Reply::chat_call(
            "t1",
            "Task",
            json!({"name": "explorer", "description": "x", "prompt": "Look."}),
        ),
        Reply::error(
            400,
            "invalid_request_error",
            "the child's request is refused",
        ),
        Reply::chat_text("the explorer failed, moving on"),
    ]);
    let run = exec(&sb, &model, &["--auto", "medium"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let results = results(&run);
    assert_eq!(results[0]["name"], "Task");
    assert_eq!(results[0]["status"], "error", "{}", results[0]);
    assert_eq!(run.of("final")[0]["text"], "the explorer failed, moving on");
    let parent = run.of("run_start")[0]["sessionId"]
        .as_str()
        .expect("session")
        .to_string();
    let events = session_events(&sb.sessions(), &parent);
    let stop = events
        .iter()
        .find(|e| e["type"] == "specialist_stop")
        .expect("stop recorded");
    assert_eq!(stop["payload"]["status"], "error", "{stop}");
    assert_eq!(stop["payload"]["exitCode"], 3);
}

#[test]
fn a_specialist_layer_zero_refuses_is_a_specialist_error_before_the_run() {
    let sb = Sandbox::new();
    // The user's specialists directory is a file: Zero cannot read the layer.
    write(&sb.config().join("zero/specialists"), "not a directory");
    let run = sb.run(
        &["exec", "-o", "stream-json", "--auto", "medium", "hello"],
        "",
    );
    run.assert_framing();
    assert_eq!(run.code, 3, "{}", run.stdout);
    assert_eq!(run.types(), ["error", "run_end"], "no run_start");
    let error = &run.of("error")[0];
    assert_eq!(error["code"], "specialist_error", "{error}");
    assert!(error["message"]
        .as_str()
        .expect("message")
        .contains("specialists"));
    // At --auto low Zero loads no specialists, so the run goes on.
    let run = sb.run(&["exec", "-o", "stream-json", "hello"], "");
    assert_eq!(run.code, 0, "{}", run.stdout);
}

/// A model turn calling `name` with `args`, with its own usage.
fn call_with_usage(id: &str, name: &str, args: Value, prompt: u64, completion: u64) -> Reply {
    Reply::sse(
        sse::chat::Stream::new()
            .tool_call(id, name, &args.to_string())
            .finish("tool_calls")
            .usage(prompt, completion, 0)
            .done(),
    )
}

/// A model turn answering `text`, with its own usage.
fn answer_with_usage(text: &str, prompt: u64, completion: u64) -> Reply {
    Reply::sse(
        sse::chat::Stream::new()
            .text(text)
            .finish("stop")
            .usage(prompt, completion, 0)
            .done(),
    )
}

/// The model of a parent launching explorers on `alpha` and `beta` in the background, then
/// reading both with `TaskOutput`; each child answers `<topic> result`.
fn two_background_explorers() -> Script<Reply> {
    Script::respond(|request: &Request, _| {
        if request.specialist_call("explorer") {
            let topic = match request.contains("Look at alpha") {
                true => "alpha",
                false => "beta",
            };
            return answer_with_usage(&format!("{topic} result"), 3, 1);
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
                let ids = request.task_ids();
                let mut stream = sse::chat::Stream::new();
                for (i, id) in ids.iter().enumerate() {
                    let args = json!({"task_id": id, "block": true, "timeout": 30000});
                    stream =
                        stream.tool_call(&format!("o{}", i + 1), "TaskOutput", &args.to_string());
                }
                Reply::sse(stream.finish("tool_calls").usage(10, 1, 0).done())
            }
            _ => answer_with_usage("both read", 10, 1),
        }
    })
}

#[test]
fn two_background_tasks_are_read_with_task_output() {
    let sb = Sandbox::new();
    let model = MockModel::start(two_background_explorers());
    let run = exec(&sb, &model, &["--auto", "medium"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let results = results(&run);
    let by_id = |id: &str| {
        results
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("no result {id}: {}", run.stdout))
            .clone()
    };
    for id in ["t1", "t2"] {
        let launched = by_id(id);
        assert_eq!(launched["status"], "ok", "{launched}");
        assert!(
            launched["output"]
                .as_str()
                .is_some_and(|o| o.starts_with("Task launched in background.")),
            "{launched}"
        );
    }
    let outputs: Vec<String> = ["o1", "o2"]
        .iter()
        .map(|id| {
            let result = by_id(id);
            assert_eq!(result["name"], "TaskOutput");
            assert_eq!(result["status"], "ok", "{result}");
            result["output"].as_str().unwrap_or_default().to_string()
        })
        .collect();
    assert!(
        outputs[0].contains("status: completed") && outputs[0].contains("alpha result"),
        "{outputs:?}"
    );
    assert!(
        outputs[1].contains("status: completed") && outputs[1].contains("beta result"),
        "{outputs:?}"
    );
    assert_eq!(run.of("final")[0]["text"], "both read");
    // Each child rolled up into the parent's session.
    let parent = run.of("run_start")[0]["sessionId"]
        .as_str()
        .expect("session")
        .to_string();
    let rollups: Vec<Value> = session_events(&sb.sessions(), &parent)
        .into_iter()
        .filter(|e| e["type"] == "provider_usage" && e["payload"]["source"] == "specialist")
        .collect();
    assert_eq!(rollups.len(), 2, "{rollups:?}");
    for rollup in &rollups {
        assert_eq!(rollup["payload"]["mode"], "background", "{rollup}");
        assert_eq!(rollup["payload"]["totalTokens"], 4, "{rollup}");
    }
}

#[test]
fn a_project_manifest_overrides_the_builtin_and_usage_adds_up() {
    let sb = Sandbox::new();
    write(
        &sb.work().join(".zero/specialists/explorer.md"),
        "---\nname: explorer\ndescription: The project's explorer.\ntools: [read-only]\n---\nPROJECT-EXPLORER-PROMPT: look in src/ first.\n",
    );
    let model = MockModel::start(
        Script::new()
            .route(
                |r| r.specialist_call("explorer"),
                [answer_with_usage("project explorer here", 7, 3)],
            )
            .fallback([
                call_with_usage(
                    "t1",
                    "Task",
                    json!({"name": "explorer", "description": "who", "prompt": "Who are you?"}),
                    10,
                    5,
                ),
                answer_with_usage("done", 20, 4),
            ]),
    );
    let run = exec(&sb, &model, &["--auto", "medium"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let requests = model.requests();
    let child = requests
        .iter()
        .find(|r| r.specialist_call("explorer"))
        .expect("a child call");
    let system = child.json()["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(system.contains("PROJECT-EXPLORER-PROMPT"), "{system}");
    assert!(
        !system.contains("read-only codebase exploration specialist"),
        "the built-in prompt is still there: {system}"
    );
    // The Task tool lists the project's description.
    assert!(requests[0].text().contains("The project's explorer."));
    assert!(results(&run)[0]["output"]
        .as_str()
        .is_some_and(|o| o.contains("project explorer here")));

    // Usage: the parent's lines carry the parent's calls; the child's tokens are rolled up
    // into the session, so that the two add up to every call the model served.
    let lines = run.of("usage");
    let shown: Vec<(u64, u64)> = lines
        .iter()
        .map(|u| {
            (
                u["promptTokens"].as_u64().unwrap_or(0),
                u["completionTokens"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(shown, [(10, 5), (20, 4)], "{}", run.stdout);
    let parent = run.of("run_start")[0]["sessionId"]
        .as_str()
        .expect("session")
        .to_string();
    let rollup = session_events(&sb.sessions(), &parent)
        .into_iter()
        .find(|e| e["type"] == "provider_usage" && e["payload"]["source"] == "specialist")
        .expect("the child's usage rolled up");
    assert_eq!(rollup["payload"]["promptTokens"], 7, "{rollup}");
    assert_eq!(rollup["payload"]["completionTokens"], 3, "{rollup}");
    let all: u64 = shown.iter().map(|(p, c)| p + c).sum::<u64>()
        + rollup["payload"]["totalTokens"].as_u64().unwrap_or(0);
    assert_eq!(all, 10 + 5 + 7 + 3 + 20 + 4);
}

#[test]
fn a_malformed_manifest_is_named_with_its_line_and_a_broken_extends_is_a_specialist_error() {
    let sb = Sandbox::new();
    let bad = sb.work().join(".zero/specialists/bad.md");
    write(
        &bad,
        "---\nname: bad\ndescription: Broken.\ntools:\n  - read-only\n  - Task\n---\nprompt\n",
    );
    // A manifest Zero skips: a warning naming the file and line, the run goes on.
    let model = MockModel::start(vec![Reply::chat_text("fine")]);
    let run = exec(&sb, &model, &["--auto", "medium"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let canonical = std::fs::canonicalize(&bad).expect("canonical");
    assert!(
        run.stderr
            .lines()
            .any(|l| l.contains("skipped specialist manifest")
                && (l.contains(&format!("{}:6:", bad.display()))
                    || l.contains(&format!("{}:6:", canonical.display())))),
        "{}",
        run.stderr
    );
    assert!(!body(&model, 0).contains("- bad: Broken."));
    assert_eq!(run.of("final")[0]["text"], "fine");

    // An `extends` that cannot resolve: Zero refuses to run, `specialist_error`, exit 3.
    write(
        &sb.work().join(".zero/specialists/cycle.md"),
        "---\nname: cycle\nextends: cycle\n---\n",
    );
    let model = MockModel::start(vec![Reply::chat_text("never")]);
    let run = exec(&sb, &model, &["--auto", "medium"]);
    assert_eq!(run.code, 3, "{}", run.stdout);
    assert_eq!(run.types(), ["error", "run_end"], "no run_start");
    let error = &run.of("error")[0];
    assert_eq!(error["code"], "specialist_error", "{error}");
    let message = error["message"].as_str().expect("message");
    assert!(message.contains("cycle.md:3:"), "{message}");
    assert_eq!(model.request_count(), 0);
}

#[test]
fn sigint_during_a_child_bash_call_leaves_no_process() {
    let sb = Sandbox::new();
    let model = MockModel::start(
        Script::new()
            .route(
                |r| r.specialist_call("worker"),
                [Reply::chat_call(
                    "c1",
                    "bash",
                    bash("sleep 300 & echo $! > sleep.pid; echo $$ > bash.pid; wait"),
                )],
            )
            .fallback([Reply::chat_call(
                "t1",
                "Task",
                json!({"name": "worker", "description": "wait", "prompt": "Wait a long time."}),
            )]),
    );
    let url = model.v1();
    let mut child = sb
        .command(&[
            "exec",
            "-o",
            "stream-json",
            "--provider",
            "openai",
            "--base-url",
            &url,
            "--api-key",
            "sk-capability-tests-0123456789",
            "--model",
            "gpt-test",
            "--skip-permissions-unsafe",
            "Delegate.",
        ])
        .env("AGENT_SDK_MAX_RETRIES", "0")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let lines = common::line_reader(child.stdout.take().expect("stdout"));
    let pid_in = |name: &str| {
        let path = sb.work().join(name);
        let deadline = Instant::now() + common::RUN_TIMEOUT;
        loop {
            if let Some(pid) = std::fs::read_to_string(&path)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok())
            {
                return pid;
            }
            assert!(Instant::now() < deadline, "the child's bash never started");
            // Polling a file the bash call writes: nothing else reports it.
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let shell = pid_in("bash.pid");
    let sleeper = pid_in("sleep.pid");
    assert!(!gone(sleeper), "the child's command runs");
    // SAFETY: signalling the process this test spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let mut seen = Vec::new();
    while let Ok(line) = lines.recv_timeout(common::RUN_TIMEOUT) {
        seen.push(serde_json::from_str::<Value>(&line).expect("json"));
    }
    let output = common::wait_output(child, common::RUN_TIMEOUT);
    assert_eq!(output.status.code(), Some(130));
    let kinds: Vec<&str> = seen.iter().filter_map(|f| f["type"].as_str()).collect();
    assert_eq!(kinds.first(), Some(&"run_start"), "{seen:?}");
    assert_eq!(kinds[kinds.len() - 2..], ["error", "run_end"], "{seen:?}");
    assert_eq!(seen[seen.len() - 2]["code"], "interrupted");
    assert_eq!(seen[seen.len() - 1]["status"], "interrupted");
    assert!(
        wait_gone_blocking(&[shell], RUN_TIMEOUT).is_empty(),
        "the child's shell outlived the run"
    );
    assert!(
        wait_gone_blocking(&[sleeper], RUN_TIMEOUT).is_empty(),
        "the child's command outlived the run"
    );
}

// ---------------------------------------------------------------------------------------------
// Context budget
// ---------------------------------------------------------------------------------------------

#[test]
fn an_automatic_compaction_is_a_warning_line() {
    let sb = Sandbox::new();
    let listing = |id: &str, prompt_tokens: u64| {
        Reply::sse(
            sse::chat::Stream::new()
                .tool_call(id, "list_dir", &json!({"path": "."}).to_string())
                .finish("tool_calls")
                .usage(prompt_tokens, 20, 0)
                .done(),
        )
    };
    // Two small calls, then one that fills 92 % of the window: the transcript has turns to
    // summarise before the ones kept verbatim.
    let script = |summary: bool| {
        let mut replies = vec![listing("l1", 100), listing("l2", 120), listing("l3", 900)];
        if summary {
            replies.push(Reply::chat_text(
                "The user listed the workspace three times; it is empty.",
            ));
        }
        replies.push(Reply::chat_text("done"));
        MockModel::start(replies)
    };
    let model = script(true);
    let run = exec(
        &sb,
        &model,
        &["--context-window", "1000", "--auto-compact", "50"],
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(model.request_count(), 5, "{}", run.stdout);
    let warnings = run.of("warning");
    assert_eq!(warnings.len(), 1, "{}", run.stdout);
    let message = warnings[0]["message"].as_str().expect("message");
    assert!(
        message.starts_with("Context compacted (auto): ") && message.ends_with(" tokens."),
        "{message}"
    );
    assert!(body(&model, 4).contains("listed the workspace three times"));
    assert_eq!(run.of("final")[0]["text"], "done");

    // No compaction with --auto-compact off.
    let model = script(false);
    let run = exec(
        &sb,
        &model,
        &["--context-window", "1k", "--auto-compact", "off"],
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(model.request_count(), 4);
    assert!(run.of("warning").is_empty(), "{}", run.stdout);
}

// ---------------------------------------------------------------------------------------------
// Structured output
// ---------------------------------------------------------------------------------------------

fn schema(sb: &Sandbox) -> String {
    let path = sb.work().join("answer.schema.json");
    write(
        &path,
        &json!({
            "type": "object",
            "properties": {"files": {"type": "integer"}, "summary": {"type": "string"}},
            "required": ["files", "summary"],
            "additionalProperties": false
        })
        .to_string(),
    );
    path.display().to_string()
}

#[test]
fn output_schema_asks_for_the_schema_and_accepts_a_matching_answer() {
    let sb = Sandbox::new();
    let file = schema(&sb);
    let model = MockModel::start(vec![Reply::chat_text(
        r#"{"files": 2, "summary": "two files"}"#,
    )]);
    let run = exec(&sb, &model, &["--output-schema", &file]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(
        run.of("final")[0]["text"],
        r#"{"files": 2, "summary": "two files"}"#
    );
    let request = model.requests()[0].json();
    let format = &request["response_format"];
    assert_eq!(format["type"], "json_schema", "{request}");
    assert_eq!(format["json_schema"]["strict"], true, "{format}");
    assert_eq!(
        format["json_schema"]["schema"]["required"],
        json!(["files", "summary"])
    );
}

#[test]
fn an_answer_that_does_not_match_the_schema_is_an_error_after_one_repair() {
    let sb = Sandbox::new();
    let file = schema(&sb);
    let model = MockModel::start(vec![
        Reply::chat_text(r#"{"files": "two"}"#),
        Reply::chat_text(r#"{"files": "still two"}"#),
    ]);
    let run = exec(&sb, &model, &["--output-schema", &file]);
    assert_eq!(run.code, 3, "{}", run.stdout);
    assert_eq!(model.request_count(), 2, "one repair turn");
    assert!(body(&model, 1).contains("does not match the required JSON schema"));
    let tail: Vec<String> = run.types().into_iter().rev().take(2).collect();
    assert_eq!(tail, ["run_end", "error"]);
    let error = &run.of("error")[0];
    assert_eq!(error["code"], "output_schema_error", "{error}");
    assert!(error["message"]
        .as_str()
        .expect("message")
        .contains("does not match the output schema"));
    assert_eq!(run.of("run_end")[0]["status"], "error");
    assert!(run.of("final").is_empty());
}

#[test]
fn an_output_schema_that_is_not_a_schema_is_a_usage_error() {
    let sb = Sandbox::new();
    let path = sb.work().join("bad.json");
    write(&path, r#"{"type": 42}"#);
    let run = sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "--output-schema",
            "bad.json",
            "hi",
        ],
        "",
    );
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert_eq!(run.types(), ["error", "run_end"]);
    assert!(run.of("error")[0]["message"]
        .as_str()
        .expect("message")
        .starts_with(&format!("invalid output schema {}", path.display())));
}

// ---------------------------------------------------------------------------------------------
// Secrets
// ---------------------------------------------------------------------------------------------

#[test]
fn an_api_key_used_as_a_file_name_shows_redacted_in_the_error_result() {
    let sb = Sandbox::new();
    // Not shaped like any key the protocol's own redaction knows: only the registered
    // secret can hide it.
    let key = "zq9-plural-zalpha-4711-capability";
    let model = MockModel::start(vec![
        Reply::chat_call("r1", "read_file", json!({"path": key})),
        Reply::chat_text("no such file"),
    ]);
    let url = model.v1();
    let run = sb.run(
        &[
            "exec",
            "-o",
            "stream-json",
            "--provider",
            "openai",
            "--base-url",
            &url,
            "--api-key",
            key,
            "read it",
        ],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    let result = &results(&run)[0];
    assert_eq!(result["status"], "error", "{result}");
    assert_eq!(result["output"], "file not found: [REDACTED]", "{result}");
    assert_eq!(result["redacted"], true);
    assert!(!run.stderr.contains(key), "{}", run.stderr);
    // The model's next request carries the scrubbed error (its own call, which named the
    // key, is the model's text and goes back as it was).
    let request = model.requests()[1].json();
    let tool_message = request["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "tool"))
        .cloned()
        .expect("a tool message");
    assert_eq!(
        tool_message["content"], "file not found: [REDACTED]",
        "{tool_message}"
    );
    let session = run.of("run_start")[0]["sessionId"]
        .as_str()
        .expect("session")
        .to_string();
    let recorded = session_events(&sb.sessions(), &session);
    let result = recorded
        .iter()
        .find(|e| e["type"] == "tool_result")
        .expect("tool_result recorded");
    assert_eq!(result["payload"]["output"], "file not found: [REDACTED]");
}
