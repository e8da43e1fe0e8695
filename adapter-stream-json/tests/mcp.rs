//! MCP servers through the `exec` binary, configured the way Zero configures them
//! (`$XDG_CONFIG_HOME/zero/config.json`, the project's `.zero/config.json` when trusted), on
//! a local mock model: the npm reference server (`@modelcontextprotocol/server-everything`,
//! pinned in agent-mcp/tests/servers and installed on first use by `test_support::mcp`) over
//! stdio and streamable HTTP, and a small node fixture (`tests/support/mcp_fixture.cjs`).
//! Without Node or the packages these tests print a `skipped: …` line, unless
//! `AGENT_SDK_NODE=required` (CI), when they fail.

mod common;

use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{line_reader, wait_output, Run, Sandbox, RUN_TIMEOUT};
use serde_json::{json, Value};
use test_support::mcp::{node, script, HttpEverything};
use test_support::procs::{children, wait_gone_blocking};
use test_support::{MockModel, Reply};

fn everything() -> Value {
    json!({"command": node(), "args": [script("server-everything"), "stdio"]})
}

fn fixture() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/mcp_fixture.cjs");
    json!({"command": node(), "args": [path.display().to_string()]})
}

/// The arguments of `exec -o stream-json` against `model` (unsafe: MCP tools that are not
/// read-only run without a prompt), then `flags`, then the prompt.
fn args<'a>(url: &'a str, flags: &[&'a str]) -> Vec<&'a str> {
    let mut args = common::openai_exec(url, Some("sk-mcp-tests-0123456789abcdef"));
    args.push("--skip-permissions-unsafe");
    args.extend_from_slice(flags);
    args.push("Use the tools.");
    args
}

fn exec(sb: &Sandbox, model: &MockModel, flags: &[&str]) -> Run {
    let url = model.v1();
    let mut cmd = sb.command(&args(&url, flags));
    cmd.env("AGENT_SDK_MAX_RETRIES", "0");
    let run = sb.run_with(cmd, "");
    run.assert_framing();
    run
}

/// A running exec whose stdout lines are read as they come.
struct Live {
    child: Option<Child>,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Live {
    fn start(sb: &Sandbox, model: &MockModel, flags: &[&str]) -> Self {
        let url = model.v1();
        let mut cmd = sb.command(&args(&url, flags));
        cmd.env("AGENT_SDK_MAX_RETRIES", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn exec");
        let lines = line_reader(child.stdout.take().expect("stdout"));
        Self {
            child: Some(child),
            lines,
            seen: Vec::new(),
        }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or_default()
    }

    /// Reads lines until one satisfies `pred`; returns it.
    fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + RUN_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no such line; saw:\n{}", self.seen.join("\n")));
            self.seen.push(line.clone());
            let value: Value = serde_json::from_str(&line).expect("json line");
            if pred(&value) {
                return value;
            }
        }
    }

    /// Waits for the exit; returns the whole run (stdout read so far plus the rest).
    fn finish(mut self) -> Run {
        let child = self.child.take().expect("running");
        let output = wait_output(child, RUN_TIMEOUT);
        let mut stdout = self.seen.join("\n");
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            if !stdout.is_empty() {
                stdout.push('\n');
            }
            stdout.push_str(&line);
        }
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn a_stdio_server_from_zero_s_config_is_listed_called_and_its_result_reaches_the_model() {
    if !test_support::mcp::ready() {
        return;
    }
    let sb = Sandbox::new();
    sb.zero_config(
        "config.json",
        &json!({"mcp": {"servers": {"everything": everything()}}}),
    );
    let listed = sb.run(&["exec", "-o", "stream-json", "--list-tools"], "");
    listed.assert_framing();
    assert_eq!(listed.types(), ["run_start", "final", "run_end"]);
    let text = listed.of("final")[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(text.contains("  mcp_everything_echo ["), "{text}");
    assert!(text.contains("  read_file ["), "{text}");

    let model = MockModel::start(vec![
        Reply::chat_call(
            "e1",
            "mcp_everything_echo",
            json!({"message": "hello from exec"}),
        ),
        Reply::chat_text("all done"),
    ]);
    let run = exec(&sb, &model, &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        model.requests()[0]
            .offered_tools()
            .contains(&"mcp_everything_echo".to_string()),
        "the model is offered the MCP tools"
    );
    let result = &run.of("tool_result")[0];
    assert_eq!(result["name"], "mcp_everything_echo");
    assert_eq!(result["status"], "ok", "{result}");
    assert!(result["output"]
        .as_str()
        .unwrap_or_default()
        .contains("hello from exec"));
    let sent = model.requests()[1]
        .tool_message("e1")
        .expect("tool message");
    assert!(sent.contains("hello from exec"), "{sent}");
    assert_eq!(run.of("final")[0]["text"], "all done");
    assert_eq!(run.stderr, "");
}

#[test]
fn a_streamable_http_server_works_the_same() {
    if !test_support::mcp::ready() {
        return;
    }
    let server = HttpEverything::start();

    let sb = Sandbox::new();
    // Zero's `mcpServers` alias, an http server with a header.
    sb.zero_config(
        "config.json",
        &json!({"mcpServers": {"web": {
            "type": "http", "url": server.url(),
            "headers": {"X-Test": "1"}
        }}}),
    );
    let model = MockModel::start(vec![
        Reply::chat_call(
            "h1",
            "mcp_web_echo",
            json!({"message": "over streamable http"}),
        ),
        Reply::chat_text("done"),
    ]);
    let run = exec(&sb, &model, &[]);
    drop(server);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let result = &run.of("tool_result")[0];
    assert_eq!(result["status"], "ok", "{result}");
    let sent = model.requests()[1]
        .tool_message("h1")
        .expect("tool message");
    assert!(sent.contains("over streamable http"), "{sent}");
}

#[test]
fn a_server_that_does_not_exist_is_skipped_with_a_warning_and_the_run_goes_on() {
    let sb = Sandbox::new();
    sb.zero_config(
        "config.json",
        &json!({"mcp_servers": {"ghost": {"command": "/nonexistent/mcp-server"}}}),
    );
    let model = MockModel::start(vec![Reply::chat_text("still fine")]);
    let run = exec(&sb, &model, &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let types = run.types();
    assert_eq!(types[0], "run_start");
    let warnings = run.of("warning");
    let skipped = warnings
        .iter()
        .filter_map(|w| w["message"].as_str())
        .find(|m| m.starts_with("MCP server ghost unavailable, skipped: "));
    assert!(skipped.is_some(), "{}", run.stdout);
    assert_eq!(run.of("final")[0]["text"], "still fine");
}

#[test]
fn disabled_servers_and_untrusted_project_servers_do_not_start() {
    if !test_support::mcp::ready() {
        return;
    }
    let sb = Sandbox::new();
    sb.zero_config(
        "config.json",
        &json!({"mcp": {"servers": {"off": {"command": "/nonexistent/off", "disabled": true}}}}),
    );
    let project = sb.work().join(".zero");
    std::fs::create_dir_all(&project).expect("project");
    std::fs::write(
        project.join("config.json"),
        json!({"mcp": {"servers": {"fixture": fixture()}}}).to_string(),
    )
    .expect("project config");
    let list = |sb: &Sandbox| {
        let run = sb.run(&["exec", "-o", "stream-json", "--list-tools"], "");
        run.assert_framing();
        (
            run.of("final")[0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            run.stderr,
        )
    };
    let (text, stderr) = list(&sb);
    assert!(!text.contains("mcp_"), "{text}");
    assert_eq!(stderr, "", "--list-tools prints no trust notice");
    sb.trust_workspace();
    let (text, _) = list(&sb);
    assert!(text.contains("  mcp_fixture_whoami ["), "{text}");
    assert!(!text.contains("mcp_off"), "{text}");
}

#[test]
fn an_invalid_config_is_an_mcp_error_with_no_run_start() {
    let sb = Sandbox::new();
    sb.zero_config(
        "config.json",
        &json!({"mcp": {"servers": {"bad": {"type": "carrier-pigeon", "command": "x"}}}}),
    );
    let run = sb.run(&["exec", "-o", "stream-json", "hello"], "");
    run.assert_framing();
    assert_eq!(run.code, 3, "{}", run.stdout);
    assert_eq!(run.types(), ["error", "run_end"]);
    let error = &run.of("error")[0];
    assert_eq!(error["code"], "mcp_error", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("bad"),
        "{error}"
    );
    // Plan mode starts no MCP server, so the config is not read.
    let run = sb.run(&["exec", "-o", "stream-json", "--plan", "hello"], "");
    assert_eq!(run.code, 0, "{}", run.stdout);
}

#[test]
fn list_changed_offers_the_new_tool_before_the_next_model_call_and_no_server_outlives_exec() {
    if !test_support::mcp::ready() {
        return;
    }
    let sb = Sandbox::new();
    sb.zero_config(
        "config.json",
        &json!({"mcp": {"servers": {"fx": fixture()}}}),
    );
    let model = MockModel::start(vec![
        Reply::chat_call("w1", "mcp_fx_whoami", json!({})),
        Reply::chat_call("g1", "mcp_fx_grow", json!({})),
        Reply::chat_call("x1", "mcp_fx_extra", json!({})),
        Reply::chat_text("done"),
    ]);
    let run = exec(&sb, &model, &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let requests = model.requests();
    assert!(!requests[1]
        .offered_tools()
        .contains(&"mcp_fx_extra".to_string()));
    assert!(requests[2]
        .offered_tools()
        .contains(&"mcp_fx_extra".to_string()));
    let results = run.of("tool_result");
    assert_eq!(results[2]["status"], "ok", "{}", results[2]);
    assert_eq!(results[2]["output"], "extra here");
    let pid: i32 = results[0]["output"]
        .as_str()
        .and_then(|o| o.strip_prefix("pid "))
        .and_then(|p| p.trim().parse().ok())
        .expect("the server's pid");
    assert!(
        wait_gone_blocking(&[pid], RUN_TIMEOUT).is_empty(),
        "MCP server {pid} outlived exec"
    );
}

/// A call of server-everything's long operation that would run for 300 s.
fn long_call(id: &str) -> Reply {
    Reply::chat_call(
        id,
        "mcp_everything_trigger_long_running_operation",
        json!({"duration": 300, "steps": 300}),
    )
}

#[test]
fn a_server_killed_mid_call_is_an_error_result_and_the_run_goes_on() {
    if !test_support::mcp::ready() {
        return;
    }
    let sb = Sandbox::new();
    sb.zero_config(
        "config.json",
        &json!({"mcp": {"servers": {"everything": everything()}}}),
    );
    let model = MockModel::start(vec![long_call("l1"), Reply::chat_text("recovered")]);
    let mut live = Live::start(&sb, &model, &[]);
    live.until(|e| e["type"] == "tool_call" && e["id"] == "l1");
    let servers = children(live.pid(), "server-everything");
    assert_eq!(servers.len(), 1, "one server child of exec");
    // SAFETY: kill(2) with SIGKILL on the MCP server this test's exec started.
    assert_eq!(unsafe { libc::kill(servers[0], libc::SIGKILL) }, 0);
    let run = live.finish();
    run.assert_framing();
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let result = &run.of("tool_result")[0];
    assert_eq!(result["status"], "error", "{result}");
    assert!(model.requests()[1].tool_message("l1").is_some());
    assert_eq!(run.of("final")[0]["text"], "recovered");
}

#[test]
fn sigterm_mid_call_ends_the_run_interrupted_and_leaves_no_server_behind() {
    if !test_support::mcp::ready() {
        return;
    }
    let sb = Sandbox::new();
    sb.zero_config(
        "config.json",
        &json!({"mcp": {"servers": {"everything": everything()}}}),
    );
    let model = MockModel::start(vec![long_call("l1"), Reply::chat_text("never")]);
    let mut live = Live::start(&sb, &model, &[]);
    live.until(|e| e["type"] == "tool_call" && e["id"] == "l1");
    let servers = children(live.pid(), "server-everything");
    assert_eq!(servers.len(), 1, "one server child of exec");
    // SAFETY: kill(2) with SIGTERM on the exec this test started.
    assert_eq!(unsafe { libc::kill(live.pid() as i32, libc::SIGTERM) }, 0);
    let run = live.finish();
    run.assert_framing();
    assert_eq!(run.code, 130, "{}\n{}", run.stdout, run.stderr);
    let tail: Vec<String> = run.types().into_iter().rev().take(2).collect();
    assert_eq!(tail, ["run_end", "error"], "{}", run.stdout);
    assert_eq!(run.of("error")[0]["code"], "interrupted");
    assert_eq!(run.of("run_end")[0]["status"], "interrupted");
    assert_eq!(model.request_count(), 1, "no model call after the signal");
    assert!(
        wait_gone_blocking(&[servers[0]], RUN_TIMEOUT).is_empty(),
        "the MCP server outlived exec"
    );
}
