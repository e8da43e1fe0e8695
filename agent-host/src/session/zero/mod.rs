//! Sessions on disk in Zero's layout: a [`SessionStorage`](super::SessionStorage) backend
//! ([`ZeroStorage`]) beside the files ([`FileStore`](super::FileStore)) and PostgreSQL
//! stores, over the sessions directory Zero itself reads and writes ([`ZeroSessions`]).
//!
//! `<root>/<sessionId>/metadata.json` (pretty JSON, replaced atomically), an append-only
//! `events.jsonl` (one `{id, sessionId, sequence, type, createdAt, payload}` per line, fsynced
//! after every append) and `session.lock` (an advisory lock held while appending). Directories
//! are created 0700 and files 0600. A crash in the middle of an append leaves a last line
//! without its newline: readers drop it, and the next append cuts it off first, so a session
//! never becomes unreadable.
//!
//! The root is `$XDG_DATA_HOME/zero/sessions`, falling back to `$HOME/.local/share/zero/sessions`
//! ([`default_root`]).
//!
//! - [`records`]: what the files hold (the metadata and the lines; the payloads are the front
//!   end's: [`ZeroSessions::append`] takes any `Serialize` payload).
//! - [`sessions`]: [`ZeroSessions`], the sessions directory in that layout (create, append,
//!   read, fork, list).
//! - [`storage`]: [`ZeroStorage`], the host's `SessionStorage` over it (a host's sessions in
//!   Zero's layout), its event log in [`log`].
//!
//! Imports run one way: `records` ← `sessions` ← `log` ← `storage`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Utc};

pub mod log;
pub mod records;
pub mod rewind;
pub mod sessions;
pub mod storage;

pub use log::HOST_EVENT;
pub use records::{Appended, ForkRecord, Metadata, SessionEvent, SessionEventLine};
pub use sessions::{CreateInput, ZeroError, ZeroSessions};
pub use storage::{Transcripts, ZeroStorage, HOST_KEY, TRANSCRIPT_FILE};

/// The metadata file name.
pub const METADATA_FILE: &str = "metadata.json";
/// The events file name.
pub const EVENTS_FILE: &str = "events.jsonl";
/// The lock file name.
pub const LOCK_FILE: &str = "session.lock";
/// The directory of a session's checkpoint blobs.
pub const BLOBS_DIR: &str = "blobs";

/// Resolves the default root from an environment lookup.
pub fn default_root(env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    let data_home = env("XDG_DATA_HOME")
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty());
    let base = match data_home {
        Some(dir) => PathBuf::from(dir),
        None => {
            let home = env("HOME")
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| ".".to_string());
            PathBuf::from(home).join(".local").join("share")
        }
    };
    base.join("zero").join("sessions")
}

/// `^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$` after trimming, as Zero checks it: agent-host's one
/// session-id rule ([`crate::fs::valid_session_id`], which does not trim) on the trimmed id.
pub fn valid_session_id(id: &str) -> bool {
    crate::fs::valid_session_id(id.trim())
}

/// A new Zero session id: `zero_<UTC yyyyMMddHHmmss>_<UnixNano>_<per-process counter from 1>`.
pub fn new_session_id(now: DateTime<Utc>) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed) + 1;
    let nanos = now.timestamp_nanos_opt().unwrap_or_default();
    format!("zero_{}_{nanos}_{n}", now.format("%Y%m%d%H%M%S"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_root_honours_xdg_data_home() {
        let env = |k: &str| match k {
            "XDG_DATA_HOME" => Some("/data".to_string()),
            "HOME" => Some("/home/u".to_string()),
            _ => None,
        };
        assert_eq!(default_root(&env), PathBuf::from("/data/zero/sessions"));
        let env = |k: &str| (k == "HOME").then(|| "/home/u".to_string());
        assert_eq!(
            default_root(&env),
            PathBuf::from("/home/u/.local/share/zero/sessions")
        );
    }

    #[test]
    fn session_ids_validate() {
        let now = Utc::now();
        let a = new_session_id(now);
        let b = new_session_id(now);
        assert!(a.starts_with("zero_"));
        assert_ne!(a, b);
        assert!(valid_session_id(&a));
        assert!(!valid_session_id("../escape"));
        assert!(!valid_session_id("_x"));
        assert!(!valid_session_id(&"a".repeat(129)));
        // Zero trims first; agent-host's rule does not.
        assert!(valid_session_id(" s1 "));
        assert!(!crate::fs::valid_session_id(" s1 "));
    }
}
