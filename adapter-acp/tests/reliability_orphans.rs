//! No orphans, no hangs: a long `bash` call (a shell with a background `sleep` in its
//! process group) is ended by ZCode `session/stop`, ACP `session/cancel`, stdin EOF and
//! SIGTERM in both front ends; afterwards no process of the group is alive (checked by pid
//! in /proc). A closed stdout (EPIPE) ends either front end cleanly (exit 0, no panic),
//! also with a bash call running.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::acp_client::Acp;
use common::{wait_gone, Client, Env, WAIT};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A bash call that records the shell's and its background child's pids, then waits.
fn long_bash(env: &Env) -> PathBuf {
    let command = "echo $$ > shell.pid; sleep 300 & echo $! > child.pid; wait";
    let args = json!({"command": command, "timeout_ms": 600_000}).to_string();
    let turns = json!([
        {"steps": [{"tool_call": {"id": "b1", "name": "bash", "args": [args]}}]},
        {"steps": [{"text": "never"}]},
        {"steps": [{"text": "again"}]}
    ]);
    common::write_script(env.root.path(), turns)
}

fn args(env: &Env, script: &Path) -> Vec<String> {
    env.scripted(script)
}

fn sigterm(pid: u32) {
    let pid = i32::try_from(pid).expect("pid");
    // SAFETY: sending a signal to our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
}

#[derive(Clone, Copy, Debug)]
enum Ending {
    Stop,
    Eof,
    Term,
}

async fn zcode_case(ending: Ending) {
    let env = Env::new();
    let script = long_bash(&env);
    let mut a = vec!["app-server".to_string(), "--stdio".to_string()];
    a.extend(args(&env, &script));
    let stderr = env.root.path().join("stderr.log");
    let mut c = Client::spawn_with(&a, &[], Some(&stderr));
    let sid = c.create(&env.workspace_str(), "yolo").await;
    c.call("session/subscribe", json!({"sessionId": sid})).await;
    c.call(
        "session/send",
        json!({"sessionId": sid, "content": "run it"}),
    )
    .await;
    let group = common::bash_pids(&env.workspace()).await;
    match ending {
        Ending::Stop => {
            let stopped = c.call("session/stop", json!({"sessionId": sid})).await;
            assert_eq!(stopped["stopped"], true);
            let events = c
                .events_until(&sid, &["turn.completed", "turn.failed"])
                .await;
            assert!(!events.is_empty());
            assert_eq!(wait_gone(&group).await, Vec::<i32>::new(), "{ending:?}");
            // Still serving.
            c.call("session/list", json!({})).await;
            assert!(c.shutdown_keep().await);
        }
        Ending::Eof => {
            c.close_stdin();
            assert!(c.wait_exit().await.success(), "{ending:?}");
            assert_eq!(wait_gone(&group).await, Vec::<i32>::new(), "{ending:?}");
        }
        Ending::Term => {
            sigterm(c.pid());
            assert!(c.wait_exit().await.success(), "exit 0 after SIGTERM");
            assert_eq!(wait_gone(&group).await, Vec::<i32>::new(), "{ending:?}");
        }
    }
    let stderr = std::fs::read_to_string(&stderr).unwrap_or_default();
    assert!(!stderr.contains("panicked"), "{stderr}");
}

