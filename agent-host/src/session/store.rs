//! On-disk persistence of sessions: one directory per session holding `transcript.jsonl`
//! (the agent's [`SessionRecord`]s, one per line), `meta.jsonl` (the front end's
//! [`SessionMeta`], one version per line, the last whole one current) and `events.jsonl`
//! (the front end's event log, see [`file_events`]), written with agent-host's file-store
//! primitives: records, metadata versions and events are appended under an exclusive lock
//! after the torn-tail repair ([`append_jsonl`]), and a file torn by a crash loses only its
//! last line ([`parse_jsonl`], [`last_jsonl_value`]). A metadata log grown past
//! [`META_COMPACT_AT`] is replaced by its last version ([`write_atomic_with`]). Sessions
//! written before the log kept one `meta.json` document; it is still read, and replaced by
//! the log on the session's next write. [`FileStore`] is the file backend of
//! [`SessionStorage`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use agent_core::{
    async_trait,
    session::{SessionError, SessionRecord, SessionStore},
};

use super::file_events::{self, Appender, EVENTS};
use super::storage::StoredEvent;
use super::storage::{Durability as EventDurability, EventBounds, SessionStorage, StoreError};
use super::types::SessionMeta;
use crate::fs::{
    append_jsonl, create_dir_all_private, last_jsonl_value, parse_jsonl, sync_path,
    write_atomic_with, Durability, JsonlFile,
};

pub use crate::fs::valid_session_id;

const TRANSCRIPT: &str = "transcript.jsonl";
const META: &str = "meta.jsonl";
/// The metadata of a session written before the log: one JSON document.
const LEGACY_META: &str = "meta.json";
/// A metadata log longer than this is replaced by its last version (a few hundred
/// versions: a write appends about a kilobyte).
pub const META_COMPACT_AT: u64 = 256 * 1024;

/// A [`SessionStore`] writing under `<root>/sessions/<id>/`.
#[derive(Debug, Clone)]
pub struct FileStore {
    root: PathBuf,
    /// Event logs kept open between appends (shared by clones).
    appenders: Arc<Mutex<HashMap<String, Appender>>>,
}

/// Appends one metadata version (`line`, newline included) to the log at `path`, synced
/// when `sync` and the log held a version before; a log grown past [`META_COMPACT_AT`] is
/// then replaced by this version alone. Returns whether the log was new (empty).
fn append_meta(path: &Path, line: &[u8], sync: bool) -> std::io::Result<bool> {
    let (mut log, len) = open_meta_log(path)?;
    let durability = match sync && len > 0 {
        true => Durability::Sync,
        false => Durability::Buffered,
    };
    log.repair_tail()?;
    log.append(line)?;
    if len + line.len() as u64 > META_COMPACT_AT {
        // Under the log's lock, which a writer waiting for it then finds on a file no longer
        // at `path` (see open_meta_log).
        write_atomic_with(path, line, durability)?;
    } else if durability == Durability::Sync {
        log.sync()?;
    }
    Ok(len == 0)
}

/// The metadata log at `path`, opened (created when missing) and locked, and its length. A
/// log replaced while this waited for its lock (compacted by another writer) is opened
/// again, so that no version goes to a file no longer at `path`.
fn open_meta_log(path: &Path) -> std::io::Result<(JsonlFile, u64)> {
    loop {
        let log = JsonlFile::open_locked(path)?;
        if let Some(len) = still_at(log.file(), path)? {
            return Ok((log, len));
        }
    }
}

