//! The PostgreSQL server of the tests (the session store's and the fleet's).
//!
//! [`server`] is `AGENT_SDK_PG_URL` when it is set (`.ci/run` starts one). Otherwise, when
//! PostgreSQL is installed (`initdb` and `pg_ctl` on `PATH`, else the newest
//! `/usr/lib/postgresql/*/bin`), it starts one throw-away server with `scripts/pg-test.sh
//! start` and shares it: within a test binary, and across the binaries of one `cargo test`
//! through a state file under the target directory (`target/<profile>/test-components`),
//! created under a lock. The script leaves a watchdog (in a session of its own, so Ctrl-C
//! does not kill it) that stops and deletes the server once its owner is gone: the
//! `cargo test` (or `cargo nextest`) process that runs the test binaries, or the test binary
//! itself when it was started some other way. Nothing outlives the run, even when a test
//! binary is killed.
//!
//! Without PostgreSQL the tests print one `skipped: …` line and pass, unless
//! `AGENT_SDK_PG=required` (`.ci/run`), when they fail.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use crate::component::{lock, run_bounded, state_dir, tail, Skip, PG_REQUIRED};

/// Bound on `scripts/pg-test.sh start` (initdb and the server's start).
pub const START_TIMEOUT: Duration = Duration::from_secs(180);
/// Bound on the other actions of the script (stop, pause, resume).
pub const ACTION_TIMEOUT: Duration = Duration::from_secs(120);

const HOW: &str = "install PostgreSQL (apt-get install postgresql) or set AGENT_SDK_PG_URL, \
                   see scripts/pg-test.sh";

fn skip(why: impl Into<String>, how: impl Into<String>) -> Skip {
    Skip::new(PG_REQUIRED, "PostgreSQL", why, how)
}

/// The repository's `scripts/pg-test.sh`.
pub fn pg_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/pg-test.sh")
}

/// The directory of `initdb` and `pg_ctl`: `AGENT_SDK_PG_BIN`, else `PATH`, else the newest
/// `/usr/lib/postgresql/*/bin`.
pub fn bin_dir() -> Option<PathBuf> {
    let has_tools = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Some(dir) = std::env::var_os("AGENT_SDK_PG_BIN") {
        return Some(PathBuf::from(dir)).filter(|d| has_tools(d));
    }
    if let Some(paths) = std::env::var_os("PATH") {
        if let Some(dir) = std::env::split_paths(&paths).find(|d| has_tools(d)) {
            return Some(dir);
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_string_lossy().parse::<u32>().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .filter(|(_, bin)| has_tools(bin))
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// `pid` and its start time (field 22 of `/proc/PID/stat`): a process, told apart from a
/// later one with the same pid.
fn process(pid: u32) -> Option<(u32, String)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(") ")?;
    let start = rest.split_whitespace().nth(19)?.to_string();
    Some((pid, start))
}

/// The process whose end ends the shared server: the `cargo` running this test binary, or
/// this binary itself.
fn owner() -> (u32, String) {
    let me = std::process::id();
    let parent = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|stat| {
            let (_, rest) = stat.rsplit_once(") ")?;
            rest.split_whitespace().nth(1)?.parse::<u32>().ok()
        });
    let by_cargo = parent.filter(|ppid| {
        std::fs::read_to_string(format!("/proc/{ppid}/comm"))
            .is_ok_and(|comm| matches!(comm.trim(), "cargo" | "cargo-nextest"))
    });
    by_cargo
        .and_then(process)
        .or_else(|| process(me))
        .unwrap_or((me, String::new()))
}

/// Runs `scripts/pg-test.sh ACTION` with its state in `state`; the script's output is kept in
/// `state`'s directory.
fn script(action: &str, state: &Path, owner: Option<u32>, timeout: Duration) -> Result<(), String> {
    let log = state.with_extension("log");
    let mut command = Command::new(pg_script());
    // The script finds the binaries itself, the same way (following pg_ctl's symlink to the
    // directory that also holds pg_isready).
    command.arg(action).env("AGENT_SDK_PG_STATE", state);
    match owner {
        Some(pid) => command.env("AGENT_SDK_PG_OWNER", pid.to_string()),
        None => command.env_remove("AGENT_SDK_PG_OWNER"),
    };
    let status = run_bounded(command, &log, timeout)?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "scripts/pg-test.sh {action} failed ({status}): {}",
            tail(&log, 10).replace('\n', " | ")
        ))
    }
}

