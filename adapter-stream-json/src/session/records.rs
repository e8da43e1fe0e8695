//! The typed payloads exec records in a Zero session's `events.jsonl`. The files' own records
//! (`metadata.json`, the lines, `session_fork`) are agent-host's
//! ([`agent_host::session::zero::records`]), re-exported here.
//!
//! Where Zero records the facts of an output line, the payload is that line's type: the
//! `tool_call` record is the `-o json` line's [`crate::wire::json::JsonToolCall`], a
//! permission record is the stream-json [`PermissionEvent`] seen through [`PermissionRecord`]
//! (call id as `toolCallId`, no session id), and blocks are [`WireBlock`]s. The others hold
//! what no line carries, in Zero's recorder's shape: `tool_result` keeps the whole output
//! (the line's is capped at 10 KiB) and no `display`/`meta`, with `truncated` only when true;
//! `session_checkpoint` has each file's blob and prior existence (the `checkpoint` line has
//! only the paths and the record's sequence); `message`, `provider_usage` (cache and
//! reasoning tokens), `specialist_*`, `error` and `session_fork` have no line of their own.

use serde::{Serialize, Serializer};
use serde_json::Value;

pub use agent_host::session::zero::records::{
    Appended, ForkRecord, Metadata, SessionEvent, SessionEventLine,
};

use crate::wire::{PermissionEvent, WireBlock};

// The payloads exec records. Zero's recorder writes them redacted like an output line, with
// keys sorted: the recorder writes every payload through `crate::redact::Redacted`, so the
// field order here is free and no field carries a redaction attribute.

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// `message`: the user's prompt (first) or the assistant's final answer (last).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageRecord<'a> {
    /// The text.
    pub content: &'a str,
    /// `user` or `assistant`.
    pub role: &'a str,
}

/// `tool_call`: the same fields as the `-o json` line (Zero writes one shape for both).
pub type ToolCallRecord<'a> = crate::wire::json::JsonToolCall<'a>;

/// One file of a [`CheckpointRecord`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckpointFile {
    /// Blob holding the before-content (absent when the file did not exist).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// Whether the file existed before the call.
    pub existed: bool,
    /// The path as the call named it.
    pub path: String,
}

/// `session_checkpoint`: the before-state of the files a call changes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointRecord<'a> {
    /// The files.
    pub files: Vec<CheckpointFile>,
    /// Tool name.
    pub tool: &'a str,
    /// Call id.
    pub tool_call_id: &'a str,
}

/// `permission_request` / `permission_decision`: the output line's [`PermissionEvent`] (its
/// fields are declared once, there), with the call id as `toolCallId` and without the session
/// id, as Zero's recorder writes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PermissionRecord<'a>(pub &'a PermissionEvent);

impl Serialize for PermissionRecord<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut value = serde_json::to_value(self.0).map_err(serde::ser::Error::custom)?;
        if let Value::Object(map) = &mut value {
            map.remove("sessionId");
            if let Some(id) = map.remove("id") {
                map.insert("toolCallId".into(), id);
            }
        }
        value.serialize(serializer)
    }
}

impl<'a> From<&'a PermissionEvent> for PermissionRecord<'a> {
    fn from(p: &'a PermissionEvent) -> Self {
        Self(p)
    }
}

/// `tool_result`: the whole output (the output line is capped, this is not).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultRecord<'a> {
    /// What the sandbox refused the call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<&'a WireBlock>,
    /// Files the call changed.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub changed_files: &'a [String],
    /// For a checkpointed call: its files' state after it (this SDK's addition, read by
    /// `sessions rewind` to tell a file someone else changed since).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint_after: Option<Vec<crate::checkpoint::AfterState>>,
    /// Tool name.
    pub name: &'a str,
    /// The output text.
    pub output: &'a str,
    /// Secrets were removed at the tool boundary.
    #[serde(skip_serializing_if = "is_false")]
    pub redacted: bool,
    /// `ok` or `error`.
    pub status: &'a str,
    /// Call id.
    pub tool_call_id: &'a str,
    /// The tool cut its output.
    #[serde(skip_serializing_if = "is_false")]
    pub truncated: bool,
}

