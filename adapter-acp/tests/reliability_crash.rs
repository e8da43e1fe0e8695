//! Crash safety: the process is SIGKILLed at random points while its sessions are being
//! written (turns with tool calls streaming in two sessions, through both front ends),
//! many times over one data directory. Afterwards every listed session resumes, keeps
//! every turn that completed before the kill, and takes a new turn; a torn last
//! transcript line is recovered, not fatal.

mod common;

use common::acp_client::Acp;
use common::{Client, Env};
use serde_json::{json, Value};

/// A small deterministic PRNG (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

fn trials() -> usize {
    std::env::var("AGENT_SDK_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12)
}

fn script(env: &Env) -> std::path::PathBuf {
    let turn = json!({"steps": [
        {"text": "Looking."},
        {"tool_call": {"id": "l1", "name": "list_dir", "args": ["{\"path\": \".\"}"]}},
    ]});
    let after = json!({"steps": [{"text": "Done looking."}]});
    let turns: Vec<Value> = (0..100)
        .flat_map(|_| [turn.clone(), after.clone()])
        .collect();
    common::write_script(env.root.path(), json!(turns))
}

fn args(env: &Env, script: &std::path::Path) -> Vec<String> {
    env.scripted(script)
}

/// User prompts in a ZCode messages list.
fn user_prompts(messages: &Value) -> usize {
    messages["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["info"]["role"] == "user").count())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_points_leaves_every_session_readable() {
    let env = Env::new();
    let script = script(&env);
    let mut rng = Rng(0x5eed_cafe_f00d_0001);
    // Session id → prompts whose turn completed before a kill.
    let mut completed: std::collections::HashMap<String, usize> = Default::default();
    for trial in 0..trials() {
        if trial % 2 == 0 {
            let mut a = vec!["app-server".to_string(), "--stdio".to_string()];
            a.extend(args(&env, &script));
            let mut c = Client::spawn(&a);
            let mut sids = Vec::new();
            for _ in 0..2 {
                let sid = c.create(&env.workspace_str(), "yolo").await;
                c.call("session/subscribe", json!({"sessionId": sid})).await;
                sids.push(sid);
            }
            // Both sessions stream at once; kill after a random number of events.
            let kill_after = rng.below(60);
            let mut seen = 0;
            for sid in &sids {
                c.call(
                    "session/send",
                    json!({"sessionId": sid, "content": "look around"}),
                )
                .await;
            }
            while seen < kill_after {
                let event = c.next_matching(|m| m["method"] == "session/event").await;
                seen += 1;
                let p = &event["params"];
                if p["type"] == "turn.completed" {
                    let sid = p["sessionId"].as_str().unwrap_or_default().to_string();
                    *completed.entry(sid.clone()).or_default() += 1;
                    c.call(
                        "session/send",
                        json!({"sessionId": sid, "content": "again"}),
                    )
                    .await;
                }
            }
            c.child.start_kill().expect("SIGKILL");
            let _ = c.wait_exit().await;
        } else {
            let mut acp = Acp::spawn(&args(&env, &script), &[], None);
            let sid = acp.yolo_session(&env.workspace()).await;
            let kill_after = rng.below(40);
            let mut seen = 0;
            let mut prompt = acp.request_prompt(&sid, "look").await;
            while seen < kill_after {
                let message = acp
                    .next_matching(|m| m["method"] == "session/update" || m["id"] == json!(prompt))
                    .await;
                seen += 1;
                if message["id"] == json!(prompt) {
                    *completed.entry(sid.clone()).or_default() += 1;
                    prompt = acp.request("session/prompt",
                        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "again"}]})).await;
                }
            }
            acp.child.start_kill().expect("SIGKILL");
            let _ = acp.wait_exit().await;
        }
    }

    // Tear the last line of one transcript, as a kill inside a write would.
    let sessions = env.data().join("sessions");
    let torn = std::fs::read_dir(&sessions)
        .expect("sessions")
        .flatten()
        .map(|e| e.path().join("transcript.jsonl"))
        .find(|p| p.exists())
        .expect("a transcript");
    let mut bytes = std::fs::read(&torn).expect("read");
    bytes.extend_from_slice(b"{\"type\":\"message\",\"message\":{\"role\":\"us");
    std::fs::write(&torn, bytes).expect("write");

    // A fresh process lists and resumes every session.
    let mut a = vec!["app-server".to_string(), "--stdio".to_string()];
    a.extend(args(&env, &script));
    let mut c = Client::spawn(&a);
    let listed = c.call("session/list", json!({"limit": 1000})).await;
    let ids: Vec<String> = listed["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .filter_map(|s| s["sessionId"].as_str().map(str::to_string))
        .collect();
    let on_disk = std::fs::read_dir(&sessions).expect("sessions").count();
    assert!(ids.len() >= trials(), "{} sessions listed", ids.len());
    assert!(ids.len() <= on_disk);
    for id in &ids {
        let resumed = c.call_raw("session/resume", json!({"sessionId": id})).await;
        assert!(
            resumed.get("result").is_some(),
            "unreadable session {id}: {resumed}"
        );
        let messages = c.call("session/messages", json!({"sessionId": id})).await;
        let kept = user_prompts(&messages);
        let done = completed.get(id).copied().unwrap_or(0);
        assert!(
            kept >= done,
            "{id}: {kept} prompts kept, {done} had completed"
        );
    }
    // The session with the torn line takes a new turn, and reads back whole.
    let torn_id = torn
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .expect("id")
        .to_string();
    c.call("session/subscribe", json!({"sessionId": torn_id}))
        .await;
    c.call(
        "session/send",
        json!({"sessionId": torn_id, "content": "after the tear"}),
    )
    .await;
    let events = c
        .events_until(&torn_id, &["turn.completed", "turn.failed"])
        .await;
    assert_eq!(events.last().expect("terminal")["type"], "turn.completed");
    assert!(c.shutdown().await);

    let mut c = Client::spawn(&a);
    let resumed = c
        .call_raw("session/resume", json!({"sessionId": torn_id}))
        .await;
    assert!(resumed.get("result").is_some(), "{resumed}");
    let messages = c
        .call("session/messages", json!({"sessionId": torn_id}))
        .await;
    let texts = messages.to_string();
    assert!(texts.contains("after the tear"), "{texts}");
    assert!(c.shutdown().await);
}
