//! The event log of a [`FileStore`](super::FileStore) session: `events.jsonl` beside the
//! transcript, one line per event (`{"seq":N,"event":{…}}`), written with
//! agent-host's JSONL primitives: appended under the file's exclusive lock after the
//! torn-tail repair, so a line torn by a crash is dropped on read and cut off before the
//! next append; trimmed by rewriting the file atomically ([`write_atomic`]).
//!
//! Lines are in seq order, so a read after a seq finds its first line by a binary search over
//! byte offsets and then reads on from there, never the whole file.
//!
//! Synchronous `std::fs`, like [`crate::fs`]: the store runs these in `spawn_blocking`.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::storage::{Durability, EventBounds, StoreError, StoredEvent};
use crate::fs::{write_atomic, JsonlFile};

/// The file name of a session's event log.
pub const EVENTS: &str = "events.jsonl";

/// One line of `events.jsonl`, as written.
#[derive(Debug, Serialize)]
struct EventLine<'a> {
    seq: u64,
    event: &'a RawValue,
}

/// One line of `events.jsonl`, as read.
#[derive(Debug, Deserialize)]
struct EventLineIn {
    seq: u64,
    event: Box<RawValue>,
}

/// Only the seq of a line (the event is skipped, not kept).
#[derive(Debug, Deserialize)]
struct SeqOnly {
    seq: u64,
}

/// Below this many bytes left, the search reads on line by line.
const SCAN_BYTES: u64 = 16 * 1024;

fn corrupt(path: &Path, message: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        context: path.display().to_string(),
        message: message.to_string(),
    }
}

fn seq_of(line: &[u8]) -> Option<u64> {
    serde_json::from_slice::<SeqOnly>(line).ok().map(|l| l.seq)
}

/// Serialises `events` as lines of the log.
pub fn encode(events: &[StoredEvent]) -> Result<Vec<u8>, StoreError> {
    let mut out = Vec::with_capacity(events.iter().map(|e| e.json().len() + 24).sum());
    for event in events {
        serde_json::to_writer(
            &mut out,
            &EventLine {
                seq: event.seq,
                event: &event.event,
            },
        )
        .map_err(|e| StoreError::Corrupt {
            context: format!("event {}", event.seq),
            message: e.to_string(),
        })?;
        out.push(b'\n');
    }
    Ok(out)
}

/// A session's event log kept open between appends: each append locks the file, checks
/// that nobody else wrote or replaced it since (its length and identity), and only then
/// reads its tail again. So an append is a lock, two `stat`s, one `write` and an unlock.
#[derive(Debug)]
pub struct Appender {
    path: PathBuf,
    file: JsonlFile,
    /// The file's length after our last append (`None`: read the tail first).
    len: Option<u64>,
    /// The last seq in the file after our last append.
    last: u64,
}

fn lock(file: &File, wait: bool) -> io::Result<()> {
    if wait {
        return fs4::fs_std::FileExt::lock_exclusive(file);
    }
    match fs4::fs_std::FileExt::try_lock_exclusive(file)? {
        true => Ok(()),
        false => Err(io::Error::from(io::ErrorKind::WouldBlock)),
    }
}

/// Whether `a` and `b` are the same file (a trim replaces the log by a new file).
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        a.ino() == b.ino() && a.dev() == b.dev()
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        false
    }
}

