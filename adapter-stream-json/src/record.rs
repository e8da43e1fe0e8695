//! The session recorder: an observer of a run's events, in Zero's order (the same events the
//! mapping turns into output lines), that appends what Zero's exec records to the session
//! and stores file checkpoints. Recording is best effort: the first failure is kept for one
//! warning on stderr, and the run goes on.
//!
//! A sub-agent (a specialist run by a `Task` call) gets a child session of its own, where
//! Zero keeps a specialist's: `<sessions>/<task id>/` with kind `child`, the parent and root
//! session, tag `specialist`, its depth, the specialist's name and the `Task` call it was
//! spawned from. Its events (unwrapped from the parent's stream, put in Zero's order) are
//! recorded there as its own exec would record them; the parent's session gets Zero's
//! `specialist_start` and `specialist_stop` around it, and the child's tokens as a
//! `provider_usage` with `source: specialist`.
//!
//! What the recorder needs to know about calls and sub-agents it reads from the turn's
//! [`TurnState`] (the one the mapping reads, already including the event): a call's
//! sandbox block, a child's name, call and mode, and a child's outcome from its own run in
//! the sub-agent tree.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use agent_core::{permission::PermissionAction, AgentEvent, RunStatus, Usage};
use agent_host::text::text_of;
use agent_host::turn::{Coverage, Mapping, SubagentNode, TurnOutcome, TurnState};
use serde::Serialize;

use crate::checkpoint::{changed_paths, FileSnapshot, Snapshots};
use crate::mapping::{exit, permission_event, status_name, wire_block, EndRecord, MappingConfig};
use crate::order::ZeroOrder;
use crate::redact::Redacted;
use crate::session::records::{
    CheckpointFile, CheckpointRecord, ErrorRecord, MessageRecord, PermissionRecord,
    SpecialistRecord, SpecialistUsageRecord, ToolCallRecord, ToolResultRecord, UsageRecord,
};
use crate::session::{CreateInput, SessionError, ZeroSessions};
use crate::wire::CheckpointInfo;

/// Zero's tag of a specialist's child session.
pub const SPECIALIST_TAG: &str = "specialist";

/// What the recorder needs to know about the run.
#[derive(Debug, Clone, Default)]
pub struct RecorderConfig {
    /// The permission fields recorded with permission events (mode, autonomy).
    pub mapping: MappingConfig,
    /// Workspace root (checkpoint paths resolve against it).
    pub cwd: PathBuf,
    /// Whether checkpoints are taken (`ZERO_CHECKPOINTS` ≠ `off`).
    pub checkpoints: bool,
    /// Snapshots shared with the [`crate::checkpoint::CheckpointTool`]-wrapped tools.
    pub snapshots: Arc<Snapshots>,
    /// The provider kind, written on child sessions.
    pub provider: String,
    /// The root of this session's lineage (empty: this session is the root).
    pub root_session_id: String,
    /// How deep this session is (0 for a top-level run).
    pub depth: u64,
}

/// Records exec events to a session (see the module docs).
#[derive(Debug)]
pub struct SessionRecorder {
    store: ZeroSessions,
    id: String,
    config: RecorderConfig,
    failure: Option<String>,
    /// The child sessions of running sub-agents, by task id.
    children: HashMap<String, Child>,
    /// The files of each checkpointed call not yet ended, by call id: their state after the
    /// call goes on its `tool_result` (`checkpointAfter`), for rewinds.
    checkpointed: HashMap<String, Vec<String>>,
}

/// A sub-agent's child session: its events in Zero's order and its recorder. What it was
/// started for and how it ended are in the parent's [`TurnState`] (the sub-agent tree).
#[derive(Debug)]
struct Child {
    order: ZeroOrder,
    recorder: SessionRecorder,
    /// The child's first user message was recorded.
    prompted: bool,
    /// The child's `RunFinished` was recorded.
    finished: bool,
}

