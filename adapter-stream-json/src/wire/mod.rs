//! The Zero stream-json v2 wire types: output events and input events.
//!
//! Every output line is an [`OutputEvent`]: the envelope (`schemaVersion`, `runId`) plus one
//! [`EventBody`] variant, tagged by `type`. Field names are Zero's (camelCase). Zero's Go
//! encoder uses `omitempty` on every field, so empty strings, empty lists, zero numbers and
//! `false` plain booleans are left out; the fields Zero keeps as pointers (for example
//! `permissionGranted`, `truncated`, `recoverable`, `exitCode` and the token counts) are always
//! written.
//!
//! Zero round-trips each event through a map, so its keys come out sorted, and redacts every
//! line: both are done in one place, [`crate::redact::Redacted`], through which every line is
//! written (no field carries a redaction attribute). The field order here is free for
//! correctness, but fields are declared in byte order: a line then reaches the writer with
//! its keys in order, and the writer has nothing to sort (see `wire/line.rs`).
//! [`json`] holds the `-o json` lines, views of these events; the session records that carry
//! an event's facts are these types too (see [`crate::session::records`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

pub mod json;
mod line;

pub(crate) use line::Line;

use crate::redact::Redacted;

/// The protocol's schema version.
pub const SCHEMA_VERSION: u32 = 2;

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One output line: the envelope plus the event.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct OutputEvent {
    /// Always [`SCHEMA_VERSION`].
    #[serde(rename = "schemaVersion")]
    pub schema_version: u32,
    /// The run this line belongs to (`run_<UTC yyyyMMddHHmmss>_<6 hex>`).
    #[serde(rename = "runId")]
    pub run_id: String,
    /// The event.
    #[serde(flatten)]
    pub body: EventBody,
}

impl OutputEvent {
    /// Wraps `body` for run `run_id`.
    pub fn new(run_id: impl Into<String>, body: EventBody) -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            run_id: run_id.into(),
            body,
        }
    }
}

impl Serialize for OutputEvent {
    /// The line as Zero writes it: keys sorted, every string redacted (the run id too).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Redacted(&Line {
            run_id: &self.run_id,
            schema_version: self.schema_version,
            body: &self.body,
        })
        .serialize(serializer)
    }
}

/// The output events, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventBody {
    /// First line of every run that reached the agent.
    RunStart(RunStart),
    /// A live reasoning/status chunk; never part of the answer.
    Reasoning(Delta),
    /// A streamed chunk of answer text.
    Text(Delta),
    /// The model proposed a tool call.
    ToolCall(ToolCallEvent),
    /// The files a call is about to change were snapshotted into the session.
    Checkpoint(CheckpointEvent),
    /// The runtime's permission action for a call is `prompt`. (The permission variants are
    /// boxed: they are rare and large, and unboxed they made every event, text deltas
    /// included, 560 bytes to move.)
    PermissionRequest(Box<PermissionEvent>),
    /// A call was allowed, denied or cancelled.
    PermissionDecision(Box<PermissionEvent>),
    /// A permission event with an action outside {prompt, allow, deny, cancel}; defined by
    /// Zero for forward compatibility, never emitted here.
    Permission(Box<PermissionEvent>),
    /// A tool call finished, was refused, or was not run.
    ToolResult(ToolResultEvent),
    /// Token usage of one provider completion.
    Usage(UsageEvent),
    /// The final answer of a successful (or incomplete) run.
    Final(FinalEvent),
    /// A non-fatal notice.
    Warning(WarningEvent),
    /// A fatal error; `run_end` follows directly.
    Error(ErrorEvent),
    /// Last line of every run, exactly once.
    RunEnd(RunEnd),
}

impl EventBody {
    /// The wire `type` string.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::RunStart(_) => "run_start",
            Self::Reasoning(_) => "reasoning",
            Self::Text(_) => "text",
            Self::ToolCall(_) => "tool_call",
            Self::Checkpoint(_) => "checkpoint",
            Self::PermissionRequest(_) => "permission_request",
            Self::PermissionDecision(_) => "permission_decision",
            Self::Permission(_) => "permission",
            Self::ToolResult(_) => "tool_result",
            Self::Usage(_) => "usage",
            Self::Final(_) => "final",
            Self::Warning(_) => "warning",
            Self::Error(_) => "error",
            Self::RunEnd(_) => "run_end",
        }
    }
}

/// `run_start` fields.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunStart {
    /// API model id.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_model: String,
    /// Absolute workspace root.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cwd: String,
    /// Logical model.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model: String,
    /// Resolved provider kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub provider: String,
    /// Session the run records to (absent on the `--list-tools` path).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub session_id: String,
}

