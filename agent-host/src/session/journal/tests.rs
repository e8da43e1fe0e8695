use super::*;
use crate::session::storage::{Durability, EventBounds, SessionStorage};
use crate::session::types::SessionMeta;
use crate::session::FileStore;
use agent_core::{
    async_trait,
    session::{SessionError, SessionRecord, SessionStore},
};
use std::sync::atomic::{AtomicUsize, Ordering};

const WAIT: Duration = Duration::from_secs(10);

/// A [`FileStore`] whose event appends can be held back or made to fail.
struct Flaky {
    files: FileStore,
    /// Appends still to fail.
    fail: AtomicUsize,
    /// Fail with a conflict instead of an I/O error.
    conflict: bool,
    /// Appends wait for a permit.
    permits: Option<tokio::sync::Semaphore>,
    appends: AtomicUsize,
}

impl Flaky {
    fn new(dir: &std::path::Path) -> Self {
        Self {
            files: FileStore::new(dir),
            fail: AtomicUsize::new(0),
            conflict: false,
            permits: None,
            appends: AtomicUsize::new(0),
        }
    }

    /// A store whose appends wait until permits are added.
    fn held_back(dir: &std::path::Path) -> Arc<Self> {
        let mut flaky = Self::new(dir);
        flaky.permits = Some(tokio::sync::Semaphore::new(0));
        Arc::new(flaky)
    }

    /// Lets `n` held appends go on.
    fn let_go(&self, n: usize) {
        self.permits.as_ref().expect("permits").add_permits(n);
    }
}

/// Attaches a sink to `journal` that records the seqs pushed to it.
fn record_shown(journal: &EventJournal) -> Arc<Mutex<Vec<u64>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink_seen = seen.clone();
    journal.attach(
        Box::new(move |e: &StoredEvent| sink_seen.lock().expect("lock").push(e.seq)),
        None,
    );
    seen
}

