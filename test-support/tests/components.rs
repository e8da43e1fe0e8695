//! The outside-component helpers: the skip line, `=required`, and `npm_project` on a
//! project without dependencies (which `npm ci` installs offline).

use std::time::Duration;

use test_support::component::{lock, Skip, NODE_REQUIRED};
use test_support::npm::{npm_project, STAMP};

#[test]
fn a_skip_is_one_line_naming_the_test_what_why_and_how() {
    let skip = Skip::new(NODE_REQUIRED, "the thing", "it is gone", "get it back");
    let line = skip.line();
    assert_eq!(
        line,
        "skipped: a_skip_is_one_line_naming_the_test_what_why_and_how: the thing (it is gone; \
         get it back)"
    );
    assert!(!line.contains('\n'));
}

#[test]
fn a_required_component_fails_the_test_instead() {
    // A variable of this test alone, so no other test sees it set.
    const VAR: &str = "AGENT_SDK_TEST_SUPPORT_SELF_TEST";
    std::env::set_var(VAR, "required");
    let skip = Skip::new(VAR, "the thing", "it is gone", "get it back");
    assert!(skip.is_required());
    let panic = std::panic::catch_unwind(|| skip.report()).expect_err("a required skip panics");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        message.contains("AGENT_SDK_TEST_SUPPORT_SELF_TEST=required"),
        "{message}"
    );
    assert!(
        message.contains("the thing cannot be had: it is gone"),
        "{message}"
    );
}

#[test]
fn a_held_lock_times_out_and_a_released_one_is_taken() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("x.lock");
    let held = lock(&path, Duration::from_secs(5)).expect("first lock");
    let err = lock(&path, Duration::from_millis(200)).expect_err("held elsewhere");
    assert!(err.contains("stayed locked"), "{err}");
    drop(held);
    lock(&path, Duration::from_secs(5)).expect("free again");
}

#[test]
fn an_npm_project_is_installed_once_or_skipped_with_the_node_variable() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("package.json"),
        r#"{"name": "empty", "version": "1.0.0", "private": true}"#,
    )
    .expect("package.json");
    std::fs::write(
        dir.path().join("package-lock.json"),
        r#"{"name": "empty", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
            "packages": {"": {"name": "empty", "version": "1.0.0"}}}"#,
    )
    .expect("package-lock.json");
    match npm_project(dir.path()) {
        Ok(node_modules) => {
            assert!(node_modules.join(STAMP).is_file(), "no stamp after npm ci");
            assert_eq!(npm_project(dir.path()), Ok(node_modules));
        }
        Err(skip) => {
            assert_eq!(skip.required_by, NODE_REQUIRED);
            skip.report();
        }
    }
}

#[test]
fn a_project_wanting_a_newer_node_is_skipped() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("package.json"),
        r#"{"name": "future", "private": true, "engines": {"node": ">=999"}}"#,
    )
    .expect("package.json");
    std::fs::write(dir.path().join("package-lock.json"), "{}").expect("lock");
    let skip = npm_project(dir.path()).expect_err("no Node 999 here");
    assert_eq!(skip.required_by, NODE_REQUIRED);
    assert!(
        skip.why.contains("999") || skip.why.contains("node is not on PATH"),
        "{skip}"
    );
}
