//! [`ZeroSessions`]: create, list, read, append and fork sessions in Zero's layout.

use std::cmp::Reverse;
use std::fs;
use std::path::{Path, PathBuf};

use chrono::{DateTime, FixedOffset, SecondsFormat, Utc};
use serde::Serialize;

use super::records::{Appended, ForkRecord, Metadata, SessionEvent, SessionEventLine};
use super::{new_session_id, valid_session_id, BLOBS_DIR, EVENTS_FILE, LOCK_FILE, METADATA_FILE};
use crate::fs::{
    create_dir_all_private, create_dir_private, parse_jsonl, private_options, sync_path,
    write_atomic, write_atomic_with, Durability, FileLock, JsonlFile,
};

/// A failure of [`ZeroSessions`]. `Display` is the message shown to users (Zero's words).
#[derive(Debug, thiserror::Error)]
pub enum ZeroError {
    /// The id does not match `^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$` (after trimming).
    #[error("invalid zero session id {}", quoted(.0))]
    InvalidId(String),
    /// `--init-session-id` names an existing session.
    #[error("zero session already exists: {0}")]
    Exists(String),
    /// A session that was expected is missing.
    #[error("zero session not found: {0}")]
    NotFound(String),
    /// I/O failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A stored file could not be decoded.
    #[error("{0}")]
    Corrupt(String),
}

/// `s` as a JSON string, as Go's `%q` shows it for the ids Zero accepts.
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

pub(super) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> ZeroError {
    let context = context.into();
    move |source| ZeroError::Io { context, source }
}

/// What a new session is created with.
#[derive(Debug, Clone, Default)]
pub struct CreateInput {
    /// Id; generated when `None`.
    pub session_id: Option<String>,
    /// Kind (`""` or `fork`).
    pub session_kind: String,
    /// Title.
    pub title: String,
    /// Workspace root.
    pub cwd: String,
    /// Model.
    pub model_id: String,
    /// Provider.
    pub provider: String,
    /// Parent (forks).
    pub parent_session_id: String,
    /// Root (forks).
    pub root_session_id: String,
    /// Parent's last event id (forks).
    pub forked_from_event_id: String,
    /// Parent's last event sequence (forks).
    pub forked_from_sequence: u64,
    /// Tag (`specialist` for a specialist's child session).
    pub tag: String,
    /// Depth of a child session (1 for a child of a top-level run).
    pub depth: u64,
    /// The specialist a child session runs.
    pub agent_name: String,
    /// The task id of a child session (its own id).
    pub task_id: String,
    /// The parent's event (or tool call) a child session was spawned from.
    pub spawned_from_event_id: String,
    /// The sequence of that parent event, when known.
    pub spawned_from_sequence: u64,
}

pub(super) fn now_rfc3339() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Zero's sessions on disk: the directory `…/zero/sessions` in Zero's layout
/// (`<sessionId>/metadata.json`, `events.jsonl`, `session.lock`, `blobs/`), with create,
/// append, read and fork: the files Zero itself reads and writes, synchronously. A host keeps
/// its sessions in them through [`ZeroStorage`](super::ZeroStorage), the host's
/// `SessionStorage` over this directory.
///
/// By default every create and append is fsynced before it returns. A store made
/// [`buffered`](Self::buffered) leaves that to one [`sync`](Self::sync) at the end of a run:
/// what it wrote survives a crash of the process at once, and of the machine once synced.
#[derive(Debug, Clone)]
pub struct ZeroSessions {
    root: PathBuf,
    durability: Durability,
}

/// Parses `events.jsonl`, dropping a torn last line (agent-host's rule, which the append's
/// repair follows too).
fn parse_events(id: &str, data: &[u8]) -> Result<Vec<SessionEvent>, ZeroError> {
    parse_jsonl::<SessionEvent>(data)
        .map(|jsonl| jsonl.records)
        .map_err(|err| {
            ZeroError::Corrupt(format!(
                "invalid json in zero session {id} {EVENTS_FILE} at line {}: {}",
                err.line, err.message
            ))
        })
}

