//! Command hooks for [`agent_core`]: one runner shared by every front end.
//!
//! A hook here is a command: a child process per call, started in the workspace, reading
//! a JSON payload on stdin, killed with its whole process group when it runs past its
//! timeout (default 30 s) or the run is aborted, with its stdout and stderr capped. A hook
//! that cannot start or times out is reported (as a
//! [`agent_core::hooks::HookOutcome::Failed`] decision and a log line) and does not hold up the
//! run; whether it blocks follows its format (Zero fails closed for `beforeTool`, Claude
//! Code fails open). Hook commands run under the agent's OS sandbox policy
//! ([`agent_core::hooks::HookContext::sandbox`]), confined as `bash` is (see [`runner`]).
//!
//! Two formats, both giving an `Arc<dyn agent_core::hooks::Hooks>`:
//!
//! - [`zero`]: Zero's native `hooks.json`, from the places Zero reads it (with its
//!   workspace trust gate and audit log), or from a given file;
//! - [`claude`]: Claude Code's `hooks` settings, imported from a file.
//!
//! # Use in a front end
//!
//! ```no_run
//! # fn demo(builder: agent_core::AgentBuilder, cwd: std::path::PathBuf, file: Option<std::path::PathBuf>)
//! # -> Result<agent_core::AgentBuilder, agent_hooks::HookError> {
//! let options = agent_hooks::HookOptions::new(&cwd);
//! // `--hooks FILE`, either format, detected by shape:
//! let builder = match &file {
//!     Some(path) => builder.hook(agent_hooks::load_file(path, &options)?.hooks),
//!     // Zero's own files (`exec`): the user layer, and the project layer if trusted.
//!     None => builder.hook(agent_hooks::zero::load_workspace(&options).hooks),
//! };
//! # Ok(builder) }
//! ```
//!
//! The host calls [`agent_core::Agent::session_start`] and
//! [`agent_core::Agent::session_end`] around a session; the agent consults the other
//! hooks itself and reports their decisions as [`agent_core::AgentEvent::HookDecided`].

#![warn(missing_docs)]

pub mod claude;
pub mod matcher;
pub mod runner;
pub mod zero;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_core::hooks::Hooks;

/// Maps a session id to the file its transcript is kept in (Claude Code's
/// `transcript_path`).
pub type TranscriptPath = Arc<dyn Fn(&str) -> Option<PathBuf> + Send + Sync>;

/// How command hooks run.
#[derive(Clone)]
pub struct HookOptions {
    /// The workspace: hooks run in it, and it is the root whose trust Zero checks.
    pub cwd: PathBuf,
    /// Time a hook command may run, unless the hook sets its own (default 30 s).
    pub timeout: Duration,
    /// Bytes kept of each of a hook's output streams (default 64 KiB).
    pub output_cap: usize,
    /// Variables added to the inherited environment of every hook.
    pub env: Vec<(String, String)>,
    /// Zero's audit log (`hooks/audit.jsonl`); none writes no log.
    /// [`zero::load_workspace`] fills in Zero's default.
    pub audit: Option<PathBuf>,
    /// Where a session's transcript is, for Claude Code's `transcript_path` (empty
    /// without).
    pub transcript_path: Option<TranscriptPath>,
}

impl std::fmt::Debug for HookOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookOptions")
            .field("cwd", &self.cwd)
            .field("timeout", &self.timeout)
            .field("output_cap", &self.output_cap)
            .field("env", &self.env.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .field("audit", &self.audit)
            .field("transcript_path", &self.transcript_path.is_some())
            .finish()
    }
}

impl HookOptions {
    /// Defaults for hooks of the workspace `cwd`.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        Self {
            cwd: cwd.into(),
            timeout: runner::DEFAULT_TIMEOUT,
            output_cap: runner::DEFAULT_OUTPUT_CAP,
            env: Vec::new(),
            audit: None,
            transcript_path: None,
        }
    }

    pub(crate) fn run_config(&self) -> runner::RunConfig {
        runner::RunConfig {
            cwd: self.cwd.clone(),
            env: self.env.clone(),
            timeout: self.timeout,
            output_cap: self.output_cap,
        }
    }
}

/// A hooks file that could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// The file could not be read.
    #[error("reading hooks file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("hooks file {} is not valid JSON: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// The file is neither format, or a definition in it is invalid.
    #[error("hooks file {}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the field.
        message: String,
    },
}

