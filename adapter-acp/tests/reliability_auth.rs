//! Auth: neither front end acts on a session it did not create or resume in this process
//! — not one that exists on disk but was not resumed, and not a path-like id (`../x`),
//! which never touches a file outside the data directory. Tool paths stay inside the
//! workspace in every mode but yolo (unsafe): a write to `../escape.txt` or an absolute
//! path outside is refused or needs an approval that the client denies. (Today the tools
//! confine paths even in yolo.)

mod common;

use std::path::Path;

use common::acp_client::Acp;
use common::{walk, Client, Env};
use serde_json::{json, Value};

fn scripted(env: &Env, turns: Value) -> Vec<String> {
    let script = common::write_script(env.root.path(), turns);
    env.scripted(&script)
}

fn zcode(env: &Env, turns: Value) -> Client {
    let mut a = vec!["app-server".to_string(), "--stdio".to_string()];
    a.extend(scripted(env, turns));
    Client::spawn(&a)
}

/// A well-formed session planted outside the data directory, at `<root>/victim`.
fn plant_victim(env: &Env, real: &Path) {
    let victim = env.root.path().join("victim");
    std::fs::create_dir_all(&victim).expect("victim");
    for file in ["meta.jsonl", "transcript.jsonl"] {
        if real.join(file).exists() {
            std::fs::copy(real.join(file), victim.join(file)).expect("copy");
        }
    }
}

fn snapshot(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut files: Vec<_> = walk(dir)
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap_or_default();
            (p, bytes)
        })
        .collect();
    files.sort();
    files
}

