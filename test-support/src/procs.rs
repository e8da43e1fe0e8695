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
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_string_lossy().parse::<i32>().ok())
        .filter(|pid| {
            stat_fields(pid).is_some_and(|f| f.len() >= 2 && f[0] != "Z" && f[1] == parent)
        })
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).contains(needle)
        })
        .collect()
}

/// Waits (at most `timeout`) until `path` holds a pid (as a test's command writes it with
/// `echo $$ > path`) and returns it; panics (failing the test) when it never does.
pub async fn pid_in(path: &Path, timeout: Duration) -> i32 {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
        {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "{} never held a pid",
            path.display()
        );
        tokio::time::sleep(POLL).await;
    }
}
