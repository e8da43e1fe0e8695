//! `read_file`, `write_file` and `edit_file`.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use agent_core::{
    async_trait,
    permission::{Assessment, RiskCategory},
    SideEffect, Tool, ToolContext, ToolError, ToolOutput,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::common::{
    assess_path, assess_read_path, blocking, looks_binary, parse_args, resolve, resolve_read,
    schema_for, str_arg, Config, ToolsConfig, SNIFF_BYTES,
};
use crate::scrub::finish_output;

/// Lines `read_file` shows when the call gives no limit.
pub const DEFAULT_READ_LIMIT: u64 = 2000;
/// Longest line `read_file` shows in full.
pub const MAX_LINE_CHARS: usize = 2000;
/// Bytes kept free under the cap for the "more lines follow" hint.
const HINT_ROOM: usize = 256;

fn io_error(what: &str, display: &str, err: std::io::Error) -> ToolError {
    match err.kind() {
        std::io::ErrorKind::NotFound => ToolError::Failed(format!("file not found: {display}")),
        std::io::ErrorKind::PermissionDenied => {
            ToolError::Failed(format!("permission denied: {display}"))
        }
        _ => ToolError::io(format!("{what} {display}"), err),
    }
}

// ---------------------------------------------------------------------------------------
// read_file

/// Arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadFileArgs {
    /// File to read, relative to the workspace root.
    pub path: String,
    /// First line to show (1-based; default 1).
    #[serde(default)]
    pub offset: Option<u64>,
    /// Most lines to show (default 2000).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// Reads a text file with numbered lines.
#[derive(Debug, Clone)]
pub struct ReadFile {
    config: Config,
}

impl ReadFile {
    /// The tool for `config`.
    pub fn new(config: Arc<ToolsConfig>) -> Self {
        Self { config }
    }
}

#[async_trait]
impl Tool for ReadFile {
    fn name(&self) -> &str {
        "read_file"
    }

    fn description(&self) -> &str {
        "Reads a text file from the workspace and returns its lines numbered from 1 (like `cat -n`). \
         Use offset (1-based first line) and limit (number of lines) to page through long files. \
         Image files (PNG, JPEG, GIF, WebP) come back as the image; other binary files are \
         refused. Use list_dir or glob to find files first."
    }

    fn parameters(&self) -> Value {
        schema_for::<ReadFileArgs>()
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }

    fn assess(&self, args: &Value, _cwd: &Path) -> Assessment {
        assess_read_path(&self.config, self.name(), str_arg(args, "path"))
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: ReadFileArgs = parse_args(self.name(), args)?;
        let resolved = resolve_read(&self.config, self.name(), &args.path)?;
        let cap = self.config.output_cap;
        // The client's buffer when it lends them (not for a spilled output file, a
        // directory or an image, which only the disk has).
        if let Some(files) = crate::editor_io::files(&ctx) {
            let path = resolved.path.clone();
            let local = blocking(move || {
                Ok(agent_core::spill::is_spill_file(&path)
                    || path.is_dir()
                    || crate::editor_io::is_image_on_disk(&path))
            })
            .await?;
            if !local {
                let output =
                    read_from_editor(files, &resolved.path, &resolved.display, &args, cap, &ctx)
                        .await?;
                return Ok(finish_output(output, cap));
            }
        }
        let output =
            blocking(move || read_numbered(&resolved.path, &resolved.display, &args, cap)).await?;
        Ok(finish_output(output, cap))
    }
}

/// `read_file` through the client's editor: the lines asked for (and one more, to tell
/// whether more follow), numbered as from the disk.
async fn read_from_editor(
    files: &Arc<dyn agent_core::editor::EditorFiles>,
    path: &Path,
    display: &str,
    args: &ReadFileArgs,
    cap: usize,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let offset = args.offset.unwrap_or(1).max(1);
    let limit = args.limit.unwrap_or(DEFAULT_READ_LIMIT);
    if limit == 0 {
        return Err(ToolError::InvalidArguments(
            "read_file: limit must be at least 1".to_string(),
        ));
    }
    let to_u32 = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
    let request = agent_core::editor::ReadText {
        path: path.to_path_buf(),
        line: args.offset.map(|_| to_u32(offset)),
        limit: args.limit.map(|l| to_u32(l.saturating_add(1))),
    };
    let text = files.read_text(request, ctx).await?;
    if looks_binary(text.as_bytes()) {
        return Err(ToolError::Failed(format!(
            "{display} is a binary file; read_file shows text files only"
        )));
    }
    if text.is_empty() {
        return match offset {
            1 => Ok(ToolOutput::text(format!("{display} is empty (0 bytes)."))),
            _ => Err(ToolError::Failed(format!(
                "offset {offset} is past the end of {display}"
            ))),
        };
    }
    // A whole file (no offset asked) is numbered from its first line.
    let first = match args.offset {
        Some(_) => offset,
        None => 1,
    };
    number_lines(&mut text.as_bytes(), display, offset, limit, cap, first)
}