impl Appender {
    /// Opens the log at `path` for appending, creating it (mode 0600) when missing.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let file =
            JsonlFile::open(path).map_err(StoreError::io(format!("open {}", path.display())))?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
            len: None,
            last: 0,
        })
    }

    /// Appends `events` under the file's lock, after the torn-tail repair when the file
    /// changed since our last append; fails with [`StoreError::Conflict`] when their seqs do
    /// not continue the stored ones. Without `wait`, a lock held by another process fails
    /// with an [`io::ErrorKind::WouldBlock`] I/O error instead of waiting.
    pub fn append(
        &mut self,
        session_id: &str,
        events: &[StoredEvent],
        durability: Durability,
        wait: bool,
    ) -> Result<(), StoreError> {
        let Some(first) = events.first() else {
            return Ok(());
        };
        let path = self.path.clone();
        let context = || format!("append to {}", path.display());
        let lines = encode(events)?;
        // Locked, the file must still be the log: a trim (ours or another process's) may
        // have replaced it by a new file, which is the one to append to.
        let mut attempts = 0;
        loop {
            lock(self.file.file(), wait).map_err(StoreError::io(context()))?;
            let on_disk = std::fs::metadata(&path);
            let open = self.file.file().metadata();
            let current = match (&on_disk, &open) {
                (Ok(a), Ok(b)) => same_file(a, b),
                _ => false,
            };
            if current {
                break;
            }
            let _ = fs4::fs_std::FileExt::unlock(self.file.file());
            attempts += 1;
            if attempts > 3 {
                return Err(StoreError::Io {
                    context: context(),
                    source: io::Error::other("the event log keeps being replaced"),
                });
            }
            *self = Self::open(&path)?;
        }
        let appended = self.append_locked(session_id, first.seq, &lines, durability);
        let unlocked = fs4::fs_std::FileExt::unlock(self.file.file());
        match appended {
            Ok(()) => {
                self.last = events.last().map_or(self.last, |e| e.seq);
                unlocked.map_err(StoreError::io(context()))
            }
            Err(err) => {
                self.len = None;
                Err(err)
            }
        }
    }

    fn append_locked(
        &mut self,
        session_id: &str,
        first: u64,
        lines: &[u8],
        durability: Durability,
    ) -> Result<(), StoreError> {
        let path = self.path.clone();
        let context = || format!("append to {}", path.display());
        let size = |file: &JsonlFile| {
            file.file()
                .metadata()
                .map(|m| m.len())
                .map_err(StoreError::io(context()))
        };
        let mut len = size(&self.file)?;
        if self.len != Some(len) {
            let tail = self.file.repair_tail().map_err(StoreError::io(context()))?;
            self.last = match tail.last_line {
                Some(line) => {
                    seq_of(&line).ok_or_else(|| corrupt(&path, "last line has no seq"))?
                }
                None => 0,
            };
            if tail.repair.is_some() {
                len = size(&self.file)?;
            }
        }
        // An empty log (never written, or its only line torn) continues from whatever seq
        // the writer has; otherwise the batch must follow the last line exactly.
        if self.last != 0 && first != self.last + 1 {
            return Err(StoreError::Conflict {
                session_id: session_id.to_string(),
                message: format!(
                    "event log ends at seq {}, the batch starts at {first}",
                    self.last
                ),
            });
        }
        self.file.append(lines).map_err(StoreError::io(context()))?;
        if durability == Durability::Sync {
            self.file.sync().map_err(StoreError::io(context()))?;
        }
        self.len = Some(len + lines.len() as u64);
        Ok(())
    }

    /// Forces what was appended to disk.
    pub fn sync(&self) -> Result<(), StoreError> {
        self.file
            .sync()
            .map_err(StoreError::io(format!("sync {}", self.path.display())))
    }
}

/// Appends `events` to the log at `path` (created, mode 0600, when missing) under its lock,
/// after the torn-tail repair; fails with [`StoreError::Conflict`] when their seqs do not
/// continue the stored ones.
pub fn append(
    session_id: &str,
    path: &Path,
    events: &[StoredEvent],
    durability: Durability,
) -> Result<(), StoreError> {
    Appender::open(path)?.append(session_id, events, durability, true)
}

fn open_existing(path: &Path) -> Result<Option<File>, StoreError> {
    match File::open(path) {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StoreError::io(format!("open {}", path.display()))(e)),
    }
}

/// The first whole line starting at or after `at` (a line start when `at` is 0, else the
/// line after the first newline at or after `at - 1`), with its offset; `None` at the end.
fn line_at(reader: &mut BufReader<File>, at: u64) -> io::Result<Option<(u64, Vec<u8>)>> {
    let mut start = at;
    reader.seek(SeekFrom::Start(at.saturating_sub(1)))?;
    let mut line = Vec::new();
    if at > 0 {
        // Skip the rest of the line `at - 1` is in (just its newline when `at` starts one).
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(None);
        }
        start = at - 1 + n as u64;
        line.clear();
    }
    loop {
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(None);
        }
        if !is_blank(&line) {
            return Ok(Some((start, line)));
        }
        start += n as u64;
        line.clear();
    }
}

/// An offset at or before the first line with `seq > after`: a binary search over byte
/// offsets (lines are in seq order), ending where a line-by-line read is cheap.
fn search(reader: &mut BufReader<File>, len: u64, after: u64) -> io::Result<u64> {
    let (mut low, mut high) = (0u64, len);
    while high - low > SCAN_BYTES {
        let mid = low + (high - low) / 2;
        let Some((start, line)) = line_at(reader, mid)? else {
            high = mid;
            continue;
        };
        if start >= high {
            high = mid;
            continue;
        }
        match seq_of(&line) {
            Some(seq) if seq <= after => low = start,
            Some(_) => high = start,
            // An unreadable line (the torn last one): read on from `low`.
            None => break,
        }
    }
    Ok(low)
}

