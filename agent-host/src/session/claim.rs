//! Turn claims: one writer per session among every process that shares a storage.
//!
//! A storage shared by a fleet (a database) hands out [`WriterClaim`]s
//! ([`SessionStorage::claim_writer`](super::SessionStorage::claim_writer)); a storage owned
//! by one process (the files) needs none. Before a turn runs, the front end calls
//! [`SessionManager::claim_turn`]: it fails with [`ManagerError::Busy`] while a turn runs on
//! this session here or on another node, reloads the session from storage when another node
//! changed it since this process loaded it, and returns a [`TurnClaim`] whose
//! [`observe`](TurnClaim::observe) wraps the turn's observer so the claim is held until the
//! turn finished and the turn stops if the claim is lost.

use std::sync::Arc;

use super::live::Session;
use super::manager::{ManagerError, SessionManager};
pub use super::storage::{BoxFuture, WriterClaim};
use super::turn::TurnObserver;
use super::types::{Busy, TurnInfo, TurnOutcome};
use crate::backpressure::OutputGate;

/// A session claimed for one turn ([`SessionManager::claim_turn`]).
pub struct TurnClaim {
    claim: Option<Box<dyn WriterClaim>>,
    reloaded: bool,
    release_after: Option<Box<dyn FnOnce() -> BoxFuture + Send>>,
}

impl std::fmt::Debug for TurnClaim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnClaim")
            .field("claimed", &self.claim.is_some())
            .field("reloaded", &self.reloaded)
            .finish()
    }
}

impl TurnClaim {
    /// Whether the session was loaded again from storage (another process had changed it):
    /// per-session state the front end keeps beside the [`Session`] (an event journal) must
    /// be opened again too.
    pub fn reloaded(&self) -> bool {
        self.reloaded
    }

    /// Whether a storage claim is held (`false` for a storage owned by this process).
    pub fn is_claimed(&self) -> bool {
        self.claim.is_some()
    }

    /// Holds the claim after the turn finished until the future `make` returns is done
    /// (e.g. until the turn's last events are stored), so the next writer starts after them.
    pub fn release_after(&mut self, make: impl FnOnce() -> BoxFuture + Send + 'static) {
        self.release_after = Some(Box::new(make));
    }

    /// Wraps the turn's `observer`: the claim is held until the turn finished (and the
    /// [`release_after`](Self::release_after) future is done), and the turn is stopped when
    /// the claim is lost.
    pub fn observe(
        self,
        session: &Arc<Session>,
        observer: Box<dyn TurnObserver>,
    ) -> Box<dyn TurnObserver> {
        let Some(claim) = self.claim else {
            return observer;
        };
        let lost = claim.lost();
        let weak = Arc::downgrade(session);
        let watcher = tokio::spawn(async move {
            lost.await;
            if let Some(session) = weak.upgrade() {
                tracing::warn!(session = %session.id(), "the session's writer claim was lost; stopping the turn");
                session.stop();
            }
        });
        Box::new(Claimed {
            inner: observer,
            claim: Some(claim),
            watcher: Some(watcher),
            release_after: self.release_after,
        })
    }
}

/// A turn observer holding a claim until the turn finished.
struct Claimed {
    inner: Box<dyn TurnObserver>,
    claim: Option<Box<dyn WriterClaim>>,
    watcher: Option<tokio::task::JoinHandle<()>>,
    release_after: Option<Box<dyn FnOnce() -> BoxFuture + Send>>,
}

impl Claimed {
    fn release(&mut self) {
        if let Some(watcher) = self.watcher.take() {
            watcher.abort();
        }
        let claim = self.claim.take();
        match (self.release_after.take(), claim) {
            (Some(make), Some(claim)) => {
                let wait = make();
                tokio::spawn(async move {
                    wait.await;
                    drop(claim);
                });
            }
            (_, claim) => drop(claim),
        }
    }
}

impl Drop for Claimed {
    fn drop(&mut self) {
        self.release();
    }
}

impl TurnObserver for Claimed {
    fn started(&mut self, session: &Session, turn: &TurnInfo) {
        self.inner.started(session, turn);
    }

