//! File-store primitives shared by the front ends' session stores: atomic replacement of a
//! file, JSONL appends under an exclusive lock with torn-tail repair, tolerant JSONL reading,
//! private directories and files, and the one session-id check.
//!
//! A crash (SIGKILL, power loss) in the middle of an append can leave the last line of a
//! JSONL file incomplete. The rule everywhere: **the last non-blank line of a JSONL file, when
//! it is not one whole JSON value, is a torn write**. Readers ([`parse_jsonl`]) drop it;
//! [`JsonlFile::repair_tail`], which every append runs first under the lock, cuts it off so
//! the next line starts clean (and gives a whole last value that lacks its newline one), so a
//! file never becomes unreadable. An unreadable line anywhere else is corruption
//! ([`JsonlError`]).
//!
//! Everything here is synchronous `std::fs`: the operations are short, and an async caller
//! runs them in `tokio::task::spawn_blocking` or, where a few milliseconds of blocking are
//! acceptable, directly.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::de::{DeserializeOwned, IgnoredAny};

/// The longest session id accepted, in bytes.
pub const MAX_SESSION_ID_LEN: usize = 128;

/// Whether `id` is a valid session id: `^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`.
///
/// One rule for every front end, safe as a directory name (no `.`, `/`, leading `-`):
/// Zero's `ValidSessionID` exactly, which also accepts every id the ZCode and ACP front ends
/// make (`sess_<uuid v4>`). Zero trims an id before it checks it; callers that must accept
/// surrounding blanks trim first (nothing is trimmed here).
pub fn valid_session_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    match bytes.split_first() {
        Some((first, rest)) => {
            bytes.len() <= MAX_SESSION_ID_LEN
                && first.is_ascii_alphanumeric()
                && rest
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
        }
        None => false,
    }
}

/// [`OpenOptions`] whose created files are private to the user (mode 0600 on Unix).
pub fn private_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

/// Creates the directory `path` private to the user (mode 0700 on Unix); fails with
/// [`io::ErrorKind::AlreadyExists`] when it exists.
pub fn create_dir_private(path: &Path) -> io::Result<()> {
    dir_builder(false).create(path)
}

/// Creates `path` and its missing parents, private to the user (mode 0700 on Unix); an
/// existing directory is fine.
pub fn create_dir_all_private(path: &Path) -> io::Result<()> {
    dir_builder(true).create(path)
}

fn dir_builder(recursive: bool) -> std::fs::DirBuilder {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(recursive);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder
}

/// Replaces `path` with `data` atomically: the bytes go to a temporary file beside it
/// (`tempfile`, mode 0600), are fsynced, and the file is renamed over `path`. After a crash
/// `path` holds the whole old or the whole new content, never a mix. The parent directory
/// must exist. A temporary file left by a crash is named `.<file name>.<random>.tmp`.
pub fn write_atomic(path: &Path, data: &[u8]) -> io::Result<()> {
    write_atomic_with(path, data, Durability::Sync)
}

/// [`write_atomic`], the temporary file fsynced before the rename only with
/// [`Durability::Sync`]. With [`Durability::Buffered`] a crash of the process still leaves
/// the whole old or the whole new content; a crash of the machine may leave an empty file
/// until the content is synced (as [`sync_path`] does).
pub fn write_atomic_with(path: &Path, data: &[u8], durability: Durability) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(data)?;
    if durability == Durability::Sync {
        tmp.as_file().sync_all()?;
    }
    tmp.persist(path).map_err(|err| err.error)?;
    Ok(())
}

/// Forces a file's content to disk (`fdatasync`); a missing file has nothing to make
/// durable. On Unix a directory is synced too (`fsync`), which makes the names of the files
/// created in it durable.
pub fn sync_path(path: &Path) -> io::Result<()> {
    let is_dir = path.is_dir();
    let opened = match is_dir {
        true => File::open(path),
        false => OpenOptions::new().append(true).open(path),
    };
    match opened {
        Ok(file) if is_dir => file.sync_all(),
        Ok(file) => file.sync_data(),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        // Windows cannot open a directory as a file; its names need no sync there.
        Err(_) if cfg!(windows) && is_dir => Ok(()),
        Err(err) => Err(err),
    }
}

/// An exclusive advisory lock on a file (`fs4`: `flock` on Unix, `LockFileEx` on Windows),
/// held until the value is dropped. Blocks while another process or handle holds it.
#[derive(Debug)]
pub struct FileLock {
    file: File,
}

