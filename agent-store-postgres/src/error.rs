//! How database failures become agent-host's [`StoreError`]s: a server that cannot be
//! reached, a pool or operation timeout, or a connection-class SQLSTATE is
//! [`StoreError::Unavailable`] (the request that needed the database fails, the process goes
//! on); a unique violation is [`StoreError::Conflict`]; data that does not decode is
//! [`StoreError::Corrupt`].

use std::time::Duration;

use agent_host::session::StoreError;

/// Why [`PgStore::connect`](crate::PgStore::connect) failed.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The URL is not a PostgreSQL connection string.
    #[error("invalid PostgreSQL session store URL: {0}")]
    InvalidUrl(String),
    /// The server could not be reached within the connect timeout.
    #[error("cannot connect to the PostgreSQL session store within {timeout:?}: {source}")]
    Unreachable {
        /// How long connecting was tried (with backoff).
        timeout: Duration,
        /// The last failure.
        source: sqlx::Error,
    },
    /// The schema could not be created or migrated.
    #[error("cannot migrate the PostgreSQL session store schema {schema}: {source}")]
    Migrate {
        /// The schema.
        schema: String,
        /// The cause.
        source: sqlx::migrate::MigrateError,
    },
    /// A query while setting up failed.
    #[error("cannot set up the PostgreSQL session store ({context}): {source}")]
    Setup {
        /// What was being done.
        context: &'static str,
        /// The cause.
        source: sqlx::Error,
    },
}

/// The SQLSTATE of a unique violation.
const UNIQUE_VIOLATION: &str = "23505";

/// Whether `err` means the database (or the way to it) is down rather than that the request
/// was wrong: worth retrying later.
pub(crate) fn is_transient(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| {
            // Class 08: connection exception; 57P01-57P05: admin/crash shutdown, cannot
            // connect now, idle session timeout; 53300: too many connections.
            code.starts_with("08") || code.starts_with("57P") || code == "53300"
        }),
        _ => false,
    }
}

/// Maps a driver error to a [`StoreError`], with what was being done.
pub(crate) fn store_error(context: &str, session_id: &str, err: sqlx::Error) -> StoreError {
    if let sqlx::Error::Database(db) = &err {
        if db.code().as_deref() == Some(UNIQUE_VIOLATION) {
            return StoreError::Conflict {
                session_id: session_id.to_string(),
                message: format!("{context}: {}", db.message()),
            };
        }
    }
    match err {
        sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_) => StoreError::Corrupt {
            context: format!("{context} (session {session_id})"),
            message: err.to_string(),
        },
        other => StoreError::Unavailable {
            context: context.to_string(),
            source: Box::new(other),
        },
    }
}

/// An operation that did not finish within the operation timeout.
#[derive(Debug, thiserror::Error)]
#[error("no answer from the database within {0:?}")]
pub(crate) struct TimedOut(pub(crate) Duration);

/// A [`StoreError::Unavailable`] for an operation that timed out.
pub(crate) fn timed_out(context: &str, after: Duration) -> StoreError {
    StoreError::Unavailable {
        context: context.to_string(),
        source: Box::new(TimedOut(after)),
    }
}

/// A number stored as a PostgreSQL `BIGINT`.
pub(crate) fn to_i64(context: &str, session_id: &str, value: u64) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::Corrupt {
        context: format!("{context} (session {session_id})"),
        message: format!("{value} does not fit a BIGINT"),
    })
}

/// A `BIGINT` read back as a count or seq.
pub(crate) fn to_u64(context: &str, session_id: &str, value: i64) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|_| StoreError::Corrupt {
        context: format!("{context} (session {session_id})"),
        message: format!("negative value {value}"),
    })
}
