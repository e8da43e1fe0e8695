//! The manager against the fixture server over stdio, through a real agent loop on the
//! scripted provider: results reach the model, list_changed, abort, crash, timeout,
//! missing servers, and no process left behind.

mod common;

use std::time::Duration;

use agent_core::{
    event::ToolStatus, message::Role, Agent, AgentEvent, ContentBlock, Message, RunStatus,
    SideEffect, ToolContext,
};
use agent_mcp::{ConfigError, McpManager, McpOptions, ServerState, TransportKind};
use agent_providers::scripted::{ScriptedProvider, Turn};
use common::*;
use serde_json::{json, Value};

fn options() -> McpOptions {
    McpOptions::new(std::env::temp_dir()).connect_timeout(WAIT)
}

async fn one(config: agent_mcp::McpServerConfig) -> McpManager {
    McpManager::connect(vec![config], options())
        .await
        .expect("valid config")
}

/// Our child processes whose command line has `arg`.
fn children_with_arg(arg: &str) -> Vec<u32> {
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid = stat
                .rsplit_once(") ")
                .and_then(|(_, rest)| rest.split(' ').nth(1))
                .unwrap_or_default()
                .to_string();
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            ppid == me
                && cmdline
                    .split(|b| *b == 0)
                    .any(|part| part == arg.as_bytes())
        })
        .collect()
}

