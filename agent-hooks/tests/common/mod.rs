//! Helpers shared by the agent-hooks integration tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use agent_core::{event::ToolStatus, AgentEvent, ContentBlock};
use serde_json::Value;

/// Every wait in these tests is bounded by this.
pub const WAIT: Duration = Duration::from_secs(30);

/// A canonical temporary workspace, removed on drop.
pub struct Workspace {
    _dir: tempfile::TempDir,
    /// Its canonical path.
    pub root: PathBuf,
}

impl Workspace {
    /// A new empty workspace.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical tempdir");
        Self { _dir: dir, root }
    }

    /// `name` inside the workspace.
    pub fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// Writes an executable `sh` script.
    pub fn script(&self, name: &str, body: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        path
    }

    /// Writes `value` as pretty JSON at `name` (creating its directories).
    pub fn write(&self, name: &str, value: &Value) -> PathBuf {
        let path = self.path(name);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        std::fs::write(&path, serde_json::to_string_pretty(value).expect("JSON")).expect("write");
        path
    }

    /// The JSON a hook wrote at `name`.
    pub fn read_json(&self, name: &str) -> Value {
        let text = std::fs::read_to_string(self.path(name)).expect("hook wrote its payload");
        serde_json::from_str(&text).expect("payload is JSON")
    }
}

/// Collects a run's events, failing the test if it does not finish in time.
pub async fn collect(run: agent_core::Run) -> Vec<AgentEvent> {
    tokio::time::timeout(WAIT, run.collect_events())
        .await
        .expect("run finished in time")
}

/// The text blocks of `content`, joined.
pub fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The status and text of the first tool result.
pub fn tool_result(events: &[AgentEvent]) -> (ToolStatus, String) {
    events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolResult {
                status, content, ..
            } => Some((*status, text_of(content))),
            _ => None,
        })
        .expect("a tool result")
}
