//! The pure part of the ACP front end: [`AgentEvent`]s of a prompt turn become ACP
//! [`SessionUpdate`]s, a stored transcript becomes the updates that replay it, an ACP prompt
//! becomes a [`UserInput`], and a finished run becomes a [`StopReason`].
//!
//! Tool calls are described for editors: an ACP [`ToolKind`] by tool name, a title, the
//! paths they touch as absolute [`ToolCallLocation`]s, and for `edit_file` / `write_file` a
//! [`Diff`] content (`path`, `oldText`, `newText`) that stays in the call's content when it
//! completes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    BlobResourceContents, ContentBlock as AcpBlock, ContentChunk, Diff, EmbeddedResourceResource,
    ImageContent, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionUpdate, StopReason,
    TextContent, ToolCall as AcpToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use agent_core::{
    AgentEvent, ApprovalRequest, ContentBlock, ErrorCode, Message, PlanItem, PlanStatus,
    ProgressStream, Role, RunStatus, StopReason as CoreStop, ToolStatus, UserInput,
};
use base64::Engine as _;
use serde_json::{json, Value};

/// Longest tool-call title, in characters.
const TITLE_MAX: usize = 120;

/// The ACP kind of a tool, by name (this project's names; ZCode's are mapped first).
pub fn tool_kind(name: &str) -> ToolKind {
    match crate::session::canonical_tool_name(name).as_str() {
        "read_file" | "list_dir" => ToolKind::Read,
        "write_file" | "edit_file" => ToolKind::Edit,
        "glob" | "grep" | "web_search" => ToolKind::Search,
        "bash" => ToolKind::Execute,
        "plan" | "think" => ToolKind::Think,
        "web_fetch" | "fetch" => ToolKind::Fetch,
        "exit_plan_mode" => ToolKind::SwitchMode,
        _ => ToolKind::Other,
    }
}

