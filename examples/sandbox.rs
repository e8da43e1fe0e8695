//! Sandbox: a `bash` call confined to the workspace by the OS sandbox.
//!
//! ```text
//! cargo run -p examples --example sandbox
//! ```
//!
//! The policy is `workspace-write`: commands may write only in the workspace (and a private
//! temp dir), read everywhere, and reach no network. On Linux the `bash` tool enforces it
//! with Landlock and seccomp (the `agent-sandbox` crate); the agent reports what the kernel
//! enforces as `AgentEvent::SandboxReport`. The scripted model's command writes one file in
//! the workspace and one next to it: the first write works, the second is refused and
//! reported as `AgentEvent::ToolBlocked`. Where the kernel cannot confine commands, the
//! `refuse` fallback refuses the command instead of running it unconfined.

use agent_core::sandbox::{Enforcement, SandboxFallback, SandboxPolicy};
use agent_core::{Agent, AgentEvent, ContentBlock, PermissionMode};
use agent_providers::scripted::{ScriptedProvider, Turn};
use agent_tools::ToolSet;
use futures::StreamExt;

#[tokio::main(flavor = "current_thread")]
pub async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let root = dir.path().canonicalize()?;
    let workspace = root.join("workspace");
    std::fs::create_dir(&workspace)?;

    let command = r#"{"command":"echo built > out.txt && echo escaped > ../outside.txt"}"#;
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("call_1", "bash", command),
        Turn::new().text("The sandbox kept me inside the workspace."),
    ]);
    let agent = Agent::builder(provider)
        .tools(ToolSet::defaults(&workspace).into_tools())
        .cwd(&workspace)
        // `unsafe` skips permission prompts; it does not turn the sandbox off.
        .permission_mode(PermissionMode::Unsafe)
        .sandbox(SandboxPolicy::workspace_write().fallback(SandboxFallback::Refuse))
        .build();

    let mut enforced = Enforcement::None;
    let mut blocked = None;
    let mut run = agent.prompt("Build, and leave a copy next to the workspace.");
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::SandboxReport(report) => {
                println!("{}", report.summary());
                enforced = report.enforced;
            }
            AgentEvent::ToolBlocked { block, .. } => {
                println!(
                    "blocked ({:?}): {} [{:?}]",
                    block.code, block.reason, block.path
                );
                blocked = block.path;
            }
            AgentEvent::ToolResult {
                status, content, ..
            } => println!("bash ({status:?}):\n{}", text_of(&content)),
            _ => {}
        }
    }

    // Whatever the kernel supports, nothing was written outside the workspace.
    assert!(!root.join("outside.txt").exists());
    if enforced == Enforcement::Full {
        // Confined, not refused: the write inside worked and the one outside was caught.
        assert!(workspace.join("out.txt").exists());
        let path = root.join("outside.txt").display().to_string();
        assert_eq!(blocked, Some(path));
    }
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
