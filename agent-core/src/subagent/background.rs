//! Background sub-agents: [`BackgroundChild`], and the per-run [`RunScope`] that stops them
//! when the run ends.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{lock, Observed, SubagentInfo, SubagentOutcome};
use crate::event::RunStatus;
use crate::usage::Usage;

/// How long the end of a run waits for its stopped background children to report their
/// end before it drops them.
const SCOPE_CLOSE_GRACE: Duration = Duration::from_secs(5);

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

/// A background child and its forwarder.
type Entry = (BackgroundChild, JoinHandle<()>);

/// The background children of one run.
#[derive(Default)]
pub(crate) struct RunScope {
    children: Mutex<Option<Vec<Entry>>>,
    closed: std::sync::atomic::AtomicBool,
}

impl RunScope {
    /// Runs `task` (`child`'s forwarder) until the run ends.
    pub(crate) fn spawn(
        &self,
        child: BackgroundChild,
        task: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        let mut children = self.children.lock().unwrap_or_else(|e| e.into_inner());
        if self.closed.load(std::sync::atomic::Ordering::Acquire) {
            // The run is over: the child is dropped (which aborts it) unreported.
            child.shared.stop.cancel();
            child.finish_unreported();
            return;
        }
        let handle = tokio::spawn(task);
        children.get_or_insert_with(Vec::new).push((child, handle));
    }

    /// Stops every child still running and waits (bounded) for each to report its end.
    pub(crate) async fn close(&self) {
        let children = {
            let mut children = self.children.lock().unwrap_or_else(|e| e.into_inner());
            self.closed
                .store(true, std::sync::atomic::Ordering::Release);
            children.take().unwrap_or_default()
        };
        if children.is_empty() {
            return;
        }
        for (child, _) in &children {
            child.shared.stop.cancel();
        }
        let deadline = tokio::time::Instant::now() + SCOPE_CLOSE_GRACE;
        for (child, mut handle) in children {
            if tokio::time::timeout_at(deadline, &mut handle)
                .await
                .is_err()
            {
                tracing::warn!(task_id = %child.task_id(), "a background sub-agent did not stop in time; dropped");
                handle.abort();
                child.finish_unreported();
            }
        }
    }
}