fn arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn clip(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut out: String = line.chars().take(TITLE_MAX).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

/// A short human title for a call.
pub fn tool_title(name: &str, args: &Value) -> String {
    let path = arg(args, "path");
    match crate::session::canonical_tool_name(name).as_str() {
        "read_file" => format!("Read {}", path.unwrap_or("file")),
        "write_file" => format!("Write {}", path.unwrap_or("file")),
        "edit_file" => format!("Edit {}", path.unwrap_or("file")),
        "list_dir" => format!("List {}", path.unwrap_or(".")),
        "glob" => match (arg(args, "pattern"), path) {
            (Some(p), Some(dir)) => clip(&format!("Find {p} in {dir}")),
            (Some(p), None) => clip(&format!("Find {p}")),
            _ => "Find files".to_string(),
        },
        "grep" => match (arg(args, "pattern"), path) {
            (Some(p), Some(dir)) => clip(&format!("Search {p:?} in {dir}")),
            (Some(p), None) => clip(&format!("Search {p:?}")),
            _ => "Search".to_string(),
        },
        "bash" => match arg(args, "command") {
            Some(command) => format!("`{}`", clip(command)),
            None => "Run a command".to_string(),
        },
        "plan" => "Update plan".to_string(),
        "exit_plan_mode" => "Ready to code?".to_string(),
        "ask_user" => "Ask the user".to_string(),
        _ => name.to_string(),
    }
}

fn absolute(cwd: &Path, path: &str) -> PathBuf {
    cwd.join(path)
}

/// The paths a call touches, absolute (relative ones are resolved against `cwd`).
pub fn tool_locations(name: &str, args: &Value, cwd: &Path) -> Vec<ToolCallLocation> {
    let path = arg(args, "path");
    match crate::session::canonical_tool_name(name).as_str() {
        "read_file" => path
            .map(|p| {
                let line = args
                    .get("offset")
                    .and_then(Value::as_u64)
                    .and_then(|l| u32::try_from(l).ok());
                vec![ToolCallLocation::new(absolute(cwd, p)).line(line)]
            })
            .unwrap_or_default(),
        "write_file" | "edit_file" => path
            .map(|p| vec![ToolCallLocation::new(absolute(cwd, p))])
            .unwrap_or_default(),
        "list_dir" | "glob" | "grep" => {
            vec![ToolCallLocation::new(absolute(cwd, path.unwrap_or(".")))]
        }
        _ => Vec::new(),
    }
}

/// The content a call shows before it runs: the diff of an edit or write, the plan of
/// `exit_plan_mode`.
pub fn tool_preview(name: &str, args: &Value, cwd: &Path) -> Vec<ToolCallContent> {
    let path = arg(args, "path");
    match (crate::session::canonical_tool_name(name).as_str(), path) {
        ("edit_file", Some(path)) => {
            let old = args.get("old_string").and_then(Value::as_str);
            let new = args
                .get("new_string")
                .and_then(Value::as_str)
                .unwrap_or_default();
            vec![Diff::new(absolute(cwd, path), new)
                .old_text(old.map(str::to_string))
                .into()]
        }
        ("write_file", Some(path)) => {
            let content = args
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or_default();
            vec![Diff::new(absolute(cwd, path), content).into()]
        }
        ("exit_plan_mode", _) => arg(args, "plan")
            .map(|plan| vec![text_block(plan).into()])
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

fn raw_input(args: &Value, raw_args: Option<&str>) -> Value {
    match (args, raw_args) {
        (Value::Null, Some(raw)) => json!({ "raw": raw }),
        (args, _) => args.clone(),
    }
}

/// The `tool_call` that announces a call.
pub fn tool_call(
    id: &str,
    name: &str,
    args: &Value,
    raw_args: Option<&str>,
    cwd: &Path,
) -> AcpToolCall {
    AcpToolCall::new(id.to_string(), tool_title(name, args))
        .kind(tool_kind(name))
        .status(ToolCallStatus::Pending)
        .locations(tool_locations(name, args, cwd))
        .content(tool_preview(name, args, cwd))
        .raw_input(raw_input(args, raw_args))
}

/// The tool call of a permission prompt, as `session/request_permission` carries it.
pub fn permission_tool_call(request: &ApprovalRequest, cwd: &Path) -> ToolCallUpdate {
    let name = &request.tool;
    let args = &request.args;
    let preview = tool_preview(name, args, cwd);
    ToolCallUpdate::new(
        request.call_id.clone(),
        ToolCallUpdateFields::new()
            .title(tool_title(name, args))
            .kind(tool_kind(name))
            .status(ToolCallStatus::Pending)
            .locations(tool_locations(name, args, cwd))
            .content((!preview.is_empty()).then_some(preview))
            .raw_input(args.clone()),
    )
}

fn text_block(text: impl Into<String>) -> AcpBlock {
    AcpBlock::Text(TextContent::new(text))
}

fn image_block(mime_type: &str, data: &[u8]) -> AcpBlock {
    let data = base64::engine::general_purpose::STANDARD.encode(data);
    AcpBlock::Image(ImageContent::new(data, mime_type))
}

/// A text or image block of ours as ACP content (other kinds are not content).
pub fn content_block(block: &ContentBlock) -> Option<AcpBlock> {
    match block {
        ContentBlock::Text { text } => Some(text_block(text.clone())),
        ContentBlock::Image { mime_type, data } => Some(image_block(mime_type, data)),
        _ => None,
    }
}

fn result_content(
    name: &str,
    args: Option<&Value>,
    ok: bool,
    blocks: &[ContentBlock],
    cwd: &Path,
) -> Vec<ToolCallContent> {
    // A successful edit keeps its diff so the editor can still show what changed.
    let mut content = match (ok, args) {
        (true, Some(args)) if tool_kind(name) == ToolKind::Edit => tool_preview(name, args, cwd),
        _ => Vec::new(),
    };
    content.extend(
        blocks
            .iter()
            .filter_map(content_block)
            .map(ToolCallContent::from),
    );
    content
}

fn plan_entries(plan: &[PlanItem]) -> Plan {
    Plan::new(
        plan.iter()
            .map(|item| {
                let status = match item.status {
                    PlanStatus::Pending => PlanEntryStatus::Pending,
                    PlanStatus::InProgress => PlanEntryStatus::InProgress,
                    PlanStatus::Completed => PlanEntryStatus::Completed,
                };
                PlanEntry::new(item.step.clone(), PlanEntryPriority::Medium, status)
            })
            .collect(),
    )
}

/// The `plan` update of a checklist.
pub fn plan_update(plan: &[PlanItem]) -> SessionUpdate {
    SessionUpdate::Plan(plan_entries(plan))
}

fn update(id: &str, fields: ToolCallUpdateFields) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id.to_string(), fields))
}

