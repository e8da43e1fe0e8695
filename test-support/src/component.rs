//! Outside components the tests need (Node and npm packages, PostgreSQL, llama-server):
//! what a test does when one cannot be had, and the bounded waits shared by the helpers
//! that provide them ([`crate::npm`], [`crate::pg`], [`crate::real_model`]).
//!
//! A helper returns the component or a [`Skip`]. [`Skip::report`] prints ONE line to the
//! process's stderr (`skipped: <test>: <what> (<why>; <how to get it>)`, past the test
//! harness's capture, so `cargo test` shows it) and the test returns, passing; when the
//! component's variable is `required` (`.ci/run` sets them all) it panics instead, failing
//! the test:
//!
//! | component | variable |
//! |---|---|
//! | Node, npm and the pinned npm packages | `AGENT_SDK_NODE=required` |
//! | PostgreSQL | `AGENT_SDK_PG=required` |
//! | llama-server (a real model) | `AGENT_SDK_REAL_MODEL=required` |
//! | curl, the MCP OAuth tests' browser | `AGENT_SDK_CURL=required` |

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::mpsc;
use std::time::Duration;

/// `AGENT_SDK_NODE=required`: Node, npm or an npm project that cannot be had fails the test.
pub const NODE_REQUIRED: &str = "AGENT_SDK_NODE";
/// `AGENT_SDK_PG=required`: no PostgreSQL fails the test.
pub const PG_REQUIRED: &str = "AGENT_SDK_PG";
/// `AGENT_SDK_REAL_MODEL=required`: no llama-server (`AGENT_SDK_LLAMA_URL`) fails the test.
pub const REAL_MODEL_REQUIRED: &str = "AGENT_SDK_REAL_MODEL";
/// `AGENT_SDK_CURL=required`: no curl (the MCP OAuth tests' browser) fails the test.
pub const CURL_REQUIRED: &str = "AGENT_SDK_CURL";

/// A component a test needs and cannot have: what, why, and how to get it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    /// The variable that, set to `required`, turns the skip into a failure.
    pub required_by: &'static str,
    /// What is missing (`the MCP reference servers`).
    pub what: String,
    /// Why it cannot be had (`node is not on PATH`).
    pub why: String,
    /// How to get it (`install Node >= 18 and npm`).
    pub how: String,
}

impl Skip {
    /// A skip of `what`, turned into a failure by `required_by=required`.
    pub fn new(
        required_by: &'static str,
        what: impl Into<String>,
        why: impl Into<String>,
        how: impl Into<String>,
    ) -> Self {
        Self {
            required_by,
            what: what.into(),
            why: why.into(),
            how: how.into(),
        }
    }

    /// Whether `required_by` is set to `required` (as `.ci/run` sets it).
    pub fn is_required(&self) -> bool {
        required(self.required_by)
    }

    /// The one line: `skipped: <test>: <what> (<why>; <how>)`.
    pub fn line(&self) -> String {
        let test = std::thread::current()
            .name()
            .filter(|n| *n != "main")
            .map(|n| format!("{n}: "))
            .unwrap_or_default();
        format!("skipped: {test}{} ({}; {})", self.what, self.why, self.how)
    }

    /// Prints [`Skip::line`] to the process's stderr; the caller returns, and the test passes.
    ///
    /// # Panics
    ///
    /// When `required_by` is `required`: the test fails, naming what is missing and why.
    pub fn report(&self) {
        assert!(
            !self.is_required(),
            "{}=required but {} cannot be had: {} ({})",
            self.required_by,
            self.what,
            self.why,
            self.how
        );
        // Straight to the file descriptor: the harness captures `eprintln!`, and a skip
        // should show in `cargo test`'s output even when the test passes.
        let _ = writeln!(std::io::stderr().lock(), "{}", self.line());
    }
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}; {})", self.what, self.why, self.how)
    }
}

/// Whether `variable` is set to `required`.
pub fn required(variable: &str) -> bool {
    std::env::var(variable).is_ok_and(|v| v.trim() == "required")
}

/// Evaluates to the component of `Ok`, or reports the [`Skip`] of `Err` (failing when it is
/// required) and returns from the enclosing test.
///
/// ```no_run
/// # fn a_test() {
/// let dir = test_support::or_skip!(test_support::npm::npm_project("tests/client".as_ref()));
/// # let _ = dir;
/// # }
/// ```
#[macro_export]
macro_rules! or_skip {
    ($component:expr) => {
        match $component {
            Ok(component) => component,
            Err(skip) => {
                $crate::component::Skip::report(&skip);
                return;
            }
        }
    };
}

/// Where the helpers keep their state and locks: `target/<profile>/test-components`, next to
/// the test executable's `deps` directory (so one `cargo test` shares it), else a directory
/// under the system's temporary directory.
pub fn state_dir() -> PathBuf {
    let beside_deps = std::env::current_exe().ok().and_then(|exe| {
        let deps = exe.parent()?;
        (deps.file_name()? == "deps").then(|| deps.parent().map(Path::to_path_buf))?
    });
    let dir = beside_deps
        .map(|profile| profile.join("test-components"))
        .unwrap_or_else(|| std::env::temp_dir().join("agent-sdk-test-components"));
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// An exclusive lock on a file, held until dropped (other test binaries wait on it).
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

/// Takes the exclusive lock on `path` (created when missing), waiting at most `timeout` for
/// another holder (another test binary, or another test of this one) to let go.
pub fn lock(path: &Path, timeout: Duration) -> Result<Lock, String> {
    use fs4::fs_std::FileExt;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| format!("cannot open the lock file {}: {e}", path.display()))?;
    let (tx, rx) = mpsc::channel();
    // The blocking lock in a thread of its own, so the wait has a bound.
    std::thread::spawn(move || {
        let locked = file.lock_exclusive().map(|()| file);
        let _ = tx.send(locked);
    });
    match rx.recv_timeout(timeout) {
        Ok(Ok(file)) => Ok(Lock { _file: file }),
        Ok(Err(e)) => Err(format!("cannot lock {}: {e}", path.display())),
        Err(_) => Err(format!(
            "{} stayed locked for {timeout:?} (another test binary installing?)",
            path.display()
        )),
    }
}

/// Runs `command` (its stdout and stderr appended to `log`) in a process group of its own,
/// at most `timeout`; on timeout the whole group is killed.
pub fn run_bounded(
    mut command: Command,
    log: &Path,
    timeout: Duration,
) -> Result<ExitStatus, String> {
    use std::os::unix::process::CommandExt;
    let out = File::options()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| format!("cannot open {}: {e}", log.display()))?;
    let err = out
        .try_clone()
        .map_err(|e| format!("cannot open {}: {e}", log.display()))?;
    let mut child = command
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {:?}: {e}", command.get_program()))?;
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    match rx.recv_timeout(timeout) {
        Ok(Ok(status)) => Ok(status),
        Ok(Err(e)) => Err(format!("cannot wait for {:?}: {e}", command.get_program())),
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .status();
            Err(format!(
                "{:?} did not finish within {timeout:?}",
                command.get_program()
            ))
        }
    }
}

/// The last `n` lines of `path` (a command's log), for an error message.
pub fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The absolute path of `program` on `PATH`, when there is one.
pub fn on_path(program: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}
