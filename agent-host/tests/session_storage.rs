//! The session host over a [`SessionStorage`]: a turn's transcript is synced before the front
//! end hears the turn is over (ZCode's `turn.completed`, ACP's prompt reply), the manager keeps
//! metadata in whatever backend it is given, and its journals continue a stored event log.
//! The file backend keeps the storage contract every backend runs
//! (`agent_host::session::storage::contract`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    async_trait,
    session::{SessionError, SessionRecord, SessionStore},
    AgentEvent,
};
use agent_host::session::storage::contract;
use agent_host::session::{
    AgentFactory, CreateOptions, Durability, EventBounds, FileStore, MetaQuery, Session,
    SessionManager, SessionMeta, SessionMode, SessionStorage, StoreError, StoredEvent, TurnInfo,
    TurnObserver, TurnOutcome,
};
use agent_providers::{ProviderConfig, ProviderId};
use tokio::sync::oneshot;

const WAIT: Duration = Duration::from_secs(20);

/// A [`FileStore`] counting transcript appends and syncs, and metadata writes that wait
/// for the disk (`save_meta`) and that do not (`save_meta_buffered`).
struct Counting {
    files: FileStore,
    appends: AtomicUsize,
    syncs: AtomicUsize,
    metas: AtomicUsize,
    buffered_metas: AtomicUsize,
    /// When set, a transcript sync waits for a permit.
    hold_syncs: Option<tokio::sync::Semaphore>,
}

#[async_trait]
impl SessionStore for Counting {
    async fn append(&self, id: &str, record: &SessionRecord) -> Result<(), SessionError> {
        self.appends.fetch_add(1, Ordering::SeqCst);
        self.files.append(id, record).await
    }
    async fn load(&self, id: &str) -> Result<Vec<SessionRecord>, SessionError> {
        self.files.load(id).await
    }
    async fn list(&self) -> Result<Vec<String>, SessionError> {
        self.files.list().await
    }
}

#[async_trait]
impl SessionStorage for Counting {
    async fn save_meta(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        self.metas.fetch_add(1, Ordering::SeqCst);
        SessionStorage::save_meta(&self.files, meta).await
    }
    async fn save_meta_buffered(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        self.buffered_metas.fetch_add(1, Ordering::SeqCst);
        SessionStorage::save_meta_buffered(&self.files, meta).await
    }
    async fn load_meta(&self, id: &str) -> Result<SessionMeta, StoreError> {
        SessionStorage::load_meta(&self.files, id).await
    }
    async fn list_meta(&self) -> Result<Vec<SessionMeta>, StoreError> {
        SessionStorage::list_meta(&self.files).await
    }
    async fn sync_transcript(&self, id: &str) -> Result<(), StoreError> {
        if let Some(hold) = &self.hold_syncs {
            hold.acquire().await.expect("open").forget();
        }
        self.syncs.fetch_add(1, Ordering::SeqCst);
        self.files.sync_transcript(id).await
    }
    async fn append_events(
        &self,
        id: &str,
        events: &[StoredEvent],
        durability: Durability,
    ) -> Result<(), StoreError> {
        self.files.append_events(id, events, durability).await
    }
    async fn read_events(
        &self,
        id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        self.files.read_events(id, after, limit).await
    }
    async fn event_bounds(&self, id: &str) -> Result<EventBounds, StoreError> {
        self.files.event_bounds(id).await
    }
    async fn trim_events(&self, id: &str, before: u64) -> Result<EventBounds, StoreError> {
        self.files.trim_events(id, before).await
    }
}

/// Reports, when the turn is over, how many appends, syncs and synced and buffered
/// metadata writes the storage had seen.
struct Finished {
    storage: Arc<Counting>,
    done: Option<oneshot::Sender<[usize; 4]>>,
}

impl TurnObserver for Finished {
    fn started(&mut self, _: &Session, _: &TurnInfo) {}
    fn event(&mut self, _: &Session, _: &TurnInfo, _: &AgentEvent) {}
    fn finished(&mut self, _: &Session, _: &TurnInfo, _: &TurnOutcome) {
        let seen = [
            &self.storage.appends,
            &self.storage.syncs,
            &self.storage.metas,
            &self.storage.buffered_metas,
        ]
        .map(|n| n.load(Ordering::SeqCst));
        if let Some(done) = self.done.take() {
            let _ = done.send(seen);
        }
    }
}

async fn manager(dir: &std::path::Path) -> (SessionManager, Arc<Counting>, Arc<Session>) {
    manager_holding(dir, None).await
}

async fn manager_holding(
    dir: &std::path::Path,
    hold_syncs: Option<tokio::sync::Semaphore>,
) -> (SessionManager, Arc<Counting>, Arc<Session>) {
    let storage = Arc::new(Counting {
        files: FileStore::new(dir.join("data")),
        appends: AtomicUsize::new(0),
        syncs: AtomicUsize::new(0),
        metas: AtomicUsize::new(0),
        buffered_metas: AtomicUsize::new(0),
        hold_syncs,
    });
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let manager = SessionManager::with_storage(
        AgentFactory::new(ProviderConfig::new(ProviderId::Scripted)),
        storage.clone(),
        tx,
    );
    let session = manager
        .create(CreateOptions {
            workspace_path: dir.display().to_string(),
            mode: Some(SessionMode::Yolo),
            ..Default::default()
        })
        .await
        .expect("a session");
    (manager, storage, session)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turns_transcript_is_synced_before_the_front_end_hears_it_ended() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_manager, storage, session) = manager(dir.path()).await;
    let created = storage.metas.load(Ordering::SeqCst);
    for turn in 1..=2 {
        let (done, finished) = oneshot::channel();
        session
            .start_prompt(
                "What is here?",
                None,
                Box::new(Finished {
                    storage: storage.clone(),
                    done: Some(done),
                }),
            )
            .expect("started");
        let [appends, syncs, metas, buffered_metas] = tokio::time::timeout(WAIT, finished)
            .await
            .expect("the turn ends in time")
            .expect("finished");
        assert!(appends > 0, "the turn recorded its transcript");
        assert_eq!(syncs, turn, "one sync per turn, before finished");
        // The turn's start is written without waiting for the disk, its end synced.
        assert_eq!(buffered_metas, turn, "the start of every turn, buffered");
        assert_eq!(metas - created, turn, "the end of every turn, synced");
    }
}

