//! Instructions: the text of a project's `AGENTS.md`-style files (and the user's own)
//! that goes into the agent's system prompt, each part under a heading that says where it
//! came from.
//!
//! [`Instructions`] is what an agent is given ([`crate::AgentBuilder::instructions`]); an
//! embedder builds it by hand ([`Instructions::push`]), loads it from files with
//! [`Instructions::load`] and [`InstructionRules`], adds to what was loaded, or gives none.
//! The rules say which files are read and in what order: the user's own files first, then
//! the project's, from the top of the walk ([`Walk`]: the git root, the filesystem root or
//! the working directory alone) down to the working directory, so nearer files come later
//! and take precedence. Each file is capped ([`InstructionRules::max_file_bytes`], with
//! [`InstructionRules::truncation_note`] where it was cut) and so is their sum; a file that
//! cannot be read, or is not text, is skipped with an [`InstructionWarning`]. Only the
//! capped part of a file is ever read into memory.
//!
//! ```
//! use agent_core::instructions::{Instruction, Instructions};
//!
//! let mut instructions = Instructions::new();
//! instructions.push(Instruction::new("## Team rules", "Run `cargo fmt` before committing."));
//! assert_eq!(
//!     instructions.render().as_deref(),
//!     Some("## Team rules\n\nRun `cargo fmt` before committing.")
//! );
//! ```

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::frontmatter::{cut, is_text, read_bounded, text_prefix};

/// One part of the instructions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    /// The line the part starts with, saying where it came from (e.g. `## Project
    /// guidelines (AGENTS.md)`).
    pub heading: String,
    /// A paragraph between the heading and the text, if any (Zero's precedence note on the
    /// user's file).
    pub note: Option<String>,
    /// The file it was read from; `None` for text the embedder gave.
    pub source: Option<PathBuf>,
    /// The text (cut to the cap, with the truncation note, when the file was longer).
    pub text: String,
    /// Whether the file was cut.
    pub truncated: bool,
}

impl Instruction {
    /// A part with `heading` and `text`, from no file.
    pub fn new(heading: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            heading: heading.into(),
            note: None,
            source: None,
            text: text.into(),
            truncated: false,
        }
    }

    /// The same part with a note between its heading and its text.
    #[must_use = "returns the changed value"]
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }

    fn render(&self) -> String {
        let mut out = self.heading.clone();
        for part in [self.note.as_deref(), Some(self.text.as_str())]
            .into_iter()
            .flatten()
            .filter(|p| !p.is_empty())
        {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(part);
        }
        out
    }
}

/// The instructions of an agent: an optional preamble and the parts, in order (later
/// parts are more specific).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Instructions {
    preamble: Option<String>,
    parts: Vec<Instruction>,
}

impl Instructions {
    /// No instructions.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the paragraph put before the parts (when there is at least one).
    pub fn set_preamble(&mut self, preamble: Option<String>) {
        self.preamble = preamble.filter(|p| !p.trim().is_empty());
    }

    /// Adds a part after the others.
    pub fn push(&mut self, part: Instruction) {
        self.parts.push(part);
    }

    /// The parts, in order.
    pub fn parts(&self) -> &[Instruction] {
        &self.parts
    }

    /// Whether there is no part.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// The system-prompt section: the preamble, then each part (its heading, note and
    /// text), separated by blank lines; `None` without parts.
    pub fn render(&self) -> Option<String> {
        if self.parts.is_empty() {
            return None;
        }
        let sections: Vec<String> = self
            .preamble
            .iter()
            .cloned()
            .chain(self.parts.iter().map(Instruction::render))
            .collect();
        Some(sections.join("\n\n"))
    }

