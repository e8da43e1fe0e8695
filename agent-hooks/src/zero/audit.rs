//! Zero's hook audit log: one JSON line per hook start and completion, numbered, in
//! `$XDG_DATA_HOME/zero/hooks/audit.jsonl`, shared with Zero itself through the same
//! `<log>.lock` file protocol (an exclusive-create lock file holding a token, reclaimed
//! when stale). Writing the log never holds up a hook: failures are logged and skipped.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::wire::AuditEvent;

/// How long to wait for another process's lock.
const LOCK_TIMEOUT: Duration = Duration::from_secs(10);
/// A lock older than this was left by a crashed holder.
const LOCK_STALE_AFTER: Duration = Duration::from_secs(60);
const LOCK_RETRY: Duration = Duration::from_millis(20);
/// Bytes read from the end of the log to find the last sequence number.
const TAIL_WINDOW: u64 = 8 * 1024;

/// The audit log of one hooks runner.
#[derive(Debug)]
pub(crate) struct AuditLog {
    path: PathBuf,
    /// Serialises this process's appends (the lock file serialises processes).
    local: tokio::sync::Mutex<()>,
}

impl AuditLog {
    pub(crate) fn new(path: PathBuf) -> Self {
        Self {
            path,
            local: tokio::sync::Mutex::new(()),
        }
    }

    /// Appends `event`, numbering and stamping it.
    pub(crate) async fn append(&self, event: AuditEvent) {
        let _turn = self.local.lock().await;
        let path = self.path.clone();
        let written = tokio::task::spawn_blocking(move || append_blocking(&path, event)).await;
        match written {
            Ok(Ok(())) => {}
            Ok(Err(err)) => {
                tracing::warn!(path = %self.path.display(), error = %err, "hook audit append failed")
            }
            Err(err) => tracing::warn!(error = %err, "hook audit task failed"),
        }
    }
}

/// Go's RFC 3339 with nanoseconds, trailing zeros trimmed (`time.RFC3339Nano`), in UTC.
pub(crate) fn rfc3339_nano(time: SystemTime) -> String {
    let time: chrono::DateTime<chrono::Utc> = time.into();
    let base = time.format("%Y-%m-%dT%H:%M:%S").to_string();
    let nanos = format!("{:09}", time.timestamp_subsec_nanos());
    let nanos = nanos.trim_end_matches('0');
    match nanos.is_empty() {
        true => format!("{base}Z"),
        false => format!("{base}.{nanos}Z"),
    }
}

fn append_blocking(path: &Path, mut event: AuditEvent) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        create_private_dir(dir)?;
    }
    let _lock = LockFile::acquire(path)?;
    event.sequence = last_sequence(path)? + 1;
    event.created_at = rfc3339_nano(SystemTime::now());
    let mut line = serde_json::to_vec(&event).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let mut file = open_options().append(true).create(true).open(path)?;
    file.write_all(&line)
}

fn open_options() -> std::fs::OpenOptions {
    let mut options = std::fs::OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)
    }
}

/// The sequence number of the log's last record (0 when empty or absent).
fn last_sequence(path: &Path) -> std::io::Result<u64> {
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(err) => return Err(err),
    };
    let size = file.metadata()?.len();
    let start = size.saturating_sub(TAIL_WINDOW);
    file.seek(SeekFrom::Start(start))?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail)?;
    let text = String::from_utf8_lossy(&tail);
    let text = text.trim_end();
    let last = match text.rfind('\n') {
        Some(at) => Some(&text[at + 1..]),
        None if start == 0 => Some(text),
        // The last record is longer than the window.
        None => None,
    };
    if let Some(line) = last {
        if line.trim().is_empty() {
            return Ok(0);
        }
        if let Ok(record) = serde_json::from_str::<AuditEvent>(line.trim()) {
            return Ok(record.sequence);
        }
    }
    // A long or torn last line: the highest sequence of any readable record.
    let text = std::fs::read_to_string(path)?;
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str::<AuditEvent>(line.trim()).ok())
        .map(|record| record.sequence)
        .max()
        .unwrap_or(0))
}

/// Zero's cross-process audit lock: `<log>.lock`, created exclusively, holding a token.
struct LockFile {
    path: PathBuf,
    token: String,
}

impl LockFile {
    fn acquire(log: &Path) -> std::io::Result<Self> {
        let mut name = log.as_os_str().to_owned();
        name.push(".lock");
        let path = PathBuf::from(name);
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let token = format!(
            "{}-{}-{}",
            std::process::id(),
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0),
            SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let deadline = Instant::now() + LOCK_TIMEOUT;
        loop {
            match open_options().write(true).create_new(true).open(&path) {
                Ok(mut file) => {
                    if let Err(err) = file.write_all(token.as_bytes()) {
                        let _ = std::fs::remove_file(&path);
                        return Err(err);
                    }
                    return Ok(Self { path, token });
                }
                Err(err)
                    if matches!(
                        err.kind(),
                        std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::PermissionDenied
                    ) => {}
                Err(err) => return Err(err),
            }
            let stale = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|modified| modified.elapsed().ok())
                .is_some_and(|age| age > LOCK_STALE_AFTER);
            if stale {
                // Move it aside first so that only one reclaimer wins.
                let aside = path.with_extension(format!("lock.stale-{}", std::process::id()));
                if std::fs::rename(&path, &aside).is_ok() {
                    let _ = std::fs::remove_file(&aside);
                }
                continue;
            }
            if Instant::now() >= deadline {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "timed out acquiring the hook audit lock",
                ));
            }
            std::thread::sleep(LOCK_RETRY);
        }
    }
}

impl Drop for LockFile {
    fn drop(&mut self) {
        if std::fs::read_to_string(&self.path).is_ok_and(|held| held == self.token) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str) -> AuditEvent {
        AuditEvent {
            sequence: 0,
            created_at: String::new(),
            kind: kind.into(),
            hook_id: "h".into(),
            event: "beforeTool".into(),
            matcher: String::new(),
            tool_call_id: "c1".into(),
            commands: Vec::new(),
            status: String::new(),
            results: Vec::new(),
            duration_ms: 0,
        }
    }

    #[tokio::test]
    async fn records_are_numbered_in_order_and_the_lock_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zero").join("hooks").join("audit.jsonl");
        let log = AuditLog::new(path.clone());
        for kind in [
            "hook_execution_started",
            "hook_execution_completed",
            "hook_execution_started",
        ] {
            log.append(event(kind)).await;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let records: Vec<AuditEvent> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let sequences: Vec<u64> = records.iter().map(|r| r.sequence).collect();
        assert_eq!(sequences, vec![1, 2, 3]);
        assert!(records[0].created_at.ends_with('Z'));
        assert!(
            !text.contains("\"matcher\""),
            "empty fields are omitted: {text}"
        );
        assert!(!path.with_extension("jsonl.lock").exists());
        // A torn last line does not reset the numbering.
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(b"{\"sequence\": 9").unwrap();
        drop(file);
        assert_eq!(last_sequence(&path).unwrap(), 3);
    }

    #[test]
    fn timestamps_trim_trailing_zeros_like_go() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_nanos(1_500_000_000);
        assert_eq!(rfc3339_nano(t), "1970-01-01T00:00:01.5Z");
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(2);
        assert_eq!(rfc3339_nano(t), "1970-01-01T00:00:02Z");
    }
}
