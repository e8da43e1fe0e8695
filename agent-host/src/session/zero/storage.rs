//! [`ZeroStorage`]: the host's [`SessionStorage`] in Zero's layout, so a host keeps its
//! sessions where Zero keeps its own (and `zero exec --resume` finds them), beside the files
//! ([`FileStore`](crate::session::FileStore)) and PostgreSQL backends.
//!
//! - **Metadata** is `metadata.json`: the fields both know are Zero's (`sessionId`, `cwd`,
//!   `parentSessionId`, `title`, `provider`, `modelId`, `createdAt`/`updatedAt` in RFC 3339,
//!   to the millisecond when not whole seconds); the rest of the host's [`SessionMeta`] is
//!   kept under the one key `agentHost`, and Zero's own fields (kind, lineage, `eventCount`,
//!   …) stay as they are. A session Zero made reads as a host session (its workspace key is
//!   its `cwd`).
//! - **The event log** is `events.jsonl` ([`log`]): an event is a line, its seq
//!   the line's `sequence`, appended with Zero's lock, repair and metadata update.
//! - **The transcript** ([`Transcripts`]): the agent's records in `transcript.jsonl` beside
//!   Zero's files, or, as Zero's exec has it, not kept: then a session's conversation is
//!   what its `message` events say (as it is for a session without `transcript.jsonl`).
//!
//! The files Zero writes stay byte for byte what [`ZeroSessions`] writes: an exec run gives
//! its agent this storage without a transcript, and its session's files are unchanged.

use std::path::PathBuf;

use agent_core::{
    async_trait,
    session::{SessionError as CoreError, SessionRecord, SessionStore},
    Message,
};
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value};

use super::records::Metadata;
use super::sessions::{io, ZeroError, ZeroSessions};
use super::{log, valid_session_id, EVENTS_FILE, LOCK_FILE};
use crate::fs::{
    append_jsonl, create_dir_all_private, create_dir_private, parse_jsonl, private_options,
    Durability as FileDurability, FileLock,
};
use crate::session::storage::{Durability, EventBounds, SessionStorage, StoreError, StoredEvent};
use crate::session::store::sync_file;
use crate::session::types::SessionMeta;

/// The file of the agent's records beside Zero's (with [`Transcripts::Kept`]).
pub const TRANSCRIPT_FILE: &str = "transcript.jsonl";

/// The key of `metadata.json` holding the host's fields Zero has none for.
pub const HOST_KEY: &str = "agentHost";

/// The [`SessionMeta`] fields kept in Zero's own fields of `metadata.json`.
const ZERO_FIELDS: [&str; 8] = [
    "sessionId",
    "workspacePath",
    "parentSessionId",
    "title",
    "providerId",
    "model",
    "createdAt",
    "updatedAt",
];

/// What becomes of the agent's transcript records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transcripts {
    /// Kept in `transcript.jsonl` in the session's directory, so a resumed session has its
    /// whole transcript.
    #[default]
    Kept,
    /// Not kept, as Zero's exec has it: its session is the events its front end records
    /// from the run, and a resumed run's model gets a summary of them. Appends store
    /// nothing; a session's transcript is what its `message` events say.
    FromEvents,
}

/// The host's [`SessionStorage`] over [`ZeroSessions`] (see the [module docs](self)).
#[derive(Debug, Clone)]
pub struct ZeroStorage {
    sessions: ZeroSessions,
    transcripts: Transcripts,
}

impl From<ZeroError> for StoreError {
    fn from(err: ZeroError) -> Self {
        match err {
            ZeroError::InvalidId(id) | ZeroError::NotFound(id) => Self::NotFound(id),
            ZeroError::Exists(id) => Self::Conflict {
                message: format!("zero session already exists: {id}"),
                session_id: id,
            },
            ZeroError::Io { context, source } => Self::Io { context, source },
            ZeroError::Corrupt(message) => Self::Corrupt {
                context: "zero session".to_string(),
                message,
            },
        }
    }
}

