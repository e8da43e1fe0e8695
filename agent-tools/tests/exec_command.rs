//! `exec_command` and `write_stdin`: a process on a pseudo-terminal living across calls,
//! its input, its end, the session limit, and no process left when the tools go.

use std::time::{Duration, Instant};

use agent_core::{ToolContext, ToolError, ToolOutput};
use agent_tools::{ToolSet, MAX_EXEC_SESSIONS};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(60);

fn setup() -> (tempfile::TempDir, ToolSet) {
    let dir = tempfile::tempdir().expect("tempdir");
    let tools = ToolSet::defaults(dir.path());
    (dir, tools)
}

async fn call(tools: &ToolSet, name: &str, args: Value) -> Result<ToolOutput, ToolError> {
    let tool = tools.get(name).unwrap_or_else(|| panic!("no tool {name}"));
    tokio::time::timeout(WAIT, tool.call(args, ToolContext::new(tools.workspace())))
        .await
        .expect("the call returned in time")
}

fn session_id(text: &str) -> i64 {
    text.lines()
        .find_map(|l| l.strip_prefix("session_id: "))
        .and_then(|id| id.trim().parse().ok())
        .unwrap_or_else(|| panic!("no session id in {text:?}"))
}

/// Polls session `id` until its output so far contains `needle` (bounded by [`WAIT`]).
async fn poll_until(tools: &ToolSet, id: i64, first: String, needle: &str) -> String {
    let deadline = Instant::now() + WAIT;
    let mut seen = first;
    while !seen.contains(needle) {
        assert!(Instant::now() < deadline, "{needle:?} never came: {seen:?}");
        let out = call(
            tools,
            "write_stdin",
            json!({"session_id": id, "chars": "", "yield_time_ms": 250}),
        )
        .await
        .expect("polled");
        seen.push_str(&out.text_content());
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_repl_answers_and_dies_with_the_tools() {
    if test_support::component::on_path("python3").is_none() {
        eprintln!("skipped: python3 is not installed");
        return;
    }
    let (_dir, tools) = setup();
    let started = call(
        &tools,
        "exec_command",
        json!({"cmd": "python3 -i -q", "yield_time_ms": 250}),
    )
    .await
    .expect("started");
    let text = started.text_content();
    let id = session_id(&text);
    assert!(text.contains(&format!(
        "Use write_stdin with session_id {id} and empty chars to poll"
    )));
    let sessions = tools.exec_sessions().expect("exec sessions");
    let live = sessions.list();
    assert_eq!(live.len(), 1);
    let pid = live[0].pid.expect("a local process");
    assert!(test_support::procs::alive(pid));

    let answer = call(
        &tools,
        "write_stdin",
        json!({"session_id": id, "chars": "print(6*7)\n"}),
    )
    .await
    .expect("written");
    let seen = poll_until(&tools, id, answer.text_content(), "\n42\n").await;
    assert!(seen.contains("session_id: "), "{seen}");

    // The end of the tools is the end of the process and its group.
    drop(tools);
    let left = tokio::task::spawn_blocking(move || {
        test_support::procs::wait_gone_blocking(&[pid], Duration::from_secs(10))
    })
    .await
    .expect("joined");
    assert!(left.is_empty(), "python3 outlived the tools: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_command_reports_its_exit_and_is_gone() {
    let (dir, tools) = setup();
    std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
    let out = call(
        &tools,
        "exec_command",
        json!({"cmd": "pwd; echo oops >&2; exit 3", "workdir": "sub"}),
    )
    .await
    .expect("ran");
    let text = out.text_content();
    assert!(out.is_error, "exit 3 is a failure");
    assert!(text.starts_with("output:\n"), "{text}");
    assert!(text.contains("/sub\n"), "{text}");
    assert!(text.contains("oops"), "{text}");
    assert!(text.ends_with("exit_code: 3"), "{text}");
    assert!(tools.exec_sessions().expect("sessions").list().is_empty());

    let quiet = call(&tools, "exec_command", json!({"cmd": "true", "tty": false}))
        .await
        .expect("ran");
    assert_eq!(
        quiet.text_content(),
        "Command completed with no output.\nexit_code: 0"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_a_clear_error() {
    let (_dir, tools) = setup();
    for args in [
        json!({"session_id": 7, "chars": "x"}),
        json!({"chars": "x"}),
    ] {
        let err = call(&tools, "write_stdin", args)
            .await
            .expect_err("unknown");
        assert!(
            err.to_string().starts_with(
                "Error: write_stdin needs a session_id returned by a still-running exec_command"
            ),
            "{err}"
        );
    }
    let err = call(
        &tools,
        "exec_command",
        json!({"cmd": "ls", "workdir": "../"}),
    )
    .await
    .expect_err("outside");
    assert!(matches!(err, ToolError::Blocked(_)), "{err}");

    // A finished session takes no input.
    let started = call(
        &tools,
        "exec_command",
        json!({"cmd": "read line; echo got $line", "yield_time_ms": 250}),
    )
    .await
    .expect("started");
    let id = session_id(&started.text_content());
    let answer = call(
        &tools,
        "write_stdin",
        json!({"session_id": id, "chars": "hi\n", "yield_time_ms": 5000}),
    )
    .await
    .expect("written");
    let text = answer.text_content();
    assert!(text.contains("got hi"), "{text}");
    assert!(text.ends_with("exit_code: 0"), "{text}");
    let err = call(
        &tools,
        "write_stdin",
        json!({"session_id": id, "chars": "again\n"}),
    )
    .await
    .expect_err("gone");
    assert!(err.to_string().contains("(no live session"), "{err}");

    // The number of live sessions is bounded.
    let mut ids = Vec::new();
    for _ in 0..MAX_EXEC_SESSIONS {
        let out = call(
            &tools,
            "exec_command",
            json!({"cmd": "sleep 600", "yield_time_ms": 250}),
        )
        .await
        .expect("started");
        ids.push(session_id(&out.text_content()));
    }
    let err = call(
        &tools,
        "exec_command",
        json!({"cmd": "sleep 600", "yield_time_ms": 250}),
    )
    .await
    .expect_err("too many");
    assert!(
        err.to_string().contains("too many live exec sessions (8)"),
        "{err}"
    );
    // Ctrl-C stops one, which frees a slot.
    let stopped = call(
        &tools,
        "write_stdin",
        json!({"session_id": ids[0], "chars": "\u{3}", "yield_time_ms": 5000}),
    )
    .await
    .expect("interrupted");
    assert!(
        stopped.text_content().contains("interrupted: true"),
        "{}",
        stopped.text_content()
    );
    let sessions = tools.exec_sessions().expect("sessions");
    assert_eq!(sessions.list().len(), MAX_EXEC_SESSIONS - 1);
    let pids: Vec<u32> = sessions.list().iter().filter_map(|s| s.pid).collect();
    assert_eq!(sessions.stop_all().len(), MAX_EXEC_SESSIONS - 1);
    let left = tokio::task::spawn_blocking(move || {
        test_support::procs::wait_gone_blocking(&pids, Duration::from_secs(10))
    })
    .await
    .expect("joined");
    assert!(left.is_empty(), "{left:?}");
}