/// The length of the open `file` when it is the one at `path` (always, where files have no
/// inode), else `None`.
fn still_at(file: &std::fs::File, path: &Path) -> std::io::Result<Option<u64>> {
    let open = file.metadata()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let named = std::fs::metadata(path);
        let same = named.is_ok_and(|named| (named.dev(), named.ino()) == (open.dev(), open.ino()));
        Ok(same.then_some(open.len()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Ok(Some(open.len()))
    }
}

/// Whether the session directory `dir` holds metadata (the log, or an older `meta.json`).
async fn has_meta(dir: &Path) -> std::io::Result<bool> {
    Ok(tokio::fs::try_exists(dir.join(META)).await?
        || tokio::fs::try_exists(dir.join(LEGACY_META)).await?)
}

/// Event logs a store keeps open at most.
const OPEN_EVENT_LOGS: usize = 64;

fn io_err(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> SessionError {
    let context = context.into();
    move |source| SessionError::Io { context, source }
}

/// Runs the blocking file operation `op` off the async workers.
async fn blocking<T: Send + 'static>(
    context: &str,
    op: impl FnOnce() -> Result<T, SessionError> + Send + 'static,
) -> Result<T, SessionError> {
    match tokio::task::spawn_blocking(op).await {
        Ok(result) => result,
        Err(err) => Err(SessionError::Io {
            context: context.to_string(),
            source: std::io::Error::other(err),
        }),
    }
}

impl FileStore {
    /// A store rooted at `root` (created on first write).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            appenders: Arc::default(),
        }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of session `id` (its transcript, metadata and spilled tool output);
    /// `None` for an id that cannot be a session's.
    pub fn session_dir(&self, id: &str) -> Option<PathBuf> {
        self.dir(id).ok()
    }

    fn sessions_dir(&self) -> PathBuf {
        self.root.join("sessions")
    }

    fn dir(&self, id: &str) -> Result<PathBuf, SessionError> {
        if !valid_session_id(id) {
            return Err(SessionError::NotFound(id.to_string()));
        }
        Ok(self.sessions_dir().join(id))
    }

    /// Writes the metadata of a session: appends it to the session's metadata log and
    /// fdatasyncs it, so the log's last whole line is the new version even after a crash (a
    /// torn write costs only itself: the version before it stays current). Appending, not
    /// replacing a file, keeps a turn from creating files: a new inode costs more than the
    /// write on some filesystems. A new session's first version is not synced: the end of
    /// the session's first turn writes it again, synced (a crash of the machine before then
    /// loses a session that never had a turn).
    pub async fn save_meta(&self, meta: &SessionMeta) -> Result<(), SessionError> {
        self.save_meta_with(meta, true).await
    }

    /// Writes the metadata of a session, synced only when `sync` (and the log was there).
    async fn save_meta_with(&self, meta: &SessionMeta, sync: bool) -> Result<(), SessionError> {
        let dir = self.dir(&meta.session_id)?;
        let mut line = serde_json::to_vec(meta).map_err(|e| SessionError::Corrupt {
            context: meta.session_id.clone(),
            message: e.to_string(),
        })?;
        line.push(b'\n');
        blocking("save session metadata", move || {
            create_dir_all_private(&dir).map_err(io_err(format!("create {}", dir.display())))?;
            let path = dir.join(META);
            let created = append_meta(&path, &line, sync)
                .map_err(io_err(format!("write {}", path.display())))?;
            // A session from before the log: the new log replaces its old document.
            if created {
                let legacy = dir.join(LEGACY_META);
                match std::fs::remove_file(&legacy) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        tracing::warn!(path = %legacy.display(), error = %e, "cannot remove the old metadata file");
                    }
                    _ => {}
                }
            }
            Ok(())
        })
        .await
    }

    /// Reads the metadata of a session: the last whole version in its log (or, for a
    /// session written before the log, its `meta.json`).
    pub async fn load_meta(&self, id: &str) -> Result<SessionMeta, SessionError> {
        let dir = self.dir(id)?;
        let id = id.to_string();
        blocking("read session metadata", move || {
            let path = dir.join(META);
            let (path, bytes) = match last_jsonl_value(&path) {
                Ok(Some(line)) => (path, line),
                Ok(None) => {
                    return Err(SessionError::Corrupt {
                        context: path.display().to_string(),
                        message: "no whole metadata record".into(),
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let legacy = dir.join(LEGACY_META);
                    match std::fs::read(&legacy) {
                        Ok(bytes) => (legacy, bytes),
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                            return Err(SessionError::NotFound(id))
                        }
                        Err(e) => return Err(io_err(format!("read {}", legacy.display()))(e)),
                    }
                }
                Err(e) => return Err(io_err(format!("read {}", path.display()))(e)),
            };
            serde_json::from_slice(&bytes).map_err(|e| SessionError::Corrupt {
                context: path.display().to_string(),
                message: e.to_string(),
            })
        })
        .await
    }

    /// Metadata of every stored session; unreadable entries are skipped with a warning.
    pub async fn list_meta(&self) -> Result<Vec<SessionMeta>, SessionError> {
        let mut out = Vec::new();
        for id in self.list().await? {
            match self.load_meta(&id).await {
                Ok(meta) => out.push(meta),
                Err(SessionError::NotFound(_)) => {}
                Err(err) => tracing::warn!(session = %id, error = %err, "skipping session"),
            }
        }
        Ok(out)
    }
}

