//! `list_dir`, `glob` and `grep`: `.gitignore`-aware views of the workspace.

use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use agent_core::{
    async_trait,
    permission::{Assessment, RiskCategory},
    CancellationToken, SideEffect, Tool, ToolContext, ToolError, ToolOutput,
};
use ignore::WalkBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::common::{
    assess_path, assess_read_path, blocking, looks_binary, parse_args, resolve, resolve_read,
    schema_for, str_arg, Config, ToolsConfig, SNIFF_BYTES,
};
use crate::scrub::finish_output;

/// Most entries `list_dir` and `glob` return.
pub const MAX_ENTRIES: usize = 1000;
/// Most matching lines `grep` returns.
pub const MAX_MATCHES: usize = 200;
/// Longest line `grep` shows in full.
const MAX_MATCH_CHARS: usize = 300;
/// Files larger than this are skipped by `grep`.
const MAX_GREP_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// A walker over `base` that honours `.gitignore` (also outside git repositories), `.ignore`
/// and global git excludes, shows hidden files but never `.git`, and does not follow
/// symlinks. Entries come sorted by name, so results are deterministic.
fn walker(base: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(base);
    builder
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|entry| entry.file_name() != ".git");
    builder
}

fn cancelled(cancel: &CancellationToken) -> Result<(), ToolError> {
    match cancel.is_cancelled() {
        true => Err(ToolError::Cancelled("the search was cancelled".to_string())),
        false => Ok(()),
    }
}

fn rel(base: &Path, path: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

// ---------------------------------------------------------------------------------------
// list_dir

/// Arguments of `list_dir`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListDirArgs {
    /// Directory to list, relative to the workspace root (default: the root).
    #[serde(default)]
    pub path: Option<String>,
}

/// Lists a directory's entries.
#[derive(Debug, Clone)]
pub struct ListDir {
    config: Config,
}

impl ListDir {
    /// The tool for `config`.
    pub fn new(config: Arc<ToolsConfig>) -> Self {
        Self { config }
    }
}

#[async_trait]
impl Tool for ListDir {
    fn name(&self) -> &str {
        "list_dir"
    }

    fn description(&self) -> &str {
        "Lists the entries of a workspace directory (default: the workspace root), one per line, \
         folders marked with a trailing '/'. Entries ignored by .gitignore are left out."
    }

    fn parameters(&self) -> Value {
        schema_for::<ListDirArgs>()
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }

    fn assess(&self, args: &Value, _cwd: &Path) -> Assessment {
        assess_path(
            &self.config,
            self.name(),
            RiskCategory::Read,
            str_arg(args, "path"),
            None,
        )
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: ListDirArgs = parse_args(self.name(), args)?;
        let raw = args.path.unwrap_or_else(|| ".".to_string());
        let resolved = resolve(&self.config, self.name(), &raw)?;
        let cancel = ctx.cancel.clone();
        let output = blocking(move || {
            let dir = &resolved.path;
            let display = &resolved.display;
            let meta = std::fs::metadata(dir).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => {
                    ToolError::Failed(format!("directory not found: {display}"))
                }
                _ => ToolError::io(format!("listing {display}"), e),
            })?;
            if !meta.is_dir() {
                return Err(ToolError::Failed(format!(
                    "{display} is a file, not a directory; use read_file to read it"
                )));
            }
            let mut entries = Vec::new();
            for entry in walker(dir).max_depth(Some(1)).build() {
                cancelled(&cancel)?;
                let Ok(entry) = entry else { continue };
                if entry.depth() == 0 {
                    continue;
                }
                let name = entry.file_name().to_string_lossy().into_owned();
                let kind = entry.file_type();
                let shown = match kind {
                    Some(t) if t.is_dir() => format!("{name}/"),
                    Some(t) if t.is_symlink() => match std::fs::read_link(entry.path()) {
                        Ok(target) => format!("{name} -> {}", target.display()),
                        Err(_) => format!("{name}@"),
                    },
                    _ => name,
                };
                entries.push(shown);
            }
            entries.sort();
            if entries.is_empty() {
                return Ok(ToolOutput::text(format!("{display} is empty.")));
            }
            let total = entries.len();
            let mut text = entries
                .into_iter()
                .take(MAX_ENTRIES)
                .collect::<Vec<_>>()
                .join("\n");
            let mut output = ToolOutput::default();
            if total > MAX_ENTRIES {
                text.push_str(&format!(
                    "\n[{} more entries not shown]",
                    total - MAX_ENTRIES
                ));
                output.truncated = true;
            }
            output.content = vec![agent_core::ContentBlock::text(text)];
            Ok(output)
        })
        .await?;
        Ok(finish_output(output, self.config.output_cap))
    }
}

