//! How a session's agent asks the front end's client: [`InteractionLink`] sends an
//! [`InteractionRequest`] to the front end and waits for the answer; [`SessionApprover`] is
//! the agent's [`Approver`] on top of it.

use std::sync::{Arc, Mutex};

use agent_core::{async_trait, Approval, ApprovalRequest, Approver};
use tokio::sync::{mpsc, oneshot};

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
/// client's answer. An abort of the run drops this wait (agent-core cancels it).
#[derive(Debug, Clone)]
pub struct SessionApprover {
    link: InteractionLink,
}

impl SessionApprover {
    /// The approver asking through `link`.
    pub fn new(link: InteractionLink) -> Self {
        Self { link }
    }
}

#[async_trait]
impl Approver for SessionApprover {
    async fn approve(&self, request: ApprovalRequest) -> Approval {
        match self.link.ask(InteractionKind::Permission(request)).await {
            Some(InteractionReply::Permission(approval)) => approval,
            Some(InteractionReply::UserInput(_)) | None => Approval::Deny {
                reason: Some("permission request was cancelled".to_string()),
            },
        }
    }
}
