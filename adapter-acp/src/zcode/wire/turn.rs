//! Turn requests and results: send, stop, steer, compact and goal.

use serde::{Deserialize, Serialize};

use super::Snapshot;

/// `session/send` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendParams {
    /// The session.
    pub session_id: String,
    /// The prompt.
    pub content: String,
    /// Client input id, echoed in `turn.started`.
    #[serde(default)]
    pub input_id: Option<String>,
}

/// `session/steer` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SteerParams {
    /// The session.
    pub session_id: String,
    /// Extra instructions.
    pub content: String,
}

/// `session/goal` actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GoalAction {
    /// Show the goal.
    Show,
    /// Set a goal.
    Set,
    /// Replace the goal.
    Replace,
    /// Remove the goal.
    Clear,
    /// Pause the goal.
    Pause,
    /// Resume a paused goal.
    Resume,
}

/// `session/goal` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GoalParams {
    /// The session.
    pub session_id: String,
    /// What to do.
    pub action: GoalAction,
    /// The objective, for `set` and `replace`.
    #[serde(default)]
    pub objective: Option<String>,
}

/// `session/send` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SendResult {
    /// Session id.
    pub session_id: String,
    /// Always true.
    pub accepted: bool,
    /// State revision after the turn started.
    pub state_revision: u64,
}

/// `session/stop` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StopResult {
    /// Session id.
    pub session_id: String,
    /// Whether a turn was stopped.
    pub stopped: bool,
}

/// `session/steer` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SteerResult {
    /// Session id.
    pub session_id: String,
    /// Always true.
    pub accepted: bool,
    /// Whether a turn was running (otherwise the text waits for the next one).
    pub queued_for_next_turn: bool,
}

/// A session goal.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GoalInfo {
    /// The objective.
    pub objective: String,
    /// `active` or `paused`.
    pub status: GoalStatus,
    /// Set at, ms.
    pub created_at: i64,
    /// Changed at, ms.
    pub updated_at: i64,
}

/// `session/goal` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GoalResult {
    /// Human-readable answer.
    pub response: String,
    /// The goal after the action.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goal: Option<GoalInfo>,
    /// Session snapshot.
    pub snapshot: Box<Snapshot>,
}

/// Compaction state in a `session/compact` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactState {
    /// `accepted` or `already_running`.
    pub state: CompactAcceptance,
    /// The compaction's operation (turn) id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
}

/// `session/compact` result.
#[derive(Debug, Clone, Serialize)]
pub struct CompactResult {
    /// Human-readable answer.
    pub response: String,
    /// Session snapshot.
    pub snapshot: Box<Snapshot>,
    /// Compaction state.
    pub compact: CompactState,
}

/// A goal's status: `active` or `paused`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GoalStatus {
    /// Pursued.
    Active,
    /// Paused.
    Paused,
}

/// What became of a `session/compact`: `accepted` or `already_running`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactAcceptance {
    /// A compaction started.
    Accepted,
    /// One runs already.
    AlreadyRunning,
}
