//! [`PgStore`]: agent-host's [`SessionStorage`] (and agent-core's [`SessionStore`]) on
//! PostgreSQL.

use std::collections::{HashMap, HashSet};
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::{
    async_trait,
    session::{SessionError, SessionRecord, SessionStore},
};
use agent_host::session::{
    Durability, EventBounds, MetaQuery, SessionMeta, SessionStorage, StoreError, StoredEvent,
    WriterClaim,
};
use secrecy::{ExposeSecret, SecretString};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{Postgres, QueryBuilder, Transaction};

use crate::error::{is_transient, store_error, to_i64, to_u64, ConnectError};
use crate::lease::{self, WriterLease};
use crate::migrate;
use crate::presence;
use crate::shared::{Inner, Options};

mod storage;

/// A pooled connection idle for this long is pinged before it is used again.
const IDLE_CHECK: Duration = Duration::from_secs(1);

/// The default schema of the store's tables.
pub const DEFAULT_SCHEMA: &str = "agent_sdk";

/// Whether `value` is a PostgreSQL connection URL (`postgres://…` or `postgresql://…`):
/// what front ends accept for `--session-store`.
pub fn is_postgres_url(value: &str) -> bool {
    let lower = value.trim_start().to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// Configures and connects a [`PgStore`].
pub struct PgStoreBuilder {
    url: SecretString,
    options: Options,
}

impl std::fmt::Debug for PgStoreBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password: never shown.
        f.debug_struct("PgStoreBuilder")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

fn default_node() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "node".to_string());
    format!("{host}:{}", std::process::id())
}

impl PgStoreBuilder {
    /// The schema holding the tables (default [`DEFAULT_SCHEMA`]; created when missing).
    /// Letters, digits and `_` only, not starting with a digit.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.options.schema = schema.into();
        self
    }

    /// How this node names itself in busy errors (default `<hostname>:<pid>`).
    pub fn node_name(mut self, node: impl Into<String>) -> Self {
        self.options.node = node.into();
        self
    }

    /// The pool's size (default 8).
    pub fn max_connections(mut self, n: u32) -> Self {
        self.options.max_connections = n.max(1);
        self
    }

    /// How long [`connect`](Self::connect) keeps trying (with backoff) before it gives up
    /// (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.options.connect_timeout = timeout;
        self
    }

    /// The longest any one operation may take, waiting for a connection included; past it
    /// the operation fails with [`StoreError::Unavailable`] (default 10 s).
    pub fn operation_timeout(mut self, timeout: Duration) -> Self {
        self.options.op_timeout = timeout.max(Duration::from_millis(10));
        self
    }

    /// How long a writer lease lasts without renewal (default 30 s; renewed every third).
    /// A node that died is noticed at once through its presence lock; the time to live
    /// bounds how long a node that hangs, or lost the database, keeps its sessions.
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.options.lease_ttl = ttl.max(Duration::from_millis(300));
        self
    }

    /// Whether appends that are not asked to be durable commit asynchronously
    /// (`synchronous_commit = off`, the default: they survive a crash of this process, as
    /// the file store's buffered appends do; a crash of the database server may lose the
    /// last few hundred milliseconds of them, never part of a transaction). With `false`
    /// every commit waits for the server's WAL flush.
    pub fn async_commit(mut self, on: bool) -> Self {
        self.options.async_commit = on;
        self
    }

    /// Connects (retrying with backoff for the connect timeout), creates the schema when
    /// missing and applies the embedded migrations (under PostgreSQL's migration lock, so
    /// nodes starting together migrate once), then starts the node's presence.
    pub async fn connect(self) -> Result<PgStore, ConnectError> {
        let Options {
            schema,
            max_connections,
            connect_timeout,
            op_timeout,
            async_commit,
            ..
        } = self.options.clone();
        if !is_postgres_url(self.url.expose_secret()) {
            return Err(ConnectError::InvalidUrl(
                "not a postgres:// or postgresql:// URL".to_string(),
            ));
        }
        if !migrate::valid_schema(&schema) {
            return Err(ConnectError::InvalidUrl(format!(
                "invalid schema name {schema:?}: letters, digits and _ only"
            )));
        }
        let base = PgConnectOptions::from_str(self.url.expose_secret())
            .map_err(|err| ConnectError::InvalidUrl(redacted(&err.to_string(), &self.url)))?;
        let mut settings = vec![("search_path", schema.clone())];
        if async_commit {
            settings.push(("synchronous_commit", "off".to_string()));
        }
        let options = base.options(settings);
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .min_connections(0)
            .acquire_timeout(op_timeout)
            .idle_timeout(Duration::from_secs(300))
            // A connection idle for a while is checked before use (a database restarted
            // meanwhile closed it); a busy one is not, so an operation is one round trip.
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if meta.idle_for >= IDLE_CHECK {
                        sqlx::Connection::ping(conn).await?;
                    }
                    Ok(true)
                })
            })
            .connect_lazy_with(options.clone());
        wait_reachable(&pool, connect_timeout).await?;
        migrate::run(&pool, &schema).await?;
        let (presence, presence_task) = presence::start(options, op_timeout);
        Ok(PgStore {
            inner: Arc::new(Inner {
                pool,
                options: self.options,
                presence,
                presence_task,
                held: Mutex::new(HashSet::new()),
                unheld: tokio::sync::Notify::new(),
                seen: Mutex::new(HashMap::new()),
            }),
        })
    }
}

