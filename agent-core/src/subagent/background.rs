//! Background sub-agents: [`BackgroundChild`], stopped when the run that started it ends
//! (`RunScope`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{lock, Observed, SubagentInfo, SubagentOutcome};
use crate::event::RunStatus;
use crate::usage::Usage;

/// What a background sub-agent has done so far.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildSnapshot {
    /// How its run ended; `None` while it runs.
    pub status: Option<RunStatus>,
    /// Its final answer once it finished; before that, the text of its current reply.
    pub text: String,
    /// Names of the tools it called, in first-call order.
    pub tools: Vec<String>,
    /// Errors it reported (the one that ended it last).
    pub errors: Vec<String>,
    /// Its usage so far.
    pub usage: Usage,
}

struct Shared {
    info: Arc<SubagentInfo>,
    model: String,
    stop: CancellationToken,
    observed: Mutex<Observed>,
    done: watch::Sender<Option<SubagentOutcome>>,
}

/// A sub-agent running in the background ([`crate::Agent::spawn_as_child`]). Cheap to
/// clone; every clone watches the same child.
#[derive(Clone)]
pub struct BackgroundChild {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for BackgroundChild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundChild")
            .field("task_id", &self.shared.info.task_id)
            .field("name", &self.shared.info.name)
            .field("finished", &self.is_finished())
            .finish()
    }
}

impl BackgroundChild {
    pub(super) fn new(info: Arc<SubagentInfo>, model: String, stop: CancellationToken) -> Self {
        let (done, _) = watch::channel(None);
        Self {
            shared: Arc::new(Shared {
                info,
                model,
                stop,
                observed: Mutex::new(Observed::default()),
                done,
            }),
        }
    }

    pub(super) fn observed(&self) -> &Mutex<Observed> {
        &self.shared.observed
    }

    pub(super) fn finish(&self, outcome: SubagentOutcome) {
        self.shared.done.send_replace(Some(outcome));
    }

    /// Ends a child whose forwarder was dropped: what was seen, as aborted unless it ended.
    fn finish_unreported(&self) {
        if !self.is_finished() {
            let outcome = lock(&self.shared.observed).outcome(&self.shared.info, Duration::ZERO);
            self.finish(outcome);
        }
    }

    /// The child's identity.
    pub fn info(&self) -> &SubagentInfo {
        &self.shared.info
    }

    /// The child's id (also its session id).
    pub fn task_id(&self) -> &str {
        &self.shared.info.task_id
    }

    /// The model the child calls.
    pub fn model(&self) -> &str {
        &self.shared.model
    }

    /// What it has done so far.
    pub fn snapshot(&self) -> ChildSnapshot {
        lock(&self.shared.observed).snapshot()
    }

    /// True once its run ended and its end was reported.
    pub fn is_finished(&self) -> bool {
        self.shared.done.borrow().is_some()
    }

    /// Its outcome, once it finished.
    pub fn outcome(&self) -> Option<SubagentOutcome> {
        self.shared.done.borrow().clone()
    }

    /// Waits for it to end. Cancel-safe; bound it with a timeout.
    pub async fn wait(&self) -> SubagentOutcome {
        let mut rx = self.shared.done.subscribe();
        loop {
            if let Some(outcome) = rx.borrow_and_update().clone() {
                return outcome;
            }
            if rx.changed().await.is_err() {
                // Unreachable while `self` holds the sender; answer rather than hang.
                return lock(&self.shared.observed).outcome(&self.shared.info, Duration::ZERO);
            }
        }
    }

    /// Aborts it (its end is still reported). Returns false when it had already finished.
    pub fn stop(&self) -> bool {
        let running = !self.is_finished();
        self.shared.stop.cancel();
        running
    }
}

impl crate::run_scope::ScopedChild for BackgroundChild {
    fn task_id(&self) -> &str {
        &self.shared.info.task_id
    }

    fn cancel(&self) {
        self.shared.stop.cancel();
    }

    fn finish_unreported(&self) {
        BackgroundChild::finish_unreported(self);
    }
}