fn read_numbered(
    path: &Path,
    display: &str,
    args: &ReadFileArgs,
    cap: usize,
) -> Result<ToolOutput, ToolError> {
    let meta = std::fs::metadata(path).map_err(|e| io_error("reading", display, e))?;
    if meta.is_dir() {
        return Err(ToolError::Failed(format!(
            "{display} is a directory, not a file; use list_dir to see its entries"
        )));
    }
    let file = std::fs::File::open(path).map_err(|e| io_error("opening", display, e))?;
    let mut reader = BufReader::new(file);
    let head = reader
        .fill_buf()
        .map_err(|e| io_error("reading", display, e))?;
    if crate::image::sniff_image(head).is_some() {
        let (mime, data) = crate::image::load_image(path, display)
            .map_err(|e| ToolError::Failed(format!("Error viewing {display}: {e}")))?;
        return Ok(crate::image::image_output(display, mime, data));
    }
    if looks_binary(&head[..head.len().min(SNIFF_BYTES)]) {
        return Err(ToolError::Failed(format!(
            "{display} is a binary file ({} bytes); read_file shows text files only",
            meta.len()
        )));
    }
    if meta.len() == 0 {
        return Ok(ToolOutput::text(format!("{display} is empty (0 bytes).")));
    }
    let offset = args.offset.unwrap_or(1).max(1);
    let limit = args.limit.unwrap_or(DEFAULT_READ_LIMIT);
    if limit == 0 {
        return Err(ToolError::InvalidArguments(
            "read_file: limit must be at least 1".to_string(),
        ));
    }
    number_lines(&mut reader, display, offset, limit, cap, 1)
}

/// The lines of `reader` from `offset` on (at most `limit`, within `cap` bytes), numbered;
/// the reader's first line is line `first`.
fn number_lines<R: BufRead>(
    reader: &mut R,
    display: &str,
    offset: u64,
    limit: u64,
    cap: usize,
    first: u64,
) -> Result<ToolOutput, ToolError> {
    let mut out = String::new();
    let mut line_no: u64 = first.saturating_sub(1);
    let mut shown: u64 = 0;
    let mut more = false;
    let mut cut_for_size = false;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = reader
            .by_ref()
            .take(64 * 1024 * 1024)
            .read_until(b'\n', &mut buf)
            .map_err(|e| io_error("reading", display, e))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if line_no < offset {
            continue;
        }
        if shown == limit {
            more = true;
            break;
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim_end_matches(['\n', '\r']);
        let line = match text.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => format!("{}… [line truncated]", &text[..cut]),
            None => text.to_string(),
        };
        let entry = format!("{line_no:>6}\t{line}\n");
        // Room is left for the hint below, so the result fits the cap whole.
        if !out.is_empty() && out.len() + entry.len() + HINT_ROOM > cap {
            more = true;
            cut_for_size = true;
            break;
        }
        out.push_str(&entry);
        shown += 1;
    }
    if line_no < offset {
        return Err(ToolError::Failed(format!(
            "offset {offset} is past the end of {display} ({line_no} lines)"
        )));
    }
    if more {
        let last = offset + shown.saturating_sub(1);
        out.push_str(&format!(
            "[showing lines {offset}-{last} of {display}; more lines follow: use offset={} to continue]",
            last + 1
        ));
    }
    let mut output = ToolOutput::text(out);
    output.truncated = cut_for_size;
    Ok(output)
}

// ---------------------------------------------------------------------------------------
// write_file

/// Arguments of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteFileArgs {
    /// File to create or overwrite, relative to the workspace root.
    pub path: String,
    /// The complete new content.
    pub content: String,
}

/// Creates or overwrites a file.
#[derive(Debug, Clone)]
pub struct WriteFile {
    config: Config,
}

impl WriteFile {
    /// The tool for `config`.
    pub fn new(config: Arc<ToolsConfig>) -> Self {
        Self { config }
    }
}

/// The tool reason of `write_file` (shown with permission prompts).
pub const WRITE_FILE_REASON: &str = "Creates or overwrites files.";

#[async_trait]
impl Tool for WriteFile {
    fn name(&self) -> &str {
        "write_file"
    }

    fn description(&self) -> &str {
        "Creates or overwrites a file in the workspace with the given content, creating parent \
         folders as needed. Prefer edit_file for changing part of an existing file."
    }

