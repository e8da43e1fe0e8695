//! [`Session`]: one live session — its [`Agent`], its persisted metadata, what it knows
//! about the running turn, its MCP servers and background tasks, and the sub-agent sessions
//! its runs started. Turns are started and driven in [`turn`](super::turn).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use agent_core::{
    hooks::{HookReport, SessionEnd, SessionEndReason},
    sandbox::SandboxReport,
    session::{SessionError, SessionRecord},
    Agent, Message, ReasoningLevel, RunStatus,
};
use agent_mcp::McpManager;
use agent_specialists::BackgroundTasks;
use tokio::sync::watch;

use super::interaction::InteractionLink;
use super::storage::SessionStorage;
use super::types::{
    now_ms, ActiveTurn, SessionMeta, SessionMode, SubagentStatus, ToolCallState, ToolCallStatus,
};

/// The sessions of a process by id: those created or resumed, and the live sub-agent
/// sessions of their runs.
pub(super) type Registry = Mutex<HashMap<String, Arc<Session>>>;

pub(super) fn lock_registry(registry: &Registry) -> MutexGuard<'_, HashMap<String, Arc<Session>>> {
    registry.lock().unwrap_or_else(|e| e.into_inner())
}

/// A session's mutable state, under one lock.
pub(super) struct Data {
    pub(super) meta: SessionMeta,
    pub(super) active: Option<ActiveTurn>,
    pub(super) revision: u64,
    pub(super) tool_calls: HashMap<String, ToolCallState>,
    /// Sub-agent sessions started by this session's runs in this process, oldest first.
    pub(super) children: Vec<Arc<Session>>,
    /// The last sandbox report of the agent.
    pub(super) sandbox: Option<SandboxReport>,
    /// How the last run ended.
    pub(super) last_status: Option<RunStatus>,
    /// Model calls (steps) of the last run: the `session_end` hooks' `turns`.
    pub(super) last_steps: u32,
    /// The context window the last `ContextUsage` event reported.
    pub(super) context_window: Option<u64>,
    /// Why the running compaction started.
    pub(super) compacting: Option<agent_core::event::CompactionReason>,
    /// Turns waiting to start, oldest first ([`Session::enqueue_prompt`]).
    pub(super) queue: std::collections::VecDeque<super::queue::Queued>,
    /// Queued turns wait for [`Session::begin`] (a standalone session's `session_start`
    /// hooks) while this is set.
    pub(super) held: bool,
    /// An abort of the running turn was asked for ([`Session::stop`]).
    pub(super) turn_aborted: bool,
    /// The running turn's run reported its end (`RunFinished`): it is winding down.
    pub(super) turn_ended: bool,
}

/// A point-in-time view of a session.
#[derive(Debug, Clone)]
pub struct SessionView {
    /// Persisted metadata.
    pub meta: SessionMeta,
    /// The running turn (for a sub-agent's session: its run, while it goes on).
    pub active: Option<ActiveTurn>,
    /// State revision (bumped by every change).
    pub revision: u64,
    /// Context window of the current model (the `--context-window` override, else the
    /// model catalogue's).
    pub context_window: u64,
    /// Tokens in the context now ([`Agent::context_usage`]; for a sub-agent's session,
    /// what its last model call reported).
    pub context_used: u64,
    /// Tool calls of the running turn that have not finished, in no particular order.
    pub active_tools: Vec<(String, ToolCallState)>,
    /// The last sandbox report, once the agent ran a prompt that confines commands.
    pub sandbox: Option<SandboxReport>,
}

/// What a sub-agent's session has of its own: the parent, and the transcript as the child
/// recorded it to the store (read again on [`Session::sync_transcript`]).
struct ChildLink {
    parent: Weak<Session>,
    transcript: Mutex<Vec<Message>>,
}

