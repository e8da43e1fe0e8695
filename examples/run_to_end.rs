//! Running to the end without the stream: `Agent::run` (and `Run::finish`) return a
//! `RunOutcome` with the status, the answer, the usage and the messages the run added.
//!
//! ```text
//! cargo run -p examples --example run_to_end
//! ```

use agent_core::{
    event::ErrorCode, provider::ProviderErrorKind, tool_fn, Agent, AgentError, RunStatus,
    ToolContext, ToolError,
};
use agent_providers::scripted::{ScriptedProvider, Turn};
use schemars::JsonSchema;
use serde::Deserialize;

/// The arguments of `add`.
#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// First term.
    a: i64,
    /// Second term.
    b: i64,
}

async fn add(args: AddArgs, _ctx: ToolContext) -> Result<String, ToolError> {
    Ok((args.a + args.b).to_string())
}

#[tokio::main(flavor = "current_thread")]
pub async fn main() -> Result<(), AgentError> {
    let provider = ScriptedProvider::new([
        Turn::new()
            .tool_call("call_1", "add", r#"{"a":2,"b":40}"#)
            .usage(30, 5),
        Turn::new().text("2 + 40 = 42.").usage(45, 6),
        Turn::new().text("Goodbye.").usage(50, 2),
        Turn::new().error(ProviderErrorKind::Auth, "invalid API key"),
    ]);
    let agent = Agent::builder(provider)
        .tool(tool_fn("add", "Adds two integers.", add))
        .build();

    // The whole run, tool call included, in one await.
    let outcome = agent.run("What is 2 + 40?").await;
    println!(
        "[{:?}] {:?}: {} messages, {} tokens in, {} out",
        outcome.status,
        outcome.text,
        outcome.messages.len(),
        outcome.usage.input,
        outcome.usage.output
    );
    assert_eq!(outcome.status, RunStatus::Success);
    assert_eq!(outcome.text.as_deref(), Some("2 + 40 = 42."));
    // The prompt, the assistant's call, the tool's result and the answer.
    assert_eq!(outcome.messages.len(), 4);
    assert_eq!((outcome.usage.input, outcome.usage.output), (75, 11));

    // `Run::finish` does the same for a run already started; `into_result` keeps only the
    // answer, or says why there is none.
    let answer = agent.prompt("Thanks, bye.").finish().await.into_result()?;
    println!("answer: {answer}");
    assert_eq!(answer, "Goodbye.");

    // A failed run is an outcome too, with its error.
    let failed = agent.run("Once more?").await;
    println!("[{:?}] {:?}", failed.status, failed.error);
    assert_eq!(failed.status, RunStatus::Error);
    match failed.into_result() {
        Err(AgentError::Run { code, message }) => {
            assert_eq!(code, ErrorCode::Provider);
            assert!(message.contains("invalid API key"));
        }
        other => panic!("expected a provider error, got {other:?}"),
    }
    Ok(())
}
