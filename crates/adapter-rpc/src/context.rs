//! Project context files (`AGENTS.md` and the like) read into the system prompt.

use std::path::Path;

/// File names read from the workspace root, in this order, when present.
pub const CONTEXT_FILES: [&str; 3] = ["AGENTS.md", "AGENT.md", "CLAUDE.md"];

/// Largest part of one context file that is kept, in bytes.
pub const MAX_CONTEXT_BYTES: usize = 256 * 1024;

/// The system-prompt sections for the context files found in `cwd`, one per file:
/// `# <name>` followed by its text (cut to [`MAX_CONTEXT_BYTES`]). Unreadable files are
/// skipped with a note on stderr.
pub fn load(cwd: &Path) -> Vec<String> {
    let mut sections = Vec::new();
    for name in CONTEXT_FILES {
        let path = cwd.join(name);
        if !path.is_file() {
            continue;
        }
        match std::fs::read(&path) {
            Ok(bytes) => {
                let cut = bytes.len() > MAX_CONTEXT_BYTES;
                let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_CONTEXT_BYTES)]);
                let mut section =
                    format!("# Project instructions from {name}\n\n{}", text.trim_end());
                if cut {
                    section.push_str("\n\n[... truncated]");
                }
                sections.push(section);
            }
            Err(err) => eprintln!("adapter-rpc: skipping {}: {err}", path.display()),
        }
    }
    sections
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_present_files_in_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("CLAUDE.md"), "claude rules\n").expect("write");
        std::fs::write(dir.path().join("AGENTS.md"), "agent rules").expect("write");
        let sections = load(dir.path());
        assert_eq!(sections.len(), 2);
        assert!(sections[0].contains("AGENTS.md") && sections[0].ends_with("agent rules"));
        assert!(sections[1].ends_with("claude rules"));
    }
}