impl FileLock {
    /// Opens (creating, mode 0600) the lock file `path` and locks it exclusively.
    pub fn exclusive(path: &Path) -> io::Result<Self> {
        let file = private_options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        fs4::fs_std::FileExt::lock_exclusive(&file)?;
        Ok(Self { file })
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // Closing the file releases the lock too; unlocking first makes it immediate.
        let _ = fs4::fs_std::FileExt::unlock(&self.file);
    }
}

/// How [`JsonlFile::repair_tail`] mended the end of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repair {
    /// A torn last line was cut off: the file now ends at `at` (`dropped` bytes removed).
    Cut {
        /// The new length of the file.
        at: u64,
        /// How many bytes were removed.
        dropped: u64,
    },
    /// The last value was whole but lacked its newline; one was added.
    Terminated,
}

/// What [`JsonlFile::repair_tail`] found at the end of a file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tail {
    /// The last complete line after the repair (without its newline), when it is one whole
    /// JSON value; `None` for an empty file.
    pub last_line: Option<Vec<u8>>,
    /// What was mended, if anything.
    pub repair: Option<Repair>,
}

/// Whether `line` holds exactly one whole JSON value (whitespace around it allowed).
pub fn is_json_value(line: &[u8]) -> bool {
    serde_json::from_slice::<IgnoredAny>(line).is_ok()
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// A JSONL file open for reading and appending. Lock it before
/// [`repair_tail`](Self::repair_tail) and [`append`](Self::append), so two writers never
/// interleave: open it with [`JsonlFile::open_locked`] (a lock on the file itself), or hold
/// a [`FileLock`] on a separate lock file. [`append_jsonl`] does the whole sequence.
#[derive(Debug)]
pub struct JsonlFile {
    file: File,
    locked: bool,
}

impl Drop for JsonlFile {
    fn drop(&mut self) {
        if self.locked {
            let _ = fs4::fs_std::FileExt::unlock(&self.file);
        }
    }
}

impl JsonlFile {
    /// Opens `path` for reading and appending, creating it (mode 0600) when missing. The
    /// caller holds the lock that guards it (e.g. a [`FileLock`]).
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = private_options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        Ok(Self {
            file,
            locked: false,
        })
    }

    /// [`open`](Self::open), then locks the file itself exclusively (`fs4`) until the value
    /// is dropped; blocks while another writer holds it.
    pub fn open_locked(path: &Path) -> io::Result<Self> {
        let mut file = Self::open(path)?;
        fs4::fs_std::FileExt::lock_exclusive(&file.file)?;
        file.locked = true;
        Ok(file)
    }

    /// Makes the file safe to append to: a last non-blank line that is not one whole JSON
    /// value is cut off (it is a torn write), and a whole last value without its newline gets
    /// one. Only the tail of the file is read. Returns the last complete line afterwards
    /// (callers read their last sequence number from it) and what was mended.
    ///
    /// Only the last line is ever dropped: when the line before it is unreadable too, the
    /// file is left with it (readers report it as corruption) and `last_line` is `None`.
    pub fn repair_tail(&mut self) -> io::Result<Tail> {
        let len = self.file.metadata()?.len();
        if len == 0 {
            return Ok(Tail::default());
        }
        let (start, tail) = read_last_lines(&mut self.file, len)?;
        let lines = last_two_lines(&tail, start == 0);
        let Some(last) = lines.last else {
            return Ok(Tail::default());
        };
        let line = &tail[last.clone()];
        if is_json_value(line) {
            let terminated = last.end < tail.len();
            let repair = match terminated {
                true => None,
                false => {
                    self.file.seek(SeekFrom::End(0))?;
                    self.file.write_all(b"\n")?;
                    Some(Repair::Terminated)
                }
            };
            return Ok(Tail {
                last_line: Some(line.to_vec()),
                repair,
            });
        }
        let at = start + last.start as u64;
        self.file.set_len(at)?;
        let last_line = lines
            .previous
            .map(|range| &tail[range])
            .filter(|line| is_json_value(line))
            .map(<[u8]>::to_vec);
        Ok(Tail {
            last_line,
            repair: Some(Repair::Cut {
                at,
                dropped: len - at,
            }),
        })
    }

    /// Appends `lines` (complete lines, each ending in `\n`) at the end of the file.
    pub fn append(&mut self, lines: &[u8]) -> io::Result<()> {
        debug_assert!(lines.is_empty() || lines.ends_with(b"\n"));
        self.file.seek(SeekFrom::End(0))?;
        self.file.write_all(lines)
    }

    /// Forces what was written to disk (`fdatasync`).
    pub fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// The open file.
    pub fn file(&self) -> &File {
        &self.file
    }
}