#[async_trait]
impl SessionStore for FileStore {
    async fn append(&self, id: &str, record: &SessionRecord) -> Result<(), SessionError> {
        let dir = self.dir(id)?;
        let mut line = serde_json::to_vec(record).map_err(|e| SessionError::Corrupt {
            context: id.to_string(),
            message: e.to_string(),
        })?;
        line.push(b'\n');
        blocking("append to a transcript", move || {
            create_dir_all_private(&dir).map_err(io_err(format!("create {}", dir.display())))?;
            let path = dir.join(TRANSCRIPT);
            // Written to the OS (the process may crash, the machine is trusted), under the
            // file's lock, after cutting off a torn last line.
            append_jsonl(&path, &line, Durability::Buffered)
                .map(drop)
                .map_err(io_err(format!("append to {}", path.display())))
        })
        .await
    }

    async fn load(&self, id: &str) -> Result<Vec<SessionRecord>, SessionError> {
        let dir = self.dir(id)?;
        let path = dir.join(TRANSCRIPT);
        // Bytes, not text: a line torn inside a multi-byte character must not make the
        // whole transcript unreadable.
        let bytes = match tokio::fs::read(&path).await {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // A session with metadata but no message yet has an empty transcript.
                return match has_meta(&dir).await {
                    Ok(true) => Ok(Vec::new()),
                    _ => Err(SessionError::NotFound(id.to_string())),
                };
            }
            Err(e) => return Err(io_err(format!("read {}", path.display()))(e)),
        };
        let jsonl = parse_jsonl::<SessionRecord>(&bytes).map_err(|e| SessionError::Corrupt {
            context: format!("{}:{}", path.display(), e.line),
            message: e.message,
        })?;
        if let Some(line) = jsonl.torn_line {
            // Cut off now, so the file is whole again even before the next append.
            tracing::warn!(session = %id, line, "repairing the transcript's torn last line");
            let repaired = blocking("repair a transcript", move || {
                JsonlFile::open_locked(&path)
                    .and_then(|mut file| file.repair_tail())
                    .map(drop)
                    .map_err(io_err(format!("repair {}", path.display())))
            })
            .await;
            if let Err(err) = repaired {
                tracing::warn!(session = %id, error = %err, "cannot repair the transcript");
            }
        }
        Ok(jsonl.records)
    }

    async fn list(&self) -> Result<Vec<String>, SessionError> {
        let dir = self.sessions_dir();
        let mut entries = match tokio::fs::read_dir(&dir).await {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err(format!("read {}", dir.display()))(e)),
        };
        let mut ids = Vec::new();
        while let Some(entry) = entries
            .next_entry()
            .await
            .map_err(io_err(format!("read {}", dir.display())))?
        {
            if let Some(name) = entry.file_name().to_str() {
                if valid_session_id(name) {
                    ids.push(name.to_string());
                }
            }
        }
        ids.sort();
        Ok(ids)
    }
}

