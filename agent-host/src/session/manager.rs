//! [`SessionManager`]: many sessions in one process, created, resumed and forked from a
//! [`SessionStorage`] (the files of a [`FileStore`](super::FileStore), or another backend),
//! each with its agent built by an [`AgentFactory`], its MCP servers connected, and its
//! `session_start` / `session_end` hooks run.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::{
    hooks::{HookReport, SessionEndReason, SessionSource},
    session::SessionError,
    Message,
};
use agent_mcp::{McpManager, McpServerConfig};
use tokio::sync::mpsc;

use super::factory::{AgentFactory, FactoryError};
use super::interaction::{InteractionLink, SessionApprover};
use super::journal::{EventJournal, JournalOptions};
use super::live::{lock_registry, Parts, Registry, Session};
use super::storage::{SessionStorage, StoreError};
use super::tools::{ExitPlanModeTool, SessionQuestions, SessionSlot};
use super::types::{CreateOptions, InteractionRequest, ResumeOptions, SessionMeta, SubagentStatus};

/// Why a session could not be created, resumed or forked.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// No stored session with that id.
    #[error("Session not found: {0}")]
    NotFound(String),
    /// The agent could not be built (or the session's MCP server list is invalid:
    /// [`FactoryError::Mcp`]).
    #[error(transparent)]
    Factory(#[from] FactoryError),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] SessionError),
    /// Storage failed (a [`SessionStorage`] operation).
    #[error(transparent)]
    Storage(#[from] StoreError),
    /// A turn holds the session, in this process or another sharing the storage
    /// ([`claim_turn`](SessionManager::claim_turn)).
    #[error(transparent)]
    Busy(#[from] super::types::Busy),
}

/// Many sessions in one process, persisted in a [`SessionStorage`].
pub struct SessionManager {
    factory: Arc<AgentFactory>,
    store: Arc<dyn SessionStorage>,
    sessions: Arc<Registry>,
    interactions: mpsc::UnboundedSender<InteractionRequest>,
    activation: tokio::sync::Mutex<()>,
    journals: Journals,
}

/// The event journals opened in this process, one per session.
#[derive(Default)]
struct Journals {
    options: JournalOptions,
    open: Mutex<HashMap<String, Arc<tokio::sync::OnceCell<Arc<EventJournal>>>>>,
}

impl std::fmt::Debug for SessionManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionManager")
            .field("active", &lock_registry(&self.sessions).len())
            .finish()
    }
}

impl SessionManager {
    /// A manager building agents with `factory`, persisting to `store` (e.g. a
    /// [`FileStore`](super::FileStore)), and sending every session's interactions to
    /// `interactions`.
    pub fn new(
        factory: AgentFactory,
        store: impl SessionStorage,
        interactions: mpsc::UnboundedSender<InteractionRequest>,
    ) -> Self {
        Self::with_storage(factory, Arc::new(store), interactions)
    }

    /// [`new`](Self::new) with a shared storage backend.
    pub fn with_storage(
        factory: AgentFactory,
        store: Arc<dyn SessionStorage>,
        interactions: mpsc::UnboundedSender<InteractionRequest>,
    ) -> Self {
        Self {
            factory: Arc::new(factory),
            store,
            sessions: Arc::new(Mutex::new(HashMap::new())),
            interactions,
            activation: tokio::sync::Mutex::new(()),
            journals: Journals {
                options: JournalOptions::from_env(),
                open: Mutex::default(),
            },
        }
    }

    /// Sets how much the sessions' event journals keep in memory and in storage (by
    /// default [`JournalOptions::from_env`]); for journals opened afterwards.
    pub fn with_journal_options(mut self, options: JournalOptions) -> Self {
        self.journals.options = options;
        self
    }

    /// The event journal of session `id`, opened from the storage on first use (its
    /// numbering continues after the stored events) and shared afterwards.
    pub async fn journal(&self, id: &str) -> Result<Arc<EventJournal>, StoreError> {
        let cell = self
            .journals
            .open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(id.to_string())
            .or_default()
            .clone();
        cell.get_or_try_init(|| {
            EventJournal::open(self.store.clone(), id, self.journals.options.clone())
        })
        .await
        .cloned()
    }

    /// The event journal of session `id` when it has no stored events yet (a session just
    /// created or forked): opened without asking the storage, and shared afterwards like
    /// [`journal`](Self::journal)'s.
    pub fn fresh_journal(&self, id: &str) -> Arc<EventJournal> {
        let cell = self
            .journals
            .open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(id.to_string())
            .or_default()
            .clone();
        if let Some(journal) = cell.get() {
            return journal.clone();
        }
        let journal = EventJournal::fresh(self.store.clone(), id, self.journals.options.clone());
        match cell.set(journal.clone()) {
            Ok(()) => journal,
            // Opened meanwhile: that one is the session's.
            Err(_) => cell.get().cloned().unwrap_or(journal),
        }
    }

