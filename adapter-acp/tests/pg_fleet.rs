//! Sessions shared by a fleet through PostgreSQL (issue 21): several `adapter-acp` processes
//! ("nodes", each with its own data directory) started with `--session-store postgres://…`
//! on one database. A session created on node A is listed, resumed, read, replayed
//! (`afterSeq`) and continued on node B, and back on A; two nodes racing to send run exactly
//! one turn; a node killed mid-turn leaves the session to another; a stopped database is a
//! clear error for the requests that need it and the node recovers; ACP `session/list` and
//! `session/load` work across nodes.
//!
//! The database server is `test_support::pg`'s: `AGENT_SDK_PG_URL`, else a throw-away server
//! started for the test run when PostgreSQL is installed; each test makes a fresh database on
//! it. Without one the tests print a `skipped: …` line, unless `AGENT_SDK_PG=required` (CI),
//! when they fail.

mod common;

use std::path::PathBuf;

use agent_store_postgres::testing::fresh_database;
use common::acp_client::Acp;
use common::{assert_consecutive, events_of, send_turn, seqs, subscribe, texts_of, Client, WAIT};
use serde_json::{json, Value};
use test_support::pg::{server_url, PrivateServer};

/// One workspace shared by every node, and a directory of each node's own.
struct Fleet {
    root: tempfile::TempDir,
    db: String,
}

impl Fleet {
    /// A fleet on a fresh database of the test server, or `None` (skip) without one.
    async fn new() -> Option<Self> {
        let url = server_url()?;
        Some(Self::on(fresh_database(&url).await))
    }

    fn on(db: String) -> Self {
        let root = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(root.path().join("ws")).expect("workspace");
        Self { root, db }
    }

    fn workspace(&self) -> String {
        self.root.path().join("ws").display().to_string()
    }

    /// Node `name`'s directory (its data directory and script live there).
    fn node_dir(&self, name: &str) -> PathBuf {
        let dir = self.root.path().join(name);
        std::fs::create_dir_all(dir.join("data")).expect("node dir");
        dir
    }

    /// The arguments of node `name` playing `turns`, after the sub-command.
    fn args(&self, name: &str, turns: Value) -> Vec<String> {
        let dir = self.node_dir(name);
        let script = common::write_script(&dir, turns);
        [
            "--provider",
            "scripted",
            "--script",
            &script.display().to_string(),
            "--data-dir",
            &dir.join("data").display().to_string(),
            "--session-store",
            &self.db,
        ]
        .map(str::to_string)
        .to_vec()
    }

    /// An app-server node.
    fn node(&self, name: &str, turns: Value) -> Client {
        let mut args = vec!["app-server".to_string(), "--stdio".to_string()];
        args.extend(self.args(name, turns));
        Client::spawn(&args)
    }

    /// An ACP node.
    fn acp_node(&self, name: &str, turns: Value) -> Acp {
        Acp::spawn(&self.args(name, turns), &[], None)
    }
}

/// Turns answering `text` each.
fn answers(texts: &[&str]) -> Value {
    Value::Array(
        texts
            .iter()
            .map(|t| json!({"steps": [{"text": *t}]}))
            .collect(),
    )
}

/// A turn that says `text` and then waits a minute (it is stopped or killed before).
fn slow(text: &str) -> Value {
    json!([{"steps": [{"text": text}, {"delay_ms": 60000}, {"text": " never"}]},
           {"steps": [{"text": "after"}]}])
}