#[async_trait]
impl SessionStore for Flaky {
    async fn append(&self, id: &str, record: &SessionRecord) -> Result<(), SessionError> {
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
impl SessionStorage for Flaky {
    async fn save_meta(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        SessionStorage::save_meta(&self.files, meta).await
    }
    async fn load_meta(&self, id: &str) -> Result<SessionMeta, StoreError> {
        SessionStorage::load_meta(&self.files, id).await
    }
    async fn list_meta(&self) -> Result<Vec<SessionMeta>, StoreError> {
        SessionStorage::list_meta(&self.files).await
    }
    async fn sync_transcript(&self, id: &str) -> Result<(), StoreError> {
        self.files.sync_transcript(id).await
    }
    async fn append_events(
        &self,
        id: &str,
        events: &[StoredEvent],
        durability: Durability,
    ) -> Result<(), StoreError> {
        if let Some(permits) = &self.permits {
            permits.acquire().await.expect("open").forget();
        }
        self.appends.fetch_add(1, Ordering::SeqCst);
        let failing = self
            .fail
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        match (failing, self.conflict) {
            (true, true) => Err(StoreError::Conflict {
                session_id: id.into(),
                message: "another writer".into(),
            }),
            (true, false) => Err(StoreError::Io {
                context: "disk".into(),
                source: std::io::Error::other("full"),
            }),
            _ => self.files.append_events(id, events, durability).await,
        }
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

fn small(window: usize, retained: u64) -> JournalOptions {
    JournalOptions {
        window_events: window,
        window_bytes: usize::MAX,
        retained_events: retained,
        show_after: Duration::ZERO,
        max_unstored: 1000,
    }
}

fn event(seq: u64) -> Result<Box<RawValue>, serde_json::Error> {
    serde_json::value::to_raw_value(&serde_json::json!({"seq": seq, "type": "t"}))
}

fn seqs(events: &[StoredEvent]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

/// Appends `n` events in batches of `batch`.
fn append(journal: &Arc<EventJournal>, n: u64, batch: u64) {
    for i in 0..n {
        journal.append(event);
        if (i + 1) % batch == 0 {
            journal.flush();
        }
    }
    journal.flush();
}

async fn synced(journal: &Arc<EventJournal>) {
    assert!(journal.sync(WAIT).await, "synced in time");
}

#[tokio::test]
async fn numbering_continues_after_a_reopen_and_replays_come_from_memory_and_storage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store: Arc<dyn SessionStorage> = Arc::new(FileStore::new(dir.path()));
    let journal = EventJournal::open(store.clone(), "sess_a", small(4, 1000))
        .await
        .expect("open");
    append(&journal, 10, 3);
    synced(&journal).await;
    assert_eq!(journal.seq(), 10);
    assert!(journal.in_memory_len().0 <= 4, "window bounded");
    let replay = journal.replay(2, usize::MAX).await.expect("replay");
    assert_eq!(seqs(&replay.events), (3..=10).collect::<Vec<_>>());
    assert!(!replay.gap);
    assert_eq!(replay.event_seq, 10);
    assert_eq!(
        replay.events[0].json(),
        event(3).expect("json").get(),
        "verbatim"
    );
    let limited = journal.replay(0, 3).await.expect("replay");
    assert_eq!(seqs(&limited.events), vec![1, 2, 3]);
    assert!(!limited.gap);
    let none = journal.replay(10, 5).await.expect("replay");
    assert_eq!((none.events.len(), none.gap), (0, false));
    assert!(journal.replay(11, 5).await.expect("replay").gap, "ahead");
    drop(journal);

    let again = EventJournal::open(store, "sess_a", small(4, 1000))
        .await
        .expect("reopen");
    assert_eq!(again.seq(), 10);
    assert_eq!(again.append(event), 11);
    again.flush();
    synced(&again).await;
    let replay = again.replay(0, usize::MAX).await.expect("replay");
    assert_eq!(seqs(&replay.events), (1..=11).collect::<Vec<_>>());
}

#[tokio::test]
async fn events_are_shown_only_once_stored_and_a_subscription_reply_comes_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let flaky = Flaky::held_back(dir.path());
    let journal = EventJournal::open(flaky.clone(), "sess_b", small(8, 1000))
        .await
        .expect("open");
    let seen = record_shown(&journal);
    let order = seen.clone();
    journal
        .subscribe(None, move |replay| {
            order.lock().expect("lock").push(1000 + replay.event_seq)
        })
        .await
        .expect("subscribe");
    append(&journal, 3, 3);
    assert_eq!(journal.appended(), 3);
    assert_eq!(journal.seq(), 0, "not stored, not shown");
    assert_eq!(*seen.lock().expect("lock"), vec![1000]);
    flaky.let_go(1);
    synced(&journal).await;
    assert_eq!(*seen.lock().expect("lock"), vec![1000, 1, 2, 3]);
    assert_eq!(journal.seq(), 3);
}

#[tokio::test]
async fn a_replay_older_than_retention_says_gap_and_gives_what_is_retained() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store: Arc<dyn SessionStorage> = Arc::new(FileStore::new(dir.path()));
    let journal = EventJournal::open(store.clone(), "sess_c", small(4, 10))
        .await
        .expect("open");
    for _ in 0..8 {
        append(&journal, 5, 5);
        synced(&journal).await;
    }
    let bounds = store.event_bounds("sess_c").await.expect("bounds");
    assert_eq!(bounds.last, 40);
    assert!(
        bounds.oldest > 1 && bounds.last + 1 - bounds.oldest <= 15,
        "{bounds:?}"
    );
    let replay = journal.replay(0, usize::MAX).await.expect("replay");
    assert!(replay.gap);
    assert_eq!(replay.events.first().map(|e| e.seq), Some(bounds.oldest));
    assert_eq!(replay.events.last().map(|e| e.seq), Some(40));
    let recent = journal.replay(35, usize::MAX).await.expect("replay");
    assert!(!recent.gap);
    assert_eq!(seqs(&recent.events), (36..=40).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_failing_storage_is_retried_and_shows_events_without_a_hole_in_the_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let flaky = Arc::new(Flaky::new(dir.path()));
    flaky.fail.store(3, Ordering::SeqCst);
    let journal = EventJournal::open(flaky.clone(), "sess_d", small(2, 1000))
        .await
        .expect("open");
    append(&journal, 6, 2);
    synced(&journal).await;
    assert!(flaky.appends.load(Ordering::SeqCst) >= 4, "retried");
    assert_eq!(journal.seq(), 6);
    assert!(journal.failure().is_none(), "recovered");
    let stored = flaky.read_events("sess_d", 0, 100).await.expect("read");
    assert_eq!(seqs(&stored), (1..=6).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_conflict_ends_persistence_and_the_journal_goes_on_in_memory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut flaky = Flaky::new(dir.path());
    flaky.conflict = true;
    flaky.fail.store(1, Ordering::SeqCst);
    let journal = EventJournal::open(Arc::new(flaky), "sess_e", small(100, 1000))
        .await
        .expect("open");
    append(&journal, 3, 3);
    synced(&journal).await;
    assert_eq!(journal.seq(), 3, "shown anyway");
    assert!(journal
        .failure()
        .expect("failure")
        .contains("another writer"));
    append(&journal, 2, 2);
    assert_eq!(journal.seq(), 5, "in memory from now on");
}

#[tokio::test]
async fn in_memory_journals_show_at_flush_and_keep_their_capacity() {
    let journal = EventJournal::in_memory("sess_m", 3);
    journal.append(event);
    assert_eq!(journal.seq(), 0, "held until flushed");
    append(&journal, 5, 5);
    assert_eq!(journal.seq(), 6);
    let replay = journal.replay(0, 10).await.expect("replay");
    assert_eq!(seqs(&replay.events), vec![4, 5, 6]);
    assert!(replay.gap);
    assert!(journal.sync(WAIT).await);
}

#[tokio::test]
async fn withheld_events_are_stored_but_shown_only_at_release() {
    let dir = tempfile::tempdir().expect("tempdir");
    let flaky = Arc::new(Flaky::new(dir.path()));
    let journal = EventJournal::open(flaky.clone(), "sess_w", small(100, 1000))
        .await
        .expect("open");
    let seen = record_shown(&journal);
    journal.subscribe(None, |_| ()).await.expect("subscribe");
    append(&journal, 2, 2);
    assert!(journal.wait_stored(2, WAIT).await);
    assert!(journal.wait_shown(2, WAIT).await);
    // The turn's end: withheld, written durably, not shown.
    journal.withhold();
    journal.append(event);
    journal.request_sync();
    journal.flush();
    assert!(journal.wait_stored(3, WAIT).await, "stored");
    let stored = flaky.read_events("sess_w", 0, 100).await.expect("read");
    assert_eq!(seqs(&stored), vec![1, 2, 3]);
    assert_eq!(journal.seq(), 2, "not visible before the release");
    assert_eq!(*seen.lock().expect("lock"), vec![1, 2]);
    let replay = journal.replay(0, 100).await.expect("replay");
    assert_eq!(seqs(&replay.events), vec![1, 2], "nor replayed");
    assert_eq!(replay.event_seq, 2);
    // What comes while withholding waits behind it; the release shows all, in order.
    journal.append(event);
    journal.flush();
    assert!(journal.wait_stored(4, WAIT).await);
    assert_eq!(journal.seq(), 2);
    journal.release();
    assert_eq!(journal.seq(), 4);
    assert_eq!(*seen.lock().expect("lock"), vec![1, 2, 3, 4]);
    // Afterwards events show as they are stored again.
    append(&journal, 1, 1);
    assert!(journal.wait_shown(5, WAIT).await);
    assert_eq!(*seen.lock().expect("lock"), vec![1, 2, 3, 4, 5]);
}

#[tokio::test]
async fn a_release_before_the_store_shows_the_event_once_stored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let flaky = Flaky::held_back(dir.path());
    let journal = EventJournal::open(flaky.clone(), "sess_r", small(100, 1000))
        .await
        .expect("open");
    journal.withhold();
    journal.append(event);
    journal.flush();
    assert!(
        !journal.wait_stored(1, Duration::from_millis(1)).await,
        "the storage holds the write back"
    );
    journal.release();
    assert_eq!(journal.seq(), 0, "not stored, not shown");
    flaky.let_go(1);
    assert!(journal.wait_shown(1, WAIT).await);
}

#[tokio::test]
async fn in_memory_journals_withhold_until_release() {
    let journal = EventJournal::in_memory("sess_mw", 10);
    journal.withhold();
    append(&journal, 2, 2);
    assert!(journal.wait_stored(2, WAIT).await, "nothing to wait for");
    assert_eq!(journal.seq(), 0);
    assert_eq!(journal.in_memory_len().0, 2, "kept meanwhile");
    journal.release();
    assert_eq!(journal.seq(), 2);
}
