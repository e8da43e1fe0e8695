//! The event processor: [`AgentEvent`]s in, Zero output events out, with the session
//! recorded on the way.
//!
//! agent-core reports every `ToolCall` of a turn right after the assistant message, then the
//! calls' permission events and results one call at a time. Zero groups per call instead:
//! `tool_call`, `checkpoint` (when the call changes files), at most one permission event, then
//! `tool_result`, before the next `tool_call`. The processor therefore buffers `ToolCall`s and
//! releases each one right before that call's first permission or result event. Usage is held
//! until the provider stream of its turn has ended.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_core::{
    async_trait, AgentEvent, Assessment, Block, ContentBlock, ErrorCode, Permission,
    PermissionAction, PermissionInfo, Risk, RunStatus, SideEffect, StopReason, Tool, ToolContext,
    ToolError, ToolOutput, ToolSpec, ToolStatus, Usage,
};
use serde_json::{json, Value};

use crate::session::{SessionError, SessionStore};
use crate::wire::{
    CheckpointEvent, CheckpointInfo, Delta, ErrorEvent, EventBody, FinalEvent, PermissionEvent,
    RunEnd, ToolCallEvent, ToolResultEvent, UsageEvent, WarningEvent, WireBlock, WireRisk,
};

/// Largest `tool_result.output`, in bytes, before `\n[truncated]` is appended.
pub const TOOL_OUTPUT_LIMIT: usize = 10 * 1024;

/// Exit codes and their `run_end.status`.
pub mod exit {
    /// Success.
    pub const SUCCESS: i32 = 0;
    /// Crash (stdout write failure); no protocol guarantee.
    pub const CRASH: i32 = 1;
    /// Usage error.
    pub const USAGE: i32 = 2;
    /// Provider or runtime error.
    pub const PROVIDER: i32 = 3;
    /// The run stopped with work unfinished.
    pub const INCOMPLETE: i32 = 4;
    /// Interrupted by a signal.
    pub const INTERRUPTED: i32 = 130;
}

/// Cuts `output` to [`TOOL_OUTPUT_LIMIT`] bytes on a character boundary and appends
/// `\n[truncated]`; returns whether it cut.
pub fn cap_output(output: &str) -> (String, bool) {
    if output.len() <= TOOL_OUTPUT_LIMIT {
        return (output.to_string(), false);
    }
    let cut = crate::session::cut_utf8(output, TOOL_OUTPUT_LIMIT);
    (format!("{cut}\n[truncated]"), true)
}

/// The before-state of one file a call is about to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSnapshot {
    /// The path as the call named it.
    pub path: String,
    /// The content before the call, or `None` when the file did not exist (or was too large
    /// or unreadable).
    pub content: Option<Vec<u8>>,
}

/// Largest file snapshotted for a checkpoint.
const MAX_SNAPSHOT_BYTES: u64 = 10 * 1024 * 1024;

fn read_snapshots(cwd: &Path, files: &[String]) -> Vec<FileSnapshot> {
    files
        .iter()
        .map(|file| {
            let path = cwd.join(file);
            let content = match std::fs::metadata(&path) {
                Ok(meta) if meta.is_file() && meta.len() <= MAX_SNAPSHOT_BYTES => {
                    std::fs::read(&path).ok()
                }
                _ => None,
            };
            FileSnapshot {
                path: file.clone(),
                content,
            }
        })
        .collect()
}

#[derive(Debug)]
enum SnapshotEntry {
    /// Taken by the tool wrapper before the tool ran; waiting for the processor.
    Captured(Vec<FileSnapshot>),
    /// Taken by the processor before the tool ran; the wrapper need not take it again.
    Taken,
}

/// Before-states of file-changing calls, shared by [`CheckpointTool`] (which snapshots right
/// before the tool runs) and the processor (which records the checkpoint). Whichever comes
/// first reads the files, so the snapshot is always the state before the call: agent-core may
/// run a tool before the processor has read the call's `ToolCall` event.
#[derive(Debug, Default)]
pub struct Snapshots {
    map: Mutex<HashMap<String, SnapshotEntry>>,
}

impl Snapshots {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, SnapshotEntry>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Called by the tool wrapper before the tool runs.
    fn before_call(&self, call_id: &str, cwd: &Path, files: &[String]) {
        let mut map = self.lock();
        match map.remove(call_id) {
            Some(SnapshotEntry::Taken) => {}
            _ => {
                map.insert(
                    call_id.to_string(),
                    SnapshotEntry::Captured(read_snapshots(cwd, files)),
                );
            }
        }
    }

