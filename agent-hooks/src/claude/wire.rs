//! Claude Code's JSON shapes: the `hooks` section of a settings file, the payload a hook
//! reads on stdin, and the JSON a hook may print.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A settings file; only `hooks` matters here.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Settings {
    #[serde(default)]
    pub hooks: BTreeMap<String, Vec<MatcherGroup>>,
}

/// One `{matcher, hooks}` entry of an event.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct MatcherGroup {
    #[serde(default)]
    pub matcher: Option<String>,
    #[serde(default)]
    pub hooks: Vec<HookDef>,
}

/// One hook of a matcher group.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct HookDef {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub command: Option<String>,
    /// Seconds.
    #[serde(default)]
    pub timeout: Option<f64>,
}

/// What a tool returned, as a `PostToolUse` hook reads it in `tool_response`.
#[derive(Debug, Serialize)]
pub(crate) struct ToolResponse<'a> {
    /// The result's text.
    pub output: String,
    /// False for an error result.
    pub success: bool,
    /// Files the call changed.
    pub changed_files: &'a [String],
}

/// The JSON a hook reads on stdin; fields not meaningful for an event are left out.
#[derive(Debug, Serialize)]
pub(crate) struct Payload<'a> {
    pub session_id: &'a str,
    pub transcript_path: String,
    pub cwd: String,
    pub permission_mode: &'static str,
    pub hook_event_name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_input: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_response: Option<ToolResponse<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_hook_active: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_assistant_message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom_instructions: Option<&'static str>,
}

/// The JSON a hook may print on stdout (exit 0).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Output {
    /// `false` stops the agent after the hook.
    #[serde(rename = "continue")]
    pub continue_: Option<bool>,
    /// Shown to the user when `continue` is false.
    pub stop_reason: Option<String>,
    /// `block` (or, for `PreToolUse`, the older `approve`).
    pub decision: Option<String>,
    /// Why, with `decision`.
    pub reason: Option<String>,
    /// Per-event fields.
    pub hook_specific_output: Option<SpecificOutput>,
}

/// `hookSpecificOutput`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SpecificOutput {
    /// `allow`, `deny` or `ask` (`PreToolUse`).
    pub permission_decision: Option<String>,
    /// Why (`PreToolUse`).
    pub permission_decision_reason: Option<String>,
    /// Replacement tool input (`PreToolUse`).
    pub updated_input: Option<Value>,
    /// Context for the model (`UserPromptSubmit`, `SessionStart`, `PostToolUse`).
    pub additional_context: Option<String>,
}