/// One line for [`ZeroSessions::append_lines`]: its sequence, type and time (for the
/// metadata) and its bytes, newline included.
#[derive(Debug, Clone)]
pub(super) struct NewLine {
    pub(super) sequence: u64,
    pub(super) kind: String,
    pub(super) created_at: String,
    pub(super) bytes: Vec<u8>,
}

impl NewLine {
    /// The line of `event`.
    pub(super) fn encode<P: Serialize>(event: &SessionEventLine<'_, P>) -> Result<Self, ZeroError> {
        let mut bytes = serde_json::to_vec(event)
            .map_err(|err| ZeroError::Corrupt(format!("encode zero session event: {err}")))?;
        bytes.push(b'\n');
        Ok(Self {
            sequence: event.sequence,
            kind: event.kind.to_string(),
            created_at: event.created_at.to_string(),
            bytes,
        })
    }
}

/// A session's `updatedAt` as a time; `None` when it is not RFC 3339.
fn updated_at(meta: &Metadata) -> Option<DateTime<FixedOffset>> {
    DateTime::parse_from_rfc3339(&meta.updated_at).ok()
}

fn last_sequence_of(line: &[u8]) -> u64 {
    serde_json::from_slice::<SessionEvent>(line)
        .map(|e| e.sequence)
        .unwrap_or(0)
}

