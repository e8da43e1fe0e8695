//! Gives an agent a tool of your own and answers its permission prompts in code.
//!
//! ```text
//! cargo run -p examples --example custom_tool
//! ```

use agent_core::{
    async_trait, Agent, AgentEvent, Approval, ApprovalRequest, Approver, PermissionMode,
    SideEffect, Tool, ToolContext, ToolError, ToolOutput,
};
use agent_providers::scripted::{ScriptedProvider, Turn};
use futures::StreamExt;
use serde_json::{json, Value};

/// Appends a line to an in-memory notebook; a write, so it needs approval in `ask` mode.
struct Note;

#[async_trait]
impl Tool for Note {
    fn name(&self) -> &str {
        "note"
    }
    fn description(&self) -> &str {
        "Writes a note for the user."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    }
    fn side_effect(&self) -> SideEffect {
        SideEffect::Write
    }
    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let text = args["text"]
            .as_str()
            .ok_or_else(|| ToolError::InvalidArguments("`text` must be a string".into()))?;
        ctx.progress.status("writing the note");
        Ok(ToolOutput::text(format!("noted: {text}")))
    }
}

/// Approves notes and refuses everything else.
struct NotesOnly;

#[async_trait]
impl Approver for NotesOnly {
    async fn approve(&self, request: ApprovalRequest) -> Approval {
        println!("? approve {} {}", request.tool, request.args);
        match request.tool.as_str() {
            "note" => Approval::AllowOnce,
            _ => Approval::Deny {
                reason: Some("only notes are allowed".into()),
            },
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("call_1", "note", r#"{"text":"buy milk"}"#),
        Turn::new().text("I wrote the note."),
    ]);
    let agent = Agent::builder(provider)
        .tool(Note)
        .permission_mode(PermissionMode::Ask)
        .approver(NotesOnly)
        .build();
    let mut run = agent.prompt("Remind me to buy milk.");
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::PermissionDecided { info, action, .. } => {
                println!("permission for {}: {action:?}", info.name)
            }
            AgentEvent::ToolProgress { text, .. } => println!("  … {text}"),
            AgentEvent::ToolResult { content, .. } => println!("result: {content:?}"),
            AgentEvent::TextDelta { delta } => print!("{delta}"),
            AgentEvent::RunFinished { status, .. } => println!("\n[{status:?}]"),
            _ => {}
        }
    }
}