async fn acp_case(ending: Ending) {
    let env = Env::new();
    let script = long_bash(&env);
    let stderr = env.root.path().join("stderr.log");
    let mut acp = Acp::spawn(&args(&env, &script), &[], Some(&stderr));
    let sid = acp.yolo_session(&env.workspace()).await;
    let prompt = acp.request_prompt(&sid, "run it").await;
    let group = common::bash_pids(&env.workspace()).await;
    match ending {
        Ending::Stop => {
            acp.send(json!({"method": "session/cancel", "params": {"sessionId": sid}}))
                .await;
            let reply = acp.reply(prompt).await;
            assert_eq!(reply["result"]["stopReason"], "cancelled", "{reply}");
            assert_eq!(wait_gone(&group).await, Vec::<i32>::new(), "{ending:?}");
            let next = acp.prompt(&sid, "hello").await;
            assert!(next.get("result").is_some(), "still serving: {next}");
            assert!(acp.shutdown().await);
        }
        Ending::Eof => {
            acp.close_stdin();
            assert!(acp.wait_exit().await.success(), "{ending:?}");
            assert_eq!(wait_gone(&group).await, Vec::<i32>::new(), "{ending:?}");
        }
        Ending::Term => {
            sigterm(acp.pid());
            assert!(acp.wait_exit().await.success(), "exit 0 after SIGTERM");
            assert_eq!(wait_gone(&group).await, Vec::<i32>::new(), "{ending:?}");
        }
    }
    let stderr = std::fs::read_to_string(&stderr).unwrap_or_default();
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zcode_stop_eof_and_sigterm_leave_no_process_of_the_bash_group() {
    for ending in [Ending::Stop, Ending::Eof, Ending::Term] {
        zcode_case(ending).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_cancel_eof_and_sigterm_leave_no_process_of_the_bash_group() {
    for ending in [Ending::Stop, Ending::Eof, Ending::Term] {
        acp_case(ending).await;
    }
}

/// Spawns a front end, starts the long bash call, closes our end of its stdout, and
/// pokes it with a request: it must exit 0 without a panic, taking the group with it.
async fn epipe_case(front: &str) {
    let env = Env::new();
    let script = long_bash(&env);
    let stderr_path = env.root.path().join("stderr.log");
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_adapter-acp"));
    match front {
        "zcode" => cmd.args(["app-server", "--stdio"]),
        _ => cmd.arg("acp"),
    };
    let mut child = cmd
        .args(args(&env, &script))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(
            std::fs::File::create(&stderr_path).expect("stderr"),
        ))
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let ws = env.workspace_str();
    let requests: Vec<Value> = match front {
        "zcode" => vec![
            json!({"id": 1, "method": "session/create", "params": {"workspace": {"workspacePath": ws, "workspaceKey": ws}, "mode": "yolo"}}),
        ],
        _ => vec![
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": ws, "mcpServers": []}}),
        ],
    };
    let mut sid = String::new();
    for request in &requests {
        stdin
            .write_all(format!("{request}\n").as_bytes())
            .await
            .expect("write");
        loop {
            let line = tokio::time::timeout(WAIT, lines.next_line())
                .await
                .expect("reply in time")
                .expect("read")
                .expect("a line");
            let reply: Value = serde_json::from_str(&line).expect("json");
            if reply["id"] == request["id"] {
                if let Some(id) = reply["result"]["session"]["sessionId"]
                    .as_str()
                    .or(reply["result"]["sessionId"].as_str())
                {
                    sid = id.to_string();
                }
                break;
            }
        }
    }
    let start: Vec<Value> = match front {
        "zcode" => vec![
            json!({"id": 3, "method": "session/send", "params": {"sessionId": sid, "content": "run"}}),
        ],
        _ => vec![
            json!({"jsonrpc": "2.0", "id": 3, "method": "session/set_mode", "params": {"sessionId": sid, "modeId": "yolo"}}),
            json!({"jsonrpc": "2.0", "id": 4, "method": "session/prompt", "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "run"}]}}),
        ],
    };
    for request in start {
        stdin
            .write_all(format!("{request}\n").as_bytes())
            .await
            .expect("write");
    }
    let group = common::bash_pids(&env.workspace()).await;
    drop(lines);
    // Anything written now hits a closed pipe.
    let poke = match front {
        "zcode" => json!({"id": 9, "method": "session/list", "params": {}}),
        _ => json!({"jsonrpc": "2.0", "id": 9, "method": "session/list", "params": {}}),
    };
    let _ = stdin.write_all(format!("{poke}\n").as_bytes()).await;
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("exits after its stdout closed")
        .expect("wait");
    assert!(status.success(), "{front}: {status:?}");
    assert_eq!(wait_gone(&group).await, Vec::<i32>::new(), "{front}");
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    assert!(!stderr.contains("panicked"), "{front}: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_stdout_ends_both_front_ends_cleanly() {
    epipe_case("zcode").await;
    epipe_case("acp").await;
}
