//! Writer leases: one writer per session across the fleet.
//!
//! A node takes a session's lease before it runs a turn and gives it back at the end. The
//! lease is a row of `session_leases` holding a fresh token, the holder's description and
//! the holder's presence key, with an expiry the holder pushes forward (every third of the
//! lease's time to live) while the turn runs. Another node may take it over only when it
//! expired — the holder stopped renewing: it hangs, or lost the database — or when the
//! holder's presence lock is gone — its process died (its presence connection closed); until
//! then it gets [`StoreError::Busy`] naming the holder (a claim through
//! [`SessionStorage::claim_writer`](agent_host::session::SessionStorage::claim_writer) first
//! retries for up to a second: a lease being given back is waited for).
//!
//! A holder that cannot renew before its lease expires, or finds it taken over, marks the
//! lease [lost](WriterLease::is_lost) (and [`WriterLease::lost`] resolves), so the host can
//! stop the turn.

use std::sync::Arc;
use std::time::Duration;

use agent_host::session::claim::BoxFuture;
use agent_host::session::{StoreError, WriterClaim};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::presence::PRESENCE_CLASS;
use crate::shared::Inner;

/// Takes the lease of `$1` for the token `$2`, holder `$3`, presence key `$4` and
/// `$5` milliseconds, when it is free, expired, held by this node (a lease it failed to give
/// back) or held by a node whose presence lock is gone.
const ACQUIRE: &str = "
INSERT INTO session_leases AS l (session_id, token, holder, holder_key, expires_at)
VALUES ($1, $2, $3, $4, clock_timestamp() + make_interval(secs => $5::float8 / 1000))
ON CONFLICT (session_id) DO UPDATE
SET token = EXCLUDED.token, holder = EXCLUDED.holder, holder_key = EXCLUDED.holder_key,
    acquired_at = clock_timestamp(), expires_at = EXCLUDED.expires_at
WHERE l.expires_at <= clock_timestamp()
   OR l.holder_key = EXCLUDED.holder_key
   OR NOT EXISTS (
        SELECT 1 FROM pg_locks p
        WHERE p.locktype = 'advisory' AND p.granted
          AND p.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND p.classid = $6::int4::oid AND p.objid = l.holder_key::oid AND p.objsubid = 2)
RETURNING token";

/// Pushes the expiry of the lease `$1`/`$2` forward by `$3` milliseconds (and records the
/// presence key `$4`, which changes when the node reconnected under a new key).
const RENEW: &str = "
UPDATE session_leases
SET expires_at = clock_timestamp() + make_interval(secs => $3::float8 / 1000), holder_key = $4
WHERE session_id = $1 AND token = $2";

/// Gives the lease `$1`/`$2` back.
const RELEASE: &str = "DELETE FROM session_leases WHERE session_id = $1 AND token = $2";

/// A session's writer lease, held until [released](Self::release) or dropped (dropping
/// gives it back in the background).
#[derive(Debug)]
pub struct WriterLease {
    session_id: String,
    token: uuid::Uuid,
    inner: Arc<Inner>,
    lost: watch::Receiver<bool>,
    renewer: Option<JoinHandle<()>>,
}

impl WriterLease {
    /// The session.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Whether the lease was lost (not renewed in time, or taken over).
    pub fn is_lost(&self) -> bool {
        *self.lost.borrow()
    }

    /// Resolves when the lease is lost (never, while it is held).
    pub async fn lost(&self) {
        let mut rx = self.lost.clone();
        if rx.wait_for(|lost| *lost).await.is_err() {
            // The renewer ended without losing it (released): stay pending.
            std::future::pending::<()>().await;
        }
    }

    /// Gives the lease back now.
    pub async fn release(mut self) -> Result<(), StoreError> {
        if let Some(renewer) = self.renewer.take() {
            renewer.abort();
        }
        let released = release(&self.inner, &self.session_id, self.token).await;
        self.inner.unhold(&self.session_id);
        released
    }

    /// A future resolving when the lease is lost, owning what it needs.
    fn lost_signal(&self) -> BoxFuture {
        let mut rx = self.lost.clone();
        Box::pin(async move {
            if rx.wait_for(|lost| *lost).await.is_err() {
                std::future::pending::<()>().await;
            }
        })
    }
}

/// A [`WriterLease`] as agent-host's [`WriterClaim`].
#[derive(Debug)]
pub(crate) struct PgClaim {
    lease: WriterLease,
    stale: bool,
}

impl PgClaim {
    pub(crate) fn new(lease: WriterLease, stale: bool) -> Self {
        Self { lease, stale }
    }
}

impl WriterClaim for PgClaim {
    fn stale(&self) -> bool {
        self.stale
    }

    fn lost(&self) -> BoxFuture {
        self.lease.lost_signal()
    }
}

impl Drop for WriterLease {
    fn drop(&mut self) {
        let Some(renewer) = self.renewer.take() else {
            return;
        };
        renewer.abort();
        let (inner, id, token) = (self.inner.clone(), self.session_id.clone(), self.token);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if let Err(err) = release(&inner, &id, token).await {
                        // It expires on its own.
                        tracing::warn!(session = %id, error = %err, "cannot give a writer lease back");
                    }
                    inner.unhold(&id);
                });
            }
            Err(_) => {
                inner.unhold(&id);
            }
        }
    }
}

