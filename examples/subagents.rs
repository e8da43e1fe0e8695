//! Sub-agents: a specialist defined by a markdown manifest, run through the `Task` tool.
//!
//! ```text
//! cargo run -p examples --example subagents
//! ```
//!
//! The parent model delegates to the `summarizer` specialist with a `Task` call. The child
//! runs as a sub-agent with the specialist's system prompt and only the parent's read-only
//! tools: it reads `NOTES.md` and answers, and its answer becomes the `Task` call's result.
//! The child's events reach the parent's stream wrapped in `AgentEvent::Subagent`. One
//! scripted provider plays both: the child uses a copy of the parent's provider, and the
//! copies share the script.

use agent_core::{event::ToolStatus, Agent, AgentEvent, ContentBlock, RunStatus};
use agent_providers::scripted::{ScriptedProvider, Turn};
use agent_specialists::{parse_manifest, Location, SpecialistRegistry, TaskTools};
use agent_tools::ToolSet;
use futures::StreamExt;

/// A specialist manifest, as it would sit in `.zero/specialists/summarizer.md`.
const SUMMARIZER: &str = "---
name: summarizer
description: Reads files and summarises them in one sentence.
tools:
  - read-only
---

Read what you are pointed at and summarise it in one sentence. Never edit anything.
";

#[tokio::main(flavor = "current_thread")]
pub async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let workspace = dir.path().canonicalize()?;
    std::fs::write(
        workspace.join("NOTES.md"),
        "Release 0.2 ships on Friday.\nThe CLI gains --output-schema.\n",
    )?;

    // The built-in specialists (worker, explorer, code-review) plus ours.
    let mut registry = SpecialistRegistry::builtin();
    let path = workspace.join(".zero/specialists/summarizer.md");
    registry.insert(parse_manifest(SUMMARIZER, &path, Location::Project)?);

    let task = r#"{"name":"summarizer","description":"Summarise the notes","prompt":"Summarise NOTES.md."}"#;
    let provider = ScriptedProvider::new([
        // The parent delegates…
        Turn::new().tool_call("call_1", "Task", task),
        // …the child reads the file and answers…
        Turn::new().tool_call("child_1", "read_file", r#"{"path":"NOTES.md"}"#),
        Turn::new().text("Release 0.2 ships on Friday with --output-schema."),
        // …and the parent answers with what the child found.
        Turn::new().text("The summarizer says release 0.2 ships on Friday."),
    ]);
    let agent = Agent::builder(provider)
        .tools(ToolSet::defaults(&workspace).into_tools())
        .tools(TaskTools::new(registry).build()) // Task, TaskOutput, TaskStop
        .cwd(&workspace)
        .build();

    let mut child_tools = Vec::new();
    let mut child_answer = None;
    let mut run = agent.prompt("What do the notes say?");
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::SubagentStarted { name, model, .. } => {
                println!("sub-agent {name} started on {model}")
            }
            // The child's own events, wrapped.
            AgentEvent::Subagent { name, event, .. } => {
                if let AgentEvent::ToolResult {
                    name: tool, status, ..
                } = *event
                {
                    println!("  {name} used {tool}: {status:?}");
                    child_tools.push((tool, status));
                }
            }
            AgentEvent::SubagentFinished {
                name,
                status,
                final_text,
                ..
            } => {
                println!("sub-agent {name} finished ({status:?}): {final_text:?}");
                assert_eq!(status, RunStatus::Success);
                child_answer = final_text;
            }
            AgentEvent::ToolResult { name, content, .. } if name == "Task" => {
                println!("Task result:\n{}", text_of(&content))
            }
            AgentEvent::RunFinished { final_text, .. } => println!("answer: {final_text:?}"),
            _ => {}
        }
    }

    assert_eq!(child_tools, [("read_file".to_string(), ToolStatus::Ok)]);
    assert_eq!(
        child_answer.as_deref(),
        Some("Release 0.2 ships on Friday with --output-schema.")
    );
    Ok(())
}

/// The text blocks of a tool result.
fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}