    /// Called by the processor when it records the checkpoint.
    fn take(&self, call_id: &str, cwd: &Path, files: &[String]) -> Vec<FileSnapshot> {
        let mut map = self.lock();
        match map.remove(call_id) {
            Some(SnapshotEntry::Captured(snapshots)) => snapshots,
            _ => {
                map.insert(call_id.to_string(), SnapshotEntry::Taken);
                read_snapshots(cwd, files)
            }
        }
    }
}

/// Wraps a file-writing tool so the files it will change are snapshotted right before it
/// runs (see [`Snapshots`]).
pub struct CheckpointTool {
    inner: Arc<dyn Tool>,
    snapshots: Arc<Snapshots>,
}

impl CheckpointTool {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Tool>, snapshots: Arc<Snapshots>) -> Self {
        Self { inner, snapshots }
    }
}

#[async_trait]
impl Tool for CheckpointTool {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn description(&self) -> &str {
        self.inner.description()
    }
    fn parameters(&self) -> Value {
        self.inner.parameters()
    }
    fn side_effect(&self) -> SideEffect {
        self.inner.side_effect()
    }
    fn permission(&self) -> Permission {
        self.inner.permission()
    }
    fn assess(&self, args: &Value, cwd: &Path) -> Assessment {
        self.inner.assess(args, cwd)
    }
    fn spec(&self) -> ToolSpec {
        self.inner.spec()
    }
    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let files = changed_paths(Some(self.inner.side_effect()), &args);
        if !files.is_empty() {
            self.snapshots.before_call(&ctx.call_id, &ctx.cwd, &files);
        }
        self.inner.call(args, ctx).await
    }
}

/// Records exec events to a session, best-effort: the first failure is kept for one warning.
#[derive(Debug)]
pub struct SessionRecorder {
    store: SessionStore,
    id: String,
    failure: Option<String>,
}

impl SessionRecorder {
    /// A recorder for session `id` of `store`.
    pub fn new(store: SessionStore, id: impl Into<String>) -> Self {
        Self {
            store,
            id: id.into(),
            failure: None,
        }
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    fn note(&mut self, err: SessionError) {
        if self.failure.is_none() {
            self.failure = Some(err.to_string());
        }
    }

    /// Appends an event (redacted like an output line); returns its sequence.
    pub fn append(&mut self, kind: &str, payload: Value) -> Option<u64> {
        let payload = crate::redact::redact_value(payload);
        match self.store.append(&self.id, kind, Some(payload)) {
            Ok(event) => Some(event.sequence),
            Err(err) => {
                self.note(err);
                None
            }
        }
    }

    /// The first recording failure, if any.
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    /// Stores the before-state of the files a call changes; returns the checkpoint sequence.
    fn checkpoint(&mut self, call_id: &str, tool: &str, files: &[FileSnapshot]) -> Option<u64> {
        let safe_id: String = call_id
            .chars()
            .map(
                |c| match c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    true => c,
                    false => '_',
                },
            )
            .collect();
        let mut entries = Vec::new();
        for (index, file) in files.iter().enumerate() {
            let mut entry = json!({"path": file.path, "existed": file.content.is_some()});
            if let Some(data) = &file.content {
                let blob = format!("cp-{safe_id}-{index}");
                match self.store.write_blob(&self.id, &blob, data) {
                    Ok(()) => entry["blob"] = Value::String(blob),
                    Err(err) => self.note(err),
                }
            }
            entries.push(entry);
        }
        self.append(
            "session_checkpoint",
            json!({"tool": tool, "toolCallId": call_id, "files": entries}),
        )
    }
}

/// What the processor needs to know about the run.
#[derive(Debug, Clone, Default)]
pub struct ProcessorConfig {
    /// Session id written on permission events (empty without a session).
    pub session_id: String,
    /// Zero's name of the permission mode (`auto`, `ask`, `unsafe`, `plan`, …).
    pub permission_mode: String,
    /// The `--auto` level.
    pub autonomy: String,
    /// Workspace root (checkpoints resolve paths against it).
    pub cwd: PathBuf,
    /// Whether checkpoints are taken (`ZERO_CHECKPOINTS` ≠ `off`).
    pub checkpoints: bool,
    /// Snapshots shared with the [`CheckpointTool`]-wrapped tools.
    pub snapshots: Arc<Snapshots>,
}