/// Zero's name of a sub-agent's mode.
fn mode(node: &SubagentNode) -> &'static str {
    match node.background {
        true => "background",
        false => "foreground",
    }
}

impl Child {
    /// Records one of the child's own events; `run` is the child's run in the sub-agent
    /// tree, already including it.
    fn observe(&mut self, run: &TurnState, event: &AgentEvent) {
        if let AgentEvent::UserMessage { message } = event {
            if !self.prompted {
                self.prompted = true;
                self.recorder.user_message(&message.text());
            }
        }
        let mut released = Vec::new();
        let due = self.order.admit(event, &mut released);
        for event in &released {
            self.record(run, event);
        }
        if due {
            self.record(run, event);
        }
    }

    fn record(&mut self, run: &TurnState, event: &AgentEvent) {
        self.recorder.map(run, event, |_| {});
        if matches!(event, AgentEvent::RunFinished { .. }) && !self.finished {
            self.finished = true;
            self.recorder.finish(&run.outcome(), None);
        }
    }

    /// The child's run is over: records its end if its stream did not (interrupted).
    fn end(&mut self, run: &TurnState) {
        let mut held = Vec::new();
        self.order.finish(&mut held);
        for event in &held {
            self.record(run, event);
        }
        if !self.finished {
            self.finished = true;
            self.recorder.finish(&TurnOutcome::default(), None);
        }
    }
}