    fn parameters(&self) -> Value {
        schema_for::<WriteFileArgs>()
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Write
    }

    fn assess(&self, args: &Value, _cwd: &Path) -> Assessment {
        assess_path(
            &self.config,
            self.name(),
            RiskCategory::Write,
            str_arg(args, "path"),
            Some(WRITE_FILE_REASON),
        )
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: WriteFileArgs = parse_args(self.name(), args)?;
        let resolved = resolve(&self.config, self.name(), &args.path)?;
        if let Some(files) = crate::editor_io::files(&ctx) {
            // Through the client's editor, which creates the file when it is new.
            let (path, display) = (&resolved.path, &resolved.display);
            if path.is_dir() {
                return Err(ToolError::Failed(format!(
                    "{display} is a directory; give a file path"
                )));
            }
            let existed = path.exists();
            files.write_text(path, &args.content, &ctx).await?;
            let output = written(display, existed, &args.content);
            return Ok(finish_output(output, self.config.output_cap));
        }
        let output = blocking(move || {
            let path = &resolved.path;
            let display = &resolved.display;
            if path.is_dir() {
                return Err(ToolError::Failed(format!(
                    "{display} is a directory; give a file path"
                )));
            }
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| io_error("creating the folders for", display, e))?;
            }
            let existed = path.exists();
            std::fs::write(path, args.content.as_bytes())
                .map_err(|e| io_error("writing", display, e))?;
            Ok(written(display, existed, &args.content))
        })
        .await?;
        Ok(finish_output(output, self.config.output_cap))
    }
}

/// What `write_file` reports after writing `content` to `display`.
fn written(display: &str, existed: bool, content: &str) -> ToolOutput {
    let verb = if existed { "Overwrote" } else { "Created" };
    let mut output = ToolOutput::text(format!(
        "{verb} {display} ({} bytes, {} lines).",
        content.len(),
        content.lines().count()
    ));
    output.changed_files = vec![display.to_string()];
    output
}

// ---------------------------------------------------------------------------------------
// edit_file

/// Arguments of `edit_file`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EditFileArgs {
    /// File to edit, relative to the workspace root.
    pub path: String,
    /// The exact text to replace (whitespace and indentation included); it must occur exactly
    /// once unless replace_all is true.
    pub old_string: String,
    /// The replacement text.
    pub new_string: String,
    /// Replace every occurrence instead of requiring a unique match (default false).
    #[serde(default)]
    pub replace_all: Option<bool>,
}

/// One replacement of a multi-edit call (the shape zut's `edit` is given in).
#[derive(Debug, Deserialize)]
struct EditOp {
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: Option<bool>,
}

/// What a call may carry: one replacement ([`EditFileArgs`]) or several (`edits`, applied
/// in order to the file's contents and written once, all or none).
#[derive(Debug, Deserialize)]
struct EditFileCall {
    path: String,
    #[serde(default)]
    old_string: Option<String>,
    #[serde(default)]
    new_string: Option<String>,
    #[serde(default)]
    replace_all: Option<bool>,
    #[serde(default)]
    edits: Option<Vec<EditOp>>,
}

/// Replaces an exact string in a file and reports a unified diff.
#[derive(Debug, Clone)]
pub struct EditFile {
    config: Config,
}

impl EditFile {
    /// The tool for `config`.
    pub fn new(config: Arc<ToolsConfig>) -> Self {
        Self { config }
    }
}

/// The tool reason of `edit_file`.
pub const EDIT_FILE_REASON: &str = "Edits files in place.";

#[async_trait]
impl Tool for EditFile {
    fn name(&self) -> &str {
        "edit_file"
    }

    fn description(&self) -> &str {
        "Edits a file by replacing an exact string (old_string) with new_string. old_string must \
         match the file exactly, including whitespace, and occur exactly once; include enough \
         surrounding lines to make it unique, or set replace_all to change every occurrence. \
         Returns a unified diff of the change. Read the file first."
    }

    fn parameters(&self) -> Value {
        schema_for::<EditFileArgs>()
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Write
    }

