//! `session/rewind` (the protocol document's extension method "Rewind to a checkpoint":
//! `{sessionId, target, expectedRevision?}`) and its `rewind.triggered` event.
//!
//! A checkpoint is the before-state of the files one call changed, named by the call's id
//! ([`agent_core::rewind`]). The targets are `session/fork`'s, read as "undo from here": the
//! latest checkpoint, a checkpoint by id, the first checkpoint of a turn (0-based) or the
//! first at or after a message. A file someone changed since the agent's last change
//! refuses the whole rewind (-32600 naming it, `data.conflicts`; nothing changed) unless
//! `force` (this SDK's) is given.

use serde::{Deserialize, Serialize};

use super::Snapshot;

/// Where a rewind goes back to: `session/fork`'s targets, read as "undo from here" —
/// `latestCheckpoint` (undo the last file change), `checkpoint` (by id), `turn` (its first
/// checkpoint), `message` (the first checkpoint at or after it).
pub use super::ForkTarget as RewindTarget;

/// `session/rewind` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RewindParams {
    /// The session.
    pub session_id: String,
    /// Where to go back to (default the latest checkpoint).
    #[serde(default)]
    pub target: Option<RewindTarget>,
    /// The session's `stateRevision` the client saw; another is a conflict.
    #[serde(default)]
    pub expected_revision: Option<u64>,
    /// Overwrite files changed since the agent's last change (this SDK's).
    #[serde(default)]
    pub force: bool,
}

/// A file a rewind left alone, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedFile {
    /// The path as the call named it.
    pub path: String,
    /// Why.
    pub reason: String,
}

/// What a rewind did: `rewind.triggered`'s payload, and part of the result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RewindTriggeredPayload {
    /// The checkpoint rewound to.
    pub checkpoint_id: String,
    /// Files written back.
    pub restored: Vec<String>,
    /// Files deleted (the agent had created them).
    pub deleted: Vec<String>,
    /// Files left alone (not restorable, outside the workspace).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedFile>,
    /// Messages the transcript kept.
    pub kept_messages: usize,
}

/// `session/rewind` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RewindResult {
    /// Human-readable answer.
    pub response: String,
    /// What the rewind did.
    pub rewind: RewindTriggeredPayload,
    /// Session snapshot after it.
    pub snapshot: Box<Snapshot>,
}
