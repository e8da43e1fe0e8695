//! Session stores: append-only records of a transcript.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::message::Message;

/// One appended record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SessionRecord {
    /// A message was added.
    Message {
        /// The message.
        message: Message,
    },
    /// The transcript was replaced wholesale (compaction, fork).
    Replaced {
        /// The new transcript.
        messages: Vec<Message>,
    },
    /// The transcript was cleared (and the pinned notes with it).
    Cleared,
    /// The pinned notes changed; this is the whole new list.
    Notes {
        /// Every pinned note, in order.
        notes: Vec<String>,
    },
    /// The approver allowed a tool for the rest of the session ("always allow"); a resumed
    /// session keeps the grant.
    Granted {
        /// The tool's name.
        tool: String,
    },
    /// The before-state of the files a call changed ([`crate::rewind`]).
    Checkpoint {
        /// The checkpoint.
        checkpoint: Box<crate::rewind::Checkpoint>,
    },
    /// The session was rewound to a checkpoint: it and every later one are undone (a
    /// [`SessionRecord::Replaced`] with the cut transcript follows).
    Rewound {
        /// The checkpoint's id.
        checkpoint: String,
    },
}

impl SessionRecord {
    /// Rebuilds a transcript from records in order.
    pub fn replay<'a>(records: impl IntoIterator<Item = &'a SessionRecord>) -> Vec<Message> {
        let mut messages = Vec::new();
        for record in records {
            match record {
                SessionRecord::Message { message } => messages.push(message.clone()),
                SessionRecord::Replaced { messages: m } => messages = m.clone(),
                SessionRecord::Cleared => messages.clear(),
                SessionRecord::Notes { .. }
                | SessionRecord::Granted { .. }
                | SessionRecord::Checkpoint { .. }
                | SessionRecord::Rewound { .. } => {}
            }
        }
        messages
    }

    /// Rebuilds the pinned notes from records in order: the last [`SessionRecord::Notes`]
    /// since the last [`SessionRecord::Cleared`].
    pub fn replay_notes<'a>(records: impl IntoIterator<Item = &'a SessionRecord>) -> Vec<String> {
        let mut notes = Vec::new();
        for record in records {
            match record {
                SessionRecord::Notes { notes: n } => notes = n.clone(),
                SessionRecord::Cleared => notes.clear(),
                SessionRecord::Message { .. }
                | SessionRecord::Replaced { .. }
                | SessionRecord::Granted { .. }
                | SessionRecord::Checkpoint { .. }
                | SessionRecord::Rewound { .. } => {}
            }
        }
        notes
    }

    /// The tools the session's "always allow" answers granted, from records in order.
    pub fn replay_granted<'a>(
        records: impl IntoIterator<Item = &'a SessionRecord>,
    ) -> std::collections::HashSet<String> {
        records
            .into_iter()
            .filter_map(|record| match record {
                SessionRecord::Granted { tool } => Some(tool.clone()),
                _ => None,
            })
            .collect()
    }
}

/// A session store failure.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// No session with that id.
    #[error("session not found: {0}")]
    NotFound(String),
    /// Storage I/O failed.
    #[error("session store I/O for {context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Stored data could not be read back.
    #[error("corrupt session record in {context}: {message}")]
    Corrupt {
        /// Where.
        context: String,
        /// What was wrong.
        message: String,
    },
}

/// Persists transcripts as append-only records.
#[async_trait]
pub trait SessionStore: Send + Sync + 'static {
    /// Appends one record to session `id`, creating the session if needed.
    async fn append(&self, id: &str, record: &SessionRecord) -> Result<(), SessionError>;

    /// All records of session `id`, in order.
    async fn load(&self, id: &str) -> Result<Vec<SessionRecord>, SessionError>;

    /// Ids of all sessions.
    async fn list(&self) -> Result<Vec<String>, SessionError>;

    /// Whether the records appended are kept for [`Self::load`]. A store that rebuilds its
    /// transcripts from something else and drops the records answers false, and the agent
    /// then takes no file checkpoints ([`crate::rewind`]) for it. True by default.
    fn keeps_records(&self) -> bool {
        true
    }
}

/// A [`SessionStore`] in memory, for tests and short-lived hosts.
#[derive(Debug, Default)]
pub struct MemorySessionStore {
    sessions: Mutex<HashMap<String, Vec<SessionRecord>>>,
}

impl MemorySessionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<SessionRecord>>> {
        // A poisoned lock only means another thread panicked mid-append; the map is intact.
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl SessionStore for MemorySessionStore {
    async fn append(&self, id: &str, record: &SessionRecord) -> Result<(), SessionError> {
        self.lock()
            .entry(id.to_string())
            .or_default()
            .push(record.clone());
        Ok(())
    }

    async fn load(&self, id: &str) -> Result<Vec<SessionRecord>, SessionError> {
        self.lock()
            .get(id)
            .cloned()
            .ok_or_else(|| SessionError::NotFound(id.to_string()))
    }

    async fn list(&self) -> Result<Vec<String>, SessionError> {
        let mut ids: Vec<String> = self.lock().keys().cloned().collect();
        ids.sort();
        Ok(ids)
    }
}
