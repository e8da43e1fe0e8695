//! What only Zero's `exec` has among the capabilities (the scenarios every front end shares
//! are run by `tests/capabilities.rs`): hooks from Zero's config directory with its audit
//! log, project hooks in a trusted workspace, Zero's session-hook payload, a headless
//! escalation request, where `Task` is offered, specialist errors before the run, and
//! `--output-schema`.

mod common;

use std::path::Path;

use common::{Run, Sandbox};
use serde_json::{json, Value};
use test_support::{MockModel, Reply};

/// `exec -o stream-json` against `model`, with `flags` before the prompt.
fn exec(sb: &Sandbox, model: &MockModel, flags: &[&str]) -> Run {
    let url = model.v1();
    let mut args = common::openai_exec(&url, Some("sk-capability-tests-0123456789"));
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

/// A Zero `hooks.json` with one hook.
fn zero_hooks(id: &str, event: &str, matcher: &str, script: &str) -> Value {
    json!({"enabled": true, "hooks": [{
        "id": id, "event": event, "matcher": matcher,
        "command": "sh", "args": ["-c", script]
    }]})
}

#[test]
fn a_hook_in_zero_s_config_directory_vetoes_bash_with_its_id_and_is_audited() {
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
    // Zero's `turns` are the run's model calls; one answer, no tool call.
    assert_eq!(payloads[1]["turns"], 1, "{}", payloads[1]);
    assert_eq!(payloads[1]["finishReason"], "stop", "{}", payloads[1]);
    assert_eq!(payloads[1]["incomplete"], false, "{}", payloads[1]);
    for payload in &payloads {
        assert_eq!(payload["sessionId"], session.as_str(), "{payload}");
    }
}

#[test]
fn asking_to_run_outside_the_sandbox_is_refused_headless_after_a_permission_request() {
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
    let results = results(&run);
    assert_eq!(results[0]["block"]["code"], "sandbox", "{}", results[0]);
    // Asking to run outside the sandbox is the approver's call; headless, it is refused
    // after a permission_request carrying the block, as Zero's example shows.
    let requests = run.of("permission_request");
    assert_eq!(requests.len(), 1, "{}", run.stdout);
    assert_eq!(requests[0]["id"], "b2");
    assert!(requests[0]["block"].is_object(), "{}", requests[0]);
    assert_eq!(results[1]["status"], "error");
    assert!(!outside.exists());
}

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

#[test]
fn an_extends_that_cannot_resolve_is_a_specialist_error_before_the_run() {
    let sb = Sandbox::new();
    // Zero refuses to run: `specialist_error`, exit 3.
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

#[test]
fn a_signal_while_a_session_start_hook_runs_interrupts_the_run_without_a_model_call() {
    use common::Piped as _;
    let sb = Sandbox::new();
    let pid = sb.work().join("hook.pid");
    sb.zero_config(
        "hooks.json",
        &json!({"enabled": true, "hooks": [
            {"id": "start", "event": "sessionStart", "command": "sh",
             "args": ["-c", format!("echo $$ > {}; exec sleep 60", pid.display())]}
        ]}),
    );
    let model = MockModel::start(vec![Reply::chat_text("never")]);
    let url = model.v1();
    let mut args = common::openai_exec(&url, Some("sk-capability-tests-0123456789"));
    args.push("Do the task.");
    let mut cmd = sb.command(&args);
    cmd.env("AGENT_SDK_MAX_RETRIES", "0");
    let child = cmd.spawn_piped();
    let hook = test_support::procs::pid_in_blocking(&pid, common::RUN_TIMEOUT);
    // SAFETY: signalling the process this test spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let run = Run::from(common::wait_output(child, common::RUN_TIMEOUT));
    run.assert_framing();
    assert_eq!(run.code, 130, "{}", run.stdout);
    let end = run.of("run_end");
    assert_eq!(end[0]["status"], "interrupted", "{}", run.stdout);
    assert_eq!(run.of("error")[0]["code"], "interrupted");
    assert_eq!(
        model.request_count(),
        0,
        "the prompt never reached the model"
    );
    let left = test_support::procs::wait_gone_blocking(&[hook], common::RUN_TIMEOUT);
    assert!(left.is_empty(), "the hook's process was left running");
}
