//! Test helpers (feature `test-util`): the PostgreSQL server of the tests and fresh
//! databases on it.
//!
//! The server is `AGENT_SDK_PG_URL` (a superuser URL, as `scripts/pg-test.sh start` exports
//! it; `.ci/run` starts one). Without it tests skip, unless `AGENT_SDK_PG=required` (as under
//! CI), when they fail.

use std::path::PathBuf;
use std::process::Command;

/// The test server's URL, or `None` (the test returns early) when none is configured.
///
/// # Panics
///
/// When `AGENT_SDK_PG=required` and no URL is set: a test that needs the server fails.
pub fn server_url() -> Option<String> {
    match std::env::var("AGENT_SDK_PG_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            let required = std::env::var("AGENT_SDK_PG").is_ok_and(|v| v == "required");
            assert!(
                !required,
                "AGENT_SDK_PG=required but AGENT_SDK_PG_URL is not set: start a server with \
                 `eval \"$(scripts/pg-test.sh start)\"`"
            );
            eprintln!("skipping: no PostgreSQL (set AGENT_SDK_PG_URL, see scripts/pg-test.sh)");
            None
        }
    }
}

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

/// The repository's `scripts/pg-test.sh`.
pub fn pg_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/pg-test.sh")
}

/// A private PostgreSQL server (for tests that stop and restart it), stopped and deleted
/// on drop.
pub struct PrivateServer {
    /// Its superuser URL.
    pub url: String,
    state: tempfile::TempDir,
}

impl std::fmt::Debug for PrivateServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrivateServer")
            .field("url", &self.url)
            .finish()
    }
}

impl PrivateServer {
    /// Starts one with `scripts/pg-test.sh start`, or `None` when no test server is
    /// configured at all ([`server_url`]).
    ///
    /// # Panics
    ///
    /// When the script fails.
    pub fn start() -> Option<Self> {
        server_url()?;
        let state = tempfile::tempdir().expect("tempdir");
        let out = Command::new(pg_script())
            .arg("start")
            .env("AGENT_SDK_PG_STATE", state.path().join("pg.env"))
            .output()
            .expect("run scripts/pg-test.sh");
        assert!(
            out.status.success(),
            "scripts/pg-test.sh start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let url = stdout
            .lines()
            .find_map(|l| l.strip_prefix("export AGENT_SDK_PG_URL="))
            .expect("the script prints the URL")
            .to_string();
        Some(Self { url, state })
    }

    fn run(&self, action: &str) {
        let out = Command::new(pg_script())
            .arg(action)
            .env("AGENT_SDK_PG_STATE", self.state.path().join("pg.env"))
            .output()
            .expect("run scripts/pg-test.sh");
        assert!(
            out.status.success(),
            "scripts/pg-test.sh {action} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Stops the server, keeping its data (a database outage).
    ///
    /// # Panics
    ///
    /// When the script fails.
    pub fn pause(&self) {
        self.run("pause");
    }

    /// Starts it again on the same port.
    ///
    /// # Panics
    ///
    /// When the script fails.
    pub fn resume(&self) {
        self.run("resume");
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        let _ = Command::new(pg_script())
            .arg("stop")
            .env("AGENT_SDK_PG_STATE", self.state.path().join("pg.env"))
            .output();
    }
}
