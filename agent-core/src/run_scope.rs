//! The per-run scope of background children: they are stopped when the run ends.

use std::sync::Mutex;
use std::time::Duration;

use tokio::task::JoinHandle;

/// How long the end of a run waits for its stopped background children to report their
/// end before it drops them.
const SCOPE_CLOSE_GRACE: Duration = Duration::from_secs(5);

/// A background child as the run that started it sees it (a sub-agent's `BackgroundChild`).
pub(crate) trait ScopedChild: Send + Sync + 'static {
    /// The child's task id.
    fn task_id(&self) -> &str;
    /// Tells the child to stop.
    fn cancel(&self);
    /// Records the end of a child that will not report it.
    fn finish_unreported(&self);
}

/// A background child and its forwarder.
type Entry = (Box<dyn ScopedChild>, JoinHandle<()>);

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
        child: impl ScopedChild,
        task: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        let mut children = self.children.lock().unwrap_or_else(|e| e.into_inner());
        if self.closed.load(std::sync::atomic::Ordering::Acquire) {
            // The run is over: the child is dropped (which aborts it) unreported.
            child.cancel();
            child.finish_unreported();
            return;
        }
        let handle = tokio::spawn(task);
        children
            .get_or_insert_with(Vec::new)
            .push((Box::new(child), handle));
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
            child.cancel();
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
