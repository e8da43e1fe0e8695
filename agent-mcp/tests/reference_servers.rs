//! The manager against the MCP reference servers from npm
//! (`@modelcontextprotocol/server-everything`, `@modelcontextprotocol/server-filesystem`),
//! pinned in `tests/servers` and installed on first use by `test_support::mcp`. Without Node
//! or the packages these tests print a `skipped: …` line, unless `AGENT_SDK_NODE=required`
//! (CI), when they fail.

mod common;

use agent_core::{
    async_trait,
    event::ToolStatus,
    permission::{Approval, ApprovalRequest},
    tool_source::ToolSource,
    Agent, AgentEvent, Approver, ContentBlock, PermissionMode, RunStatus, SideEffect,
};
use agent_mcp::{McpManager, McpOptions, McpServerConfig, ServerState};
use agent_providers::scripted::{ScriptedProvider, Turn};
use common::*;
use serde_json::json;
use test_support::mcp::{node, script, HttpEverything};

fn options() -> McpOptions {
    McpOptions::new(std::env::temp_dir()).connect_timeout(WAIT)
}

fn everything_stdio() -> McpServerConfig {
    McpServerConfig::stdio("everything", node()).args([script("server-everything"), "stdio".into()])
}

/// Approves every prompt.
struct Yes;

