//! Processes seen through Linux's `/proc`: whether a pid is gone, waiting until it is, a
//! process's children, and a pid a test's command writes into a file.
//!
//! Polling is the only way here: nothing reports another process's exit or a file being
//! written. Every wait is bounded by the timeout it is given.

use std::fmt::Display;
use std::path::Path;
use std::time::{Duration, Instant};

/// How often the waits look again.
const POLL: Duration = Duration::from_millis(20);

/// The state letter and the fields after it in `/proc/PID/stat`, when the process exists.
fn stat_fields(pid: impl Display) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(") ")?;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// Whether process `pid` is gone: no such process, or a zombie (or dead) nobody reaped yet.
pub fn gone(pid: impl Display) -> bool {
    stat_fields(pid).is_none_or(|f| f.first().is_none_or(|s| s == "Z" || s == "X"))
}

/// Whether process `pid` is alive (not [`gone`]).
pub fn alive(pid: impl Display) -> bool {
    !gone(pid)
}

/// Waits (at most `timeout`) until every one of `pids` is [`gone`]; returns those still
/// alive (empty when all went).
pub async fn wait_gone<P: Copy + Display>(pids: &[P], timeout: Duration) -> Vec<P> {
    let deadline = Instant::now() + timeout;
    loop {
        let alive: Vec<P> = pids.iter().copied().filter(|p| !gone(*p)).collect();
        if alive.is_empty() || Instant::now() >= deadline {
            return alive;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// [`wait_gone`] blocking the thread, for synchronous tests.
pub fn wait_gone_blocking<P: Copy + Display>(pids: &[P], timeout: Duration) -> Vec<P> {
    let deadline = Instant::now() + timeout;
    loop {
        let alive: Vec<P> = pids.iter().copied().filter(|p| !gone(*p)).collect();
        if alive.is_empty() || Instant::now() >= deadline {
            return alive;
        }
        std::thread::sleep(POLL);
    }
}

/// The live child processes of `parent` whose command line contains `needle`.
pub fn children(parent: u32, needle: &str) -> Vec<i32> {
    let parent = parent.to_string();
    live(|f| f.len() >= 2 && f[1] == parent)
        .into_iter()
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).contains(needle)
        })
        .collect()
}

/// The pid `path` holds, when it holds one.
fn read_pid(path: &Path) -> Result<i32, ()> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
        .ok_or(())
}

/// Waits (at most `timeout`) until `path` holds a pid (as a test's command writes it with
/// `echo $$ > path`) and returns it; panics (failing the test) when it never does.
pub async fn pid_in(path: &Path, timeout: Duration) -> i32 {
    let pid = poll(timeout, || read_pid(path)).await;
    pid.unwrap_or_else(|()| panic!("{} never held a pid", path.display()))
}

/// [`pid_in`] blocking the thread, for synchronous tests.
pub fn pid_in_blocking(path: &Path, timeout: Duration) -> i32 {
    let pid = poll_blocking(timeout, || read_pid(path));
    pid.unwrap_or_else(|()| panic!("{} never held a pid", path.display()))
}

/// The live (not zombie) processes of process group `pgid`.
pub fn group(pgid: i32) -> Vec<i32> {
    let pgid = pgid.to_string();
    live(|f| f.len() > 2 && f[2] == pgid)
}

/// The processes that are not zombies and whose `/proc/PID/stat` fields (the state letter
/// first) pass `keep`.
fn live(keep: impl Fn(&[String]) -> bool) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_string_lossy().parse::<i32>().ok())
        .filter(|pid| {
            stat_fields(pid).is_some_and(|f| f.first().is_some_and(|s| s != "Z") && keep(&f))
        })
        .collect()
}

/// Ok when process group `pgid` has no live process, else its members.
fn group_empty(pgid: i32) -> Result<(), Vec<i32>> {
    let members = group(pgid);
    if members.is_empty() {
        Ok(())
    } else {
        Err(members)
    }
}

/// Waits (at most `timeout`) until process group `pgid` has no live process; returns those
/// still there (empty when all went).
pub async fn wait_group_gone(pgid: i32, timeout: Duration) -> Vec<i32> {
    poll(timeout, || group_empty(pgid))
        .await
        .err()
        .unwrap_or_default()
}

/// [`wait_group_gone`] blocking the thread, for synchronous tests.
pub fn wait_group_gone_blocking(pgid: i32, timeout: Duration) -> Vec<i32> {
    poll_blocking(timeout, || group_empty(pgid))
        .err()
        .unwrap_or_default()
}

/// Calls `probe` every [`POLL`] until it is `Ok` or `timeout` has passed; its last answer.
async fn poll<T, E>(timeout: Duration, mut probe: impl FnMut() -> Result<T, E>) -> Result<T, E> {
    let deadline = Instant::now() + timeout;
    loop {
        let answer = probe();
        if answer.is_ok() || Instant::now() >= deadline {
            return answer;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// [`poll`] blocking the thread.
fn poll_blocking<T, E>(timeout: Duration, mut probe: impl FnMut() -> Result<T, E>) -> Result<T, E> {
    let deadline = Instant::now() + timeout;
    loop {
        let answer = probe();
        if answer.is_ok() || Instant::now() >= deadline {
            return answer;
        }
        std::thread::sleep(POLL);
    }
}

/// The resident set size of process `pid` in KiB (`VmRSS`), 0 when it cannot be read.
pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}
