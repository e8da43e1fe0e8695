//! The bash tool: results, progress, and that timeouts, cancellation and dropping the call
//! leave no process behind.
#![cfg(unix)]

use std::path::Path;
use std::time::Duration;

use agent_core::{
    tool::{ProgressReceiver, ProgressSink, ProgressStream},
    CancellationToken, ToolContext, ToolError, ToolOutput,
};
use agent_tools::ToolSet;
use serde_json::{json, Value};
use test_support::procs::{alive, wait_gone};

const LIMIT: Duration = Duration::from_secs(30);

fn setup() -> (tempfile::TempDir, ToolSet) {
    let dir = tempfile::tempdir().unwrap();
    let tools = ToolSet::defaults(dir.path());
    (dir, tools)
}

fn ctx(ws: &Path) -> (ToolContext, ProgressReceiver, CancellationToken) {
    let (sink, rx) = ProgressSink::channel();
    let cancel = CancellationToken::new();
    let ctx = ToolContext {
        call_id: "call_1".to_string(),
        cwd: ws.to_path_buf(),
        cancel: cancel.clone(),
        progress: sink,
        sandbox: Default::default(),
        ..ToolContext::new(ws)
    };
    (ctx, rx, cancel)
}

async fn run(tools: &ToolSet, args: Value) -> Result<ToolOutput, ToolError> {
    let (ctx, _rx, _cancel) = ctx(tools.workspace());
    tokio::time::timeout(LIMIT, tools.get("bash").unwrap().call(args, ctx))
        .await
        .expect("bash call timed out")
}

/// Waits (bounded) until none of `pids` is alive.
async fn assert_all_dead(pids: &[i32]) {
    let survivors = wait_gone(pids, Duration::from_secs(10)).await;
    assert!(survivors.is_empty(), "processes survived: {survivors:?}");
}

/// The pids after `PIDS` in `text` (the sleeper prints them).
fn pids_in(text: &str) -> Vec<i32> {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("PIDS "))
        .unwrap_or_else(|| panic!("no PIDS line in {text:?}"));
    line.split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}

/// Waits (bounded) for a stdout progress report carrying the sleeper's pids.
async fn pids_from_progress(rx: &mut ProgressReceiver) -> Vec<i32> {
    tokio::time::timeout(LIMIT, async {
        loop {
            match rx.recv().await {
                Some(p) if p.stream == ProgressStream::Stdout && p.text.contains("PIDS ") => {
                    return pids_in(&p.text)
                }
                Some(_) => continue,
                None => panic!("progress channel closed"),
            }
        }
    })
    .await
    .expect("no progress while the command ran")
}

/// A command that starts a background `sleep` and a foreground one and prints the shell's
/// and both sleeps' pids.
const SLEEPER: &str = "sleep 300 & bg=$!; sleep 301 & fg=$!; echo \"PIDS $$ $bg $fg\"; wait";

#[tokio::test]
async fn reports_exit_code_stdout_and_stderr() {
    let (dir, tools) = setup();
    let out = run(&tools, json!({"command": "echo hello; echo oops >&2; pwd"}))
        .await
        .unwrap();
    assert!(!out.is_error);
    let text = out.text_content();
    assert!(
        text.starts_with("exit code: 0\n--- stdout ---\nhello\n"),
        "{text}"
    );
    assert!(text.contains("--- stderr ---\noops"), "{text}");
    let real = std::fs::canonicalize(dir.path()).unwrap();
    assert!(
        text.contains(&*real.to_string_lossy()),
        "runs in the workspace: {text}"
    );

    let out = run(&tools, json!({"command": "exit 3"})).await.unwrap();
    assert!(out.is_error);
    assert_eq!(out.text_content(), "exit code: 3\n(no output)");

    let e = run(&tools, json!({"command": "  "})).await.unwrap_err();
    assert!(e.to_string().contains("command is empty"), "{e}");
    let e = run(&tools, json!({})).await.unwrap_err();
    assert!(e.to_string().contains("command"), "{e}");
}

