//! [`Session`]: one live session — its [`Agent`], its persisted metadata and what it knows
//! about the running turn. Turns are started and driven in [`turn`](super::turn).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use agent_core::{Agent, Message, ReasoningLevel, SessionError};
use tokio::sync::watch;

use super::interaction::InteractionLink;
use super::storage::SessionStorage;
use super::types::{
    now_ms, ActiveTurn, SessionMeta, SessionMode, ToolCallState, ToolCallStatus,
    DEFAULT_CONTEXT_WINDOW,
};

/// A session's mutable state, under one lock.
pub(super) struct Data {
    pub(super) meta: SessionMeta,
    pub(super) active: Option<ActiveTurn>,
    pub(super) revision: u64,
    pub(super) tool_calls: HashMap<String, ToolCallState>,
}

/// A point-in-time view of a session.
#[derive(Debug, Clone)]
pub struct SessionView {
    /// Persisted metadata.
    pub meta: SessionMeta,
    /// The running turn.
    pub active: Option<ActiveTurn>,
    /// State revision (bumped by every change).
    pub revision: u64,
    /// Context window of the current model.
    pub context_window: u64,
    /// Tool calls of the running turn that have not finished, in no particular order.
    pub active_tools: Vec<(String, ToolCallState)>,
}

/// One live session.
pub struct Session {
    id: String,
    pub(super) agent: Agent,
    store: Arc<dyn SessionStorage>,
    data: Mutex<Data>,
    /// Orders turn start/finish against each other and against observers.
    gate: Mutex<()>,
    pub(super) idle: watch::Sender<bool>,
    persist: tokio::sync::Mutex<()>,
    turn: Arc<Mutex<Option<String>>>,
    link: InteractionLink,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("id", &self.id).finish()
    }
}

impl Session {
    /// A session of `agent` with metadata `meta`, persisted to `store`; `turn` is the
    /// running turn's id as `link` reports it.
    pub(super) fn new(
        agent: Agent,
        store: Arc<dyn SessionStorage>,
        meta: SessionMeta,
        turn: Arc<Mutex<Option<String>>>,
        link: InteractionLink,
    ) -> Self {
        let (idle, _) = watch::channel(true);
        Self {
            id: meta.session_id.clone(),
            agent,
            store,
            data: Mutex::new(Data {
                meta,
                active: None,
                revision: 1,
                tool_calls: HashMap::new(),
            }),
            gate: Mutex::new(()),
            idle,
            persist: tokio::sync::Mutex::new(()),
            turn,
            link,
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

    /// The agent.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// The link tools of this session use to ask the client.
    pub fn interaction_link(&self) -> &InteractionLink {
        &self.link
    }

    /// The persisted metadata as it is now.
    pub fn meta(&self) -> SessionMeta {
        self.data().meta.clone()
    }

    /// A view of the session.
    pub fn view(&self) -> SessionView {
        let context_window = self
            .agent
            .model_info()
            .map(|m| u64::from(m.context_window))
            .filter(|w| *w > 0)
            .unwrap_or(DEFAULT_CONTEXT_WINDOW);
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
            context_window,
            active_tools,
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

    /// The transcript.
    pub fn messages(&self) -> Vec<Message> {
        self.agent.messages()
    }

    /// Changes the mode (and the agent's permission policy).
    pub async fn set_mode(&self, mode: SessionMode) -> Result<(), SessionError> {
        self.agent.set_permission_mode(mode.permission_mode());
        self.update_meta(|m| m.mode = mode).await
    }

    /// Changes the thought level.
    pub async fn set_thought_level(&self, level: ReasoningLevel) -> Result<(), SessionError> {
        self.agent.set_reasoning(level);
        self.update_meta(|m| m.thought_level = level).await
    }

    /// Changes the model.
    pub async fn set_model(&self, model: String) -> Result<(), SessionError> {
        self.agent.set_model(model.clone());
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
        let _serial = self.persist.lock().await;
        let meta = self.meta();
        self.store
            .save_meta(&meta)
            .await
            .map_err(SessionError::from)
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
        if let Err(err) = self.persist().await {
            tracing::warn!(session = %self.id, error = %err, "cannot persist session metadata");
        }
    }
}