/// `provider_usage`: one completion's tokens.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageRecord {
    /// Tokens written to the cache.
    #[serde(skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// Tokens read from the cache.
    #[serde(skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
    /// Output tokens.
    pub completion_tokens: u64,
    /// Input tokens, cache reads and writes included.
    pub prompt_tokens: u64,
    /// Reasoning tokens, when the provider reports them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// Input plus output.
    pub total_tokens: u64,
}

/// `specialist_start` / `specialist_stop` in the parent's session: Zero's account of a
/// specialist (sub-agent) started by a `Task` call, whose own events are in the child
/// session `childSessionId`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SpecialistRecord<'a> {
    /// The child runs in the background.
    pub background: bool,
    /// The child's session id (its task id).
    pub child_session_id: &'a str,
    /// The caller's label for the task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// What ended a failed child (stop only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The child's exit code, as Zero's child process would have it (stop only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// `foreground` or `background`.
    pub mode: &'a str,
    /// Always `specialist`.
    pub source: &'a str,
    /// The specialist's name.
    pub specialist: &'a str,
    /// `success`, `error` or `aborted` (stop only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The child's task id.
    pub task_id: &'a str,
    /// The parent's `Task` call.
    pub tool_call_id: &'a str,
    /// Whether the child's usage was added to the parent's session (stop only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_rolled_up: Option<bool>,
}

/// `provider_usage` with `source: specialist`: a child's tokens, rolled up into the parent's
/// session once the child has finished.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SpecialistUsageRecord<'a> {
    /// The child runs in the background.
    pub background: bool,
    /// The child's session id.
    pub child_session_id: &'a str,
    /// The child's output tokens.
    pub completion_tokens: u64,
    /// `foreground` or `background`.
    pub mode: &'a str,
    /// The child's input tokens, cache reads and writes included.
    pub prompt_tokens: u64,
    /// Always `specialist`.
    pub source: &'a str,
    /// The specialist's name.
    pub specialist: &'a str,
    /// The child's task id.
    pub task_id: &'a str,
    /// The parent's `Task` call.
    pub tool_call_id: &'a str,
    /// Input plus output.
    pub total_tokens: u64,
}

