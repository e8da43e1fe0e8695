//! Session requests of the ZCode app-server: create, list, resume, read, messages,
//! subscribe, events, fork, close, the settings (`setMode`, `setThoughtLevel`,
//! `setModel`), sub-agents (`subagents`, `cancelBackgroundTask`) and `mcp/list`.

use agent_core::{message::Role, ReasoningLevel};
use serde_json::Value;

use std::time::Duration;

use super::{manager_error, ok, Reply, RpcError, Server};
use crate::zcode::mapping::emit;
use crate::zcode::snapshot::{self, session_info, session_mode, wire_mode};
use crate::zcode::wire::CancelStatus;
use crate::zcode::wire::{
    codes, CancelBackgroundTaskParams, CancelBackgroundTaskResult, CloseResult, CreateParams,
    EventBody, EventsParams, EventsResult, ForkParams, ForkResult, ForkTarget, ListParams,
    ListResult, McpListParams, McpListResult, McpServerInfo, MessagesParams, MessagesResult,
    ModelErrorData, ModelRef, ReadParams, RequestId, ResumeParams, SessionParams,
    SessionUpdatedPayload, SetModeParams, SetModelParams, SetThoughtLevelParams, SubagentsParams,
    SubagentsResult, SubscribeParams, SubscribeResult,
};
use agent_host::session::{
    valid_session_id, CreateOptions, ResumeOptions, Session, SubagentStatus,
};
use agent_mcp::{McpServerConfig, McpServers};

/// Default `session/list` limit.
const DEFAULT_LIST_LIMIT: usize = 50;
/// How long a handler waits for an event it emitted to be stored and shown.
const EVENT_WAIT: Duration = Duration::from_secs(5);

/// How long `session/close` waits for a running turn to stop.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// The `mcpServers` of `session/create` / `session/resume`: ACP's list or a Claude-style
/// map; an invalid entry is an invalid-params error naming it.
fn mcp_servers(value: Option<Value>) -> Result<Vec<McpServerConfig>, RpcError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(value) => McpServers::from_value(value)
            .map(Vec::from)
            .map_err(|err| RpcError::invalid_params("mcpServers", err.to_string())),
    }
}

/// A `thoughtLevel`; an unknown one is an invalid-params error naming it.
fn thought_level(level: &str) -> Result<ReasoningLevel, RpcError> {
    let level = level.parse::<ReasoningLevel>();
    level.map_err(|e| RpcError::invalid_params("thoughtLevel", e.to_string()))
}

/// Reads a sub-agent session's transcript from the store before it is shown.
async fn synced(session: &Session) -> Result<(), RpcError> {
    session.sync_transcript().await.map_err(RpcError::internal)
}

impl Server {
    /// Whether session `id` is active here with a turn running.
    fn is_running(&self, id: &str) -> bool {
        self.manager
            .get(id)
            .is_some_and(|s| s.active_turn().is_some())
    }

    pub(super) async fn create(&self, p: CreateParams) -> Reply {
        if p.workspace.workspace_path.trim().is_empty() {
            return Err(RpcError::invalid_params(
                "workspace.workspacePath",
                "must not be empty",
            ));
        }
        if !std::path::Path::new(&p.workspace.workspace_path).is_dir() {
            return Err(RpcError::invalid_params(
                "workspace.workspacePath",
                format!("not a directory: {}", p.workspace.workspace_path),
            ));
        }
        let thought_level = p.thought_level.as_deref().map(thought_level).transpose()?;
        let model = match p.model {
            Some(m) => Some(self.check_model(&m, &self.starting_model()).await?),
            None => None,
        };
        let mcp_servers = mcp_servers(p.mcp_servers)?;
        // The snapshot offers the provider's models: listed (the first time) while the
        // session is made.
        self.models.prefetch(self.manager.factory());
        let session = self
            .manager
            .create(CreateOptions {
                workspace_path: p.workspace.workspace_path,
                workspace_key: Some(p.workspace.workspace_key),
                mode: p.mode.map(session_mode),
                model,
                thought_level,
                parent_session_id: p.parent_session_id,
                tool_allowlist: p.tool_allowlist,
                tool_denylist: p.tool_denylist.unwrap_or_default(),
                mcp_servers,
            })
            .await
            .map_err(manager_error)?;
        let log = self.logs.get(session.id());
        tracing::info!(session = %session.id(), "session created");
        self.list_models().await;
        ok(self.snapshot(&session, &log, None))
    }

