//! Reading a confined command's output for what the sandbox refused.

use std::path::{Component, Path, PathBuf};

use agent_core::permission::{Block, BlockCode, PermissionAction, Risk, RiskCategory};

use crate::Confinement;

/// Longest excerpt of the offending output line kept in a denial.
const MAX_LINE: usize = 240;

/// What kind of thing the sandbox refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DenialKind {
    /// A write (create, delete, rename, truncate) outside the writable roots.
    FileSystem,
    /// A socket or a connection.
    Network,
}

/// A refusal by the sandbox, found in a confined command's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// What was refused.
    pub kind: DenialKind,
    /// The path, for a file-system denial (absolute when it could be resolved).
    pub path: Option<String>,
    /// The output line that shows it (trimmed, at most 240 bytes).
    pub line: String,
}

impl Denial {
    /// The block for the tool result: code `sandbox` (file system) or `network`, action
    /// `prompt` (rerunning outside the sandbox needs approval), recoverable.
    pub fn block(&self, tool: &str) -> Block {
        let (code, category, what) = match self.kind {
            DenialKind::FileSystem => (
                BlockCode::Sandbox,
                RiskCategory::OutOfWorkspace,
                match &self.path {
                    Some(path) => format!("a write outside the writable roots ({path})"),
                    None => "a write outside the writable roots".to_string(),
                },
            ),
            DenialKind::Network => (
                BlockCode::Network,
                RiskCategory::Network,
                "network access".to_string(),
            ),
        };
        Block {
            code,
            tool_name: Some(tool.to_string()),
            action: PermissionAction::Prompt,
            risk: Risk::from_categories([RiskCategory::Shell, category]),
            path: self.path.clone(),
            reason: format!("the OS sandbox refused {what}: {}", self.line),
            recoverable: true,
        }
    }
}

/// Phrases that, with the network denied, mean a refused lookup or connection.
const NETWORK_PHRASES: &[&str] = &[
    "network is unreachable",
    "could not resolve host",
    "couldn't resolve host",
    "temporary failure in name resolution",
    "name or service not known",
    "no address associated with hostname",
    "couldn't connect to server",
    "failed to establish a new connection",
];

/// Errors the sandbox produces (EACCES, EPERM, EROFS).
const REFUSALS: &[&str] = &[
    "permission denied",
    "operation not permitted",
    "read-only file system",
    "eacces",
    "eperm",
];

/// Words that put a refusal on a socket rather than a file.
const SOCKET_WORDS: &[&str] = &["socket", "connect", "/dev/tcp/", "/dev/udp/", "bind"];

pub(crate) fn find(confinement: &Confinement, output: &str, cwd: &Path) -> Option<Denial> {
    for line in output.lines() {
        let lower = line.to_ascii_lowercase();
        let refusal = REFUSALS.iter().any(|r| lower.contains(r));
        if confinement.network_filtered()
            && (NETWORK_PHRASES.iter().any(|p| lower.contains(p))
                || (refusal && SOCKET_WORDS.iter().any(|w| lower.contains(w))))
        {
            return Some(Denial {
                kind: DenialKind::Network,
                path: None,
                line: excerpt(line),
            });
        }
        if !(refusal && confinement.filesystem_confined()) {
            continue;
        }
        for candidate in path_candidates(line) {
            let Some(path) = resolve(&candidate, cwd) else {
                continue;
            };
            let inside = confinement
                .writable_roots()
                .iter()
                .any(|root| path.starts_with(root));
            if !inside && writable_without_sandbox(&path) {
                return Some(Denial {
                    kind: DenialKind::FileSystem,
                    path: Some(path.display().to_string()),
                    line: excerpt(line),
                });
            }
        }
    }
    None
}

fn excerpt(line: &str) -> String {
    let line = line.trim();
    if line.len() <= MAX_LINE {
        return line.to_string();
    }
    let mut end = MAX_LINE;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &line[..end])
}