/// Runs the blocking file operation `op` off the async workers ([`StoreError`] flavour).
async fn blocking_store<T: Send + 'static>(
    context: &str,
    op: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    match tokio::task::spawn_blocking(op).await {
        Ok(result) => result,
        Err(err) => Err(StoreError::Io {
            context: context.to_string(),
            source: std::io::Error::other(err),
        }),
    }
}

/// `fdatasync` of the file at `path`; a missing file has nothing to make durable.
pub(crate) fn sync_file(path: &Path) -> Result<(), StoreError> {
    sync_path(path).map_err(StoreError::io(format!("sync {}", path.display())))
}

/// Opens a session's event log for appends, creating its directory when missing.
fn open_appender(path: &Path) -> Result<Appender, StoreError> {
    if let Some(dir) = path.parent() {
        create_dir_all_private(dir).map_err(StoreError::io(format!("create {}", dir.display())))?;
    }
    Appender::open(path)
}

impl FileStore {
    fn appenders(&self) -> MutexGuard<'_, HashMap<String, Appender>> {
        // Nothing panics while holding the lock; recover the map if that ever changes.
        self.appenders.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps a session's event log open for its next append (closing another when too many
    /// are open).
    fn keep_appender(&self, id: &str, appender: Appender) {
        let mut open = self.appenders();
        if open.len() >= OPEN_EVENT_LOGS && !open.contains_key(id) {
            if let Some(other) = open.keys().next().cloned() {
                open.remove(&other);
            }
        }
        open.insert(id.to_string(), appender);
    }

    fn events_path(&self, id: &str) -> Result<PathBuf, StoreError> {
        self.dir(id)
            .map(|dir| dir.join(EVENTS))
            .map_err(StoreError::from)
    }
}

