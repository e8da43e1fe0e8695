//! Views of a session in ZCode shapes: session info, settings, projection, snapshot, and
//! the transcript as `MessageWithParts`.

use std::collections::HashMap;

use agent_core::{
    compaction::COMPACTION_PREFIX, event::RunKind, message::Role, ContentBlock, Message,
    ReasoningLevel,
};
use serde_json::Value;

use crate::zcode::mapping::{result_text, subagent_status, todos, tool_meta, wire_usage};
use crate::zcode::wire::{
    ActiveToolCall, AssistantMessageInfo, BackgroundJob, ContextUsageInfo, Current, LevelOption,
    MessageInfo, MessagePath, MessageTime, MessageTokens, MessageWithParts, ModelOption,
    ModelProperties, ModelRef, ModelSetting, Part, PartBody, PermissionSetting, Projection,
    ProtocolInfo, RuntimeInfo, SessionInfo, Settings, Snapshot, SubagentEntry, ThoughtLevelSetting,
    ToolState, UserMessageInfo, WireMode, WireStatus, WorkspaceRef, PROTOCOL_NAME,
    PROTOCOL_VERSION,
};
use crate::zcode::wire::{
    ActiveToolStatus, FinishReason, JobKind, SessionKind, TaskStatus, TitleSource, TurnKind,
};
use agent_host::session::{Session, SessionMeta, SessionMode, SessionView, ToolCallStatus};

/// Session mode → wire mode.
pub fn wire_mode(mode: SessionMode) -> WireMode {
    match mode {
        SessionMode::Plan => WireMode::Plan,
        SessionMode::Build => WireMode::Build,
        SessionMode::Edit => WireMode::Edit,
        SessionMode::Yolo => WireMode::Yolo,
        SessionMode::Auto => WireMode::Auto,
    }
}

/// Wire mode → session mode.
pub fn session_mode(mode: WireMode) -> SessionMode {
    match mode {
        WireMode::Plan => SessionMode::Plan,
        WireMode::Build => SessionMode::Build,
        WireMode::Edit => SessionMode::Edit,
        WireMode::Yolo => SessionMode::Yolo,
        WireMode::Auto => SessionMode::Auto,
    }
}

fn wire_status(running: bool) -> WireStatus {
    match running {
        true => WireStatus::Running,
        false => WireStatus::Idle,
    }
}

/// The model of a session.
pub fn model_ref(meta: &SessionMeta) -> ModelRef {
    ModelRef {
        provider_id: meta.provider_id.clone(),
        model_id: meta.model.clone(),
    }
}

/// `ZCodeSessionInfo` of a session.
pub fn session_info(meta: &SessionMeta, running: bool) -> SessionInfo {
    SessionInfo {
        session_id: meta.session_id.clone(),
        workspace: WorkspaceRef {
            workspace_path: meta.workspace_path.clone(),
            workspace_key: meta.workspace_key.clone(),
        },
        parent_session_id: meta.parent_session_id.clone(),
        trace_id: meta.trace_id.clone(),
        session_kind: match (&meta.subagent, &meta.parent_session_id) {
            (Some(_), _) => SessionKind::Subagent,
            (None, Some(_)) => SessionKind::Fork,
            (None, None) => SessionKind::Interactive,
        },
        title: meta.title.clone(),
        title_source: match meta.title_from_input {
            true => TitleSource::FirstInput,
            false => TitleSource::Default,
        },
        mode: wire_mode(meta.mode),
        status: wire_status(running),
        model: model_ref(meta),
        created_at: meta.created_at,
        updated_at: meta.updated_at,
    }
}