    /// Loads the files `rules` name for working directory `cwd` (see the module docs).
    /// Never fails: what could not be read is in the warnings.
    pub fn load(rules: &InstructionRules, cwd: &Path) -> LoadedInstructions {
        let mut loader = Loader {
            rules,
            out: LoadedInstructions::default(),
            seen: HashSet::new(),
            used: 0,
        };
        loader.out.instructions.set_preamble(rules.preamble.clone());
        for file in &rules.user_files {
            loader.user_file(file);
        }
        let (top, dirs) = walk_dirs(rules.walk, cwd);
        for dir in dirs {
            if loader.used >= rules.max_total_bytes {
                break;
            }
            for path in find_in(&dir, &rules.names, rules.case_insensitive) {
                let added = loader.project_file(&path, top.as_deref());
                if added && rules.per_directory == PerDirectory::First {
                    break;
                }
            }
        }
        loader.out
    }
}

/// What [`Instructions::load`] found.
#[derive(Debug, Default)]
#[must_use = "the warnings should be reported"]
pub struct LoadedInstructions {
    /// The instructions.
    pub instructions: Instructions,
    /// The files skipped, for the front end to report in its own way.
    pub warnings: Vec<InstructionWarning>,
}

/// An instruction file that was skipped.
#[derive(Debug, thiserror::Error)]
pub enum InstructionWarning {
    /// It exists but could not be read.
    #[error("skipping instructions file {}: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It is not text (a NUL byte, or not UTF-8).
    #[error("skipping instructions file {}: not a text file", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
    },
}

/// Where the project's files are looked for: each directory from the top of the walk down
/// to the working directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walk {
    /// From the git root (the nearest ancestor with a `.git` directory holding `HEAD`, or a
    /// `.git` file starting `gitdir: `) down; the working directory alone outside a
    /// repository. Zero's rule.
    GitRoot,
    /// From the filesystem root down (zut's rule).
    FilesystemRoot,
    /// The working directory only.
    WorkingDirectory,
}

/// How many of [`InstructionRules::names`] one directory contributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerDirectory {
    /// The first name found (Zero's and zut's rule).
    First,
    /// Every name found, in the order of the names.
    All,
}

/// A file of the user's own, read before the project's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserFile {
    /// Where it is.
    pub path: PathBuf,
    /// Match the file name case-insensitively in its directory.
    pub case_insensitive: bool,
    /// Its heading; `{name}` is replaced by the file's name, `{path}` by its full path.
    pub heading: String,
    /// A note under the heading (e.g. how it ranks against the project's files).
    pub note: Option<String>,
}

/// Which instruction files are read, in what order, and how each part is headed and
/// capped. A front end's rule is a value of this type (see agent-host's `context_files`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionRules {
    /// The user's own files, read first, in order.
    pub user_files: Vec<UserFile>,
    /// The file names looked for in each directory of the walk (paths relative to the
    /// directory, such as `.zero/AGENTS.md`), in order.
    pub names: Vec<String>,
    /// Match names case-insensitively (each path segment), as Zero does.
    pub case_insensitive: bool,
    /// How many names one directory contributes.
    pub per_directory: PerDirectory,
    /// Which directories are looked in.
    pub walk: Walk,
    /// A project file's heading: `{rel}` is replaced by its path relative to the top of
    /// the walk (the git root; its name when there is none), `{path}` by its full path,
    /// `{name}` by its file name.
    pub heading: String,
    /// A paragraph before all parts, if any.
    pub preamble: Option<String>,
    /// The most bytes of one file that reach the prompt (after trimming).
    pub max_file_bytes: usize,
    /// The most bytes of the project's files together; files past it are not read.
    pub max_total_bytes: usize,
    /// Appended to a file's text where it was cut (counted in the cap).
    pub truncation_note: String,
}

impl Default for InstructionRules {
    /// `AGENTS.md` in each directory from the git root down, headed `## Instructions from
    /// {rel}`, 32 KiB a file, 96 KiB in all.
    fn default() -> Self {
        Self {
            user_files: Vec::new(),
            names: vec!["AGENTS.md".into()],
            case_insensitive: false,
            per_directory: PerDirectory::All,
            walk: Walk::GitRoot,
            heading: "## Instructions from {rel}".into(),
            preamble: None,
            max_file_bytes: 32 * 1024,
            max_total_bytes: 96 * 1024,
            truncation_note: DEFAULT_TRUNCATION_NOTE.into(),
        }
    }
}

