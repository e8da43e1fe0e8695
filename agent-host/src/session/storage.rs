//! [`SessionStorage`]: everything the session host keeps about a session, as one async
//! trait a backend implements — the files under a data directory ([`FileStore`](super::FileStore)) or a
//! database shared by a fleet of processes.
//!
//! A session is three things in storage:
//!
//! - its **metadata** ([`SessionMeta`]: title, workspace, parent/fork origin, mode, model,
//!   usage…), replaced whole on every change;
//! - its **transcript**: the agent's [`SessionRecord`](agent_core::session::SessionRecord)s, appended one at a time through
//!   agent-core's [`SessionStore`] (the supertrait), made durable at the end of every turn
//!   ([`sync_transcript`](SessionStorage::sync_transcript));
//! - its **event log**: a front end's numbered events ([`StoredEvent`]: a `seq` and the
//!   serialised event, kept verbatim), appended in batches, read back after a seq, and
//!   trimmed to a retention limit. The store keeps what it is given; numbering, the
//!   in-memory window, replay and retention policy live once, above every backend, in
//!   [`EventJournal`](super::journal::EventJournal).
//!
//! # The event-log contract
//!
//! - Seqs start at 1 and are consecutive. [`append_events`](SessionStorage::append_events)
//!   gets a batch whose seqs continue the stored log exactly (the first is the last stored
//!   seq + 1); a backend that finds otherwise (another writer got there first) fails with
//!   [`StoreError::Conflict`] and stores nothing of the batch. A batch is stored whole or
//!   not at all as far as readers can tell (a file's torn last line is dropped on read).
//! - [`read_events`](SessionStorage::read_events)`(after, limit)` returns the retained
//!   events with `seq > after`, oldest first, at most `limit`.
//! - [`event_bounds`](SessionStorage::event_bounds) gives the oldest retained and the last
//!   stored seq; a session without events has `EventBounds::EMPTY`.
//! - [`trim_events`](SessionStorage::trim_events)`(before)` drops the events with
//!   `seq < before` (never the last one): replays from older seqs then get the protocol's
//!   gap form.
//! - [`Durability::Buffered`] appends survive a crash of the process once the call
//!   returned; [`Durability::Sync`] ones survive a crash of the machine too.

use std::future::Future;
use std::pin::Pin;

use agent_core::{
    async_trait,
    session::{SessionError, SessionStore},
};
use serde_json::value::RawValue;

pub use crate::fs::Durability;

use super::types::SessionMeta;

/// The contract as one test suite every backend runs (feature `test-util`).
#[cfg(any(test, feature = "test-util"))]
pub mod contract;

/// A boxed future that owns what it needs.
pub type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// A claim on a session for one writer, from a storage shared by several processes
/// ([`SessionStorage::claim_writer`]; the turn side is in [`claim`](super::claim)).
/// Dropping it gives it back.
pub trait WriterClaim: Send + Sync + 'static {
    /// Whether the stored session changed (transcript, event log or metadata written by
    /// another process) since this process last read or wrote it: the session must be
    /// loaded again before it is written.
    fn stale(&self) -> bool;

    /// Resolves when the claim is lost (it could not be renewed, or another process took
    /// it over): whatever writes under it must stop.
    fn lost(&self) -> BoxFuture;
}

/// A boxed error of a storage backend (a database driver's, a pool's).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a storage operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No session with that id.
    #[error("session not found: {0}")]
    NotFound(String),
    /// File I/O failed.
    #[error("session store I/O for {context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Stored data could not be read back.
    #[error("corrupt session data in {context}: {message}")]
    Corrupt {
        /// Where.
        context: String,
        /// What was wrong.
        message: String,
    },
    /// Another writer changed the session first (an event batch whose seqs do not continue
    /// the stored log); nothing was written.
    #[error("session {session_id} was changed by another writer: {message}")]
    Conflict {
        /// The session.
        session_id: String,
        /// What did not match.
        message: String,
    },
    /// Another process holds the session for writing.
    #[error("session {session_id} is in use by {holder}")]
    Busy {
        /// The session.
        session_id: String,
        /// Who holds it (a node or process description).
        holder: String,
    },
    /// The backend cannot be reached or failed (a database that is down, a pool timeout).
    #[error("session store unavailable ({context}): {source}")]
    Unavailable {
        /// What was being done.
        context: String,
        /// The cause.
        source: BoxError,
    },
}