/// What a session is made of (built by the manager).
pub(super) struct Parts {
    pub(super) agent: Agent,
    pub(super) store: Arc<dyn SessionStorage>,
    pub(super) meta: SessionMeta,
    pub(super) turn: Arc<Mutex<Option<String>>>,
    pub(super) link: InteractionLink,
    pub(super) mcp: McpManager,
    pub(super) tasks: BackgroundTasks,
    pub(super) registry: Weak<Registry>,
}

/// One live session.
pub struct Session {
    id: String,
    pub(super) agent: Agent,
    pub(super) store: Arc<dyn SessionStorage>,
    data: Mutex<Data>,
    /// Orders turn start/finish against each other and against observers.
    gate: Mutex<()>,
    pub(super) idle: watch::Sender<bool>,
    persist: tokio::sync::Mutex<()>,
    turn: Arc<Mutex<Option<String>>>,
    link: InteractionLink,
    mcp: McpManager,
    tasks: BackgroundTasks,
    pub(super) registry: Weak<Registry>,
    child: Option<ChildLink>,
    closed: AtomicBool,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("id", &self.id).finish()
    }
}

impl Session {
    /// A session made of `parts`; `parts.turn` is the running turn's id as `parts.link`
    /// reports it.
    pub(super) fn new(parts: Parts) -> Self {
        Self::with_child(parts, None)
    }

    /// The session of a sub-agent of `parent`'s run, whose own run the parent drives.
    pub(super) fn new_child(parts: Parts, parent: &Arc<Session>) -> Self {
        Self::with_child(
            parts,
            Some(ChildLink {
                parent: Arc::downgrade(parent),
                transcript: Mutex::new(Vec::new()),
            }),
        )
    }

    fn with_child(parts: Parts, child: Option<ChildLink>) -> Self {
        let (idle, _) = watch::channel(true);
        Self {
            id: parts.meta.session_id.clone(),
            agent: parts.agent,
            store: parts.store,
            data: Mutex::new(Data {
                meta: parts.meta,
                active: None,
                revision: 1,
                tool_calls: HashMap::new(),
                children: Vec::new(),
                sandbox: None,
                last_status: None,
                last_steps: 0,
                context_window: None,
                compacting: None,
                queue: std::collections::VecDeque::new(),
                held: false,
                turn_aborted: false,
                turn_ended: false,
            }),
            gate: Mutex::new(()),
            idle,
            persist: tokio::sync::Mutex::new(()),
            turn: parts.turn,
            link: parts.link,
            mcp: parts.mcp,
            tasks: parts.tasks,
            registry: parts.registry,
            child,
            closed: AtomicBool::new(false),
        }
    }

    pub(super) fn data(&self) -> MutexGuard<'_, Data> {
        // Nothing panics while holding the lock; recover the data if that ever changes.
        self.data.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn gate(&self) -> MutexGuard<'_, ()> {
        self.gate.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn set_turn(&self, turn: Option<String>) {
        *self.turn.lock().unwrap_or_else(|e| e.into_inner()) = turn;
    }

    /// Session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The agent. For a sub-agent's session this is a stand-in with the child's model
    /// (the child's own agent lives in its parent's run): use [`Session::messages`] for
    /// its transcript.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// The link tools of this session use to ask the client.
    pub fn interaction_link(&self) -> &InteractionLink {
        &self.link
    }

    /// The session's MCP servers (the capabilities' and its own): `status()` for a
    /// listing (ZCode's `mcp/list`), `tool_info(name)` for what an MCP tool is. Empty
    /// when none is configured.
    pub fn mcp(&self) -> &McpManager {
        &self.mcp
    }

    /// The background tasks of the session's `Task` tools (list, get, stop).
    pub fn background_tasks(&self) -> &BackgroundTasks {
        &self.tasks
    }

    /// Whether this is the live session of a sub-agent started by another session's run
    /// in this process (it takes no prompts of its own).
    pub fn is_subagent(&self) -> bool {
        self.child.is_some()
    }

