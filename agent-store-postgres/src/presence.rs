//! A node's presence: one connection of its own (outside the pool) holding a session-level
//! advisory lock on the node's key for as long as the node lives.
//!
//! A writer lease names its holder's key. When the holder's process dies, its connection
//! closes and PostgreSQL drops the lock at once, so another node may take the lease over
//! without waiting for it to expire ([`LEASE_TAKEOVER`](crate::lease)). A node that cannot
//! reach the database loses its lock too; it takes it again (with backoff) when the database
//! is back, and acquires no lease meanwhile.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, PgConnection};
use tokio::sync::watch;

/// The first key of the two-key advisory locks of node presence (`AGSD`).
pub(crate) const PRESENCE_CLASS: i32 = 0x4147_5344;

/// How often the presence connection is checked.
const PING_EVERY: Duration = Duration::from_secs(2);

/// Backoff between reconnection attempts: from the first to the last value, doubling.
const BACKOFF_FIRST: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// A fresh node key: positive, so it reads back from `pg_locks.objid` (an `oid`) unchanged.
fn new_key() -> i32 {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let raw = i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    (raw & i32::MAX).max(1)
}

/// The node's presence as the rest of the store sees it.
#[derive(Debug)]
pub(crate) struct Presence {
    key: AtomicI32,
    up: watch::Sender<bool>,
}

impl Presence {
    /// The node's key (the second key of its advisory lock).
    pub(crate) fn key(&self) -> i32 {
        self.key.load(Ordering::Acquire)
    }

    /// Waits (at most `timeout`) until the node holds its presence lock. Returns whether
    /// it does.
    pub(crate) async fn wait_up(&self, timeout: Duration) -> bool {
        let mut rx = self.up.subscribe();
        let waited = tokio::time::timeout(timeout, rx.wait_for(|up| *up)).await;
        matches!(waited, Ok(Ok(_)))
    }
}

/// Starts the presence task on `options` (the pool's connection options). The task ends
/// when the returned handle is aborted; its connection closes with it, releasing the lock.
pub(crate) fn start(
    options: PgConnectOptions,
    op_timeout: Duration,
) -> (Arc<Presence>, tokio::task::JoinHandle<()>) {
    let (up, _) = watch::channel(false);
    let presence = Arc::new(Presence {
        key: AtomicI32::new(new_key()),
        up,
    });
    let task = tokio::spawn(run(presence.clone(), options, op_timeout));
    (presence, task)
}

async fn run(presence: Arc<Presence>, options: PgConnectOptions, op_timeout: Duration) {
    let mut backoff = BACKOFF_FIRST;
    loop {
        match hold(&presence, &options, op_timeout).await {
            Ok(mut conn) => {
                backoff = BACKOFF_FIRST;
                presence.up.send_replace(true);
                tracing::debug!(key = presence.key(), "session store presence lock held");
                loop {
                    tokio::time::sleep(PING_EVERY).await;
                    let ping = tokio::time::timeout(op_timeout, conn.ping()).await;
                    if !matches!(ping, Ok(Ok(()))) {
                        break;
                    }
                }
                presence.up.send_replace(false);
                tracing::warn!(
                    "lost the session store connection holding this node's presence; reconnecting"
                );
                drop(conn);
            }
            Err(err) => {
                tracing::debug!(error = %err, "cannot take this node's presence lock yet");
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// Connects and takes the presence lock (a fresh key when another node holds this one).
async fn hold(
    presence: &Presence,
    options: &PgConnectOptions,
    op_timeout: Duration,
) -> Result<PgConnection, sqlx::Error> {
    let connect = tokio::time::timeout(op_timeout, options.connect())
        .await
        .map_err(|_| sqlx::Error::PoolTimedOut)?;
    let mut conn = connect?;
    for _ in 0..8 {
        let key = presence.key();
        let locked: bool = tokio::time::timeout(
            op_timeout,
            sqlx::query_scalar("SELECT pg_try_advisory_lock($1, $2)")
                .bind(PRESENCE_CLASS)
                .bind(key)
                .fetch_one(&mut conn),
        )
        .await
        .map_err(|_| sqlx::Error::PoolTimedOut)??;
        if locked {
            return Ok(conn);
        }
        // Another live node drew the same key: draw again.
        presence.key.store(new_key(), Ordering::Release);
    }
    Err(sqlx::Error::Protocol(
        "no free presence key after 8 draws".to_string(),
    ))
}