impl SessionRecorder {
    /// A recorder for session `id` of `store`.
    pub fn new(store: ZeroSessions, id: impl Into<String>, config: RecorderConfig) -> Self {
        Self {
            store,
            id: id.into(),
            config,
            failure: None,
            children: HashMap::new(),
            checkpointed: HashMap::new(),
        }
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The first recording failure, if any (a child session's included).
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    fn note_child(&mut self, child: &Child) {
        if self.failure.is_none() {
            self.failure = child.recorder.failure.clone();
        }
    }

    fn note(&mut self, err: SessionError) {
        if self.failure.is_none() {
            self.failure = Some(err.to_string());
        }
    }

    /// Appends one event, its payload redacted and its keys sorted ([`Redacted`], as every
    /// output line); returns its sequence.
    fn append<P: Serialize>(&mut self, kind: &str, payload: &P) -> Option<u64> {
        match self.store.append(&self.id, kind, Some(Redacted(payload))) {
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
}

/// The recorder is the session's view of a turn: its "frames" are the `checkpoint` lines
/// of file-changing calls, and every variant is recorded or declared not recorded, as the
/// coverage harness checks.
impl Mapping for SessionRecorder {
    type Frame<'e> = CheckpointInfo;

    /// Records one event, read with the turn's `state` (which already includes it). A
    /// file-changing call gets a checkpoint of its files, whose `checkpoint` line (right
    /// after the call's `tool_call`) is handed to `out`.
    fn map<'e>(
        &mut self,
        state: &TurnState,
        event: &'e AgentEvent,
        mut out: impl FnMut(Self::Frame<'e>),
    ) -> Coverage {
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
                    self.checkpointed.insert(id.clone(), files.clone());
                    if let Some(checkpoint) = self.checkpoint(id, name, files) {
                        out(checkpoint);
                    }
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
                let block = state.call(id).and_then(|call| call.block.as_ref());
                let block = block.map(wire_block);
                let checkpoint_after = self.checkpointed.remove(id).map(|files| {
                    crate::checkpoint::after_states(&self.config.cwd, &files)
                });
                self.append(
                    "tool_result",
                    &ToolResultRecord {
                        block: block.as_ref(),
                        changed_files,
                        checkpoint_after,
                        name,
                        output: &text_of(content),
                        redacted: *redacted,
                        status: status_name(*status),
                        tool_call_id: id,
                        truncated: *truncated,
                    },
                );
            }
            AgentEvent::SubagentStarted { task_id, .. } => {
                if let Some(node) = state.subagent(task_id) {
                    self.start_child(node);
                }
            }
            AgentEvent::Subagent { task_id, event, .. } => {
                if let (Some(child), Some(node)) =
                    (self.children.get_mut(task_id), state.subagent(task_id))
                {
                    child.observe(node.run(), event);
                }
            }
            AgentEvent::SubagentFinished {
                task_id,
                status,
                error,
                usage,
                ..
            } => {
                if let Some(node) = state.subagent(task_id) {
                    self.finish_child(node, *status, error.as_deref(), usage);
                }
            }
            // Not recorded by Zero's exec: the answer is recorded once, at the end
            // ([`SessionRecorder::finish`]); a call's sandbox block with its result (the
            // state keeps it); the rest has no record in Zero's session.
            AgentEvent::SandboxReport(_)
            // The call made again with the fallback model is recorded as the call.
            | AgentEvent::ModelFallback { .. }
            | AgentEvent::TextDelta { .. }
            | AgentEvent::ReasoningDelta { .. }
            | AgentEvent::TurnEnded { .. }
            | AgentEvent::HookDecided { .. }
            | AgentEvent::ToolExecutionStarted { .. }
            | AgentEvent::ToolProgress { .. }
            | AgentEvent::PlanUpdated { .. }
            | AgentEvent::ToolBlocked { .. }
            | AgentEvent::ContextUsage { .. }
            | AgentEvent::CompactionStarted { .. }
            | AgentEvent::CompactionFinished { .. }
            | AgentEvent::Error { .. }
            | AgentEvent::RunFinished { .. } => return Coverage::NotShown,
            // The run's framing (the prompt is recorded first, by `user_message`), and
            // variants added to agent-core later.
            other => return Coverage::rest(other),
        }
        Coverage::Shown
    }
}

impl SessionRecorder {
    /// Records how the run ended with `outcome`: the answer, or why there is none
    /// (`invalid_output`: why the answer fails `--output-schema`), and makes the session
    /// durable: with a buffered store, the run's one sync.
    pub fn finish(&mut self, outcome: &TurnOutcome, invalid_output: Option<&str>) {
        self.record_end(outcome, invalid_output);
        // The run's one sync (the store is buffered): everything recorded is durable now.
        if let Err(err) = self.store.sync(&self.id) {
            self.note(err);
        }
    }

    fn record_end(&mut self, outcome: &TurnOutcome, invalid_output: Option<&str>) {
        match EndRecord::of(outcome, invalid_output) {
            EndRecord::Answer(text) => {
                self.append(
                    "message",
                    &MessageRecord {
                        content: text,
                        role: "assistant",
                    },
                );
            }
            EndRecord::Error(message) => {
                self.append("error", &ErrorRecord { message: &message });
            }
        }
    }

    /// A sub-agent started: its child session is created and `specialist_start` recorded.
    fn start_child(&mut self, start: &SubagentNode) {
        let root = match self.config.root_session_id.is_empty() {
            true => self.id.clone(),
            false => self.config.root_session_id.clone(),
        };
        let title = match start
            .description
            .as_deref()
            .map(str::trim)
            .filter(|d| !d.is_empty())
        {
            Some(description) => format!("{}: {description}", start.name),
            None => start.name.to_string(),
        };
        let depth = self.config.depth + 1;
        let input = CreateInput {
            session_id: Some(start.task_id.to_string()),
            session_kind: "child".into(),
            title,
            cwd: self.config.cwd.display().to_string(),
            model_id: start.model.to_string(),
            provider: self.config.provider.clone(),
            parent_session_id: self.id.clone(),
            root_session_id: root.clone(),
            tag: SPECIALIST_TAG.into(),
            depth,
            agent_name: start.name.to_string(),
            task_id: start.task_id.to_string(),
            spawned_from_event_id: start.call_id.to_string(),
            ..CreateInput::default()
        };
        if let Err(err) = self.store.create(input) {
            self.note(err);
            return;
        }
        let mut config = self.config.clone();
        config.root_session_id = root;
        config.depth = depth;
        let child = Child {
            order: ZeroOrder::new(),
            recorder: SessionRecorder::new(self.store.clone(), &start.task_id, config),
            prompted: false,
            finished: false,
        };
        let record = SpecialistRecord {
            background: start.background,
            child_session_id: &start.task_id,
            description: start.description.clone(),
            error: None,
            exit_code: None,
            mode: mode(start),
            source: SPECIALIST_TAG,
            specialist: &start.name,
            status: None,
            task_id: &start.task_id,
            tool_call_id: &start.call_id,
            usage_rolled_up: None,
        };
        self.append("specialist_start", &record);
        self.children.insert(start.task_id.to_string(), child);
    }

    /// A sub-agent finished: its session gets its end, the parent's its tokens and
    /// `specialist_stop`.
    fn finish_child(
        &mut self,
        node: &SubagentNode,
        status: RunStatus,
        error: Option<&str>,
        usage: &Usage,
    ) {
        let task_id = node.task_id.as_str();
        let Some(mut child) = self.children.remove(task_id) else {
            return;
        };
        child.end(node.run());
        self.note_child(&child);
        let rolled_up = usage.input + usage.cache_read + usage.cache_write + usage.output > 0;
        if rolled_up {
            let prompt = usage.prompt_tokens();
            self.append(
                "provider_usage",
                &SpecialistUsageRecord {
                    background: node.background,
                    child_session_id: task_id,
                    completion_tokens: usage.output,
                    mode: mode(node),
                    prompt_tokens: prompt,
                    source: SPECIALIST_TAG,
                    specialist: &node.name,
                    task_id,
                    tool_call_id: &node.call_id,
                    total_tokens: prompt + usage.output,
                },
            );
        }
        let (name, exit_code) = match status {
            RunStatus::Success => ("success", exit::SUCCESS),
            RunStatus::Error => ("error", exit::PROVIDER),
            RunStatus::Aborted => ("aborted", exit::INTERRUPTED),
        };
        let record = SpecialistRecord {
            background: node.background,
            child_session_id: task_id,
            description: node.description.clone(),
            error: error.map(str::to_string),
            exit_code: Some(exit_code),
            mode: mode(node),
            source: SPECIALIST_TAG,
            specialist: &node.name,
            status: Some(name.to_string()),
            task_id,
            tool_call_id: &node.call_id,
            usage_rolled_up: Some(rolled_up),
        };
        self.append("specialist_stop", &record);
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

#[cfg(test)]
mod tests {
    use agent_host::turn::coverage::assert_covers;

    use super::*;

    /// Every variant is recorded or declared not recorded, and the recorded ones wrote
    /// Zero's records.
    #[test]
    fn every_variant_is_recorded_or_declared_not_recorded() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = ZeroSessions::new(dir.path().join("sessions"));
        store
            .create(CreateInput {
                session_id: Some("s".into()),
                ..Default::default()
            })
            .expect("create");
        let recorder = SessionRecorder::new(store.clone(), "s", RecorderConfig::default());
        let report = assert_covers(recorder);
        let mut shown = report.shown();
        shown.sort_unstable();
        assert_eq!(
            shown,
            [
                "permission_decided",
                "permission_requested",
                "subagent",
                "subagent_finished",
                "subagent_started",
                "tool_call",
                "tool_result",
                "usage",
            ]
        );
        let kinds: Vec<String> = store
            .read_events("s")
            .expect("events")
            .into_iter()
            .map(|e| e.kind)
            .collect();
        for kind in [
            "provider_usage",
            "tool_call",
            "tool_result",
            "permission_request",
        ] {
            assert!(kinds.iter().any(|k| k == kind), "{kind} not in {kinds:?}");
        }
    }
}