/// Maps the events of one prompt turn to session updates. It remembers each call's name
/// and arguments (for the content of its result) and the last model stop (for the turn's
/// stop reason).
#[derive(Debug, Clone)]
pub struct TurnMapper {
    cwd: PathBuf,
    context_window: u64,
    calls: HashMap<String, (String, Value)>,
    last_stop: Option<CoreStop>,
}

/// The chunk of a non-empty text or reasoning delta.
fn delta_chunk(event: &AgentEvent) -> Option<SessionUpdate> {
    match event {
        AgentEvent::TextDelta { delta } if !delta.is_empty() => Some(
            SessionUpdate::AgentMessageChunk(ContentChunk::new(text_block(delta.clone()))),
        ),
        AgentEvent::ReasoningDelta { delta } if !delta.is_empty() => Some(
            SessionUpdate::AgentThoughtChunk(ContentChunk::new(text_block(delta.clone()))),
        ),
        _ => None,
    }
}

impl TurnMapper {
    /// A mapper for a session working in `cwd` on a model with `context_window` tokens.
    pub fn new(cwd: impl Into<PathBuf>, context_window: u64) -> Self {
        Self {
            cwd: cwd.into(),
            context_window,
            calls: HashMap::new(),
            last_stop: None,
        }
    }

    /// The stop of the turn's last model call.
    pub fn last_stop(&self) -> Option<CoreStop> {
        self.last_stop
    }

    /// Hands `emit` the updates one event becomes (often none), in order: [`map`](Self::map)
    /// without a `Vec` for the streamed deltas, the events of almost every turn.
    pub fn map_each(&mut self, event: &AgentEvent, mut emit: impl FnMut(SessionUpdate)) {
        match delta_chunk(event) {
            Some(update) => emit(update),
            None => self.map(event).into_iter().for_each(emit),
        }
    }

    /// The updates one event becomes (often none).
    pub fn map(&mut self, event: &AgentEvent) -> Vec<SessionUpdate> {
        if let Some(update) = delta_chunk(event) {
            return vec![update];
        }
        match event {
            AgentEvent::ToolCall {
                id,
                name,
                args,
                raw_args,
                ..
            } => {
                self.calls.insert(id.clone(), (name.clone(), args.clone()));
                vec![SessionUpdate::ToolCall(tool_call(
                    id,
                    name,
                    args,
                    raw_args.as_deref(),
                    &self.cwd,
                ))]
            }
            AgentEvent::ToolExecutionStarted { id, .. } => vec![update(
                id,
                ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
            )],
            AgentEvent::ToolProgress { id, stream, text }
                if *stream != ProgressStream::Status && !text.is_empty() =>
            {
                // Process streams report their recent tail: it replaces the content.
                vec![update(
                    id,
                    ToolCallUpdateFields::new().content(vec![text_block(text.clone()).into()]),
                )]
            }
            AgentEvent::PlanUpdated { plan, .. } => vec![plan_update(plan)],
            AgentEvent::ToolResult {
                id,
                name,
                status,
                content,
                ..
            } => {
                let ok = *status == ToolStatus::Ok;
                let args = self.calls.get(id).map(|(_, args)| args);
                let content = result_content(name, args, ok, content, &self.cwd);
                let status = match ok {
                    true => ToolCallStatus::Completed,
                    false => ToolCallStatus::Failed,
                };
                vec![update(
                    id,
                    ToolCallUpdateFields::new().status(status).content(content),
                )]
            }
            AgentEvent::Usage { turn, .. } => vec![SessionUpdate::UsageUpdate(UsageUpdate::new(
                turn.total_tokens(),
                self.context_window,
            ))],
            AgentEvent::TurnEnded { stop, .. } => {
                self.last_stop = Some(*stop);
                Vec::new()
            }
            _ => Vec::new(),
        }
    }
}

