//! What every built-in tool shares: configuration, argument parsing, schemas, path
//! assessment.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    permission::{Assessment, Risk, RiskCategory},
    ToolError,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::scrub::{DEFAULT_FULL_OUTPUT_CAP, DEFAULT_OUTPUT_CAP};
use crate::workspace::{ResolvedPath, Workspace};

/// Default `bash` timeout.
pub const DEFAULT_BASH_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest `bash` timeout a call may ask for.
pub const MAX_BASH_TIMEOUT: Duration = Duration::from_secs(600);

/// Settings shared by the built-in tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolsConfig {
    /// The roots tools may touch.
    pub workspace: Workspace,
    /// Output cap in bytes of the tools that page (`read_file`, `list_dir`, `glob`, `grep`,
    /// and the short results of `write_file`, `edit_file`, `plan`); default 10240. Keep it
    /// within the agent's tool-output budget, or their results get spilled.
    pub output_cap: usize,
    /// Cap in bytes of the whole output `bash` and custom tools hand to the agent loop,
    /// which cuts it for the model and spills it to a file; default 8 MiB. `bash` keeps the
    /// most recent output of each stream when a command prints more.
    pub full_output_cap: usize,
    /// `bash` timeout when the call gives none.
    pub bash_timeout: Duration,
    /// Upper bound for a call's `timeout_ms`.
    pub bash_max_timeout: Duration,
}

impl ToolsConfig {
    /// Defaults for `workspace`.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: Workspace::new(workspace),
            output_cap: DEFAULT_OUTPUT_CAP,
            full_output_cap: DEFAULT_FULL_OUTPUT_CAP,
            bash_timeout: DEFAULT_BASH_TIMEOUT,
            bash_max_timeout: MAX_BASH_TIMEOUT,
        }
    }
}

pub(crate) type Config = Arc<ToolsConfig>;

/// Parses a call's arguments into `T` (`null` counts as `{}`).
pub(crate) fn parse_args<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, ToolError> {
    let args = match args {
        Value::Null => Value::Object(Default::default()),
        other => other,
    };
    serde_json::from_value(args).map_err(|e| ToolError::InvalidArguments(format!("{tool}: {e}")))
}

/// The JSON schema of `T`, inlined, without `$schema` and `title`.
pub(crate) fn schema_for<T: JsonSchema>() -> Value {
    let settings = schemars::generate::SchemaSettings::draft07().with(|s| {
        s.inline_subschemas = true;
    });
    let mut value = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Some(object) = value.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    value
}

/// Assesses a call that touches `raw` (default `.`): the base category plus what the path
/// adds, or a deny block when it leaves the workspace.
pub(crate) fn assess_path(
    config: &ToolsConfig,
    tool: &str,
    base: RiskCategory,
    raw: Option<&str>,
    reason: Option<&str>,
) -> Assessment {
    let raw = raw.unwrap_or(".");
    match config.workspace.resolve(tool, raw) {
        Ok(resolved) => Assessment {
            risk: Risk::from_categories(std::iter::once(base).chain(resolved.categories)),
            block: None,
            reason: reason.map(str::to_string),
        },
        Err(confinement) => {
            let mut block = confinement.block;
            block.risk = Risk::from_categories(
                std::iter::once(base).chain(block.risk.categories.iter().copied()),
            );
            Assessment {
                risk: block.risk.clone(),
                reason: Some(block.reason.clone()),
                block: Some(block),
            }
        }
    }
}

/// `raw` as a spilled tool-output file of this process (see
/// [`agent_core::spill::is_spill_file`]), which read-only tools may open wherever it is.
fn spill_file(raw: &str) -> Option<ResolvedPath> {
    let path = std::path::Path::new(raw);
    agent_core::spill::is_spill_file(path).then(|| ResolvedPath {
        path: path.to_path_buf(),
        display: raw.to_string(),
        categories: vec![RiskCategory::AbsolutePath],
    })
}

/// [`assess_path`] for a tool that only reads: a spilled tool-output file is allowed
/// outside the workspace.
pub(crate) fn assess_read_path(config: &ToolsConfig, tool: &str, raw: Option<&str>) -> Assessment {
    match raw.and_then(spill_file) {
        Some(spilled) => Assessment {
            risk: Risk::from_categories(
                std::iter::once(RiskCategory::Read).chain(spilled.categories),
            ),
            block: None,
            reason: None,
        },
        None => assess_path(config, tool, RiskCategory::Read, raw, None),
    }
}

/// [`resolve`] for a tool that only reads: a spilled tool-output file is allowed outside
/// the workspace.
pub(crate) fn resolve_read(
    config: &ToolsConfig,
    tool: &str,
    raw: &str,
) -> Result<ResolvedPath, ToolError> {
    match config.workspace.resolve(tool, raw) {
        Ok(resolved) => Ok(resolved),
        Err(confinement) => {
            spill_file(raw).ok_or_else(|| ToolError::Blocked(Box::new(confinement.block)))
        }
    }
}

/// Resolves `raw` for a call, turning a confinement failure into [`ToolError::Blocked`].
pub(crate) fn resolve(
    config: &ToolsConfig,
    tool: &str,
    raw: &str,
) -> Result<ResolvedPath, ToolError> {
    config
        .workspace
        .resolve(tool, raw)
        .map_err(|c| ToolError::Blocked(Box::new(c.block)))
}

/// The `path` argument of a raw call, if any.
pub(crate) fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// Runs blocking file-system work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ToolError::Failed(format!("tool task failed: {e}")))?
}

/// Bytes sniffed to tell binary files from text.
pub(crate) const SNIFF_BYTES: usize = 8192;

/// True when `head` looks binary (contains a NUL byte).
pub(crate) fn looks_binary(head: &[u8]) -> bool {
    head.contains(&0)
}
