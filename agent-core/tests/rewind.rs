//! Rewinding files to a checkpoint, end to end on the scripted provider with a file-writing
//! tool: three edits undone byte for byte, the transcript cut (and kept cut on resume), and a
//! file changed by someone else reported and left alone unless forced.

mod common;

use std::path::Path;
use std::sync::Arc;

use agent_core::{
    rewind::{FileAction, RewindError},
    session::MemorySessionStore,
    Agent, PermissionMode, SideEffect, Tool, ToolContext, ToolError, ToolOutput,
};
use agent_providers::scripted::{ScriptedProvider, Turn};
use common::*;
use serde_json::{json, Value};

/// Writes `content` (hex-encoded bytes when `hex` is set) to `path` in the workspace.
struct Put;

#[agent_core::async_trait]
impl Tool for Put {
    fn name(&self) -> &str {
        "put"
    }
    fn description(&self) -> &str {
        "Writes a file."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn side_effect(&self) -> SideEffect {
        SideEffect::Write
    }
    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let path = ctx.cwd.join(args["path"].as_str().unwrap_or("x"));
        std::fs::write(&path, args["content"].as_str().unwrap_or_default())
            .map_err(|e| ToolError::io("write", e))?;
        Ok(ToolOutput::text("written"))
    }
}

fn put(id: &str, path: &str, content: &str) -> Turn {
    Turn::new().tool_call(
        id,
        "put",
        json!({"path": path, "content": content}).to_string(),
    )
}

const ORIGINAL: &[u8] = b"v0 \xff\xfe binary\r\n\x00tail";

fn agent(dir: &Path, store: Arc<MemorySessionStore>, turns: Vec<Turn>) -> Agent {
    Agent::builder(ScriptedProvider::new(turns))
        .tool(Put)
        .permission_mode(PermissionMode::Unsafe)
        .cwd(dir)
        .session(store, "s1")
        .build()
}

#[tokio::test]
async fn three_edits_rewound_to_the_first_restore_every_byte_and_cut_the_transcript() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.txt"), ORIGINAL).expect("write");
    let store = Arc::new(MemorySessionStore::new());
    let agent = agent(
        dir.path(),
        store.clone(),
        vec![
            put("c1", "a.txt", "v1"),
            put("c2", "a.txt", "v2"),
            Turn::new()
                .tool_call(
                    "c3",
                    "put",
                    json!({"path": "a.txt", "content": "v3"}).to_string(),
                )
                .tool_call(
                    "c4",
                    "put",
                    json!({"path": "new.txt", "content": "n"}).to_string(),
                ),
            Turn::new().text("edited"),
        ],
    );
    let _ = collect(agent.prompt("edit it three times")).await;
    assert_eq!(
        std::fs::read(dir.path().join("a.txt")).expect("read"),
        b"v3"
    );
    let ids: Vec<String> = agent
        .checkpoints()
        .await
        .expect("listed")
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(ids, ["c1", "c2", "c3", "c4"]);
    let before = agent.messages().len();

    let plan = agent.rewind_plan("c1").await.expect("planned");
    assert_eq!(plan.undone, ["c1", "c2", "c3", "c4"]);
    let actions: Vec<(&str, FileAction, bool)> = plan
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.action, f.changed_since))
        .collect();
    assert_eq!(
        actions,
        [
            ("a.txt", FileAction::Restore, false),
            ("new.txt", FileAction::Delete, false)
        ]
    );
    assert_eq!(plan.kept_messages, 1, "the prompt only");
    assert_eq!(plan.dropped_messages, before - 1);

    let report = agent.rewind("c1", false).await.expect("rewound");
    assert_eq!(report.restored, ["a.txt"]);
    assert_eq!(report.deleted, ["new.txt"]);
    assert!(report.conflicts.is_empty() && report.skipped.is_empty());
    assert_eq!(
        std::fs::read(dir.path().join("a.txt")).expect("read"),
        ORIGINAL,
        "byte for byte"
    );
    assert!(!dir.path().join("new.txt").exists());
    let messages = agent.messages();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].text(), "edit it three times");
    // The checkpoints are gone with what they undid; the session resumes cut.
    assert!(agent.checkpoints().await.expect("listed").is_empty());
    assert!(matches!(
        agent.rewind_plan("c2").await,
        Err(RewindError::NotFound(id)) if id == "c2"
    ));
    let resumed = Agent::builder(ScriptedProvider::new([]))
        .resume(store, "s1")
        .await
        .expect("resumes")
        .build();
    assert_eq!(resumed.messages().len(), 1);
}

#[tokio::test]
async fn a_file_changed_since_is_reported_and_kept_unless_forced() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.txt"), "original").expect("write");
    let store = Arc::new(MemorySessionStore::new());
    let agent = agent(
        dir.path(),
        store,
        vec![
            put("c1", "a.txt", "agent's"),
            put("c2", "b.txt", "agent's b"),
            Turn::new().text("done"),
        ],
    );
    let _ = collect(agent.prompt("edit")).await;
    // Someone else edits a.txt after the agent.
    std::fs::write(dir.path().join("a.txt"), "the user's own edit").expect("write");

    let plan = agent.rewind_plan("c1").await.expect("planned");
    let conflicts: Vec<&str> = plan.conflicts().map(|f| f.path.as_str()).collect();
    assert_eq!(conflicts, ["a.txt"]);
    let note = plan.files[0].note.as_deref().unwrap_or_default();
    assert!(note.contains("its content changed"), "{note}");

    let report = agent.rewind("c1", false).await.expect("rewound");
    assert_eq!(report.conflicts, ["a.txt"]);
    assert_eq!(report.deleted, ["b.txt"]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).expect("read"),
        "the user's own edit",
        "not overwritten"
    );
}

#[tokio::test]
async fn a_forced_rewind_overwrites_a_file_changed_since() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.txt"), "original").expect("write");
    let store = Arc::new(MemorySessionStore::new());
    let agent = agent(
        dir.path(),
        store,
        vec![put("c1", "a.txt", "agent's"), Turn::new().text("done")],
    );
    let _ = collect(agent.prompt("edit")).await;
    std::fs::remove_file(dir.path().join("a.txt")).expect("rm");
    let report = agent.rewind("c1", true).await.expect("rewound");
    assert_eq!(report.restored, ["a.txt"]);
    assert!(report.conflicts.is_empty());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).expect("read"),
        "original"
    );
}

#[tokio::test]
async fn without_a_session_there_are_no_checkpoints() {
    let agent = Agent::builder(ScriptedProvider::new([])).build();
    assert!(matches!(
        agent.checkpoints().await,
        Err(RewindError::NoSession)
    ));
}