/// `message` without the URL's password (drivers sometimes quote what they parsed).
fn redacted(message: &str, url: &SecretString) -> String {
    let url = url.expose_secret();
    let password = url
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .and_then(|(auth, _)| auth.split_once(':'))
        .map(|(_, password)| password)
        .filter(|p| !p.is_empty());
    match password {
        Some(password) => message.replace(password, agent_core::secrets::REDACTED),
        None => message.to_string(),
    }
}

/// Tries `SELECT 1` until it works, a permanent error comes, or `timeout` passes.
async fn wait_reachable(pool: &PgPool, timeout: Duration) -> Result<(), ConnectError> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut backoff = Duration::from_millis(50);
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let attempt = tokio::time::timeout(left.max(Duration::from_millis(10)), async {
            sqlx::query("SELECT 1").execute(pool).await
        })
        .await;
        let err = match attempt {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(err)) if !is_transient(&err) => {
                return Err(ConnectError::Setup {
                    context: "connect",
                    source: err,
                })
            }
            Ok(Err(err)) => err,
            Err(_) => sqlx::Error::PoolTimedOut,
        };
        if tokio::time::Instant::now() + backoff >= deadline {
            return Err(ConnectError::Unreachable {
                timeout,
                source: err,
            });
        }
        tracing::debug!(error = %err, "session store not reachable yet; retrying");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(1));
    }
}

/// Sessions, transcripts and event logs in PostgreSQL, shared by every node of a fleet.
/// Cheap to clone (one pool behind it).
///
/// Besides [`SessionStorage`], a node takes a session's [`WriterLease`] before it runs a
/// turn ([`acquire_lease`](Self::acquire_lease)), so one node at a time writes a session.
#[derive(Debug, Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

/// Text for a column copy of a metadata field: PostgreSQL text cannot hold NUL (the JSON
/// copy keeps it, escaped).
fn column(text: &str) -> std::borrow::Cow<'_, str> {
    match text.contains('\0') {
        true => text.replace('\0', "").into(),
        false => text.into(),
    }
}

fn decode_meta(id: &str, json: &str) -> Result<SessionMeta, StoreError> {
    serde_json::from_str(json).map_err(|err| StoreError::Corrupt {
        context: format!("metadata of session {id}"),
        message: err.to_string(),
    })
}