/// The events with `seq > after` of the log at `path`, oldest first, at most `limit`. A
/// missing file is an empty log; an unreadable last line is a torn write and is skipped.
pub fn read_after(path: &Path, after: u64, limit: usize) -> Result<Vec<StoredEvent>, StoreError> {
    let Some(file) = open_existing(path)? else {
        return Ok(Vec::new());
    };
    let context = || format!("read {}", path.display());
    let len = file.metadata().map_err(StoreError::io(context()))?.len();
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let from = search(&mut reader, len, after).map_err(StoreError::io(context()))?;
    reader
        .seek(SeekFrom::Start(from))
        .map_err(StoreError::io(context()))?;
    let mut out = Vec::new();
    let mut line = Vec::new();
    let mut offset = from;
    while out.len() < limit {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(StoreError::io(context()))?;
        if n == 0 {
            break;
        }
        offset += n as u64;
        if is_blank(&line) {
            continue;
        }
        match serde_json::from_slice::<EventLineIn>(&line) {
            Ok(parsed) if parsed.seq > after => out.push(StoredEvent {
                seq: parsed.seq,
                event: parsed.event,
            }),
            Ok(_) => {}
            Err(err) => {
                // The last non-blank line torn by a crash is not an event; anything else is.
                let mut rest = Vec::new();
                reader
                    .read_to_end(&mut rest)
                    .map_err(StoreError::io(context()))?;
                if is_blank(&rest) {
                    break;
                }
                return Err(corrupt(
                    path,
                    format!("line at byte {}: {err}", offset - n as u64),
                ));
            }
        }
    }
    Ok(out)
}

fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

/// The seq of the first line of an open log (`None` when it has no line).
fn first_seq(file: &File, path: &Path) -> Result<Option<u64>, StoreError> {
    let context = || format!("read {}", path.display());
    let handle = file.try_clone().map_err(StoreError::io(context()))?;
    let mut reader = BufReader::new(handle);
    match line_at(&mut reader, 0).map_err(StoreError::io(context()))? {
        None => Ok(None),
        Some((_, line)) => seq_of(&line)
            .map(Some)
            .ok_or_else(|| corrupt(path, "first line has no seq")),
    }
}

/// Opens the log at `path` under its lock and repairs a torn last line; returns it with its
/// bounds. `None` when there is no file.
fn open_repaired(path: &Path) -> Result<Option<(JsonlFile, EventBounds)>, StoreError> {
    if open_existing(path)?.is_none() {
        return Ok(None);
    }
    let context = || format!("open {}", path.display());
    let mut file = JsonlFile::open_locked(path).map_err(StoreError::io(context()))?;
    let tail = file.repair_tail().map_err(StoreError::io(context()))?;
    if let Some(repair) = tail.repair {
        tracing::warn!(path = %path.display(), ?repair, "repaired the event log's torn last line");
    }
    let Some(last_line) = tail.last_line else {
        return Ok(Some((file, EventBounds::EMPTY)));
    };
    let last = seq_of(&last_line).ok_or_else(|| corrupt(path, "last line has no seq"))?;
    let oldest = first_seq(file.file(), path)?.unwrap_or(last);
    Ok(Some((file, EventBounds { oldest, last })))
}

/// The bounds of the log at `path`; repairs a torn last line on the way (under the file's
/// lock), so the next append starts clean. A missing file is an empty log.
pub fn bounds(path: &Path) -> Result<EventBounds, StoreError> {
    Ok(open_repaired(path)?.map_or(EventBounds::EMPTY, |(_, bounds)| bounds))
}