impl StoreError {
    /// An [`Io`](Self::Io) error maker for `map_err`.
    pub fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let context = context.into();
        move |source| Self::Io { context, source }
    }
}

impl From<SessionError> for StoreError {
    fn from(err: SessionError) -> Self {
        match err {
            SessionError::NotFound(id) => Self::NotFound(id),
            SessionError::Io { context, source } => Self::Io { context, source },
            SessionError::Corrupt { context, message } => Self::Corrupt { context, message },
        }
    }
}

impl From<StoreError> for SessionError {
    /// Keeps the kind where agent-core has one; the others become [`SessionError::Io`]
    /// with the whole message.
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NotFound(id) => Self::NotFound(id),
            StoreError::Io { context, source } => Self::Io { context, source },
            StoreError::Corrupt { context, message } => Self::Corrupt { context, message },
            other => Self::Io {
                context: "the session store".to_string(),
                source: std::io::Error::other(other),
            },
        }
    }
}

/// One event of a session's event log as stored: its number and the front end's serialised
/// event, kept verbatim (the store never looks inside).
#[derive(Debug, Clone)]
pub struct StoredEvent {
    /// Position in the session's log (1, 2, 3, …).
    pub seq: u64,
    /// The event, one JSON value.
    pub event: Box<RawValue>,
}

impl StoredEvent {
    /// An event from its seq and JSON text (checked to be one JSON value).
    pub fn new(seq: u64, json: String) -> Result<Self, serde_json::Error> {
        Ok(Self {
            seq,
            event: RawValue::from_string(json)?,
        })
    }

    /// An event from its seq and a value serialised once, without checking the JSON again
    /// (`serde_json::value::to_raw_value`).
    pub fn serialise<T: serde::Serialize + ?Sized>(
        seq: u64,
        value: &T,
    ) -> Result<Self, serde_json::Error> {
        Ok(Self {
            seq,
            event: serde_json::value::to_raw_value(value)?,
        })
    }

    /// The event's JSON text.
    pub fn json(&self) -> &str {
        self.event.get()
    }
}

impl PartialEq for StoredEvent {
    fn eq(&self, other: &Self) -> bool {
        self.seq == other.seq && self.event.get() == other.event.get()
    }
}

impl Eq for StoredEvent {}

/// The seqs a session's stored event log holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventBounds {
    /// The oldest retained seq (0 when the log is empty).
    pub oldest: u64,
    /// The last stored seq (0 when the log is empty).
    pub last: u64,
}

impl EventBounds {
    /// A log without events.
    pub const EMPTY: Self = Self { oldest: 0, last: 0 };

    /// Whether no event is stored.
    pub fn is_empty(&self) -> bool {
        self.last == 0
    }
}

/// Which sessions [`SessionStorage::list_meta_page`] returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetaQuery {
    /// Only sessions of this workspace key or path.
    pub workspace: Option<String>,
    /// Only these sessions.
    pub session_ids: Option<Vec<String>>,
    /// Only sessions updated before this `(updated_at, session_id)` (the last entry of the
    /// previous page), in the page order.
    pub before: Option<(i64, String)>,
    /// At most this many.
    pub limit: Option<usize>,
}

impl MetaQuery {
    /// Whether `meta` passes the filters (not the cursor or the limit).
    pub fn matches(&self, meta: &SessionMeta) -> bool {
        self.workspace
            .as_ref()
            .is_none_or(|w| &meta.workspace_key == w || &meta.workspace_path == w)
            && self
                .session_ids
                .as_ref()
                .is_none_or(|ids| ids.contains(&meta.session_id))
            && self.before.as_ref().is_none_or(|(updated_at, id)| {
                (meta.updated_at, &meta.session_id) < (*updated_at, id)
            })
    }
}

/// Everything the session host keeps about sessions (see the [module docs](self) for the
/// event-log contract). The transcript half is agent-core's [`SessionStore`], so the same
/// value is handed to each session's [`Agent`](agent_core::Agent) as its recorder.
#[async_trait]
pub trait SessionStorage: SessionStore {
    /// Stores the metadata of a session, replacing what was stored (creates the session).
    async fn save_meta(&self, meta: &SessionMeta) -> Result<(), StoreError>;

