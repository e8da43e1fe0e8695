//! Context budget: usage against the context window, automatic compaction, and pinned
//! notes that survive it word for word.
//!
//! ```text
//! cargo run -p examples --example context_budget
//! ```
//!
//! The agent has a 10 000-token window and compacts at 80 %. The host pins one note and
//! the model pins another with the `note` tool; that call reports 8 600 tokens in context,
//! so before the next model call the agent replaces the older transcript with a summary
//! (one extra model call, the second scripted turn). The compacted transcript starts with
//! the summary followed by both notes, verbatim.

use agent_core::{
    context::AutoCompact, event::CompactionReason, session::SessionError, Agent, AgentEvent,
};
use agent_providers::scripted::{ScriptedProvider, Turn};
use futures::StreamExt;

const HOST_NOTE: &str = "The user prefers tabs; never touch Cargo.lock.";
const MODEL_NOTE: &str = "Deploy target: eu-west-1 (never us-east-1).";

#[tokio::main(flavor = "current_thread")]
pub async fn main() -> Result<(), SessionError> {
    let note = format!(r#"{{"text":"{MODEL_NOTE}"}}"#);
    let provider = ScriptedProvider::new([
        // The model pins a note; the provider reports 8 600 tokens in context (86 %).
        Turn::new()
            .tool_call("call_1", "note", note)
            .usage(8_500, 100),
        // Over the threshold: the agent compacts first. This turn is the summary.
        Turn::new()
            .text("The user is preparing a deploy.")
            .usage(900, 20),
        // Then the model call the run was about to make, on the compacted transcript.
        Turn::new()
            .text("Noted; I will deploy to the pinned region.")
            .usage(400, 12),
    ]);
    let agent = Agent::builder(provider)
        .note_tool()
        .context_window(10_000)
        .auto_compact(AutoCompact::At(80))
        .compact_keep_tail(2)
        .build();
    agent.pin_note(HOST_NOTE).await?;

    let mut compactions = Vec::new();
    let mut run = agent.prompt("We deploy to eu-west-1, remember that.");
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::ContextUsage {
                used,
                window,
                percent,
            } => println!("context: {used} of {window} tokens ({percent} %)"),
            AgentEvent::CompactionStarted { reason } => {
                println!("compacting ({reason:?})");
                compactions.push(reason);
            }
            AgentEvent::CompactionFinished {
                summary,
                before,
                after,
            } => println!("compacted {before} -> {after} tokens; summary: {summary}"),
            AgentEvent::RunFinished { final_text, .. } => println!("answer: {final_text:?}"),
            _ => {}
        }
    }

    let first = agent.messages()[0].text();
    println!("\nthe transcript now starts with:\n{first}");
    assert_eq!(compactions, [CompactionReason::Auto]);
    assert_eq!(agent.notes(), [HOST_NOTE, MODEL_NOTE]);
    assert!(first.contains(HOST_NOTE) && first.contains(MODEL_NOTE));
    Ok(())
}