/// The two hook file formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookFormat {
    /// Zero's `{"enabled", "hooks": [...]}`.
    Zero,
    /// Claude Code's `{"hooks": {"PreToolUse": [...], ...}}`.
    Claude,
}

/// Hooks loaded from a file.
pub struct LoadedHooks {
    /// Which format the file was in.
    pub format: HookFormat,
    /// The hooks, for [`agent_core::AgentBuilder::hook`] or [`agent_core::AgentUpdate::hooks`].
    pub hooks: Arc<dyn Hooks>,
    /// Parts of the file that were skipped, and why.
    pub diagnostics: Vec<String>,
}

impl std::fmt::Debug for LoadedHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedHooks")
            .field("format", &self.format)
            .field("diagnostics", &self.diagnostics)
            .finish()
    }
}

/// Tells the formats apart by shape: `hooks` an array (or only `enabled`) is Zero's; `hooks`
/// an object (or absent, as in a settings file without hooks) is Claude Code's.
pub fn detect_format(value: &serde_json::Value) -> Result<HookFormat, String> {
    let Some(object) = value.as_object() else {
        return Err("expected a JSON object".to_string());
    };
    match object.get("hooks") {
        Some(serde_json::Value::Array(_)) => Ok(HookFormat::Zero),
        Some(serde_json::Value::Object(_)) => Ok(HookFormat::Claude),
        Some(serde_json::Value::Null) | None if object.contains_key("enabled") => {
            Ok(HookFormat::Zero)
        }
        Some(serde_json::Value::Null) | None => Ok(HookFormat::Claude),
        Some(_) => Err(
            "`hooks` must be Zero's array of definitions or Claude Code's object of events"
                .to_string(),
        ),
    }
}

/// Loads a hooks file in either format (detected by shape). A file given explicitly is
/// trusted and strict: any invalid definition is an error. Zero-format files get no audit
/// log unless `options.audit` is set.
pub fn load_file(path: &Path, options: &HookOptions) -> Result<LoadedHooks, HookError> {
    let text = std::fs::read_to_string(path).map_err(|source| HookError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&text, path, options)
}

/// Like [`load_file`], from the file's text (`path` names it in errors).
pub fn parse(text: &str, path: &Path, options: &HookOptions) -> Result<LoadedHooks, HookError> {
    let invalid = |message: String| HookError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|source| HookError::Json {
            path: path.to_path_buf(),
            source,
        })?;
    match detect_format(&value).map_err(invalid)? {
        HookFormat::Zero => {
            let config = zero::ZeroConfig::parse(text).map_err(invalid)?;
            Ok(LoadedHooks {
                format: HookFormat::Zero,
                hooks: Arc::new(zero::ZeroHooks::new(config, options)),
                diagnostics: Vec::new(),
            })
        }
        HookFormat::Claude => {
            let hooks = claude::ClaudeHooks::parse(text, options).map_err(invalid)?;
            for diagnostic in &hooks.diagnostics {
                tracing::warn!(path = %path.display(), "{diagnostic}");
            }
            Ok(LoadedHooks {
                format: HookFormat::Claude,
                hooks: Arc::new(hooks.list),
                diagnostics: hooks.diagnostics,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn formats_are_told_apart_by_shape() {
        assert_eq!(detect_format(&json!({"hooks": []})), Ok(HookFormat::Zero));
        assert_eq!(
            detect_format(&json!({"enabled": false})),
            Ok(HookFormat::Zero)
        );
        assert_eq!(
            detect_format(&json!({"hooks": {"Stop": []}})),
            Ok(HookFormat::Claude)
        );
        assert_eq!(
            detect_format(&json!({"model": "x"})),
            Ok(HookFormat::Claude)
        );
        assert!(detect_format(&json!({"hooks": 3})).is_err());
        assert!(detect_format(&json!([1])).is_err());
    }

    #[test]
    fn errors_name_the_file_and_field() {
        let options = HookOptions::new("/tmp");
        let path = Path::new("/x/hooks.json");
        let err = parse(r#"{"hooks": [{"id": "a"}]}"#, path, &options).unwrap_err();
        assert!(err.to_string().contains("/x/hooks.json"), "{err}");
        assert!(err.to_string().contains("hooks.0.event"), "{err}");
        assert!(matches!(
            parse("{", path, &options),
            Err(HookError::Json { .. })
        ));
        assert!(matches!(
            load_file(Path::new("/nonexistent/hooks.json"), &options),
            Err(HookError::Read { .. })
        ));
    }
}