// ---------------------------------------------------------------------------------------
// glob

/// Arguments of `glob`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GlobArgs {
    /// Glob pattern relative to `path`, e.g. `**/*.rs` or `src/*.toml`. `*` does not cross
    /// folders; `**` does.
    pub pattern: String,
    /// Directory to search from, relative to the workspace root (default: the root).
    #[serde(default)]
    pub path: Option<String>,
}

/// Finds files by glob pattern.
#[derive(Debug, Clone)]
pub struct Glob {
    config: Config,
}

impl Glob {
    /// The tool for `config`.
    pub fn new(config: Arc<ToolsConfig>) -> Self {
        Self { config }
    }
}

/// The literal leading folders of a glob pattern (`src/**/*.rs` → `src`).
fn literal_prefix(pattern: &str) -> String {
    let mut prefix = PathBuf::new();
    let path = Path::new(pattern);
    let comps: Vec<Component<'_>> = path.components().collect();
    for (i, c) in comps.iter().enumerate() {
        let s = c.as_os_str().to_string_lossy();
        if s.contains(['*', '?', '[', '{']) || i + 1 == comps.len() {
            break;
        }
        prefix.push(c.as_os_str());
    }
    let prefix = prefix.to_string_lossy().into_owned();
    if prefix.is_empty() {
        ".".to_string()
    } else {
        prefix
    }
}

#[async_trait]
impl Tool for Glob {
    fn name(&self) -> &str {
        "glob"
    }

    fn description(&self) -> &str {
        "Finds files whose path (relative to `path`, default the workspace root) matches a glob \
         pattern such as `**/*.rs` or `src/*.toml`. Files ignored by .gitignore are left out. \
         Returns matching paths sorted, one per line."
    }

    fn parameters(&self) -> Value {
        schema_for::<GlobArgs>()
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }

    fn assess(&self, args: &Value, _cwd: &Path) -> Assessment {
        let base = str_arg(args, "path").unwrap_or(".");
        let first = assess_path(
            &self.config,
            self.name(),
            RiskCategory::Read,
            Some(base),
            None,
        );
        if first.block.is_some() {
            return first;
        }
        match str_arg(args, "pattern") {
            Some(pattern) => {
                let joined = Path::new(base).join(literal_prefix(pattern));
                assess_path(
                    &self.config,
                    self.name(),
                    RiskCategory::Read,
                    Some(&joined.to_string_lossy()),
                    None,
                )
            }
            None => first,
        }
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: GlobArgs = parse_args(self.name(), args)?;
        let base_raw = args.path.clone().unwrap_or_else(|| ".".to_string());
        let base = resolve(&self.config, self.name(), &base_raw)?;
        let prefix = Path::new(&base_raw).join(literal_prefix(&args.pattern));
        resolve(&self.config, self.name(), &prefix.to_string_lossy())?;
        let matcher = globset::GlobBuilder::new(&args.pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| ToolError::InvalidArguments(format!("glob: invalid pattern: {e}")))?
            .compile_matcher();
        let cancel = ctx.cancel.clone();
        let output = blocking(move || {
            if !base.path.is_dir() {
                return Err(ToolError::Failed(format!(
                    "directory not found: {}",
                    base.display
                )));
            }
            let mut hits = Vec::new();
            for entry in walker(&base.path).build() {
                cancelled(&cancel)?;
                let Ok(entry) = entry else { continue };
                if entry.file_type().is_some_and(|t| t.is_dir()) {
                    continue;
                }
                let relative = rel(&base.path, entry.path());
                if matcher.is_match(&relative) {
                    hits.push(relative);
                }
            }
            hits.sort();
            if hits.is_empty() {
                return Ok(ToolOutput::text(format!(
                    "No files match {} in {}.",
                    args.pattern, base.display
                )));
            }
            let total = hits.len();
            let mut text = hits
                .into_iter()
                .take(MAX_ENTRIES)
                .collect::<Vec<_>>()
                .join("\n");
            let mut output = ToolOutput::default();
            if total > MAX_ENTRIES {
                text.push_str(&format!(
                    "\n[{} more files not shown; narrow the pattern]",
                    total - MAX_ENTRIES
                ));
                output.truncated = true;
            }
            output.content = vec![agent_core::ContentBlock::text(text)];
            Ok(output)
        })
        .await?;
        Ok(finish_output(output, self.config.output_cap))
    }
}

// ---------------------------------------------------------------------------------------
// grep

/// Arguments of `grep`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GrepArgs {
    /// Regular expression (Rust regex syntax) to search for, line by line.
    pub pattern: String,
    /// File or directory to search, relative to the workspace root (default: the root).
    #[serde(default)]
    pub path: Option<String>,
    /// Only search files matching this glob (e.g. `*.rs`; a pattern with '/' matches the
    /// relative path, otherwise the file name).
    #[serde(default)]
    pub glob: Option<String>,
}