    /// The id of `model` when a session on model `current` may use it: our provider's, and
    /// one of the models offered ([`ModelList::offered`](agent_host::session::ModelList::offered):
    /// the provider's list, listed now the first time, and `current`). Anything else is the
    /// protocol's model error (`Model not found: provider/model`, -32603, `model_not_found`).
    pub(super) async fn check_model(
        &self,
        model: &ModelRef,
        current: &str,
    ) -> Result<String, RpcError> {
        let not_found = || {
            RpcError::new(
                codes::INTERNAL_ERROR,
                format!("Model not found: {}/{}", model.provider_id, model.model_id),
            )
            .with_data(ModelErrorData {
                name: "ModelProtocolError",
                code: "model_not_found",
            })
        };
        let ours = self.manager.factory().provider_id().to_string();
        if model.provider_id != ours || model.model_id.trim().is_empty() {
            return Err(not_found());
        }
        self.list_models().await;
        if !self.models.offered(current).contains(&model.model_id) {
            return Err(not_found());
        }
        Ok(model.model_id.clone())
    }

    /// The model a new session starts on when it names none (the configured one, else the
    /// provider's first).
    fn starting_model(&self) -> String {
        let factory = self.manager.factory();
        match factory.provider() {
            Ok(provider) => factory.default_model(provider.as_ref()),
            Err(_) => factory.configured_model().unwrap_or_default().to_string(),
        }
    }

    pub(super) async fn list(&self, p: ListParams) -> Reply {
        let metas = self.manager.list().await.map_err(RpcError::internal)?;
        let sessions = metas
            .iter()
            .filter(|m| {
                p.workspace.as_ref().is_none_or(|w| {
                    (!w.workspace_key.is_empty() && w.workspace_key == m.workspace_key)
                        || w.workspace_path == m.workspace_path
                })
            })
            .filter(|m| {
                p.session_ids
                    .as_ref()
                    .is_none_or(|ids| ids.contains(&m.session_id))
            })
            .take(p.limit.unwrap_or(DEFAULT_LIST_LIMIT))
            .map(|m| session_info(m, self.is_running(&m.session_id)))
            .collect();
        ok(ListResult { sessions })
    }

    pub(super) async fn resume(&self, p: ResumeParams) -> Reply {
        if !valid_session_id(&p.session_id) {
            return Err(RpcError::not_found(&p.session_id));
        }
        let options = ResumeOptions {
            mcp_servers: mcp_servers(p.mcp_servers)?,
        };
        let (session, loaded) = self
            .manager
            .resume_with(&p.session_id, options)
            .await
            .map_err(manager_error)?;
        if loaded {
            if let Some(level) = p.thought_level {
                let level = thought_level(&level)?;
                session
                    .set_thought_level(level)
                    .await
                    .map_err(RpcError::internal)?;
            }
            tracing::info!(session = %session.id(), "session resumed");
        }
        let (session, log) = match loaded {
            true => (session.clone(), self.logs.open(session.id()).await?),
            // Active here already: brought up to date if another node changed it.
            false => {
                self.logs.open(session.id()).await?;
                self.current(session.id()).await?
            }
        };
        self.list_models().await;
        ok(self.snapshot(&session, &log, None))
    }

    pub(super) async fn read(&self, p: ReadParams) -> Reply {
        let (session, log) = self.current(&p.session_id).await?;
        synced(&session).await?;
        ok(self.snapshot(&session, &log, p.message_limit))
    }

    pub(super) async fn messages(&self, p: MessagesParams) -> Reply {
        let (session, _) = self.current(&p.session_id).await?;
        synced(&session).await?;
        let mut messages = snapshot::messages(&session, &session.view());
        if let Some(after) = &p.after_message_id {
            if let Some(pos) = messages.iter().position(|m| m.message_id() == after) {
                messages.drain(..=pos);
            }
        }
        if let Some(limit) = p.limit {
            messages.drain(..messages.len().saturating_sub(limit));
        }
        ok(MessagesResult { messages })
    }