/// Offers the provider's models (`listed`, when it lists them: `GET /models`) in
/// `snapshot`'s settings, the current model first when the list lacks it; with an empty
/// list the settings keep the catalogue's.
pub fn offer_models(snapshot: &mut Snapshot, listed: &[agent_core::provider::ModelInfo]) {
    if listed.is_empty() {
        return;
    }
    let setting = &mut snapshot.settings.model;
    let known = |n: u32| Some(u64::from(n)).filter(|n| *n > 0);
    let mut available: Vec<ModelOption> = listed
        .iter()
        .map(|m| ModelOption {
            model_ref: ModelRef {
                provider_id: setting.current.provider_id.clone(),
                model_id: m.id.clone(),
            },
            label: m.id.clone(),
            context_window: known(m.context_window),
            max_output_tokens: known(m.max_output),
            properties: ModelProperties {
                input_format: vec!["text"],
                output_format: vec!["text"],
            },
        })
        .collect();
    let current = &setting.current.model_id;
    if !available.iter().any(|m| &m.model_ref.model_id == current) {
        if let Some(own) = setting
            .available
            .iter()
            .find(|m| &m.model_ref.model_id == current)
        {
            available.insert(0, own.clone());
        }
    }
    setting.available = available;
}

fn settings(session: &Session, view: &SessionView) -> Settings {
    let meta = &view.meta;
    let option = |model_id: String, context_window, max_output_tokens| ModelOption {
        model_ref: ModelRef {
            provider_id: meta.provider_id.clone(),
            model_id: model_id.clone(),
        },
        label: model_id,
        context_window,
        max_output_tokens,
        properties: ModelProperties {
            input_format: vec!["text"],
            output_format: vec!["text"],
        },
    };
    let known = |n: u32| Some(u64::from(n)).filter(|n| *n > 0);
    let provider = session.agent().provider();
    let mut available: Vec<ModelOption> = (provider.models().into_iter())
        .map(|m| option(m.id, known(m.context_window), known(m.max_output)))
        .collect();
    if !available.iter().any(|m| m.model_ref.model_id == meta.model) {
        let current = option(meta.model.clone(), Some(view.context_window), None);
        available.insert(0, current);
    }
    Settings {
        model: ModelSetting {
            current: model_ref(meta),
            available,
        },
        thought_level: ThoughtLevelSetting {
            enabled: true,
            current: meta.thought_level.as_str().to_string(),
            default_level: ReasoningLevel::default().as_str().to_string(),
            available: ReasoningLevel::ALL
                .iter()
                .map(|l| LevelOption {
                    value: l.as_str().to_string(),
                    label: l.as_str().to_string(),
                })
                .collect(),
        },
        mode: Current {
            current: wire_mode(meta.mode),
        },
        permission: PermissionSetting {
            mode: meta.mode.permission_mode().into(),
        },
    }
}

/// A sub-agent's session as `session/subagents` lists it (`None` for a session that is no
/// sub-agent's).
pub fn subagent_entry(meta: &SessionMeta, running: bool) -> Option<SubagentEntry> {
    let sub = meta.subagent.as_ref()?;
    Some(SubagentEntry {
        session: session_info(meta, running),
        agent_type: sub.name.clone(),
        description: sub.description.clone(),
        tool_call_id: sub.call_id.clone(),
        background: sub.background,
        status: sub.status.into(),
        final_text: sub.final_text.clone(),
        error: sub.error.clone(),
        usage: wire_usage(&meta.usage, None),
        duration_ms: sub.duration_ms,
    })
}

fn background_jobs(session: &Session) -> Vec<BackgroundJob> {
    session
        .background_tasks()
        .list()
        .iter()
        .map(|child| {
            let info = child.info();
            BackgroundJob {
                task_id: info.task_id.clone(),
                kind: JobKind::Subagent,
                agent_type: info.name.clone(),
                description: info.description.clone(),
                tool_call_id: info.call_id.clone(),
                status: (child.snapshot().status).map_or(TaskStatus::Running, subagent_status),
            }
        })
        .collect()
}

