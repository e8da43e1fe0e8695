//! On-disk persistence of sessions: one directory per session holding `transcript.jsonl`
//! (the agent's [`SessionRecord`]s, one per line) and `meta.json` (the front end's
//! [`SessionMeta`]).

use std::path::{Path, PathBuf};

use agent_core::{async_trait, SessionError, SessionRecord, SessionStore};
use tokio::io::AsyncWriteExt;

use super::types::SessionMeta;

const TRANSCRIPT: &str = "transcript.jsonl";
const META: &str = "meta.json";

/// A [`SessionStore`] writing under `<root>/sessions/<id>/`.
#[derive(Debug, Clone)]
pub struct FileStore {
    root: PathBuf,
}

/// True for ids that are safe as directory names (`[A-Za-z0-9_-]`, 1..=128 characters).
pub fn valid_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

async fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = tokio::fs::File::create(path).await?;
    file.write_all(bytes).await?;
    file.sync_all().await
}

fn io_err(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> SessionError {
    let context = context.into();
    move |source| SessionError::Io { context, source }
}

impl FileStore {
    /// A store rooted at `root` (created on first write).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn sessions_dir(&self) -> PathBuf {
        self.root.join("sessions")
    }

    fn dir(&self, id: &str) -> Result<PathBuf, SessionError> {
        if !valid_session_id(id) {
            return Err(SessionError::NotFound(id.to_string()));
        }
        Ok(self.sessions_dir().join(id))
    }

    /// Writes the metadata of a session atomically (temp file, then rename).
    pub async fn save_meta(&self, meta: &SessionMeta) -> Result<(), SessionError> {
        let dir = self.dir(&meta.session_id)?;
        tokio::fs::create_dir_all(&dir)
            .await
            .map_err(io_err(format!("create {}", dir.display())))?;
        let json = serde_json::to_vec_pretty(meta).map_err(|e| SessionError::Corrupt {
            context: meta.session_id.clone(),
            message: e.to_string(),
        })?;
        let tmp = dir.join(format!("{META}.{}.tmp", uuid::Uuid::new_v4().simple()));
        // Written and synced in full before the rename, so meta.json is always a whole
        // old or a whole new version, even after a crash.
        write_synced(&tmp, &json)
            .await
            .map_err(io_err(format!("write {}", tmp.display())))?;
        let path = dir.join(META);
        tokio::fs::rename(&tmp, &path)
            .await
            .map_err(io_err(format!("rename to {}", path.display())))
    }

    /// Reads the metadata of a session.
    pub async fn load_meta(&self, id: &str) -> Result<SessionMeta, SessionError> {
        let path = self.dir(id)?.join(META);
        let bytes = match tokio::fs::read(&path).await {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(SessionError::NotFound(id.to_string()))
            }
            Err(e) => return Err(io_err(format!("read {}", path.display()))(e)),
        };
        serde_json::from_slice(&bytes).map_err(|e| SessionError::Corrupt {
            context: path.display().to_string(),
            message: e.to_string(),
        })
    }

    /// Metadata of every stored session; unreadable entries are skipped with a warning.
    pub async fn list_meta(&self) -> Result<Vec<SessionMeta>, SessionError> {
        let mut out = Vec::new();
        for id in self.list().await? {
            match self.load_meta(&id).await {
                Ok(meta) => out.push(meta),
                Err(SessionError::NotFound(_)) => {}
                Err(err) => tracing::warn!(session = %id, error = %err, "skipping session"),
            }
        }
        Ok(out)
    }
}

#[async_trait]
impl SessionStore for FileStore {
    async fn append(&self, id: &str, record: &SessionRecord) -> Result<(), SessionError> {
        let dir = self.dir(id)?;
        tokio::fs::create_dir_all(&dir)
            .await
            .map_err(io_err(format!("create {}", dir.display())))?;
        let mut line = serde_json::to_vec(record).map_err(|e| SessionError::Corrupt {
            context: id.to_string(),
            message: e.to_string(),
        })?;
        line.push(b'\n');
        let path = dir.join(TRANSCRIPT);
        let mut file = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .await
            .map_err(io_err(format!("open {}", path.display())))?;
        file.write_all(&line)
            .await
            .map_err(io_err(format!("append to {}", path.display())))?;
        file.flush()
            .await
            .map_err(io_err(format!("flush {}", path.display())))
    }

    async fn load(&self, id: &str) -> Result<Vec<SessionRecord>, SessionError> {
        let path = self.dir(id)?.join(TRANSCRIPT);
        // Bytes, not text: a line torn inside a multi-byte character must not make the
        // whole transcript unreadable.
        let bytes = match tokio::fs::read(&path).await {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // A session with metadata but no message yet has an empty transcript.
                return match tokio::fs::try_exists(self.dir(id)?.join(META)).await {
                    Ok(true) => Ok(Vec::new()),
                    _ => Err(SessionError::NotFound(id.to_string())),
                };
            }
            Err(e) => return Err(io_err(format!("read {}", path.display()))(e)),
        };
        let (records, repair) =
            parse_transcript(&bytes).map_err(|(line, message)| SessionError::Corrupt {
                context: format!("{}:{line}", path.display()),
                message,
            })?;
        if let Some(repair) = repair {
            tracing::warn!(session = %id, ?repair, "repairing the transcript's torn last line");
            if let Err(err) = repair_transcript(&path, repair).await {
                tracing::warn!(session = %id, error = %err, "cannot repair the transcript");
            }
        }
        Ok(records)
    }

    async fn list(&self) -> Result<Vec<String>, SessionError> {
        let dir = self.sessions_dir();
        let mut entries = match tokio::fs::read_dir(&dir).await {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err(format!("read {}", dir.display()))(e)),
        };
        let mut ids = Vec::new();
        while let Some(entry) = entries
            .next_entry()
            .await
            .map_err(io_err(format!("read {}", dir.display())))?
        {
            if let Some(name) = entry.file_name().to_str() {
                if valid_session_id(name) {
                    ids.push(name.to_string());
                }
            }
        }
        ids.sort();
        Ok(ids)
    }
}