fn last_tool_message(messages: &[Message]) -> Vec<ContentBlock> {
    messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Tool)
        .map(|m| m.content.clone())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_result_reaches_the_model() {
    let manager = one(fixture("fixture")).await;
    let status = manager.status();
    assert_eq!(status.len(), 1);
    assert_eq!(status[0].state, ServerState::Connected);
    assert_eq!(status[0].transport, TransportKind::Stdio);
    assert!(status[0].pid.is_some());
    // 14 tools over pages of 3: the listing followed nextCursor to the end.
    assert_eq!(status[0].tools.len(), 14, "{:?}", status[0].tools);

    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "mcp_fixture_echo", r#"{"text":"hello"}"#),
        Turn::new().text("The server said hello."),
    ]);
    let agent = Agent::builder(provider.clone())
        .tool_source(manager.clone())
        .build();
    let events = collect(agent.prompt("call echo")).await;
    assert_eq!(
        finished(&events),
        Some((RunStatus::Success, Some("The server said hello.".into())))
    );
    assert_eq!(
        tool_results(&events),
        [(
            "mcp_fixture_echo".to_string(),
            ToolStatus::Ok,
            "echo: hello".to_string()
        )]
    );

    let requests = provider.requests();
    let offered: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert!(offered.contains(&"mcp_fixture_echo") && offered.contains(&"mcp_fixture_bare"));
    let echo = requests[0]
        .tools
        .iter()
        .find(|t| t.name == "mcp_fixture_echo")
        .expect("echo offered");
    assert_eq!(echo.description, "Echoes text.");
    assert_eq!(
        echo.parameters,
        json!({"type": "object", "properties": {"text": {"type": "string"}}})
    );
    let bare = requests[0]
        .tools
        .iter()
        .find(|t| t.name == "mcp_fixture_bare")
        .expect("bare offered");
    assert_eq!(bare.description, "Call MCP tool fixture/bare");
    // The second model call sees the result.
    assert!(matches!(
        &last_tool_message(&requests[1].messages)[..],
        [ContentBlock::ToolResult { is_error: false, content, .. }] if text_of(content) == "echo: hello"
    ));
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_map_images_structured_content_errors_caps_and_secrets() {
    let secret = "fixture-secret-value-0123456789";
    let manager = one(fixture("fx").env("FIXTURE_TOKEN", secret)).await;

    let image = call(&manager, "mcp_fx_image", json!({})).await;
    assert!(!image.is_error);
    assert_eq!(image.content[0], ContentBlock::text("an image:"));
    assert!(matches!(
        &image.content[1],
        ContentBlock::Image { mime_type, data } if mime_type == "image/png" && data.starts_with(b"\x89PNG")
    ));

    let weather = call(&manager, "mcp_fx_weather", json!({})).await;
    assert_eq!(weather.text_content(), r#"{"temperature":21}"#);

    let fail = call(&manager, "mcp_fx_fail", json!({})).await;
    assert!(fail.is_error);
    assert_eq!(fail.text_content(), "it failed");

    let big = call(&manager, "mcp_fx_big", json!({})).await;
    assert!(big.truncated);
    assert!(big.text_content().len() < 11_000);

    let leaked = call(&manager, "mcp_fx_secret", json!({})).await;
    assert!(leaked.redacted);
    assert!(!leaked.text_content().contains(secret));

    let bad = tool(&manager, "mcp_fx_echo")
        .call(json!([1, 2]), ToolContext::new("."))
        .await;
    assert!(matches!(
        bad,
        Err(agent_core::ToolError::InvalidArguments(_))
    ));
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn annotations_decide_side_effect_and_permission() {
    let manager = one(fixture("fx")).await;
    let echo = manager.tool_info("mcp_fx_echo").expect("echo");
    assert_eq!(echo.side_effect, SideEffect::Read);
    assert_eq!(echo.read_only_hint, Some(true));
    assert_eq!(echo.remote_name, "echo");
    assert_eq!(
        manager.tool_info("mcp_fx_write").map(|t| t.side_effect),
        Some(SideEffect::Network)
    );
    assert_eq!(
        manager.tool_info("mcp_fx_bare").map(|t| t.side_effect),
        Some(SideEffect::Network)
    );

    // Without an approver a prompt is refused; the read-only tool runs.
    let provider = ScriptedProvider::new([
        Turn::new()
            .tool_call("w", "mcp_fx_write", r#"{"text":"x"}"#)
            .tool_call("e", "mcp_fx_echo", r#"{"text":"y"}"#),
        Turn::new().text("ok"),
    ]);
    let agent = Agent::builder(provider)
        .tool_source(manager.clone())
        .build();
    let events = collect(agent.prompt("go")).await;
    let results = tool_results(&events);
    assert_eq!(results[0].1, ToolStatus::Error);
    assert!(results[0].2.contains("Permission required"), "{results:?}");
    assert_eq!(results[1].1, ToolStatus::Ok);
    assert!(events.iter().any(
        |e| matches!(e, AgentEvent::PermissionRequested(info) if info.name == "mcp_fx_write")
    ));
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_refreshes_the_tools_before_the_next_model_call() {
    let manager = one(fixture("fx")).await;
    assert!(manager.tool_info("mcp_fx_extra").is_none());
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("g", "mcp_fx_grow", "{}"),
        Turn::new().tool_call("x", "mcp_fx_extra", r#"{"text":"new"}"#),
        Turn::new().text("done"),
    ]);
    let agent = Agent::builder(provider.clone())
        .tool_source(manager.clone())
        .build();
    let events = collect(agent.prompt("grow")).await;
    let requests = provider.requests();
    let has_extra = |i: usize| requests[i].tools.iter().any(|t| t.name == "mcp_fx_extra");
    assert!(!has_extra(0));
    assert!(
        has_extra(1),
        "the request after the change offers the new tool"
    );
    assert_eq!(
        tool_results(&events)[1],
        (
            "mcp_fx_extra".to_string(),
            ToolStatus::Ok,
            "extra: new".to_string()
        )
    );
    assert!(manager.status()[0]
        .tools
        .contains(&"mcp_fx_extra".to_string()));
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborting_a_run_mid_call_sends_notifications_cancelled() {
    let manager = one(fixture("fx")).await;
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("s", "mcp_fx_slow", "{}"),
        Turn::new().text("never"),
    ]);
    let agent = Agent::builder(provider)
        .tool_source(manager.clone())
        .build();
    let mut run = agent.prompt("wait");
    until(
        &mut run,
        |e| matches!(e, AgentEvent::ToolExecutionStarted { name, .. } if name == "mcp_fx_slow"),
    )
    .await;
    // Abort once the server holds the call (the event comes just before it is sent).
    let deadline = tokio::time::Instant::now() + WAIT;
    while call(&manager, "mcp_fx_slow_calls", json!({}))
        .await
        .text_content()
        != "1"
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server never got the call"
        );
        tokio::task::yield_now().await;
    }
    run.abort();
    let rest = collect(run).await;
    assert_eq!(finished(&rest).map(|f| f.0), Some(RunStatus::Aborted));
    assert_eq!(tool_results(&rest)[0].1, ToolStatus::Error);

    // The server got notifications/cancelled (it may arrive just after the abort).
    let deadline = tokio::time::Instant::now() + WAIT;
    let cancelled = loop {
        let seen: Value = serde_json::from_str(
            &call(&manager, "mcp_fx_cancelled", json!({}))
                .await
                .text_content(),
        )
        .expect("json list");
        if seen.as_array().is_some_and(|a| !a.is_empty()) || tokio::time::Instant::now() > deadline
        {
            break seen;
        }
    };
    assert_eq!(cancelled.as_array().map(Vec::len), Some(1), "{cancelled}");
    assert!(cancelled[0].get("requestId").is_some(), "{cancelled}");
    // The server is still usable.
    assert_eq!(
        call(&manager, "mcp_fx_echo", json!({"text": "after"}))
            .await
            .text_content(),
        "echo: after"
    );
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_call_is_an_error_result_and_the_run_goes_on() {
    let manager = McpManager::connect(vec![fixture("a"), fixture("b")], options())
        .await
        .expect("valid");
    let pid_a = manager.status()[0].pid.expect("pid");
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c", "mcp_a_crash", "{}"),
        Turn::new().tool_call("e", "mcp_b_echo", r#"{"text":"b lives"}"#),
        Turn::new().text("recovered"),
    ]);
    let agent = Agent::builder(provider.clone())
        .tool_source(manager.clone())
        .build();
    let events = collect(agent.prompt("crash")).await;
    assert_eq!(
        finished(&events),
        Some((RunStatus::Success, Some("recovered".into())))
    );
    let results = tool_results(&events);
    assert_eq!(results[0].1, ToolStatus::Error);
    assert!(
        results[0].2.contains("closed the connection"),
        "{results:?}"
    );
    assert_eq!(results[1].2, "echo: b lives");

    let requests = provider.requests();
    assert!(requests[1]
        .tools
        .iter()
        .all(|t| !t.name.starts_with("mcp_a_")));
    assert!(requests[1].tools.iter().any(|t| t.name == "mcp_b_echo"));
    let status = manager.status();
    match &status[0].state {
        ServerState::Failed { reason } => {
            assert!(reason.contains("exited"), "{reason}");
            assert!(
                reason.contains("crashing on request"),
                "stderr kept: {reason}"
            );
        }
        other => panic!("expected failed, got {other:?}"),
    }
    assert!(status[0].tools.is_empty());
    assert_eq!(status[1].state, ServerState::Connected);
    assert!(wait_gone(&[pid_a]).await.is_empty());
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_that_fail_to_start_or_time_out_are_skipped() {
    let configs = vec![
        agent_mcp::McpServerConfig::stdio("missing", "/nonexistent/agent-mcp-no-such-server"),
        fixture("refuses").arg("--exit-at-start"),
        fixture("hangs").arg("--hang-initialize"),
        fixture("good"),
    ];
    let options = McpOptions::new(std::env::temp_dir()).connect_timeout(Duration::from_secs(3));
    let manager = McpManager::connect(configs, options)
        .await
        .expect("valid config");
    let status = manager.status();
    let reason = |i: usize| match &status[i].state {
        ServerState::Failed { reason } => reason.clone(),
        other => panic!("{} should have failed: {other:?}", status[i].name),
    };
    assert!(reason(0).contains("failed to start"), "{}", reason(0));
    assert!(reason(1).contains("refusing to start"), "{}", reason(1));
    assert!(reason(2).contains("no answer within"), "{}", reason(2));
    assert_eq!(status[3].state, ServerState::Connected);
    assert!(status[..3]
        .iter()
        .all(|s| s.tools.is_empty() && s.pid.is_none()));
    // The server that timed out was killed, not left behind.
    let hanging = children_with_arg("--hang-initialize");
    assert!(wait_gone(&hanging).await.is_empty(), "{hanging:?}");

    let provider = ScriptedProvider::new([
        Turn::new().tool_call("e", "mcp_good_echo", r#"{"text":"fine"}"#),
        Turn::new().text("done"),
    ]);
    let agent = Agent::builder(provider)
        .tool_source(manager.clone())
        .build();
    let events = collect(agent.prompt("go")).await;
    assert_eq!(tool_results(&events)[0].2, "echo: fine");
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_server_process_outlives_the_manager() {
    // Dropped while idle.
    let manager = one(fixture("fx")).await;
    let pids: Value = serde_json::from_str(
        &call(&manager, "mcp_fx_spawn_helper", json!({}))
            .await
            .text_content()
            .replacen("spawn_helper: ", "", 1),
    )
    .unwrap_or(Value::Null);
    let pids = match (pids["server"].as_u64(), pids["helper"].as_u64()) {
        (Some(server), Some(helper)) => vec![server as u32, helper as u32],
        _ => {
            let output = call(&manager, "mcp_fx_spawn_helper", json!({})).await;
            panic!("no pids in {:?}", output.text_content());
        }
    };
    assert_eq!(manager.status()[0].pid, Some(pids[0]));
    assert!(pids.iter().all(|p| !process_gone(*p)));
    let tools = manager.tools();
    drop(manager);
    assert_eq!(
        wait_gone(&pids).await,
        Vec::<u32>::new(),
        "helper and server killed"
    );
    // A tool that outlived its manager fails cleanly.
    let echo = tools
        .iter()
        .find(|t| t.name() == "mcp_fx_echo")
        .expect("echo");
    let output = echo
        .call(json!({"text": "x"}), ToolContext::new("."))
        .await
        .expect("an error result, not an error");
    assert!(output.is_error);

    // Dropped in the middle of a call.
    let manager = one(fixture("fx")).await;
    let pid = manager.status()[0].pid.expect("pid");
    let slow = tool(&manager, "mcp_fx_slow");
    let pending = tokio::spawn(async move { slow.call(json!({}), ToolContext::new(".")).await });
    // The call is in flight once the server is busy with it; dropping now must still kill.
    drop(manager);
    assert!(wait_gone(&[pid]).await.is_empty(), "server killed mid-call");
    let output = tokio::time::timeout(WAIT, pending)
        .await
        .expect("the call ends")
        .expect("no panic")
        .expect("an error result");
    assert!(output.is_error);

    // Shut down.
    let manager = one(fixture("fx")).await;
    let pid = manager.status()[0].pid.expect("pid");
    manager.shutdown().await;
    assert!(wait_gone(&[pid]).await.is_empty());
    assert!(matches!(
        manager.status()[0].state,
        ServerState::Failed { .. }
    ));
    assert!(manager.tools().is_empty());
}

#[tokio::test]
async fn an_invalid_configuration_is_an_error_and_starts_nothing() {
    let result = McpManager::connect(
        vec![fixture("same"), fixture("same")],
        McpOptions::default(),
    )
    .await;
    assert!(matches!(result, Err(ConfigError::DuplicateName { .. })));
    let result = McpManager::connect(
        vec![agent_mcp::McpServerConfig::http("h", "not a url")],
        McpOptions::default(),
    )
    .await;
    assert!(matches!(result, Err(ConfigError::InvalidField { .. })));

    let empty = McpManager::connect(Vec::new(), McpOptions::default())
        .await
        .expect("empty is fine");
    assert!(empty.is_empty() && empty.tools().is_empty() && empty.status().is_empty());
}

/// The test binary re-runs this test as a child process hosting a manager (marked by
/// this variable); the parent SIGKILLs it, so no destructor runs.
const HOST_CHILD: &str = "AGENT_MCP_TEST_HOST_CHILD";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_dies_with_a_host_that_is_killed() {
    if std::env::var_os(HOST_CHILD).is_some() {
        // A server that would outlive its closed stdin: only the death signal ends it.
        let manager = one(fixture("fx").arg("--linger")).await;
        let pid = manager.status()[0].pid.expect("pid");
        println!("AGENT_MCP_SERVER_PID={pid}");
        use std::io::Write;
        let _ = std::io::stdout().flush();
        // Wait to be killed (bounded, should the parent die first).
        tokio::time::sleep(WAIT).await;
        return;
    }
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mut host = tokio::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "a_server_dies_with_a_host_that_is_killed",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HOST_CHILD, "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("host starts");
    let stdout = host.stdout.take().expect("piped");
    let pid = tokio::time::timeout(WAIT, async move {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            // libtest may print the test's name on the same line.
            if let Some((_, pid)) = line.split_once("AGENT_MCP_SERVER_PID=") {
                return pid.trim().parse::<u32>().ok();
            }
        }
        None
    })
    .await
    .expect("the host reported its server in time")
    .expect("a pid");
    assert!(!process_gone(pid));
    host.kill().await.expect("SIGKILL the host");
    assert!(
        wait_gone(&[pid]).await.is_empty(),
        "the server died with its host"
    );
}
