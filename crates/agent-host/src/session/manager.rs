//! [`SessionManager`]: many sessions in one process, created, resumed and forked from a
//! [`SessionStorage`] (the files of a [`FileStore`](super::FileStore), or another backend),
//! each with its agent built by an [`AgentFactory`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent_core::{Message, SessionError, Usage};
use tokio::sync::mpsc;

use super::factory::{AgentFactory, FactoryError};
use super::interaction::{InteractionLink, SessionApprover};
use super::journal::{EventJournal, JournalOptions};
use super::live::Session;
use super::storage::{SessionStorage, StoreError};
use super::tools::{AskUserTool, ExitPlanModeTool, SessionSlot};
use super::types::{new_id, now_ms, CreateOptions, InteractionRequest, SessionMeta};

/// Why a session could not be created, resumed or forked.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// No stored session with that id.
    #[error("Session not found: {0}")]
    NotFound(String),
    /// The agent could not be built.
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
    sessions: Mutex<HashMap<String, Arc<Session>>>,
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
            .field("active", &self.lock().len())
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
            sessions: Mutex::new(HashMap::new()),
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

    fn open_journals(&self) -> Vec<Arc<EventJournal>> {
        self.journals
            .open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter_map(|cell| cell.get().cloned())
            .collect()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The factory.
    pub fn factory(&self) -> &AgentFactory {
        &self.factory
    }

    /// The storage backend.
    pub fn storage(&self) -> &Arc<dyn SessionStorage> {
        &self.store
    }

    /// A session created or resumed in this process.
    pub fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.lock().get(id).cloned()
    }

    /// Every active session.
    pub fn active(&self) -> Vec<Arc<Session>> {
        self.lock().values().cloned().collect()
    }

    /// Drops session `id` from the active ones (it stays stored); see
    /// [`reload`](Self::reload).
    pub(super) fn forget(&self, id: &str) -> Option<Arc<Session>> {
        self.lock().remove(id)
    }

    async fn activate(
        &self,
        meta: SessionMeta,
        resume: bool,
        messages: Vec<Message>,
    ) -> Result<Arc<Session>, ManagerError> {
        let turn = Arc::new(Mutex::new(None));
        let link = InteractionLink::new(
            meta.session_id.clone(),
            turn.clone(),
            self.interactions.clone(),
        );
        let approver = Arc::new(SessionApprover::new(link.clone()));
        let slot: SessionSlot = Arc::new(std::sync::OnceLock::new());
        let session_tools: Vec<Arc<dyn agent_core::Tool>> = vec![
            Arc::new(AskUserTool::new(link.clone())),
            Arc::new(ExitPlanModeTool::new(link.clone(), slot.clone())),
        ];
        let agent = self
            .factory
            .build(
                &meta,
                approver,
                self.store.clone(),
                session_tools,
                resume,
                messages,
            )
            .await?;
        let session = Arc::new(Session::new(agent, self.store.clone(), meta, turn, link));
        let _ = slot.set(Arc::downgrade(&session));
        session.persist().await?;
        self.lock()
            .insert(session.id().to_string(), session.clone());
        Ok(session)
    }

    fn new_meta(&self, options: CreateOptions, model: String) -> SessionMeta {
        let now = now_ms();
        SessionMeta {
            session_id: new_id("sess"),
            workspace_key: options
                .workspace_key
                .filter(|k| !k.is_empty())
                .unwrap_or_else(|| options.workspace_path.clone()),
            workspace_path: options.workspace_path,
            parent_session_id: options.parent_session_id,
            trace_id: new_id("trace"),
            title: String::new(),
            title_from_input: false,
            mode: options.mode.unwrap_or_default(),
            provider_id: self.factory.provider_id().to_string(),
            model,
            thought_level: options.thought_level.unwrap_or_default(),
            created_at: now,
            updated_at: now,
            turn_count: 0,
            usage: Usage::default(),
            context_used: 0,
            todos: Vec::new(),
            goal: None,
            last_error: None,
            tool_allowlist: options.tool_allowlist,
            tool_denylist: options.tool_denylist,
        }
    }

    /// Creates (and persists) a new session.
    pub async fn create(&self, options: CreateOptions) -> Result<Arc<Session>, ManagerError> {
        let model = match &options.model {
            Some(model) => model.clone(),
            None => {
                let provider = self.factory.provider()?;
                self.factory.default_model(provider.as_ref())
            }
        };
        let meta = self.new_meta(options, model);
        let _serial = self.activation.lock().await;
        self.activate(meta, false, Vec::new()).await
    }

    /// Makes a stored session active in this process (a no-op returning it when it already
    /// is). The flag tells whether it was loaded now.
    pub async fn resume(&self, id: &str) -> Result<(Arc<Session>, bool), ManagerError> {
        let _serial = self.activation.lock().await;
        if let Some(session) = self.get(id) {
            return Ok((session, false));
        }
        let meta = match self.store.load_meta(id).await {
            Ok(meta) => meta,
            Err(StoreError::NotFound(_)) => return Err(ManagerError::NotFound(id.to_string())),
            Err(err) => return Err(err.into()),
        };
        Ok((self.activate(meta, true, Vec::new()).await?, true))
    }

    /// A new session with `parent`'s settings and the given transcript (for a whole copy,
    /// `parent.messages()`).
    pub async fn fork(
        &self,
        parent: &Session,
        messages: Vec<Message>,
    ) -> Result<Arc<Session>, ManagerError> {
        let parent_meta = parent.meta();
        let mut meta = self.new_meta(
            CreateOptions {
                workspace_path: parent_meta.workspace_path.clone(),
                workspace_key: Some(parent_meta.workspace_key.clone()),
                mode: Some(parent_meta.mode),
                model: None,
                thought_level: Some(parent_meta.thought_level),
                parent_session_id: Some(parent_meta.session_id.clone()),
                tool_allowlist: parent_meta.tool_allowlist.clone(),
                tool_denylist: parent_meta.tool_denylist.clone(),
            },
            parent_meta.model.clone(),
        );
        meta.title = parent_meta.title.clone();
        meta.title_from_input = parent_meta.title_from_input;
        meta.todos = parent_meta.todos.clone();
        meta.goal = parent_meta.goal.clone();
        let _serial = self.activation.lock().await;
        self.activate(meta, false, messages).await
    }

    /// Metadata of every stored session (active ones as they are now), most recently
    /// updated first.
    pub async fn list(&self) -> Result<Vec<SessionMeta>, SessionError> {
        let mut metas = self.store.list_meta().await.map_err(SessionError::from)?;
        let active = self.active();
        for meta in &mut metas {
            if let Some(session) = active.iter().find(|s| s.id() == meta.session_id) {
                *meta = session.meta();
            }
        }
        for session in &active {
            if !metas.iter().any(|m| m.session_id == session.id()) {
                metas.push(session.meta());
            }
        }
        metas.sort_by_key(|m| std::cmp::Reverse(m.updated_at));
        Ok(metas)
    }

    /// Stops every running turn and waits (bounded) for them to wind down, then writes and
    /// syncs the event journals.
    pub async fn shutdown(&self, timeout: Duration) {
        let sessions = self.active();
        for session in &sessions {
            session.stop();
        }
        for session in &sessions {
            session.wait_idle(timeout).await;
        }
        // Every event shown is stored already; what is still held or buffered is written
        // and synced now.
        for journal in self.open_journals() {
            if !journal.sync(timeout).await {
                tracing::warn!(session = %journal.session_id(), "the event log was not synced");
            }
        }
    }
}
