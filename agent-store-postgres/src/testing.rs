//! Test helpers (feature `test-util`): fresh databases on the tests' PostgreSQL server.
//!
//! The server itself (`AGENT_SDK_PG_URL`, else a throw-away one started for the test run, else
//! a skip) is `test_support::pg::server_url`; a private one, stopped and restarted by a test,
//! is `test_support::pg::PrivateServer`.

/// `url` with its database replaced by `database`.
pub fn with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let base = match base[scheme_end..].find('/') {
        Some(slash) => &base[..scheme_end + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{base}/{database}?{query}"),
        None => format!("{base}/{database}"),
    }
}

/// Creates a fresh, empty database on the server at `url` and returns its URL.
///
/// # Panics
///
/// When the server cannot be reached or refuses.
pub async fn fresh_database(url: &str) -> String {
    let name = format!("agent_test_{}", uuid::Uuid::new_v4().simple());
    let admin = sqlx::PgPool::connect(url)
        .await
        .expect("connect to the test server");
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&admin)
        .await
        .expect("create a test database");
    admin.close().await;
    with_database(url, &name)
}
