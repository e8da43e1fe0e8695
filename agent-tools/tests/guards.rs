//! The toolset under the guards of unattended runs: what each tool's call targets for
//! permission rules (a patch's files, a catalogue's own argument names, the classifier's
//! simple commands), and an `apply_patch` rewound file by file.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_core::permission::rules::{RuleAction, RuleSet, RuleSource};
use agent_core::{session::MemorySessionStore, Agent, AgentEvent, PermissionMode};
use agent_providers::scripted::{ScriptedProvider, Turn};
use agent_tools::ToolSet;
use serde_json::json;

const PATCH: &str = "*** Begin Patch\n\
                     *** Add File: src/new.rs\n+fn main() {}\n\
                     *** Update File: keep.txt\n@@\n one\n-two\n+TWO\n three\n\
                     *** Delete File: old.txt\n\
                     *** End Patch\n";

fn rules(list: &[(RuleAction, &str)]) -> RuleSet {
    let mut set = RuleSet::new();
    for (action, rule) in list {
        set.add(*action, rule, &RuleSource::Sdk).expect("valid");
    }
    set
}

fn decided(tools: &ToolSet, set: &RuleSet, name: &str, args: serde_json::Value) -> Option<String> {
    let tool = tools.get(name).expect("tool");
    let target = tool.call_target(&args);
    set.evaluate(&**tool, name, &target, tools.workspace())
        .map(|d| format!("{} {}", d.action, d.rule))
}

#[test]
fn each_tool_names_what_its_call_touches() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tools = ToolSet::defaults(dir.path());
    let patch = tools.get("apply_patch").expect("apply_patch");
    let target = patch.call_target(&json!({ "patch": PATCH }));
    assert_eq!(target.paths, ["src/new.rs", "keep.txt", "old.txt"]);
    let target = patch.call_target(&json!({ "patch": PATCH, "cwd": "sub" }));
    assert_eq!(target.paths[0], "sub/src/new.rs");

    let set = rules(&[
        (RuleAction::Deny, "Edit(./src/**)"),
        (RuleAction::Allow, "Edit"),
    ]);
    assert_eq!(
        decided(&tools, &set, "apply_patch", json!({ "patch": PATCH })),
        Some("deny Edit(./src/**)".into()),
        "one file of the patch under src/ is enough"
    );
    let outside = "*** Begin Patch\n*** Add File: docs/a.md\n+x\n*** End Patch\n";
    assert_eq!(
        decided(&tools, &set, "apply_patch", json!({ "patch": outside })),
        Some("allow Edit".into())
    );
    // The classifier's splitter: a command line of two simple commands.
    let set = rules(&[(RuleAction::Allow, "Bash(git status:*)")]);
    assert!(decided(&tools, &set, "bash", json!({"command": "git status -s"})).is_some());
    assert_eq!(
        decided(&tools, &set, "bash", json!({"command": "git status; rm x"})),
        None
    );
}

#[test]
fn a_catalogues_own_argument_names_reach_the_rules() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Zero's glob takes its directory as `cwd`; the SDK's as `path`.
    let tools = ToolSet::zero(dir.path());
    let set = rules(&[(RuleAction::Deny, "Read(./secret)")]);
    assert_eq!(
        decided(
            &tools,
            &set,
            "glob",
            json!({"pattern": "*.pem", "cwd": "secret"})
        ),
        Some("deny Read(./secret)".into())
    );
}

#[tokio::test]
async fn a_patch_is_rewound_file_by_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("keep.txt"), "one\ntwo\nthree\n").expect("write");
    std::fs::write(dir.path().join("old.txt"), "bye\n").expect("write");
    let tools = ToolSet::defaults(dir.path());
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("p1", "apply_patch", json!({ "patch": PATCH }).to_string()),
        Turn::new().text("patched"),
    ]);
    let agent = Agent::builder(provider)
        .tools(tools.into_tools())
        .permission_mode(PermissionMode::Unsafe)
        .cwd(dir.path())
        .session(Arc::new(MemorySessionStore::new()), "s")
        .build();
    let events = tokio::time::timeout(
        Duration::from_secs(30),
        agent.prompt("patch").collect_events(),
    )
    .await
    .expect("in time");
    assert!(events
        .iter()
        .any(|e| matches!(e, AgentEvent::ToolResult { status, .. }
        if *status == agent_core::event::ToolStatus::Ok)));
    let read = |rel: &str| std::fs::read_to_string(dir.path().join(rel)).ok();
    assert_eq!(read("keep.txt").as_deref(), Some("one\nTWO\nthree\n"));
    let report = agent.rewind("p1", false).await.expect("rewound");
    let mut restored = report.restored.clone();
    restored.sort();
    assert_eq!(restored, ["keep.txt", "old.txt"]);
    assert_eq!(report.deleted, ["src/new.rs"]);
    assert_eq!(read("keep.txt").as_deref(), Some("one\ntwo\nthree\n"));
    assert_eq!(read("old.txt").as_deref(), Some("bye\n"));
    assert!(!Path::new(&dir.path().join("src/new.rs")).exists());
}
