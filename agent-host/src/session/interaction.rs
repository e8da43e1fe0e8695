//! How a session's agent asks the front end's client: [`InteractionLink`] sends an
//! [`InteractionRequest`] to the front end and waits for the answer; [`SessionApprover`] is
//! the agent's [`Approver`] on top of it.

use std::sync::{Arc, Mutex, Weak};

use agent_core::{
    async_trait,
    permission::{Approval, ApprovalRequest},
    subagent::SubagentInfo,
    Approver,
};
use tokio::sync::{mpsc, oneshot};

use super::live::{lock_registry, Registry};
use super::types::{InteractionKind, InteractionReply, InteractionRequest};

/// Sends a session's interactions to the front end.
#[derive(Debug, Clone)]
pub struct InteractionLink {
    session_id: String,
    turn: Arc<Mutex<Option<String>>>,
    tx: mpsc::UnboundedSender<InteractionRequest>,
}

impl InteractionLink {
    /// The link of session `session_id`, sending to `tx`. `turn` holds the session's
    /// running turn id (set by the session), which each request carries.
    pub(crate) fn new(
        session_id: String,
        turn: Arc<Mutex<Option<String>>>,
        tx: mpsc::UnboundedSender<InteractionRequest>,
    ) -> Self {
        Self {
            session_id,
            turn,
            tx,
        }
    }

    /// The link of another session (a sub-agent's) through the same front end, whose
    /// requests carry `turn` as their turn id.
    pub(crate) fn for_session(&self, session_id: &str, turn: Arc<Mutex<Option<String>>>) -> Self {
        Self {
            session_id: session_id.to_string(),
            turn,
            tx: self.tx.clone(),
        }
    }

    /// The session whose requests this link sends.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Asks the client; `None` when the front end is gone or the request was cancelled.
    pub async fn ask(&self, kind: InteractionKind) -> Option<InteractionReply> {
        let (reply, rx) = oneshot::channel();
        let turn_id = self.turn.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let request = InteractionRequest {
            session_id: self.session_id.clone(),
            turn_id,
            kind,
            reply,
        };
        self.tx.send(request).ok()?;
        rx.await.ok()
    }
}

/// The [`Approver`] of a session: forwards each prompt to the front end and waits for the
/// client's answer. An abort of the run drops this wait (agent-core cancels it). A
/// sub-agent's prompt is asked in the name of the sub-agent's session (its `task_id`), with
/// the child's own call id.
#[derive(Clone)]
pub struct SessionApprover {
    link: InteractionLink,
    registry: Weak<Registry>,
}

impl std::fmt::Debug for SessionApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionApprover")
            .field("link", &self.link)
            .finish()
    }
}

impl SessionApprover {
    /// The approver asking through `link`.
    pub fn new(link: InteractionLink) -> Self {
        Self {
            link,
            registry: Weak::new(),
        }
    }

    /// The approver asking through `link`, and for a sub-agent through the link of its
    /// session in `registry`.
    pub(super) fn with_registry(link: InteractionLink, registry: Weak<Registry>) -> Self {
        Self { link, registry }
    }

    async fn ask(link: &InteractionLink, request: ApprovalRequest) -> Approval {
        match link.ask(InteractionKind::Permission(request)).await {
            Some(InteractionReply::Permission(approval)) => approval,
            Some(InteractionReply::UserInput(_)) | None => Approval::Deny {
                reason: Some("permission request was cancelled".to_string()),
            },
        }
    }
}

#[async_trait]
impl Approver for SessionApprover {
    async fn approve(&self, request: ApprovalRequest) -> Approval {
        Self::ask(&self.link, request).await
    }

    async fn approve_subagent(
        &self,
        subagent: &SubagentInfo,
        request: ApprovalRequest,
    ) -> Approval {
        let child = self
            .registry
            .upgrade()
            .and_then(|r| lock_registry(&r).get(&subagent.task_id).cloned());
        let link = match &child {
            Some(child) => child.interaction_link().clone(),
            None => self
                .link
                .for_session(&subagent.task_id, Arc::new(Mutex::new(None))),
        };
        Self::ask(&link, request).await
    }
}
