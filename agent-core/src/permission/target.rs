//! [`CallTarget`]: what one tool call touches — the command it runs, the files it reads or
//! writes, the URL it fetches — as permission rules ([`super::rules`]) and checkpoints see it.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::tool::SideEffect;

/// What one tool call touches. A tool says it through [`crate::Tool::call_target`]; the
/// default reads the usual argument names ([`CallTarget::from_args`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallTarget {
    /// The shell command line the call runs.
    pub command: Option<String>,
    /// The files or directories the call reads or writes, as it names them (relative to the
    /// workspace, or absolute).
    pub paths: Vec<String>,
    /// The URL the call fetches.
    pub url: Option<String>,
}

/// Argument names that hold one path, most specific first (Zero's `scopeArgKeys`, plus the
/// names of Claude Code's and zut's tools).
const PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filePath",
    "file",
    "notebook_path",
    "directory",
    "dir",
    "cwd",
    "workdir",
];

/// Argument names that hold a list of paths.
const PATHS_KEYS: &[&str] = &["paths", "files"];

/// Argument names that hold a command line.
const COMMAND_KEYS: &[&str] = &["command", "cmd", "script"];

impl CallTarget {
    /// The target the usual argument names give, by the tool's side effect: a shell tool's
    /// `command` (or `cmd`, `script`); a read or write tool's `path` (or `file_path`, `file`,
    /// `directory`, `cwd`, …, or a `paths` list); a network tool's `url`.
    pub fn from_args(side_effect: SideEffect, args: &Value) -> Self {
        let text = |key: &&str| args.get(*key).and_then(Value::as_str).map(str::to_string);
        let mut target = Self::default();
        match side_effect {
            SideEffect::Shell => target.command = COMMAND_KEYS.iter().find_map(text),
            SideEffect::Read | SideEffect::Write => {
                if let Some(path) = PATH_KEYS.iter().find_map(text) {
                    target.paths.push(path);
                }
                for key in PATHS_KEYS {
                    if let Some(list) = args.get(*key).and_then(Value::as_array) {
                        target
                            .paths
                            .extend(list.iter().filter_map(Value::as_str).map(str::to_string));
                    }
                }
            }
            SideEffect::Network => target.url = text(&"url"),
            SideEffect::None => {}
        }
        target
    }

    /// The URL's host, lower-cased, without a port or a trailing dot.
    pub fn host(&self) -> Option<String> {
        let url = self.url.as_deref()?.trim();
        let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
        let authority = rest.split(['/', '?', '#']).next()?;
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let host = match host.strip_prefix('[') {
            Some(v6) => v6.split(']').next()?,
            None => host.split(':').next()?,
        };
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        (!host.is_empty()).then_some(host)
    }
}

/// `path` made absolute against `base` and cleaned lexically (`.` dropped, `..` taking one
/// component off; never above the root). Symbolic links are not followed.
pub fn absolute(base: &Path, path: &Path) -> PathBuf {
    let joined = match path.is_absolute() {
        true => path.to_path_buf(),
        false => base.join(path),
    };
    let mut out = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_usual_argument_names_give_the_target() {
        let shell = CallTarget::from_args(SideEffect::Shell, &json!({"command": "git status"}));
        assert_eq!(shell.command.as_deref(), Some("git status"));
        let read = CallTarget::from_args(SideEffect::Read, &json!({"file_path": "src/a.rs"}));
        assert_eq!(read.paths, ["src/a.rs"]);
        let fetch = CallTarget::from_args(
            SideEffect::Network,
            &json!({"url": "https://User@Docs.RS:443/x?y"}),
        );
        assert_eq!(fetch.host().as_deref(), Some("docs.rs"));
        assert_eq!(
            CallTarget::from_args(SideEffect::Read, &json!({"pattern": "x"})),
            CallTarget::default()
        );
    }

    #[test]
    fn paths_are_cleaned_lexically() {
        let base = Path::new("/w/ws");
        assert_eq!(
            absolute(base, Path::new("./src/../a")),
            Path::new("/w/ws/a")
        );
        assert_eq!(absolute(base, Path::new("/etc/./x")), Path::new("/etc/x"));
        assert_eq!(absolute(base, Path::new("../../../..")), Path::new("/"));
    }
}
