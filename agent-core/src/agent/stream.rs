//! [`Run`], the event stream of one prompt or compaction, and its [`AbortHandle`].

use super::*;

/// Aborts a run from anywhere. Cheap to clone.
#[derive(Debug, Clone)]
pub struct AbortHandle(pub(super) CancellationToken);

impl AbortHandle {
    /// Aborts the run: streaming, tools and approval waits stop, and the run ends with
    /// status `aborted`.
    pub fn abort(&self) {
        self.0.cancel();
    }

    /// Whether abort was requested.
    pub fn is_aborted(&self) -> bool {
        self.0.is_cancelled()
    }
}

/// The event stream of one prompt or compaction. Ends after [`AgentEvent::RunFinished`].
///
/// Dropping a `Run` before it finishes aborts it: read its events, or await
/// [`Run::finish`] or [`Run::collect_events`].
#[derive(Debug)]
#[must_use = "dropping a Run aborts it; read its events or await `finish()`"]
pub struct Run {
    pub(super) rx: mpsc::Receiver<Batch>,
    /// The rest of the burst last received.
    pub(super) burst: std::vec::IntoIter<AgentEvent>,
    pub(super) abort: AbortHandle,
    /// The messages the run added to the transcript.
    pub(crate) log: MessageLog,
}

impl Run {
    /// A handle that aborts this run.
    pub fn abort_handle(&self) -> AbortHandle {
        self.abort.clone()
    }

    /// Aborts this run.
    pub fn abort(&self) {
        self.abort.abort();
    }

    /// Waits for the next event, then moves it and every further event already waiting (at
    /// most `limit` in all) to the end of `buf`. Returns how many were moved: 0 only when the
    /// run has ended (or `limit` is 0).
    ///
    /// A consumer that handles events in bursts (a front end writing one line per event)
    /// pays for synchronisation once per burst instead of once per event, and it never waits
    /// for an event that has not arrived: a lone event is returned at once.
    pub async fn recv_many(&mut self, buf: &mut Vec<AgentEvent>, limit: usize) -> usize {
        std::future::poll_fn(|cx| self.poll_recv_many(cx, buf, limit)).await
    }

    /// The polling form of [`Run::recv_many`].
    pub fn poll_recv_many(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut Vec<AgentEvent>,
        limit: usize,
    ) -> Poll<usize> {
        if limit == 0 {
            return Poll::Ready(0);
        }
        let mut moved = self.take_burst(buf, limit);
        while moved < limit {
            let next = match moved {
                // Wait only for the first event.
                0 => match self.rx.poll_recv(cx) {
                    Poll::Ready(next) => next,
                    Poll::Pending => return Poll::Pending,
                },
                _ => match self.rx.try_recv() {
                    Ok(next) => Some(next),
                    Err(_) => break,
                },
            };
            match next {
                None => break,
                Some(Batch::One(event)) => {
                    buf.push(event);
                    moved += 1;
                }
                Some(Batch::Many(events)) => {
                    self.burst = events.into_iter();
                    moved += self.take_burst(buf, limit - moved);
                }
            }
        }
        Poll::Ready(moved)
    }

    fn take_burst(&mut self, buf: &mut Vec<AgentEvent>, limit: usize) -> usize {
        let before = buf.len();
        buf.extend(self.burst.by_ref().take(limit));
        buf.len() - before
    }

    /// Waits for the run to finish and returns all its events.
    pub async fn collect_events(mut self) -> Vec<AgentEvent> {
        let mut events = Vec::new();
        while self.recv_many(&mut events, usize::MAX).await > 0 {}
        events
    }
}

impl Stream for Run {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        loop {
            if let Some(event) = self.burst.next() {
                return Poll::Ready(Some(event));
            }
            match std::task::ready!(self.rx.poll_recv(cx)) {
                None => return Poll::Ready(None),
                Some(Batch::One(event)) => return Poll::Ready(Some(event)),
                Some(Batch::Many(events)) => self.burst = events.into_iter(),
            }
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        // Nobody will read the rest; a run that already finished ignores this.
        self.abort.abort();
    }
}
