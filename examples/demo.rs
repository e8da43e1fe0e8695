//! Runs an agent on the built-in scripted demo provider and prints its event stream as JSON
//! lines. Works offline, with no API key.
//!
//! ```text
//! cargo run -p examples --example demo -- "What is in this workspace?"
//! ```

use agent_core::Agent;
use agent_providers::ScriptedProvider;
use agent_tools::ToolSet;
use futures::StreamExt;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let prompt = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let prompt = if prompt.trim().is_empty() {
        "What is in this workspace?".to_string()
    } else {
        prompt
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let agent = Agent::builder(ScriptedProvider::demo())
        .tools(ToolSet::defaults(&cwd).into_tools())
        .cwd(cwd)
        .build();
    let mut run = agent.prompt(prompt);
    while let Some(event) = run.next().await {
        match serde_json::to_string(&event) {
            Ok(line) => println!("{line}"),
            Err(err) => eprintln!("cannot serialise event: {err}"),
        }
    }
}