/// The URL the script recorded in `state`.
fn recorded_url(state: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(state)
        .map_err(|e| format!("cannot read {}: {e}", state.display()))?;
    text.lines()
        .find_map(|l| l.strip_prefix("AGENT_SDK_PG_URL="))
        .map(|url| url.trim_matches('\'').to_string())
        .ok_or_else(|| format!("{} records no AGENT_SDK_PG_URL", state.display()))
}

/// Starts (or joins) the server shared by this `cargo test` run.
fn shared() -> Result<String, Skip> {
    if bin_dir().is_none() {
        return Err(skip(
            "AGENT_SDK_PG_URL is not set and no initdb/pg_ctl is on PATH or in \
             /usr/lib/postgresql/*/bin",
            HOW,
        ));
    }
    let (pid, start) = owner();
    let dir = state_dir();
    let state = dir.join(format!("pg-{pid}-{start}.env"));
    let _lock =
        lock(&dir.join("pg.lock"), START_TIMEOUT + ACTION_TIMEOUT).map_err(|why| skip(why, HOW))?;
    script("start", &state, Some(pid), START_TIMEOUT)
        .and_then(|()| recorded_url(&state))
        .map_err(|why| skip(why, HOW))
}

/// The test server's superuser URL: `AGENT_SDK_PG_URL`, else the server shared by this
/// `cargo test` run (started on first use), else why there is none.
pub fn server() -> Result<String, Skip> {
    if let Ok(url) = std::env::var("AGENT_SDK_PG_URL") {
        if !url.trim().is_empty() {
            return Ok(url.trim().to_string());
        }
    }
    static SHARED: OnceLock<Result<String, Skip>> = OnceLock::new();
    SHARED.get_or_init(shared).clone()
}

/// [`server`], or `None` after printing the one `skipped: …` line (the test returns).
///
/// # Panics
///
/// When there is no server and `AGENT_SDK_PG=required`: the test fails.
pub fn server_url() -> Option<String> {
    server().map_err(|skip| skip.report()).ok()
}

/// A private PostgreSQL server (for tests that stop and restart it), stopped and deleted on
/// drop (and by the script's watchdog should this test binary die first).
pub struct PrivateServer {
    /// Its superuser URL.
    pub url: String,
    state: PathBuf,
    _dir: tempfile::TempDir,
}

impl std::fmt::Debug for PrivateServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrivateServer")
            .field("url", &self.url)
            .finish()
    }
}

impl PrivateServer {
    /// Starts one with `scripts/pg-test.sh start`, or why it cannot.
    pub fn try_start() -> Result<Self, Skip> {
        if bin_dir().is_none() {
            return Err(skip(
                "no initdb/pg_ctl on PATH or in /usr/lib/postgresql/*/bin for a private server",
                "install PostgreSQL (apt-get install postgresql)",
            ));
        }
        let dir = tempfile::Builder::new()
            .prefix("pg-private-")
            .tempdir_in(state_dir())
            .map_err(|e| skip(format!("no state directory: {e}"), HOW))?;
        let state = dir.path().join("pg.env");
        script("start", &state, Some(std::process::id()), START_TIMEOUT)
            .and_then(|()| recorded_url(&state))
            .map(|url| Self {
                url,
                state,
                _dir: dir,
            })
            .map_err(|why| skip(why, HOW))
    }

    /// [`PrivateServer::try_start`], or `None` after printing the one `skipped: …` line.
    ///
    /// # Panics
    ///
    /// When it cannot start and `AGENT_SDK_PG=required`: the test fails.
    pub fn start() -> Option<Self> {
        Self::try_start().map_err(|skip| skip.report()).ok()
    }

    fn run(&self, action: &str) {
        if let Err(e) = script(action, &self.state, None, ACTION_TIMEOUT) {
            panic!("{e}");
        }
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
        let _ = script("stop", &self.state, None, ACTION_TIMEOUT);
    }
}
