//! Hooks: a typed `Hooks` implementation that vetoes a tool call, and command hooks loaded
//! from a `hooks.json` file.
//!
//! ```text
//! cargo run -p examples --example hooks
//! ```
//!
//! The scripted model asks for two `bash` calls. The typed hook refuses the first one (a
//! recursive delete) and the model gets its reason as the call's error result; the second
//! one runs, and the file's `afterTool` hook adds a line to its output. Command hooks are
//! child processes (`sh` here), so this example needs a Unix shell.

use agent_core::{
    async_trait,
    event::ToolStatus,
    hooks::{HookContext, Hooks, ToolDecision},
    message::ToolCall,
    Agent, AgentEvent, ContentBlock, PermissionMode,
};
use agent_hooks::HookOptions;
use agent_providers::scripted::{ScriptedProvider, Turn};
use agent_tools::ToolSet;
use futures::StreamExt;

/// Refuses shell commands that delete recursively.
struct NoRecursiveDelete;

#[async_trait]
impl Hooks for NoRecursiveDelete {
    fn name(&self) -> &str {
        "no-recursive-delete"
    }

    async fn before_tool(&self, _ctx: &HookContext, call: &ToolCall) -> ToolDecision {
        let command = call.args["command"].as_str().unwrap_or_default();
        if call.name == "bash" && command.contains("rm -r") {
            return ToolDecision::Deny {
                reason: "recursive deletes need a human".into(),
            };
        }
        ToolDecision::Allow
    }
}

/// Zero's hooks format (Claude Code's `{"hooks": {"PostToolUse": …}}` loads the same way):
/// after every `bash` call, a command whose output reaches the model.
const HOOKS_JSON: &str = r#"{
  "enabled": true,
  "hooks": [
    {"id": "lint", "event": "afterTool", "matcher": "bash",
     "command": "sh", "args": ["-c", "echo 'checked by the lint hook'"]}
  ]
}"#;

#[tokio::main(flavor = "current_thread")]
pub async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let workspace = dir.path().canonicalize()?;
    let file = workspace.join("hooks.json");
    std::fs::write(&file, HOOKS_JSON)?;
    let from_file = agent_hooks::load_file(&file, &HookOptions::new(&workspace))?;

    let provider = ScriptedProvider::new([
        Turn::new().tool_call("call_1", "bash", r#"{"command":"rm -rf build"}"#),
        Turn::new().tool_call("call_2", "bash", r#"{"command":"echo built > out.txt"}"#),
        Turn::new().text("Built it; cleaning up was not allowed."),
    ]);
    let agent = Agent::builder(provider)
        .tools(ToolSet::defaults(&workspace).into_tools())
        .cwd(&workspace)
        // No permission prompts, so only the hooks stand between the model and `bash`.
        .permission_mode(PermissionMode::Unsafe)
        .hook(NoRecursiveDelete) // consulted first
        .hook(from_file.hooks) // then the file's hooks
        .build();

    let mut results = Vec::new();
    let mut run = agent.prompt("Clean the build directory, then build.");
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::HookDecided {
                hook,
                event,
                outcome,
                reason,
                ..
            } => println!("hook {hook} at {event:?}: {outcome:?} {reason:?}"),
            AgentEvent::ToolResult {
                id,
                status,
                content,
                ..
            } => {
                let text = text_of(&content);
                println!("{id} ({status:?}): {text}");
                results.push((status, text));
            }
            AgentEvent::RunFinished { final_text, .. } => println!("answer: {final_text:?}"),
            _ => {}
        }
    }

    // The typed hook refused the delete; the command hook saw the build.
    assert_eq!(results[0].0, ToolStatus::Error);
    assert!(results[0].1.contains("recursive deletes need a human"));
    assert_eq!(results[1].0, ToolStatus::Ok);
    assert!(results[1].1.contains("checked by the lint hook"));
    assert!(workspace.join("out.txt").exists());
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
