//! Workspace confinement: every escape attempt is blocked with the right code, both in
//! `assess` (before the permission gate) and when the call runs.

use std::path::Path;

use agent_core::{
    permission::{decide, BlockCode, PermissionAction, RiskCategory, RiskLevel},
    PermissionMode, ToolContext, ToolError,
};
use agent_tools::{ToolSet, Workspace};
use serde_json::{json, Value};

struct Fixture {
    _outer: tempfile::TempDir,
    ws: std::path::PathBuf,
    outside: std::path::PathBuf,
    tools: ToolSet,
}

fn fixture() -> Fixture {
    let outer = tempfile::tempdir().unwrap();
    let ws = outer.path().join("ws");
    let outside = outer.path().join("outside");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "top secret\n").unwrap();
    std::fs::write(ws.join("inside.txt"), "hello\n").unwrap();
    let tools = ToolSet::defaults(&ws);
    Fixture {
        _outer: outer,
        ws,
        outside,
        tools,
    }
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// Asserts that `tool` refuses `args` with `code`, in assess and in call, and returns the
/// block reason.
async fn assert_blocked(f: &Fixture, tool: &str, args: Value, code: BlockCode) -> String {
    let t = f.tools.get(tool).unwrap();
    let assessment = t.assess(&args, &f.ws);
    let block = assessment
        .block
        .clone()
        .unwrap_or_else(|| panic!("{tool} {args}: not blocked ({assessment:?})"));
    assert_eq!(block.code, code, "{tool} {args}");
    assert_eq!(block.action, PermissionAction::Deny);
    assert_eq!(block.tool_name.as_deref(), Some(tool));
    assert!(block.recoverable);
    assert_eq!(block.risk.level, RiskLevel::Critical);
    assert_eq!(assessment.risk, block.risk);
    // The spine's policy denies it in every mode but unsafe.
    for mode in [
        PermissionMode::Ask,
        PermissionMode::Auto,
        PermissionMode::Plan,
    ] {
        let verdict = decide(mode, t.permission(), t.side_effect(), &assessment, false);
        assert_eq!(verdict.action, PermissionAction::Deny, "{mode:?}");
    }
    // And the tool refuses it even when called directly.
    let result = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        t.call(args.clone(), ToolContext::new(&f.ws)),
    )
    .await
    .expect("call timed out");
    match result {
        Err(ToolError::Blocked(b)) => assert_eq!(b.code, code),
        other => panic!("{tool} {args}: expected a block, got {other:?}"),
    }
    block.reason
}

#[tokio::test]
async fn dot_dot_escapes_are_blocked() {
    let f = fixture();
    let reason = assert_blocked(
        &f,
        "read_file",
        json!({"path": "../outside/secret.txt"}),
        BlockCode::OutsideWorkspace,
    )
    .await;
    assert!(reason.contains("escapes the workspace"), "{reason}");
    assert_blocked(
        &f,
        "write_file",
        json!({"path": "sub/../../x.txt", "content": "x"}),
        BlockCode::OutsideWorkspace,
    )
    .await;
    assert_blocked(
        &f,
        "edit_file",
        json!({"path": "../outside/secret.txt", "old_string": "top", "new_string": "no"}),
        BlockCode::OutsideWorkspace,
    )
    .await;
    assert_blocked(
        &f,
        "list_dir",
        json!({"path": ".."}),
        BlockCode::OutsideWorkspace,
    )
    .await;
    assert_blocked(
        &f,
        "grep",
        json!({"pattern": "secret", "path": "../outside"}),
        BlockCode::OutsideWorkspace,
    )
    .await;
    assert_blocked(
        &f,
        "glob",
        json!({"pattern": "../outside/*.txt"}),
        BlockCode::OutsideWorkspace,
    )
    .await;
    assert_blocked(
        &f,
        "glob",
        json!({"pattern": "*.txt", "path": "../outside"}),
        BlockCode::OutsideWorkspace,
    )
    .await;
    assert!(!f.ws.parent().unwrap().join("x.txt").exists());
    assert_eq!(
        std::fs::read_to_string(f.outside.join("secret.txt")).unwrap(),
        "top secret\n"
    );

    let a = f
        .tools
        .get("read_file")
        .unwrap()
        .assess(&json!({"path": "../x"}), &f.ws);
    assert!(a.risk.categories.contains(&RiskCategory::PathEscape));
    assert!(a.risk.categories.contains(&RiskCategory::OutOfWorkspace));
}

