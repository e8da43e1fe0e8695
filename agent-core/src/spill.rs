//! The tool-output budget: results over it are cut for the model and spilled to a file.
//!
//! Every tool result passes the loop's one result choke point. When its text is longer
//! than the tool's budget ([`OutputBudget`], default [`DEFAULT_TOOL_OUTPUT_BUDGET`] bytes),
//! the model gets the head and the tail of it around a notice that gives the size and
//! the path of a file holding the **full** text, so it can `read_file` (with offset and
//! limit) or `grep` it. The file is written to the agent's spill directory: the one given
//! to [`crate::AgentBuilder::spill_dir`] (a front end passes its session's directory), else
//! `<temp>/agent-sdk-tool-output/<session id or a unique name>` ([`default_spill_root`]).
//! Files are created new (mode 0600 in a 0700 directory on Unix) and scrubbed of
//! registered secrets and sensitive environment values before they are written.
//!
//! Where capping happens: tools that page their output (agent-tools' `read_file`,
//! `list_dir`, `glob`, `grep`) keep each result within their own cap, under the budget,
//! and are never spilled; tools that cannot page (`bash`, MCP and custom tools) hand the
//! loop their full output (agent-tools bounds it in memory with its `full_output_cap`),
//! and the cut for the model happens here. A spill directory is registered for the
//! process ([`is_spill_file`]) so that the file tools can read spilled files even when the
//! directory lies outside the workspace.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{OnceLock, RwLock};

use crate::message::{ContentBlock, ToolCall};
use crate::secrets::scrub_known_values;
use crate::tool::ToolOutput;

/// Default budget of a tool result's text for the model, in bytes.
pub const DEFAULT_TOOL_OUTPUT_BUDGET: usize = 10 * 1024;

/// Name of the directory under the temporary directory that holds default spill dirs.
const SPILL_ROOT_NAME: &str = "agent-sdk-tool-output";

/// File names tried before a spill gives up.
const MAX_NAME_TRIES: usize = 1000;

/// How far back (or forward) the head's end (or the tail's start) may move to fall on a
/// line break.
const LINE_SNAP: usize = 256;

/// Bytes of text each tool may give the model before its result is spilled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputBudget {
    default: usize,
    per_tool: HashMap<String, usize>,
}

impl Default for OutputBudget {
    fn default() -> Self {
        Self::new(DEFAULT_TOOL_OUTPUT_BUDGET)
    }
}

impl OutputBudget {
    /// `default` bytes for every tool (`usize::MAX`: never spill).
    pub fn new(default: usize) -> Self {
        Self {
            default,
            per_tool: HashMap::new(),
        }
    }

    /// Sets the budget of tools without their own.
    #[must_use = "returns the changed value"]
    pub fn with_default(mut self, bytes: usize) -> Self {
        self.default = bytes;
        self
    }

    /// Sets the budget of the tool called `name`.
    #[must_use = "returns the changed value"]
    pub fn with_tool(mut self, name: impl Into<String>, bytes: usize) -> Self {
        self.per_tool.insert(name.into(), bytes);
        self
    }

    /// The budget of the tool called `name`.
    pub fn for_tool(&self, name: &str) -> usize {
        self.per_tool.get(name).copied().unwrap_or(self.default)
    }

    /// The budget of tools without their own.
    pub fn default_budget(&self) -> usize {
        self.default
    }
}

fn registry() -> &'static RwLock<Vec<PathBuf>> {
    static DIRS: OnceLock<RwLock<Vec<PathBuf>>> = OnceLock::new();
    DIRS.get_or_init(Default::default)
}

/// Registers `dir` as a spill directory of this process (done for every agent's spill
/// directory when it is built).
pub fn register_spill_dir(dir: &Path) {
    let mut dirs = registry().write().unwrap_or_else(|e| e.into_inner());
    if !dirs.iter().any(|d| d == dir) {
        dirs.push(dir.to_path_buf());
    }
}

/// Whether `path` is a file spilled by an agent of this process: an absolute path without
/// `.` or `..`, naming a regular file (not a symlink) directly inside a registered spill
/// directory (compared after resolving symlinks in the directories). File tools may read
/// such a file even when it lies outside their workspace.
pub fn is_spill_file(path: &Path) -> bool {
    if !path.is_absolute()
        || path
            .components()
            .any(|c| matches!(c, Component::CurDir | Component::ParentDir))
    {
        return false;
    }
    let is_file = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file());
    let Some(parent) = path.parent().filter(|_| is_file) else {
        return false;
    };
    let Ok(parent) = std::fs::canonicalize(parent) else {
        return false;
    };
    let dirs = registry().read().unwrap_or_else(|e| e.into_inner());
    dirs.iter()
        .any(|dir| std::fs::canonicalize(dir).is_ok_and(|dir| dir == parent))
}

/// The directory holding default spill directories: `<temp>/agent-sdk-tool-output`.
pub fn default_spill_root() -> PathBuf {
    std::env::temp_dir().join(SPILL_ROOT_NAME)
}

