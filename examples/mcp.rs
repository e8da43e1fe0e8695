//! MCP: the tools of a Model Context Protocol server as agent tools.
//!
//! ```text
//! cargo build -p agent-mcp --bin agent-mcp-fixture
//! cargo run -p examples --example mcp -- target/debug/agent-mcp-fixture
//! ```
//!
//! The argument is the command line of a stdio MCP server; the scripted model calls its
//! `echo` tool with `{"text": …}`, which the small Rust test server of `agent-mcp` offers.
//! The manager starts the server, lists its tools, and offers each as
//! `mcp_<server>_<tool>`; the agent asks it for the current list before every model call.
//! The same manager connects streamable-HTTP servers (`McpServerConfig::http`).

use agent_core::{event::ToolStatus, Agent, AgentEvent, ContentBlock};
use agent_mcp::{McpManager, McpOptions, McpServerConfig};
use agent_providers::scripted::{ScriptedProvider, Turn};
use futures::StreamExt;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut command = std::env::args().skip(1);
    let Some(program) = command.next() else {
        eprintln!("usage: mcp SERVER-COMMAND [ARGS…]  (e.g. target/debug/agent-mcp-fixture)");
        std::process::exit(2);
    };
    let server = McpServerConfig::stdio("demo", program).args(command);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let answer = runtime.block_on(run(server))?;
    println!("answer: {answer}");
    Ok(())
}

/// Connects `server` (named `demo`), lets the model call its `echo` tool, and returns the
/// tool's answer.
pub async fn run(server: McpServerConfig) -> Result<String, Box<dyn std::error::Error>> {
    let mcp = McpManager::connect(vec![server], McpOptions::new(std::env::current_dir()?)).await?;
    for server in mcp.status() {
        println!(
            "{}: {:?}, tools {:?}",
            server.name, server.state, server.tools
        );
    }

    let provider = ScriptedProvider::new([
        // Server `demo`, tool `echo`.
        Turn::new().tool_call("call_1", "mcp_demo_echo", r#"{"text":"hello over MCP"}"#),
        Turn::new().text("The server echoed my greeting."),
    ]);
    let agent = Agent::builder(provider).tool_source(mcp.clone()).build();

    let mut echoed = None;
    let mut run = agent.prompt("Greet the MCP server.");
    while let Some(event) = run.next().await {
        if let AgentEvent::ToolResult {
            name,
            status,
            content,
            ..
        } = event
        {
            let text = text_of(&content);
            println!("{name} ({status:?}): {text}");
            if status == ToolStatus::Ok {
                echoed = Some(text);
            }
        }
    }
    // Ends the server process (dropping the last handle would too).
    mcp.shutdown().await;
    echoed.ok_or_else(|| "the echo call failed".into())
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