/// `error`: why the run did not succeed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorRecord<'a> {
    /// The message.
    pub message: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::Redacted;
    use crate::wire::WireRisk;
    use serde_json::json;

    /// Every string field of every payload the recorder writes is redacted: a secret in each
    /// one leaves no trace (the recorder writes them through [`Redacted`]).
    #[test]
    fn no_payload_field_escapes_redaction() {
        let s = "sk-abcdefghijklmnopqrstuv0123456789";
        let risk = WireRisk {
            categories: vec![s.into()],
            level: s.into(),
            reason: s.into(),
        };
        let block = WireBlock {
            action: s.into(),
            code: s.into(),
            path: s.into(),
            reason: s.into(),
            recoverable: false,
            risk: risk.clone(),
            tool_name: s.into(),
        };
        let permission = PermissionEvent {
            action: s.into(),
            autonomy: s.into(),
            block: Some(block.clone()),
            decision_reason: s.into(),
            grant: Some(json!({"tool": s, "token": "t0ken-value"})),
            grant_matched: true,
            id: s.into(),
            name: s.into(),
            permission: s.into(),
            permission_granted: true,
            permission_mode: s.into(),
            reason: s.into(),
            risk: risk.clone(),
            session_id: s.into(),
            side_effect: s.into(),
        };
        let files = [s.to_string()];
        let lines = [
            serde_json::to_string(&Redacted(&MessageRecord {
                content: s,
                role: s,
            })),
            serde_json::to_string(&Redacted(&ToolCallRecord {
                arguments: s.into(),
                id: s,
                name: s,
            })),
            serde_json::to_string(&Redacted(&CheckpointRecord {
                files: vec![CheckpointFile {
                    blob: Some(s.into()),
                    existed: true,
                    path: s.into(),
                }],
                tool: s,
                tool_call_id: s,
            })),
            serde_json::to_string(&Redacted(&PermissionRecord::from(&permission))),
            serde_json::to_string(&Redacted(&ToolResultRecord {
                block: Some(&block),
                changed_files: &files,
                checkpoint_after: Some(crate::checkpoint::after_states(
                    std::path::Path::new("/nonexistent"),
                    &files,
                )),
                name: s,
                output: s,
                redacted: true,
                status: s,
                tool_call_id: s,
                truncated: true,
            })),
            serde_json::to_string(&Redacted(&SpecialistRecord {
                background: true,
                child_session_id: s,
                description: Some(s.into()),
                error: Some(s.into()),
                exit_code: Some(1),
                mode: s,
                source: s,
                specialist: s,
                status: Some(s.into()),
                task_id: s,
                tool_call_id: s,
                usage_rolled_up: Some(true),
            })),
            serde_json::to_string(&Redacted(&SpecialistUsageRecord {
                background: false,
                child_session_id: s,
                completion_tokens: 1,
                mode: s,
                prompt_tokens: 2,
                source: s,
                specialist: s,
                task_id: s,
                tool_call_id: s,
                total_tokens: 3,
            })),
            serde_json::to_string(&Redacted(&ErrorRecord { message: s })),
        ];
        for line in lines {
            let line = line.expect("serialise");
            assert!(line.contains("[REDACTED]"), "{line}");
            assert!(!line.contains("abcdefghijklmnop"), "{line}");
            assert!(!line.contains("t0ken-value"), "{line}");
        }
    }

    /// A permission record is the event's fields, the call id as `toolCallId`, no session id,
    /// empty strings left out (the bytes Zero's recorder writes).
    #[test]
    fn a_permission_record_is_the_event_without_its_session() {
        let risk = WireRisk {
            categories: vec!["x".into()],
            level: "x".into(),
            reason: "x".into(),
        };
        let full = PermissionEvent {
            action: "x".into(),
            autonomy: "x".into(),
            block: Some(WireBlock {
                action: "x".into(),
                code: "x".into(),
                path: "x".into(),
                reason: "x".into(),
                recoverable: false,
                risk: risk.clone(),
                tool_name: "x".into(),
            }),
            decision_reason: "x".into(),
            grant: Some(json!({"tool": "x"})),
            grant_matched: true,
            id: "c1".into(),
            name: "x".into(),
            permission: "x".into(),
            permission_granted: true,
            permission_mode: "x".into(),
            reason: "x".into(),
            risk,
            session_id: "s1".into(),
            side_effect: "x".into(),
        };
        let risk = r#"{"categories":["x"],"level":"x","reason":"x"}"#;
        assert_eq!(
            serde_json::to_string(&Redacted(&PermissionRecord::from(&full))).expect("json"),
            format!(
                concat!(
                    r#"{{"action":"x","autonomy":"x","block":{{"action":"x","code":"x","#,
                    r#""path":"x","reason":"x","recoverable":false,"risk":{risk},"#,
                    r#""toolName":"x"}},"decisionReason":"x","grant":{{"tool":"x"}},"#,
                    r#""grantMatched":true,"name":"x","permission":"x","#,
                    r#""permissionGranted":true,"permissionMode":"x","reason":"x","#,
                    r#""risk":{risk},"sideEffect":"x","toolCallId":"c1"}}"#
                ),
                risk = risk
            )
        );
        let empty = PermissionEvent::default();
        assert_eq!(
            serde_json::to_string(&Redacted(&PermissionRecord::from(&empty))).expect("json"),
            r#"{"permissionGranted":false,"risk":{}}"#
        );
    }
}