#[tokio::test]
async fn absolute_paths_outside_are_blocked() {
    let f = fixture();
    let secret = f.outside.join("secret.txt");
    let reason = assert_blocked(
        &f,
        "read_file",
        json!({"path": secret}),
        BlockCode::OutsideWorkspace,
    )
    .await;
    assert!(reason.contains("is outside the workspace"), "{reason}");
    assert_blocked(
        &f,
        "write_file",
        json!({"path": "/etc/agent-tools-test", "content": "x"}),
        BlockCode::OutsideWorkspace,
    )
    .await;
    let a = f
        .tools
        .get("read_file")
        .unwrap()
        .assess(&json!({"path": "/etc/passwd"}), &f.ws);
    assert!(a.risk.categories.contains(&RiskCategory::AbsolutePath));

    // An absolute path inside the workspace is fine (medium: absolute_path).
    let inside = f.ws.join("inside.txt");
    let t = f.tools.get("read_file").unwrap();
    let a = t.assess(&json!({"path": inside}), &f.ws);
    assert!(a.block.is_none());
    assert_eq!(a.risk.level, RiskLevel::Medium);
    let out = t
        .call(json!({"path": inside}), ToolContext::new(&f.ws))
        .await
        .unwrap();
    assert!(out.text_content().contains("hello"));
}

#[cfg(unix)]
#[tokio::test]
async fn symlinks_out_are_blocked() {
    let f = fixture();
    symlink(&f.outside.join("secret.txt"), &f.ws.join("link.txt"));
    symlink(&f.outside, &f.ws.join("linkdir"));
    symlink(&f.outside.join("new.txt"), &f.ws.join("dangling.txt"));
    let reason = assert_blocked(
        &f,
        "read_file",
        json!({"path": "link.txt"}),
        BlockCode::SymlinkTraversal,
    )
    .await;
    assert!(reason.contains("follows a symlink"), "{reason}");
    assert_blocked(
        &f,
        "read_file",
        json!({"path": "linkdir/secret.txt"}),
        BlockCode::SymlinkTraversal,
    )
    .await;
    assert_blocked(
        &f,
        "list_dir",
        json!({"path": "linkdir"}),
        BlockCode::SymlinkTraversal,
    )
    .await;
    assert_blocked(
        &f,
        "write_file",
        json!({"path": "linkdir/new.txt", "content": "x"}),
        BlockCode::SymlinkTraversal,
    )
    .await;
    // A dangling link whose target is outside: writing through it would create the file there.
    assert_blocked(
        &f,
        "write_file",
        json!({"path": "dangling.txt", "content": "x"}),
        BlockCode::SymlinkTraversal,
    )
    .await;
    assert!(!f.outside.join("new.txt").exists());
    let a = f
        .tools
        .get("read_file")
        .unwrap()
        .assess(&json!({"path": "link.txt"}), &f.ws);
    assert!(a.risk.categories.contains(&RiskCategory::SymlinkTraversal));

    // Symlinks that stay inside are fine.
    symlink(&f.ws.join("inside.txt"), &f.ws.join("alias.txt"));
    let t = f.tools.get("read_file").unwrap();
    assert!(t
        .assess(&json!({"path": "alias.txt"}), &f.ws)
        .block
        .is_none());
    let out = t
        .call(json!({"path": "alias.txt"}), ToolContext::new(&f.ws))
        .await
        .unwrap();
    assert!(out.text_content().contains("hello"));
}