/// How a prompt turn ends on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEnd {
    /// `session/prompt` answers with this stop reason.
    Stop(StopReason),
    /// `session/prompt` answers with an internal error carrying this message.
    Failed(String),
}

/// The stop reason of a finished run: `cancelled` when the client cancelled (or the run was
/// aborted), `max_tokens` / `refusal` from the last model stop, `max_turn_requests` when
/// the step limit ended it, another error as a failure, else `end_turn`.
pub fn turn_end(
    status: RunStatus,
    last_stop: Option<CoreStop>,
    error: Option<(ErrorCode, &str)>,
    cancel_requested: bool,
) -> TurnEnd {
    if cancel_requested || status == RunStatus::Aborted {
        return TurnEnd::Stop(StopReason::Cancelled);
    }
    match (status, error) {
        (RunStatus::Error, Some((ErrorCode::MaxSteps, _))) => {
            TurnEnd::Stop(StopReason::MaxTurnRequests)
        }
        (RunStatus::Error, Some((_, message))) => TurnEnd::Failed(message.to_string()),
        (RunStatus::Error, None) => TurnEnd::Failed("the agent run failed".to_string()),
        _ => TurnEnd::Stop(match last_stop {
            Some(CoreStop::Length) => StopReason::MaxTokens,
            Some(CoreStop::Refusal) => StopReason::Refusal,
            _ => StopReason::EndTurn,
        }),
    }
}

/// The updates that replay a transcript to a client loading the session: the user's text
/// and images, the agent's text and reasoning, each tool call (`tool_call`, then a
/// `tool_call_update` with its final status and content). Messages the agent wrote itself
/// (recovery nudges, compaction notes) are not replayed.
pub fn replay(messages: &[Message], cwd: &Path) -> Vec<SessionUpdate> {
    let mut out = Vec::new();
    let mut calls: HashMap<String, (String, Value)> = HashMap::new();
    for message in messages.iter().filter(|m| !m.synthetic) {
        for block in &message.content {
            match (message.role, block) {
                (Role::User, ContentBlock::Text { .. } | ContentBlock::Image { .. }) => {
                    if let Some(block) = content_block(block) {
                        out.push(SessionUpdate::UserMessageChunk(ContentChunk::new(block)));
                    }
                }
                (Role::Assistant, ContentBlock::Text { text }) if !text.is_empty() => out.push(
                    SessionUpdate::AgentMessageChunk(ContentChunk::new(text_block(text.clone()))),
                ),
                (Role::Assistant, ContentBlock::Image { .. }) => {
                    if let Some(block) = content_block(block) {
                        out.push(SessionUpdate::AgentMessageChunk(ContentChunk::new(block)));
                    }
                }
                (Role::Assistant, ContentBlock::Reasoning { text, .. }) if !text.is_empty() => out
                    .push(SessionUpdate::AgentThoughtChunk(ContentChunk::new(
                        text_block(text.clone()),
                    ))),
                (Role::Assistant, ContentBlock::ToolCall(call)) => {
                    calls.insert(call.id.clone(), (call.name.clone(), call.args.clone()));
                    out.push(SessionUpdate::ToolCall(tool_call(
                        &call.id, &call.name, &call.args, None, cwd,
                    )));
                }
                (
                    _,
                    ContentBlock::ToolResult {
                        call_id,
                        is_error,
                        content,
                    },
                ) => {
                    let (name, args) = match calls.get(call_id) {
                        Some((name, args)) => (name.as_str(), Some(args)),
                        None => ("", None),
                    };
                    let status = match is_error {
                        false => ToolCallStatus::Completed,
                        true => ToolCallStatus::Failed,
                    };
                    let content = result_content(name, args, !is_error, content, cwd);
                    out.push(update(
                        call_id,
                        ToolCallUpdateFields::new().status(status).content(content),
                    ));
                }
                _ => {}
            }
        }
    }
    out
}

