//! `apply_patch`: both formats, all files or none, confinement.

use std::path::Path;
use std::time::Duration;

use agent_core::{permission::PermissionAction, ToolContext, ToolError, ToolOutput};
use agent_tools::ToolSet;
use serde_json::{json, Value};

fn setup() -> (tempfile::TempDir, ToolSet) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("keep.txt"), "one\ntwo\nthree\n").expect("write");
    std::fs::write(dir.path().join("old.txt"), "bye\n").expect("write");
    let tools = ToolSet::defaults(dir.path());
    (dir, tools)
}

async fn call(tools: &ToolSet, args: Value) -> Result<ToolOutput, ToolError> {
    let tool = tools
        .get("apply_patch")
        .expect("apply_patch is a default tool");
    let ctx = ToolContext::new(tools.workspace());
    tokio::time::timeout(Duration::from_secs(30), tool.call(args, ctx))
        .await
        .expect("apply_patch timed out")
}

fn read(dir: &Path, rel: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(rel)).ok()
}

#[tokio::test]
async fn a_structured_patch_adds_updates_and_deletes_across_three_files() {
    let (dir, tools) = setup();
    let patch = "*** Begin Patch\n\
                 *** Add File: src/new.rs\n+fn main() {}\n\
                 *** Update File: keep.txt\n@@\n one\n-two\n+TWO\n three\n\
                 *** Delete File: old.txt\n\
                 *** End Patch\n";
    let out = call(&tools, json!({ "patch": patch }))
        .await
        .expect("applies");
    assert_eq!(out.text_content(), "Patch applied successfully.");
    assert!(!out.is_error);
    assert_eq!(out.changed_files, ["src/new.rs", "keep.txt", "old.txt"]);
    assert_eq!(
        read(dir.path(), "src/new.rs").as_deref(),
        Some("fn main() {}\n")
    );
    assert_eq!(
        read(dir.path(), "keep.txt").as_deref(),
        Some("one\nTWO\nthree\n")
    );
    assert_eq!(read(dir.path(), "old.txt"), None);
}

#[tokio::test]
async fn a_unified_diff_applies_in_a_subdirectory_and_moves() {
    let (dir, tools) = setup();
    std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
    std::fs::write(dir.path().join("sub/a.txt"), "x\ny\nz\n").expect("write");
    let patch =
        "diff --git a/a.txt b/b.txt\n--- a/a.txt\n+++ b/b.txt\n@@ -1,3 +1,3 @@\n x\n-y\n+Y\n z\n\
                 --- /dev/null\n+++ b/c.txt\n@@ -0,0 +1 @@\n+c\n";
    let out = call(&tools, json!({ "patch": patch, "cwd": "sub" }))
        .await
        .expect("applies");
    assert_eq!(out.text_content(), "Patch applied successfully in sub.");
    assert_eq!(read(dir.path(), "sub/b.txt").as_deref(), Some("x\nY\nz\n"));
    assert_eq!(read(dir.path(), "sub/a.txt"), None);
    assert_eq!(read(dir.path(), "sub/c.txt").as_deref(), Some("c\n"));
    assert_eq!(out.changed_files, ["sub/b.txt", "sub/a.txt", "sub/c.txt"]);
}

#[tokio::test]
async fn a_bad_hunk_changes_nothing_and_is_named() {
    let (dir, tools) = setup();
    let patch = "*** Begin Patch\n\
                 *** Add File: created.txt\n+new\n\
                 *** Delete File: old.txt\n\
                 *** Update File: keep.txt\n@@\n-one\n+ONE\n@@\n-four\n+FOUR\n\
                 *** End Patch";
    let err = call(&tools, json!({ "patch": patch }))
        .await
        .expect_err("the second hunk does not apply");
    let text = err.to_string();
    assert!(
        text.starts_with("Error applying patch: hunk 2 of keep.txt (patch line 9) did not apply"),
        "{text}"
    );
    assert!(text.contains("four"), "{text}");
    assert_eq!(read(dir.path(), "created.txt"), None, "nothing was added");
    assert_eq!(
        read(dir.path(), "old.txt").as_deref(),
        Some("bye\n"),
        "nothing deleted"
    );
    assert_eq!(
        read(dir.path(), "keep.txt").as_deref(),
        Some("one\ntwo\nthree\n")
    );
}

#[tokio::test]
async fn paths_outside_the_workspace_are_refused_before_and_during_the_call() {
    let (dir, tools) = setup();
    let outside = tempfile::tempdir().expect("tempdir");
    let victim = outside.path().join("victim.txt");
    for patch in [
        "*** Begin Patch\n*** Add File: ../escape.txt\n+x\n*** End Patch".to_string(),
        format!(
            "*** Begin Patch\n*** Add File: {}\n+x\n*** End Patch",
            victim.display()
        ),
        "--- a/keep.txt\n+++ b/../moved.txt\n@@ -1 +1 @@\n-one\n+1\n".to_string(),
    ] {
        let args = json!({ "patch": patch });
        let tool = tools.get("apply_patch").expect("tool");
        let assessment = tool.assess(&args, dir.path());
        let block = assessment.block.expect("blocked before the gate");
        assert_eq!(block.action, PermissionAction::Deny, "{patch}");
        let err = call(&tools, args).await.expect_err("refused");
        assert!(
            err.to_string().contains("must stay inside the workspace"),
            "{err}"
        );
    }
    assert!(!victim.exists());
    assert!(!dir
        .path()
        .parent()
        .expect("parent")
        .join("escape.txt")
        .exists());
    assert_eq!(
        read(dir.path(), "keep.txt").as_deref(),
        Some("one\ntwo\nthree\n")
    );
    let err = call(&tools, json!({ "patch": "x", "cwd": "../" }))
        .await
        .expect_err("cwd outside");
    assert!(matches!(err, ToolError::Blocked(_)), "{err}");
}

#[tokio::test]
async fn malformed_patches_are_clear_errors() {
    let (_dir, tools) = setup();
    for (patch, expected) in [
        ("", "the patch is empty"),
        (
            "*** Begin Patch\n*** Add File: a\n+x\n",
            "must be \"*** End Patch\"",
        ),
        ("hello", "contains no file operations"),
        (
            "*** Begin Patch\n*** Add File: keep.txt\n+x\n*** End Patch",
            "cannot add keep.txt: it already exists",
        ),
        (
            "*** Begin Patch\n*** Update File: missing.txt\n@@\n-a\n+b\n*** End Patch",
            "cannot update missing.txt: it does not exist",
        ),
    ] {
        let err = call(&tools, json!({ "patch": patch }))
            .await
            .expect_err("malformed");
        assert!(err.to_string().contains(expected), "{patch:?}: {err}");
    }
}
