//! Gives an agent a typed tool of your own, made from an async function with `tool_fn`, and
//! answers its permission prompts in code.
//!
//! ```text
//! cargo run -p examples --example custom_tool
//! ```

use agent_core::{
    async_trait,
    permission::{Approval, ApprovalRequest},
    tool_fn, Agent, AgentEvent, Approver, ContentBlock, PermissionMode, SideEffect, ToolContext,
    ToolError,
};
use agent_providers::scripted::{ScriptedProvider, Turn};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;

/// How urgent a note is.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Priority {
    Low,
    High,
}

/// The arguments of `note`; the doc comments become the schema's descriptions.
#[derive(Debug, Deserialize, JsonSchema)]
struct NoteArgs {
    /// What to write down.
    text: String,
    /// How urgent it is; low when absent.
    priority: Option<Priority>,
}

/// Appends a line to an in-memory notebook (a write, so it needs approval in `ask` mode).
async fn note(args: NoteArgs, ctx: ToolContext) -> Result<String, ToolError> {
    ctx.progress.status("writing the note");
    let priority = args.priority.unwrap_or(Priority::Low);
    Ok(format!("noted ({priority:?}): {}", args.text))
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
pub async fn main() {
    let note = tool_fn("note", "Writes a note for the user.", note).side_effect(SideEffect::Write);
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("call_1", "note", r#"{"text":"buy milk","priority":"high"}"#),
        Turn::new().text("I wrote the note."),
    ]);
    let agent = Agent::builder(provider)
        .tool(note)
        .permission_mode(PermissionMode::Ask)
        .approver(NotesOnly)
        .build();
    println!(
        "schema offered to the model: {}",
        agent.tool_specs()[0].parameters
    );
    let mut results = Vec::new();
    let mut run = agent.prompt("Remind me to buy milk.");
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::PermissionDecided { info, action, .. } => {
                println!("permission for {}: {action:?}", info.name)
            }
            AgentEvent::ToolProgress { text, .. } => println!("  … {text}"),
            AgentEvent::ToolResult { content, .. } => {
                println!("result: {content:?}");
                results.push(content);
            }
            AgentEvent::TextDelta { delta } => print!("{delta}"),
            AgentEvent::RunFinished { status, .. } => println!("\n[{status:?}]"),
            _ => {}
        }
    }
    assert_eq!(
        results,
        [vec![ContentBlock::text("noted (High): buy milk")]]
    );
}
