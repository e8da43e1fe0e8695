//! The tests' PostgreSQL server (see `test_support::pg`) and fresh databases on it.
#![allow(dead_code)]

pub use agent_store_postgres::testing::fresh_database;
use agent_store_postgres::PgStore;
pub use test_support::pg::server_url;

/// A store on a fresh database, or `None` (after the skip line) without a server.
pub async fn fresh_store() -> Option<(String, PgStore)> {
    let url = server_url()?;
    let db = fresh_database(&url).await;
    let store = PgStore::connect(&db).await.expect("connect the store");
    Some((db, store))
}
