//! The contract every [`SessionStorage`] backend keeps, as one test suite each backend runs
//! (feature `test-util`): the files ([`FileStore`](crate::session::FileStore)), Zero's
//! layout (adapter-stream-json) and PostgreSQL (agent-store-postgres) run these same
//! functions, each on a storage of its own that holds no session yet.
//!
//! - [`metadata`]: metadata round-trips and is replaced whole, listing skips sessions with
//!   only records, pages continue after their last entry, filters by workspace and ids.
//! - [`transcripts`]: records come back in order, verbatim; unknown sessions are not found.
//! - [`event_log`]: the event-log contract of the [module docs](super).
//! - [`deletion`]: a deleted session is gone, the others stay (backends that can delete).
//!
//! They panic (as a test does) when the storage breaks the contract. What only one backend
//! promises (the order of an unpaged listing, an empty log starting at 1, several processes
//! at once) stays in that backend's own tests.

use agent_core::{
    session::{SessionError, SessionRecord},
    Message,
};

use super::{Durability, EventBounds, MetaQuery, SessionStorage, StoreError, StoredEvent};
use crate::session::types::{SessionMeta, SessionMode};

/// A session's metadata: `id` in `workspace` (key `key:<workspace>`), created at 1 ms, last
/// changed at `updated_at` ms.
pub fn meta(id: &str, workspace: &str, updated_at: i64) -> SessionMeta {
    let meta = serde_json::json!({
        "sessionId": id,
        "workspacePath": workspace,
        "workspaceKey": format!("key:{workspace}"),
        "providerId": "scripted",
        "model": "demo",
        "createdAt": 1,
        "updatedAt": updated_at,
    });
    match serde_json::from_value(meta) {
        Ok(meta) => meta,
        Err(err) => panic!("a session's metadata: {err}"),
    }
}