/// A file-name-safe version of `raw` (at most 64 characters of `[A-Za-z0-9_-]`).
fn safe_name(raw: &str) -> String {
    let name: String = raw
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' => c,
            _ => '_',
        })
        .take(64)
        .collect();
    match name.is_empty() {
        true => "call".to_string(),
        false => name,
    }
}

/// The default spill directory of an agent recording to `session` (or of an agent with no
/// session: a name unique to this process and moment).
pub(crate) fn default_spill_dir(session: Option<&str>) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = match session {
        Some(id) => safe_name(id),
        None => format!(
            "run-{}-{}-{}",
            std::process::id(),
            chrono::Utc::now().timestamp_millis(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ),
    };
    default_spill_root().join(name)
}

/// Where one agent spills: its directory and a counter for unique file names.
#[derive(Debug)]
pub(crate) struct Spill {
    pub(crate) dir: PathBuf,
    pub(crate) budget: OutputBudget,
    counter: std::sync::Arc<AtomicU64>,
}

impl Spill {
    pub(crate) fn new(dir: PathBuf, budget: OutputBudget) -> Self {
        register_spill_dir(&dir);
        Self {
            dir,
            budget,
            counter: Default::default(),
        }
    }
}

/// Creates `dir` (and its parents) private to the user, refusing a directory that is a
/// symlink or that others may write to. Under the shared default root the root itself is
/// held to the same rules, so another user cannot swap the directory for a symlink.
fn prepare_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)?;
    let root = default_spill_root();
    let shared_root = dir.parent().filter(|p| *p == root);
    for check in std::iter::once(dir).chain(shared_root) {
        let meta = std::fs::symlink_metadata(check)?;
        if !meta.is_dir() {
            return Err(std::io::Error::other(format!(
                "{} is not a directory",
                check.display()
            )));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            if meta.permissions().mode() & 0o022 != 0 {
                return Err(std::io::Error::other(format!(
                    "{} may be written by other users",
                    check.display()
                )));
            }
        }
    }
    Ok(())
}

/// Writes `text` to a new file in `dir`; returns its path.
fn write_file(dir: &Path, name: &str, text: &str) -> std::io::Result<PathBuf> {
    use std::io::Write;
    prepare_dir(dir)?;
    let path = dir.join(name);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&path)?;
    file.write_all(text.as_bytes())?;
    file.flush()?;
    Ok(path)
}