    /// Like [`save_meta`](Self::save_meta), but the call need not wait until the metadata
    /// is durable against a crash of the machine (a crash of the process still keeps it): a
    /// later `save_meta` makes it so. A turn's start is written this way, its end with
    /// `save_meta`. By default the same as `save_meta`.
    async fn save_meta_buffered(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        self.save_meta(meta).await
    }

    /// The metadata of a session ([`StoreError::NotFound`] when there is none).
    async fn load_meta(&self, id: &str) -> Result<SessionMeta, StoreError>;

    /// The metadata of every stored session, in no particular order; entries that cannot
    /// be read are skipped (and logged).
    async fn list_meta(&self) -> Result<Vec<SessionMeta>, StoreError>;

    /// One page of sessions, most recently updated first (ties by session id, descending).
    /// The default filters and sorts [`list_meta`](Self::list_meta); a database answers it
    /// from an index.
    async fn list_meta_page(&self, query: &MetaQuery) -> Result<Vec<SessionMeta>, StoreError> {
        let mut metas: Vec<SessionMeta> = self
            .list_meta()
            .await?
            .into_iter()
            .filter(|m| query.matches(m))
            .collect();
        metas.sort_by(|a, b| (b.updated_at, &b.session_id).cmp(&(a.updated_at, &a.session_id)));
        if let Some(limit) = query.limit {
            metas.truncate(limit);
        }
        Ok(metas)
    }

    /// A directory on this machine for the session's own files (tool output spilled past
    /// the context budget), if the backend keeps sessions on the local disk; `None` (the
    /// default) leaves spilled output to the agent's default place.
    fn local_dir(&self, id: &str) -> Option<std::path::PathBuf> {
        let _ = id;
        None
    }

    /// Makes every transcript record appended so far durable (survives a crash of the
    /// machine). Called at the end of every turn.
    async fn sync_transcript(&self, id: &str) -> Result<(), StoreError>;

    /// Appends `events` (consecutive seqs continuing the stored log) to the event log of
    /// session `id`.
    async fn append_events(
        &self,
        id: &str,
        events: &[StoredEvent],
        durability: Durability,
    ) -> Result<(), StoreError>;

    /// The retained events with `seq > after`, oldest first, at most `limit`.
    async fn read_events(
        &self,
        id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError>;

    /// Makes every event appended so far durable, after [`Durability::Buffered`] appends
    /// (a clean shutdown does). The default does nothing: for a backend whose appends are
    /// durable when they return.
    async fn sync_events(&self, id: &str) -> Result<(), StoreError> {
        let _ = id;
        Ok(())
    }

    /// The oldest retained and the last stored seq of the event log of session `id`.
    async fn event_bounds(&self, id: &str) -> Result<EventBounds, StoreError>;

    /// Drops the events with `seq < before` (the last stored event always stays). Returns
    /// the bounds afterwards.
    async fn trim_events(&self, id: &str, before: u64) -> Result<EventBounds, StoreError>;

    /// Whether session `id` was changed in this storage by another process since this one
    /// last read or wrote it (then a session active here is out of date and is loaded
    /// again: [`SessionManager::refresh`](super::SessionManager::refresh)). `Ok(false)`,
    /// the default: the storage belongs to one process.
    async fn changed_elsewhere(&self, id: &str) -> Result<bool, StoreError> {
        let _ = id;
        Ok(false)
    }

    /// Claims session `id` for one writer (a turn) among every process sharing this
    /// storage ([`claim`](super::claim)): [`StoreError::Busy`] while another process holds
    /// it. `Ok(None)`, the default: the storage belongs to one process, which needs no
    /// claim.
    async fn claim_writer(&self, id: &str) -> Result<Option<Box<dyn WriterClaim>>, StoreError> {
        let _ = id;
        Ok(None)
    }

    /// Deletes session `id` — its metadata, transcript, event log and own files — so that
    /// it is no longer listed or loaded; [`StoreError::NotFound`] when it is not stored.
    /// The default cannot delete: [`StoreError::Unavailable`].
    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        Err(StoreError::Unavailable {
            context: format!("delete session {id}"),
            source: "this session storage cannot delete sessions".into(),
        })
    }
}