/// Paths a refusal line may name, most likely first: quoted text, the middle fields of a
/// `prog: field: message` line, then words that start with `/` or `~/`.
fn path_candidates(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let pairs = [
        ('\'', '\''),
        ('"', '"'),
        ('‘', '’'),
        ('`', '\''),
        ('“', '”'),
    ];
    for (open, close) in pairs {
        let mut rest = line;
        while let Some(start) = rest.find(open) {
            let after = &rest[start + open.len_utf8()..];
            let Some(end) = after.find(close) else { break };
            let quoted = &after[..end];
            if !quoted.is_empty() && !quoted.contains('\n') {
                out.push(quoted.to_string());
            }
            rest = &after[end + close.len_utf8()..];
        }
    }
    let fields: Vec<&str> = line.split(": ").collect();
    if fields.len() > 2 {
        for field in &fields[1..fields.len() - 1] {
            let field = field.trim();
            if !field.is_empty() && !field.contains(char::is_whitespace) {
                out.push(field.to_string());
            }
        }
    }
    for word in line.split_whitespace() {
        let word = word.trim_matches(|c: char| {
            matches!(
                c,
                ':' | ',' | ';' | '(' | ')' | '\'' | '"' | '`' | '‘' | '’'
            )
        });
        if word.starts_with('/') || word.starts_with("~/") {
            out.push(word.to_string());
        }
    }
    out.retain(|c| !c.starts_with("/dev/tcp/") && !c.starts_with("/dev/udp/"));
    out.dedup();
    out
}

/// `candidate` as an absolute, normalised path with symlinks of its existing part resolved.
fn resolve(candidate: &str, cwd: &Path) -> Option<PathBuf> {
    let path = match candidate.strip_prefix("~/") {
        Some(rest) => PathBuf::from(std::env::var_os("HOME")?).join(rest),
        None => cwd.join(candidate),
    };
    let mut normal = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    // Resolve the longest existing prefix (the root itself may be behind a symlink).
    let mut existing = normal.clone();
    let mut tail = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(&existing) {
            let mut out = real;
            out.extend(tail.iter().rev());
            return Some(out);
        }
        let name = existing.file_name()?.to_owned();
        tail.push(name);
        if !existing.pop() {
            return Some(normal);
        }
    }
}

/// Whether the user could write `path` (or create it in its nearest existing directory)
/// without the sandbox: a refusal on a path the user cannot write anyway is not the
/// sandbox's.
fn writable_without_sandbox(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let mut probe = path.to_path_buf();
        loop {
            if probe.symlink_metadata().is_ok() {
                let Ok(c_path) = std::ffi::CString::new(probe.as_os_str().as_bytes()) else {
                    return false;
                };
                // SAFETY: a valid NUL-terminated path; access only reads it.
                return unsafe { libc::access(c_path.as_ptr(), libc::W_OK) } == 0;
            }
            if !probe.pop() {
                return false;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_come_from_the_usual_error_shapes() {
        let c = |line: &str| path_candidates(line);
        assert!(c("touch: cannot touch '/etc/x': Permission denied").contains(&"/etc/x".into()));
        assert!(c("mkdir: cannot create directory ‘/x’: Permission denied").contains(&"/x".into()));
        assert!(c("bash: line 1: out.txt: Permission denied").contains(&"out.txt".into()));
        assert!(!c("bash: line 1: out.txt: Permission denied").contains(&"bash".into()));
        assert!(c("sh: 1: cannot create /etc/x: Permission denied").contains(&"/etc/x".into()));
        assert!(
            c("PermissionError: [Errno 13] Permission denied: '/root/a b'")
                .contains(&"/root/a b".into())
        );
        assert!(c("bash: /dev/tcp/127.0.0.1/80: Permission denied").is_empty());
    }

    #[test]
    fn resolve_normalises_and_keeps_missing_tails() {
        let got = resolve("a/../b/c", Path::new("/")).unwrap();
        assert_eq!(got, PathBuf::from("/b/c"));
    }

    #[test]
    fn blocks_carry_code_path_and_reason() {
        let denial = Denial {
            kind: DenialKind::FileSystem,
            path: Some("/etc/x".into()),
            line: "touch: cannot touch '/etc/x': Permission denied".into(),
        };
        let block = denial.block("bash");
        assert_eq!(block.code, BlockCode::Sandbox);
        assert_eq!(block.path.as_deref(), Some("/etc/x"));
        assert_eq!(block.action, PermissionAction::Prompt);
        assert!(block.recoverable);
        assert!(block.reason.contains("/etc/x"), "{}", block.reason);
        let network = Denial {
            kind: DenialKind::Network,
            path: None,
            line: "bash: socket: Permission denied".into(),
        };
        assert_eq!(network.block("bash").code, BlockCode::Network);
    }
}