/// Reads the end of `file` (`len` bytes long), far enough back to hold its last two
/// non-blank lines whole (or all of it). Returns the offset it starts at and the bytes.
fn read_last_lines(file: &mut File, len: u64) -> io::Result<(u64, Vec<u8>)> {
    let mut chunk: u64 = 64 * 1024;
    loop {
        let start = len.saturating_sub(chunk);
        file.seek(SeekFrom::Start(start))?;
        let mut tail = Vec::with_capacity((len - start) as usize);
        Read::by_ref(file)
            .take(len - start)
            .read_to_end(&mut tail)?;
        let lines = last_two_lines(&tail, start == 0);
        if start == 0 || lines.previous.is_some() {
            return Ok((start, tail));
        }
        chunk = chunk.saturating_mul(4);
    }
}

/// The last record of the JSONL file `path`, read from its end only: its last line when
/// that is one whole JSON value, else (a torn write) the line before it when that is one;
/// `None` for an empty file or one whose last two lines are both unreadable. The file is
/// only read, never repaired.
pub fn last_jsonl_value(path: &Path) -> io::Result<Option<Vec<u8>>> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(None);
    }
    let (start, tail) = read_last_lines(&mut file, len)?;
    let lines = last_two_lines(&tail, start == 0);
    Ok([lines.last, lines.previous]
        .into_iter()
        .flatten()
        .map(|range| &tail[range])
        .find(|line| is_json_value(line))
        .map(<[u8]>::to_vec))
}

/// The byte ranges of the last two non-blank lines of `tail` (without their newlines).
/// When `whole` is false, `tail` starts inside the file and its first segment may be the end
/// of a longer line: it is never reported.
#[derive(Debug, Default)]
struct LastLines {
    last: Option<std::ops::Range<usize>>,
    previous: Option<std::ops::Range<usize>>,
}

fn last_two_lines(tail: &[u8], whole: bool) -> LastLines {
    let mut found = LastLines::default();
    let mut end = tail.len();
    loop {
        let (start, complete) = match memchr::memrchr(b'\n', &tail[..end]) {
            Some(nl) => (nl + 1, true),
            None => (0, whole),
        };
        if !complete {
            return found;
        }
        let range = start..end;
        if !is_blank(&tail[range.clone()]) {
            match found.last {
                None => found.last = Some(range),
                Some(_) => {
                    found.previous = Some(range);
                    return found;
                }
            }
        }
        if start == 0 {
            return found;
        }
        end = start - 1;
    }
}

/// Whether [`append_jsonl`] forces the lines to disk before it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// `fdatasync` after the write: the lines survive a power loss once this returns.
    Sync,
    /// Written to the OS only: they survive a crash of the process, not of the machine.
    Buffered,
}

/// Appends `lines` (complete lines, each ending in `\n`) to the JSONL file `path` (created,
/// mode 0600, when missing) under an exclusive lock on the file, after repairing a torn
/// tail; forces them to disk when `durability` is [`Durability::Sync`]. Returns what the
/// tail repair found before the append.
pub fn append_jsonl(path: &Path, lines: &[u8], durability: Durability) -> io::Result<Tail> {
    let mut file = JsonlFile::open_locked(path)?;
    let tail = file.repair_tail()?;
    file.append(lines)?;
    if durability == Durability::Sync {
        file.sync()?;
    }
    Ok(tail)
}

/// The records of a JSONL file, read by [`parse_jsonl`].
#[derive(Debug, Clone, PartialEq)]
pub struct Jsonl<T> {
    /// Every whole record, in order.
    pub records: Vec<T>,
    /// A torn last line was dropped (its 1-based line number); the next append through
    /// [`JsonlFile::repair_tail`] cuts it off.
    pub torn_line: Option<usize>,
}

/// A JSONL line other than the last could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct JsonlError {
    /// 1-based line number.
    pub line: usize,
    /// What serde said.
    pub message: String,
}