fn corrupt(id: &str, message: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        context: format!("zero session {id}"),
        message: message.to_string(),
    }
}

/// Runs the blocking file operation `op` off the async workers.
async fn blocking<T: Send + 'static>(
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

/// A time in milliseconds as Zero writes times: RFC 3339 UTC, in whole seconds when it is.
fn rfc3339(ms: i64) -> String {
    let time = DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or_default();
    let format = match ms % 1000 {
        0 => SecondsFormat::Secs,
        _ => SecondsFormat::Millis,
    };
    time.to_rfc3339_opts(format, true)
}

/// A time Zero wrote, in milliseconds (0 when it is not one).
fn millis(time: &str) -> i64 {
    DateTime::parse_from_rfc3339(time).map_or(0, |t| t.timestamp_millis())
}

/// Writes `meta` into Zero's metadata `zero`, keeping Zero's own fields.
fn put_meta(zero: &mut Metadata, meta: &SessionMeta) -> Result<(), StoreError> {
    let Value::Object(mut rest) =
        serde_json::to_value(meta).map_err(|err| corrupt(&meta.session_id, err))?
    else {
        return Err(corrupt(&meta.session_id, "metadata is not an object"));
    };
    for field in ZERO_FIELDS {
        rest.remove(field);
    }
    zero.session_id = meta.session_id.clone();
    zero.cwd = meta.workspace_path.clone();
    zero.parent_session_id = meta.parent_session_id.clone().unwrap_or_default();
    zero.title = meta.title.clone();
    zero.provider = meta.provider_id.clone();
    zero.model_id = meta.model.clone();
    zero.created_at = rfc3339(meta.created_at);
    zero.updated_at = rfc3339(meta.updated_at);
    zero.extra.insert(HOST_KEY.to_string(), Value::Object(rest));
    Ok(())
}

/// The host's metadata of Zero's `zero`.
fn host_meta(zero: &Metadata) -> Result<SessionMeta, StoreError> {
    let mut fields = match zero.extra.get(HOST_KEY) {
        Some(Value::Object(fields)) => fields.clone(),
        _ => Map::new(),
    };
    let text = |s: &str| Value::String(s.to_string());
    fields.insert("sessionId".into(), text(&zero.session_id));
    fields.insert("workspacePath".into(), text(&zero.cwd));
    fields.insert(
        "parentSessionId".into(),
        match zero.parent_session_id.is_empty() {
            true => Value::Null,
            false => text(&zero.parent_session_id),
        },
    );
    fields.insert("title".into(), text(&zero.title));
    fields.insert("providerId".into(), text(&zero.provider));
    fields.insert("model".into(), text(&zero.model_id));
    fields.insert("createdAt".into(), millis(&zero.created_at).into());
    fields.insert("updatedAt".into(), millis(&zero.updated_at).into());
    fields
        .entry("workspaceKey")
        .or_insert_with(|| text(&zero.cwd));
    serde_json::from_value(Value::Object(fields)).map_err(|err| corrupt(&zero.session_id, err))
}

/// A session's conversation as its `message` events tell it.
fn conversation(sessions: &ZeroSessions, id: &str) -> Result<Vec<SessionRecord>, StoreError> {
    let mut records = Vec::new();
    for event in sessions.read_events(id)? {
        if event.kind != "message" {
            continue;
        }
        let Some(payload) = &event.payload else {
            continue;
        };
        let content = payload.get("content").and_then(Value::as_str);
        let mut message = match (payload.get("role").and_then(Value::as_str), content) {
            (Some("user"), Some(text)) => Message::user_text(text),
            (Some("assistant"), Some(text)) => Message::assistant_text(text),
            _ => continue,
        };
        if let Ok(time) = DateTime::parse_from_rfc3339(&event.created_at) {
            message.time = time.with_timezone(&Utc);
        }
        records.push(SessionRecord::Message { message });
    }
    Ok(records)
}