#[derive(Debug)]
struct PendingCall {
    id: String,
    name: String,
    args: Value,
    raw_args: Option<String>,
    side_effect: Option<SideEffect>,
}

/// How a run ended, as Zero reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Terminal {
    /// The terminal events (ending with `run_end`).
    pub events: Vec<EventBody>,
    /// The process exit code.
    pub exit_code: i32,
}

/// Maps one run's [`AgentEvent`]s to Zero output events.
#[derive(Debug)]
pub struct EventProcessor {
    config: ProcessorConfig,
    recorder: Option<SessionRecorder>,
    pending_calls: Vec<PendingCall>,
    pending_usage: Vec<Usage>,
    fatal: Option<(ErrorCode, String)>,
    cut_by_length: bool,
}

fn side_effect_name(side_effect: Option<SideEffect>) -> &'static str {
    side_effect.map(SideEffect::as_str).unwrap_or("unknown")
}

fn wire_risk(risk: &Risk) -> WireRisk {
    WireRisk {
        level: risk.level.as_str().to_string(),
        categories: risk
            .categories
            .iter()
            .filter_map(|c| serde_json::to_value(c).ok())
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        reason: risk.reason(),
    }
}

fn enum_name<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn wire_block(block: &Block) -> WireBlock {
    WireBlock {
        code: enum_name(&block.code),
        tool_name: block.tool_name.clone().unwrap_or_default(),
        action: enum_name(&block.action),
        risk: wire_risk(&block.risk),
        path: block.path.clone().unwrap_or_default(),
        reason: block.reason.clone(),
        recoverable: block.recoverable,
    }
}

fn text_of(content: &[ContentBlock]) -> String {
    let mut out = String::new();
    for block in content {
        if let ContentBlock::Text { text } = block {
            out.push_str(text);
        }
    }
    out
}

/// Paths a call will change, when the tool writes files and names them.
fn changed_paths(side_effect: Option<SideEffect>, args: &Value) -> Vec<String> {
    if side_effect != Some(SideEffect::Write) {
        return Vec::new();
    }
    ["path", "file_path", "file"]
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str))
        .map(|p| vec![p.to_string()])
        .unwrap_or_default()
}

impl EventProcessor {
    /// A processor for one run, recording to `recorder` when given.
    pub fn new(config: ProcessorConfig, recorder: Option<SessionRecorder>) -> Self {
        Self {
            config,
            recorder,
            pending_calls: Vec::new(),
            pending_usage: Vec::new(),
            fatal: None,
            cut_by_length: false,
        }
    }

    /// The session recorder, if any.
    pub fn recorder(&self) -> Option<&SessionRecorder> {
        self.recorder.as_ref()
    }

    /// Records an event to the session, if there is one.
    pub fn record(&mut self, kind: &str, payload: Value) -> Option<u64> {
        self.recorder.as_mut().and_then(|r| r.append(kind, payload))
    }

    fn flush_usage(&mut self, out: &mut Vec<EventBody>) {
        for usage in std::mem::take(&mut self.pending_usage) {
            let prompt = usage.prompt_tokens();
            let completion = usage.output;
            let mut payload = json!({
                "promptTokens": prompt,
                "completionTokens": completion,
                "totalTokens": prompt + completion,
            });
            if usage.cache_read > 0 {
                payload["cachedInputTokens"] = json!(usage.cache_read);
            }
            if usage.cache_write > 0 {
                payload["cacheWriteTokens"] = json!(usage.cache_write);
            }
            if let Some(reasoning) = usage.reasoning {
                payload["reasoningTokens"] = json!(reasoning);
            }
            self.record("provider_usage", payload);
            out.push(EventBody::Usage(UsageEvent {
                prompt_tokens: prompt,
                completion_tokens: completion,
                total_tokens: prompt + completion,
            }));
        }
    }