/// How a transcript with a torn end is made appendable again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Repair {
    /// Cut the file at this length (dropping a torn last line).
    Truncate(u64),
    /// The last record is whole but lacks its newline: add it.
    Terminate,
}

/// Parses a transcript: one record per line. An unreadable last line is a write torn by a
/// crash: it is dropped (and the repair says how to cut it off, so that later appends do
/// not land behind it). Any other unreadable line is an error `(line number, message)`.
fn parse_transcript(bytes: &[u8]) -> Result<(Vec<SessionRecord>, Option<Repair>), (usize, String)> {
    let segments: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let count = segments.len();
    // The last line that holds anything: a torn write lacks its newline, so it is the
    // final segment; a bad final line with a newline is tolerated the same way.
    let last = segments
        .iter()
        .rposition(|seg| !seg.iter().all(u8::is_ascii_whitespace));
    let mut records = Vec::new();
    let mut repair = None;
    let mut offset = 0u64;
    for (n, segment) in segments.iter().enumerate() {
        let start = offset;
        offset += segment.len() as u64 + 1;
        if segment.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice(segment) {
            Ok(record) => {
                records.push(record);
                if n + 1 == count {
                    repair = Some(Repair::Terminate);
                }
            }
            Err(_) if Some(n) == last => repair = Some(Repair::Truncate(start)),
            Err(e) => return Err((n + 1, e.to_string())),
        }
    }
    Ok((records, repair))
}

async fn repair_transcript(path: &Path, repair: Repair) -> std::io::Result<()> {
    let mut file = tokio::fs::OpenOptions::new()
        .write(true)
        .append(matches!(repair, Repair::Terminate))
        .open(path)
        .await?;
    match repair {
        Repair::Truncate(len) => file.set_len(len).await?,
        Repair::Terminate => file.write_all(b"\n").await?,
    }
    file.sync_data().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::Message;

    #[tokio::test]
    async fn records_round_trip_and_bad_ids_are_not_found() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = FileStore::new(dir.path());
        let record = SessionRecord::Message {
            message: Message::user_text("hi"),
        };
        store.append("sess_a", &record).await.expect("append");
        store.append("sess_a", &record).await.expect("append");
        assert_eq!(store.load("sess_a").await.expect("load").len(), 2);
        assert_eq!(
            store.list().await.expect("list"),
            vec!["sess_a".to_string()]
        );
        assert!(matches!(
            store.load("../etc").await,
            Err(SessionError::NotFound(_))
        ));
        assert!(matches!(
            store.load("sess_missing").await,
            Err(SessionError::NotFound(_))
        ));
    }

    #[tokio::test]
    async fn a_torn_last_line_is_dropped_and_cut_off_so_appends_stay_readable() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = FileStore::new(dir.path());
        let record = SessionRecord::Message {
            message: Message::user_text("héllo"),
        };
        store.append("sess_t", &record).await.expect("append");
        let path = dir.path().join("sessions/sess_t").join(TRANSCRIPT);
        let whole = std::fs::read(&path).expect("read");
        // A second record torn inside the two-byte `é`.
        let cut = whole.iter().position(|b| *b == 0xc3).expect("é") + 1;
        let mut torn = whole.clone();
        torn.extend_from_slice(&whole[..cut]);
        std::fs::write(&path, &torn).expect("write");
        assert_eq!(store.load("sess_t").await.expect("load").len(), 1);
        assert_eq!(
            std::fs::read(&path).expect("read"),
            whole,
            "torn tail cut off"
        );
        store.append("sess_t", &record).await.expect("append");
        assert_eq!(store.load("sess_t").await.expect("load").len(), 2);

        // A whole last record without its newline gets one.
        let mut unterminated = std::fs::read(&path).expect("read");
        unterminated.pop();
        std::fs::write(&path, &unterminated).expect("write");
        assert_eq!(store.load("sess_t").await.expect("load").len(), 2);
        store.append("sess_t", &record).await.expect("append");
        assert_eq!(store.load("sess_t").await.expect("load").len(), 3);

        // Garbage in the middle is corruption, not a tear.
        let mut middle = b"{oops\n".to_vec();
        middle.extend_from_slice(&std::fs::read(&path).expect("read"));
        std::fs::write(&path, &middle).expect("write");
        assert!(matches!(
            store.load("sess_t").await,
            Err(SessionError::Corrupt { .. })
        ));
    }
}
