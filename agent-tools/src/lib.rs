//! The coding tools for [`agent_core`]: read, write, edit, list, glob, grep, bash and plan,
//! with workspace confinement, risk classification and secret scrubbing.
//!
//! [`ToolSet`] is the entry point front ends use: the default tools for a workspace,
//! filtered by name, plus any tools of your own.
//!
//! - **Confinement** ([`Workspace`]): every path resolves against the workspace root; `..`
//!   escapes, absolute paths outside it and symlinks that lead outside are refused with a
//!   [`agent_core::permission::Block`] (`outside_workspace`, `symlink_traversal`) whose action is `deny`,
//!   both in [`agent_core::Tool::assess`] (before the permission gate) and when the call runs.
//! - **Risk** ([`classify_command`]): every call gets a level and categories; `bash` command
//!   lines are parsed and network tools, destructive commands and piped installers flagged.
//! - **Output** ([`scrub_secrets`], [`finish_output`]): secrets become `[REDACTED]`, for
//!   every tool in a [`ToolSet`], custom ones included. The tools that page (`read_file`,
//!   `list_dir`, `glob`, `grep`) keep a result within the output cap (default 10240 bytes,
//!   the agent's tool-output budget); `bash` and custom tools hand the agent their whole
//!   output (up to 8 MiB), which the agent loop cuts for the model and spills to a file
//!   that `read_file` and `grep` may read even outside the workspace
//!   (`agent_core::spill`).

#![warn(missing_docs)]

mod ask;
mod bash;
mod catalogue;
mod classify;
mod common;
mod editor_io;
#[cfg(unix)]
mod exec;
mod fs;
mod image;
pub mod launcher;
mod patch;
mod plan;
mod scrub;
mod search;
mod toolset;
mod web;
mod workspace;

pub use ask::{
    format_answers, parse_questions, Answers, AskUser, Question, QuestionChannel, NO_USER_TO_ASK,
};
pub use bash::{Bash, BashArgs, SandboxPermissions, PROGRESS_INTERVAL};
pub use catalogue::Catalogue;
pub use classify::{classify_command, CommandAssessment, NETWORK_REASON, SHELL_REASON};
pub use common::{ToolsConfig, DEFAULT_BASH_TIMEOUT, MAX_BASH_TIMEOUT};
#[cfg(unix)]
pub use exec::{
    exec_tools, ExecCommand, ExecCommandArgs, ExecError, ExecSessionInfo, ExecSessions, WriteStdin,
    WriteStdinArgs, MAX_EXEC_SESSIONS, MAX_SESSION_BUFFER,
};
pub use fs::{
    EditFile, EditFileArgs, ReadFile, ReadFileArgs, WriteFile, WriteFileArgs, DEFAULT_READ_LIMIT,
    EDIT_FILE_REASON, MAX_LINE_CHARS, WRITE_FILE_REASON,
};
pub use image::{sniff_image, ViewImage, ViewImageArgs, MAX_IMAGE_BYTES};
pub use patch::{ApplyError, ApplyPatch, ApplyPatchArgs, ParseError, APPLY_PATCH_REASON};
pub use plan::{Plan, PlanArgs, PlanItemStatus, PlanStep};
pub use scrub::{
    finish_output, is_sensitive_name, register_secret, scrub_secrets, scrub_secrets_cow,
    sensitive_env_values, truncate_output, truncate_utf8, DEFAULT_FULL_OUTPUT_CAP,
    DEFAULT_OUTPUT_CAP, MIN_ENV_SECRET_LEN, REDACTED, TRUNCATION_MARKER,
};
pub use search::{Glob, GlobArgs, Grep, GrepArgs, ListDir, ListDirArgs, MAX_ENTRIES, MAX_MATCHES};
pub use toolset::{ToolSet, ToolSetBuilder, ToolSetError};
pub use web::{
    browsing_tools, html_to_markdown, SearchBackend, SearchProvider, WebFetch, WebFetchArgs,
    WebPages, WebSearch, WebSearchArgs, DEFAULT_WEB_FETCH_MAX_BYTES, DUCKDUCKGO_HTML,
    MAX_REDIRECTS, MAX_WEB_FETCH_MAX_BYTES, WEB_FETCH_TIMEOUT, WEB_PAGES_MAX_BYTES,
    WEB_PAGES_MAX_DOCUMENTS,
};
pub use workspace::{Confinement, ResolvedPath, Workspace};