/// Event `seq` of a log: one JSON object with text a store must keep byte for byte.
pub fn event(seq: u64) -> StoredEvent {
    match StoredEvent::new(seq, format!(r#"{{"seq":{seq},"text":"é\u0000\u2028"}}"#)) {
        Ok(event) => event,
        Err(err) => panic!("event {seq}: {err}"),
    }
}

/// Events `seqs`, one [`event`] each.
pub fn events(seqs: std::ops::RangeInclusive<u64>) -> Vec<StoredEvent> {
    seqs.map(event).collect()
}

fn ids(metas: Vec<SessionMeta>) -> Vec<String> {
    metas.into_iter().map(|m| m.session_id).collect()
}

/// The metadata half: sessions `sess_a` … `sess_e` (in `/w/one` and `/w/two`) and
/// `sess_records_only` (records, no metadata) are left behind.
pub async fn metadata(store: &dyn SessionStorage) {
    let mut first = meta("sess_a", "/w/one", 10);
    first.title = "with a NUL \0 inside".to_string();
    first.mode = SessionMode::Plan;
    first.parent_session_id = Some("sess_parent".to_string());
    store.save_meta(&first).await.expect("save");
    assert_eq!(store.load_meta("sess_a").await.expect("load"), first);
    first.title = "renamed".to_string();
    store.save_meta(&first).await.expect("replace");
    assert_eq!(
        store.load_meta("sess_a").await.expect("load").title,
        "renamed"
    );
    assert!(matches!(
        store.load_meta("sess_missing").await,
        Err(StoreError::NotFound(_))
    ));

    for (id, workspace, updated) in [
        ("sess_b", "/w/one", 20),
        ("sess_c", "/w/two", 30),
        ("sess_d", "/w/one", 30),
        ("sess_e", "/w/two", 5),
    ] {
        store
            .save_meta(&meta(id, workspace, updated))
            .await
            .expect("save");
    }
    // A session with records but no metadata is not listed.
    store
        .append(
            "sess_records_only",
            &SessionRecord::Message {
                message: Message::user_text("x"),
            },
        )
        .await
        .expect("append");

    let mut all = ids(store.list_meta().await.expect("list"));
    all.sort();
    assert_eq!(all, ["sess_a", "sess_b", "sess_c", "sess_d", "sess_e"]);

    // Pages of two, each continuing after the last entry of the one before.
    let mut pages = Vec::new();
    let mut query = MetaQuery {
        limit: Some(2),
        ..Default::default()
    };
    loop {
        let page = store.list_meta_page(&query).await.expect("page");
        let Some(last) = page.last() else { break };
        query.before = Some((last.updated_at, last.session_id.clone()));
        pages.push(ids(page));
    }
    assert_eq!(
        pages,
        vec![
            vec!["sess_d", "sess_c"],
            vec!["sess_b", "sess_a"],
            vec!["sess_e"]
        ]
    );

    let by_path = MetaQuery {
        workspace: Some("/w/one".into()),
        ..Default::default()
    };
    assert_eq!(
        ids(store.list_meta_page(&by_path).await.expect("list")),
        ["sess_d", "sess_b", "sess_a"]
    );
    let by_key = MetaQuery {
        workspace: Some("key:/w/two".into()),
        session_ids: Some(vec!["sess_e".into(), "sess_a".into()]),
        ..Default::default()
    };
    assert_eq!(
        ids(store.list_meta_page(&by_key).await.expect("list")),
        ["sess_e"]
    );
    // The default (filter and sort in memory) agrees with the backend's own query.
    for query in [by_path, by_key] {
        let expected: Vec<String> = {
            let mut metas: Vec<SessionMeta> = store
                .list_meta()
                .await
                .expect("list")
                .into_iter()
                .filter(|m| query.matches(m))
                .collect();
            metas.sort_by(|a, b| (b.updated_at, &b.session_id).cmp(&(a.updated_at, &a.session_id)));
            ids(metas)
        };
        assert_eq!(
            ids(store.list_meta_page(&query).await.expect("list")),
            expected
        );
    }
}

/// The transcript half: sessions `sess_t` (metadata and seven records: a file checkpoint
/// with bytes that are no UTF-8 among them) and `sess_many`
/// (twenty records appended at once, no metadata) are left behind.
pub async fn transcripts(store: &dyn SessionStorage) {
    assert!(matches!(
        store.load("sess_none").await,
        Err(SessionError::NotFound(_))
    ));
    store
        .save_meta(&meta("sess_t", "/w", 1))
        .await
        .expect("save");
    assert!(store.load("sess_t").await.expect("empty").is_empty());
    let records: Vec<SessionRecord> = vec![
        SessionRecord::Message {
            message: Message::user_text("héllo \u{0} \u{2028}"),
        },
        SessionRecord::Notes {
            notes: vec!["pinned".into()],
        },
        SessionRecord::Replaced {
            messages: vec![Message::assistant_text("summary")],
        },
        SessionRecord::Cleared,
        SessionRecord::Granted {
            tool: "bash".into(),
        },
        SessionRecord::Checkpoint {
            checkpoint: Box::new(agent_core::rewind::Checkpoint {
                id: "call_1".into(),
                tool: "write_file".into(),
                files: vec![agent_core::rewind::FileCheckpoint {
                    path: "src/a.rs".into(),
                    before: agent_core::rewind::FileBefore::Content {
                        data: bytes::Bytes::from_static(b"\xff\x00 before\r\n"),
                        mode: Some(0o644),
                    },
                    after: Some(agent_core::rewind::content_hash(b"after")),
                }],
            }),
        },
        SessionRecord::Rewound {
            checkpoint: "call_1".into(),
        },
    ];
    for record in &records {
        store.append("sess_t", record).await.expect("append");
    }
    assert_eq!(store.load("sess_t").await.expect("load"), records);
    assert!(store.sync_transcript("sess_t").await.is_ok());
    assert!(store.sync_events("sess_t").await.is_ok());

    // Appends at once: every record stored once.
    let appends = (0..20).map(|i| async move {
        store
            .append(
                "sess_many",
                &SessionRecord::Message {
                    message: Message::user_text(format!("m{i}")),
                },
            )
            .await
    });
    for appended in futures::future::join_all(appends).await {
        appended.expect("append");
    }
    let mut texts: Vec<String> = store
        .load("sess_many")
        .await
        .expect("load")
        .iter()
        .map(|record| match record {
            SessionRecord::Message { message } => message.text(),
            other => panic!("not a message: {other:?}"),
        })
        .collect();
    texts.sort();
    let mut expected: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
    expected.sort();
    assert_eq!(texts, expected);
    let mut listed = store.list().await.expect("ids");
    listed.sort();
    assert_eq!(listed, ["sess_many", "sess_t"].map(String::from));
}

/// The event-log contract, on session `sess_e` (whose metadata it stores first).
pub async fn event_log(store: &dyn SessionStorage) {
    store
        .save_meta(&meta("sess_e", "/w", 1))
        .await
        .expect("save");
    assert_eq!(
        store.event_bounds("sess_e").await.expect("bounds"),
        EventBounds::EMPTY
    );
    assert!(store
        .read_events("sess_e", 0, 10)
        .await
        .expect("read")
        .is_empty());
    store
        .append_events("sess_e", &events(1..=3), Durability::Buffered)
        .await
        .expect("append");
    store
        .append_events("sess_e", &events(4..=6), Durability::Sync)
        .await
        .expect("append");
    // Neither a repeat nor a gap is stored, and nothing of a refused batch.
    for bad in [events(6..=7), events(8..=9), events(3..=8)] {
        assert!(matches!(
            store
                .append_events("sess_e", &bad, Durability::Buffered)
                .await,
            Err(StoreError::Conflict { .. })
        ));
    }
    assert_eq!(
        store.event_bounds("sess_e").await.expect("bounds"),
        EventBounds { oldest: 1, last: 6 }
    );
    assert_eq!(
        store.read_events("sess_e", 0, 100).await.expect("read"),
        events(1..=6)
    );
    assert_eq!(
        store.read_events("sess_e", 2, 2).await.expect("read"),
        events(3..=4)
    );
    assert!(store
        .read_events("sess_e", 6, 10)
        .await
        .expect("read")
        .is_empty());
    assert!(store
        .read_events("sess_e", u64::MAX, 10)
        .await
        .expect("read")
        .is_empty());
    assert_eq!(
        store
            .read_events("sess_e", 0, usize::MAX)
            .await
            .expect("read")
            .len(),
        6
    );
    // Events come back byte for byte.
    let back = store.read_events("sess_e", 0, 1).await.expect("read");
    assert_eq!(back[0].json(), event(1).json());
    assert!(store.sync_events("sess_e").await.is_ok());

    // Trimming keeps the last event and moves the oldest.
    assert_eq!(
        store.trim_events("sess_e", 4).await.expect("trim"),
        EventBounds { oldest: 4, last: 6 }
    );
    assert_eq!(
        store.read_events("sess_e", 0, 100).await.expect("read"),
        events(4..=6)
    );
    assert_eq!(
        store.trim_events("sess_e", 100).await.expect("trim"),
        EventBounds { oldest: 6, last: 6 }
    );
    assert_eq!(
        store.trim_events("sess_e", 2).await.expect("trim"),
        EventBounds { oldest: 6, last: 6 }
    );
    store
        .append_events("sess_e", &events(7..=7), Durability::Buffered)
        .await
        .expect("append after trim");
    assert_eq!(
        store.event_bounds("sess_e").await.expect("bounds"),
        EventBounds { oldest: 6, last: 7 }
    );
    assert_eq!(
        store.read_events("sess_e", 0, 100).await.expect("read"),
        events(6..=7)
    );
}

/// Deletion: a deleted session (metadata, records, events) is neither listed nor loaded,
/// another is untouched, and deleting it again (or one never stored) is not found. Leaves
/// `sess_kept` behind.
pub async fn deletion(store: &dyn SessionStorage) {
    for id in ["sess_gone", "sess_kept"] {
        store.save_meta(&meta(id, "/ws", 5)).await.expect("save");
        store
            .append(
                id,
                &SessionRecord::Message {
                    message: Message::user_text("hi"),
                },
            )
            .await
            .expect("append");
        store
            .append_events(id, &events(1..=2), Durability::Buffered)
            .await
            .expect("events");
    }
    store.delete("sess_gone").await.expect("delete");
    let listed: Vec<String> = (store.list_meta().await.expect("list").into_iter())
        .map(|m| m.session_id)
        .collect();
    assert_eq!(listed, ["sess_kept"]);
    assert!(matches!(
        store.load_meta("sess_gone").await,
        Err(StoreError::NotFound(_))
    ));
    assert!(store.load("sess_gone").await.map_or(true, |r| r.is_empty()));
    assert!(matches!(
        store.delete("sess_gone").await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.delete("sess_never").await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(store.load("sess_kept").await.expect("load").len(), 1);
    assert_eq!(
        store.load_meta("sess_kept").await.expect("meta").session_id,
        "sess_kept"
    );
}
