//! The schema and its versioned migrations, embedded in the binary and applied on connect.
//!
//! Migrations are sqlx's: each has a version and a SHA-384 checksum recorded in
//! `_sqlx_migrations` (in the store's own schema, so another sqlx application's migrations
//! in the same database are never mistaken for ours); an applied migration whose text
//! changed is an error, a newer database than this binary knows is fine (`ignore_missing`),
//! and PostgreSQL's advisory lock makes nodes that start together apply each migration once.
//! A new migration is a new file under `migrations/` and a new entry in [`MIGRATIONS`];
//! applied files never change.

use std::borrow::Cow;

use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::PgPool;

use crate::error::ConnectError;

/// Every migration, oldest first: `(version, description, SQL)`.
pub const MIGRATIONS: &[(i64, &str, &str)] = &[(
    1,
    "sessions",
    include_str!("../migrations/0001_sessions.sql"),
)];

/// The newest schema version this build knows.
pub fn latest_version() -> i64 {
    MIGRATIONS.last().map_or(0, |(version, _, _)| *version)
}

/// Whether `schema` is a plain identifier (it is spliced into `CREATE SCHEMA`).
pub(crate) fn valid_schema(schema: &str) -> bool {
    let mut chars = schema.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && schema.len() <= 63
}

fn migrator() -> Migrator {
    let migrations: Vec<Migration> = MIGRATIONS
        .iter()
        .map(|(version, description, sql)| {
            Migration::new(
                *version,
                Cow::Borrowed(*description),
                MigrationType::Simple,
                Cow::Borrowed(*sql),
                false,
            )
        })
        .collect();
    Migrator {
        migrations: Cow::Owned(migrations),
        ignore_missing: true,
        locking: true,
        no_tx: false,
    }
}

/// Creates `schema` when missing and applies the migrations not applied yet. The pool's
/// connections have `search_path` set to `schema`.
pub(crate) async fn run(pool: &PgPool, schema: &str) -> Result<(), ConnectError> {
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)")
            .bind(schema)
            .fetch_one(pool)
            .await
            .map_err(|source| ConnectError::Setup {
                context: "look the schema up",
                source,
            })?;
    if !exists {
        // Two nodes may race here: IF NOT EXISTS makes the loser's a no-op... except for
        // the unique index on the catalog, which the retry below absorbs.
        let create = format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\"");
        if let Err(source) = sqlx::query(&create).execute(pool).await {
            let raced = matches!(&source, sqlx::Error::Database(db) if db.code().as_deref() == Some("23505"));
            if !raced {
                return Err(ConnectError::Setup {
                    context: "create the schema",
                    source,
                });
            }
        }
    }
    migrator()
        .run(pool)
        .await
        .map_err(|source| ConnectError::Migrate {
            schema: schema.to_string(),
            source,
        })
}
