//! [`MemoryStorage`]: a [`SessionStorage`] that keeps everything in memory, for a host
//! that keeps no session files (zut RPC's one session lives as long as its process) and
//! for tests. It follows the event-log contract of [`storage`](super::storage) like any
//! other backend.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use agent_core::{
    async_trait,
    session::{MemorySessionStore, SessionError, SessionRecord, SessionStore},
};

use super::storage::{Durability, EventBounds, SessionStorage, StoreError, StoredEvent};
use super::types::SessionMeta;

/// What is kept besides the transcripts.
#[derive(Debug, Default)]
struct Sessions {
    metas: HashMap<String, SessionMeta>,
    events: HashMap<String, Vec<StoredEvent>>,
}

/// Sessions in memory: metadata, transcripts and event logs, gone with the value.
#[derive(Debug, Default)]
pub struct MemoryStorage {
    transcripts: MemorySessionStore,
    sessions: Mutex<Sessions>,
}

impl MemoryStorage {
    /// An empty storage.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Sessions> {
        // Nothing panics while holding the lock; recover the data if that ever changes.
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl SessionStore for MemoryStorage {
    async fn append(&self, id: &str, record: &SessionRecord) -> Result<(), SessionError> {
        self.transcripts.append(id, record).await
    }

    async fn load(&self, id: &str) -> Result<Vec<SessionRecord>, SessionError> {
        self.transcripts.load(id).await
    }

    async fn list(&self) -> Result<Vec<String>, SessionError> {
        self.transcripts.list().await
    }
}

#[async_trait]
impl SessionStorage for MemoryStorage {
    async fn save_meta(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        self.lock()
            .metas
            .insert(meta.session_id.clone(), meta.clone());
        Ok(())
    }

    async fn load_meta(&self, id: &str) -> Result<SessionMeta, StoreError> {
        self.lock()
            .metas
            .get(id)
            .cloned()
            .ok_or_else(|| StoreError::NotFound(id.to_string()))
    }

    async fn list_meta(&self) -> Result<Vec<SessionMeta>, StoreError> {
        Ok(self.lock().metas.values().cloned().collect())
    }

    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        let mut sessions = self.lock();
        sessions.events.remove(id);
        match sessions.metas.remove(id) {
            Some(_) => Ok(()),
            None => Err(StoreError::NotFound(id.to_string())),
        }
    }

    async fn sync_transcript(&self, _id: &str) -> Result<(), StoreError> {
        Ok(())
    }

    async fn append_events(
        &self,
        id: &str,
        events: &[StoredEvent],
        _durability: Durability,
    ) -> Result<(), StoreError> {
        let mut sessions = self.lock();
        let log = sessions.events.entry(id.to_string()).or_default();
        let first = log.last().map_or(1, |e| e.seq + 1);
        for (next, event) in (first..).zip(events) {
            if event.seq != next {
                return Err(StoreError::Conflict {
                    session_id: id.to_string(),
                    message: format!("event {} where {next} was due", event.seq),
                });
            }
        }
        log.extend(events.iter().cloned());
        Ok(())
    }

    async fn read_events(
        &self,
        id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        Ok(self
            .lock()
            .events
            .get(id)
            .map(|log| {
                log.iter()
                    .filter(|e| e.seq > after)
                    .take(limit)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn event_bounds(&self, id: &str) -> Result<EventBounds, StoreError> {
        Ok(bounds(self.lock().events.get(id)))
    }

    async fn trim_events(&self, id: &str, before: u64) -> Result<EventBounds, StoreError> {
        let mut sessions = self.lock();
        let log = sessions.events.get_mut(id);
        if let Some(log) = log {
            let last = log.last().map_or(0, |e| e.seq);
            log.retain(|e| e.seq >= before || e.seq == last);
            return Ok(bounds(Some(log)));
        }
        Ok(EventBounds::EMPTY)
    }
}

fn bounds(log: Option<&Vec<StoredEvent>>) -> EventBounds {
    match log.and_then(|log| Some((log.first()?, log.last()?))) {
        Some((first, last)) => EventBounds {
            oldest: first.seq,
            last: last.seq,
        },
        None => EventBounds::EMPTY,
    }
}
