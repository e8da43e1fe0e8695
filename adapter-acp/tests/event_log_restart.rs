//! The ZCode event log survives a restart (issue 23): a second `adapter-acp app-server`
//! process on the same data directory resumes a session and replays exactly the events after
//! any `afterSeq`, new events continue the numbering, a process killed mid-turn leaves no
//! duplicate or missing seq (and a torn last line is dropped), a session with more events
//! than the in-memory window replays from disk, and a replay from before the retained log
//! gets the gap form (snapshot + current `eventSeq`).

mod common;

use common::{assert_consecutive, events_of, send_turn, seqs, subscribe, Client, Env};
use serde_json::{json, Value};

/// Spawns the app-server on `env`'s data directory playing `turns`, with the event-log
/// limits `window` (events in memory) and `retention` (events on disk).
fn spawn(env: &Env, turns: &Value, window: Option<u64>, retention: Option<u64>) -> Client {
    let script = common::write_script(env.root.path(), turns.clone());
    let args = [
        "app-server",
        "--stdio",
        "--provider",
        "scripted",
        "--script",
        &script.display().to_string(),
        "--data-dir",
        &env.data().display().to_string(),
    ]
    .map(str::to_string);
    let (window, retention) = (
        window.map(|n| n.to_string()).unwrap_or_default(),
        retention.map(|n| n.to_string()).unwrap_or_default(),
    );
    let mut envs = Vec::new();
    if !window.is_empty() {
        envs.push(("AGENT_SDK_EVENT_WINDOW", window.as_str()));
    }
    if !retention.is_empty() {
        envs.push(("AGENT_SDK_EVENT_RETENTION", retention.as_str()));
    }
    Client::spawn_with(&args, &envs, None)
}