async fn release(inner: &Inner, id: &str, token: uuid::Uuid) -> Result<(), StoreError> {
    inner
        .timed("release a writer lease", id, async {
            sqlx::query(RELEASE)
                .bind(id)
                .bind(token)
                .execute(&inner.pool)
                .await
        })
        .await
        .map(drop)
}

/// How long [`acquire`] waits for a lease this node holds to be given back.
const HELD_WAIT: Duration = Duration::from_secs(5);

/// How long [`acquire`] retries a lease another node holds before it reports busy.
const HANDOFF_WAIT: Duration = Duration::from_secs(1);

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Takes the writer lease of session `id` for this node; with `wait`, a lease being given
/// back (by this node: up to [`HELD_WAIT`]; by another: up to [`HANDOFF_WAIT`]) is waited for
/// before [`StoreError::Busy`].
pub(crate) async fn acquire(
    inner: &Arc<Inner>,
    id: &str,
    wait: bool,
) -> Result<WriterLease, StoreError> {
    // One holder per session in this process too (a lease in the table with this node's
    // key that it does not hold here is one it failed to give back: it may take it). A
    // lease this node is giving back (a turn that just ended: its last events are being
    // stored, then the row deleted) is waited for, briefly, so the next turn of the same
    // client does not find its own previous turn in the way.
    let held_wait = if wait { HELD_WAIT } else { Duration::ZERO };
    let deadline = tokio::time::Instant::now() + held_wait;
    loop {
        let unheld = inner.unheld.notified();
        tokio::pin!(unheld);
        unheld.as_mut().enable();
        if inner.held().insert(id.to_string()) {
            break;
        }
        if tokio::time::timeout_at(deadline, unheld).await.is_err() {
            return Err(StoreError::Busy {
                session_id: id.to_string(),
                holder: inner.options.node.clone(),
            });
        }
    }
    // A lease another node is giving back (its turn just ended: the client may already
    // have seen the turn's end and come here) is waited for briefly too, before busy.
    let handoff_wait = if wait { HANDOFF_WAIT } else { Duration::ZERO };
    let deadline = tokio::time::Instant::now() + handoff_wait;
    let mut pause = Duration::from_millis(20);
    let taken = loop {
        match take(inner, id).await {
            Err(StoreError::Busy { .. }) if tokio::time::Instant::now() + pause < deadline => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(200));
            }
            taken => break taken,
        }
    };
    if taken.is_err() {
        inner.unhold(id);
    }
    taken
}

async fn take(inner: &Arc<Inner>, id: &str) -> Result<WriterLease, StoreError> {
    const CONTEXT: &str = "acquire a writer lease";
    if !inner.presence.wait_up(inner.options.op_timeout).await {
        return Err(StoreError::Unavailable {
            context: CONTEXT.to_string(),
            source: "this node has no presence lock on the database (it is unreachable)".into(),
        });
    }
    let token = uuid::Uuid::new_v4();
    let ttl = inner.options.lease_ttl;
    let taken: Option<uuid::Uuid> = inner
        .timed(CONTEXT, id, async {
            sqlx::query_scalar(ACQUIRE)
                .bind(id)
                .bind(token)
                .bind(&inner.options.node)
                .bind(inner.presence.key())
                .bind(millis(ttl))
                .bind(PRESENCE_CLASS)
                .fetch_optional(&inner.pool)
                .await
        })
        .await?;
    if taken != Some(token) {
        let holder: Option<String> = inner
            .timed(CONTEXT, id, async {
                sqlx::query_scalar("SELECT holder FROM session_leases WHERE session_id = $1")
                    .bind(id)
                    .fetch_optional(&inner.pool)
                    .await
            })
            .await?;
        return Err(StoreError::Busy {
            session_id: id.to_string(),
            holder: holder.unwrap_or_else(|| "another node".to_string()),
        });
    }
    let (lost_tx, lost) = watch::channel(false);
    let renewer = tokio::spawn(renew(inner.clone(), id.to_string(), token, lost_tx));
    Ok(WriterLease {
        session_id: id.to_string(),
        token,
        inner: inner.clone(),
        lost,
        renewer: Some(renewer),
    })
}

/// Renews the lease every third of its time to live until it is lost.
async fn renew(inner: Arc<Inner>, id: String, token: uuid::Uuid, lost: watch::Sender<bool>) {
    let ttl = inner.options.lease_ttl;
    let every = ttl / 3;
    let mut expires = tokio::time::Instant::now() + ttl;
    loop {
        tokio::time::sleep(every).await;
        let attempt = tokio::time::Instant::now();
        let renewed = inner
            .timed("renew a writer lease", &id, async {
                sqlx::query(RENEW)
                    .bind(&id)
                    .bind(token)
                    .bind(millis(ttl))
                    .bind(inner.presence.key())
                    .execute(&inner.pool)
                    .await
            })
            .await;
        match renewed {
            Ok(done) if done.rows_affected() == 1 => expires = attempt + ttl,
            Ok(_) => {
                tracing::warn!(session = %id, "the writer lease was taken over by another node");
                lost.send_replace(true);
                return;
            }
            Err(err) if tokio::time::Instant::now() >= expires => {
                tracing::warn!(session = %id, error = %err, "the writer lease expired: it could not be renewed");
                lost.send_replace(true);
                return;
            }
            Err(err) => {
                tracing::warn!(session = %id, error = %err, "cannot renew the writer lease yet");
            }
        }
    }
}