/// A prompt the agent cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    /// Audio is not a prompt capability of this agent.
    #[error("audio prompts are not supported")]
    Audio,
    /// Base64 data that does not decode.
    #[error("prompt block {index}: invalid base64 data: {message}")]
    Base64 {
        /// Index of the block in the prompt.
        index: usize,
        /// The decoder's message.
        message: String,
    },
    /// Nothing to send.
    #[error("the prompt is empty")]
    Empty,
}

fn decode(index: usize, data: &str) -> Result<Vec<u8>, PromptError> {
    base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| PromptError::Base64 {
            index,
            message: e.to_string(),
        })
}

/// Turns an ACP prompt into the agent's input: text blocks in order, resource links as
/// Markdown links, images (and embedded image blobs) as images, and embedded text
/// resources appended as `<context ref="URI">` sections.
pub fn prompt_input(blocks: &[AcpBlock]) -> Result<UserInput, PromptError> {
    let mut text = String::new();
    let mut context = String::new();
    let mut input = UserInput::default();
    for (index, block) in blocks.iter().enumerate() {
        match block {
            AcpBlock::Text(t) => text.push_str(&t.text),
            AcpBlock::ResourceLink(link) => {
                text.push_str(&format!("[@{}]({})", link.name, link.uri));
            }
            AcpBlock::Image(image) => {
                let data = decode(index, &image.data)?;
                input = input.with_image(image.mime_type.clone(), data);
            }
            AcpBlock::Audio(_) => return Err(PromptError::Audio),
            AcpBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(r) => {
                    context.push_str(&format!(
                        "\n<context ref=\"{}\">\n{}\n</context>",
                        r.uri, r.text
                    ));
                }
                EmbeddedResourceResource::BlobResourceContents(BlobResourceContents {
                    blob,
                    mime_type: Some(mime),
                    ..
                }) if mime.starts_with("image/") => {
                    let data = decode(index, blob)?;
                    input = input.with_image(mime.clone(), data);
                }
                EmbeddedResourceResource::BlobResourceContents(r) => {
                    text.push_str(&format!("[@{}]({})", r.uri, r.uri));
                }
                _ => {}
            },
            _ => {}
        }
    }
    if !context.is_empty() {
        text.push('\n');
        text.push_str(&context);
    }
    input.text = text;
    if input.is_empty() {
        return Err(PromptError::Empty);
    }
    Ok(input)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{EmbeddedResource, ResourceLink, TextResourceContents};
    use agent_core::{SideEffect, Usage};

    fn wire(update: &SessionUpdate) -> Value {
        serde_json::to_value(update).unwrap_or_default()
    }

    fn cwd() -> PathBuf {
        PathBuf::from("/work/ws")
    }

    #[test]
    fn kinds_by_tool_name() {
        assert_eq!(tool_kind("read_file"), ToolKind::Read);
        assert_eq!(tool_kind("edit_file"), ToolKind::Edit);
        assert_eq!(tool_kind("write_file"), ToolKind::Edit);
        assert_eq!(tool_kind("bash"), ToolKind::Execute);
        assert_eq!(tool_kind("Bash"), ToolKind::Execute);
        assert_eq!(tool_kind("grep"), ToolKind::Search);
        assert_eq!(tool_kind("glob"), ToolKind::Search);
        assert_eq!(tool_kind("plan"), ToolKind::Think);
        assert_eq!(tool_kind("web_fetch"), ToolKind::Fetch);
        assert_eq!(tool_kind("exit_plan_mode"), ToolKind::SwitchMode);
        assert_eq!(tool_kind("mystery"), ToolKind::Other);
    }

    #[test]
    fn text_and_thought_stream_as_chunks() {
        let mut m = TurnMapper::new(cwd(), 1000);
        let text = m.map(&AgentEvent::TextDelta {
            delta: "Hello".into(),
        });
        assert_eq!(
            wire(&text[0]),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hello"}})
        );
        let thought = m.map(&AgentEvent::ReasoningDelta {
            delta: "hmm".into(),
        });
        assert_eq!(
            wire(&thought[0]),
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}})
        );
        assert!(m
            .map(&AgentEvent::TextDelta {
                delta: String::new()
            })
            .is_empty());
        assert!(m.map(&AgentEvent::AssistantStarted).is_empty());
    }

    #[test]
    fn map_each_hands_over_what_map_returns() {
        let events = [
            AgentEvent::TextDelta {
                delta: "Hello".into(),
            },
            AgentEvent::ReasoningDelta {
                delta: "hmm".into(),
            },
            AgentEvent::TextDelta {
                delta: String::new(),
            },
            AgentEvent::AssistantStarted,
            AgentEvent::ToolExecutionStarted {
                id: "c1".into(),
                name: "read_file".into(),
            },
        ];
        let (mut a, mut b) = (TurnMapper::new(cwd(), 1000), TurnMapper::new(cwd(), 1000));
        for event in &events {
            let mut each = Vec::new();
            a.map_each(event, |update| each.push(wire(&update)));
            let all: Vec<Value> = b.map(event).iter().map(wire).collect();
            assert_eq!(each, all, "{event:?}");
        }
    }

    #[test]
    fn edit_call_has_kind_location_and_diff_through_its_life() {
        let mut m = TurnMapper::new(cwd(), 1000);
        let args = json!({"path": "src/a.rs", "old_string": "x = 1", "new_string": "x = 2"});
        let call = m.map(&AgentEvent::ToolCall {
            id: "c1".into(),
            name: "edit_file".into(),
            args: args.clone(),
            raw_args: None,
            side_effect: Some(SideEffect::Write),
        });
        let v = wire(&call[0]);
        assert_eq!(v["sessionUpdate"], "tool_call");
        assert_eq!(v["toolCallId"], "c1");
        assert_eq!(v["kind"], "edit");
        assert_eq!(v["title"], "Edit src/a.rs");
        // `pending` is the schema's default, which it leaves out.
        assert!(matches!(v.get("status"), None | Some(Value::String(_))));
        assert_ne!(v["status"], "in_progress");
        assert_eq!(v["locations"], json!([{"path": "/work/ws/src/a.rs"}]));
        assert_eq!(
            v["content"],
            json!([{"type": "diff", "path": "/work/ws/src/a.rs", "oldText": "x = 1", "newText": "x = 2"}])
        );
        assert_eq!(v["rawInput"], args);

        let started = m.map(&AgentEvent::ToolExecutionStarted {
            id: "c1".into(),
            name: "edit_file".into(),
        });
        assert_eq!(
            wire(&started[0]),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress"})
        );

        let done = m.map(&AgentEvent::ToolResult {
            id: "c1".into(),
            name: "edit_file".into(),
            status: ToolStatus::Ok,
            content: vec![ContentBlock::text("edited")],
            truncated: false,
            redacted: false,
            changed_files: vec!["src/a.rs".into()],
            duration_ms: 3,
        });
        let v = wire(&done[0]);
        assert_eq!(v["status"], "completed");
        assert_eq!(v["content"][0]["type"], "diff");
        assert_eq!(
            v["content"][1],
            json!({"type": "content", "content": {"type": "text", "text": "edited"}})
        );
    }

    #[test]
    fn failed_call_and_write_and_bash() {
        let mut m = TurnMapper::new(cwd(), 1000);
        let write = m.map(&AgentEvent::ToolCall {
            id: "w".into(),
            name: "write_file".into(),
            args: json!({"path": "/abs/new.txt", "content": "hi\n"}),
            raw_args: None,
            side_effect: Some(SideEffect::Write),
        });
        let v = wire(&write[0]);
        assert_eq!(
            v["content"],
            json!([{"type": "diff", "path": "/abs/new.txt", "newText": "hi\n"}])
        );
        let bash = m.map(&AgentEvent::ToolCall {
            id: "b".into(),
            name: "bash".into(),
            args: json!({"command": "echo hi"}),
            raw_args: None,
            side_effect: Some(SideEffect::Shell),
        });
        let v = wire(&bash[0]);
        assert_eq!(v["kind"], "execute");
        assert_eq!(v["title"], "`echo hi`");
        assert!(v.get("locations").is_none() || v["locations"] == json!([]));
        let progress = m.map(&AgentEvent::ToolProgress {
            id: "b".into(),
            stream: ProgressStream::Stdout,
            text: "hi\n".into(),
        });
        assert_eq!(wire(&progress[0])["content"][0]["content"]["text"], "hi\n");
        let failed = m.map(&AgentEvent::ToolResult {
            id: "b".into(),
            name: "bash".into(),
            status: ToolStatus::Error,
            content: vec![ContentBlock::text("Error: denied")],
            truncated: false,
            redacted: false,
            changed_files: vec![],
            duration_ms: 0,
        });
        let v = wire(&failed[0]);
        assert_eq!(v["status"], "failed");
        assert_eq!(v["content"][0]["content"]["text"], "Error: denied");
        // A failed write shows no diff.
        let failed_write = m.map(&AgentEvent::ToolResult {
            id: "w".into(),
            name: "write_file".into(),
            status: ToolStatus::Error,
            content: vec![ContentBlock::text("Error: no")],
            truncated: false,
            redacted: false,
            changed_files: vec![],
            duration_ms: 0,
        });
        assert_eq!(wire(&failed_write[0])["content"][0]["type"], "content");
    }

    #[test]
    fn invalid_args_are_passed_raw() {
        let mut m = TurnMapper::new(cwd(), 1000);
        let call = m.map(&AgentEvent::ToolCall {
            id: "x".into(),
            name: "grep".into(),
            args: Value::Null,
            raw_args: Some("{oops".into()),
            side_effect: None,
        });
        let v = wire(&call[0]);
        assert_eq!(v["rawInput"], json!({"raw": "{oops"}));
        assert_eq!(v["kind"], "search");
        assert_eq!(v["title"], "Search");
    }

    #[test]
    fn plan_and_usage() {
        let mut m = TurnMapper::new(cwd(), 128_000);
        let plan = m.map(&AgentEvent::PlanUpdated {
            id: None,
            explanation: None,
            plan: vec![
                PlanItem {
                    step: "read".into(),
                    status: PlanStatus::Completed,
                },
                PlanItem {
                    step: "write".into(),
                    status: PlanStatus::InProgress,
                },
            ],
        });
        assert_eq!(
            wire(&plan[0]),
            json!({"sessionUpdate": "plan", "entries": [
                {"content": "read", "priority": "medium", "status": "completed"},
                {"content": "write", "priority": "medium", "status": "in_progress"}
            ]})
        );
        let turn = Usage {
            input: 100,
            output: 20,
            ..Default::default()
        };
        let usage = m.map(&AgentEvent::Usage {
            turn,
            cumulative: turn,
        });
        let v = wire(&usage[0]);
        assert_eq!(v["sessionUpdate"], "usage_update");
        assert_eq!(v["used"], json!(turn.total_tokens()));
        assert_eq!(v["size"], 128_000);
    }

    #[test]
    fn stop_reasons() {
        let mut m = TurnMapper::new(cwd(), 1);
        assert!(m
            .map(&AgentEvent::TurnEnded {
                step: 1,
                stop: CoreStop::Length,
                error: None
            })
            .is_empty());
        assert_eq!(m.last_stop(), Some(CoreStop::Length));
        let end = |status, stop, error, cancel| turn_end(status, stop, error, cancel);
        assert_eq!(
            end(RunStatus::Success, Some(CoreStop::End), None, false),
            TurnEnd::Stop(StopReason::EndTurn)
        );
        assert_eq!(
            end(RunStatus::Success, Some(CoreStop::Length), None, false),
            TurnEnd::Stop(StopReason::MaxTokens)
        );
        assert_eq!(
            end(RunStatus::Success, Some(CoreStop::Refusal), None, false),
            TurnEnd::Stop(StopReason::Refusal)
        );
        assert_eq!(
            end(
                RunStatus::Error,
                Some(CoreStop::ToolUse),
                Some((ErrorCode::MaxSteps, "limit")),
                false
            ),
            TurnEnd::Stop(StopReason::MaxTurnRequests)
        );
        assert_eq!(
            end(RunStatus::Aborted, None, None, false),
            TurnEnd::Stop(StopReason::Cancelled)
        );
        // A cancel that raced the end of the run still reports cancelled.
        assert_eq!(
            end(RunStatus::Success, Some(CoreStop::End), None, true),
            TurnEnd::Stop(StopReason::Cancelled)
        );
        assert_eq!(
            end(
                RunStatus::Error,
                None,
                Some((ErrorCode::Provider, "HTTP 500")),
                false
            ),
            TurnEnd::Failed("HTTP 500".into())
        );
    }

    #[test]
    fn replay_rebuilds_the_conversation() {
        let messages = vec![
            Message::user_text("fix it"),
            Message::new(
                Role::Assistant,
                vec![
                    ContentBlock::Reasoning {
                        text: "think".into(),
                        signature: None,
                        opaque: None,
                    },
                    ContentBlock::text("Running."),
                    ContentBlock::ToolCall(agent_core::ToolCall {
                        id: "c1".into(),
                        name: "bash".into(),
                        args: json!({"command": "echo hi"}),
                    }),
                ],
            ),
            Message::new(
                Role::Tool,
                vec![ContentBlock::ToolResult {
                    call_id: "c1".into(),
                    is_error: false,
                    content: vec![ContentBlock::text("hi")],
                }],
            ),
            Message::user_text(agent_core::RECOVERY_PROMPT).synthetic(),
            Message::assistant_text("Done."),
        ];
        let updates: Vec<Value> = replay(&messages, &cwd()).iter().map(wire).collect();
        let kinds: Vec<&str> = updates
            .iter()
            .map(|u| u["sessionUpdate"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(
            kinds,
            [
                "user_message_chunk",
                "agent_thought_chunk",
                "agent_message_chunk",
                "tool_call",
                "tool_call_update",
                "agent_message_chunk"
            ]
        );
        assert_eq!(updates[0]["content"]["text"], "fix it");
        assert_eq!(updates[3]["kind"], "execute");
        assert_eq!(updates[4]["status"], "completed");
        assert_eq!(updates[4]["content"][0]["content"]["text"], "hi");
        assert_eq!(updates[5]["content"]["text"], "Done.");
    }

    #[test]
    fn permission_call_describes_the_tool() {
        let request = ApprovalRequest {
            call_id: "c9".into(),
            tool: "bash".into(),
            args: json!({"command": "rm -rf build"}),
            mode: agent_core::PermissionMode::Ask,
            side_effect: SideEffect::Shell,
            reason: None,
            risk: Default::default(),
            block: None,
        };
        let v = serde_json::to_value(permission_tool_call(&request, &cwd())).unwrap_or_default();
        assert_eq!(v["toolCallId"], "c9");
        assert_eq!(v["kind"], "execute");
        assert_eq!(v["title"], "`rm -rf build`");
        assert_eq!(v["rawInput"]["command"], "rm -rf build");
    }

    #[test]
    fn prompts_become_input() {
        let png = base64::engine::general_purpose::STANDARD.encode([1u8, 2, 3]);
        let blocks = vec![
            text_block("look at "),
            AcpBlock::ResourceLink(ResourceLink::new("a.rs", "file:///w/a.rs")),
            AcpBlock::Image(ImageContent::new(png, "image/png")),
            AcpBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn main() {}",
                    "file:///w/main.rs",
                )),
            )),
        ];
        let input = prompt_input(&blocks).unwrap_or_default();
        assert!(input.text.starts_with("look at [@a.rs](file:///w/a.rs)"));
        assert!(input
            .text
            .contains("<context ref=\"file:///w/main.rs\">\nfn main() {}\n</context>"));
        assert_eq!(input.images.len(), 1);
        assert_eq!(input.images[0].1.as_ref(), &[1u8, 2, 3]);
        assert_eq!(prompt_input(&[]), Err(PromptError::Empty));
        assert!(matches!(
            prompt_input(&[AcpBlock::Image(ImageContent::new("@@", "image/png"))]),
            Err(PromptError::Base64 { index: 0, .. })
        ));
    }
}
