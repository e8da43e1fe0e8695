//! Tool error text is scrubbed like tool output: a registered secret in an error message
//! reaches neither the model, the events nor the session.

mod common;

use std::sync::Arc;

use agent_core::secrets::REDACTED;
use agent_core::{
    async_trait,
    event::ToolStatus,
    permission::{Block, BlockCode, PermissionAction, Risk},
    secrets::register_secret,
    session::{MemorySessionStore, SessionStore},
    Agent, AgentEvent, ContentBlock, SideEffect, Tool, ToolContext, ToolError, ToolOutput,
};
use agent_providers::scripted::{ScriptedProvider, Turn};
use common::*;
use serde_json::{json, Value};

/// Reads a file, failing the way file tools do: the error names the path.
struct ReadFile;

#[async_trait]
impl Tool for ReadFile {
    fn name(&self) -> &str {
        "read_file"
    }
    fn description(&self) -> &str {
        "Reads a file."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
    }
    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }
    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let path = args["path"].as_str().unwrap_or_default();
        let full = ctx.cwd.join(path);
        let text = std::fs::read_to_string(&full)
            .map_err(|e| ToolError::io(format!("reading {}", full.display()), e))?;
        Ok(ToolOutput::text(text))
    }
}

fn texts(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_secret_in_a_tool_error_is_redacted_everywhere() {
    let key = "sk-test-scrub-0123456789abcdef";
    register_secret(key);
    let dir = tempfile_dir();
    let store = Arc::new(MemorySessionStore::new());
    let provider = ScriptedProvider::new([
        Turn::new()
            .tool_call("c1", "read_file", json!({ "path": key }).to_string())
            .tool_call("c2", key, "{}"),
        Turn::new().text("could not read it"),
    ]);
    let agent = Agent::builder(provider.clone())
        .tool(ReadFile)
        .cwd(&dir)
        .session(store.clone(), "s")
        .build();
    let events = collect(agent.prompt("read the file")).await;

    let results: Vec<(String, ToolStatus, String, bool)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult {
                id,
                status,
                content,
                redacted,
                ..
            } => Some((id.clone(), *status, texts(content), *redacted)),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    for (id, status, text, redacted) in &results {
        assert_eq!(*status, ToolStatus::Error, "{id}");
        assert!(text.contains(REDACTED), "{id}: {text}");
        assert!(!text.contains(key), "{id}: {text}");
        assert!(redacted, "{id} is marked redacted");
    }
    assert!(results[0].2.starts_with("reading "), "{}", results[0].2);
    assert!(results[1].2.contains("unknown tool"), "{}", results[1].2);

    // The model's next request and the session hold the scrubbed text only.
    let second = &provider.requests()[1];
    let tool_message = second.messages.last().expect("tool results message");
    let serialized = serde_json::to_string(tool_message).expect("serialises");
    assert!(serialized.contains(REDACTED));
    assert!(!serialized.contains(key), "{serialized}");
    let records = store.load("s").await.expect("session loads");
    let results_record = records
        .iter()
        .map(|r| serde_json::to_string(r).expect("serialises"))
        .find(|r| r.contains("\"tool_result\""))
        .expect("the results are recorded");
    assert!(results_record.contains(REDACTED));
    assert!(!results_record.contains(key), "{results_record}");
}

/// Fails the way `bash` does when the OS sandbox refuses a write: a block quoting the path.
struct Touch;

#[async_trait]
impl Tool for Touch {
    fn name(&self) -> &str {
        "touch"
    }
    fn description(&self) -> &str {
        "Creates a file."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
    }
    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }
    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let path = format!("/home/u/{}", args["path"].as_str().unwrap_or_default());
        Err(ToolError::Blocked(Box::new(Block {
            code: BlockCode::Sandbox,
            tool_name: Some("touch".into()),
            action: PermissionAction::Deny,
            risk: Risk::default(),
            reason: format!("touch: cannot touch '{path}': Permission denied"),
            path: Some(path),
            recoverable: true,
        })))
    }
}

#[tokio::test]
async fn a_secret_in_a_sandbox_block_is_redacted() {
    let key = "sk-test-scrub-block-0123456789abcdef";
    register_secret(key);
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "touch", json!({ "path": key }).to_string()),
        Turn::new().text("refused"),
    ]);
    let agent = Agent::builder(provider).tool(Touch).build();
    let events = collect(agent.prompt("touch it")).await;
    let block = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolBlocked { block, .. } => Some(block.clone()),
            _ => None,
        })
        .expect("a ToolBlocked event");
    let path = block.path.as_deref().expect("the block keeps its path");
    assert!(!path.contains(key), "{path}");
    assert!(path.contains(REDACTED), "{path}");
    assert!(!block.reason.contains(key), "{}", block.reason);
    assert!(block.reason.contains(REDACTED), "{}", block.reason);
    // (The model's own arguments, in its tool call, are what the model wrote.)
    let result = events
        .iter()
        .find(|e| matches!(e, AgentEvent::ToolResult { .. }))
        .expect("a result");
    let result = serde_json::to_string(result).expect("serialises");
    assert!(!result.contains(key), "{result}");
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("agent-core-scrub-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}
