use super::*;
use agent_core::testing::one_of_each as every_event;
use agent_host::session::{AgentFactory, CreateOptions, FileStore, SessionManager};
use agent_providers::{ProviderConfig, ProviderId};

#[tokio::test]
async fn every_agent_event_is_mapped_or_listed_as_not_shown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let manager = SessionManager::new(
        AgentFactory::new(ProviderConfig::new(ProviderId::Scripted)),
        FileStore::new(dir.path().join("data")),
        tx,
    );
    let session = manager
        .create(CreateOptions {
            workspace_path: dir.path().display().to_string(),
            ..Default::default()
        })
        .await
        .expect("a session");
    let log = Arc::new(EventLog::new(|_: &agent_host::session::StoredEvent| {}));
    // Sub-agents' events go to their own sessions' logs: counted with the session's.
    let children: Arc<std::sync::Mutex<HashMap<String, Arc<ZLog>>>> = Arc::default();
    let logs = children.clone();
    let resolver: LogResolver = Arc::new(move |id: &str| {
        logs.lock()
            .expect("lock")
            .entry(id.to_string())
            .or_insert_with(|| Arc::new(EventLog::new(|_: &agent_host::session::StoredEvent| {})))
            .clone()
    });
    let count = || {
        log.appended()
            + children
                .lock()
                .expect("lock")
                .values()
                .map(|l| l.appended())
                .sum::<u64>()
    };
    let turn = TurnInfo {
        turn_id: "turn_1".into(),
        kind: RunKind::Prompt,
        number: 1,
        input: "hi".into(),
        input_id: None,
        started_at: now_ms(),
    };
    let mut zcode = ZcodeTurn::new(log.clone(), session.id()).with_subagents(resolver);
    let mut shown = 0;
    for event in every_event() {
        let before = count();
        let coverage = zcode.map(&session, &turn, &event);
        let events = count() - before;
        match coverage {
            Coverage::Unknown => panic!("the ZCode mapping does not know {event:?}"),
            Coverage::NotShown => assert_eq!(events, 0, "{event:?} is not shown"),
            Coverage::Shown => {
                assert!(events > 0, "{event:?} maps to nothing");
                shown += 1;
            }
        }
    }
    // The eight of the first front ends, the sandbox report, context usage, compaction
    // start and end, and the three sub-agent events.
    assert_eq!(shown, 15);
}

#[test]
fn event_ids_are_distinct_v4_uuids() {
    let ids: Vec<String> = (0..1000).map(|_| event_id()).collect();
    let unique: HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len());
    for id in &ids {
        let uuid = id.strip_prefix("evt_").expect("evt_ prefix");
        assert_eq!(uuid.len(), 36, "{id}");
        let parsed = uuid::Uuid::parse_str(uuid).expect("a uuid");
        assert_eq!(parsed.get_version_num(), 4, "{id}");
        assert_eq!(parsed.get_variant(), uuid::Variant::RFC4122, "{id}");
        assert_eq!(
            parsed.hyphenated().to_string(),
            uuid,
            "lower-case, hyphenated"
        );
    }
}