    /// Releases buffered tool calls up to and including `id` (all of them for `None`).
    fn flush_calls(&mut self, id: Option<&str>, out: &mut Vec<EventBody>) {
        let upto = match id {
            Some(id) => match self.pending_calls.iter().position(|c| c.id == id) {
                Some(index) => index + 1,
                None => return,
            },
            None => self.pending_calls.len(),
        };
        let calls: Vec<PendingCall> = self.pending_calls.drain(..upto).collect();
        for call in calls {
            let arguments = call
                .raw_args
                .clone()
                .unwrap_or_else(|| call.args.to_string());
            self.record(
                "tool_call",
                json!({"id": call.id, "name": call.name, "arguments": arguments}),
            );
            let args = match (&call.raw_args, &call.args) {
                (Some(raw), _) if raw.trim().is_empty() => None,
                (Some(raw), _) => Some(Value::String(raw.clone())),
                (None, Value::Null) => None,
                (None, args) => Some(args.clone()),
            };
            out.push(EventBody::ToolCall(ToolCallEvent {
                id: call.id.clone(),
                name: call.name.clone(),
                args,
                side_effect: side_effect_name(call.side_effect).to_string(),
            }));
            let files = changed_paths(call.side_effect, &call.args);
            if self.config.checkpoints && self.recorder.is_some() && !files.is_empty() {
                let snapshots = self
                    .config
                    .snapshots
                    .take(&call.id, &self.config.cwd, &files);
                if let Some(sequence) = self
                    .recorder
                    .as_mut()
                    .and_then(|r| r.checkpoint(&call.id, &call.name, &snapshots))
                {
                    out.push(EventBody::Checkpoint(CheckpointEvent {
                        checkpoint: CheckpointInfo {
                            sequence,
                            tool: call.name.clone(),
                            files,
                        },
                    }));
                }
            }
        }
    }

    fn permission_event(
        &mut self,
        info: &PermissionInfo,
        action: PermissionAction,
        granted: bool,
    ) -> PermissionEvent {
        let action_name = enum_name(&action);
        let reason = info.reason.clone().unwrap_or_default();
        let decision_reason = match action {
            PermissionAction::Deny | PermissionAction::Cancel => reason.clone(),
            _ => String::new(),
        };
        let event = PermissionEvent {
            id: info.id.clone(),
            name: info.name.clone(),
            action: action_name,
            permission: info.permission.as_str().to_string(),
            permission_granted: granted,
            permission_mode: self.config.permission_mode.clone(),
            autonomy: self.config.autonomy.clone(),
            side_effect: info.side_effect.as_str().to_string(),
            reason,
            decision_reason,
            risk: wire_risk(&info.risk),
            block: info.block.as_ref().map(wire_block),
            grant_matched: false,
            grant: None,
            session_id: self.config.session_id.clone(),
        };
        let kind = match action {
            PermissionAction::Prompt => "permission_request",
            _ => "permission_decision",
        };
        let mut payload = serde_json::to_value(&event).unwrap_or_else(|_| json!({}));
        if let Value::Object(map) = &mut payload {
            if let Some(id) = map.remove("id") {
                map.insert("toolCallId".into(), id);
            }
            map.remove("sessionId");
        }
        self.record(kind, payload);
        event
    }

    /// Maps one event (anything but `RunFinished`, which [`EventProcessor::finish`] takes).
    pub fn on_event(&mut self, event: AgentEvent) -> Vec<EventBody> {
        let mut out = Vec::new();
        self.on_event_into(event, &mut out);
        out
    }