impl ZeroStorage {
    /// The storage of `sessions`, keeping transcripts ([`Transcripts::Kept`]).
    pub fn new(sessions: ZeroSessions) -> Self {
        Self {
            sessions,
            transcripts: Transcripts::Kept,
        }
    }

    /// What becomes of the agent's transcript records.
    pub fn transcripts(mut self, transcripts: Transcripts) -> Self {
        self.transcripts = transcripts;
        self
    }

    /// The sessions directory.
    pub fn sessions(&self) -> &ZeroSessions {
        &self.sessions
    }

    /// The directory of session `id`, checked to be a session id.
    fn dir(&self, id: &str) -> Result<PathBuf, ZeroError> {
        ZeroSessions::check_id(id)?;
        Ok(self.sessions.session_dir(id))
    }

    /// Stores `meta` under the session's lock, creating the session in Zero's layout
    /// (directory, `metadata.json`, an empty `events.jsonl`) when it is new.
    fn save_meta_now(sessions: &ZeroSessions, meta: &SessionMeta) -> Result<(), StoreError> {
        let id = meta.session_id.as_str();
        ZeroSessions::check_id(id)?;
        create_dir_all_private(sessions.root()).map_err(io("create zero session root"))?;
        let dir = sessions.session_dir(id);
        match create_dir_private(&dir) {
            Err(err) if err.kind() != std::io::ErrorKind::AlreadyExists => {
                return Err(io("create zero session directory")(err).into())
            }
            _ => {}
        }
        let _lock = FileLock::exclusive(&dir.join(LOCK_FILE)).map_err(io("lock zero session"))?;
        let mut zero = sessions.read_metadata(id)?.unwrap_or_default();
        put_meta(&mut zero, meta)?;
        sessions.write_metadata(&zero)?;
        private_options()
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(EVENTS_FILE))
            .map_err(io("create zero session events file"))?;
        Ok(())
    }

    fn load_now(&self, id: &str) -> Result<Vec<SessionRecord>, StoreError> {
        let dir = self.dir(id)?;
        if self.transcripts == Transcripts::Kept {
            let path = dir.join(TRANSCRIPT_FILE);
            match std::fs::read(&path) {
                Ok(bytes) => {
                    return parse_jsonl::<SessionRecord>(&bytes)
                        .map(|jsonl| jsonl.records)
                        .map_err(|err| corrupt(id, format!("{TRANSCRIPT_FILE}: {err}")))
                }
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => return Err(io("read zero session transcript")(err).into()),
            }
        }
        match self.sessions.read_metadata(id)? {
            None => Err(StoreError::NotFound(id.to_string())),
            Some(_) => conversation(&self.sessions, id),
        }
    }
}

#[async_trait]
impl SessionStore for ZeroStorage {
    async fn append(&self, id: &str, record: &SessionRecord) -> Result<(), CoreError> {
        let dir = self.dir(id).map_err(StoreError::from)?;
        if self.transcripts == Transcripts::FromEvents {
            return Ok(());
        }
        let mut line = serde_json::to_vec(record).map_err(|err| corrupt(id, err))?;
        line.push(b'\n');
        Ok(blocking("append to a zero session transcript", move || {
            create_dir_all_private(&dir).map_err(io("create zero session directory"))?;
            append_jsonl(&dir.join(TRANSCRIPT_FILE), &line, FileDurability::Buffered)
                .map(drop)
                .map_err(|err| io("append to a zero session transcript")(err).into())
        })
        .await?)
    }

    async fn load(&self, id: &str) -> Result<Vec<SessionRecord>, CoreError> {
        let storage = self.clone();
        let id = id.to_string();
        Ok(blocking("load a zero session transcript", move || {
            storage.load_now(&id)
        })
        .await?)
    }

