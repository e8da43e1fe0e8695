//! `app-server` `session/rewind` (the protocol document's "Rewind to a checkpoint"): two
//! turns of edits; undoing the second by its turn index is refused while a file someone
//! changed since is in the way (nothing changed), then goes through (files back byte for
//! byte); the first is undone by `latestCheckpoint` with `force`; bad targets and a stale
//! `expectedRevision` answer -32602.

mod common;

use common::{text, types, Env};
use serde_json::{json, Value};

fn write_call(id: &str, path: &str, content: &str) -> Value {
    let args = json!({"path": path, "content": content}).to_string();
    json!({"tool_call": {"id": id, "name": "write_file", "args": [args]}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_rewound_by_turn_and_by_latest_checkpoint() {
    let env = Env::new();
    let ws = env.workspace_str();
    let file = |name: &str| std::fs::read(env.workspace().join(name)).ok();
    std::fs::write(env.workspace().join("a.txt"), b"orig\r\n\xc3\xa9").expect("write");
    let mut c = env.spawn(json!([
        {"steps": [write_call("c1", "a.txt", "v1")]},
        {"steps": [text("one done")]},
        {"steps": [write_call("c2", "b.txt", "new"), write_call("c3", "a.txt", "v2")]},
        {"steps": [text("two done")]}
    ]));
    let sid = c.create(&ws, "yolo").await;
    c.call("session/subscribe", json!({"sessionId": sid})).await;
    for prompt in ["one", "two"] {
        c.call("session/send", json!({"sessionId": sid, "content": prompt}))
            .await;
        c.events_until(&sid, &["turn.completed"]).await;
    }
    assert_eq!(file("a.txt").as_deref(), Some(&b"v2"[..]));
    // Someone else changes b.txt after the agent wrote it.
    std::fs::write(env.workspace().join("b.txt"), "the user's").expect("write");

    let stale = c
        .call_err(
            "session/rewind",
            json!({"sessionId": sid, "expectedRevision": 999999}),
        )
        .await;
    assert_eq!(stale["code"], -32602, "{stale}");
    let out_of_range = c
        .call_err(
            "session/rewind",
            json!({"sessionId": sid, "target": {"kind": "turn", "turnIndex": 5}}),
        )
        .await;
    assert_eq!(out_of_range["code"], -32602, "{out_of_range}");

    // session/fork takes the same checkpoint targets: before the call that made it.
    let forked = c
        .call(
            "session/fork",
            json!({"sessionId": sid, "target": {"kind": "checkpoint", "checkpointId": "c2"}}),
        )
        .await;
    let texts = common::texts_of(&forked["snapshot"]);
    assert!(texts.iter().any(|t| t.contains("one done")), "{texts:?}");
    assert!(!texts.iter().any(|t| t.contains("two done")), "{texts:?}");
    let unknown = c
        .call_err(
            "session/fork",
            json!({"sessionId": sid, "target": {"kind": "checkpoint", "checkpointId": "zz"}}),
        )
        .await;
    assert_eq!(unknown["code"], -32602, "{unknown}");

    let turn_one = json!({"sessionId": sid, "target": {"kind": "turn", "turnIndex": 1}});
    let refused = c.call_err("session/rewind", turn_one.clone()).await;
    assert_eq!(refused["code"], -32600, "{refused}");
    assert_eq!(refused["data"]["conflicts"], json!(["b.txt"]), "{refused}");
    assert_eq!(
        file("a.txt").as_deref(),
        Some(&b"v2"[..]),
        "nothing changed"
    );
    assert_eq!(file("b.txt").as_deref(), Some(&b"the user's"[..]));

    // The user puts b.txt back as the agent left it: the rewind goes through.
    std::fs::write(env.workspace().join("b.txt"), "new").expect("write");
    let rewound = c.call("session/rewind", turn_one).await;
    assert_eq!(rewound["rewind"]["checkpointId"], "c2", "{rewound}");
    assert_eq!(rewound["rewind"]["restored"], json!(["a.txt"]));
    assert_eq!(rewound["rewind"]["deleted"], json!(["b.txt"]));
    assert_eq!(file("a.txt").as_deref(), Some(&b"v1"[..]));
    assert!(file("b.txt").is_none());
    let texts = common::message_texts(&mut c, &sid).await;
    assert!(!texts.iter().any(|t| t.contains("two done")), "{texts:?}");
    let events = c.events_until(&sid, &["rewind.triggered"]).await;
    let event = events.last().expect("an event");
    assert_eq!(event["payload"]["checkpointId"], "c2", "{event}");
    assert_eq!(event["payload"]["deleted"], json!(["b.txt"]));

    std::fs::write(env.workspace().join("a.txt"), "edited again").expect("write");
    let forced = c
        .call(
            "session/rewind",
            json!({"sessionId": sid, "target": {"kind": "latestCheckpoint"}, "force": true}),
        )
        .await;
    assert_eq!(forced["rewind"]["checkpointId"], "c1", "{forced}");
    assert_eq!(file("a.txt").as_deref(), Some(&b"orig\r\n\xc3\xa9"[..]));
    assert!(forced["response"]
        .as_str()
        .is_some_and(|r| r.contains("1 file(s) restored")));

    let none = c
        .call_err("session/rewind", json!({"sessionId": sid}))
        .await;
    assert_eq!(none["code"], -32602, "{none}");
    assert!(
        none["message"]
            .as_str()
            .is_some_and(|m| m.contains("no checkpoint")),
        "{none}"
    );
    let events = c.events_until(&sid, &["rewind.triggered"]).await;
    let event = events.last().expect("an event");
    assert_eq!(
        event["payload"]["checkpointId"],
        "c1",
        "{:?}",
        types(&events)
    );
    assert_eq!(event["payload"]["restored"], json!(["a.txt"]));
    assert!(c.shutdown().await, "clean exit");
}
