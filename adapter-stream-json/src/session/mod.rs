//! Sessions on disk in Zero's layout, with resume and fork.
//!
//! `<root>/<sessionId>/metadata.json` (pretty JSON, replaced atomically), an append-only
//! `events.jsonl` (one `{id, sessionId, sequence, type, createdAt, payload}` per line, fsynced
//! after every append) and `session.lock` (an advisory lock held while appending). Directories
//! are created 0700 and files 0600. A crash in the middle of an append leaves a last line
//! without its newline: readers drop it, and the next append cuts it off first, so a session
//! never becomes unreadable.
//!
//! The root is `$XDG_DATA_HOME/zero/sessions`, falling back to `$HOME/.local/share/zero/sessions`.
//!
//! - [`records`]: what the files hold.
//! - [`store`]: [`ZeroSessions`], the sessions directory in that layout.
//! - [`storage`]: [`ZeroStorage`], agent-host's `SessionStorage` over it (a host's sessions in
//!   Zero's layout), its event log in [`log`].
//! - [`prepare`](mod@prepare): what an exec run does with its session.

use std::path::PathBuf;

pub mod log;
pub mod prepare;
pub mod records;
pub mod storage;
pub mod store;

pub use prepare::{
    format_exec_prompt, preflight, prepare, session_title, ExecMode, NewSessionInfo,
    PreflightError, PreparedSession, SessionRequest,
};
pub use records::{Metadata, SessionEvent};
pub use storage::{Transcripts, ZeroStorage};
pub use store::{CreateInput, SessionError, ZeroSessions};

/// The metadata file name.
pub const METADATA_FILE: &str = "metadata.json";
/// The events file name.
pub const EVENTS_FILE: &str = "events.jsonl";
/// The lock file name.
pub const LOCK_FILE: &str = "session.lock";
pub(crate) const BLOBS_DIR: &str = "blobs";

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
