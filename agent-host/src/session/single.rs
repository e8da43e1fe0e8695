//! The session of a one-session host (zut RPC): a [`Session`] made around an agent the
//! front end built itself ([`AgentFactory::agent`](super::AgentFactory::agent)), outside any
//! [`SessionManager`](super::SessionManager), kept in a storage of its choice (a
//! [`MemoryStorage`](super::MemoryStorage) when it keeps no files), with its turn queue held
//! until [`Session::begin`] ran the `session_start` hooks.

use std::sync::{Arc, Mutex, Weak};

use agent_core::{
    hooks::{HookReport, SessionSource},
    session::SessionError,
    Agent,
};
use agent_mcp::McpManager;
use agent_specialists::BackgroundTasks;
use tokio::sync::mpsc;

use super::interaction::InteractionLink;
use super::live::{Parts, Session};
use super::storage::SessionStorage;
use super::types::SessionMeta;

impl Session {
    /// A session around `agent` (its provider, model and reasoning level become the
    /// metadata), working in `workspace`, kept in `storage`, with the MCP servers `mcp`
    /// (listed by [`Session::mcp`], shut down by [`Session::close`]).
    ///
    /// The session belongs to no manager and no client answers its interaction link (a
    /// question its tools ask is cancelled at once): give the agent an approver of its
    /// own. Turns queued before [`begin`](Self::begin) wait for it.
    pub fn standalone(
        agent: Agent,
        workspace: &str,
        storage: Arc<dyn SessionStorage>,
        mcp: McpManager,
    ) -> Arc<Self> {
        let state = agent.state();
        let mut meta = SessionMeta::new(workspace, state.provider, state.model);
        meta.thought_level = state.reasoning;
        let turn = Arc::new(Mutex::new(None));
        // Nobody receives: a request is cancelled at once.
        let (tx, _) = mpsc::unbounded_channel();
        let link = InteractionLink::new(meta.session_id.clone(), turn.clone(), tx);
        let session = Self::new(Parts {
            agent,
            store: storage,
            meta,
            turn,
            link,
            mcp,
            tasks: BackgroundTasks::default(),
            registry: Weak::new(),
        });
        session.data().held = true;
        Arc::new(session)
    }

    /// Runs the `session_start` hooks (`source`), then lets the queue go: the first turn
    /// queued meanwhile starts. Commands that start no turn may be served while this runs;
    /// the hooks' context lands before the first model call. Returns the hooks' reports.
    ///
    /// Cancel-safe: dropping the future before the hooks are done (a host that stops
    /// waiting for them, on a signal say) lets the queue go too.
    pub async fn begin(self: &Arc<Self>, source: SessionSource) -> Vec<HookReport> {
        let release = Release(self);
        let reports = self.agent.session_start(source).await;
        drop(release);
        reports
    }

    /// Empties the transcript and the plan (usage stays), also under a running turn: the
    /// turn's later messages land on the empty transcript.
    pub async fn clear(&self) -> Result<(), SessionError> {
        self.agent.clear().await?;
        self.update_meta(|meta| meta.todos.clear()).await
    }
}

/// Lets a standalone session's queue go when dropped ([`Session::begin`]).
struct Release<'a>(&'a Arc<Session>);

impl Drop for Release<'_> {
    fn drop(&mut self) {
        let session = self.0;
        let gate = session.gate();
        let next = {
            let mut data = session.data();
            data.held = false;
            match data.active {
                Some(_) => None,
                None => data.queue.pop_front(),
            }
        };
        // A future dropped outside a runtime (at its shutdown) starts nothing.
        if let Some(next) = next.filter(|_| tokio::runtime::Handle::try_current().is_ok()) {
            session.launch(&gate, next);
        }
    }
}