impl PgStore {
    /// A builder for the store at `url` (`postgres://user:password@host:port/database`,
    /// with the usual `sslmode`, `sslrootcert`, `application_name`… parameters).
    pub fn builder(url: impl Into<String>) -> PgStoreBuilder {
        PgStoreBuilder {
            url: SecretString::from(url.into()),
            options: Options {
                schema: DEFAULT_SCHEMA.to_string(),
                node: default_node(),
                max_connections: 8,
                connect_timeout: Duration::from_secs(10),
                op_timeout: Duration::from_secs(10),
                lease_ttl: Duration::from_secs(30),
                async_commit: true,
            },
        }
    }

    /// Connects to `url` with the default settings (see [`PgStoreBuilder::connect`]).
    pub async fn connect(url: &str) -> Result<Self, ConnectError> {
        Self::builder(url).connect().await
    }

    /// The connection pool (for administration and tests).
    pub fn pool(&self) -> &PgPool {
        &self.inner.pool
    }

    /// The schema holding the tables.
    pub fn schema(&self) -> &str {
        &self.inner.options.schema
    }

    /// How this node names itself.
    pub fn node_name(&self) -> &str {
        &self.inner.options.node
    }

    /// Takes session `id`'s writer lease for this node: [`StoreError::Busy`] while another
    /// live node holds it, [`StoreError::Unavailable`] when the database cannot be reached.
    /// One attempt; [`claim_writer`](SessionStorage::claim_writer) waits a moment for a lease
    /// being given back first.
    pub async fn acquire_lease(&self, id: &str) -> Result<WriterLease, StoreError> {
        lease::acquire(&self.inner, id, false).await
    }

    /// Closes the pool and the presence connection (leases this node holds are released by
    /// their holders or expire).
    pub async fn close(&self) {
        self.inner.presence_task.abort();
        self.inner.pool.close().await;
    }

    /// Locks session `id`'s row for the transaction, creating it when missing; returns its
    /// `(oldest_seq, last_seq)`.
    async fn lock_session(
        tx: &mut Transaction<'static, Postgres>,
        context: &str,
        id: &str,
    ) -> Result<(i64, i64), StoreError> {
        let sql = |err| store_error(context, id, err);
        const LOCK: &str =
            "SELECT oldest_seq, last_seq FROM sessions WHERE session_id = $1 FOR UPDATE";
        if let Some(row) = sqlx::query_as::<_, (i64, i64)>(LOCK)
            .bind(id)
            .fetch_optional(&mut **tx)
            .await
            .map_err(sql)?
        {
            return Ok(row);
        }
        sqlx::query("INSERT INTO sessions (session_id) VALUES ($1) ON CONFLICT DO NOTHING")
            .bind(id)
            .execute(&mut **tx)
            .await
            .map_err(sql)?;
        sqlx::query_as::<_, (i64, i64)>(LOCK)
            .bind(id)
            .fetch_one(&mut **tx)
            .await
            .map_err(sql)
    }

    /// Makes every asynchronous commit so far durable: a synchronous commit flushes the WAL
    /// up to its own record, so every commit before it (this session's among them) is
    /// durable once it returns.
    async fn flush_wal(&self, context: &str, id: &str) -> Result<(), StoreError> {
        if !self.inner.options.async_commit {
            // Every commit already waited for the WAL flush.
            return Ok(());
        }
        self.inner
            .bounded(context, async {
                let mut tx = self.inner.begin(context, id, true).await?;
                sqlx::query(
                    "UPDATE sessions SET record_count = record_count WHERE session_id = $1",
                )
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(|err| store_error(context, id, err))?;
                tx.commit()
                    .await
                    .map_err(|err| store_error(context, id, err))
            })
            .await
    }

    async fn exists(&self, id: &str) -> Result<bool, StoreError> {
        self.inner
            .timed("look a session up", id, async {
                sqlx::query_scalar::<_, bool>(
                    "SELECT EXISTS (SELECT 1 FROM sessions WHERE session_id = $1)",
                )
                .bind(id)
                .fetch_one(&self.inner.pool)
                .await
            })
            .await
    }
}