    fn event(&mut self, session: &Session, turn: &TurnInfo, event: &agent_core::AgentEvent) {
        self.inner.event(session, turn, event);
    }

    fn observe(
        &mut self,
        session: &Session,
        turn: &TurnInfo,
        state: &crate::turn::TurnState,
        event: &agent_core::AgentEvent,
    ) {
        self.inner.observe(session, turn, state, event);
    }

    fn ending(
        &mut self,
        session: &Session,
        turn: &TurnInfo,
        outcome: &TurnOutcome,
    ) -> Option<futures::future::BoxFuture<'static, ()>> {
        self.inner.ending(session, turn, outcome)
    }

    fn finished(&mut self, session: &Session, turn: &TurnInfo, outcome: &TurnOutcome) {
        self.inner.finished(session, turn, outcome);
        self.release();
    }

    fn flush(&mut self) {
        self.inner.flush();
    }

    fn held(&self) -> usize {
        self.inner.held()
    }

    fn output_gate(&self) -> Option<Arc<OutputGate>> {
        self.inner.output_gate()
    }
}

impl SessionManager {
    /// Claims the active session `id` for one turn: [`ManagerError::Busy`] while a turn runs
    /// on it in this process or another process holds its claim; the session loaded again
    /// from storage when another process changed it since. Returns the session to run the
    /// turn on (the same one, or the reloaded one) and the claim to hand to the turn
    /// ([`TurnClaim::observe`]).
    pub async fn claim_turn(&self, id: &str) -> Result<(Arc<Session>, TurnClaim), ManagerError> {
        let Some(session) = self.get(id) else {
            return Err(ManagerError::NotFound(id.to_string()));
        };
        if let Some(active) = session.active_turn() {
            return Err(ManagerError::Busy(Busy {
                session_id: id.to_string(),
                turn_id: active.turn_id,
            }));
        }
        let claim = match self.storage().claim_writer(id).await {
            Ok(claim) => claim,
            Err(super::StoreError::Busy { session_id, holder }) => {
                return Err(ManagerError::Busy(Busy {
                    session_id,
                    turn_id: format!("a turn on {holder}"),
                }))
            }
            Err(err) => return Err(err.into()),
        };
        let stale = claim.as_ref().is_some_and(|c| c.stale());
        let session = match stale {
            true => self.reload(id).await?,
            false => session,
        };
        Ok((
            session,
            TurnClaim {
                claim,
                reloaded: stale,
                release_after: None,
            },
        ))
    }
}

impl SessionManager {
    /// Brings the active session `id` up to date before it is read: when it is idle here
    /// and another process sharing the storage changed it since
    /// ([`SessionStorage::changed_elsewhere`](super::SessionStorage::changed_elsewhere)), it
    /// is [reloaded](Self::reload) and returned. `Ok(None)`: nothing to do (not active here,
    /// a turn runs on it here, a sub-agent's session, or unchanged). One storage query for
    /// a shared storage; none for the files.
    pub async fn refresh(&self, id: &str) -> Result<Option<Arc<Session>>, ManagerError> {
        let Some(session) = self.get(id) else {
            return Ok(None);
        };
        if session.active_turn().is_some() || session.is_subagent() {
            return Ok(None);
        }
        if !self.storage().changed_elsewhere(id).await? {
            return Ok(None);
        }
        Ok(Some(self.reload(id).await?))
    }

    /// Loads session `id` again from storage in place of the active one (which should be
    /// idle): for a session another process changed since this one loaded it. The new
    /// session keeps the old one's MCP servers (still connected); its `session_start` hooks
    /// run with source `resume`. Its event journal is forgotten
    /// ([`forget_journal`](SessionManager::forget_journal)): the next
    /// [`journal`](SessionManager::journal) reads the stored log's bounds again.
    pub async fn reload(&self, id: &str) -> Result<Arc<Session>, ManagerError> {
        let session = self.reactivate(id).await?;
        self.forget_journal(id);
        Ok(session)
    }
}
