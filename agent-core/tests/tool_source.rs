//! Tool sources: tools that change between model calls.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_core::{
    async_trait, event::ToolStatus, tool_source::ToolSource, Agent, AgentEvent, SideEffect, Tool,
    ToolContext, ToolError, ToolOutput,
};
use agent_providers::scripted::{ScriptedProvider, Turn};
use common::*;
use serde_json::{json, Value};

/// A named read-only tool that answers with its own name; calling it may stage a change.
struct Named {
    name: &'static str,
    on_call: Option<Arc<Source>>,
}

#[async_trait]
impl Tool for Named {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "Answers with its name."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }
    async fn call(&self, _args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        if let Some(source) = &self.on_call {
            source.pending.store(true, Ordering::SeqCst);
        }
        Ok(ToolOutput::text(format!("I am {}", self.name)))
    }
}

/// Offers `first` until a call stages a change; `refresh` then swaps in `second`.
#[derive(Default)]
struct Source {
    generation: AtomicU64,
    pending: AtomicBool,
    tools: Mutex<Vec<Arc<dyn Tool>>>,
    next: Mutex<Vec<Arc<dyn Tool>>>,
    listed: AtomicUsize,
    refreshed: AtomicUsize,
}

#[async_trait]
impl ToolSource for Source {
    fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.listed.fetch_add(1, Ordering::SeqCst);
        self.tools.lock().unwrap().clone()
    }

    async fn refresh(&self) {
        self.refreshed.fetch_add(1, Ordering::SeqCst);
        if self.pending.swap(false, Ordering::SeqCst) {
            let next = std::mem::take(&mut *self.next.lock().unwrap());
            *self.tools.lock().unwrap() = next;
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn names(specs: &[agent_core::provider::ToolSpec]) -> Vec<&str> {
    specs.iter().map(|s| s.name.as_str()).collect()
}

#[tokio::test]
async fn a_change_is_applied_before_the_next_model_call() {
    let source = Arc::new(Source::default());
    *source.tools.lock().unwrap() = vec![Arc::new(Named {
        name: "first",
        on_call: Some(source.clone()),
    })];
    *source.next.lock().unwrap() = vec![Arc::new(Named {
        name: "second",
        on_call: None,
    })];
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "first", "{}"),
        Turn::new().tool_call("c2", "second", "{}"),
        Turn::new().tool_call("c3", "first", "{}"),
        Turn::new().text("done"),
    ]);
    let agent = Agent::builder(provider.clone())
        .tool(Echo)
        .tool_source(source.clone())
        .build();
    let events = collect(agent.prompt("go")).await;

    let requests = provider.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(names(&requests[0].tools), ["echo", "first"]);
    assert_eq!(names(&requests[1].tools), ["echo", "second"]);
    assert_eq!(names(&requests[2].tools), ["echo", "second"]);
    let results: Vec<(String, ToolStatus, String)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult {
                id,
                status,
                content,
                ..
            } => Some((
                id.clone(),
                *status,
                ToolOutput {
                    content: content.clone(),
                    ..Default::default()
                }
                .text_content(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        results[0],
        ("c1".into(), ToolStatus::Ok, "I am first".into())
    );
    assert_eq!(
        results[1],
        ("c2".into(), ToolStatus::Ok, "I am second".into())
    );
    assert_eq!(results[2].1, ToolStatus::Error, "a removed tool is unknown");
    assert_eq!(source.refreshed.load(Ordering::SeqCst), 4);
    // Listed once per generation (two), not once per model call or lookup.
    assert_eq!(source.listed.load(Ordering::SeqCst), 2);
    assert_eq!(names(&agent.tool_specs()), ["echo", "second"]);
}

#[tokio::test]
async fn the_agents_own_tool_wins_over_a_source_tool_of_the_same_name() {
    let source = Arc::new(Source::default());
    *source.tools.lock().unwrap() = vec![
        Arc::new(Named {
            name: "echo",
            on_call: None,
        }),
        Arc::new(Named {
            name: "extra",
            on_call: None,
        }),
    ];
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "echo", r#"{"text":"static"}"#),
        Turn::new().text("done"),
    ]);
    let agent = Agent::builder(provider.clone())
        .tool(Echo)
        .tool_source(source)
        .build();
    let events = collect(agent.prompt("go")).await;
    assert_eq!(names(&provider.requests()[0].tools), ["echo", "extra"]);
    let output = events.iter().find_map(|e| match e {
        AgentEvent::ToolResult { content, .. } => Some(content.clone()),
        _ => None,
    });
    assert_eq!(output, Some(vec![agent_core::ContentBlock::text("static")]));
}
