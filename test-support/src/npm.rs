//! Node and the npm projects of the tests (`agent-mcp/tests/servers`,
//! `adapter-acp/tests/acp-client`): each is pinned by its `package-lock.json` and installed
//! by [`npm_project`] on first use with `npm ci`, once, under a file lock that concurrent
//! test binaries wait on.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use crate::component::{lock, on_path, run_bounded, state_dir, tail, Skip, NODE_REQUIRED};

/// Bound on one `npm ci` (a cold npm cache downloads every package).
pub const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);
/// Bound on waiting for another test binary's `npm ci` of the same project.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(660);
/// Written into `node_modules` after a successful `npm ci`: an install is complete when this
/// file (or npm's own `node_modules/.package-lock.json`, written at the end of an install, as
/// by a `npm ci` run by hand) is newer than the lock file.
pub const STAMP: &str = ".agent-sdk-npm-ci";

fn skip(what: &str, why: impl Into<String>, how: impl Into<String>) -> Skip {
    Skip::new(NODE_REQUIRED, what, why, how)
}

/// The absolute path of a `node` on `PATH` that runs, and its major version.
pub fn node() -> Result<(PathBuf, u32), Skip> {
    static NODE: OnceLock<Result<(PathBuf, u32), Skip>> = OnceLock::new();
    NODE.get_or_init(|| {
        let how = "install Node >= 20 and npm (e.g. apt-get install nodejs npm)";
        let Some(path) = on_path("node") else {
            return Err(skip("Node", "node is not on PATH", how));
        };
        let output = Command::new(&path)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| skip("Node", format!("{} does not run: {e}", path.display()), how))?;
        let version = String::from_utf8_lossy(&output.stdout).trim().to_string();
        let major = version
            .trim_start_matches('v')
            .split('.')
            .next()
            .and_then(|m| m.parse::<u32>().ok());
        match major {
            Some(major) if output.status.success() => Ok((path, major)),
            _ => Err(skip(
                "Node",
                format!("`{} --version` printed {version:?}", path.display()),
                how,
            )),
        }
    })
    .clone()
}

/// The lowest Node major version `package.json` accepts (`"engines": {"node": ">=N"}`).
fn wanted_node(dir: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(dir.join("package.json")).ok()?;
    let manifest: serde_json::Value = serde_json::from_str(&text).ok()?;
    let range = manifest["engines"]["node"].as_str()?;
    let digits: String = range
        .trim()
        .trim_start_matches(">=")
        .trim()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Whether `dir/node_modules` holds a complete install of the current lock file.
fn installed(dir: &Path) -> bool {
    let Some(lock) = modified(&dir.join("package-lock.json")) else {
        return false;
    };
    [STAMP, ".package-lock.json"]
        .iter()
        .filter_map(|marker| modified(&dir.join("node_modules").join(marker)))
        .any(|done| done >= lock)
}

/// The npm project in `dir`, installed: returns `dir/node_modules`.
///
/// When `node_modules` is missing or older than `package-lock.json`, runs
/// `npm ci --no-audit --no-fund` in `dir` (at most [`INSTALL_TIMEOUT`]) under the lock
/// `dir/.npm-ci.lock`: concurrent test binaries wait for it (at most [`LOCK_TIMEOUT`]) and
/// find the install done. The result (an install or its failure) is kept for the rest of the
/// process, so a failing install is tried once per test binary.
///
/// A [`Skip`] (turned into a failure by `AGENT_SDK_NODE=required`) when Node or npm is
/// missing, Node is older than `package.json`'s `engines.node`, or `npm ci` fails.
pub fn npm_project(dir: &Path) -> Result<PathBuf, Skip> {
    static PROJECTS: OnceLock<Mutex<HashMap<PathBuf, Result<PathBuf, Skip>>>> = OnceLock::new();
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let projects = PROJECTS.get_or_init(Mutex::default);
    let mut projects = projects.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(result) = projects.get(&dir) {
        return result.clone();
    }
    let result = install(&dir);
    projects.insert(dir, result.clone());
    result
}

fn install(dir: &Path) -> Result<PathBuf, Skip> {
    let what = format!("the npm packages of {}", dir.display());
    let manual = format!("npm ci --prefix {}", dir.display());
    let (_, major) = node().map_err(|s| skip(&what, s.why, s.how))?;
    if let Some(wanted) = wanted_node(dir) {
        if major < wanted {
            return Err(skip(
                &what,
                format!("Node {major} is older than the {wanted} its package.json needs"),
                format!("install Node >= {wanted}"),
            ));
        }
    }
    let node_modules = dir.join("node_modules");
    if installed(dir) {
        return Ok(node_modules);
    }
    let Some(npm) = on_path("npm") else {
        return Err(skip(
            &what,
            "npm is not on PATH",
            "install npm (it comes with Node)",
        ));
    };
    let _lock = lock(&dir.join(".npm-ci.lock"), LOCK_TIMEOUT)
        .map_err(|why| skip(&what, why, format!("run `{manual}`")))?;
    if installed(dir) {
        // Another test binary installed it while this one waited.
        return Ok(node_modules);
    }
    let name = dir
        .file_name()
        .map_or_else(|| "project".into(), |n| n.to_string_lossy().into_owned());
    let log = state_dir().join(format!("npm-ci-{name}.log"));
    let _ = std::fs::remove_file(&log);
    let _ = writeln!(
        std::io::stderr().lock(),
        "test-support: npm ci in {} (first use; pinned by its package-lock.json; log: {})",
        dir.display(),
        log.display()
    );
    let mut command = Command::new(npm);
    command
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(dir);
    let status = run_bounded(command, &log, INSTALL_TIMEOUT)
        .map_err(|why| skip(&what, why, format!("run `{manual}`")))?;
    if !status.success() {
        return Err(skip(
            &what,
            format!(
                "npm ci failed ({status}): {}",
                tail(&log, 5).replace('\n', " | ")
            ),
            format!("run `{manual}` (it needs the npm registry or a warm npm cache)"),
        ));
    }
    // A project without dependencies gets no node_modules from npm.
    let _ = std::fs::create_dir_all(&node_modules);
    std::fs::write(node_modules.join(STAMP), b"npm ci done\n").map_err(|e| {
        skip(
            &what,
            format!("cannot write {}: {e}", node_modules.join(STAMP).display()),
            format!("run `{manual}`"),
        )
    })?;
    Ok(node_modules)
}
