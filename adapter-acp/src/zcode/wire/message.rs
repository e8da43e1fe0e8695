//! Messages and their parts, as `session/messages` and snapshots show them.

use serde::Serialize;
use serde_json::Value;

use super::ModelRef;

/// Times of a message.
#[derive(Debug, Clone, Serialize)]
pub struct MessageTime {
    /// Created, ms.
    pub created: i64,
    /// Completed, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed: Option<i64>,
}

/// Paths of an assistant message.
#[derive(Debug, Clone, Serialize)]
pub struct MessagePath {
    /// Working directory.
    pub cwd: String,
    /// Workspace root.
    pub root: String,
}

/// Cache token counts.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CacheTokens {
    /// Read from cache.
    pub read: u64,
    /// Written to cache.
    pub write: u64,
}

/// Token counts of a message.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MessageTokens {
    /// Input.
    pub input: u64,
    /// Output.
    pub output: u64,
    /// Reasoning.
    pub reasoning: u64,
    /// Cache.
    pub cache: CacheTokens,
}

/// A user message's info.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessageInfo {
    /// Message id.
    pub message_id: String,
    /// Session id.
    pub session_id: String,
    /// Times.
    pub time: MessageTime,
    /// The agent (mode) it was sent in.
    pub agent: String,
    /// Written by the agent itself (compaction summary, recovery nudge).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub synthetic: bool,
}

/// An assistant message's info.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessageInfo {
    /// Message id.
    pub message_id: String,
    /// Session id.
    pub session_id: String,
    /// Times.
    pub time: MessageTime,
    /// The user message it answers.
    pub parent_message_id: String,
    /// The agent (mode).
    pub agent: String,
    /// The model.
    pub model: ModelRef,
    /// Paths.
    pub path: MessagePath,
    /// Cost in USD.
    pub cost: f64,
    /// Tokens.
    pub tokens: MessageTokens,
    /// `tool-calls` or `stop`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish: Option<FinishReason>,
}

/// Message info, discriminated by role.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum MessageInfo {
    /// A user message.
    User(UserMessageInfo),
    /// An assistant message.
    Assistant(AssistantMessageInfo),
}

/// State of a tool part.
#[derive(Debug, Clone, Serialize)]
#[serde(
    tag = "status",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub enum ToolState {
    /// Not run yet.
    Pending {
        /// Arguments.
        input: Value,
        /// Raw argument text.
        raw: String,
    },
    /// Running.
    Running {
        /// Arguments.
        input: Value,
        /// Start, ms.
        started_at: i64,
    },
    /// Finished.
    Completed {
        /// Arguments.
        input: Value,
        /// Output text.
        output: String,
        /// Title.
        title: String,
        /// Extra data: [`ToolMeta`](super::ToolMeta) (a sandbox block, hook decisions, the sub-agent's
        /// session), `{}` when there is none.
        metadata: Value,
        /// Start, ms.
        started_at: i64,
        /// End, ms.
        completed_at: i64,
    },
    /// Failed, refused or not run.
    Error {
        /// Arguments.
        input: Value,
        /// Error text.
        error: String,
        /// [`ToolMeta`](super::ToolMeta), when there is some (a sandbox block, the hook that refused it).
        #[serde(skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
        /// Start, ms.
        started_at: i64,
        /// End, ms.
        completed_at: i64,
    },
}

/// The content of a part.
// Parts are built once per message part and serialised straight away; boxing the tool
// state would only add indirection to every constructor.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Serialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum PartBody {
    /// Answer text.
    Text {
        /// The text.
        text: String,
    },
    /// Reasoning text.
    Reasoning {
        /// The text.
        text: String,
    },
    /// A tool call and its state.
    Tool {
        /// Call id.
        call_id: String,
        /// Tool name.
        tool: String,
        /// State.
        state: ToolState,
    },
    /// The transcript before this point was compacted into the summary that follows.
    Compaction {
        /// Whether it was automatic (the context crossed the threshold, or overflowed)
        /// rather than asked for (`session/compact`).
        auto: bool,
    },
}

/// One part of a message.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// Part id.
    pub part_id: String,
    /// Session id.
    pub session_id: String,
    /// Message id.
    pub message_id: String,
    /// Content.
    #[serde(flatten)]
    pub body: PartBody,
}

/// A message with its parts.
#[derive(Debug, Clone, Serialize)]
pub struct MessageWithParts {
    /// Info.
    pub info: MessageInfo,
    /// Parts.
    pub parts: Vec<Part>,
}

impl MessageWithParts {
    /// The message id.
    pub fn message_id(&self) -> &str {
        match &self.info {
            MessageInfo::User(u) => &u.message_id,
            MessageInfo::Assistant(a) => &a.message_id,
        }
    }
}

/// Why an assistant message ended: `tool-calls` or `stop`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FinishReason {
    /// It called tools.
    ToolCalls,
    /// It answered.
    Stop,
}