    /// The session whose run started this sub-agent's session, while it is live.
    pub fn parent(&self) -> Option<Arc<Session>> {
        self.child.as_ref().and_then(|c| c.parent.upgrade())
    }

    /// The sub-agent sessions this session's runs started in this process, oldest first.
    pub fn subagents(&self) -> Vec<Arc<Session>> {
        self.data().children.clone()
    }

    /// The sub-agent session `task_id` of this session.
    pub fn subagent(&self, task_id: &str) -> Option<Arc<Session>> {
        self.data()
            .children
            .iter()
            .find(|c| c.id() == task_id)
            .cloned()
    }

    /// The persisted metadata as it is now.
    pub fn meta(&self) -> SessionMeta {
        self.data().meta.clone()
    }

    /// All usage so far (a sub-agent's included in its parent's).
    pub fn usage(&self) -> agent_core::Usage {
        self.data().meta.usage
    }

    /// The last sandbox report, once the agent ran a prompt that confines commands.
    pub fn sandbox_report(&self) -> Option<SandboxReport> {
        self.data().sandbox.clone()
    }

    /// A view of the session.
    pub fn view(&self) -> SessionView {
        let model_window = self.agent.context_window();
        let live_used = match self.child {
            Some(_) => None,
            None => Some(self.agent.context_usage().used),
        };
        let data = self.data();
        let active_tools = match &data.active {
            Some(_) => data
                .tool_calls
                .iter()
                .filter(|(_, s)| {
                    matches!(s.status, ToolCallStatus::Pending | ToolCallStatus::Running)
                })
                .map(|(id, s)| (id.clone(), s.clone()))
                .collect(),
            None => Vec::new(),
        };
        SessionView {
            meta: data.meta.clone(),
            active: data.active.clone(),
            revision: data.revision,
            context_window: match self.child {
                Some(_) => data.context_window.unwrap_or(model_window),
                None => model_window,
            },
            context_used: live_used.unwrap_or(data.meta.context_used),
            active_tools,
            sandbox: data.sandbox.clone(),
        }
    }

    /// The running turn, if any.
    pub fn active_turn(&self) -> Option<ActiveTurn> {
        self.data().active.clone()
    }

    /// What the session knows about a tool call of this process.
    pub fn tool_call(&self, id: &str) -> Option<ToolCallState> {
        self.data().tool_calls.get(id).cloned()
    }

    /// The transcript. For a sub-agent's session: as read by the last
    /// [`Session::sync_transcript`].
    pub fn messages(&self) -> Vec<Message> {
        match &self.child {
            Some(child) => child
                .transcript
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            None => self.agent.messages(),
        }
    }

    /// Reads a sub-agent session's transcript again from the store (the child records
    /// it there as it runs); call it before [`Session::messages`] to see the latest. Does
    /// nothing for other sessions.
    pub async fn sync_transcript(&self) -> Result<(), SessionError> {
        let Some(child) = &self.child else {
            return Ok(());
        };
        let messages = match self.store.load(&self.id).await {
            Ok(records) => SessionRecord::replay(&records),
            Err(SessionError::NotFound(_)) => Vec::new(),
            Err(err) => return Err(err),
        };
        *child.transcript.lock().unwrap_or_else(|e| e.into_inner()) = messages;
        Ok(())
    }

    /// Changes the mode (and the agent's permission policy).
    pub async fn set_mode(&self, mode: SessionMode) -> Result<(), SessionError> {
        self.agent
            .update()
            .permission_mode(mode.permission_mode())
            .apply();
        self.update_meta(|m| m.mode = mode).await
    }

    /// Changes the thought level.
    pub async fn set_thought_level(&self, level: ReasoningLevel) -> Result<(), SessionError> {
        self.agent.update().reasoning(level).apply();
        self.update_meta(|m| m.thought_level = level).await
    }

