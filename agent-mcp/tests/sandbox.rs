//! The OS sandbox of stdio servers (off by default, per server or manager-wide), with the
//! reference `@modelcontextprotocol/server-filesystem` from npm (pinned in
//! `tests/servers`, installed on first use by `test_support::mcp`) on the real kernel:
//! Landlock and seccomp must be there (CI's kernel has them), and missing kernel support
//! fails these tests. Without Node or the packages they print a `skipped: …` line, unless
//! `AGENT_SDK_NODE=required` (CI), when they fail.
#![cfg(target_os = "linux")]

mod common;

use std::path::{Path, PathBuf};

use agent_core::sandbox::SandboxPolicy;
use agent_core::{ToolContext, ToolOutput};
use agent_mcp::{McpManager, McpOptions, ServerState};
use common::*;
use serde_json::json;
use test_support::mcp::{node, script};

fn canonical_tempdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().canonicalize().expect("canonical");
    (dir, path)
}

/// Two directories the server may use by its own rules: its workspace (its working
/// directory) and another one outside it.
struct Dirs {
    _ws: tempfile::TempDir,
    ws: PathBuf,
    _other: tempfile::TempDir,
    other: PathBuf,
}

impl Dirs {
    fn new() -> Self {
        let (_ws, ws) = canonical_tempdir();
        let (_other, other) = canonical_tempdir();
        Self {
            _ws,
            ws,
            _other,
            other,
        }
    }

    /// The `mcpServers` entry of server-filesystem with both directories as its roots,
    /// started in the workspace, plus `extra` fields.
    fn entry(&self, extra: serde_json::Value) -> serde_json::Value {
        let mut entry = json!({
            "command": node(),
            "args": [script("server-filesystem"), self.ws.display().to_string(), self.other.display().to_string()],
            "cwd": self.ws.display().to_string(),
        });
        if let (Some(entry), Some(extra)) = (entry.as_object_mut(), extra.as_object()) {
            entry.extend(extra.clone());
        }
        entry
    }
}

/// Connects the servers of a Claude-style `{"mcpServers": {...}}` file.
async fn connect(file: serde_json::Value, options: McpOptions) -> McpManager {
    let servers = agent_mcp::parse_mcp_config_file(&file.to_string()).expect("valid file");
    let manager = McpManager::connect(servers, options.connect_timeout(WAIT))
        .await
        .expect("valid config");
    for server in manager.status() {
        assert_eq!(server.state, ServerState::Connected, "{server:?}");
    }
    manager
}

/// `write_file` of server `fs`, called outside an agent.
async fn write(manager: &McpManager, server: &str, path: &Path, content: &str) -> ToolOutput {
    let tool = tool(manager, &format!("mcp_{server}_write_file"));
    let args = json!({"path": path.display().to_string(), "content": content});
    tokio::time::timeout(WAIT, tool.call(args, ToolContext::new(".")))
        .await
        .expect("call finished in time")
        .expect("the call returns a result")
}

fn is_error(output: &ToolOutput) -> bool {
    output.is_error
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confined_server_cannot_write_outside_its_workspace_and_an_unconfined_one_can() {
    if !test_support::mcp::ready() {
        return;
    }
    let dirs = Dirs::new();
    let manager = connect(
        json!({"mcpServers": {
            "boxed": dirs.entry(json!({"sandbox": "workspace-write"})),
            "open": dirs.entry(json!({})),
        }}),
        McpOptions::new(&dirs.ws),
    )
    .await;

    // Confined: the workspace is writable, the other root (allowed by the server's own
    // rules) is refused by the kernel.
    let inside = dirs.ws.join("inside.txt");
    let out = write(&manager, "boxed", &inside, "in the workspace").await;
    assert!(!is_error(&out), "{}", out.text_content());
    assert_eq!(
        std::fs::read_to_string(&inside).ok().as_deref(),
        Some("in the workspace")
    );
    let outside = dirs.other.join("outside.txt");
    let out = write(&manager, "boxed", &outside, "escaped").await;
    assert!(
        is_error(&out),
        "the confined server wrote outside: {}",
        out.text_content()
    );
    let text = out.text_content().to_lowercase();
    assert!(
        text.contains("permission denied") || text.contains("eacces"),
        "{text}"
    );
    assert!(!outside.exists());

    // Off (the default): the same write goes through.
    let out = write(&manager, "open", &outside, "allowed").await;
    assert!(!is_error(&out), "{}", out.text_content());
    assert_eq!(
        std::fs::read_to_string(&outside).ok().as_deref(),
        Some("allowed")
    );
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_managers_policy_applies_to_servers_without_their_own() {
    if !test_support::mcp::ready() {
        return;
    }
    let dirs = Dirs::new();
    let manager = connect(
        json!({"mcpServers": {
            "boxed": dirs.entry(json!({})),
            "exempt": dirs.entry(json!({"sandbox": "off"})),
        }}),
        McpOptions::new(&dirs.ws).sandbox(SandboxPolicy::read_only()),
    )
    .await;
    // read-only: not even the workspace is writable.
    let inside = dirs.ws.join("inside.txt");
    let out = write(&manager, "boxed", &inside, "x").await;
    assert!(
        is_error(&out),
        "read-only let the server write: {}",
        out.text_content()
    );
    assert!(!inside.exists());
    // A server's own `"sandbox": "off"` wins over the manager's policy.
    let out = write(&manager, "exempt", &inside, "x").await;
    assert!(!is_error(&out), "{}", out.text_content());
    assert!(inside.exists());
    manager.shutdown().await;
}