#[tokio::test]
async fn output_is_scrubbed_and_capped() {
    let dir = tempfile::tempdir().unwrap();
    // bash is held to the full-output cap (the agent cuts it for the model), not to the
    // paging tools' output cap.
    let tools = ToolSet::builder(dir.path())
        .output_cap(100)
        .full_output_cap(2000)
        .build();
    let out = run(
        &tools,
        json!({"command": "seq 1 5000; echo AWS_SECRET_ACCESS_KEY=abcdefghijklmnop1234"}),
    )
    .await
    .unwrap();
    assert!(out.redacted);
    assert!(out.truncated);
    let text = out.text_content();
    assert!(text.len() <= 2000, "{}", text.len());
    assert!(text.starts_with("exit code: 0"), "{text}");
    // The end of the output is kept.
    assert!(
        text.ends_with("5000\nAWS_SECRET_ACCESS_KEY=[REDACTED]"),
        "{}",
        &text[text.len() - 100..]
    );
    assert!(text.contains("earlier bytes omitted"));
}

#[tokio::test]
async fn timeout_kills_the_whole_group() {
    let (_dir, tools) = setup();
    let out = run(&tools, json!({"command": SLEEPER, "timeout_ms": 1500}))
        .await
        .unwrap();
    assert!(out.is_error);
    let text = out.text_content();
    assert!(text.starts_with("timed out after 1500 ms"), "{text}");
    let pids = pids_in(&text);
    assert_eq!(pids.len(), 3);
    assert_all_dead(&pids).await;
}

#[tokio::test]
async fn background_jobs_do_not_outlive_a_finished_command() {
    let (_dir, tools) = setup();
    let command = "sleep 300 & echo \"PIDS $!\"; echo done";
    let out = run(&tools, json!({"command": command})).await.unwrap();
    assert!(!out.is_error, "{}", out.text_content());
    let pids = pids_in(&out.text_content());
    assert_all_dead(&pids).await;
}

#[tokio::test]
async fn cancellation_kills_the_whole_group_and_progress_arrives() {
    let (dir, tools) = setup();
    let (ctx, mut rx, cancel) = ctx(dir.path());
    let bash = tools.get("bash").unwrap().clone();
    let task = tokio::spawn(async move { bash.call(json!({"command": SLEEPER}), ctx).await });
    // Progress arrives while the command is still running.
    let pids = pids_from_progress(&mut rx).await;
    assert_eq!(pids.len(), 3);
    assert!(!task.is_finished());
    assert!(pids.iter().all(|p| alive(*p)));
    cancel.cancel();
    let result = tokio::time::timeout(LIMIT, task)
        .await
        .expect("cancel not honoured")
        .unwrap();
    assert!(matches!(result, Err(ToolError::Cancelled(_))), "{result:?}");
    assert_all_dead(&pids).await;
}

#[tokio::test]
async fn dropping_the_call_kills_the_whole_group() {
    let (dir, tools) = setup();
    let (ctx, mut rx, _cancel) = ctx(dir.path());
    let bash = tools.get("bash").unwrap().clone();
    let task = tokio::spawn(async move { bash.call(json!({"command": SLEEPER}), ctx).await });
    let pids = pids_from_progress(&mut rx).await;
    assert!(pids.iter().all(|p| alive(*p)));
    task.abort();
    let joined = tokio::time::timeout(LIMIT, task)
        .await
        .expect("abort not honoured");
    assert!(joined.unwrap_err().is_cancelled());
    assert_all_dead(&pids).await;
}

#[tokio::test]
async fn progress_streams_stderr_tails_too() {
    let (dir, tools) = setup();
    let (ctx, mut rx, _cancel) = ctx(dir.path());
    let out = tokio::time::timeout(
        LIMIT,
        tools
            .get("bash")
            .unwrap()
            .call(json!({"command": "echo to-err >&2; echo to-out"}), ctx),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(!out.is_error);
    let mut seen = Vec::new();
    while let Ok(p) = rx.try_recv() {
        seen.push(p);
    }
    assert!(
        seen.iter()
            .any(|p| p.stream == ProgressStream::Stderr && p.text.contains("to-err")),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|p| p.stream == ProgressStream::Stdout && p.text.contains("to-out")),
        "{seen:?}"
    );
}