/// Parses JSONL bytes: one `T` per non-blank line. An unreadable last non-blank line is a
/// torn write and is dropped (see [`Jsonl::torn_line`]); any other unreadable line is an
/// error. Works on bytes, so a line torn inside a multi-byte character costs only that line.
pub fn parse_jsonl<T: DeserializeOwned>(bytes: &[u8]) -> Result<Jsonl<T>, JsonlError> {
    let last = last_two_lines(bytes, true).last.map(|r| r.start);
    let mut records = Vec::new();
    let mut torn_line = None;
    let mut start = 0;
    for (index, line) in bytes.split(|b| *b == b'\n').enumerate() {
        let at = start;
        start += line.len() + 1;
        if is_blank(line) {
            continue;
        }
        match serde_json::from_slice::<T>(line) {
            Ok(record) => records.push(record),
            Err(_) if Some(at) == last => torn_line = Some(index + 1),
            Err(err) => {
                return Err(JsonlError {
                    line: index + 1,
                    message: err.to_string(),
                })
            }
        }
    }
    Ok(Jsonl { records, torn_line })
}

/// An I/O or decoding failure of [`read_jsonl`].
#[derive(Debug, thiserror::Error)]
pub enum ReadJsonlError {
    /// The file could not be read (`NotFound` included).
    #[error("read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// A line other than the last is not a record.
    #[error("{}:{}", path.display(), source)]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Which line, and why.
        source: JsonlError,
    },
}

