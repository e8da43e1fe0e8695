//! File checkpoints: the before-state of the files a call is about to change, stored in the
//! session so the change can be undone.
//!
//! A checkpoint must hold the state *before* the call, but agent-core may run a tool before
//! the exec loop has read the call's `ToolCall` event. So file-writing tools are wrapped in a
//! [`CheckpointTool`] that snapshots right before the tool runs, and the session recorder
//! takes the snapshot from the shared [`Snapshots`]; whichever comes first reads the files.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use agent_core::tool::ToolWrapper;
use agent_core::{async_trait, SideEffect, Tool, ToolContext, ToolError, ToolOutput};
use serde_json::Value;

/// The before-state of one file a call is about to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSnapshot {
    /// The path as the call named it.
    pub path: String,
    /// The content before the call, or `None` when the file did not exist (or was too large
    /// or unreadable).
    pub content: Option<Vec<u8>>,
}

/// Largest file snapshotted for a checkpoint.
const MAX_SNAPSHOT_BYTES: u64 = 10 * 1024 * 1024;

fn read_snapshots(cwd: &Path, files: &[String]) -> Vec<FileSnapshot> {
    files
        .iter()
        .map(|file| {
            let path = cwd.join(file);
            let content = match std::fs::metadata(&path) {
                Ok(meta) if meta.is_file() && meta.len() <= MAX_SNAPSHOT_BYTES => {
                    std::fs::read(&path).ok()
                }
                _ => None,
            };
            FileSnapshot {
                path: file.clone(),
                content,
            }
        })
        .collect()
}

#[derive(Debug)]
enum SnapshotEntry {
    /// Taken by the tool wrapper before the tool ran; waiting for the recorder.
    Captured(Vec<FileSnapshot>),
    /// Taken by the recorder before the tool ran; the wrapper need not take it again.
    Taken,
}

/// Before-states of file-changing calls, shared by [`CheckpointTool`] (which snapshots right
/// before the tool runs) and the recorder (which records the checkpoint). Whichever comes
/// first reads the files, so the snapshot is always the state before the call: agent-core may
/// run a tool before the recorder has read the call's `ToolCall` event.
#[derive(Debug, Default)]
pub struct Snapshots {
    map: Mutex<HashMap<String, SnapshotEntry>>,
}

impl Snapshots {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, SnapshotEntry>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Called by the tool wrapper before the tool runs.
    fn before_call(&self, call_id: &str, cwd: &Path, files: &[String]) {
        let mut map = self.lock();
        match map.remove(call_id) {
            Some(SnapshotEntry::Taken) => {}
            _ => {
                map.insert(
                    call_id.to_string(),
                    SnapshotEntry::Captured(read_snapshots(cwd, files)),
                );
            }
        }
    }

    /// Called by the recorder when it records the checkpoint.
    pub(crate) fn take(&self, call_id: &str, cwd: &Path, files: &[String]) -> Vec<FileSnapshot> {
        let mut map = self.lock();
        match map.remove(call_id) {
            Some(SnapshotEntry::Captured(snapshots)) => snapshots,
            _ => {
                map.insert(call_id.to_string(), SnapshotEntry::Taken);
                read_snapshots(cwd, files)
            }
        }
    }
}

/// Wraps a file-writing tool so the files it will change are snapshotted right before it
/// runs (see [`Snapshots`]). Every other method is the wrapped tool's ([`ToolWrapper`]).
pub struct CheckpointTool {
    inner: Arc<dyn Tool>,
    snapshots: Arc<Snapshots>,
}

impl CheckpointTool {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Tool>, snapshots: Arc<Snapshots>) -> Self {
        Self { inner, snapshots }
    }
}

#[async_trait]
impl ToolWrapper for CheckpointTool {
    fn inner(&self) -> &dyn Tool {
        &*self.inner
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let files = changed_paths(Some(self.inner.side_effect()), &args);
        if !files.is_empty() {
            self.snapshots.before_call(&ctx.call_id, &ctx.cwd, &files);
        }
        self.inner.call(args, ctx).await
    }
}

/// A file's state after a checkpointed call, as its `tool_result` records it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AfterState {
    /// The path as the call named it.
    pub path: String,
    /// Its content hash ([`agent_core::rewind::content_hash`]); absent when there is no file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

/// The state of `files` (resolved against `cwd`) now, after the call that changed them.
pub fn after_states(cwd: &Path, files: &[String]) -> Vec<AfterState> {
    files
        .iter()
        .map(|file| AfterState {
            path: file.clone(),
            after: std::fs::read(cwd.join(file))
                .ok()
                .map(|data| agent_core::rewind::content_hash(&data)),
        })
        .collect()
}

/// Paths a call will change, when the tool writes files and names them.
pub fn changed_paths(side_effect: Option<SideEffect>, args: &Value) -> Vec<String> {
    if side_effect != Some(SideEffect::Write) {
        return Vec::new();
    }
    ["path", "file_path", "file"]
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str))
        .map(|p| vec![p.to_string()])
        .unwrap_or_default()
}
