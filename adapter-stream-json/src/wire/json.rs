//! The `-o json` lines: Zero's snake_case NDJSON without a schema version, ending in
//! `{"type":"done","exit_code":N}`.
//!
//! Zero writes these from plain Go maps, so every listed key is present (empty strings
//! included) and keys come out sorted. Like stream-json's, the lines are written through
//! [`crate::redact::Redacted`], which redacts them and sorts their keys.
//!
//! Each line is a view of a stream-json event: it borrows the event's data and is built in
//! one place, [`JsonLine::from_event`]. The views stay structs of their own because Zero's
//! `-o json` writer differs in content, not only in casing: every listed key is present
//! (stream-json leaves empty ones out), the call id is `tool_call_id`, `run_start` carries
//! `permission_mode` and no session id, `tool_call` has its arguments as text and no side
//! effect, `permission` has no grant or session id, `tool_result` no `display` or
//! `truncated`, `error` no `recoverable`, and `done` replaces `run_end`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Serialize;

use super::{EventBody, WireBlock, WireRisk};

/// One `-o json` line, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum JsonLine<'a> {
    /// The run started.
    RunStart(JsonRunStart<'a>),
    /// A reasoning chunk.
    Reasoning(JsonDelta<'a>),
    /// An answer chunk.
    Text(JsonDelta<'a>),
    /// The model proposed a tool call.
    ToolCall(JsonToolCall<'a>),
    /// Files were snapshotted before a call.
    Checkpoint(JsonCheckpoint<'a>),
    /// Any permission event (request or decision).
    Permission(Box<JsonPermission<'a>>),
    /// A tool call finished.
    ToolResult(JsonToolResult<'a>),
    /// Token usage of one completion.
    Usage(JsonUsage),
    /// The final answer.
    Final(JsonFinal<'a>),
    /// A notice.
    Warning(JsonMessage<'a>),
    /// A fatal error.
    Error(JsonError<'a>),
    /// The last line.
    Done(JsonDone),
    /// `--list-tools`: the tools the model can see.
    Tools(JsonTools),
}

impl<'a> JsonLine<'a> {
    /// The wire `type` string.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::RunStart(_) => "run_start",
            Self::Reasoning(_) => "reasoning",
            Self::Text(_) => "text",
            Self::ToolCall(_) => "tool_call",
            Self::Checkpoint(_) => "checkpoint",
            Self::Permission(_) => "permission",
            Self::ToolResult(_) => "tool_result",
            Self::Usage(_) => "usage",
            Self::Final(_) => "final",
            Self::Warning(_) => "warning",
            Self::Error(_) => "error",
            Self::Done(_) => "done",
            Self::Tools(_) => "tools",
        }
    }

    /// The `-o json` line of a stream-json event; `permission_mode` goes on `run_start`.
    pub fn from_event(body: &'a EventBody, permission_mode: &'a str) -> Self {
        match body {
            EventBody::RunStart(e) => Self::RunStart(JsonRunStart {
                api_model: &e.api_model,
                cwd: &e.cwd,
                model: &e.model,
                permission_mode,
                provider: &e.provider,
            }),
            EventBody::Reasoning(d) => Self::Reasoning(JsonDelta { delta: &d.delta }),
            EventBody::Text(d) => Self::Text(JsonDelta { delta: &d.delta }),
            EventBody::ToolCall(c) => Self::ToolCall(JsonToolCall {
                arguments: match &c.args {
                    Some(serde_json::Value::String(raw)) => Cow::Borrowed(raw.as_str()),
                    Some(args) => Cow::Owned(args.to_string()),
                    None => Cow::Borrowed(""),
                },
                id: &c.id,
                name: &c.name,
            }),
            EventBody::Checkpoint(c) => Self::Checkpoint(JsonCheckpoint {
                files: &c.checkpoint.files,
                sequence: c.checkpoint.sequence,
                tool: &c.checkpoint.tool,
            }),
            EventBody::PermissionRequest(p)
            | EventBody::PermissionDecision(p)
            | EventBody::Permission(p) => Self::Permission(Box::new(JsonPermission {
                action: &p.action,
                autonomy: &p.autonomy,
                block: p.block.as_ref(),
                decision_reason: &p.decision_reason,
                name: &p.name,
                permission: &p.permission,
                permission_granted: p.permission_granted,
                permission_mode: &p.permission_mode,
                reason: &p.reason,
                risk: &p.risk,
                side_effect: &p.side_effect,
                tool_call_id: &p.id,
            })),
            EventBody::ToolResult(r) => Self::ToolResult(JsonToolResult {
                block: r.block.as_deref(),
                changed_files: &r.changed_files,
                meta: &r.meta,
                name: &r.name,
                output: &r.output,
                redacted: r.redacted == Some(true),
                status: &r.status,
                tool_call_id: &r.id,
            }),
            EventBody::Usage(u) => Self::Usage(JsonUsage {
                completion_tokens: u.completion_tokens,
                prompt_tokens: u.prompt_tokens,
                total_tokens: u.total_tokens,
            }),
            EventBody::Final(f) => Self::Final(JsonFinal { text: &f.text }),
            EventBody::Warning(w) => Self::Warning(JsonMessage {
                message: &w.message,
            }),
            EventBody::Error(e) => Self::Error(JsonError {
                code: &e.code,
                message: &e.message,
            }),
            EventBody::RunEnd(r) => Self::Done(JsonDone {
                exit_code: r.exit_code,
            }),
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// `run_start`: every key present.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonRunStart<'a> {
    /// API model id.
    pub api_model: &'a str,
    /// Workspace root.
    pub cwd: &'a str,
    /// Logical model.
    pub model: &'a str,
    /// Zero's permission mode name.
    pub permission_mode: &'a str,
    /// Provider kind.
    pub provider: &'a str,
}

/// `text` / `reasoning`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonDelta<'a> {
    /// The chunk.
    pub delta: &'a str,
}

/// `tool_call`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonToolCall<'a> {
    /// The arguments as text.
    pub arguments: Cow<'a, str>,
    /// Call id.
    pub id: &'a str,
    /// Tool name.
    pub name: &'a str,
}

/// `checkpoint`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonCheckpoint<'a> {
    /// Files snapshotted.
    pub files: &'a [String],
    /// Session event sequence.
    pub sequence: u64,
    /// Tool that changes them.
    pub tool: &'a str,
}

/// `permission`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonPermission<'a> {
    /// `prompt`, `allow`, `deny` or `cancel`.
    pub action: &'a str,
    /// The `--auto` level.
    pub autonomy: &'a str,
    /// Sandbox metadata, when there is some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<&'a WireBlock>,
    /// Why a decision was made.
    pub decision_reason: &'a str,
    /// Tool name.
    pub name: &'a str,
    /// The tool's static permission.
    pub permission: &'a str,
    /// Whether the call was granted.
    pub permission_granted: bool,
    /// Zero's permission mode name.
    pub permission_mode: &'a str,
    /// Why the gate came out as it did.
    pub reason: &'a str,
    /// Risk classification.
    pub risk: &'a WireRisk,
    /// The tool's raw side effect.
    pub side_effect: &'a str,
    /// Call id.
    pub tool_call_id: &'a str,
}

/// `tool_result`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonToolResult<'a> {
    /// What the sandbox refused the call, when it refused something.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<&'a WireBlock>,
    /// Files the call changed (omitted when none).
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub changed_files: &'a [String],
    /// String metadata (omitted when empty).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub meta: &'a BTreeMap<String, String>,
    /// Tool name.
    pub name: &'a str,
    /// Output text.
    pub output: &'a str,
    /// A secret was removed at the tool boundary (only `true` is written).
    #[serde(skip_serializing_if = "is_false")]
    pub redacted: bool,
    /// `ok` or `error`.
    pub status: &'a str,
    /// Call id.
    pub tool_call_id: &'a str,
}

/// `usage`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonUsage {
    /// Output tokens.
    pub completion_tokens: u64,
    /// Input tokens.
    pub prompt_tokens: u64,
    /// Their sum.
    pub total_tokens: u64,
}

/// `final`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonFinal<'a> {
    /// The final answer.
    pub text: &'a str,
}

/// `warning`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonMessage<'a> {
    /// The notice.
    pub message: &'a str,
}

/// `error`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonError<'a> {
    /// Zero's error code.
    pub code: &'a str,
    /// The message.
    pub message: &'a str,
}

/// `done`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonDone {
    /// The process exit code.
    pub exit_code: i32,
}

/// `tools` (`--list-tools -o json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonTools {
    /// The tools, sorted by name.
    pub tools: Vec<JsonToolInfo>,
}

/// One tool of [`JsonTools`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonToolInfo {
    /// What the tool does.
    pub description: String,
    /// Its name.
    pub name: String,
    /// `allow`, `prompt` or `deny`.
    pub permission: String,
    /// Its side effect.
    pub side_effect: String,
}
