//! The session recorder: an observer of a run's events, in Zero's order (the same events the
//! mapping turns into output lines), that appends what Zero's exec records to the session
//! and stores file checkpoints. Recording is best effort: the first failure is kept for one
//! warning on stderr, and the run goes on.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use agent_core::{AgentEvent, PermissionAction};
use serde::Serialize;

use crate::checkpoint::{changed_paths, FileSnapshot, Snapshots};
use agent_host::text::text_of;

use crate::mapping::{permission_event, status_name, MapperConfig, Outcome};
use crate::session::records::{
    CheckpointFile, CheckpointRecord, ErrorRecord, MessageRecord, PermissionRecord, ToolCallRecord,
    ToolResultRecord, UsageRecord,
};
use crate::session::{SessionError, SessionStore};
use crate::wire::CheckpointInfo;

/// What the recorder needs to know about the run.
#[derive(Debug, Clone, Default)]
pub struct RecorderConfig {
    /// The permission fields recorded with permission events (mode, autonomy).
    pub mapping: MapperConfig,
    /// Workspace root (checkpoint paths resolve against it).
    pub cwd: PathBuf,
    /// Whether checkpoints are taken (`ZERO_CHECKPOINTS` ≠ `off`).
    pub checkpoints: bool,
    /// Snapshots shared with the [`crate::checkpoint::CheckpointTool`]-wrapped tools.
    pub snapshots: Arc<Snapshots>,
}

/// Records exec events to a session (see the module docs).
#[derive(Debug)]
pub struct SessionRecorder {
    store: SessionStore,
    id: String,
    config: RecorderConfig,
    failure: Option<String>,
}