/// Writes `text` to a new file `<stem>-<n>.txt` in `dir`, taking the next free `n` from
/// `counter` (another process, or an earlier run of the session, may have used some).
fn write_new(dir: &Path, stem: &str, counter: &AtomicU64, text: &str) -> std::io::Result<PathBuf> {
    let mut last = None;
    for _ in 0..MAX_NAME_TRIES {
        let n = counter.fetch_add(1, Ordering::Relaxed);
        match write_file(dir, &format!("{stem}-{n}.txt"), text) {
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => last = Some(err),
            other => return other,
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free file name")))
}

/// The largest `end <= at` on a char boundary, moved back to just after a line break when
/// one is within [`LINE_SNAP`] bytes.
fn head_end(text: &str, at: usize) -> usize {
    let mut end = at.min(text.len());
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    let floor = end.saturating_sub(LINE_SNAP);
    match text.as_bytes()[floor..end]
        .iter()
        .rposition(|b| *b == b'\n')
    {
        Some(i) => floor + i + 1,
        None => end,
    }
}

/// The smallest `start >= at` on a char boundary, moved forward to just after a line
/// break when one is within [`LINE_SNAP`] bytes.
fn tail_start(text: &str, at: usize) -> usize {
    let mut start = at.min(text.len());
    while start < text.len() && !text.is_char_boundary(start) {
        start += 1;
    }
    let ceil = (start + LINE_SNAP).min(text.len());
    match text.as_bytes()[start..ceil]
        .iter()
        .position(|b| *b == b'\n')
    {
        Some(i) if start + i + 1 < text.len() => start + i + 1,
        _ => start,
    }
}

/// The text the model gets for a spilled `text`: head, notice, tail, within about
/// `budget` bytes (the notice is always shown in full).
pub(crate) fn preview(text: &str, budget: usize, notice_for: impl Fn(usize) -> String) -> String {
    // The notice depends on how much is omitted, which depends on the notice's length:
    // size it for the worst case (everything omitted), then cut.
    let notice_len = notice_for(text.len()).len();
    let room = budget.saturating_sub(notice_len);
    let head = head_end(text, room / 2);
    let tail = tail_start(text, text.len().saturating_sub(room - room / 2)).max(head);
    let omitted = tail - head;
    let mut out = String::with_capacity(head + notice_len + (text.len() - tail));
    out.push_str(&text[..head]);
    out.push_str(&notice_for(omitted));
    out.push_str(&text[tail..]);
    out
}

/// Applies the budget to one tool result: over it, the full text goes to a spill file and
/// the model gets head, notice and tail. Image blocks are kept as they are.
pub(crate) async fn apply(spill: &Spill, call: &ToolCall, output: &mut ToolOutput) {
    let budget = spill.budget.for_tool(&call.name);
    let text_len: usize = output
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text } => text.len(),
            _ => 0,
        })
        .sum();
    if text_len <= budget {
        return;
    }
    let full = output.text_content();
    let full = match scrub_known_values(&full) {
        std::borrow::Cow::Owned(clean) => {
            output.redacted = true;
            clean
        }
        std::borrow::Cow::Borrowed(_) => full,
    };
    let lines = full.bytes().filter(|b| *b == b'\n').count() + usize::from(!full.ends_with('\n'));
    let stem = safe_name(&call.id);
    let dir = spill.dir.clone();
    let counter = spill.counter.clone();
    let (full, written) = tokio::task::spawn_blocking(move || {
        let written = write_new(&dir, &stem, &counter, &full);
        (full, written)
    })
    .await
    .unwrap_or_else(|e| (String::new(), Err(std::io::Error::other(e.to_string()))));
    let total = text_len;
    let notice_for = |omitted: usize| match &written {
        Ok(path) => format!(
            "\n\n[… {omitted} of {total} bytes omitted ({lines} lines in all). The full output \
             is saved in {}: read it with read_file (offset/limit) or search it with grep.]\n\n",
            path.display()
        ),
        Err(err) => format!(
            "\n\n[… {omitted} of {total} bytes omitted; the full output could not be saved: \
             {err}]\n\n"
        ),
    };
    if let Err(err) = &written {
        tracing::warn!(tool = %call.name, error = %err, "tool output spill failed");
    }
    let text = preview(&full, budget, notice_for);
    let mut content = Vec::with_capacity(output.content.len());
    content.push(ContentBlock::text(text));
    content.extend(
        std::mem::take(&mut output.content)
            .into_iter()
            .filter(|b| !matches!(b, ContentBlock::Text { .. })),
    );
    output.content = content;
    output.truncated = true;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_per_tool() {
        let budget = OutputBudget::default().with_tool("bash", 100);
        assert_eq!(budget.for_tool("bash"), 100);
        assert_eq!(budget.for_tool("grep"), DEFAULT_TOOL_OUTPUT_BUDGET);
    }

    #[test]
    fn preview_keeps_head_and_tail_on_line_breaks() {
        let text: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let out = preview(&text, 400, |n| format!("[{n} omitted]"));
        assert!(out.starts_with("line 0\n"));
        assert!(out.ends_with("line 999\n"));
        assert!(out.len() <= 400, "{}", out.len());
        let (head, rest) = out.split_once('[').expect("notice");
        assert!(head.ends_with('\n'));
        let (count, tail) = rest.split_once(" omitted]").expect("notice end");
        assert!(tail.starts_with("line "));
        assert_eq!(
            head.len() + count.parse::<usize>().expect("count") + tail.len(),
            text.len()
        );
    }

    #[test]
    fn preview_respects_char_boundaries() {
        let text = "é".repeat(5000);
        let out = preview(&text, 101, |_| "[cut]".into());
        assert!(out.contains("[cut]"));
        assert!(out.len() <= 101);
        let tiny = preview(&text, 0, |_| "[cut]".into());
        assert_eq!(tiny, "[cut]");
    }

    #[test]
    fn spill_files_are_recognised_only_in_registered_dirs() {
        let dir =
            std::env::temp_dir().join(format!("agent-core-spill-test-{}", std::process::id()));
        let file = write_file(&dir, "a.txt", "hello").expect("written");
        assert!(!is_spill_file(&file));
        register_spill_dir(&dir);
        assert!(is_spill_file(&file));
        assert!(!is_spill_file(&dir.join("missing.txt")));
        assert!(!is_spill_file(
            &dir.join("..")
                .join(dir.file_name().expect("name"))
                .join("a.txt")
        ));
        assert!(!is_spill_file(Path::new("a.txt")));
        // A second file with the same name is refused rather than overwritten; spills take
        // the next free name.
        assert!(write_file(&dir, "a.txt", "again").is_err());
        std::fs::write(dir.join("c-0.txt"), "taken").expect("taken");
        let counter = AtomicU64::new(0);
        let next = write_new(&dir, "c", &counter, "mine").expect("written");
        assert_eq!(next, dir.join("c-1.txt"));
        assert_eq!(
            std::fs::read_to_string(dir.join("c-0.txt")).expect("kept"),
            "taken"
        );
        #[cfg(unix)]
        {
            let link = dir.join("link.txt");
            std::os::unix::fs::symlink("/etc/hostname", &link).expect("symlink");
            assert!(
                !is_spill_file(&link),
                "a symlink in a spill dir is not a spill file"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn safe_names() {
        assert_eq!(safe_name("call_1"), "call_1");
        assert_eq!(safe_name("../../etc/passwd"), "______etc_passwd");
        assert_eq!(safe_name(""), "call");
        assert_eq!(safe_name(&"x".repeat(100)).len(), 64);
    }
}