    pub(super) async fn subscribe(&self, id: Option<RequestId>, p: SubscribeParams) {
        // The client subscribes again: nothing carried over to push first.
        let (session, log) = match self.current_with(&p.session_id, false).await {
            Ok(parts) => parts,
            Err(err) => return self.out.reply(id, Err(err)),
        };
        let pending = self.pending_of(session.id());
        let reply_id = id.clone();
        // The reply is queued under the log's lock, so it precedes every pushed event. A
        // replay from before what is retained (or beyond the log) gets the gap form: no
        // events, the snapshot and the current eventSeq, from which the client resyncs.
        let subscribed = log
            .subscribe(p.after_seq, |replay| {
                let snapshot = (p.include_snapshot || replay.gap).then(|| {
                    Box::new(snapshot::snapshot(
                        &session,
                        replay.event_seq,
                        &pending,
                        None,
                    ))
                });
                let events = match replay.gap {
                    true => Vec::new(),
                    false => replay.events.into_iter().map(|e| e.event).collect(),
                };
                self.out.reply(
                    reply_id,
                    ok(SubscribeResult {
                        session_id: p.session_id.clone(),
                        event_seq: replay.event_seq,
                        events,
                        snapshot,
                    }),
                );
            })
            .await;
        if let Err(err) = subscribed {
            self.out.reply(
                id,
                Err(RpcError::internal(format!(
                    "cannot read the event log: {err}"
                ))),
            );
        }
    }

    /// `session/events`: the events after `afterSeq`. From before what is retained, the
    /// retained ones (their first seq shows the gap; `session/subscribe` answers it with a
    /// snapshot).
    pub(super) async fn events(&self, p: EventsParams) -> Reply {
        let (_, log) = self.current(&p.session_id).await?;
        let replay = log
            .events_after(p.after_seq.unwrap_or(0), p.limit.unwrap_or(usize::MAX))
            .await
            .map_err(|err| RpcError::internal(format!("cannot read the event log: {err}")))?;
        ok(EventsResult {
            events: replay.events.into_iter().map(|e| e.event).collect(),
        })
    }

    pub(super) async fn fork(&self, p: ForkParams) -> Reply {
        let (parent, _) = self.current(&p.session_id).await?;
        if let Some(active) = parent.active_turn() {
            return Err(RpcError::running(format!(
                "prompt is running: cannot fork session {} during turn {}",
                parent.id(),
                active.turn_id
            )));
        }
        let mut messages = parent.messages();
        match p.target.unwrap_or(ForkTarget::LatestCheckpoint) {
            ForkTarget::LatestCheckpoint => {}
            ForkTarget::Turn { turn_index } => {
                // Where each turn starts: its user's (not a synthetic) message.
                let starts: Vec<usize> = (0..messages.len())
                    .filter(|&i| messages[i].role == Role::User && !messages[i].synthetic)
                    .collect();
                if turn_index >= starts.len() {
                    return Err(RpcError::invalid_params(
                        "target.turnIndex",
                        format!("out of range: the session has {} turns", starts.len()),
                    ));
                }
                if let Some(&cut) = starts.get(turn_index + 1) {
                    messages.truncate(cut);
                }
            }
            ForkTarget::Checkpoint { checkpoint_id } => {
                // Everything before the assistant message that made the call.
                let made = |m: &agent_core::Message| {
                    m.content.iter().any(|b| {
                        matches!(b, agent_core::message::ContentBlock::ToolCall(c) if c.id == checkpoint_id)
                    })
                };
                let Some(index) = messages.iter().position(made) else {
                    return Err(RpcError::invalid_params(
                        "target.checkpointId",
                        format!("unknown checkpoint {checkpoint_id}"),
                    ));
                };
                messages.truncate(index);
            }
            ForkTarget::Message { message_id } => {
                let Some(index) = snapshot::message_index(&messages, &message_id) else {
                    return Err(RpcError::invalid_params(
                        "target.messageId",
                        format!("unknown message {message_id}"),
                    ));
                };
                // Keep the tool results of a kept tool-calling message.
                let mut end = index + 1;
                while messages.get(end).is_some_and(|m| m.role == Role::Tool) {
                    end += 1;
                }
                messages.truncate(end);
            }
        }
        let target_message_id = messages
            .iter()
            .enumerate()
            .rev()
            .find(|(_, m)| m.role != Role::Tool)
            .map(|(i, m)| snapshot::message_id(i, m));
        let forked = self
            .manager
            .fork(&parent, messages)
            .await
            .map_err(manager_error)?;
        let log = self.logs.get(forked.id());
        ok(ForkResult {
            forked_session_id: forked.id().to_string(),
            parent_session_id: parent.id().to_string(),
            target_message_id,
            response: format!("Forked session {} into {}.", parent.id(), forked.id()),
            snapshot: Box::new(self.snapshot(&forked, &log, None)),
        })
    }