/// The note appended where a file was cut, unless the rules name their own.
pub const DEFAULT_TRUNCATION_NOTE: &str =
    "\n\n[… truncated: the rest of this file was left out to keep the prompt small]";

/// The nearest ancestor of `dir` (itself included) holding git metadata: a `.git`
/// directory with a `HEAD`, or a `.git` file starting `gitdir: ` (a worktree).
pub fn git_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| has_git_metadata(d))
        .map(Path::to_path_buf)
}

fn has_git_metadata(dir: &Path) -> bool {
    let git = dir.join(".git");
    match std::fs::metadata(&git) {
        Ok(meta) if meta.is_dir() => git.join("HEAD").exists(),
        Ok(meta) if meta.is_file() => read_bounded(&git, 512)
            .map(|(bytes, _)| text_prefix(&bytes).trim_start().starts_with("gitdir: "))
            .unwrap_or(false),
        _ => false,
    }
}

/// The top of the walk (for labels) and the directories, top first.
fn walk_dirs(walk: Walk, cwd: &Path) -> (Option<PathBuf>, Vec<PathBuf>) {
    match walk {
        Walk::WorkingDirectory => (None, vec![cwd.to_path_buf()]),
        Walk::FilesystemRoot => {
            let mut dirs: Vec<PathBuf> = cwd.ancestors().map(Path::to_path_buf).collect();
            dirs.reverse();
            (None, dirs)
        }
        Walk::GitRoot => match git_root(cwd) {
            None => (None, vec![cwd.to_path_buf()]),
            Some(root) => {
                let mut dirs: Vec<PathBuf> = cwd
                    .ancestors()
                    .take_while(|d| d.starts_with(&root))
                    .map(Path::to_path_buf)
                    .collect();
                dirs.reverse();
                (Some(root), dirs)
            }
        },
    }
}

/// The files of `names` present in `dir`, in the order of the names.
fn find_in(dir: &Path, names: &[String], case_insensitive: bool) -> Vec<PathBuf> {
    names
        .iter()
        .filter_map(|name| match case_insensitive {
            false => Some(dir.join(name)).filter(|p| p.is_file()),
            true => find_case_insensitive(dir, Path::new(name)),
        })
        .collect()
}

/// `rel` under `dir`, each segment matched case-insensitively; the last must be a file.
fn find_case_insensitive(dir: &Path, rel: &Path) -> Option<PathBuf> {
    let segments: Vec<&std::ffi::OsStr> = rel.iter().collect();
    let mut at = dir.to_path_buf();
    for (i, segment) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        let want = segment.to_string_lossy();
        let found = std::fs::read_dir(&at).ok()?.flatten().find(|entry| {
            let kind_ok = entry
                .file_type()
                .map(|t| match last {
                    true => !t.is_dir(),
                    false => t.is_dir(),
                })
                .unwrap_or(false);
            kind_ok
                && entry
                    .file_name()
                    .to_string_lossy()
                    .eq_ignore_ascii_case(&want)
        })?;
        at = found.path();
    }
    Some(at).filter(|p| p.is_file())
}

struct Loader<'a> {
    rules: &'a InstructionRules,
    out: LoadedInstructions,
    seen: HashSet<PathBuf>,
    used: usize,
}