/// `text` / `reasoning` fields.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Delta {
    /// The chunk (omitted when empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub delta: String,
}

/// `tool_call` fields.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallEvent {
    /// Parsed arguments; the raw string when they were not valid JSON; omitted when blank or
    /// `null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// The provider's call id.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// Tool name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// `read`, `write`, `shell`, `network`, `none` or `unknown`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub side_effect: String,
}

/// The `checkpoint` object.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CheckpointInfo {
    /// Files snapshotted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// Session event sequence of the checkpoint record.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sequence: u64,
    /// Tool that will change the files.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool: String,
}

/// `checkpoint` fields.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CheckpointEvent {
    /// The checkpoint.
    pub checkpoint: CheckpointInfo,
}

/// The `risk` object.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct WireRisk {
    /// Sorted, de-duplicated categories.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
    /// `low`, `medium`, `high` or `critical`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub level: String,
    /// `"<level> risk: <cat>, <cat>"`, or the level alone.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// The `block` object (v1 called it `violation`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireBlock {
    /// `allow`, `prompt` or `deny`.
    pub action: String,
    /// Machine-readable block code.
    pub code: String,
    /// Offending path.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// Human-readable reason.
    pub reason: String,
    /// Whether the model can recover.
    pub recoverable: bool,
    /// Risk of the call.
    pub risk: WireRisk,
    /// Tool the call was for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_name: String,
}

/// Fields shared by `permission_request`, `permission_decision` and `permission`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionEvent {
    /// `prompt`, `allow`, `deny` or `cancel`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub action: String,
    /// The `--auto` level (default `low`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub autonomy: String,
    /// Sandbox metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<WireBlock>,
    /// Why a decision was made (denials).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub decision_reason: String,
    /// The grant that matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<Value>,
    /// A standing grant matched (only `true` is written).
    #[serde(default, skip_serializing_if = "is_false")]
    pub grant_matched: bool,
    /// Tool call id.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// Tool name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The tool's static permission: `allow`, `prompt` or `deny`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub permission: String,
    /// Whether the call was pre-approved or allowed (always present).
    pub permission_granted: bool,
    /// `auto`, `ask`, `unsafe`, `plan`, `spec-draft` or `member-auto`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub permission_mode: String,
    /// Why the gate came out as it did.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Risk classification (always present).
    pub risk: WireRisk,
    /// Session id.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub session_id: String,
    /// The tool's raw side effect.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub side_effect: String,
}

/// The `display` object of a tool result.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Display {
    /// Kind of display.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// One-line summary.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub summary: String,
}

/// `tool_result` fields.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultEvent {
    /// What the sandbox refused the call (v2's `block`; Zero's v1 called it `violation`).
    /// Boxed: rare, and large enough to grow every event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<Box<WireBlock>>,
    /// Files the call changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed_files: Vec<String>,
    /// Human display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<Display>,
    /// Tool call id.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// String metadata.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub meta: BTreeMap<String, String>,
    /// Tool name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Output text, capped at 10240 bytes (omitted when empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output: String,
    /// A secret was removed from the output at the tool boundary (only `true` is written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<bool>,
    /// `ok` or `error`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// The output was cut (always present).
    pub truncated: bool,
}

/// `usage` fields (all three always present).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageEvent {
    /// Output tokens.
    pub completion_tokens: u64,
    /// Input tokens, cache reads and writes included.
    pub prompt_tokens: u64,
    /// Their sum.
    pub total_tokens: u64,
}

/// `final` fields.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FinalEvent {
    /// Extra metadata (spec drafts only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
    /// The final answer (omitted when empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
}

/// `warning` fields.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct WarningEvent {
    /// The notice.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// `error` fields.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ErrorEvent {
    /// `usage_error`, `provider_error`, `interrupted`, `incomplete`, …
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub code: String,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Always present; always `false` in exec.
    pub recoverable: bool,
}

/// `run_end` fields.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunEnd {
    /// The process exit code (always present).
    pub exit_code: i32,
    /// `success`, `error`, `interrupted` or `incomplete`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
}

/// One input line (`prompt` or `message`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputEvent {
    /// Must be 2 (a missing field counts as 0).
    #[serde(default)]
    pub schema_version: i64,
    /// `prompt` or `message`.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// `user` for messages.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub role: String,
    /// The text.
    #[serde(default)]
    pub content: String,
    /// Attached images (messages only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<InputImage>,
}

/// An image attached to a `message` input event.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputImage {
    /// MIME type, e.g. `image/png` (short forms such as `png` and `jpg` are accepted).
    #[serde(default)]
    pub media_type: String,
    /// Standard base64 with padding, no `data:` prefix.
    #[serde(default)]
    pub data: String,
}
