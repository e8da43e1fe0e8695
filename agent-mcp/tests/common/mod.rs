//! Helpers shared by the agent-mcp integration tests.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use agent_core::{event::ToolStatus, AgentEvent, ContentBlock, Run, Tool, ToolContext, ToolOutput};
use agent_mcp::{McpManager, McpServerConfig};
use serde_json::Value;

/// Every wait in these tests is bounded by this.
pub const WAIT: Duration = Duration::from_secs(30);

/// The fixture server (`fixtures/mcp_fixture.rs`) as server `name`.
pub fn fixture(name: &str) -> McpServerConfig {
    McpServerConfig::stdio(name, env!("CARGO_BIN_EXE_agent-mcp-fixture"))
}

/// Collects a run's events, failing the test if it does not finish in time.
pub async fn collect(run: Run) -> Vec<AgentEvent> {
    tokio::time::timeout(WAIT, run.collect_events())
        .await
        .expect("run finished in time")
}

/// Reads events until `pred` matches one; returns everything read so far.
pub async fn until(run: &mut Run, pred: impl Fn(&AgentEvent) -> bool) -> Vec<AgentEvent> {
    use futures::StreamExt;
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(WAIT, run.next())
            .await
            .expect("event in time")
            .expect("stream still open");
        let hit = pred(&event);
        seen.push(event);
        if hit {
            return seen;
        }
    }
}

/// The text of content blocks.
pub fn text_of(content: &[ContentBlock]) -> String {
    ToolOutput {
        content: content.to_vec(),
        ..Default::default()
    }
    .text_content()
}

/// `(name, status, text)` of every tool result in `events`.
pub fn tool_results(events: &[AgentEvent]) -> Vec<(String, ToolStatus, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult {
                name,
                status,
                content,
                ..
            } => Some((name.clone(), *status, text_of(content))),
            _ => None,
        })
        .collect()
}

/// The final status of a run.
pub fn finished(events: &[AgentEvent]) -> Option<(agent_core::RunStatus, Option<String>)> {
    events.iter().rev().find_map(|e| match e {
        AgentEvent::RunFinished { status, final_text } => Some((*status, final_text.clone())),
        _ => None,
    })
}

/// The manager's tool called `name`.
pub fn tool(manager: &McpManager, name: &str) -> Arc<dyn Tool> {
    manager
        .tools()
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

/// Calls a tool outside an agent, bounded by [`WAIT`].
pub async fn call(manager: &McpManager, name: &str, args: Value) -> ToolOutput {
    let tool = tool(manager, name);
    tokio::time::timeout(WAIT, tool.call(args, ToolContext::new(".")))
        .await
        .expect("call finished in time")
        .expect("call succeeded")
}

/// From [`test_support::procs`] (not every test binary uses it).
#[allow(unused_imports)]
pub use test_support::procs::gone as process_gone;

/// Waits (bounded by [`WAIT`]) until every pid is gone; returns those still alive.
pub async fn wait_gone(pids: &[u32]) -> Vec<u32> {
    test_support::procs::wait_gone(pids, WAIT).await
}
