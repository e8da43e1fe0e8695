//! The one SIGTERM/SIGINT rule of `adapter-acp acp` (issue 24): a signal mid-turn ends the
//! input like a closed stdin; what is in flight is finished — the running `session/prompt`
//! is answered `cancelled` after the turn's updates — its tools are stopped (no process of
//! the `bash` group is left, checked by pid), the session is flushed (it loads in a new
//! process), and the process exits 0. The same for SIGINT and SIGTERM.

mod common;

use std::path::Path;

use common::acp_client::Acp;
use common::{wait_gone, Env};
use serde_json::json;

fn script(env: &Env) -> std::path::PathBuf {
    let command = "echo $$ > shell.pid; sleep 300 & echo $! > child.pid; wait";
    let args = json!({"command": command, "timeout_ms": 600_000}).to_string();
    common::write_script(
        env.root.path(),
        json!([
            {"steps": [{"text": "Running it."},
                       {"tool_call": {"id": "b1", "name": "bash", "args": [args]}}]},
            {"steps": [{"text": "never"}]}
        ]),
    )
}

async fn signal_mid_turn(signal: i32) {
    let env = Env::new();
    let script = script(&env);
    let args = |s: &Path| env.scripted(s);
    let stderr = env.root.path().join("stderr.log");
    let mut acp = Acp::spawn(&args(&script), &[], Some(&stderr));
    let sid = acp.yolo_session(&env.workspace()).await;
    let prompt = acp.request_prompt(&sid, "run it").await;
    let group = common::bash_pids(&env.workspace()).await;
    let pid = i32::try_from(acp.pid()).expect("pid");
    // SAFETY: sending a signal to our own child process.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    let status = acp.wait_exit().await;
    assert_eq!(status.code(), Some(0), "signal {signal}: {status:?}");
    // The prompt in flight was answered, after its turn's updates.
    let lines: Vec<serde_json::Value> = acp
        .raw
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .chain(acp.backlog.iter().cloned())
        .collect();
    let answer = lines
        .iter()
        .position(|m| m["id"] == json!(prompt) && m.get("method").is_none());
    let answer = answer.unwrap_or_else(|| panic!("signal {signal}: no answer in {:?}", acp.raw));
    assert_eq!(
        lines[answer]["result"]["stopReason"], "cancelled",
        "{}",
        lines[answer]
    );
    let failed = lines.iter().position(|m| {
        m["params"]["update"]["toolCallId"] == "b1" && m["params"]["update"]["status"] == "failed"
    });
    assert!(
        failed.is_some_and(|f| f < answer),
        "signal {signal}: the call's end before the answer: {:?}",
        acp.raw
    );
    assert_eq!(
        wait_gone(&group).await,
        Vec::<i32>::new(),
        "signal {signal}"
    );
    let log = std::fs::read_to_string(&stderr).unwrap_or_default();
    assert!(!log.contains("panicked"), "{log}");

    // The session was flushed: a new process loads it, with the call that was stopped.
    let mut again = Acp::spawn(&args(&script), &[], None);
    again.initialize().await;
    let loaded = again
        .call_raw(
            "session/load",
            json!({"sessionId": sid, "cwd": env.workspace(), "mcpServers": []}),
        )
        .await;
    assert!(loaded.get("result").is_some(), "{loaded}");
    let replayed: Vec<&serde_json::Value> = again
        .backlog
        .iter()
        .filter(|m| m["method"] == "session/update")
        .collect();
    assert!(
        replayed
            .iter()
            .any(|m| m["params"]["update"]["content"]["text"] == "run it"),
        "{replayed:?}"
    );
    assert!(again.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_turn_answers_the_prompt_stops_tools_and_exits_0() {
    signal_mid_turn(libc::SIGTERM).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_mid_turn_answers_the_prompt_stops_tools_and_exits_0() {
    signal_mid_turn(libc::SIGINT).await;
}