impl SessionRecorder {
    /// A recorder for session `id` of `store`.
    pub fn new(store: SessionStore, id: impl Into<String>, config: RecorderConfig) -> Self {
        Self {
            store,
            id: id.into(),
            config,
            failure: None,
        }
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The first recording failure, if any.
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    fn note(&mut self, err: SessionError) {
        if self.failure.is_none() {
            self.failure = Some(err.to_string());
        }
    }

    /// Appends one event; returns its sequence.
    fn append<P: Serialize>(&mut self, kind: &str, payload: &P) -> Option<u64> {
        match self.store.append(&self.id, kind, Some(payload)) {
            Ok(event) => Some(event.sequence),
            Err(err) => {
                self.note(err);
                None
            }
        }
    }

    /// Records the user's prompt as given (without the resumed context), first.
    pub fn user_message(&mut self, prompt: &str) {
        self.append(
            "message",
            &MessageRecord {
                content: prompt,
                role: "user",
            },
        );
    }

    /// Records one event. A file-changing call gets a checkpoint of its files, whose
    /// `checkpoint` line (right after the call's `tool_call`) is returned.
    pub fn observe(&mut self, event: &AgentEvent) -> Option<CheckpointInfo> {
        match event {
            AgentEvent::Usage { turn, .. } => {
                let prompt = turn.prompt_tokens();
                self.append(
                    "provider_usage",
                    &UsageRecord {
                        cache_write_tokens: turn.cache_write,
                        cached_input_tokens: turn.cache_read,
                        completion_tokens: turn.output,
                        prompt_tokens: prompt,
                        reasoning_tokens: turn.reasoning,
                        total_tokens: prompt + turn.output,
                    },
                );
            }
            AgentEvent::ToolCall {
                id,
                name,
                args,
                raw_args,
                side_effect,
            } => {
                let arguments = match raw_args {
                    Some(raw) => Cow::Borrowed(raw.as_str()),
                    None => Cow::Owned(args.to_string()),
                };
                self.append(
                    "tool_call",
                    &ToolCallRecord {
                        arguments,
                        id,
                        name,
                    },
                );
                let files = changed_paths(*side_effect, args);
                if self.config.checkpoints && !files.is_empty() {
                    return self.checkpoint(id, name, files);
                }
            }
            AgentEvent::PermissionRequested(info) => {
                let event =
                    permission_event(&self.config.mapping, info, PermissionAction::Prompt, false);
                self.append("permission_request", &PermissionRecord::from(&event));
            }
            AgentEvent::PermissionDecided {
                info,
                action,
                granted,
                ..
            } => {
                let event = permission_event(&self.config.mapping, info, *action, *granted);
                let kind = match action {
                    PermissionAction::Prompt => "permission_request",
                    _ => "permission_decision",
                };
                self.append(kind, &PermissionRecord::from(&event));
            }
            AgentEvent::ToolResult {
                id,
                name,
                status,
                content,
                truncated,
                redacted,
                changed_files,
                ..
            } => {
                self.append(
                    "tool_result",
                    &ToolResultRecord {
                        changed_files,
                        name,
                        output: &text_of(content),
                        redacted: *redacted,
                        status: status_name(*status),
                        tool_call_id: id,
                        truncated: *truncated,
                    },
                );
            }
            // Not recorded by Zero's exec: the answer is recorded once, at the end.
            AgentEvent::RunStarted { .. }
            | AgentEvent::UserMessage { .. }
            | AgentEvent::TurnStarted { .. }
            | AgentEvent::RequestStarted { .. }
            | AgentEvent::RetryScheduled { .. }
            | AgentEvent::AssistantStarted
            | AgentEvent::TextDelta { .. }
            | AgentEvent::ReasoningDelta { .. }
            | AgentEvent::ToolUseStarted { .. }
            | AgentEvent::ToolUseArgsDelta { .. }
            | AgentEvent::ToolUseEnded { .. }
            | AgentEvent::AssistantMessage { .. }
            | AgentEvent::TurnEnded { .. }
            | AgentEvent::TurnRecovery { .. }
            | AgentEvent::ToolExecutionStarted { .. }
            | AgentEvent::ToolProgress { .. }
            | AgentEvent::PlanUpdated { .. }
            | AgentEvent::CompactionFinished { .. }
            | AgentEvent::Error { .. }
            | AgentEvent::RunFinished { .. } => {}
            // `AgentEvent` is `#[non_exhaustive]`: variants added later are not recorded.
            _added_later => {}
        }
        None
    }

    /// Records how the run ended: the answer, or why there is none.
    pub fn finish(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Success { text, .. } => {
                self.append(
                    "message",
                    &MessageRecord {
                        content: text,
                        role: "assistant",
                    },
                );
            }
            Outcome::Incomplete { message, .. } => {
                let message = format!("incomplete: {message}");
                self.append("error", &ErrorRecord { message: &message });
            }
            Outcome::Failed { message } => {
                self.append("error", &ErrorRecord { message });
            }
            Outcome::Interrupted => {
                self.append(
                    "error",
                    &ErrorRecord {
                        message: "interrupted",
                    },
                );
            }
        }
    }

    /// Stores the before-state of the files a call changes; returns the checkpoint line.
    fn checkpoint(
        &mut self,
        call_id: &str,
        tool: &str,
        files: Vec<String>,
    ) -> Option<CheckpointInfo> {
        let snapshots = self
            .config
            .snapshots
            .take(call_id, &self.config.cwd, &files);
        let record = CheckpointRecord {
            files: self.store_blobs(call_id, snapshots),
            tool,
            tool_call_id: call_id,
        };
        let sequence = self.append("session_checkpoint", &record)?;
        Some(CheckpointInfo {
            files,
            sequence,
            tool: tool.to_string(),
        })
    }

    /// Writes the snapshots' contents as blobs `cp-<call id>-<index>`.
    fn store_blobs(&mut self, call_id: &str, snapshots: Vec<FileSnapshot>) -> Vec<CheckpointFile> {
        let safe_id: String = call_id
            .chars()
            .map(
                |c| match c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    true => c,
                    false => '_',
                },
            )
            .collect();
        let mut entries = Vec::with_capacity(snapshots.len());
        for (index, file) in snapshots.into_iter().enumerate() {
            let mut entry = CheckpointFile {
                blob: None,
                existed: file.content.is_some(),
                path: file.path,
            };
            if let Some(data) = &file.content {
                let blob = format!("cp-{safe_id}-{index}");
                match self.store.write_blob(&self.id, &blob, data) {
                    Ok(()) => entry.blob = Some(blob),
                    Err(err) => self.note(err),
                }
            }
            entries.push(entry);
        }
        entries
    }
}