/// Writes the turn's end in `ending`, which lets the held transcript sync go on: the turn
/// can only end if `ending`'s work runs side by side with the syncs.
struct Ending {
    storage: Arc<Counting>,
    calls: Vec<&'static str>,
    done: Option<oneshot::Sender<(Vec<&'static str>, usize)>>,
}

impl TurnObserver for Ending {
    fn started(&mut self, _: &Session, _: &TurnInfo) {}
    fn event(&mut self, _: &Session, _: &TurnInfo, _: &AgentEvent) {
        if self.calls.last() != Some(&"event") {
            self.calls.push("event");
        }
    }
    fn ending(
        &mut self,
        _: &Session,
        _: &TurnInfo,
        _: &TurnOutcome,
    ) -> Option<futures::future::BoxFuture<'static, ()>> {
        self.calls.push("ending");
        let storage = self.storage.clone();
        Some(Box::pin(async move {
            if let Some(hold) = &storage.hold_syncs {
                hold.add_permits(1);
            }
        }))
    }
    fn finished(&mut self, _: &Session, _: &TurnInfo, _: &TurnOutcome) {
        self.calls.push("finished");
        let syncs = self.storage.syncs.load(Ordering::SeqCst);
        if let Some(done) = self.done.take() {
            let _ = done.send((std::mem::take(&mut self.calls), syncs));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observers_ending_runs_beside_the_syncs_and_before_finished() {
    let dir = tempfile::tempdir().expect("tempdir");
    let hold = tokio::sync::Semaphore::new(0);
    let (_manager, storage, session) = manager_holding(dir.path(), Some(hold)).await;
    let (done, finished) = oneshot::channel();
    session
        .start_prompt(
            "What is here?",
            None,
            Box::new(Ending {
                storage: storage.clone(),
                calls: Vec::new(),
                done: Some(done),
            }),
        )
        .expect("started");
    let (calls, syncs) = tokio::time::timeout(WAIT, finished)
        .await
        .expect("the turn ends: its transcript sync was let go by `ending`")
        .expect("finished");
    assert_eq!(calls, vec!["event", "ending", "finished"]);
    assert_eq!(syncs, 1, "the transcript was synced before finished");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_pages_and_journals_come_from_the_given_storage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (manager, storage, session) = manager(dir.path()).await;
    let other = manager
        .create(CreateOptions {
            workspace_path: "/elsewhere".into(),
            ..Default::default()
        })
        .await
        .expect("another session");
    let page = storage
        .list_meta_page(&MetaQuery {
            workspace: Some(dir.path().display().to_string()),
            ..Default::default()
        })
        .await
        .expect("page");
    assert_eq!(
        page.iter()
            .map(|m| m.session_id.as_str())
            .collect::<Vec<_>>(),
        vec![session.id()]
    );
    let newest = storage
        .list_meta_page(&MetaQuery {
            limit: Some(1),
            ..Default::default()
        })
        .await
        .expect("page");
    assert_eq!(newest.len(), 1);
    let rest = storage
        .list_meta_page(&MetaQuery {
            before: Some((newest[0].updated_at, newest[0].session_id.clone())),
            ..Default::default()
        })
        .await
        .expect("page");
    assert_eq!(rest.len(), 1);
    assert_ne!(rest[0].session_id, newest[0].session_id);
    assert!([session.id(), other.id()].contains(&rest[0].session_id.as_str()));

    // A journal appended in one manager continues in another over the same storage.
    let journal = manager.fresh_journal(session.id());
    for _ in 0..3 {
        journal.append(|seq| serde_json::value::to_raw_value(&serde_json::json!({"n": seq})));
    }
    assert!(journal.sync(WAIT).await);
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let second = SessionManager::with_storage(
        AgentFactory::new(ProviderConfig::new(ProviderId::Scripted)),
        storage.clone(),
        tx,
    );
    let reopened = second.journal(session.id()).await.expect("journal");
    assert_eq!(reopened.seq(), 3);
    assert!(Arc::ptr_eq(
        &reopened,
        &second.journal(session.id()).await.expect("journal")
    ));
}

/// The storage contract every backend runs, on the files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_file_store_keeps_the_storage_contract() {
    for part in 0..4 {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = FileStore::new(dir.path());
        match part {
            0 => contract::metadata(&store).await,
            1 => contract::transcripts(&store).await,
            2 => contract::event_log(&store).await,
            _ => {
                contract::deletion(&store).await;
                assert!(
                    !dir.path().join("sessions/sess_gone").exists(),
                    "a deleted session's files are gone"
                );
            }
        }
    }
}
