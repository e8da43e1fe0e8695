use serde_json::json;

use super::*;
use crate::session::storage::contract::{self, event, events, meta};
use crate::session::zero::{CreateInput, SessionEvent};

fn storage(transcripts: Transcripts) -> (tempfile::TempDir, ZeroStorage) {
    let dir = tempfile::tempdir().expect("tempdir");
    let sessions = ZeroSessions::new(dir.path().join("zero").join("sessions"));
    (dir, ZeroStorage::new(sessions).transcripts(transcripts))
}

fn file(storage: &ZeroStorage, id: &str, name: &str) -> Vec<u8> {
    std::fs::read(storage.sessions().session_dir(id).join(name)).expect("read")
}

/// An exec run's session: created and appended to the way exec does.
fn exec_session(sessions: &ZeroSessions, id: &str) {
    sessions
        .create(CreateInput {
            session_id: Some(id.into()),
            title: "t".into(),
            cwd: "/w".into(),
            model_id: "demo".into(),
            provider: "scripted".into(),
            ..Default::default()
        })
        .expect("create");
    sessions
        .append(
            id,
            "message",
            Some(json!({"content": "hi", "role": "user"})),
        )
        .expect("append");
    sessions
        .append(id, "tool_call", Some(json!({"id": "c1", "name": "ls"})))
        .expect("append");
    sessions
        .append(
            id,
            "message",
            Some(json!({"content": "done", "role": "assistant"})),
        )
        .expect("append");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_storage_keeps_the_storage_contract() {
    for part in 0..3 {
        let (_dir, storage) = storage(Transcripts::Kept);
        match part {
            0 => contract::metadata(&storage).await,
            1 => contract::transcripts(&storage).await,
            _ => contract::event_log(&storage).await,
        }
    }
}

/// A host's session is in Zero's layout: Zero reads its metadata and events, its host
/// events are lines of type `host_event`, and the metadata counts them.
#[tokio::test]
async fn a_host_session_is_one_zero_reads() {
    let (_dir, storage) = storage(Transcripts::Kept);
    let mut host = meta("sess_h", "/w/one", 1_500);
    host.title = "Hello".into();
    storage.save_meta(&host).await.expect("save");
    storage
        .append_events("sess_h", &events(1..=2), Durability::Sync)
        .await
        .expect("append");
    let zero = storage
        .sessions()
        .get("sess_h")
        .expect("get")
        .expect("a Zero session");
    assert_eq!(zero.title, "Hello");
    assert_eq!(zero.cwd, "/w/one");
    assert_eq!(zero.created_at, "1970-01-01T00:00:00.001Z");
    assert_eq!(zero.event_count, 2);
    assert_eq!(zero.last_event_type, log::HOST_EVENT);
    assert_eq!(zero.extra[HOST_KEY]["workspaceKey"], "key:/w/one");
    let lines = storage
        .sessions()
        .read_events("sess_h")
        .expect("Zero reads them");
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1].id, "sess_h:2");
    assert_eq!(lines[1].kind, log::HOST_EVENT);
    assert_eq!(
        lines[1].payload.as_ref().expect("payload")["text"],
        "é\u{0}\u{2028}"
    );
    // Zero appends after them, and the host reads Zero's line as it is.
    let appended = storage
        .sessions()
        .append("sess_h", "error", Some(json!({"message": "x"})))
        .expect("append");
    assert_eq!(appended.sequence, 3);
    let back = storage.read_events("sess_h", 2, 10).await.expect("read");
    let text = String::from_utf8(file(&storage, "sess_h", EVENTS_FILE)).expect("utf-8");
    assert_eq!(Some(back[0].json()), text.lines().nth(2));
    // Saving the metadata again keeps what only Zero knows.
    host.title = "Renamed".into();
    storage.save_meta(&host).await.expect("save");
    let zero = storage
        .sessions()
        .get("sess_h")
        .expect("get")
        .expect("meta");
    assert_eq!(
        (zero.event_count, zero.last_event_type.as_str()),
        (3, "error")
    );
    assert_eq!(storage.load_meta("sess_h").await.expect("load"), host);
    // A pretty-printed event still takes one line.
    let pretty = StoredEvent::new(4, "{\n  \"a\": 1\n}".into()).expect("event");
    storage
        .append_events("sess_h", &[pretty], Durability::Buffered)
        .await
        .expect("append");
    assert_eq!(
        storage
            .sessions()
            .read_events("sess_h")
            .expect("read")
            .len(),
        4
    );
}

