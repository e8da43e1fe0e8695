//! Project context files (`AGENTS.md` and the like) read into the system prompt.

use std::path::{Path, PathBuf};

use crate::text::cut_utf8_bytes;

/// File names read from the workspace root, in this order, when present.
pub const CONTEXT_FILES: [&str; 3] = ["AGENTS.md", "AGENT.md", "CLAUDE.md"];

/// Largest part of one context file that is kept, in bytes.
pub const MAX_CONTEXT_BYTES: usize = 256 * 1024;

/// A context file that exists but could not be read.
#[derive(Debug, thiserror::Error)]
#[error("skipping {}: {source}", path.display())]
pub struct ContextFileError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub source: std::io::Error,
}

/// What [`load`] found.
#[derive(Debug, Default)]
pub struct ContextFiles {
    /// One system-prompt section per file found: `# Project instructions from <name>`, a
    /// blank line, then its text (cut to [`MAX_CONTEXT_BYTES`] on a character boundary and
    /// marked `[... truncated]` when cut; invalid UTF-8 replaced).
    pub sections: Vec<String>,
    /// Files that exist but could not be read (the caller reports them, e.g. on stderr).
    pub skipped: Vec<ContextFileError>,
}

/// Reads the context files of [`CONTEXT_FILES`] present in `cwd`.
pub fn load(cwd: &Path) -> ContextFiles {
    let mut found = ContextFiles::default();
    for name in CONTEXT_FILES {
        let path = cwd.join(name);
        if !path.is_file() {
            continue;
        }
        match std::fs::read(&path) {
            Ok(bytes) => {
                let kept = cut_utf8_bytes(&bytes, MAX_CONTEXT_BYTES);
                let text = String::from_utf8_lossy(kept);
                let mut section =
                    format!("# Project instructions from {name}\n\n{}", text.trim_end());
                if kept.len() < bytes.len() {
                    section.push_str("\n\n[... truncated]");
                }
                found.sections.push(section);
            }
            Err(source) => found.skipped.push(ContextFileError { path, source }),
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_present_files_in_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("CLAUDE.md"), "claude rules\n").expect("write");
        std::fs::write(dir.path().join("AGENTS.md"), "agent rules").expect("write");
        let found = load(dir.path());
        assert!(found.skipped.is_empty());
        assert_eq!(
            found.sections,
            [
                "# Project instructions from AGENTS.md\n\nagent rules",
                "# Project instructions from CLAUDE.md\n\nclaude rules"
            ]
        );
    }

    #[test]
    fn long_files_are_cut_on_a_character_boundary_and_marked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut text = "a".repeat(MAX_CONTEXT_BYTES - 1);
        text.push('é');
        std::fs::write(dir.path().join("AGENT.md"), &text).expect("write");
        let found = load(dir.path());
        let section = &found.sections[0];
        assert!(
            section.ends_with("a\n\n[... truncated]"),
            "no half character"
        );
        assert!(!section.contains('\u{fffd}'));
    }

    #[cfg(unix)]
    #[test]
    fn entries_that_are_not_files_are_skipped() {
        let dir = tempfile::tempdir().expect("tempdir");
        // A directory is not a file: skipped silently.
        std::fs::create_dir(dir.path().join("AGENTS.md")).expect("dir");
        // A dangling symlink is not a file either.
        std::os::unix::fs::symlink("/nonexistent/x", dir.path().join("CLAUDE.md")).expect("link");
        let found = load(dir.path());
        assert!(found.sections.is_empty());
        assert!(found.skipped.is_empty());
    }
}