/// The full snapshot of a session. `event_seq` is the session log's high-water mark and
/// `pending` the ids of its unanswered interaction requests (`(request id, server id)`).
pub fn snapshot(
    session: &Session,
    event_seq: u64,
    pending: &[(String, String)],
    message_limit: Option<usize>,
) -> Snapshot {
    let view = session.view();
    let meta = &view.meta;
    let running = view.active.is_some();
    let mut messages = messages(session, &view);
    if let Some(limit) = message_limit {
        messages.drain(..messages.len().saturating_sub(limit));
    }
    let mut active_tool_calls: Vec<ActiveToolCall> = view
        .active_tools
        .iter()
        .map(|(id, state)| ActiveToolCall {
            tool_call_id: id.clone(),
            tool_name: state.name.clone(),
            status: match state.status {
                ToolCallStatus::Running => ActiveToolStatus::Running,
                _ => ActiveToolStatus::Pending,
            },
            started_at: state.started_at,
        })
        .collect();
    active_tool_calls.sort_by(|a, b| a.tool_call_id.cmp(&b.tool_call_id));
    Snapshot {
        protocol: ProtocolInfo {
            name: PROTOCOL_NAME,
            version: PROTOCOL_VERSION,
        },
        session: session_info(meta, running),
        settings: settings(session, &view),
        projection: Projection {
            session_id: meta.session_id.clone(),
            status: wire_status(running),
            mode: wire_mode(meta.mode),
            turn_count: meta.turn_count,
            total_token_count: meta.usage.total_tokens(),
            context_used: view.context_used,
            context_window: view.context_window,
            current_turn_id: view.active.as_ref().map(|a| a.turn_id.clone()),
            pending_permissions: pending.iter().map(|(r, _)| r.clone()).collect(),
            active_tool_calls,
            background_jobs: background_jobs(session),
            last_error: meta.last_error.clone(),
        },
        runtime: RuntimeInfo {
            event_seq,
            state_revision: view.revision,
            active_turn_id: view.active.as_ref().map(|a| a.turn_id.clone()),
            active_turn_kind: view.active.as_ref().map(|a| match a.kind {
                RunKind::Prompt => TurnKind::Agent,
                RunKind::Compact => TurnKind::Compact,
            }),
            pending_request_ids: pending.iter().map(|(_, s)| s.clone()).collect(),
            context_usage: ContextUsageInfo::new(view.context_used, view.context_window),
        },
        messages,
        todos: todos(&meta.todos),
        // The handlers fill in the workspace's commands.
        slash_commands: Vec::new(),
    }
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// The id of transcript message `index`: `msg_<base36 ms>_<index>`, stable while the
/// transcript only grows.
pub fn message_id(index: usize, message: &Message) -> String {
    let ms = u64::try_from(message.time.timestamp_millis()).unwrap_or(0);
    format!("msg_{}_{index:05}", base36(ms))
}

/// Index of the transcript message with ZCode id `id`.
pub fn message_index(messages: &[Message], id: &str) -> Option<usize> {
    (0..messages.len()).find(|&i| message_id(i, &messages[i]) == id)
}

struct ToolOutcome {
    is_error: bool,
    text: String,
    time: i64,
}

/// The transcript as ZCode messages: user and assistant messages; tool results are folded
/// into the assistant's tool parts as their state.
pub fn messages(session: &Session, view: &SessionView) -> Vec<MessageWithParts> {
    let transcript = session.messages();
    let meta = &view.meta;
    let mut results: HashMap<&str, ToolOutcome> = HashMap::new();
    for message in transcript.iter().filter(|m| m.role == Role::Tool) {
        let time = message.time.timestamp_millis();
        for block in &message.content {
            if let ContentBlock::ToolResult {
                call_id,
                is_error,
                content,
            } = block
            {
                let (is_error, text) = (*is_error, result_text(content));
                results.insert(
                    call_id,
                    ToolOutcome {
                        is_error,
                        text,
                        time,
                    },
                );
            }
        }
    }
    let agent_name = meta.mode.as_str().to_string();
    let mut out = Vec::new();
    let mut parent = String::new();
    for (index, message) in transcript.iter().enumerate() {
        let id = message_id(index, message);
        let created = message.time.timestamp_millis();
        let mut parts = Vec::new();
        let part = |n: usize, body: PartBody| Part {
            part_id: format!("part_{}_{n:03}", &id[4..]),
            session_id: meta.session_id.clone(),
            message_id: id.clone(),
            body,
        };
        match message.role {
            Role::Tool => continue,
            Role::User => {
                if message.synthetic && message.text().starts_with(COMPACTION_PREFIX) {
                    let auto = meta.last_compaction_auto.unwrap_or(false);
                    parts.push(part(parts.len(), PartBody::Compaction { auto }));
                }
                for block in &message.content {
                    if let ContentBlock::Text { text } = block {
                        parts.push(part(parts.len(), PartBody::Text { text: text.clone() }));
                    }
                }
                parent = id.clone();
                out.push(MessageWithParts {
                    info: MessageInfo::User(UserMessageInfo {
                        message_id: id.clone(),
                        session_id: meta.session_id.clone(),
                        time: MessageTime {
                            created,
                            completed: None,
                        },
                        agent: agent_name.clone(),
                        synthetic: message.synthetic,
                    }),
                    parts,
                });
            }
            Role::Assistant => {
                let mut has_calls = false;
                for block in &message.content {
                    let body = match block {
                        ContentBlock::Text { text } => PartBody::Text { text: text.clone() },
                        ContentBlock::Reasoning { text, .. } => {
                            PartBody::Reasoning { text: text.clone() }
                        }
                        ContentBlock::ToolCall(call) => {
                            has_calls = true;
                            PartBody::Tool {
                                call_id: call.id.clone(),
                                tool: call.name.clone(),
                                state: tool_state(session, &call.id, &call.args, &results, created),
                            }
                        }
                        _ => continue,
                    };
                    parts.push(part(parts.len(), body));
                }
                out.push(MessageWithParts {
                    info: MessageInfo::Assistant(AssistantMessageInfo {
                        message_id: id.clone(),
                        session_id: meta.session_id.clone(),
                        time: MessageTime {
                            created,
                            completed: Some(created),
                        },
                        parent_message_id: parent.clone(),
                        agent: agent_name.clone(),
                        model: model_ref(meta),
                        path: MessagePath {
                            cwd: meta.workspace_path.clone(),
                            root: meta.workspace_path.clone(),
                        },
                        cost: 0.0,
                        tokens: MessageTokens::default(),
                        finish: Some(match has_calls {
                            true => FinishReason::ToolCalls,
                            false => FinishReason::Stop,
                        }),
                    }),
                    parts,
                });
            }
        }
    }
    out
}

fn tool_state(
    session: &Session,
    call_id: &str,
    args: &Value,
    results: &HashMap<&str, ToolOutcome>,
    created: i64,
) -> ToolState {
    let known = session.tool_call(call_id);
    let started_at = known.as_ref().and_then(|k| k.started_at);
    let meta = tool_meta(known.as_ref());
    let metadata = (!meta.is_empty())
        .then(|| serde_json::to_value(&meta).ok())
        .flatten();
    match results.get(call_id) {
        Some(outcome) => {
            let completed_at = known
                .as_ref()
                .and_then(|k| k.completed_at)
                .unwrap_or(outcome.time);
            let started_at = started_at.unwrap_or(created);
            match outcome.is_error {
                false => ToolState::Completed {
                    input: args.clone(),
                    output: outcome.text.clone(),
                    title: String::new(),
                    metadata: metadata.unwrap_or_else(|| Value::Object(Default::default())),
                    started_at,
                    completed_at,
                },
                true => ToolState::Error {
                    input: args.clone(),
                    error: outcome.text.clone(),
                    metadata,
                    started_at,
                    completed_at,
                },
            }
        }
        None => match (known.map(|k| k.status), started_at) {
            (Some(ToolCallStatus::Running), Some(started_at)) => ToolState::Running {
                input: args.clone(),
                started_at,
            },
            _ => ToolState::Pending {
                input: args.clone(),
                raw: args.to_string(),
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base36_matches_known_values() {
        assert_eq!(base36(0), "0");
        assert_eq!(base36(35), "z");
        assert_eq!(base36(36), "10");
    }
}