impl Loader<'_> {
    /// Reads `path`, trimmed and cut to `limit` bytes (the note included); `None` when it
    /// was read before, is empty, or was skipped (with a warning).
    fn read(&mut self, path: &Path, limit: usize) -> Option<(String, bool)> {
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if !self.seen.insert(key) {
            return None;
        }
        // Leading blank lines are trimmed: read a little more than the cap.
        let (bytes, longer) = match read_bounded(path, limit.saturating_add(4096)) {
            Ok(read) => read,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
            Err(source) => {
                self.out.warnings.push(InstructionWarning::Unreadable {
                    path: path.to_path_buf(),
                    source,
                });
                return None;
            }
        };
        if !is_text(&bytes) {
            self.out.warnings.push(InstructionWarning::NotText {
                path: path.to_path_buf(),
            });
            return None;
        }
        let text = text_prefix(&bytes).trim();
        if text.is_empty() {
            return None;
        }
        let note = &self.rules.truncation_note;
        if !longer && text.len() <= limit {
            return Some((text.to_string(), false));
        }
        if limit <= note.len() {
            return Some((cut(text, limit).0.to_string(), true));
        }
        let (kept, _) = cut(text, limit - note.len());
        Some((format!("{kept}{note}"), true))
    }

    fn user_file(&mut self, file: &UserFile) {
        let path = match file.case_insensitive {
            true => file
                .path
                .parent()
                .zip(file.path.file_name())
                .and_then(|(dir, name)| find_case_insensitive(dir, Path::new(name))),
            false => Some(file.path.clone()).filter(|p| p.is_file()),
        };
        let Some(path) = path else {
            return;
        };
        let Some((text, truncated)) = self.read(&path, self.rules.max_file_bytes) else {
            return;
        };
        let heading = fill(&file.heading, &path, None);
        self.out.instructions.push(Instruction {
            heading,
            note: file.note.clone(),
            source: Some(path),
            text,
            truncated,
        });
    }

    /// Adds a project file; whether it was added.
    fn project_file(&mut self, path: &Path, top: Option<&Path>) -> bool {
        let left = self.rules.max_total_bytes.saturating_sub(self.used);
        let limit = self.rules.max_file_bytes.min(left);
        if limit == 0 {
            return false;
        }
        let Some((text, truncated)) = self.read(path, limit) else {
            return false;
        };
        self.used += text.len();
        self.out.instructions.push(Instruction {
            heading: fill(&self.rules.heading, path, top),
            note: None,
            source: Some(path.to_path_buf()),
            text,
            truncated,
        });
        true
    }
}