/// A script of `turns` turns, each streaming `deltas` text deltas.
fn turns(turns: usize, deltas: usize) -> Value {
    let turn = |t: usize| {
        let steps: Vec<Value> = (0..deltas)
            .map(|d| json!({"text": format!("t{t}d{d} ")}))
            .collect();
        json!({ "steps": steps })
    };
    Value::Array((0..turns).map(turn).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seq_continues_and_after_seq_replays_exactly_across_a_restart() {
    let env = Env::new();
    let script = turns(3, 5);
    let mut a = spawn(&env, &script, None, None);
    let sid = a.create(&env.workspace_str(), "yolo").await;
    subscribe(&mut a, &sid, None).await;
    let mut seen = send_turn(&mut a, &sid, "one").await;
    seen.extend(send_turn(&mut a, &sid, "two").await);
    assert_eq!(seqs(&seen), (1..=seen.len() as u64).collect::<Vec<_>>());
    assert!(a.shutdown().await);
    let last = seen.len() as u64;

    let mut b = spawn(&env, &script, None, None);
    let resumed = b.call("session/resume", json!({"sessionId": sid})).await;
    assert_eq!(resumed["runtime"]["eventSeq"], last);
    // afterSeq 0: every event, exactly as it was pushed live.
    let all = subscribe(&mut b, &sid, Some(0)).await;
    assert_eq!(all["eventSeq"], last);
    assert_eq!(events_of(&all), seen);
    assert!(all.get("snapshot").is_none(), "not asked for, no gap");
    // A middle seq: exactly the events after it.
    let middle = last / 2;
    let tail = subscribe(&mut b, &sid, Some(middle)).await;
    assert_eq!(events_of(&tail), seen[middle as usize..].to_vec());
    // The last seq: nothing, and the same high-water mark.
    let none = subscribe(&mut b, &sid, Some(last)).await;
    assert_eq!(none["eventSeq"], last);
    assert!(events_of(&none).is_empty());
    assert!(none.get("snapshot").is_none());
    // The pull replay agrees.
    let pulled = b
        .call(
            "session/events",
            json!({"sessionId": sid, "afterSeq": middle, "limit": 3}),
        )
        .await;
    assert_eq!(
        events_of(&pulled),
        seen[middle as usize..middle as usize + 3].to_vec()
    );
    // New events continue from the last persisted seq + 1, and a reply counts the event
    // its request emitted.
    let mode = b
        .call("session/setMode", json!({"sessionId": sid, "mode": "edit"}))
        .await;
    let updated = b.event(&sid).await;
    assert_eq!(
        (updated["type"].as_str(), updated["seq"].as_u64()),
        (Some("session.updated"), Some(last + 1))
    );
    assert_eq!(mode["runtime"]["eventSeq"], last + 1);
    let mut next = vec![updated];
    next.extend(send_turn(&mut b, &sid, "three").await);
    assert_eq!(next[1]["type"], "turn.started");
    assert_consecutive(&next);
    let read = b.call("session/read", json!({"sessionId": sid})).await;
    assert_eq!(
        read["runtime"]["eventSeq"],
        next.last().expect("last")["seq"]
    );
    assert!(b.shutdown().await);

    // A third process sees both processes' events as one log.
    let mut c = spawn(&env, &script, None, None);
    c.call("session/resume", json!({"sessionId": sid})).await;
    let everything = events_of(&subscribe(&mut c, &sid, Some(0)).await);
    let mut expected = seen.clone();
    expected.extend(next);
    assert_eq!(everything, expected);
    assert!(c.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_turn_then_restart_keeps_every_seen_seq_once() {
    let env = Env::new();
    let script = turns(2, 400);
    for kill_after in [1usize, 37, 203] {
        let mut a = spawn(&env, &script, Some(16), None);
        let sid = a.create(&env.workspace_str(), "yolo").await;
        subscribe(&mut a, &sid, None).await;
        a.call("session/send", json!({"sessionId": sid, "content": "go"}))
            .await;
        let mut seen = Vec::new();
        while seen.len() < kill_after {
            seen.push(a.event(&sid).await);
        }
        a.child.start_kill().expect("SIGKILL");
        let _ = a.wait_exit().await;
        assert_consecutive(&seen);

        // A kill inside a write leaves a torn last line.
        let log = env.data().join("sessions").join(&sid).join("events.jsonl");
        let mut bytes = std::fs::read(&log).expect("the event log");
        bytes.extend_from_slice(br#"{"seq":999999,"event":{"eventId":"evt_torn","sess"#);
        std::fs::write(&log, bytes).expect("tear");

        let mut b = spawn(&env, &script, Some(16), None);
        let resumed = b
            .call_raw("session/resume", json!({"sessionId": sid}))
            .await;
        assert!(resumed.get("result").is_some(), "{resumed}");
        let replay = subscribe(&mut b, &sid, Some(0)).await;
        let stored = events_of(&replay);
        // Nothing the client saw is missing or numbered twice; the torn line is gone.
        assert_eq!(seqs(&stored), (1..=stored.len() as u64).collect::<Vec<_>>());
        assert!(
            stored.len() >= seen.len(),
            "{} < {}",
            stored.len(),
            seen.len()
        );
        assert_eq!(stored[..seen.len()], seen[..], "what was shown was stored");
        assert_eq!(replay["eventSeq"], stored.len() as u64);
        let text = std::fs::read_to_string(&log).expect("log");
        assert!(
            text.lines()
                .all(|l| serde_json::from_str::<Value>(l).is_ok()),
            "a torn line is left"
        );
        // The next turn continues right after the stored events.
        let next = send_turn(&mut b, &sid, "again").await;
        assert_eq!(next[0]["seq"], stored.len() as u64 + 1);
        assert_consecutive(&next);
        assert!(b.shutdown().await);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_with_more_events_than_the_window_replays_from_disk() {
    let env = Env::new();
    let script = turns(2, 120);
    let window = 8;
    let mut a = spawn(&env, &script, Some(window), None);
    let sid = a.create(&env.workspace_str(), "yolo").await;
    subscribe(&mut a, &sid, None).await;
    let seen = send_turn(&mut a, &sid, "long").await;
    assert!(seen.len() as u64 > 10 * window);
    // In the same process: all of it, most from disk.
    let replay = subscribe(&mut a, &sid, Some(0)).await;
    assert_eq!(events_of(&replay), seen);
    for after in [1u64, 50, seen.len() as u64 - 3] {
        let pulled = a
            .call(
                "session/events",
                json!({"sessionId": sid, "afterSeq": after, "limit": 5}),
            )
            .await;
        let from = after as usize;
        let to = (from + 5).min(seen.len());
        assert_eq!(events_of(&pulled), seen[from..to].to_vec(), "after {after}");
    }
    assert!(a.shutdown().await);
    // And after a restart.
    let mut b = spawn(&env, &script, Some(window), None);
    b.call("session/resume", json!({"sessionId": sid})).await;
    let replay = subscribe(&mut b, &sid, Some(3)).await;
    assert_eq!(events_of(&replay), seen[3..].to_vec());
    assert!(b.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_from_before_the_retained_log_gets_the_snapshot_form() {
    let env = Env::new();
    let script = turns(4, 30);
    let retention = 20;
    let mut a = spawn(&env, &script, Some(4), Some(retention));
    let sid = a.create(&env.workspace_str(), "yolo").await;
    subscribe(&mut a, &sid, None).await;
    let mut seen = Vec::new();
    for prompt in ["one", "two", "three"] {
        seen.extend(send_turn(&mut a, &sid, prompt).await);
    }
    let last = seen.len() as u64;
    assert!(last > 3 * retention);
    assert!(a.shutdown().await);

    let mut b = spawn(&env, &script, Some(4), Some(retention));
    b.call("session/resume", json!({"sessionId": sid})).await;
    // From seq 0, long trimmed: no events, the snapshot and the current eventSeq.
    let gap = subscribe(&mut b, &sid, Some(0)).await;
    assert_eq!(gap["eventSeq"], last);
    assert!(events_of(&gap).is_empty());
    let snapshot = &gap["snapshot"];
    assert_eq!(snapshot["runtime"]["eventSeq"], last);
    assert_eq!(snapshot["session"]["sessionId"], sid.as_str());
    assert!(snapshot["messages"]
        .as_array()
        .is_some_and(|m| !m.is_empty()));
    // Beyond the log is a gap too.
    let ahead = subscribe(&mut b, &sid, Some(last + 5)).await;
    assert!(ahead.get("snapshot").is_some());
    assert!(events_of(&ahead).is_empty());
    // Within what is retained: an ordinary replay.
    let recent = subscribe(&mut b, &sid, Some(last - 5)).await;
    assert!(recent.get("snapshot").is_none());
    assert_eq!(events_of(&recent), seen[(last - 5) as usize..].to_vec());
    // session/events gives what is retained: its first seq shows the gap.
    let pulled = events_of(
        &b.call("session/events", json!({"sessionId": sid, "afterSeq": 0}))
            .await,
    );
    let first = pulled[0]["seq"].as_u64().expect("seq");
    assert!(first > 1 && last + 1 - first <= retention + retention / 2);
    assert_eq!(pulled, seen[first as usize - 1..].to_vec());
    // The file holds only what is retained.
    let log = env.data().join("sessions").join(&sid).join("events.jsonl");
    let lines = std::fs::read_to_string(&log).expect("log").lines().count() as u64;
    assert_eq!(lines, last + 1 - first);
    assert!(b.shutdown().await);
}
