//! A tool that floods progress while nobody reads the run: the tool never blocks, what
//! waits is bounded, the newest reports survive and the gap is announced.

mod common;

use std::sync::Arc;

use agent_core::progress::PROGRESS_CAPACITY;
use agent_core::{
    async_trait, event::ToolStatus, tool::ProgressStream, Agent, AgentEvent, SideEffect, Tool,
    ToolContext, ToolError, ToolOutput,
};
use agent_providers::scripted::{ScriptedProvider, Turn};
use common::*;
use serde_json::{json, Value};
use tokio::sync::Notify;

const LINES: usize = 200_000;

/// Sends `LINES` progress lines as fast as it can, then says so.
struct Flood {
    done: Arc<Notify>,
}

#[async_trait]
impl Tool for Flood {
    fn name(&self) -> &str {
        "flood"
    }
    fn description(&self) -> &str {
        "Prints a lot."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    fn side_effect(&self) -> SideEffect {
        SideEffect::None
    }
    async fn call(&self, _args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        for i in 0..LINES {
            ctx.progress
                .send(ProgressStream::Stdout, format!("line {i} of the flood"));
        }
        self.done.notify_one();
        Ok(ToolOutput::text("flooded"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_progress_flood_with_a_stalled_reader_stays_bounded() {
    let done = Arc::new(Notify::new());
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "flood", "{}"),
        Turn::new().text("done"),
    ]);
    let agent = Agent::builder(provider)
        .tool(Flood { done: done.clone() })
        .build();
    let run = agent.prompt("flood");
    // Nobody reads the run until the tool has sent everything: it must not block on us.
    tokio::time::timeout(WAIT, done.notified())
        .await
        .expect("the tool finished sending without waiting for the reader");
    let events = collect(run).await;

    let progress: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolProgress { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    // What reached the reader is bounded by the sink plus the run channel, not the flood.
    assert!(
        progress.len() <= PROGRESS_CAPACITY + 2 * 64,
        "{} progress events reached the reader",
        progress.len()
    );
    assert!(
        progress
            .iter()
            .any(|t| t.contains("progress reports dropped")),
        "the gap is announced"
    );
    let last_line = format!("line {} of the flood", LINES - 1);
    assert_eq!(progress.last().copied(), Some(last_line.as_str()));
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::ToolResult {
            status: ToolStatus::Ok,
            ..
        }
    )));
    assert!(matches!(
        events.last(),
        Some(AgentEvent::RunFinished { final_text: Some(t), .. }) if t == "done"
    ));
}