/// The text of every message of a `session/messages` or `session/read` result.
fn texts(result: &Value) -> String {
    result.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_moves_between_nodes_with_its_history_and_seq() {
    let Some(fleet) = Fleet::new().await else {
        return;
    };
    let mut a = fleet.node("a", answers(&["alpha-one", "alpha-two"]));
    let mut b = fleet.node("b", answers(&["bravo-two"]));
    let sid = a.create(&fleet.workspace(), "yolo").await;
    subscribe(&mut a, &sid, None).await;
    let seen_a = send_turn(&mut a, &sid, "first prompt").await;
    assert_consecutive(&seen_a);
    assert_eq!(seen_a.last().expect("events")["type"], "turn.completed");
    let last_a = seen_a.len() as u64;

    // B lists it (it was never on B's disk), resumes it with A's seq, reads A's turn.
    let listed = b.call("session/list", json!({})).await;
    assert!(
        listed["sessions"]
            .as_array()
            .expect("sessions")
            .iter()
            .any(|s| s["sessionId"] == sid.as_str()),
        "{listed}"
    );
    let resumed = b.call("session/resume", json!({"sessionId": sid})).await;
    assert_eq!(resumed["runtime"]["eventSeq"], last_a);
    let read = b.call("session/read", json!({"sessionId": sid})).await;
    assert!(texts(&read).contains("first prompt"), "{read}");
    assert!(texts(&read).contains("alpha-one"), "{read}");
    // afterSeq replay on B of the events A wrote: all, the tail after a middle seq, none.
    let all = subscribe(&mut b, &sid, Some(0)).await;
    assert_eq!(events_of(&all), seen_a);
    let middle = last_a / 2;
    let tail = subscribe(&mut b, &sid, Some(middle)).await;
    assert_eq!(events_of(&tail), seen_a[middle as usize..].to_vec());
    let none = subscribe(&mut b, &sid, Some(last_a)).await;
    assert!(events_of(&none).is_empty());
    assert_eq!(none["eventSeq"], last_a);

    // B continues: the seq goes on after A's.
    let seen_b = send_turn(&mut b, &sid, "second prompt").await;
    assert_consecutive(&seen_b);
    assert_eq!(seen_b[0]["seq"], last_a + 1, "{}", seen_b[0]);
    let messages = b.call("session/messages", json!({"sessionId": sid})).await;
    for text in ["first prompt", "alpha-one", "second prompt", "bravo-two"] {
        assert!(texts(&messages).contains(text), "{text}: {messages}");
    }

    // Back on A, which still has the session open: its send reloads it, A's subscriber is
    // brought up to date with B's events, and A's turn continues after them.
    a.call(
        "session/send",
        json!({"sessionId": sid, "content": "third prompt"}),
    )
    .await;
    // B's turn's events come first, pushed to A's subscriber, then A's own turn.
    let pushed = a
        .events_until(&sid, &["turn.completed", "turn.failed"])
        .await;
    assert_eq!(pushed, seen_b);
    let third = a
        .events_until(&sid, &["turn.completed", "turn.failed"])
        .await;
    assert_eq!(third[0]["type"], "turn.started");
    assert_eq!(
        third[0]["seq"],
        seen_b.last().expect("b's events")["seq"]
            .as_u64()
            .expect("seq")
            + 1
    );
    assert_consecutive(&third);
    // The whole history, in order (A's reloaded session has a new agent, whose scripted
    // provider plays its script from the start again).
    let messages = a.call("session/messages", json!({"sessionId": sid})).await;
    assert_eq!(
        texts_of(&messages),
        [
            "first prompt",
            "alpha-one",
            "second prompt",
            "bravo-two",
            "third prompt",
            "alpha-one"
        ]
    );

    // B sees one log of both nodes' events, and forks the session; A lists the fork.
    let everything = events_of(&subscribe(&mut b, &sid, Some(0)).await);
    let mut expected = seen_a.clone();
    expected.extend(seen_b.clone());
    expected.extend(third.clone());
    assert_eq!(everything, expected);
    assert_eq!(
        seqs(&everything),
        (1..=everything.len() as u64).collect::<Vec<_>>()
    );
    let forked = b.call("session/fork", json!({"sessionId": sid})).await;
    let fork_id = forked["forkedSessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("fork id in {forked}"))
        .to_string();
    assert_ne!(fork_id, sid);
    let listed = a.call("session/list", json!({})).await;
    let ids = common::session_ids(&listed);
    assert!(
        ids.contains(&fork_id.as_str()) && ids.contains(&sid.as_str()),
        "{listed}"
    );
    a.call("session/resume", json!({"sessionId": fork_id}))
        .await;
    let fork_messages = a
        .call("session/messages", json!({"sessionId": fork_id}))
        .await;
    assert_eq!(
        texts_of(&fork_messages),
        texts_of(&messages),
        "the fork on B has A's last turn"
    );
    assert!(a.shutdown().await);
    assert!(b.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_racing_to_send_run_exactly_one_turn() {
    let Some(fleet) = Fleet::new().await else {
        return;
    };
    let mut a = fleet.node("a", slow("from-a"));
    let mut b = fleet.node("b", slow("from-b"));
    let sid = a.create(&fleet.workspace(), "yolo").await;
    b.call("session/resume", json!({"sessionId": sid})).await;
    subscribe(&mut a, &sid, None).await;
    subscribe(&mut b, &sid, None).await;

    // Both send at once.
    let send = |id: i64| json!({"id": id, "method": "session/send", "params": {"sessionId": sid, "content": "race"}});
    a.send(send(100)).await;
    b.send(send(100)).await;
    let (ra, rb) = tokio::join!(a.reply(json!(100)), b.reply(json!(100)));
    let won: Vec<bool> = [&ra, &rb]
        .iter()
        .map(|r| r.get("result").is_some())
        .collect();
    assert_eq!(
        won.iter().filter(|w| **w).count(),
        1,
        "exactly one send is accepted: {ra} {rb}"
    );
    let (winner, loser, lost_reply) = match won[0] {
        true => (&mut a, &mut b, rb),
        false => (&mut b, &mut a, ra),
    };
    // The other gets ZCode's busy error.
    assert_eq!(lost_reply["error"]["code"], -32010, "{lost_reply}");
    let message = lost_reply["error"]["message"].as_str().expect("message");
    assert!(message.contains("prompt is running"), "{message}");

    // The winner's turn runs; the loser's node ran none. Stop the winner's turn.
    let started = winner.event(&sid).await;
    assert_eq!(started["type"], "turn.started", "{started}");
    winner.call("session/stop", json!({"sessionId": sid})).await;
    let rest = winner.events_until(&sid, &["turn.completed"]).await;
    assert_eq!(
        rest.last().expect("events")["payload"]["resultType"],
        "cancelled"
    );
    // One turn in the shared log, and the loser can send now.
    let log = events_of(&subscribe(loser, &sid, Some(0)).await);
    let turns = log.iter().filter(|e| e["type"] == "turn.started").count();
    assert_eq!(turns, 1, "{log:?}");
    loser
        .call("session/send", json!({"sessionId": sid, "content": "next"}))
        .await;
    let next = loser.events_until(&sid, &["turn.started"]).await;
    assert_eq!(
        next.last().expect("started")["seq"].as_u64(),
        Some(log.len() as u64 + 1)
    );
    loser.call("session/stop", json!({"sessionId": sid})).await;
    loser.events_until(&sid, &["turn.completed"]).await;
    assert!(a.shutdown().await);
    assert!(b.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_killed_mid_turn_leaves_the_session_to_another() {
    let Some(fleet) = Fleet::new().await else {
        return;
    };
    let mut a = fleet.node("a", slow("partial-from-a"));
    let sid = a.create(&fleet.workspace(), "yolo").await;
    subscribe(&mut a, &sid, None).await;
    a.call(
        "session/send",
        json!({"sessionId": sid, "content": "doomed prompt"}),
    )
    .await;
    // A's turn is under way (its text was stored and shown), then A is killed.
    let mut seen = Vec::new();
    loop {
        let event = a.event(&sid).await;
        let text = event.to_string().contains("partial-from-a");
        seen.push(event);
        if text {
            break;
        }
    }
    a.child.start_kill().expect("SIGKILL");
    let _ = a.wait_exit().await;

    let mut b = fleet.node("b", answers(&["bravo-after-the-crash"]));
    let resumed = b.call("session/resume", json!({"sessionId": sid})).await;
    let stored = resumed["runtime"]["eventSeq"].as_u64().expect("eventSeq");
    assert!(stored >= seen.len() as u64, "{stored} < {}", seen.len());
    let replay = events_of(&subscribe(&mut b, &sid, Some(0)).await);
    assert_eq!(replay[..seen.len()], seen[..], "what A showed was stored");
    assert_consecutive(&replay);
    // A's lease went with its process: B's send is accepted (the server notices A's
    // closed connection a moment after the kill: until then the session is busy).
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let reply = b
            .call_raw(
                "session/send",
                json!({"sessionId": sid, "content": "after the crash"}),
            )
            .await;
        if reply.get("result").is_some() {
            break;
        }
        assert_eq!(reply["error"]["code"], -32010, "{reply}");
        assert!(
            tokio::time::Instant::now() < deadline,
            "still busy: {reply}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let next = b
        .events_until(&sid, &["turn.completed", "turn.failed"])
        .await;
    assert_eq!(next[0]["seq"], stored + 1);
    assert_eq!(next.last().expect("events")["type"], "turn.completed");
    assert!(next
        .iter()
        .any(|e| e.to_string().contains("bravo-after-the-crash")));
    let messages = b.call("session/messages", json!({"sessionId": sid})).await;
    assert!(texts(&messages).contains("doomed prompt"), "{messages}");
    assert!(texts(&messages).contains("after the crash"), "{messages}");
    assert!(b.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_database_is_a_clear_error_and_the_node_recovers() {
    let Some(server) = PrivateServer::start() else {
        return;
    };
    let fleet = Fleet::on(fresh_database(&server.url).await);
    let mut a = fleet.node("a", answers(&["before", "after"]));
    let sid = a.create(&fleet.workspace(), "yolo").await;
    subscribe(&mut a, &sid, None).await;
    let before = send_turn(&mut a, &sid, "one").await;
    assert_eq!(before.last().expect("events")["type"], "turn.completed");

    server.pause();
    // Requests that need the database fail, each with an error saying so (never a hang:
    // every read of the client is bounded).
    let listed = a.call_raw("session/list", json!({})).await;
    let error = &listed["error"];
    assert_eq!(error["code"], -32603, "{listed}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("session store")),
        "{listed}"
    );
    assert!(!listed.to_string().contains(&fleet.db), "no URL in errors");
    let sent = a
        .call_raw("session/send", json!({"sessionId": sid, "content": "two"}))
        .await;
    assert!(sent.get("error").is_some(), "{sent}");
    assert!(
        sent["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("session store")),
        "{sent}"
    );
    // The process keeps serving what needs no database.
    let servers = a.call("mcp/list", json!({"sessionId": sid})).await;
    assert!(servers["servers"].is_array(), "{servers}");

    server.resume();
    // Back: the pool reconnects (the node's lease presence with backoff).
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let listed = a.call_raw("session/list", json!({})).await;
        if listed.get("result").is_some() {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{listed}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let after = send_turn(&mut a, &sid, "two").await;
    assert_eq!(after.last().expect("events")["type"], "turn.completed");
    assert_eq!(
        after[0]["seq"],
        before.last().expect("events")["seq"].as_u64().expect("seq") + 1
    );
    assert!(a.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_sessions_list_load_and_prompt_across_nodes() {
    let Some(fleet) = Fleet::new().await else {
        return;
    };
    let ws = PathBuf::from(fleet.workspace());
    let mut one = fleet.acp_node(
        "one",
        json!([{"steps": [{"text": "answer-from-one"}]},
        {"steps": [{"text": "slow"}, {"delay_ms": 60000}]}]),
    );
    one.initialize().await;
    let sid = one.new_session(&ws).await;
    let reply = one.prompt(&sid, "hello from one").await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");

    let mut two = fleet.acp_node("two", answers(&["answer-from-two"]));
    two.initialize().await;
    let listed = two.call("session/list", json!({})).await;
    assert!(
        listed["sessions"]
            .as_array()
            .expect("sessions")
            .iter()
            .any(|s| s["sessionId"] == sid.as_str()),
        "{listed}"
    );
    let loaded = two
        .call_raw(
            "session/load",
            json!({"sessionId": sid, "cwd": ws, "mcpServers": []}),
        )
        .await;
    assert!(loaded.get("result").is_some(), "{loaded}");
    let replayed: String = two
        .backlog
        .iter()
        .filter(|m| m["method"] == "session/update")
        .map(|m| m.to_string())
        .collect();
    assert!(replayed.contains("hello from one"), "{replayed}");
    assert!(replayed.contains("answer-from-one"), "{replayed}");

    // A prompt running on one: two's prompt is refused as busy.
    let running = one.request_prompt(&sid, "long").await;
    one.next_matching(|m| m.to_string().contains("\"slow\""))
        .await;
    let refused = two.prompt(&sid, "meanwhile").await;
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("prompt is running")),
        "{refused}"
    );
    one.send(json!({"method": "session/cancel", "params": {"sessionId": sid}}))
        .await;
    let cancelled = one.reply(running).await;
    assert_eq!(
        cancelled["result"]["stopReason"], "cancelled",
        "{cancelled}"
    );
    // Then two continues it.
    let reply = two.prompt(&sid, "now two").await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    assert!(one.shutdown().await);
    assert!(two.shutdown().await);
}
