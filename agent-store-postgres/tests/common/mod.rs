//! The tests' PostgreSQL server (see `agent_store_postgres::testing`).
#![allow(dead_code)]

pub use agent_store_postgres::testing::{fresh_database, server_url};
use agent_store_postgres::PgStore;

/// A store on a fresh database, or `None` when no server is configured.
pub async fn fresh_store() -> Option<(String, PgStore)> {
    let url = server_url()?;
    let db = fresh_database(&url).await;
    let store = PgStore::connect(&db).await.expect("connect the store");
    Some((db, store))
}