#[async_trait]
impl SessionStorage for FileStore {
    fn local_dir(&self, id: &str) -> Option<PathBuf> {
        self.session_dir(id)
    }

    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        let dir = self.dir(id)?;
        self.appenders().remove(id);
        match has_meta(&dir).await {
            Ok(true) => {}
            Ok(false) => return Err(StoreError::NotFound(id.to_string())),
            Err(err) => return Err(StoreError::io(format!("read {}", dir.display()))(err)),
        }
        tokio::fs::remove_dir_all(&dir)
            .await
            .map_err(StoreError::io(format!("remove {}", dir.display())))
    }

    async fn save_meta(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        Ok(FileStore::save_meta(self, meta).await?)
    }

    async fn save_meta_buffered(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        Ok(self.save_meta_with(meta, false).await?)
    }

    async fn load_meta(&self, id: &str) -> Result<SessionMeta, StoreError> {
        Ok(FileStore::load_meta(self, id).await?)
    }

    async fn list_meta(&self) -> Result<Vec<SessionMeta>, StoreError> {
        Ok(FileStore::list_meta(self).await?)
    }

    async fn sync_transcript(&self, id: &str) -> Result<(), StoreError> {
        let path = self.dir(id)?.join(TRANSCRIPT);
        blocking_store("sync a transcript", move || sync_file(&path)).await
    }

    async fn append_events(
        &self,
        id: &str,
        events: &[StoredEvent],
        durability: EventDurability,
    ) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        let path = self.events_path(id)?;
        let mut cached = self.appenders().remove(id);
        if durability == EventDurability::Buffered {
            // A write to the OS of an open file under a lock nobody else holds: short enough to
            // run here, without a thread hop. A lock held by another process, or an fsync, goes
            // to the blocking pool.
            let mut appender = match cached.take() {
                Some(appender) => appender,
                None => open_appender(&path)?,
            };
            match appender.append(id, events, durability, false) {
                Ok(()) => {
                    self.keep_appender(id, appender);
                    return Ok(());
                }
                Err(StoreError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::WouldBlock =>
                {
                    cached = Some(appender);
                }
                Err(err) => return Err(err),
            }
        }
        let store = self.clone();
        let (id, events) = (id.to_string(), events.to_vec());
        blocking_store("append to an event log", move || {
            let mut appender = match cached {
                Some(appender) => appender,
                None => open_appender(&path)?,
            };
            appender.append(&id, &events, durability, true)?;
            store.keep_appender(&id, appender);
            Ok(())
        })
        .await
    }

    async fn read_events(
        &self,
        id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let path = self.events_path(id)?;
        blocking_store("read an event log", move || {
            file_events::read_after(&path, after, limit)
        })
        .await
    }

    async fn sync_events(&self, id: &str) -> Result<(), StoreError> {
        let path = self.events_path(id)?;
        blocking_store("sync an event log", move || sync_file(&path)).await
    }

    async fn event_bounds(&self, id: &str) -> Result<EventBounds, StoreError> {
        let path = self.events_path(id)?;
        blocking_store("open an event log", move || file_events::bounds(&path)).await
    }

    async fn trim_events(&self, id: &str, before: u64) -> Result<EventBounds, StoreError> {
        let path = self.events_path(id)?;
        // The trimmed log is a new file; the next append opens it.
        self.appenders().remove(id);
        blocking_store("trim an event log", move || {
            file_events::trim(&path, before)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::Message;

    #[tokio::test]
    async fn records_round_trip_and_bad_ids_are_not_found() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = FileStore::new(dir.path());
        let record = SessionRecord::Message {
            message: Message::user_text("hi"),
        };
        store.append("sess_a", &record).await.expect("append");
        store.append("sess_a", &record).await.expect("append");
        assert_eq!(store.load("sess_a").await.expect("load").len(), 2);
        assert_eq!(
            store.list().await.expect("list"),
            vec!["sess_a".to_string()]
        );
        assert!(matches!(
            store.load("../etc").await,
            Err(SessionError::NotFound(_))
        ));
        assert!(matches!(
            store.load("sess_missing").await,
            Err(SessionError::NotFound(_))
        ));
    }

    fn meta(id: &str, turns: u32) -> SessionMeta {
        let mut meta = crate::session::storage::contract::meta(id, "/ws", i64::from(turns));
        meta.turn_count = turns;
        meta
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("read dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[tokio::test]
    async fn metadata_versions_are_appended_to_one_log_and_the_last_whole_one_is_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = FileStore::new(dir.path());
        let session = dir.path().join("sessions/sess_m");
        store.save_meta(&meta("sess_m", 0)).await.expect("create");
        let log = session.join(META);
        let first_file = std::fs::metadata(&log).expect("log");
        // A turn: its start (buffered) and its end (synced).
        SessionStorage::save_meta_buffered(&store, &meta("sess_m", 1))
            .await
            .expect("start");
        store.save_meta(&meta("sess_m", 1)).await.expect("end");
        assert_eq!(names(&session), [META], "no other file, no temporary one");
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let now = std::fs::metadata(&log).expect("log");
            assert_eq!(now.ino(), first_file.ino(), "appended to, not replaced");
        }
        let _ = first_file;
        let text = std::fs::read_to_string(&log).expect("read");
        assert_eq!(text.lines().count(), 3, "{text}");
        assert_eq!(store.load_meta("sess_m").await.expect("load").turn_count, 1);

        // A version torn by a crash: the one before it is current, and the next write cuts it.
        let mut torn = std::fs::read(&log).expect("read");
        let line = serde_json::to_vec(&meta("sess_m", 2)).expect("json");
        torn.extend_from_slice(&line[..line.len() / 2]);
        std::fs::write(&log, &torn).expect("write");
        assert_eq!(store.load_meta("sess_m").await.expect("load").turn_count, 1);
        assert_eq!(store.list_meta().await.expect("list").len(), 1);
        store.save_meta(&meta("sess_m", 3)).await.expect("save");
        let text = std::fs::read_to_string(&log).expect("read");
        assert_eq!(text.lines().count(), 4, "torn version cut off: {text}");
        assert_eq!(store.load_meta("sess_m").await.expect("load").turn_count, 3);

        // Nothing whole in the log is corruption, not a missing session.
        std::fs::write(&log, b"{oops").expect("write");
        assert!(matches!(
            store.load_meta("sess_m").await,
            Err(SessionError::Corrupt { .. })
        ));
    }

    #[tokio::test]
    async fn a_long_metadata_log_is_replaced_by_its_last_version() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = FileStore::new(dir.path());
        let mut meta = meta("sess_c", 0);
        meta.title = "t".repeat(4000);
        let log = dir.path().join("sessions/sess_c").join(META);
        let mut longest = 0;
        for turn in 0..100 {
            meta.turn_count = turn;
            store.save_meta(&meta).await.expect("save");
            longest = longest.max(std::fs::metadata(&log).expect("log").len());
        }
        assert!(longest <= META_COMPACT_AT, "{longest}");
        let lines = std::fs::read_to_string(&log).expect("read").lines().count();
        assert!(lines < 100, "compacted: {lines} lines");
        assert_eq!(
            store.load_meta("sess_c").await.expect("load").turn_count,
            99
        );
    }

    #[tokio::test]
    async fn a_session_written_before_the_log_is_read_and_then_moved_to_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = FileStore::new(dir.path());
        let session = dir.path().join("sessions/sess_old");
        std::fs::create_dir_all(&session).expect("dir");
        let old = serde_json::to_vec_pretty(&meta("sess_old", 4)).expect("json");
        std::fs::write(session.join(LEGACY_META), old).expect("write");
        assert_eq!(
            store.load_meta("sess_old").await.expect("load").turn_count,
            4
        );
        assert_eq!(store.load("sess_old").await.expect("no transcript yet"), []);
        assert_eq!(store.list_meta().await.expect("list").len(), 1);
        store.save_meta(&meta("sess_old", 5)).await.expect("save");
        assert_eq!(names(&session), [META]);
        assert_eq!(
            store.load_meta("sess_old").await.expect("load").turn_count,
            5
        );
        SessionStorage::delete(&store, "sess_old")
            .await
            .expect("delete");
        assert!(!session.exists());
    }

    #[tokio::test]
    async fn a_torn_last_line_is_dropped_and_cut_off_so_appends_stay_readable() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = FileStore::new(dir.path());
        let record = SessionRecord::Message {
            message: Message::user_text("héllo"),
        };
        store.append("sess_t", &record).await.expect("append");
        let path = dir.path().join("sessions/sess_t").join(TRANSCRIPT);
        let whole = std::fs::read(&path).expect("read");
        // A second record torn inside the two-byte `é`.
        let cut = whole.iter().position(|b| *b == 0xc3).expect("é") + 1;
        let mut torn = whole.clone();
        torn.extend_from_slice(&whole[..cut]);
        std::fs::write(&path, &torn).expect("write");
        assert_eq!(store.load("sess_t").await.expect("load").len(), 1);
        assert_eq!(
            std::fs::read(&path).expect("read"),
            whole,
            "torn tail cut off"
        );
        store.append("sess_t", &record).await.expect("append");
        assert_eq!(store.load("sess_t").await.expect("load").len(), 2);

        // A whole last record without its newline gets one.
        let mut unterminated = std::fs::read(&path).expect("read");
        unterminated.pop();
        std::fs::write(&path, &unterminated).expect("write");
        assert_eq!(store.load("sess_t").await.expect("load").len(), 2);
        store.append("sess_t", &record).await.expect("append");
        assert_eq!(store.load("sess_t").await.expect("load").len(), 3);

        // Garbage in the middle is corruption, not a tear.
        let mut middle = b"{oops\n".to_vec();
        middle.extend_from_slice(&std::fs::read(&path).expect("read"));
        std::fs::write(&path, &middle).expect("write");
        assert!(matches!(
            store.load("sess_t").await,
            Err(SessionError::Corrupt { .. })
        ));
    }
}
