//! The records of a Zero session on disk: `metadata.json` ([`Metadata`]), the lines of
//! `events.jsonl` as read ([`SessionEvent`], any payload as JSON) and as written
//! ([`SessionEventLine`], a typed payload), and the one payload this layer writes itself
//! ([`ForkRecord`]). The payloads a front end records (messages, tool calls, …) are its own
//! types: [`ZeroSessions::append`](super::ZeroSessions::append) takes any `Serialize`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `metadata.json`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    /// Session id.
    pub session_id: String,
    /// `""` (normal), `fork`, `child`, `spec-draft` or `spec-impl`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub session_kind: String,
    /// Title.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
    /// Workspace root.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cwd: String,
    /// Model.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model_id: String,
    /// Provider kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub provider: String,
    /// Tag.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tag: String,
    /// Depth of a child session.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub depth: u64,
    /// Parent session (forks and children).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub parent_session_id: String,
    /// Root of the lineage.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub root_session_id: String,
    /// The specialist a child session runs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub agent_name: String,
    /// The task id of a child session.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub task_id: String,
    /// Id of the parent's last event when forked.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub forked_from_event_id: String,
    /// Sequence of the parent's last event when forked.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub forked_from_sequence: u64,
    /// The parent's tool call a child session was spawned from.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub spawned_from_event_id: String,
    /// The sequence of the parent's event it was spawned from, when known.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spawned_from_sequence: u64,
    /// RFC 3339 UTC.
    #[serde(default)]
    pub created_at: String,
    /// RFC 3339 UTC.
    #[serde(default)]
    pub updated_at: String,
    /// Number of events appended.
    #[serde(default)]
    pub event_count: u64,
    /// Type of the last event.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub last_event_type: String,
    /// Fields written by other versions, kept as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Metadata {
    /// Whether `--resume` may continue this session (normal sessions and forks).
    pub fn is_resumable(&self) -> bool {
        matches!(self.session_kind.as_str(), "" | "fork")
    }
}

/// One line of `events.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEvent {
    /// `<sessionId>:<sequence>`.
    pub id: String,
    /// Session id.
    pub session_id: String,
    /// 1-based sequence.
    pub sequence: u64,
    /// Event type (`message`, `tool_call`, …).
    #[serde(rename = "type")]
    pub kind: String,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// Payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
}

/// One line of `events.jsonl` as it is written, with a typed payload.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEventLine<'a, P> {
    /// `<sessionId>:<sequence>`.
    pub id: String,
    /// Session id.
    pub session_id: &'a str,
    /// 1-based sequence.
    pub sequence: u64,
    /// Event type.
    #[serde(rename = "type")]
    pub kind: &'a str,
    /// RFC 3339 UTC.
    pub created_at: &'a str,
    /// Payload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<P>,
}

/// What an append wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The event id, `<sessionId>:<sequence>`.
    pub id: String,
    /// Its sequence.
    pub sequence: u64,
}

/// `session_fork`: the lineage of a fork, appended after the copied events.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkRecord<'a> {
    /// Events copied from the parent.
    pub copied_event_count: u64,
    /// Id of the parent's last event.
    pub forked_from_event_id: &'a str,
    /// Sequence of the parent's last event.
    pub forked_from_sequence: u64,
    /// Events the parent had.
    pub parent_event_count: u64,
    /// The parent session.
    pub parent_session_id: &'a str,
}