impl ZeroSessions {
    /// A store rooted at `root` (`…/zero/sessions`).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            durability: Durability::Sync,
        }
    }

    /// The same store, its creates and appends written to the OS only
    /// ([`Durability::Buffered`]) until [`sync`](Self::sync): a one-prompt exec run then
    /// syncs once, at its end, instead of twice per event. The metadata (replaced by an
    /// atomic rename, so never seen torn) follows the log once per second of events: an
    /// append rewrites it when the second of its `updatedAt` has passed, and `sync` brings
    /// it up to the last event. Until then it may lack the events of its `updatedAt`'s
    /// second, as a crash may leave it; the log is what numbers the next event, as in Zero.
    /// A one-prompt run writes the metadata twice instead of once per event: each rewrite
    /// is a file created and one deleted.
    #[must_use]
    pub fn buffered(mut self) -> Self {
        self.durability = Durability::Buffered;
        self
    }

    /// Makes a session durable: `events.jsonl`, and for a [`buffered`](Self::buffered)
    /// store also `metadata.json` (first brought up to the log's last event), the session's
    /// directory and the root (the names created in them), are fsynced. A store that syncs
    /// each write has only its appends made without a sync to force. A session that does
    /// not exist has nothing to sync.
    pub fn sync(&self, id: &str) -> Result<(), ZeroError> {
        Self::check_id(id)?;
        let dir = self.session_dir(id);
        let mut paths = vec![dir.join(EVENTS_FILE)];
        if self.durability == Durability::Buffered && dir.is_dir() {
            self.settle_metadata(id)?;
            paths.extend([dir.join(METADATA_FILE), dir, self.root.clone()]);
        }
        for path in paths {
            sync_path(&path).map_err(io("sync zero session"))?;
        }
        Ok(())
    }

    /// Brings a [`buffered`](Self::buffered) store's metadata up to the log's last whole
    /// event, under the session's lock; nothing is written when it is there already.
    fn settle_metadata(&self, id: &str) -> Result<(), ZeroError> {
        let dir = self.session_dir(id);
        let _lock = FileLock::exclusive(&dir.join(LOCK_FILE)).map_err(io("lock zero session"))?;
        let Some(mut meta) = self.read_metadata(id)? else {
            return Ok(());
        };
        let mut file =
            JsonlFile::open(&dir.join(EVENTS_FILE)).map_err(io("read zero session events"))?;
        let tail = file
            .repair_tail()
            .map_err(io("recover zero session events"))?;
        let last = tail
            .last_line
            .and_then(|line| serde_json::from_slice::<SessionEvent>(&line).ok());
        match last {
            Some(last) if last.sequence > meta.event_count => {
                meta.updated_at = last.created_at;
                meta.event_count = last.sequence;
                meta.last_event_type = last.kind;
                self.write_metadata(&meta)
            }
            _ => Ok(()),
        }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// A session's directory.
    pub fn session_dir(&self, id: &str) -> PathBuf {
        self.root.join(id)
    }

    pub(super) fn check_id(id: &str) -> Result<(), ZeroError> {
        match valid_session_id(id) {
            true => Ok(()),
            false => Err(ZeroError::InvalidId(id.to_string())),
        }
    }

    pub(super) fn read_metadata(&self, id: &str) -> Result<Option<Metadata>, ZeroError> {
        let path = self.session_dir(id).join(METADATA_FILE);
        let data = match fs::read_to_string(&path) {
            Ok(data) => data,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(io("read zero session metadata")(err)),
        };
        serde_json::from_str(&data)
            .map(Some)
            .map_err(|err| ZeroError::Corrupt(format!("invalid zero session metadata {id}: {err}")))
    }

    pub(super) fn write_metadata(&self, meta: &Metadata) -> Result<(), ZeroError> {
        let mut data = serde_json::to_vec_pretty(meta)
            .map_err(|err| ZeroError::Corrupt(format!("encode zero session metadata: {err}")))?;
        data.push(b'\n');
        write_atomic_with(
            &self.session_dir(&meta.session_id).join(METADATA_FILE),
            &data,
            self.durability,
        )
        .map_err(io("write zero session metadata"))
    }

    /// A session's metadata; `Ok(None)` when it does not exist.
    pub fn get(&self, id: &str) -> Result<Option<Metadata>, ZeroError> {
        Self::check_id(id)?;
        self.read_metadata(id)
    }

    /// All sessions, newest `updatedAt` first (by time: `…:05Z` is older than `…:05.250Z`;
    /// a time that does not parse counts as oldest), then by id.
    pub fn list(&self) -> Result<Vec<Metadata>, ZeroError> {
        let entries = match fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(io("read zero session root")(err)),
        };
        let mut sessions = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !entry.path().is_dir() || !valid_session_id(&name) {
                continue;
            }
            if let Ok(Some(meta)) = self.read_metadata(&name) {
                sessions.push(meta);
            }
        }
        sessions.sort_by_cached_key(|meta| (Reverse(updated_at(meta)), meta.session_id.clone()));
        Ok(sessions)
    }

    /// The newest resumable session.
    pub fn latest_resumable(&self) -> Result<Option<Metadata>, ZeroError> {
        Ok(self.list()?.into_iter().find(Metadata::is_resumable))
    }

    /// Creates a session: directory, metadata and an empty events file.
    pub fn create(&self, input: CreateInput) -> Result<Metadata, ZeroError> {
        let id = match input.session_id.as_deref().map(str::trim) {
            Some(id) if !id.is_empty() => id.to_string(),
            _ => new_session_id(Utc::now()),
        };
        Self::check_id(&id)?;
        let now = now_rfc3339();
        let meta = Metadata {
            session_id: id.clone(),
            session_kind: input.session_kind,
            title: input.title.trim().to_string(),
            cwd: input.cwd,
            model_id: input.model_id,
            provider: input.provider,
            tag: input.tag,
            depth: input.depth,
            parent_session_id: input.parent_session_id,
            root_session_id: input.root_session_id,
            agent_name: input.agent_name,
            task_id: input.task_id,
            forked_from_event_id: input.forked_from_event_id,
            forked_from_sequence: input.forked_from_sequence,
            spawned_from_event_id: input.spawned_from_event_id,
            spawned_from_sequence: input.spawned_from_sequence,
            created_at: now.clone(),
            updated_at: now,
            ..Metadata::default()
        };
        create_dir_all_private(&self.root).map_err(io("create zero session root"))?;
        let dir = self.session_dir(&id);
        if let Err(err) = create_dir_private(&dir) {
            return Err(match err.kind() {
                std::io::ErrorKind::AlreadyExists => ZeroError::Exists(id),
                _ => io("create zero session directory")(err),
            });
        }
        self.write_metadata(&meta)?;
        private_options()
            .write(true)
            .create_new(true)
            .open(dir.join(EVENTS_FILE))
            .and_then(|f| match self.durability {
                Durability::Sync => f.sync_all(),
                Durability::Buffered => Ok(()),
            })
            .map_err(io("create zero session events file"))?;
        Ok(meta)
    }

    /// Every complete event of a session, in order.
    pub fn read_events(&self, id: &str) -> Result<Vec<SessionEvent>, ZeroError> {
        Self::check_id(id)?;
        match fs::read(self.session_dir(id).join(EVENTS_FILE)) {
            Ok(data) => parse_events(id, &data),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(err) => Err(io("read zero session events")(err)),
        }
    }

    /// Appends one event (fsynced unless [`buffered`](Self::buffered)) and updates the
    /// metadata, under the session's lock. A torn last line left by a crash is cut off first,
    /// and the sequence goes on from the last whole event (or the metadata's count,
    /// whichever is higher).
    pub fn append<P: Serialize>(
        &self,
        id: &str,
        kind: &str,
        payload: Option<P>,
    ) -> Result<Appended, ZeroError> {
        let mut appended = None;
        let sync = self.durability == Durability::Sync;
        self.append_lines(id, sync, |sequence| {
            let created_at = now_rfc3339();
            let event = SessionEventLine {
                id: format!("{id}:{sequence}"),
                session_id: id,
                sequence,
                kind,
                created_at: &created_at,
                payload,
            };
            let line = NewLine::encode(&event)?;
            appended = Some(Appended {
                id: event.id,
                sequence,
            });
            Ok::<_, ZeroError>(vec![line])
        })?;
        appended.ok_or_else(|| ZeroError::Corrupt(format!("no event appended to {id}")))
    }

    /// Appends the lines `make` gives for the next sequence (the last whole event's, or the
    /// metadata's count, whichever is higher, plus one) and updates the metadata to the last
    /// of them, under the session's lock, after cutting off a torn last line; fsynced when
    /// `sync`. The one way events are written: [`append`](Self::append)'s and the event log
    /// of [`ZeroStorage`](super::ZeroStorage).
    pub(super) fn append_lines<E: From<ZeroError>>(
        &self,
        id: &str,
        sync: bool,
        make: impl FnOnce(u64) -> Result<Vec<NewLine>, E>,
    ) -> Result<(), E> {
        Self::check_id(id)?;
        let dir = self.session_dir(id);
        let _lock = FileLock::exclusive(&dir.join(LOCK_FILE)).map_err(io("lock zero session"))?;
        let mut meta = self
            .read_metadata(id)?
            .ok_or_else(|| ZeroError::NotFound(id.to_string()))?;
        let mut file =
            JsonlFile::open(&dir.join(EVENTS_FILE)).map_err(io("append zero session event"))?;
        let tail = file
            .repair_tail()
            .map_err(io("recover zero session events"))?;
        let last_sequence = tail.last_line.as_deref().map_or(0, last_sequence_of);
        let lines = make(meta.event_count.max(last_sequence) + 1)?;
        let Some(last) = lines.last() else {
            return Ok(());
        };
        let bytes: Vec<u8> = lines.iter().flat_map(|l| l.bytes.iter().copied()).collect();
        file.append(&bytes)
            .and_then(|()| if sync { file.sync() } else { Ok(()) })
            .map_err(io("append zero session event"))?;
        // A buffered store rewrites the metadata once per second of events (`buffered`).
        let due = self.durability == Durability::Sync || meta.updated_at != last.created_at;
        meta.updated_at = last.created_at.clone();
        meta.event_count = last.sequence;
        meta.last_event_type = last.kind.clone();
        if due {
            self.write_metadata(&meta)?;
        }
        Ok(())
    }

    /// Stores a checkpoint blob `name` (atomically, fsynced).
    pub fn write_blob(&self, id: &str, name: &str, data: &[u8]) -> Result<(), ZeroError> {
        Self::check_id(id)?;
        let dir = self.session_dir(id).join(BLOBS_DIR);
        create_dir_all_private(&dir).map_err(io("create zero session blobs"))?;
        write_atomic(&dir.join(name), data).map_err(io("write zero session blob"))
    }

    /// Forks `parent` into a new session: every event but `provider_usage` is copied and
    /// renumbered, checkpoint blobs are copied, and `session_fork` is appended.
    pub fn fork(
        &self,
        parent_id: &str,
        new_id: Option<String>,
        title: Option<String>,
        cwd: String,
        model_id: String,
        provider: String,
    ) -> Result<Metadata, ZeroError> {
        let parent = self
            .get(parent_id)?
            .ok_or_else(|| ZeroError::NotFound(parent_id.to_string()))?;
        let events = self.read_events(parent_id)?;
        let last = events.last();
        let title = title.filter(|t| !t.trim().is_empty()).unwrap_or_else(|| {
            match parent.title.is_empty() {
                true => String::new(),
                false => format!("{} (fork)", parent.title),
            }
        });
        let pick = |a: String, b: &str| match a.trim().is_empty() {
            true => b.to_string(),
            false => a,
        };
        let fork = self.create(CreateInput {
            session_id: new_id,
            session_kind: "fork".into(),
            title,
            cwd: pick(cwd, &parent.cwd),
            model_id: pick(model_id, &parent.model_id),
            provider: pick(provider, &parent.provider),
            parent_session_id: parent.session_id.clone(),
            root_session_id: pick(parent.root_session_id.clone(), &parent.session_id),
            forked_from_event_id: last.map(|e| e.id.clone()).unwrap_or_default(),
            forked_from_sequence: last.map(|e| e.sequence).unwrap_or(0),
            ..CreateInput::default()
        })?;
        let mut copied = 0u64;
        for event in events.iter().filter(|e| e.kind != "provider_usage") {
            self.append(&fork.session_id, &event.kind, event.payload.as_ref())?;
            copied += 1;
        }
        let blobs = self.session_dir(parent_id).join(BLOBS_DIR);
        if let Ok(entries) = fs::read_dir(&blobs) {
            for entry in entries.flatten() {
                let data = fs::read(entry.path()).map_err(io("copy zero session blob"))?;
                self.write_blob(
                    &fork.session_id,
                    &entry.file_name().to_string_lossy(),
                    &data,
                )?;
            }
        }
        self.append(
            &fork.session_id,
            "session_fork",
            Some(&ForkRecord {
                copied_event_count: copied,
                forked_from_event_id: last.map_or("", |e| e.id.as_str()),
                forked_from_sequence: last.map_or(0, |e| e.sequence),
                parent_event_count: parent.event_count,
                parent_session_id: &parent.session_id,
            }),
        )?;
        if self.durability == Durability::Buffered {
            self.settle_metadata(&fork.session_id)?;
        }
        self.get(&fork.session_id)?
            .ok_or_else(|| ZeroError::NotFound(fork.session_id.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};
    use std::io::Write;

    fn store() -> (tempfile::TempDir, ZeroSessions) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = ZeroSessions::new(dir.path().join("zero").join("sessions"));
        (dir, store)
    }

    #[test]
    fn append_numbers_events_and_recovers_a_torn_tail() {
        let (_dir, store) = store();
        let meta = store
            .create(CreateInput {
                session_id: Some("s1".into()),
                title: "t".into(),
                ..Default::default()
            })
            .expect("create");
        assert_eq!(meta.event_count, 0);
        store
            .append(
                "s1",
                "message",
                Some(json!({"role": "user", "content": "hi"})),
            )
            .expect("append");
        // Simulate a crash mid-append.
        let events_path = store.session_dir("s1").join(EVENTS_FILE);
        let mut f = fs::OpenOptions::new()
            .append(true)
            .open(&events_path)
            .expect("open");
        f.write_all(b"{\"id\":\"s1:2\",\"sess").expect("write");
        drop(f);
        let events = store.read_events("s1").expect("readable despite torn tail");
        assert_eq!(events.len(), 1);
        let event = store
            .append(
                "s1",
                "message",
                Some(json!({"role": "assistant", "content": "yo"})),
            )
            .expect("append after crash");
        assert_eq!(event.sequence, 2);
        assert_eq!(event.id, "s1:2");
        let events = store.read_events("s1").expect("read");
        assert_eq!(events.len(), 2);
        let meta = store.get("s1").expect("get").expect("exists");
        assert_eq!(meta.event_count, 2);
        assert_eq!(meta.last_event_type, "message");
        // A corrupt line in the middle is real corruption.
        fs::write(&events_path, "garbage\n{}\n").expect("write");
        assert!(store.read_events("s1").is_err());
    }

    #[test]
    fn a_buffered_store_writes_what_a_synced_one_reads_and_syncs_on_demand() {
        let (_dir, synced) = store();
        let buffered = synced.clone().buffered();
        buffered
            .create(CreateInput {
                session_id: Some("b1".into()),
                title: "t".into(),
                ..Default::default()
            })
            .expect("create");
        // The metadata as a crash a second ago left it: the next append is due to rewrite it.
        let mut meta = synced.get("b1").expect("get").expect("exists");
        meta.updated_at = "2000-01-01T00:00:00Z".into();
        synced.write_metadata(&meta).expect("write");
        for content in ["hi", "yo"] {
            buffered
                .append("b1", "message", Some(json!({"content": content})))
                .expect("append");
        }
        // Written to the OS at once: another store (another process) reads the events
        // before any sync, and the metadata once per second of events: the first append
        // rewrote it, the second only if its second is another.
        let events = synced.read_events("b1").expect("read");
        assert_eq!(events.len(), 2);
        let meta = synced.get("b1").expect("get").expect("exists");
        let (count, updated) = match events[1].created_at == events[0].created_at {
            true => (1, &events[0].created_at),
            false => (2, &events[1].created_at),
        };
        assert_eq!((meta.event_count, &meta.updated_at), (count, updated));
        // The sync brings it up to the log's last event, whatever the second.
        buffered.sync("b1").expect("sync");
        let meta = synced.get("b1").expect("get").expect("exists");
        assert_eq!(meta.event_count, 2);
        assert_eq!(meta.updated_at, events[1].created_at);
        assert_eq!(meta.last_event_type, "message");
        // A fork through the buffered store reports its metadata up to date.
        let fork = buffered
            .fork(
                "b1",
                Some("b2".into()),
                None,
                String::new(),
                String::new(),
                String::new(),
            )
            .expect("fork");
        assert_eq!(fork.event_count, 3);
        assert_eq!(fork.last_event_type, "session_fork");
        synced
            .sync("b1")
            .expect("a synced store syncs its events file");
        // A session that does not exist has nothing to sync; a bad id is still an error.
        buffered.sync("missing").expect("nothing to sync");
        assert!(matches!(
            buffered.sync("../x"),
            Err(ZeroError::InvalidId(_))
        ));
        // No temporary file is left behind by the unsynced metadata writes.
        let names: Vec<String> = fs::read_dir(buffered.session_dir("b1"))
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    }

    #[test]
    fn tail_recovery_handles_long_lines_and_a_wholly_torn_file() {
        let (_dir, store) = store();
        store
            .create(CreateInput {
                session_id: Some("big".into()),
                ..Default::default()
            })
            .expect("create");
        let long = "x".repeat(200 * 1024);
        store
            .append("big", "tool_result", Some(json!({"output": long})))
            .expect("first");
        store
            .append("big", "tool_result", Some(json!({"output": long})))
            .expect("second");
        // Metadata lost its count (crash between the event write and the metadata update):
        // the sequence still continues from the file.
        let mut meta = store.get("big").expect("get").expect("exists");
        meta.event_count = 0;
        store.write_metadata(&meta).expect("write");
        let third = store
            .append("big", "message", None::<Value>)
            .expect("third");
        assert_eq!(third.sequence, 3);

        let events_path = store.session_dir("big").join(EVENTS_FILE);
        fs::write(&events_path, "{\"id\":\"big:1\",\"sess").expect("torn only");
        let mut meta = store.get("big").expect("get").expect("exists");
        meta.event_count = 0;
        store.write_metadata(&meta).expect("write");
        let event = store
            .append("big", "message", None::<Value>)
            .expect("append");
        assert_eq!(event.sequence, 1);
        assert_eq!(store.read_events("big").expect("read").len(), 1);
    }

    /// agent-host's rule, which readers and the append share: a last event that is whole
    /// but lost its newline is kept (and terminated before the next line), not cut off.
    #[test]
    fn a_whole_last_line_without_its_newline_is_kept() {
        let (_dir, store) = store();
        store
            .create(CreateInput {
                session_id: Some("w".into()),
                ..Default::default()
            })
            .expect("create");
        store.append("w", "message", None::<Value>).expect("first");
        let events_path = store.session_dir("w").join(EVENTS_FILE);
        let whole = fs::read(&events_path).expect("read");
        fs::write(&events_path, &whole[..whole.len() - 1]).expect("drop the newline");
        assert_eq!(store.read_events("w").expect("read").len(), 1);
        let second = store.append("w", "error", None::<Value>).expect("second");
        assert_eq!(second.sequence, 2);
        let events = store.read_events("w").expect("read");
        let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(kinds, ["message", "error"]);
    }

    /// Whole-second and millisecond times of the same second sort by time, not as text
    /// (where `…00Z` comes after `…00.500Z`).
    #[test]
    fn list_sorts_by_the_time_updated() {
        let (_dir, store) = store();
        for (id, updated_at) in [
            ("whole", "2026-01-01T00:00:00Z"),
            ("later", "2026-01-01T00:00:00.500Z"),
            ("earlier", "2025-12-31T23:59:59.999Z"),
            ("bad", "yesterday"),
        ] {
            let mut meta = store
                .create(CreateInput {
                    session_id: Some(id.into()),
                    ..Default::default()
                })
                .expect("create");
            meta.updated_at = updated_at.into();
            store.write_metadata(&meta).expect("write");
        }
        let ids: Vec<String> = store
            .list()
            .expect("list")
            .into_iter()
            .map(|meta| meta.session_id)
            .collect();
        assert_eq!(ids, ["later", "whole", "earlier", "bad"]);
        let latest = store.latest_resumable().expect("latest").expect("one");
        assert_eq!(latest.session_id, "later");
    }

    #[cfg(unix)]
    #[test]
    fn files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let (_dir, store) = store();
        store
            .create(CreateInput {
                session_id: Some("p".into()),
                ..Default::default()
            })
            .expect("create");
        store.append("p", "error", None::<Value>).expect("append");
        let mode = |p: PathBuf| fs::metadata(p).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode(store.session_dir("p")), 0o700);
        assert_eq!(mode(store.session_dir("p").join(EVENTS_FILE)), 0o600);
        assert_eq!(mode(store.session_dir("p").join(METADATA_FILE)), 0o600);
        assert_eq!(mode(store.session_dir("p").join(LOCK_FILE)), 0o600);
    }

    #[test]
    fn fork_copies_events_except_usage() {
        let (_dir, store) = store();
        store
            .create(CreateInput {
                session_id: Some("parent".into()),
                title: "Parent".into(),
                ..Default::default()
            })
            .expect("create");
        store
            .append(
                "parent",
                "message",
                Some(json!({"role":"user","content":"a"})),
            )
            .expect("a");
        store
            .append("parent", "provider_usage", Some(json!({"totalTokens": 3})))
            .expect("b");
        store
            .append(
                "parent",
                "message",
                Some(json!({"role":"assistant","content":"b"})),
            )
            .expect("c");
        let fork = store
            .fork(
                "parent",
                Some("child".into()),
                None,
                String::new(),
                String::new(),
                String::new(),
            )
            .expect("fork");
        assert_eq!(fork.session_kind, "fork");
        assert_eq!(fork.title, "Parent (fork)");
        assert_eq!(fork.parent_session_id, "parent");
        assert_eq!(fork.root_session_id, "parent");
        assert_eq!(fork.forked_from_event_id, "parent:3");
        let events = store.read_events("child").expect("events");
        let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(kinds, ["message", "message", "session_fork"]);
        assert_eq!(events[1].id, "child:2");
        assert_eq!(
            events[2].payload.as_ref().expect("payload")["copiedEventCount"],
            2
        );
    }
}
