//! Exec's sessions: Zero's on-disk layout, with resume and fork.
//!
//! The layout itself (`<root>/<sessionId>/metadata.json`, `events.jsonl`, `session.lock`,
//! `blobs/`) is agent-host's [`agent_host::session::zero`]: [`ZeroSessions`], the sessions
//! directory, and [`ZeroStorage`], the host's `SessionStorage` over it, re-exported here.
//! What is exec's stays here:
//!
//! - [`records`]: the typed payloads exec records (messages, tool calls, permissions, …).
//! - [`prepare`](mod@prepare): what an exec run does with its session (`--resume`, `--fork`,
//!   `--init-session-id`).
//! - [`rewind_cli`]: `sessions rewind-plan|rewind <id> --sequence N`.

pub mod prepare;
pub mod records;
pub mod rewind_cli;

pub use agent_host::session::zero::{
    default_root, CreateInput, Transcripts, ZeroError, ZeroError as SessionError, ZeroSessions,
    ZeroStorage, EVENTS_FILE, LOCK_FILE, METADATA_FILE,
};
pub use prepare::{
    format_exec_prompt, preflight, prepare, session_title, ExecMode, NewSessionInfo,
    PreflightError, PreparedSession, SessionRequest,
};
pub use records::{Metadata, SessionEvent};