    /// Changes the model.
    pub async fn set_model(&self, model: String) -> Result<(), SessionError> {
        self.agent.update().model(model.clone()).apply();
        self.update_meta(|m| m.model = model).await
    }

    /// Changes the metadata and persists it.
    pub async fn update_meta<R>(
        &self,
        f: impl FnOnce(&mut SessionMeta) -> R,
    ) -> Result<R, SessionError> {
        let result = {
            let mut data = self.data();
            let result = f(&mut data.meta);
            data.meta.updated_at = now_ms();
            data.revision += 1;
            result
        };
        self.persist().await?;
        Ok(result)
    }

    /// Writes the metadata to disk.
    pub async fn persist(&self) -> Result<(), SessionError> {
        self.persist_with(true).await
    }

    /// Writes the metadata, durable against a crash of the machine only when `sync`
    /// ([`SessionStorage::save_meta_buffered`] otherwise).
    async fn persist_with(&self, sync: bool) -> Result<(), SessionError> {
        let _serial = self.persist.lock().await;
        let meta = self.meta();
        let saved = match sync {
            true => self.store.save_meta(&meta).await,
            false => self.store.save_meta_buffered(&meta).await,
        };
        saved.map_err(SessionError::from)
    }

    /// The storage backend the session is kept in.
    pub fn storage(&self) -> &Arc<dyn SessionStorage> {
        &self.store
    }

    /// Makes the transcript recorded so far durable (the end of every turn does).
    pub(super) async fn sync_transcript_logged(&self) {
        if let Err(err) = self.store.sync_transcript(&self.id).await {
            tracing::warn!(session = %self.id, error = %err, "cannot sync the transcript");
        }
    }

    pub(super) async fn persist_logged(&self) {
        self.persist_logged_with(true).await
    }

    /// [`Session::persist_logged`] without waiting for the disk: the next synced write
    /// (the turn's end) makes it durable.
    pub(super) async fn persist_buffered_logged(&self) {
        self.persist_logged_with(false).await
    }

    async fn persist_logged_with(&self, sync: bool) {
        if let Err(err) = self.persist_with(sync).await {
            tracing::warn!(session = %self.id, error = %err, "cannot persist session metadata");
        }
    }

    /// Whether [`Session::close`] ran.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Ends the session in this process, once: runs the `session_end` hooks (not for a
    /// sub-agent's session), shuts its MCP servers down (their processes end) and marks a
    /// sub-agent that was still running as cancelled. Stop the running turn first
    /// ([`Session::stop`], [`Session::wait_idle`]). The manager's
    /// [`close`](super::SessionManager::close) and
    /// [`shutdown`](super::SessionManager::shutdown) call this and forget the session.
    pub async fn close(&self, reason: SessionEndReason) -> Vec<HookReport> {
        if self.closed.swap(true, Ordering::SeqCst) {
            return Vec::new();
        }
        let children = self.subagents();
        for child in &children {
            Box::pin(child.close(reason)).await;
        }
        let reports = match &self.child {
            Some(_) => {
                let cancelled = self
                    .update_meta(|meta| match &mut meta.subagent {
                        Some(sub) if sub.status == SubagentStatus::Running => {
                            sub.status = SubagentStatus::Cancelled;
                            true
                        }
                        _ => false,
                    })
                    .await;
                if let Err(err) = cancelled {
                    tracing::warn!(session = %self.id, error = %err, "cannot persist session metadata");
                }
                Vec::new()
            }
            None => {
                let (last_status, turns) = {
                    let data = self.data();
                    (data.last_status, data.last_steps)
                };
                let end = SessionEnd {
                    reason,
                    last_status,
                    turns: Some(turns),
                    error: None,
                };
                self.agent.session_end(end).await
            }
        };
        for report in &reports {
            tracing::info!(session = %self.id, hook = %report.hook, outcome = report.outcome.as_str(), reason = ?report.reason, "session_end hook");
        }
        self.mcp.shutdown().await;
        reports
    }
}