    pub(super) async fn set_mode(&self, p: SetModeParams) -> Reply {
        let (session, log) = self.active(&p.session_id)?;
        let mode = session_mode(p.mode);
        session.set_mode(mode).await.map_err(RpcError::internal)?;
        let seq = emit(
            &log,
            session.id(),
            None,
            EventBody::SessionUpdated(SessionUpdatedPayload {
                mode: Some(wire_mode(mode)),
                ..Default::default()
            }),
        );
        // The event is pushed (once stored) before the reply, whose snapshot counts it.
        log.wait_shown(seq, EVENT_WAIT).await;
        ok(self.snapshot(&session, &log, Some(0)))
    }

    pub(super) async fn set_thought_level(&self, p: SetThoughtLevelParams) -> Reply {
        let (session, log) = self.active(&p.session_id)?;
        let level = match p.thought_level {
            Some(level) => thought_level(&level)?,
            None => ReasoningLevel::default(),
        };
        session
            .set_thought_level(level)
            .await
            .map_err(RpcError::internal)?;
        ok(self.snapshot(&session, &log, Some(0)))
    }

    pub(super) async fn set_model(&self, p: SetModelParams) -> Reply {
        let (session, log) = self.active(&p.session_id)?;
        let model = self.check_model(&p.model, &session.meta().model).await?;
        session.set_model(model).await.map_err(RpcError::internal)?;
        ok(self.snapshot(&session, &log, Some(0)))
    }

    pub(super) async fn cancel_background_task(&self, p: CancelBackgroundTaskParams) -> Reply {
        let (session, log) = self.active(&p.session_id)?;
        let (cancelled, status, reason) = match session.background_tasks().stop(&p.task_id) {
            Some(true) => {
                // Its end is reported by the run; wait (bounded) so the answer tells it.
                if let Some(child) = session.subagent(&p.task_id) {
                    child.wait_idle(CLOSE_WAIT).await;
                }
                (
                    true,
                    CancelStatus::Cancelled,
                    format!("background task {} stopped", p.task_id),
                )
            }
            Some(false) => (
                false,
                match session.subagent(&p.task_id).and_then(|c| c.meta().subagent) {
                    Some(sub) if sub.status == SubagentStatus::Failed => CancelStatus::Failed,
                    Some(sub) if sub.status == SubagentStatus::Cancelled => CancelStatus::Cancelled,
                    _ => CancelStatus::Completed,
                },
                format!("background task {} had already finished", p.task_id),
            ),
            None => (
                false,
                CancelStatus::NotFound,
                format!("no background task {}", p.task_id),
            ),
        };
        ok(CancelBackgroundTaskResult {
            cancelled,
            reason,
            snapshot: Some(Box::new(self.snapshot(&session, &log, Some(0)))),
            status,
            task_id: p.task_id,
        })
    }

    pub(super) async fn subagents(&self, p: SubagentsParams) -> Reply {
        let (session, _) = self.active(&p.session_id)?;
        let metas = self
            .manager
            .subagents(session.id())
            .await
            .map_err(RpcError::internal)?;
        let subagents = metas
            .iter()
            .filter_map(|m| snapshot::subagent_entry(m, self.is_running(&m.session_id)))
            .collect();
        ok(SubagentsResult {
            session_id: p.session_id,
            subagents,
        })
    }

    pub(super) async fn close(&self, p: SessionParams) -> Reply {
        if let Some(session) = self.manager.get(&p.session_id) {
            if session.is_subagent() {
                return Err(RpcError::invalid_params(
                    "sessionId",
                    format!(
                        "session {} is a sub-agent's; it ends with its parent",
                        p.session_id
                    ),
                ));
            }
            self.cancel_interactions(session.id());
        }
        let closed = self
            .manager
            .close(&p.session_id, CLOSE_WAIT)
            .await
            .is_some();
        ok(CloseResult {
            session_id: p.session_id,
            closed,
        })
    }

    pub(super) fn mcp_list(&self, p: McpListParams) -> Reply {
        let sessions = match &p.session_id {
            Some(id) => vec![self.active(id)?.0],
            None => {
                let mut all = self.manager.active();
                all.retain(|s| !s.is_subagent());
                all.sort_by(|a, b| a.id().cmp(b.id()));
                all
            }
        };
        let servers = sessions
            .iter()
            .flat_map(|session| {
                session
                    .mcp()
                    .status()
                    .into_iter()
                    .map(|server| McpServerInfo {
                        session_id: session.id().to_string(),
                        server,
                    })
            })
            .collect();
        ok(McpListResult { servers })
    }
}
