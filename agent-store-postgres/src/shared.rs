//! What every handle of one store shares: the pool, the settings, this node's presence and
//! the leases it holds. The store (`store`) and the writer leases ([`crate::lease`]) both
//! work on it.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent_host::session::StoreError;
use sqlx::postgres::PgPool;
use sqlx::{Postgres, Transaction};

use crate::error::{store_error, timed_out};
use crate::presence::Presence;

/// Settings of a store (see [`PgStoreBuilder`](crate::PgStoreBuilder)).
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) schema: String,
    pub(crate) node: String,
    pub(crate) max_connections: u32,
    pub(crate) connect_timeout: Duration,
    pub(crate) op_timeout: Duration,
    pub(crate) lease_ttl: Duration,
    pub(crate) async_commit: bool,
}

/// What this node last read or wrote of a session: the claim compares it with the database
/// to tell whether another node changed the session since.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) records: i64,
    pub(crate) last_seq: i64,
    pub(crate) updated_at: Option<i64>,
}

/// What every handle of one store shares.
pub(crate) struct Inner {
    pub(crate) pool: PgPool,
    pub(crate) options: Options,
    pub(crate) presence: Arc<Presence>,
    pub(crate) presence_task: tokio::task::JoinHandle<()>,
    /// Sessions whose lease this node holds.
    pub(crate) held: Mutex<HashSet<String>>,
    /// Woken whenever a session leaves `held`.
    pub(crate) unheld: tokio::sync::Notify,
    pub(crate) seen: Mutex<HashMap<String, Seen>>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("schema", &self.options.schema)
            .field("node", &self.options.node)
            .field("pool_size", &self.pool.size())
            .finish_non_exhaustive()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Its connection closes: the presence lock goes with it.
        self.presence_task.abort();
    }
}

impl Inner {
    pub(crate) fn held(&self) -> MutexGuard<'_, HashSet<String>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Session `id`'s lease is no longer held by this node: wakes those waiting for it.
    pub(crate) fn unhold(&self, id: &str) {
        self.held().remove(id);
        self.unheld.notify_waiters();
    }

    pub(crate) fn seen(&self, id: &str, update: impl FnOnce(&mut Seen)) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        update(seen.entry(id.to_string()).or_default());
    }

    /// Whether the database's `(record_count, last_seq, updated_at_ms)` of session `id`
    /// differ from what this node last saw.
    pub(crate) fn changed(&self, id: &str, stored: (i64, i64, i64)) -> bool {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let seen = seen.get(id).copied().unwrap_or_default();
        let (records, last_seq, updated_at) = stored;
        seen.records != records
            || seen.last_seq != last_seq
            || seen.updated_at.is_some_and(|at| at != updated_at)
    }

    /// Runs one driver operation under the operation timeout.
    pub(crate) async fn timed<T>(
        &self,
        context: &str,
        id: &str,
        op: impl Future<Output = Result<T, sqlx::Error>>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(self.options.op_timeout, op).await {
            Ok(result) => result.map_err(|err| store_error(context, id, err)),
            Err(_) => Err(timed_out(context, self.options.op_timeout)),
        }
    }

    /// Runs a multi-step operation under the operation timeout.
    pub(crate) async fn bounded<T>(
        &self,
        context: &str,
        op: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(self.options.op_timeout, op).await {
            Ok(result) => result,
            Err(_) => Err(timed_out(context, self.options.op_timeout)),
        }
    }

    /// A transaction; `durable` makes its commit wait for the WAL flush.
    pub(crate) async fn begin(
        &self,
        context: &str,
        id: &str,
        durable: bool,
    ) -> Result<Transaction<'static, Postgres>, StoreError> {
        let sql = |err| store_error(context, id, err);
        let mut tx = self.pool.begin().await.map_err(sql)?;
        if durable && self.options.async_commit {
            sqlx::query("SET LOCAL synchronous_commit TO on")
                .execute(&mut *tx)
                .await
                .map_err(sql)?;
        }
        Ok(tx)
    }
}