/// Zero lines given as events are stored byte for byte: a session copied line by line
/// through the event log is the same file, with the same count in its metadata.
#[tokio::test]
async fn zero_lines_are_stored_as_they_are() {
    let (_dir, storage) = storage(Transcripts::Kept);
    exec_session(storage.sessions(), "s1");
    let lines = storage.read_events("s1", 0, 100).await.expect("read");
    assert_eq!(lines.len(), 3);
    let (_other, copy) = self::storage(Transcripts::Kept);
    copy.sessions()
        .create(CreateInput {
            session_id: Some("s1".into()),
            ..Default::default()
        })
        .expect("create");
    copy.append_events("s1", &lines[..1], Durability::Sync)
        .await
        .expect("append");
    copy.append_events("s1", &lines[1..], Durability::Buffered)
        .await
        .expect("append");
    assert_eq!(
        file(&copy, "s1", EVENTS_FILE),
        file(&storage, "s1", EVENTS_FILE)
    );
    let (a, b) = (
        storage.sessions().get("s1").expect("get").expect("meta"),
        copy.sessions().get("s1").expect("get").expect("meta"),
    );
    assert_eq!(
        (b.event_count, &b.last_event_type, &b.updated_at),
        (a.event_count, &a.last_event_type, &a.updated_at)
    );
    // A Zero line of another place is refused; so is a gap or a repeat.
    let moved = StoredEvent::new(4, lines[0].json().to_string()).expect("event");
    assert!(matches!(
        copy.append_events("s1", &[moved], Durability::Buffered)
            .await,
        Err(StoreError::Corrupt { .. })
    ));
    for bad in [vec![event(5)], vec![event(3)], vec![event(4), event(6)]] {
        assert!(matches!(
            copy.append_events("s1", &bad, Durability::Buffered).await,
            Err(StoreError::Conflict { .. })
        ));
    }
    assert_eq!(
        file(&copy, "s1", EVENTS_FILE),
        file(&storage, "s1", EVENTS_FILE)
    );
    // An empty log starts at 1; a session without metadata has no log to append to.
    let (_empty, empty) = self::storage(Transcripts::Kept);
    empty
        .sessions()
        .create(CreateInput {
            session_id: Some("s3".into()),
            ..Default::default()
        })
        .expect("create");
    assert!(matches!(
        empty
            .append_events("s3", &events(2..=3), Durability::Buffered)
            .await,
        Err(StoreError::Conflict { .. })
    ));
    assert!(matches!(
        empty
            .append_events("nobody", &events(1..=1), Durability::Buffered)
            .await,
        Err(StoreError::NotFound(_))
    ));
}

/// A session Zero made reads as a host session: its workspace, its times, its conversation
/// from its `message` events.
#[tokio::test]
async fn a_zero_session_reads_as_a_host_session() {
    let (_dir, storage) = storage(Transcripts::Kept);
    exec_session(storage.sessions(), "s1");
    let zero = storage.sessions().get("s1").expect("get").expect("meta");
    let host = storage.load_meta("s1").await.expect("load");
    assert_eq!(host.session_id, "s1");
    assert_eq!(
        (host.workspace_path.as_str(), host.workspace_key.as_str()),
        ("/w", "/w")
    );
    assert_eq!(
        (host.model.as_str(), host.provider_id.as_str()),
        ("demo", "scripted")
    );
    assert_eq!(rfc3339(host.updated_at), zero.updated_at);
    assert_eq!(host.parent_session_id, None);
    let conversation: Vec<(agent_core::message::Role, String, String)> = storage
        .load("s1")
        .await
        .expect("load")
        .into_iter()
        .map(|record| match record {
            SessionRecord::Message { message } => (
                message.role,
                message.text(),
                message.time.to_rfc3339_opts(SecondsFormat::Secs, true),
            ),
            other => panic!("not a message: {other:?}"),
        })
        .collect();
    let events = storage.sessions().read_events("s1").expect("events");
    assert_eq!(
        conversation,
        [
            (
                agent_core::message::Role::User,
                "hi".into(),
                events[0].created_at.clone()
            ),
            (
                agent_core::message::Role::Assistant,
                "done".into(),
                events[2].created_at.clone()
            ),
        ]
    );
    assert_eq!(
        storage.event_bounds("s1").await.expect("bounds"),
        EventBounds { oldest: 1, last: 3 }
    );
    assert_eq!(
        storage.list_meta().await.expect("list").len(),
        1,
        "listed beside the host's"
    );
}

/// Without transcripts (exec's), the agent's records leave the session's files as Zero
/// wrote them; the transcript is the conversation its events tell.
#[tokio::test]
async fn without_transcripts_records_change_no_file() {
    let (dir, storage) = storage(Transcripts::FromEvents);
    exec_session(storage.sessions(), "s1");
    let before = snapshot(dir.path());
    for record in [
        SessionRecord::Message {
            message: Message::user_text("Continuing Zero session s1. …"),
        },
        SessionRecord::Cleared,
    ] {
        storage.append("s1", &record).await.expect("append");
        storage.append("child_task", &record).await.expect("append");
    }
    storage.sync_transcript("s1").await.expect("sync");
    assert_eq!(snapshot(dir.path()), before);
    assert_eq!(storage.load("s1").await.expect("load").len(), 2);
    assert!(matches!(
        storage.load("child_task").await,
        Err(CoreError::NotFound(_))
    ));
    assert_eq!(
        storage.local_dir("s1"),
        Some(storage.sessions().session_dir("s1"))
    );
    assert_eq!(storage.local_dir("../x"), None);
}

/// Every file under `root` with its bytes, in order.
fn snapshot(root: &std::path::Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("dir").flatten() {
            let path = entry.path();
            match path.is_dir() {
                true => dirs.push(path),
                false => {
                    let bytes = std::fs::read(&path).expect("read");
                    out.push((path, bytes));
                }
            }
        }
    }
    out.sort();
    out
}

#[test]
fn times_are_zeros_to_the_millisecond() {
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    assert_eq!(millis("2023-11-14T22:13:20.123Z"), 1_700_000_000_123);
    assert_eq!(millis("2023-11-14T22:13:20Z"), 1_700_000_000_000);
    assert_eq!(millis(""), 0);
    let event: SessionEvent = serde_json::from_value(json!({
        "id": "s:1", "sessionId": "s", "sequence": 1, "type": "message",
        "createdAt": rfc3339(1_000),
    }))
    .expect("a Zero line");
    assert_eq!(millis(&event.created_at), 1_000);
}