/// Reads and parses the JSONL file `path` ([`parse_jsonl`]).
pub fn read_jsonl<T: DeserializeOwned>(path: &Path) -> Result<Jsonl<T>, ReadJsonlError> {
    let bytes = std::fs::read(path).map_err(|source| ReadJsonlError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_jsonl(&bytes).map_err(|source| ReadJsonlError::Corrupt {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn session_ids_follow_one_rule_for_every_front_end() {
        for ok in [
            "a",
            "zero_20260604123456_1780000000000000000_1",
            "sess_6f1c2a0e-4b7d-4c1e-9a55-0d8f3e2b1c4a",
            "A-b_C",
            &"x".repeat(128),
        ] {
            assert!(valid_session_id(ok), "{ok}");
        }
        for bad in [
            "",
            "_x",
            "-x",
            "../escape",
            "a/b",
            "a.b",
            " a",
            "a ",
            "é",
            &"x".repeat(129),
        ] {
            assert!(!valid_session_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn atomic_writes_replace_whole_files_privately() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("meta.json");
        write_atomic(&path, b"{\"v\":1}\n").expect("first");
        write_atomic(&path, b"{\"v\":2}\n").expect("second");
        assert_eq!(std::fs::read(&path).expect("read"), b"{\"v\":2}\n");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["meta.json"], "no temporary file left");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    fn write(path: &Path, bytes: &[u8]) {
        std::fs::write(path, bytes).expect("write");
    }

    #[test]
    fn a_torn_tail_is_cut_before_the_next_append() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("events.jsonl");
        let whole = "{\"seq\":1,\"t\":\"héllo\"}\n".as_bytes();
        // A second line torn inside the two-byte `é`.
        let cut = whole.iter().position(|b| *b == 0xc3).expect("é") + 1;
        let mut torn = whole.to_vec();
        torn.extend_from_slice(&whole[..cut]);
        write(&path, &torn);
        let tail = append_jsonl(&path, b"{\"seq\":2}\n", Durability::Sync).expect("append");
        assert_eq!(tail.last_line.as_deref(), Some(&whole[..whole.len() - 1]));
        assert_eq!(
            tail.repair,
            Some(Repair::Cut {
                at: whole.len() as u64,
                dropped: cut as u64
            })
        );
        let read: Jsonl<Value> = read_jsonl(&path).expect("read");
        assert_eq!(read.records.len(), 2);
        assert_eq!(read.torn_line, None);
    }

    #[test]
    fn a_whole_last_value_without_newline_is_kept_and_terminated() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.jsonl");
        write(&path, b"{\"a\":1}\n{\"a\":2}");
        let read: Jsonl<Value> = read_jsonl(&path).expect("read");
        assert_eq!((read.records.len(), read.torn_line), (2, None));
        let tail = append_jsonl(&path, b"{\"a\":3}\n", Durability::Buffered).expect("append");
        assert_eq!(tail.repair, Some(Repair::Terminated));
        assert_eq!(tail.last_line.as_deref(), Some(&b"{\"a\":2}"[..]));
        assert_eq!(
            std::fs::read(&path).expect("read"),
            b"{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n"
        );
    }

    #[test]
    fn a_bad_terminated_last_line_is_dropped_on_read_and_cut_on_append() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.jsonl");
        write(&path, b"{\"a\":1}\n\n{\"a\":\n  \n");
        let read: Jsonl<Value> = read_jsonl(&path).expect("read");
        assert_eq!(read.records.len(), 1);
        assert_eq!(read.torn_line, Some(3));
        let tail = append_jsonl(&path, b"{\"a\":2}\n", Durability::Buffered).expect("append");
        assert_eq!(tail.last_line.as_deref(), Some(&b"{\"a\":1}"[..]));
        assert_eq!(
            std::fs::read(&path).expect("read"),
            b"{\"a\":1}\n\n{\"a\":2}\n"
        );
    }

    #[test]
    fn corruption_before_the_last_line_is_an_error_and_never_cut() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.jsonl");
        write(&path, b"{oops\n{\"a\":1}\n");
        let err = read_jsonl::<Value>(&path).expect_err("corrupt");
        assert!(
            matches!(&err, ReadJsonlError::Corrupt { source, .. } if source.line == 1),
            "{err}"
        );
        // Two bad lines at the end: only the last is a torn write.
        write(&path, b"{\"a\":1}\n{bad\n{torn");
        let tail = append_jsonl(&path, b"{\"a\":2}\n", Durability::Buffered).expect("append");
        assert_eq!(tail.last_line, None);
        assert_eq!(
            std::fs::read(&path).expect("read"),
            b"{\"a\":1}\n{bad\n{\"a\":2}\n"
        );
    }

    #[test]
    fn a_file_of_one_torn_line_is_emptied_and_long_lines_are_found() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.jsonl");
        write(&path, b"{\"never\":");
        let tail = append_jsonl(&path, b"{\"a\":1}\n", Durability::Buffered).expect("append");
        assert_eq!(tail.last_line, None);
        assert_eq!(std::fs::read(&path).expect("read"), b"{\"a\":1}\n");

        // Lines longer than the first chunk read from the end.
        let long = format!("{{\"t\":\"{}\"}}\n", "x".repeat(200_000));
        let mut bytes = long.clone().into_bytes();
        bytes.extend_from_slice(long.as_bytes());
        bytes.extend_from_slice(&long.as_bytes()[..150_000]);
        write(&path, &bytes);
        let tail = append_jsonl(&path, b"{\"a\":1}\n", Durability::Buffered).expect("append");
        assert_eq!(
            tail.last_line.as_deref(),
            Some(&long.as_bytes()[..long.len() - 1])
        );
        let read: Jsonl<Value> = read_jsonl(&path).expect("read");
        assert_eq!(read.records.len(), 3);
    }

    #[test]
    fn empty_and_blank_files_read_as_empty() {
        assert_eq!(parse_jsonl::<Value>(b"").expect("empty").records.len(), 0);
        let blank = parse_jsonl::<Value>(b"\n \n\t").expect("blank");
        assert_eq!((blank.records.len(), blank.torn_line), (0, None));
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.jsonl");
        write(&path, b"\n\n");
        let tail = append_jsonl(&path, b"{\"a\":1}\n", Durability::Buffered).expect("append");
        assert_eq!(tail, Tail::default());
    }

    #[test]
    fn the_lock_excludes_a_second_holder_until_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("session.lock");
        let held = FileLock::exclusive(&path).expect("lock");
        let other = std::fs::File::open(&path).expect("open");
        assert!(
            !fs4::fs_std::FileExt::try_lock_exclusive(&other).unwrap_or(true),
            "a second exclusive lock must fail while the first is held"
        );
        drop(held);
        assert!(fs4::fs_std::FileExt::try_lock_exclusive(&other).expect("lock after drop"));
        fs4::fs_std::FileExt::unlock(&other).expect("unlock");

        let jsonl = dir.path().join("t.jsonl");
        let writer = JsonlFile::open_locked(&jsonl).expect("locked");
        let other = std::fs::File::open(&jsonl).expect("open");
        assert!(!fs4::fs_std::FileExt::try_lock_exclusive(&other).unwrap_or(true));
        drop(writer);
        assert!(fs4::fs_std::FileExt::try_lock_exclusive(&other).expect("lock after drop"));
    }

    #[test]
    fn private_directories() {
        let dir = tempfile::tempdir().expect("tempdir");
        let nested = dir.path().join("a/b");
        create_dir_all_private(&nested).expect("create");
        create_dir_all_private(&nested).expect("exists is fine");
        let err = create_dir_private(&nested).expect_err("exists");
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&nested)
                .expect("meta")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700);
        }
    }
}
