//! Zero's JSON shapes: `hooks.json`, the payloads its hooks read on stdin, the audit log
//! and the workspace trust store.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A `hooks.json` file as written.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct RawConfig {
    /// Absent means "as the layer below" (enabled at the bottom).
    pub enabled: Option<bool>,
    /// The definitions, validated one by one.
    #[serde(default)]
    pub hooks: Option<Vec<Value>>,
}

/// One hook definition as written.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct RawHook {
    pub id: Option<String>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub event: Option<String>,
    pub matcher: Option<String>,
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    pub enabled: Option<bool>,
}

/// One command of an audit record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct AuditCommand {
    pub command: String,
    pub args: Vec<String>,
}

/// One result of an audit record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AuditResult {
    pub exit_code: i32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stdout: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr: String,
}

/// One line of Zero's `hooks/audit.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AuditEvent {
    pub sequence: u64,
    pub created_at: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub hook_id: String,
    pub event: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub matcher: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_call_id: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<AuditCommand>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<AuditResult>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub duration_ms: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Zero's `trust.json`: `{"trusted": ["/abs/root", …]}`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct TrustStore {
    #[serde(default)]
    pub trusted: Vec<String>,
}

/// The payload of a `beforeTool` hook.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BeforeToolPayload<'a> {
    pub event: &'static str,
    pub tool: &'a str,
    pub tool_call_id: &'a str,
    pub session_id: &'a str,
    pub cwd: &'a str,
    pub args: &'a Value,
}

/// The payload of an `afterTool` hook.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AfterToolPayload<'a> {
    pub event: &'static str,
    pub tool: &'a str,
    pub tool_call_id: &'a str,
    pub session_id: &'a str,
    pub cwd: &'a str,
    /// `ok` or `error`.
    pub status: &'static str,
    pub changed_files: &'a [String],
}

/// The payload of a `sessionStart` hook.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionStartPayload<'a> {
    pub event: &'static str,
    pub session_id: &'a str,
    pub cwd: &'a str,
    pub provider: &'a str,
    pub model: &'a str,
    pub depth: u32,
    pub tag: &'a str,
    pub session_title: &'a str,
}

/// The payload of a `sessionEnd` hook.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionEndPayload<'a> {
    pub event: &'static str,
    pub session_id: &'a str,
    pub cwd: &'a str,
    pub provider: &'a str,
    pub model: &'a str,
    pub turns: u32,
    pub stop_reason: &'a str,
    pub finish_reason: &'a str,
    pub incomplete: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a str>,
}