/// Drops the events with `seq < before` from the log at `path` (never the last one): the
/// kept lines are written to a new file that replaces the old one atomically, under the old
/// file's lock.
pub fn trim(path: &Path, before: u64) -> Result<EventBounds, StoreError> {
    let Some((file, current)) = open_repaired(path)? else {
        return Ok(EventBounds::EMPTY);
    };
    if current.is_empty() || current.oldest >= before {
        return Ok(current);
    }
    let before = before.min(current.last);
    let context = || format!("trim {}", path.display());
    let handle = file.file().try_clone().map_err(StoreError::io(context()))?;
    let len = handle.metadata().map_err(StoreError::io(context()))?.len();
    let mut reader = BufReader::with_capacity(64 * 1024, handle);
    let mut at = search(&mut reader, len, before - 1).map_err(StoreError::io(context()))?;
    // Step to the first line with seq >= before.
    let (from, oldest) = loop {
        let Some((start, line)) = line_at(&mut reader, at).map_err(StoreError::io(context()))?
        else {
            return Ok(current);
        };
        match seq_of(&line) {
            Some(seq) if seq < before => at = start + line.len() as u64,
            seq => break (start, seq.unwrap_or(before)),
        }
    };
    let mut kept = Vec::with_capacity(usize::try_from(len - from).unwrap_or(0));
    reader
        .seek(SeekFrom::Start(from))
        .map_err(StoreError::io(context()))?;
    reader
        .read_to_end(&mut kept)
        .map_err(StoreError::io(context()))?;
    write_atomic(path, &kept).map_err(StoreError::io(context()))?;
    drop(file);
    Ok(EventBounds {
        oldest,
        last: current.last,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64) -> StoredEvent {
        // Events of different sizes, so the search meets lines of every length.
        let text = "x".repeat((seq % 7) as usize * 40);
        StoredEvent::new(
            seq,
            format!(r#"{{"seq":{seq},"type":"t","text":"{text}"}}"#),
        )
        .expect("json")
    }

    fn events(range: std::ops::RangeInclusive<u64>) -> Vec<StoredEvent> {
        range.map(event).collect()
    }

    fn seqs(events: &[StoredEvent]) -> Vec<u64> {
        events.iter().map(|e| e.seq).collect()
    }

    #[test]
    fn appends_read_back_after_any_seq_with_a_limit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(EVENTS);
        assert_eq!(bounds(&path).expect("bounds"), EventBounds::EMPTY);
        assert!(read_after(&path, 0, 10).expect("read").is_empty());
        // Enough lines for the binary search to run several rounds.
        for chunk in 0..20u64 {
            let first = chunk * 100 + 1;
            append(
                "s",
                &path,
                &events(first..=first + 99),
                Durability::Buffered,
            )
            .expect("append");
        }
        assert_eq!(
            bounds(&path).expect("bounds"),
            EventBounds {
                oldest: 1,
                last: 2000
            }
        );
        for after in [0, 1, 2, 99, 100, 101, 1234, 1999] {
            let read = read_after(&path, after, 5).expect("read");
            let want: Vec<u64> = (after + 1..=(after + 5).min(2000)).collect();
            assert_eq!(seqs(&read), want, "after {after}");
            assert_eq!(read[0], event(after + 1), "verbatim");
        }
        assert!(read_after(&path, 2000, 5).expect("read").is_empty());
        assert_eq!(read_after(&path, 0, usize::MAX).expect("read").len(), 2000);
    }

    #[test]
    fn a_batch_that_does_not_continue_the_log_is_a_conflict_and_not_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(EVENTS);
        append("s", &path, &events(1..=3), Durability::Sync).expect("append");
        for bad in [events(3..=4), events(5..=6), events(1..=1)] {
            let err = append("s", &path, &bad, Durability::Buffered).expect_err("conflict");
            assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
        }
        assert_eq!(bounds(&path).expect("bounds").last, 3);
        append("s", &path, &events(4..=4), Durability::Buffered).expect("append");
        assert_eq!(
            seqs(&read_after(&path, 0, 10).expect("read")),
            vec![1, 2, 3, 4]
        );
    }

    #[test]
    fn a_torn_last_line_is_skipped_on_read_and_cut_off_on_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(EVENTS);
        append("s", &path, &events(1..=3), Durability::Buffered).expect("append");
        let whole = std::fs::read(&path).expect("read");
        let mut torn = whole.clone();
        torn.extend_from_slice(br#"{"seq":4,"event":{"seq":4,"ty"#);
        std::fs::write(&path, &torn).expect("write");
        assert_eq!(
            seqs(&read_after(&path, 0, 10).expect("read")),
            vec![1, 2, 3]
        );
        assert_eq!(bounds(&path).expect("bounds").last, 3);
        assert_eq!(std::fs::read(&path).expect("read"), whole, "cut off");
        append("s", &path, &events(4..=4), Durability::Buffered).expect("append");
        assert_eq!(seqs(&read_after(&path, 2, 10).expect("read")), vec![3, 4]);
        // Garbage before the last line is corruption, not a tear.
        let mut middle = b"{oops\n".to_vec();
        middle.extend_from_slice(&std::fs::read(&path).expect("read"));
        std::fs::write(&path, &middle).expect("write");
        assert!(matches!(
            read_after(&path, 0, 10),
            Err(StoreError::Corrupt { .. })
        ));
    }

    #[test]
    fn trimming_keeps_the_newest_and_reads_still_find_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(EVENTS);
        append("s", &path, &events(1..=500), Durability::Buffered).expect("append");
        let after = trim(&path, 321).expect("trim");
        assert_eq!(
            after,
            EventBounds {
                oldest: 321,
                last: 500
            }
        );
        assert_eq!(bounds(&path).expect("bounds"), after);
        assert_eq!(
            seqs(&read_after(&path, 0, 2).expect("read")),
            vec![321, 322]
        );
        assert_eq!(seqs(&read_after(&path, 400, 1).expect("read")), vec![401]);
        // Never the last event; a trim below the oldest changes nothing.
        assert_eq!(trim(&path, 10_000).expect("trim").oldest, 500);
        assert_eq!(trim(&path, 3).expect("trim").oldest, 500);
        append("s", &path, &events(501..=502), Durability::Sync).expect("append");
        assert_eq!(
            seqs(&read_after(&path, 0, 10).expect("read")),
            vec![500, 501, 502]
        );
    }
}