    fn assess(&self, args: &Value, _cwd: &Path) -> Assessment {
        assess_path(
            &self.config,
            self.name(),
            RiskCategory::Write,
            str_arg(args, "path"),
            Some(EDIT_FILE_REASON),
        )
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let call: EditFileCall = parse_args(self.name(), args)?;
        let ops =
            match (call.edits, call.old_string, call.new_string) {
                (Some(edits), None, None) if !edits.is_empty() => edits,
                (Some(_), _, _) => return Err(ToolError::InvalidArguments(
                    "edit_file: give either old_string and new_string, or a non-empty edits list"
                        .to_string(),
                )),
                (None, Some(old_string), Some(new_string)) => vec![EditOp {
                    old_string,
                    new_string,
                    replace_all: call.replace_all,
                }],
                (None, _, _) => {
                    return Err(ToolError::InvalidArguments(
                        "edit_file: missing field `old_string` or `new_string`".to_string(),
                    ))
                }
            };
        let resolved = resolve(&self.config, self.name(), &call.path)?;
        if let Some(files) = crate::editor_io::files(&ctx) {
            // The text the client's editor has, changed and written back through it.
            let (path, display) = (&resolved.path, resolved.display.as_str());
            check_ops(&ops)?;
            if path.is_dir() {
                return Err(ToolError::Failed(format!(
                    "{display} is a directory, not a file"
                )));
            }
            let old = crate::editor_io::read_whole(files, path, &ctx).await?;
            let (new, count) = replace_all_ops(&old, display, &ops)?;
            files.write_text(path, &new, &ctx).await?;
            let output = edited(display, &old, &new, count);
            return Ok(finish_output(output, self.config.output_cap));
        }
        let output = blocking(move || edit(&resolved.path, &resolved.display, &ops)).await?;
        Ok(finish_output(output, self.config.output_cap))
    }
}

/// `" (edit N)"` for the `i`th of several replacements, else nothing.
fn which(ops: &[EditOp], i: usize) -> String {
    match ops.len() > 1 {
        true => format!(" (edit {})", i + 1),
        false => String::new(),
    }
}

/// Refuses replacements that cannot change anything.
fn check_ops(ops: &[EditOp]) -> Result<(), ToolError> {
    let which = |i: usize| which(ops, i);
    for (i, op) in ops.iter().enumerate() {
        if op.old_string.is_empty() {
            return Err(ToolError::InvalidArguments(format!(
                "edit_file: old_string is empty{}; use write_file to create or replace a whole file",
                which(i)
            )));
        }
        if op.old_string == op.new_string {
            return Err(ToolError::InvalidArguments(format!(
                "edit_file: old_string and new_string are identical{}; nothing would change",
                which(i)
            )));
        }
    }
    Ok(())
}

fn edit(path: &Path, display: &str, ops: &[EditOp]) -> Result<ToolOutput, ToolError> {
    check_ops(ops)?;
    let bytes = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::Failed(format!(
            "file not found: {display}; use write_file to create it"
        )),
        std::io::ErrorKind::IsADirectory => {
            ToolError::Failed(format!("{display} is a directory, not a file"))
        }
        _ => io_error("reading", display, e),
    })?;
    let old = String::from_utf8(bytes).map_err(|_| {
        ToolError::Failed(format!(
            "{display} is not valid UTF-8 text; edit_file edits text files only"
        ))
    })?;
    let (new, count) = replace_all_ops(&old, display, ops)?;
    std::fs::write(path, new.as_bytes()).map_err(|e| io_error("writing", display, e))?;
    Ok(edited(display, &old, &new, count))
}

/// `old` with every replacement of `ops` applied, in order, and how many were made.
fn replace_all_ops(old: &str, display: &str, ops: &[EditOp]) -> Result<(String, usize), ToolError> {
    let which = |i: usize| which(ops, i);
    let mut new = old.to_string();
    let mut count = 0;
    for (i, op) in ops.iter().enumerate() {
        let found = new.matches(op.old_string.as_str()).count();
        let replace_all = op.replace_all.unwrap_or(false);
        if found == 0 {
            return Err(ToolError::Failed(format!(
                "old_string{} was not found in {display}; read the file and copy the text exactly, including whitespace",
                which(i)
            )));
        }
        if found > 1 && !replace_all {
            return Err(ToolError::Failed(format!(
                "old_string{} occurs {found} times in {display}; include more surrounding context to make it unique, or set replace_all to true",
                which(i)
            )));
        }
        new = if replace_all {
            new.replace(op.old_string.as_str(), &op.new_string)
        } else {
            new.replacen(op.old_string.as_str(), &op.new_string, 1)
        };
        count += found;
    }
    Ok((new, count))
}

/// What `edit_file` reports after changing `old` into `new` with `count` replacements.
fn edited(display: &str, old: &str, new: &str, count: usize) -> ToolOutput {
    let diff = similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{display}"), &format!("b/{display}"))
        .to_string();
    let plural = if count == 1 { "" } else { "s" };
    let mut output = ToolOutput::text(format!(
        "Edited {display} ({count} replacement{plural}).\n{diff}"
    ));
    output.changed_files = vec![display.to_string()];
    output
}