const PATH_IDS: [&str; 6] = [
    "../../victim",
    "../victim",
    "sess_x/../../../victim",
    "/etc",
    "..",
    "",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zcode_refuses_sessions_it_did_not_create_or_resume() {
    let env = Env::new();
    let turns = json!([{"steps": [{"text": "hi"}]}, {"steps": [{"text": "again"}]}]);
    let mut c = zcode(&env, turns.clone());
    let sid = c.create(&env.workspace_str(), "build").await;
    assert!(c.shutdown().await);
    plant_victim(&env, &env.data().join("sessions").join(&sid));
    let before = snapshot(env.root.path());

    let mut c = zcode(&env, turns);
    // On disk but not resumed: every session method answers -32004 and touches nothing.
    let calls = [
        ("session/read", json!({"sessionId": sid})),
        ("session/messages", json!({"sessionId": sid})),
        ("session/subscribe", json!({"sessionId": sid})),
        ("session/events", json!({"sessionId": sid})),
        ("session/send", json!({"sessionId": sid, "content": "x"})),
        ("session/stop", json!({"sessionId": sid})),
        ("session/steer", json!({"sessionId": sid, "content": "x"})),
        ("session/fork", json!({"sessionId": sid})),
        ("session/compact", json!({"sessionId": sid})),
        (
            "session/goal",
            json!({"sessionId": sid, "action": "set", "objective": "o"}),
        ),
        ("session/setMode", json!({"sessionId": sid, "mode": "yolo"})),
        (
            "session/setThoughtLevel",
            json!({"sessionId": sid, "thoughtLevel": "high"}),
        ),
        (
            "session/setModel",
            json!({"sessionId": sid, "model": {"providerId": "scripted", "modelId": "m"}}),
        ),
        (
            "session/cancelBackgroundTask",
            json!({"sessionId": sid, "taskId": "t"}),
        ),
    ];
    for (method, params) in &calls {
        let error = c.call_err(method, params.clone()).await;
        assert_eq!(error["code"], -32004, "{method}: {error}");
    }
    // Path-like ids: not found, for resume and every other method.
    for id in PATH_IDS {
        let error = c.call_err("session/resume", json!({"sessionId": id})).await;
        assert_eq!(error["code"], -32004, "{id:?}: {error}");
        for (method, params) in &calls {
            let mut params = params.clone();
            params["sessionId"] = json!(id);
            let error = c.call_err(method, params).await;
            assert_eq!(error["code"], -32004, "{method} {id:?}: {error}");
        }
    }
    // The listing shows the stored session, never the planted one.
    let listed = c.call("session/list", json!({})).await;
    let ids = common::session_ids(&listed);
    assert_eq!(ids, [sid.as_str()]);
    assert_eq!(snapshot(env.root.path()), before, "nothing on disk changed");
    // Once resumed, it is usable.
    c.call("session/resume", json!({"sessionId": sid})).await;
    c.call("session/read", json!({"sessionId": sid})).await;
    assert!(c.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_refuses_sessions_it_did_not_create_or_load() {
    let env = Env::new();
    let turns = json!([{"steps": [{"text": "hi"}]}]);
    let args = scripted(&env, turns);
    let mut acp = Acp::spawn(&args, &[], None);
    acp.initialize().await;
    let sid = acp.new_session(&env.workspace()).await;
    assert!(acp.shutdown().await);
    plant_victim(&env, &env.data().join("sessions").join(&sid));
    let before = snapshot(env.root.path());

    let mut acp = Acp::spawn(&args, &[], None);
    acp.initialize().await;
    let ws = env.workspace();
    for id in std::iter::once(sid.as_str()).chain(PATH_IDS) {
        let prompt = acp
            .call_raw(
                "session/prompt",
                json!({"sessionId": id, "prompt": [{"type": "text", "text": "x"}]}),
            )
            .await;
        assert_eq!(prompt["error"]["code"], -32002, "{id:?}: {prompt}");
        let mode = acp
            .call_raw(
                "session/set_mode",
                json!({"sessionId": id, "modeId": "yolo"}),
            )
            .await;
        assert_eq!(mode["error"]["code"], -32002, "{id:?}: {mode}");
        acp.send(json!({"method": "session/cancel", "params": {"sessionId": id}}))
            .await;
    }
    for id in PATH_IDS {
        let load = acp
            .call_raw(
                "session/load",
                json!({"sessionId": id, "cwd": ws, "mcpServers": []}),
            )
            .await;
        assert!(load["error"]["code"].is_i64(), "{id:?}: {load}");
    }
    let listed = acp.call("session/list", json!({})).await;
    let ids = common::session_ids(&listed);
    assert_eq!(ids, [sid.as_str()]);
    assert_eq!(snapshot(env.root.path()), before, "nothing on disk changed");
    acp.call(
        "session/load",
        json!({"sessionId": sid, "cwd": ws, "mcpServers": []}),
    )
    .await;
    let prompt = acp.prompt(&sid, "hello").await;
    assert!(prompt.get("result").is_some(), "{prompt}");
    assert!(acp.shutdown().await);
}

/// A turn writing outside the workspace twice: `../escape.txt` and an absolute path.
fn escape_turns(outside: &Path) -> Value {
    let call = |id: &str, path: String| {
        let args = json!({"path": path, "content": "escaped"}).to_string();
        json!({"tool_call": {"id": id, "name": "write_file", "args": [args]}})
    };
    json!([
        {"steps": [call("e1", "../escape.txt".into()), call("e2", outside.display().to_string())]},
        {"steps": [{"text": "done"}]}
    ])
}

const MODES: [&str; 5] = ["plan", "build", "edit", "auto", "yolo"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_paths_stay_in_the_workspace_in_every_mode_but_yolo() {
    for mode in MODES {
        // ZCode, denying every permission request.
        let env = Env::new();
        let outside = env.root.path().join("abs-escape.txt");
        let relative = env.root.path().join("escape.txt");
        let mut c = zcode(&env, escape_turns(&outside));
        let sid = c.create(&env.workspace_str(), mode).await;
        c.call("session/subscribe", json!({"sessionId": sid})).await;
        c.call(
            "session/send",
            json!({"sessionId": sid, "content": "escape"}),
        )
        .await;
        loop {
            let m = c
                .next_matching(|m| {
                    m["method"] == "interaction/requestPermission"
                        || (m["method"] == "session/event"
                            && ["turn.completed", "turn.failed"]
                                .contains(&m["params"]["type"].as_str().unwrap_or("")))
                })
                .await;
            if m["method"] == "interaction/requestPermission" {
                c.send(json!({"id": m["id"], "result": {"decision": "deny"}}))
                    .await;
                continue;
            }
            break;
        }
        // (yolo may write there, or the tools may confine it anyway.)
        let escaped = outside.exists() || relative.exists();
        assert!(!escaped || mode == "yolo", "zcode {mode}");
        assert!(c.shutdown().await);

        // ACP, rejecting every permission request.
        let env = Env::new();
        let outside = env.root.path().join("abs-escape.txt");
        let relative = env.root.path().join("escape.txt");
        let mut acp = Acp::spawn(&scripted(&env, escape_turns(&outside)), &[], None);
        acp.initialize().await;
        let sid = acp.new_session(&env.workspace()).await;
        acp.call(
            "session/set_mode",
            json!({"sessionId": sid, "modeId": mode}),
        )
        .await;
        let id = acp.request_prompt(&sid, "escape").await;
        let reply = acp.reply_answering(id, "reject_once").await;
        assert!(reply.get("result").is_some(), "{reply}");
        let escaped = outside.exists() || relative.exists();
        assert!(!escaped || mode == "yolo", "acp {mode}");
        assert!(acp.shutdown().await);
    }
}