    /// [`EventProcessor::on_event`], appending to `out` (so a loop can reuse one buffer and
    /// a text delta costs no allocation of its own).
    pub fn on_event_into(&mut self, event: AgentEvent, out: &mut Vec<EventBody>) {
        match event {
            AgentEvent::TextDelta { delta } if !delta.is_empty() => {
                out.push(EventBody::Text(Delta { delta }));
            }
            AgentEvent::ReasoningDelta { delta } if !delta.is_empty() => {
                out.push(EventBody::Reasoning(Delta { delta }));
            }
            AgentEvent::Usage { turn, .. } => self.pending_usage.push(turn),
            AgentEvent::AssistantMessage { .. } => self.flush_usage(out),
            AgentEvent::ToolCall {
                id,
                name,
                args,
                raw_args,
                side_effect,
            } => {
                self.flush_usage(out);
                self.pending_calls.push(PendingCall {
                    id,
                    name,
                    args,
                    raw_args,
                    side_effect,
                });
            }
            AgentEvent::TurnEnded { stop, .. } => {
                self.flush_usage(out);
                if stop == StopReason::Length {
                    self.cut_by_length = true;
                }
            }
            AgentEvent::PermissionRequested(info) => {
                self.flush_calls(Some(&info.id), out);
                let event = self.permission_event(&info, PermissionAction::Prompt, false);
                out.push(EventBody::PermissionRequest(Box::new(event)));
            }
            AgentEvent::PermissionDecided {
                info,
                action,
                granted,
                ..
            } => {
                self.flush_calls(Some(&info.id), out);
                let event = self.permission_event(&info, action, granted);
                out.push(match action {
                    PermissionAction::Prompt => EventBody::Permission(Box::new(event)),
                    _ => EventBody::PermissionDecision(Box::new(event)),
                });
            }
            AgentEvent::ToolExecutionStarted { id, .. } => self.flush_calls(Some(&id), out),
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
                self.flush_calls(Some(&id), out);
                let full = text_of(&content);
                let status = match status {
                    ToolStatus::Ok => "ok",
                    ToolStatus::Error => "error",
                };
                let mut payload = json!({
                    "toolCallId": id, "name": name, "status": status, "output": full,
                });
                if truncated {
                    payload["truncated"] = json!(true);
                }
                if redacted {
                    payload["redacted"] = json!(true);
                }
                if !changed_files.is_empty() {
                    payload["changedFiles"] = json!(changed_files);
                }
                self.record("tool_result", payload);
                let (output, cut) = cap_output(&full);
                out.push(EventBody::ToolResult(ToolResultEvent {
                    id,
                    name,
                    status: status.to_string(),
                    output,
                    truncated: cut || truncated,
                    redacted: redacted.then_some(true),
                    changed_files,
                    display: None,
                    meta: BTreeMap::new(),
                }));
            }
            AgentEvent::Error {
                code,
                message,
                recoverable,
            } => {
                self.flush_usage(out);
                if recoverable {
                    out.push(EventBody::Warning(WarningEvent { message }));
                } else if self.fatal.is_none() {
                    self.fatal = Some((code, message));
                }
            }
            _ => {}
        }
    }

    /// The terminal events for a run that ended with `status` (or by a signal).
    pub fn finish(
        &mut self,
        status: RunStatus,
        final_text: Option<String>,
        interrupted: bool,
    ) -> Terminal {
        let mut out = Vec::new();
        self.flush_usage(&mut out);
        self.flush_calls(None, &mut out);
        let text = final_text.unwrap_or_default();
        let error = |code: &str, message: String| {
            EventBody::Error(ErrorEvent {
                code: code.into(),
                message,
                recoverable: false,
            })
        };
        let run_end = |status: &str, exit_code: i32| {
            EventBody::RunEnd(RunEnd {
                status: status.into(),
                exit_code,
            })
        };
        let exit_code;
        if interrupted || status == RunStatus::Aborted {
            self.record("error", json!({"message": "interrupted"}));
            out.push(error("interrupted", "run cancelled by signal".into()));
            out.push(run_end("interrupted", exit::INTERRUPTED));
            exit_code = exit::INTERRUPTED;
        } else if status == RunStatus::Error {
            let (code, message) = self
                .fatal
                .take()
                .unwrap_or((ErrorCode::Provider, "agent run failed".into()));
            if code == ErrorCode::MaxSteps {
                self.record(
                    "error",
                    json!({"message": format!("incomplete: {message}")}),
                );
                out.push(EventBody::Final(FinalEvent { text, meta: None }));
                out.push(error("incomplete", message));
                out.push(run_end("incomplete", exit::INCOMPLETE));
                exit_code = exit::INCOMPLETE;
            } else {
                self.record("error", json!({"message": message}));
                out.push(error("provider_error", message));
                out.push(run_end("error", exit::PROVIDER));
                exit_code = exit::PROVIDER;
            }
        } else {
            self.record("message", json!({"role": "assistant", "content": text}));
            if self.cut_by_length {
                out.push(EventBody::Warning(WarningEvent {
                    message: "The model's answer was cut off by its output token limit.".into(),
                }));
            }
            out.push(EventBody::Final(FinalEvent { text, meta: None }));
            out.push(run_end("success", exit::SUCCESS));
            exit_code = exit::SUCCESS;
        }
        Terminal {
            events: out,
            exit_code,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::PermissionMode;

    fn processor() -> EventProcessor {
        EventProcessor::new(
            ProcessorConfig {
                session_id: "s".into(),
                permission_mode: "ask".into(),
                autonomy: "low".into(),
                cwd: PathBuf::from("."),
                checkpoints: true,
                snapshots: Arc::default(),
            },
            None,
        )
    }

    fn call(id: &str, name: &str) -> AgentEvent {
        AgentEvent::ToolCall {
            id: id.into(),
            name: name.into(),
            args: json!({"path": "a"}),
            raw_args: None,
            side_effect: Some(SideEffect::Read),
        }
    }

    fn result(id: &str, text: &str) -> AgentEvent {
        AgentEvent::ToolResult {
            id: id.into(),
            name: "read_file".into(),
            status: ToolStatus::Ok,
            content: vec![ContentBlock::text(text)],
            truncated: false,
            redacted: false,
            changed_files: vec![],
            duration_ms: 1,
        }
    }

    fn types(events: &[EventBody]) -> Vec<&'static str> {
        events.iter().map(EventBody::type_name).collect()
    }

    #[test]
    fn calls_are_regrouped_per_call() {
        let mut p = processor();
        let mut all = Vec::new();
        for event in [
            AgentEvent::TextDelta { delta: "hi".into() },
            AgentEvent::Usage {
                turn: Usage {
                    input: 10,
                    cache_read: 5,
                    output: 3,
                    ..Usage::default()
                },
                cumulative: Usage::default(),
            },
            AgentEvent::AssistantMessage {
                message: agent_core::Message::assistant_text("hi"),
            },
            call("c1", "read_file"),
            call("c2", "read_file"),
            AgentEvent::TurnEnded {
                step: 1,
                stop: StopReason::ToolUse,
                error: None,
            },
            AgentEvent::ToolExecutionStarted {
                id: "c1".into(),
                name: "read_file".into(),
            },
            result("c1", "one"),
            AgentEvent::PermissionRequested(Box::new(PermissionInfo {
                id: "c2".into(),
                name: "read_file".into(),
                args: json!({}),
                mode: PermissionMode::Ask,
                permission: Permission::Prompt,
                side_effect: SideEffect::Read,
                reason: Some("why".into()),
                risk: Risk::for_side_effect(SideEffect::Read),
                block: None,
            })),
            result("c2", "Error: no"),
        ] {
            all.extend(p.on_event(event));
        }
        assert_eq!(
            types(&all),
            [
                "text",
                "usage",
                "tool_call",
                "tool_result",
                "tool_call",
                "permission_request",
                "tool_result"
            ]
        );
        assert_eq!(
            all[1],
            EventBody::Usage(UsageEvent {
                prompt_tokens: 15,
                completion_tokens: 3,
                total_tokens: 18
            })
        );
        let EventBody::PermissionRequest(req) = &all[5] else {
            panic!("expected a permission request");
        };
        assert!(!req.permission_granted);
        assert_eq!(req.action, "prompt");
        assert_eq!(req.risk.level, "low");
        assert_eq!(req.session_id, "s");
        let terminal = p.finish(RunStatus::Success, Some("done".into()), false);
        assert_eq!(types(&terminal.events), ["final", "run_end"]);
        assert_eq!(terminal.exit_code, 0);
    }

    #[test]
    fn output_is_capped_on_a_char_boundary() {
        let long = "é".repeat(TOOL_OUTPUT_LIMIT);
        let (out, cut) = cap_output(&long);
        assert!(cut);
        assert!(out.ends_with("\n[truncated]"));
        assert!(out.len() <= TOOL_OUTPUT_LIMIT + "\n[truncated]".len());
        assert_eq!(cap_output("short"), ("short".into(), false));
    }

    #[test]
    fn errors_map_to_exit_codes() {
        let mut p = processor();
        p.on_event(AgentEvent::Error {
            code: ErrorCode::Provider,
            message: "boom".into(),
            recoverable: false,
        });
        let t = p.finish(RunStatus::Error, None, false);
        assert_eq!(t.exit_code, 3);
        assert_eq!(types(&t.events), ["error", "run_end"]);
        let mut p = processor();
        p.on_event(AgentEvent::Error {
            code: ErrorCode::MaxSteps,
            message: "limit".into(),
            recoverable: false,
        });
        let t = p.finish(RunStatus::Error, Some("partial".into()), false);
        assert_eq!(t.exit_code, 4);
        assert_eq!(types(&t.events), ["final", "error", "run_end"]);
        let t = processor().finish(RunStatus::Aborted, None, true);
        assert_eq!(t.exit_code, 130);
    }
}