    /// Forgets the event journal opened for session `id` (returning it), so the next
    /// [`journal`](Self::journal) opens it again from the storage: for a session another
    /// process continued since (its numbering goes on after that process's events).
    pub fn forget_journal(&self, id: &str) -> Option<Arc<EventJournal>> {
        self.journals
            .open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id)
            .and_then(|cell| cell.get().cloned())
    }

    fn open_journals(&self) -> Vec<Arc<EventJournal>> {
        self.journals
            .open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter_map(|cell| cell.get().cloned())
            .collect()
    }

    /// The factory.
    pub fn factory(&self) -> &AgentFactory {
        &self.factory
    }

    /// The storage backend.
    pub fn storage(&self) -> &Arc<dyn SessionStorage> {
        &self.store
    }

    /// A session created or resumed in this process, or the live session of a sub-agent
    /// one of their runs started.
    pub fn get(&self, id: &str) -> Option<Arc<Session>> {
        lock_registry(&self.sessions).get(id).cloned()
    }

    /// Every active session (sub-agents' included).
    pub fn active(&self) -> Vec<Arc<Session>> {
        lock_registry(&self.sessions).values().cloned().collect()
    }

    async fn activate(
        &self,
        meta: SessionMeta,
        resume: bool,
        messages: Vec<Message>,
        mcp: McpManager,
    ) -> Result<Arc<Session>, ManagerError> {
        let turn = Arc::new(Mutex::new(None));
        let link = InteractionLink::new(
            meta.session_id.clone(),
            turn.clone(),
            self.interactions.clone(),
        );
        let approver = Arc::new(SessionApprover::with_registry(
            link.clone(),
            Arc::downgrade(&self.sessions),
        ));
        let slot: SessionSlot = Arc::new(std::sync::OnceLock::new());
        let session_tools: Vec<Arc<dyn agent_core::Tool>> = vec![
            Arc::new(SessionQuestions::tool(link.clone())),
            Arc::new(ExitPlanModeTool::new(link.clone(), slot.clone())),
        ];
        let spill_dir = self.store.local_dir(&meta.session_id);
        let built = self
            .factory
            .build(
                &meta,
                approver,
                self.store.clone(),
                session_tools,
                &mcp,
                spill_dir,
                resume,
                messages,
            )
            .await;
        let built = match built {
            Ok(built) => built,
            Err(err) => {
                mcp.shutdown().await;
                return Err(err.into());
            }
        };
        let session = Arc::new(Session::new(Parts {
            agent: built.agent,
            store: self.store.clone(),
            meta,
            turn,
            link,
            mcp,
            tasks: built.tasks,
            registry: Arc::downgrade(&self.sessions),
        }));
        let _ = slot.set(Arc::downgrade(&session));
        if let Err(err) = session.persist().await {
            session.close(SessionEndReason::Other).await;
            return Err(err.into());
        }
        let source = match resume {
            true => SessionSource::Resume,
            false => SessionSource::Startup,
        };
        log_hooks(
            session.id(),
            &session.agent().session_start(source).await,
            "session_start",
        );
        lock_registry(&self.sessions).insert(session.id().to_string(), session.clone());
        Ok(session)
    }

    async fn connect_mcp(
        &self,
        session_id: &str,
        workspace: &str,
        servers: Vec<McpServerConfig>,
    ) -> Result<McpManager, ManagerError> {
        Ok(self
            .factory
            .connect_session_mcp(Some(session_id), Path::new(workspace), servers)
            .await?)
    }

    fn new_meta(&self, options: &CreateOptions, model: String) -> SessionMeta {
        let provider_id = self.factory.provider_id().to_string();
        SessionMeta {
            workspace_key: options
                .workspace_key
                .clone()
                .filter(|k| !k.is_empty())
                .unwrap_or_else(|| options.workspace_path.clone()),
            parent_session_id: options.parent_session_id.clone(),
            mode: options.mode.unwrap_or_default(),
            thought_level: options.thought_level.unwrap_or_default(),
            tool_allowlist: options.tool_allowlist.clone(),
            tool_denylist: options.tool_denylist.clone(),
            ..SessionMeta::new(&options.workspace_path, provider_id, model)
        }
    }

    /// Creates (and persists) a new session, after connecting its MCP servers (the
    /// factory's and `options.mcp_servers`) and running the `session_start` hooks.
    pub async fn create(&self, options: CreateOptions) -> Result<Arc<Session>, ManagerError> {
        let model = match &options.model {
            Some(model) => model.clone(),
            None => {
                let provider = self.factory.provider()?;
                self.factory.default_model(provider.as_ref())
            }
        };
        let meta = self.new_meta(&options, model);
        // Connected before the activation lock: a slow server delays only this session.
        let mcp = self
            .connect_mcp(
                &meta.session_id,
                &options.workspace_path,
                options.mcp_servers,
            )
            .await?;
        let _serial = self.activation.lock().await;
        self.activate(meta, false, Vec::new(), mcp).await
    }

    /// Makes a stored session active in this process (a no-op returning it when it already
    /// is). The flag tells whether it was loaded now.
    pub async fn resume(&self, id: &str) -> Result<(Arc<Session>, bool), ManagerError> {
        self.resume_with(id, ResumeOptions::default()).await
    }

    /// [`SessionManager::resume`] with options, which apply only when the session is
    /// loaded now: its MCP servers are connected (with the factory's) and its
    /// `session_start` hooks run. A sub-agent's session loaded in a later process is an
    /// ordinary session (still naming its parent); one that was running when its process
    /// ended is marked cancelled.
    pub async fn resume_with(
        &self,
        id: &str,
        options: ResumeOptions,
    ) -> Result<(Arc<Session>, bool), ManagerError> {
        let _serial = self.activation.lock().await;
        if let Some(session) = self.get(id) {
            return Ok((session, false));
        }
        let mut meta = match self.store.load_meta(id).await {
            Ok(meta) => meta,
            Err(StoreError::NotFound(_)) => return Err(ManagerError::NotFound(id.to_string())),
            Err(err) => return Err(err.into()),
        };
        if let Some(sub) = meta
            .subagent
            .as_mut()
            .filter(|s| s.status == SubagentStatus::Running)
        {
            sub.status = SubagentStatus::Cancelled;
        }
        let mcp = self
            .connect_mcp(id, &meta.workspace_path, options.mcp_servers)
            .await?;
        Ok((self.activate(meta, true, Vec::new(), mcp).await?, true))
    }

    /// Session `id` loaded again from storage in place of the active one, keeping its MCP
    /// servers (see [`reload`](Self::reload)).
    pub(super) async fn reactivate(&self, id: &str) -> Result<Arc<Session>, ManagerError> {
        let _serial = self.activation.lock().await;
        let meta = match self.store.load_meta(id).await {
            Ok(meta) => meta,
            Err(StoreError::NotFound(_)) => return Err(ManagerError::NotFound(id.to_string())),
            Err(err) => return Err(err.into()),
        };
        let old = self.get(id);
        let mcp = match &old {
            Some(old) => old.mcp().clone(),
            None => {
                self.connect_mcp(id, &meta.workspace_path, Vec::new())
                    .await?
            }
        };
        if let Some(old) = &old {
            self.forget(old);
        }
        self.activate(meta, true, Vec::new(), mcp).await
    }

    /// A new session with `parent`'s settings and the given transcript (for a whole copy,
    /// `parent.messages()`). It connects the factory's MCP servers (a fork does not
    /// inherit the parent's own).
    pub async fn fork(
        &self,
        parent: &Session,
        messages: Vec<Message>,
    ) -> Result<Arc<Session>, ManagerError> {
        let parent_meta = parent.meta();
        let options = CreateOptions {
            workspace_path: parent_meta.workspace_path.clone(),
            workspace_key: Some(parent_meta.workspace_key.clone()),
            mode: Some(parent_meta.mode),
            model: None,
            thought_level: Some(parent_meta.thought_level),
            parent_session_id: Some(parent_meta.session_id.clone()),
            tool_allowlist: parent_meta.tool_allowlist.clone(),
            tool_denylist: parent_meta.tool_denylist.clone(),
            mcp_servers: Vec::new(),
        };
        let mut meta = self.new_meta(&options, parent_meta.model.clone());
        meta.title = parent_meta.title.clone();
        meta.title_from_input = parent_meta.title_from_input;
        meta.todos = parent_meta.todos.clone();
        meta.goal = parent_meta.goal.clone();
        let mcp = self
            .connect_mcp(&meta.session_id, &options.workspace_path, Vec::new())
            .await?;
        let _serial = self.activation.lock().await;
        self.activate(meta, false, messages, mcp).await
    }

    /// Metadata of every stored session that is not a sub-agent's (active ones as they
    /// are now), most recently updated first.
    pub async fn list(&self) -> Result<Vec<SessionMeta>, SessionError> {
        let mut metas = self.store.list_meta().await.map_err(SessionError::from)?;
        let active = self.active();
        for meta in &mut metas {
            if let Some(session) = active.iter().find(|s| s.id() == meta.session_id) {
                *meta = session.meta();
            }
        }
        for session in active.iter().filter(|s| !s.is_subagent()) {
            if !metas.iter().any(|m| m.session_id == session.id()) {
                metas.push(session.meta());
            }
        }
        metas.retain(|m| !m.is_subagent());
        metas.sort_by_key(|m| std::cmp::Reverse(m.updated_at));
        Ok(metas)
    }

    /// Metadata of the sub-agent sessions of session `parent_id`, oldest first: those of
    /// this process as they are now, and stored ones of earlier processes.
    pub async fn subagents(&self, parent_id: &str) -> Result<Vec<SessionMeta>, SessionError> {
        let live: Vec<SessionMeta> = self
            .get(parent_id)
            .map(|p| p.subagents().iter().map(|c| c.meta()).collect())
            .unwrap_or_default();
        let mut metas: Vec<SessionMeta> = self
            .store
            .list_meta()
            .await?
            .into_iter()
            .filter(|m| m.is_subagent() && m.parent_session_id.as_deref() == Some(parent_id))
            .filter(|m| !live.iter().any(|l| l.session_id == m.session_id))
            .collect();
        metas.extend(live);
        metas.sort_by_key(|m| m.created_at);
        Ok(metas)
    }

    /// Ends session `id` in this process: stops its turn (waiting at most `timeout`),
    /// runs its `session_end` hooks, shuts its MCP servers down and forgets it (and its
    /// sub-agents' sessions); it can be resumed again. `None` when it is not active.
    pub async fn close(&self, id: &str, timeout: Duration) -> Option<Vec<HookReport>> {
        let session = self.get(id)?;
        session.stop();
        session.wait_idle(timeout).await;
        let reports = session.close(SessionEndReason::Other).await;
        self.forget(&session);
        Some(reports)
    }

    /// Deletes session `id`: closes it when it is active here (as [`close`](Self::close)),
    /// then removes it and its sub-agents' sessions from the storage, so it is no longer
    /// listed or loaded. [`ManagerError::NotFound`] when it is not stored.
    pub async fn delete(&self, id: &str, timeout: Duration) -> Result<(), ManagerError> {
        self.close(id, timeout).await;
        self.forget_journal(id);
        let children: Vec<String> = self
            .store
            .list_meta()
            .await?
            .into_iter()
            .filter(|m| m.is_subagent() && m.parent_session_id.as_deref() == Some(id))
            .map(|m| m.session_id)
            .collect();
        match self.store.delete(id).await {
            Ok(()) => {}
            Err(StoreError::NotFound(_)) => return Err(ManagerError::NotFound(id.to_string())),
            Err(err) => return Err(err.into()),
        }
        for child in children {
            self.forget_journal(&child);
            if let Err(err) = self.store.delete(&child).await {
                tracing::warn!(session = %child, error = %err, "cannot delete a sub-agent's session");
            }
        }
        Ok(())
    }

    fn forget(&self, session: &Session) {
        let below = session.all_subagents();
        let mut sessions = lock_registry(&self.sessions);
        sessions.remove(session.id());
        for child in below {
            sessions.remove(child.id());
        }
    }

    /// Stops every running turn and waits (bounded by `timeout`) for them to wind down,
    /// then ends every session: `session_end` hooks (reason `exit`) and MCP servers shut
    /// down, all at once, and the event journals are written and synced. No MCP server
    /// process is left when this returns.
    pub async fn shutdown(&self, timeout: Duration) {
        let sessions = self.active();
        for session in &sessions {
            session.stop();
        }
        futures::future::join_all(sessions.iter().map(|s| s.wait_idle(timeout))).await;
        let tops: Vec<&Arc<Session>> = sessions.iter().filter(|s| !s.is_subagent()).collect();
        let closing = tops.iter().map(|s| s.close(SessionEndReason::Exit));
        // Hooks are bounded by their own timeouts; the MCP servers by their close grace.
        futures::future::join_all(closing).await;
        lock_registry(&self.sessions).clear();
        // Every event shown is stored already; what is still held or buffered is written
        // and synced now.
        for journal in self.open_journals() {
            if !journal.sync(timeout).await {
                tracing::warn!(session = %journal.session_id(), "the event log was not synced");
            }
        }
    }
}

fn log_hooks(session: &str, reports: &[HookReport], point: &str) {
    for report in reports {
        tracing::info!(
            session,
            hook = %report.hook,
            outcome = report.outcome.as_str(),
            reason = report.reason.as_deref().unwrap_or(""),
            "{point} hook"
        );
    }
}
