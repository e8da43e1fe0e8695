//! Test tools and helpers shared by the agent-core integration tests.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    async_trait,
    permission::{Approval, ApprovalRequest},
    AgentEvent, Approver, Run, SideEffect, Tool, ToolContext, ToolError, ToolOutput,
};
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::sync::{mpsc, Notify};

/// Every wait in these tests is bounded by this.
pub const WAIT: Duration = Duration::from_secs(10);

/// Collects a run's events, failing the test if it does not finish in time.
pub async fn collect(run: Run) -> Vec<AgentEvent> {
    tokio::time::timeout(WAIT, run.collect_events())
        .await
        .expect("run finished in time")
}

/// Reads events until `pred` matches one; returns everything read so far.
pub async fn until(run: &mut Run, pred: impl Fn(&AgentEvent) -> bool) -> Vec<AgentEvent> {
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

/// Short names of events, for order assertions.
pub fn kinds(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            let v = serde_json::to_value(e).expect("events serialise");
            let kind = v["type"].as_str().unwrap_or("?").to_string();
            match e {
                AgentEvent::TurnEnded { stop, .. } => format!("{kind}:{stop:?}"),
                AgentEvent::RequestStarted { scope, .. } => format!("{kind}:{scope:?}"),
                AgentEvent::ToolResult { id, .. }
                | AgentEvent::ToolExecutionStarted { id, .. }
                | AgentEvent::ToolCall { id, .. } => format!("{kind}:{id}"),
                AgentEvent::RunFinished { status, .. } => format!("{kind}:{status:?}"),
                _ => kind,
            }
        })
        .collect()
}

/// A read-only tool that echoes its `text` argument.
pub struct Echo;

#[async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Echoes text."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}})
    }
    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }
    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(args["text"].as_str().unwrap_or_default()))
    }
}

/// A write tool that counts its calls.
#[derive(Default, Clone)]
pub struct Write {
    pub calls: Arc<AtomicUsize>,
}

#[async_trait]
impl Tool for Write {
    fn name(&self) -> &str {
        "write"
    }
    fn description(&self) -> &str {
        "Writes."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn side_effect(&self) -> SideEffect {
        SideEffect::Write
    }
    async fn call(&self, _args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput {
            changed_files: vec!["out.txt".into()],
            ..ToolOutput::text("written")
        })
    }
}

/// A read tool that reports progress, then waits until `release` is notified or it is
/// cancelled. Announces each start on `started`.
#[derive(Clone)]
pub struct Gate {
    pub name: &'static str,
    pub release: Arc<Notify>,
    pub started: mpsc::UnboundedSender<String>,
}

#[async_trait]
impl Tool for Gate {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "Waits for a signal."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }
    async fn call(&self, _args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let _ = self.started.send(ctx.call_id.clone());
        ctx.progress.status(format!("{} waiting", self.name));
        tokio::select! {
            _ = self.release.notified() => Ok(ToolOutput::text(format!("{} released", self.name))),
            _ = ctx.cancel.cancelled() => Err(ToolError::Cancelled("context canceled".into())),
        }
    }
}

/// An approver answering from a queue of scripted decisions; `None` never answers.
pub struct Scripted {
    pub answers: std::sync::Mutex<Vec<Option<Approval>>>,
    pub asked: mpsc::UnboundedSender<ApprovalRequest>,
}

#[async_trait]
impl Approver for Scripted {
    async fn approve(&self, request: ApprovalRequest) -> Approval {
        let _ = self.asked.send(request);
        let answer = {
            let mut answers = self.answers.lock().expect("lock");
            if answers.is_empty() {
                None
            } else {
                answers.remove(0)
            }
        };
        match answer {
            Some(a) => a,
            None => std::future::pending().await,
        }
    }
}