#[cfg(unix)]
#[tokio::test]
async fn symlink_loops_are_blocked() {
    let f = fixture();
    symlink(&f.ws.join("loop_b"), &f.ws.join("loop_a"));
    symlink(&f.ws.join("loop_a"), &f.ws.join("loop_b"));
    symlink(Path::new("self"), &f.ws.join("self"));
    let reason = assert_blocked(
        &f,
        "read_file",
        json!({"path": "loop_a"}),
        BlockCode::SymlinkTraversal,
    )
    .await;
    assert!(reason.contains("symlink loop"), "{reason}");
    assert_blocked(
        &f,
        "write_file",
        json!({"path": "self/x.txt", "content": "x"}),
        BlockCode::SymlinkTraversal,
    )
    .await;
}

#[tokio::test]
async fn extra_roots_are_allowed() {
    let f = fixture();
    let tools = ToolSet::builder(&f.ws).allow_root(&f.outside).build();
    let secret = f.outside.join("secret.txt");
    let t = tools.get("read_file").unwrap();
    assert!(t.assess(&json!({"path": secret}), &f.ws).block.is_none());
    let out = t
        .call(json!({"path": secret}), ToolContext::new(&f.ws))
        .await
        .unwrap();
    assert!(out.text_content().contains("top secret"));
    let out = tools
        .get("read_file")
        .unwrap()
        .call(
            json!({"path": "../outside/secret.txt"}),
            ToolContext::new(&f.ws),
        )
        .await
        .unwrap();
    assert!(out.text_content().contains("top secret"));
}

#[test]
fn workspace_resolution_reports_relative_display() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    let r = ws.resolve("read_file", "./a/../b.txt").unwrap();
    assert_eq!(r.display, "b.txt");
    assert_eq!(r.path, dir.path().join("b.txt"));
    let r = ws.resolve("read_file", ".").unwrap();
    assert_eq!(r.display, ".");
}

#[tokio::test]
async fn workspace_writes_pass_under_auto_and_prompt_under_ask() {
    let f = fixture();
    let t = f.tools.get("write_file").unwrap();
    let a = t.assess(&json!({"path": "new.txt", "content": "x"}), &f.ws);
    assert_eq!(a.reason.as_deref(), Some("Creates or overwrites files."));
    assert_eq!(a.risk.level, RiskLevel::Medium);
    let auto = decide(
        PermissionMode::Auto,
        t.permission(),
        t.side_effect(),
        &a,
        false,
    );
    assert_eq!(auto.action, PermissionAction::Allow);
    let ask = decide(
        PermissionMode::Ask,
        t.permission(),
        t.side_effect(),
        &a,
        false,
    );
    assert_eq!(ask.action, PermissionAction::Prompt);
    assert_eq!(ask.reason.as_deref(), Some("Creates or overwrites files."));

    let bash = f.tools.get("bash").unwrap();
    let net = bash.assess(&json!({"command": "curl https://example.com"}), &f.ws);
    let v = decide(
        PermissionMode::Auto,
        bash.permission(),
        bash.side_effect(),
        &net,
        false,
    );
    assert_eq!(v.action, PermissionAction::Prompt);
    assert_eq!(
        v.reason.as_deref(),
        Some("network access requires approval")
    );
    let rm = bash.assess(&json!({"command": "rm -rf /"}), &f.ws);
    let v = decide(
        PermissionMode::Auto,
        bash.permission(),
        bash.side_effect(),
        &rm,
        false,
    );
    assert_eq!(v.action, PermissionAction::Prompt);
    let read = f.tools.get("read_file").unwrap();
    let a = read.assess(&json!({"path": "inside.txt"}), &f.ws);
    let v = decide(
        PermissionMode::Auto,
        read.permission(),
        read.side_effect(),
        &a,
        false,
    );
    assert_eq!(v.action, PermissionAction::Allow);
}