    /// Not for [`Transcripts::FromEvents`] (exec's): its records are dropped, and its file
    /// checkpoints are Zero's own (`session_checkpoint` events and their blobs).
    fn keeps_records(&self) -> bool {
        self.transcripts == Transcripts::Kept
    }

    async fn list(&self) -> Result<Vec<String>, CoreError> {
        let root = self.sessions.root().to_path_buf();
        Ok(blocking("list zero sessions", move || {
            let entries = match std::fs::read_dir(&root) {
                Ok(entries) => entries,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                Err(err) => return Err(io("read zero session root")(err).into()),
            };
            let mut ids: Vec<String> = entries
                .flatten()
                .filter(|entry| entry.path().is_dir())
                .filter_map(|entry| entry.file_name().to_str().map(str::to_string))
                .filter(|name| valid_session_id(name))
                .collect();
            ids.sort();
            Ok(ids)
        })
        .await?)
    }
}

#[async_trait]
impl SessionStorage for ZeroStorage {
    fn local_dir(&self, id: &str) -> Option<PathBuf> {
        self.dir(id).ok()
    }

    async fn save_meta(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        let (sessions, meta) = (self.sessions.clone(), meta.clone());
        blocking("save zero session metadata", move || {
            Self::save_meta_now(&sessions, &meta)
        })
        .await
    }

    async fn load_meta(&self, id: &str) -> Result<SessionMeta, StoreError> {
        let (sessions, id) = (self.sessions.clone(), id.to_string());
        blocking("load zero session metadata", move || {
            match sessions.get(&id)? {
                Some(zero) => host_meta(&zero),
                None => Err(StoreError::NotFound(id)),
            }
        })
        .await
    }

    async fn list_meta(&self) -> Result<Vec<SessionMeta>, StoreError> {
        let sessions = self.sessions.clone();
        blocking("list zero sessions", move || {
            // Entries that cannot be read are skipped (`ZeroSessions::list` skips theirs).
            Ok(sessions
                .list()?
                .iter()
                .filter_map(|zero| host_meta(zero).ok())
                .collect())
        })
        .await
    }

    async fn sync_transcript(&self, id: &str) -> Result<(), StoreError> {
        let path = self.dir(id)?.join(TRANSCRIPT_FILE);
        match self.transcripts {
            Transcripts::FromEvents => Ok(()),
            Transcripts::Kept => {
                blocking("sync a zero session transcript", move || sync_file(&path)).await
            }
        }
    }

    async fn append_events(
        &self,
        id: &str,
        events: &[StoredEvent],
        durability: Durability,
    ) -> Result<(), StoreError> {
        let (sessions, id, events) = (self.sessions.clone(), id.to_string(), events.to_vec());
        blocking("append to a zero session", move || {
            log::append(&sessions, &id, &events, durability == Durability::Sync)
        })
        .await
    }

    async fn read_events(
        &self,
        id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let (sessions, id) = (self.sessions.clone(), id.to_string());
        blocking("read a zero session", move || {
            log::read_after(&sessions, &id, after, limit)
        })
        .await
    }

    async fn sync_events(&self, id: &str) -> Result<(), StoreError> {
        let (sessions, id) = (self.sessions.clone(), id.to_string());
        blocking("sync a zero session", move || Ok(sessions.sync(&id)?)).await
    }

    async fn event_bounds(&self, id: &str) -> Result<EventBounds, StoreError> {
        let (sessions, id) = (self.sessions.clone(), id.to_string());
        blocking("read a zero session", move || log::bounds(&sessions, &id)).await
    }

    async fn trim_events(&self, id: &str, before: u64) -> Result<EventBounds, StoreError> {
        let (sessions, id) = (self.sessions.clone(), id.to_string());
        blocking("trim a zero session", move || {
            log::trim(&sessions, &id, before)
        })
        .await
    }
}

#[cfg(test)]
mod tests;
