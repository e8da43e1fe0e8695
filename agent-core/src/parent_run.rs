//! [`ParentRun`]: the agent run that made a tool call, as the tool sees it (re-exported by
//! [`crate::subagent`]), and the loop's side of it.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::emit::WeakEmitter;
use crate::event::AgentEvent;
use crate::inner::Inner;
use crate::permission::PermissionMode;
use crate::provider::{Provider, ReasoningLevel};
use crate::subagent_info::SubagentInfo;
use crate::tool::Tool;

/// Batches of a child's events one call's channel holds before the child waits for the
/// parent's loop.
const CALL_BUFFER: usize = 16;

/// The agent run that made a tool call: what a tool needs to run a sub-agent under it.
/// Found in [`ToolContext::parent`](crate::ToolContext::parent); cheap to clone.
#[derive(Clone)]
pub struct ParentRun {
    pub(crate) inner: Arc<Inner>,
    pub(crate) em: WeakEmitter,
    pub(crate) call_id: String,
    /// The call's channel for its children's events, drained by the loop while the call
    /// runs (so they stay inside the call's events).
    pub(crate) events: mpsc::Sender<Vec<AgentEvent>>,
    /// Fired once the call's result went out: background children report from then on.
    pub(crate) released: CancellationToken,
}

impl std::fmt::Debug for ParentRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParentRun")
            .field("call_id", &self.call_id)
            .field("depth", &self.depth())
            .finish_non_exhaustive()
    }
}

/// The loop's side of a call's [`ParentRun`].
pub(crate) struct CallLink {
    pub(crate) events: mpsc::Receiver<Vec<AgentEvent>>,
    pub(crate) released: CancellationToken,
}

impl ParentRun {
    /// The link for one call of the run `em` belongs to, and the loop's side of it.
    pub(crate) fn for_call(
        inner: Arc<Inner>,
        em: &crate::emit::Emitter,
        call_id: &str,
    ) -> (Self, CallLink) {
        let (tx, rx) = mpsc::channel(CALL_BUFFER);
        let released = CancellationToken::new();
        let parent = Self {
            inner,
            em: em.downgrade(),
            call_id: call_id.to_string(),
            events: tx,
            released: released.clone(),
        };
        (
            parent,
            CallLink {
                events: rx,
                released,
            },
        )
    }

    /// The id of the call.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// How deep the calling agent is nested: 0 for a top-level agent.
    pub fn depth(&self) -> u32 {
        self.inner.subagent.as_ref().map_or(0, |s| s.depth)
    }

    /// The calling agent's own sub-agent identity, when it is a sub-agent.
    pub fn subagent(&self) -> Option<&SubagentInfo> {
        self.inner.subagent.as_deref()
    }

    /// The calling agent's provider.
    pub fn provider(&self) -> Arc<dyn Provider> {
        self.inner.provider.clone()
    }

    /// The calling agent's current model.
    pub fn model(&self) -> String {
        self.inner.state().model.clone()
    }

    /// The calling agent's current reasoning level.
    pub fn reasoning(&self) -> ReasoningLevel {
        self.inner.state().reasoning
    }

    /// The calling agent's current permission mode.
    pub fn permission_mode(&self) -> PermissionMode {
        self.inner.state().mode
    }

    /// The calling agent's own tools.
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.inner.tools
    }

    /// The calling agent's workspace directory.
    pub fn cwd(&self) -> PathBuf {
        self.inner.cwd.clone()
    }

    /// The calling agent's session id, if it records to a session.
    pub fn session_id(&self) -> Option<&str> {
        self.inner.session.as_ref().map(|(_, id)| id.as_str())
    }

    /// True once the calling run was aborted.
    pub fn is_aborted(&self) -> bool {
        self.em.cancel.is_cancelled()
    }

    /// Sends events into the call's window of the parent's stream.
    pub(crate) async fn send(&self, events: Vec<AgentEvent>) {
        // The loop stopped listening only when it gave up on the call.
        let _ = self.events.send(events).await;
    }
}
