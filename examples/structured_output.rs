//! Typed answers with `Agent::prompt_as`, and a whole run without its stream with
//! `Agent::run`.
//!
//! ```text
//! cargo run -p examples --example structured_output
//! ```
//!
//! The scripted model's first answer does not match the schema; the agent gives it one
//! repair turn with the error, and the second answer parses.

use agent_core::{Agent, AgentError};
use agent_providers::scripted::{ScriptedProvider, Turn};
use schemars::JsonSchema;
use serde::Deserialize;

/// A summary of a code review.
#[derive(Deserialize, JsonSchema)]
struct Review {
    /// One-line verdict.
    verdict: String,
    /// Whether the change can be merged as is.
    approve: bool,
    /// Files that need another look.
    files: Vec<String>,
}

#[tokio::main(flavor = "current_thread")]
pub async fn main() -> Result<(), AgentError> {
    let provider = ScriptedProvider::new([
        // Not valid for `Review`: `approve` is missing.
        Turn::new().text(r#"{"verdict":"fine","files":[]}"#),
        Turn::new()
            .text(r#"{"verdict":"Small fix, looks right.","approve":true,"files":["src/lib.rs"]}"#),
        Turn::new().text("All done.").usage(42, 3),
    ]);
    let agent = Agent::builder(provider).build();

    let review: Review = agent.prompt_as("Review the last commit.").await?;
    println!(
        "verdict: {} (approve: {}); look again at: {}",
        review.verdict,
        review.approve,
        review.files.join(", ")
    );
    assert!(review.approve && review.files == ["src/lib.rs"]);

    // No stream needed: run to the end and look at the outcome.
    let outcome = agent.run("Anything else?").await;
    println!(
        "[{:?}] {:?} ({} messages, {} tokens in, {} out)",
        outcome.status,
        outcome.text,
        outcome.messages.len(),
        outcome.usage.input,
        outcome.usage.output
    );
    Ok(())
}