/// A heading template filled for `path`.
fn fill(template: &str, path: &Path, top: Option<&Path>) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let rel = top
        .and_then(|top| path.strip_prefix(top).ok())
        .map(|rel| rel.display().to_string())
        .unwrap_or_else(|| name.clone());
    template
        .replace("{rel}", &rel)
        .replace("{path}", &path.display().to_string())
        .replace("{name}", &name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(path, text).expect("write");
    }

    fn repo() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("repo");
        write(&root.join(".git/HEAD"), "ref: refs/heads/main\n");
        (dir, root)
    }

    fn zero_like() -> InstructionRules {
        InstructionRules {
            names: vec![
                "AGENTS.md".into(),
                "ZERO.md".into(),
                ".zero/AGENTS.md".into(),
            ],
            case_insensitive: true,
            per_directory: PerDirectory::First,
            heading: "## Project guidelines ({rel})".into(),
            max_file_bytes: 8 * 1024,
            max_total_bytes: 32 * 1024,
            truncation_note: "\n… (truncated)".into(),
            ..InstructionRules::default()
        }
    }

    #[test]
    fn git_root_down_to_the_working_directory_first_match_per_level() {
        let (_dir, root) = repo();
        write(&root.join("AGENTS.md"), "root rules\n");
        write(&root.join("ZERO.md"), "not read: AGENTS.md came first");
        write(&root.join("a/.Zero/agents.md"), "a rules");
        write(&root.join("a/b/ZERO.md"), "  b rules  ");
        write(
            &root.parent().expect("up").join("AGENTS.md"),
            "outside the repo",
        );
        let loaded = Instructions::load(&zero_like(), &root.join("a/b"));
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        assert_eq!(
            loaded.instructions.render().as_deref(),
            Some(
                "## Project guidelines (AGENTS.md)\n\nroot rules\n\n\
                 ## Project guidelines (a/.Zero/agents.md)\n\na rules\n\n\
                 ## Project guidelines (a/b/ZERO.md)\n\nb rules"
            )
        );
    }

    #[test]
    fn outside_a_repository_only_the_working_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(&dir.path().join("AGENTS.md"), "parent");
        write(&dir.path().join("w/AGENTS.md"), "here");
        let loaded = Instructions::load(&zero_like(), &dir.path().join("w"));
        let parts = loaded.instructions.parts();
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].text, "here");
        assert_eq!(parts[0].heading, "## Project guidelines (AGENTS.md)");
    }

    #[test]
    fn filesystem_root_walk_user_files_first_and_every_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        write(&home.join("AGENTS.md"), "mine");
        write(&dir.path().join("p/AGENTS.md"), "p agents");
        write(&dir.path().join("p/CLAUDE.md"), "p claude");
        let rules = InstructionRules {
            user_files: vec![UserFile {
                path: home.join("AGENTS.md"),
                case_insensitive: false,
                heading: "## {path}".into(),
                note: Some("Personal.".into()),
            }],
            names: vec!["AGENTS.md".into(), "CLAUDE.md".into()],
            walk: Walk::FilesystemRoot,
            heading: "## {name} in {path}".into(),
            preamble: Some("Follow these.".into()),
            ..InstructionRules::default()
        };
        let loaded = Instructions::load(&rules, &dir.path().join("p"));
        let texts: Vec<&str> = loaded
            .instructions
            .parts()
            .iter()
            .map(|p| p.text.as_str())
            .collect();
        assert_eq!(texts, ["mine", "p agents", "p claude"]);
        let rendered = loaded.instructions.render().expect("parts");
        assert!(rendered.starts_with(&format!(
            "Follow these.\n\n## {}\n\nPersonal.\n\nmine",
            home.join("AGENTS.md").display()
        )));
    }

    #[test]
    fn a_file_over_the_cap_is_cut_with_the_note_and_the_total_is_capped() {
        let (_dir, root) = repo();
        write(&root.join("AGENTS.md"), &"é".repeat(10_000));
        write(&root.join("a/AGENTS.md"), &"x".repeat(10_000));
        let rules = InstructionRules {
            max_file_bytes: 1000,
            max_total_bytes: 1500,
            ..zero_like()
        };
        let loaded = Instructions::load(&rules, &root.join("a"));
        let parts = loaded.instructions.parts();
        assert!(parts[0].truncated && parts[0].text.ends_with("é\n… (truncated)"));
        assert!(parts[0].text.len() <= 1000);
        assert!(parts[1].truncated);
        assert!(parts[0].text.len() + parts[1].text.len() <= 1500);
    }

    #[test]
    fn binary_and_unreadable_files_are_skipped_with_a_warning() {
        let (_dir, root) = repo();
        write(&root.join("AGENTS.md"), "a\0b");
        let loaded = Instructions::load(&zero_like(), &root);
        assert!(loaded.instructions.is_empty());
        assert!(matches!(
            &loaded.warnings[..],
            [InstructionWarning::NotText { path }] if path.ends_with("AGENTS.md")
        ));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let path = root.join("AGENTS.md");
            write(&path, "secret");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).expect("chmod");
            // Root reads anything: only check where the permission holds.
            if std::fs::read(&path).is_err() {
                let loaded = Instructions::load(&zero_like(), &root);
                assert!(loaded.instructions.is_empty());
                let warning = loaded.warnings[0].to_string();
                assert!(warning.contains("AGENTS.md"), "{warning}");
            }
        }
    }

    #[test]
    fn the_same_file_twice_is_read_once() {
        let (_dir, root) = repo();
        write(&root.join("AGENTS.md"), "shared");
        #[cfg(unix)]
        std::os::unix::fs::symlink(root.join("AGENTS.md"), root.join("CLAUDE.md")).expect("ln");
        let rules = InstructionRules {
            names: vec!["AGENTS.md".into(), "CLAUDE.md".into()],
            ..InstructionRules::default()
        };
        let loaded = Instructions::load(&rules, &root);
        assert_eq!(loaded.instructions.parts().len(), 1);
    }

    #[test]
    fn a_worktree_git_file_marks_the_root() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(
            &dir.path().join("wt/.git"),
            "gitdir: ../main/.git/worktrees/wt\n",
        );
        std::fs::create_dir_all(dir.path().join("wt/src")).expect("dir");
        assert_eq!(
            git_root(&dir.path().join("wt/src")),
            Some(dir.path().join("wt"))
        );
        write(&dir.path().join("plain/.git"), "nonsense");
        assert_eq!(git_root(&dir.path().join("plain")), None);
    }
}