/// Searches file contents with a regular expression.
#[derive(Debug, Clone)]
pub struct Grep {
    config: Config,
}

impl Grep {
    /// The tool for `config`.
    pub fn new(config: Arc<ToolsConfig>) -> Self {
        Self { config }
    }
}

#[async_trait]
impl Tool for Grep {
    fn name(&self) -> &str {
        "grep"
    }

    fn description(&self) -> &str {
        "Searches the contents of workspace files for a regular expression and returns matching \
         lines as `path:line: text`. Respects .gitignore and skips binary files. Narrow the \
         search with path (a file or folder) and glob (e.g. `*.rs`)."
    }

    fn parameters(&self) -> Value {
        schema_for::<GrepArgs>()
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }

    fn assess(&self, args: &Value, _cwd: &Path) -> Assessment {
        assess_read_path(&self.config, self.name(), str_arg(args, "path"))
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: GrepArgs = parse_args(self.name(), args)?;
        let raw = args.path.clone().unwrap_or_else(|| ".".to_string());
        let resolved = resolve_read(&self.config, self.name(), &raw)?;
        let regex = regex::RegexBuilder::new(&args.pattern)
            .size_limit(10 * 1024 * 1024)
            .build()
            .map_err(|e| ToolError::InvalidArguments(format!("grep: invalid regex: {e}")))?;
        let filter = match &args.glob {
            Some(g) => Some((
                globset::Glob::new(g)
                    .map_err(|e| ToolError::InvalidArguments(format!("grep: invalid glob: {e}")))?
                    .compile_matcher(),
                g.contains('/'),
            )),
            None => None,
        };
        let workspace = self.config.workspace.clone();
        let cancel = ctx.cancel.clone();
        let output = blocking(move || {
            let base = &resolved.path;
            if !base.exists() {
                return Err(ToolError::Failed(format!(
                    "path not found: {}",
                    resolved.display
                )));
            }
            let mut lines = Vec::new();
            let mut capped = false;
            let mut files = 0usize;
            'walk: for entry in walker(base).build() {
                cancelled(&cancel)?;
                let Ok(entry) = entry else { continue };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    // Directories, and symlinks (which could lead out of the workspace).
                    continue;
                }
                let path = entry.path();
                let shown = workspace.display(path);
                if let Some((matcher, whole_path)) = &filter {
                    let subject = if *whole_path {
                        rel(base, path)
                    } else {
                        entry.file_name().to_string_lossy().into_owned()
                    };
                    if !matcher.is_match(&subject) {
                        continue;
                    }
                }
                if entry
                    .metadata()
                    .is_ok_and(|m| m.len() > MAX_GREP_FILE_BYTES)
                {
                    continue;
                }
                let mut bytes = Vec::new();
                if std::fs::File::open(path)
                    .and_then(|mut f| f.read_to_end(&mut bytes))
                    .is_err()
                {
                    continue;
                }
                if looks_binary(&bytes[..bytes.len().min(SNIFF_BYTES)]) {
                    continue;
                }
                files += 1;
                let text = String::from_utf8_lossy(&bytes);
                for (i, line) in text.lines().enumerate() {
                    if regex.is_match(line) {
                        if lines.len() == MAX_MATCHES {
                            capped = true;
                            break 'walk;
                        }
                        let line = match line.char_indices().nth(MAX_MATCH_CHARS) {
                            Some((cut, _)) => format!("{}…", &line[..cut]),
                            None => line.to_string(),
                        };
                        lines.push(format!("{shown}:{}: {line}", i + 1));
                    }
                }
            }
            if lines.is_empty() {
                return Ok(ToolOutput::text(format!(
                    "No matches for {:?} in {} ({files} files searched).",
                    args.pattern, resolved.display
                )));
            }
            let mut text = lines.join("\n");
            let mut output = ToolOutput::default();
            if capped {
                text.push_str(&format!(
                    "\n[stopped after {MAX_MATCHES} matches; narrow the pattern, path or glob]"
                ));
                output.truncated = true;
            }
            output.content = vec![agent_core::ContentBlock::text(text)];
            Ok(output)
        })
        .await?;
        Ok(finish_output(output, self.config.output_cap))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_prefix_stops_at_globs() {
        assert_eq!(literal_prefix("src/**/*.rs"), "src");
        assert_eq!(literal_prefix("*.rs"), ".");
        assert_eq!(literal_prefix("../other/*.rs"), "../other");
        assert_eq!(literal_prefix("/etc/*.conf"), "/etc");
    }
}