#[async_trait]
impl Approver for Yes {
    async fn approve(&self, _request: ApprovalRequest) -> Approval {
        Approval::AllowOnce
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_stdio_through_the_agent() {
    if !test_support::mcp::ready() {
        return;
    }
    let manager = McpManager::connect(vec![everything_stdio()], options())
        .await
        .expect("valid config");
    let status = manager.status();
    assert_eq!(status[0].state, ServerState::Connected, "{status:?}");
    for name in [
        "mcp_everything_echo",
        "mcp_everything_get_sum",
        "mcp_everything_get_tiny_image",
        "mcp_everything_get_structured_content",
    ] {
        assert!(
            status[0].tools.iter().any(|t| t == name),
            "{name} in {status:?}"
        );
    }
    let pid = status[0].pid.expect("pid");
    // The server registers its task tool once initialized and announces it with
    // notifications/tools/list_changed; the next refresh (before a model call) lists again.
    let before = ToolSource::generation(&manager);
    manager.refresh().await;
    assert!(
        ToolSource::generation(&manager) > before,
        "the server's list_changed was applied"
    );
    assert!(manager.status()[0]
        .tools
        .iter()
        .any(|t| t == "mcp_everything_simulate_research_query"));

    let provider = ScriptedProvider::new([
        Turn::new()
            .tool_call(
                "e",
                "mcp_everything_echo",
                r#"{"message":"hello everything"}"#,
            )
            .tool_call("s", "mcp_everything_get_sum", r#"{"a":2,"b":40}"#)
            .tool_call("i", "mcp_everything_get_tiny_image", "{}")
            .tool_call(
                "w",
                "mcp_everything_get_structured_content",
                r#"{"location":"New York"}"#,
            ),
        Turn::new().text("all done"),
    ]);
    let agent = Agent::builder(provider.clone())
        .tool_source(manager.clone())
        .permission_mode(PermissionMode::Unsafe)
        .build();
    let events = collect(agent.prompt("use the tools")).await;
    assert_eq!(
        finished(&events),
        Some((RunStatus::Success, Some("all done".into())))
    );
    let results = tool_results(&events);
    assert!(results.iter().all(|r| r.1 == ToolStatus::Ok), "{results:?}");
    assert!(results[0].2.contains("hello everything"), "{results:?}");
    assert!(results[1].2.contains("42"), "{results:?}");
    let image = events.iter().find_map(|e| match e {
        AgentEvent::ToolResult { id, content, .. } if id == "i" => Some(content.clone()),
        _ => None,
    });
    assert!(
        image
            .unwrap_or_default()
            .iter()
            .any(|b| matches!(b, ContentBlock::Image { mime_type, data } if mime_type == "image/png" && !data.is_empty())),
        "the image came through as an image block"
    );
    assert!(results[3].2.contains("temperature"), "{results:?}");
    // The results reached the model.
    let second = &provider.requests()[1];
    assert!(second.messages.iter().any(|m| m
        .content
        .iter()
        .any(|b| matches!(b, ContentBlock::ToolResult { call_id, .. } if call_id == "s"))));

    drop(agent);
    drop(manager);
    assert!(
        wait_gone(&[pid]).await.is_empty(),
        "no server left after drop"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborting_a_long_operation_of_the_reference_server() {
    if !test_support::mcp::ready() {
        return;
    }
    let manager = McpManager::connect(vec![everything_stdio()], options())
        .await
        .expect("valid config");
    let pid = manager.status()[0].pid.expect("pid");
    let provider = ScriptedProvider::new([
        Turn::new().tool_call(
            "long",
            "mcp_everything_trigger_long_running_operation",
            r#"{"duration":300,"steps":300}"#,
        ),
        Turn::new().text("never"),
    ]);
    let agent = Agent::builder(provider)
        .tool_source(manager.clone())
        .build();
    let mut run = agent.prompt("wait");
    until(&mut run, |e| {
        matches!(e, AgentEvent::ToolExecutionStarted { .. })
    })
    .await;
    run.abort();
    let rest = collect(run).await;
    assert_eq!(finished(&rest).map(|f| f.0), Some(RunStatus::Aborted));
    // The server carries on serving.
    let echo = call(
        &manager,
        "mcp_everything_echo",
        json!({"message": "still here"}),
    )
    .await;
    assert!(echo.text_content().contains("still here"));
    manager.shutdown().await;
    assert!(wait_gone(&[pid]).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filesystem_reads_freely_and_writes_only_when_approved() {
    if !test_support::mcp::ready() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::write(root.join("notes.txt"), "remember the milk").expect("write");
    let config = McpServerConfig::stdio("fs", node())
        .args([script("server-filesystem"), root.display().to_string()]);
    let manager = McpManager::connect(vec![config], options())
        .await
        .expect("valid config");
    assert_eq!(manager.status()[0].state, ServerState::Connected);
    assert_eq!(
        manager
            .tool_info("mcp_fs_read_text_file")
            .map(|t| t.side_effect),
        Some(SideEffect::Read)
    );
    assert_eq!(
        manager
            .tool_info("mcp_fs_write_file")
            .map(|t| (t.side_effect, t.destructive_hint)),
        Some((SideEffect::Network, Some(true)))
    );
    let path = root.join("notes.txt").display().to_string();
    let out = root.join("out.txt").display().to_string();

    // No approver: the read runs, the write is refused.
    let provider = ScriptedProvider::new([
        Turn::new()
            .tool_call(
                "r",
                "mcp_fs_read_text_file",
                json!({"path": path}).to_string(),
            )
            .tool_call(
                "w",
                "mcp_fs_write_file",
                json!({"path": out, "content": "x"}).to_string(),
            ),
        Turn::new().text("done"),
    ]);
    let agent = Agent::builder(provider)
        .tool_source(manager.clone())
        .build();
    let results = tool_results(&collect(agent.prompt("read and write")).await);
    assert_eq!(results[0].1, ToolStatus::Ok, "{results:?}");
    assert!(results[0].2.contains("remember the milk"), "{results:?}");
    assert_eq!(results[1].1, ToolStatus::Error, "{results:?}");
    assert!(!root.join("out.txt").exists());

    // Approved: the write happens.
    let provider = ScriptedProvider::new([
        Turn::new().tool_call(
            "w",
            "mcp_fs_write_file",
            json!({"path": out, "content": "written over MCP"}).to_string(),
        ),
        Turn::new().text("done"),
    ]);
    let agent = Agent::builder(provider)
        .tool_source(manager.clone())
        .approver(Yes)
        .build();
    let events = collect(agent.prompt("write")).await;
    assert_eq!(tool_results(&events)[0].1, ToolStatus::Ok, "{events:?}");
    assert_eq!(
        std::fs::read_to_string(root.join("out.txt")).expect("written"),
        "written over MCP"
    );
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_streamable_http() {
    if !test_support::mcp::ready() {
        return;
    }
    let server = HttpEverything::start();
    let manager = McpManager::connect(
        vec![McpServerConfig::http("web", server.url()).header("X-Test", "1")],
        options(),
    )
    .await
    .expect("valid config");
    let status = manager.status();
    assert_eq!(status[0].state, ServerState::Connected, "{status:?}");
    let provider = ScriptedProvider::new([
        Turn::new()
            .tool_call("e", "mcp_web_echo", r#"{"message":"over streamable http"}"#)
            .tool_call("s", "mcp_web_get_sum", r#"{"a":1,"b":2}"#),
        Turn::new().text("done"),
    ]);
    let agent = Agent::builder(provider)
        .tool_source(manager.clone())
        .build();
    let events = collect(agent.prompt("echo")).await;
    let results = tool_results(&events);
    assert!(results.iter().all(|r| r.1 == ToolStatus::Ok), "{results:?}");
    assert!(results[0].2.contains("over streamable http"), "{results:?}");
    assert!(results[1].2.contains('3'), "{results:?}");
    manager.shutdown().await;
    drop(server);
}
