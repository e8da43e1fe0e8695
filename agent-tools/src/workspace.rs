//! Workspace confinement: every path a tool touches resolves against the workspace root and
//! must stay inside it (or inside an extra allowed root), lexically and after following
//! symlinks.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use agent_core::permission::{Block, BlockCode, PermissionAction, Risk, RiskCategory};

/// Symlinks followed while resolving one path before it counts as a loop (as Linux's
/// `MAXSYMLINKS`).
const MAX_SYMLINK_HOPS: usize = 40;

/// The roots tools may touch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
    extra_roots: Vec<PathBuf>,
}

/// A path that passed the confinement checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// The path to operate on: the lexical absolute path (symlinks inside the workspace are
    /// left for the OS to follow, which is safe because the target was checked).
    pub path: PathBuf,
    /// The path relative to the workspace root when it lies inside it, else the absolute
    /// path; for messages and `changed_files`.
    pub display: String,
    /// Categories the path adds to a call's risk (e.g. `absolute_path`).
    pub categories: Vec<RiskCategory>,
}

/// Why a path was refused. Carries the [`Block`] the sandbox reports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .block.reason)]
pub struct Confinement {
    /// The block (action `deny`).
    pub block: Block,
}

impl Workspace {
    /// A workspace rooted at `root`. A relative root resolves against the process's current
    /// directory.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = absolute(&root.into());
        Self {
            root,
            extra_roots: Vec::new(),
        }
    }

    /// Also allows paths under `root`.
    pub fn allow_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.extra_roots.push(absolute(&root.into()));
        self
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The extra allowed roots.
    pub fn extra_roots(&self) -> &[PathBuf] {
        &self.extra_roots
    }

    fn roots(&self) -> impl Iterator<Item = &PathBuf> {
        std::iter::once(&self.root).chain(&self.extra_roots)
    }

    /// The workspace root with symlinks resolved (the root itself may be a symlink).
    pub fn canonical_root(&self) -> PathBuf {
        std::fs::canonicalize(&self.root).unwrap_or_else(|_| self.root.clone())
    }

    fn inside_lexically(&self, path: &Path) -> bool {
        self.roots().any(|r| {
            path.starts_with(r) || path.starts_with(real_path(r).unwrap_or_else(|_| r.clone()))
        })
    }

    fn inside_really(&self, real: &Path) -> bool {
        self.roots()
            .any(|r| real.starts_with(real_path(r).unwrap_or_else(|_| r.clone())))
    }

    /// Resolves `raw` (relative to the root, or absolute) for `tool`, refusing `..` escapes,
    /// absolute paths outside the allowed roots, symlinks that lead outside, and symlink
    /// loops.
    pub fn resolve(&self, tool: &str, raw: &str) -> Result<ResolvedPath, Confinement> {
        let given = Path::new(raw);
        let is_absolute = given.is_absolute();
        let mut categories = Vec::new();
        if is_absolute {
            categories.push(RiskCategory::AbsolutePath);
        }
        let joined = if is_absolute {
            given.to_path_buf()
        } else {
            self.root.join(given)
        };
        let lexical = normalize(&joined);
        if !self.inside_lexically(&lexical) {
            categories.push(RiskCategory::OutOfWorkspace);
            let reason = if is_absolute {
                format!("{raw} is outside the workspace {}", self.root.display())
            } else {
                categories.push(RiskCategory::PathEscape);
                format!(
                    "{raw} escapes the workspace {} with '..'",
                    self.root.display()
                )
            };
            return Err(self.block(tool, raw, BlockCode::OutsideWorkspace, categories, reason));
        }
        match real_path(&lexical) {
            Err(ResolveError::Loop) => {
                categories.push(RiskCategory::SymlinkTraversal);
                let reason = format!(
                    "{raw} cannot be resolved: too many levels of symbolic links (a symlink loop)"
                );
                Err(self.block(tool, raw, BlockCode::SymlinkTraversal, categories, reason))
            }
            Ok(real) if !self.inside_really(&real) => {
                categories.push(RiskCategory::SymlinkTraversal);
                categories.push(RiskCategory::OutOfWorkspace);
                let reason = format!(
                    "{raw} follows a symlink to {}, outside the workspace {}",
                    real.display(),
                    self.root.display()
                );
                Err(self.block(tool, raw, BlockCode::SymlinkTraversal, categories, reason))
            }
            Ok(_) => Ok(ResolvedPath {
                display: self.display(&lexical),
                path: lexical,
                categories,
            }),
        }
    }

    /// `path` relative to the root when inside it, else absolute.
    pub fn display(&self, path: &Path) -> String {
        let canonical = self.canonical_root();
        for root in [&self.root, &canonical] {
            if let Ok(rel) = path.strip_prefix(root) {
                let rel = rel.to_string_lossy();
                return if rel.is_empty() {
                    ".".to_string()
                } else {
                    rel.into_owned()
                };
            }
        }
        path.to_string_lossy().into_owned()
    }

    fn block(
        &self,
        tool: &str,
        raw: &str,
        code: BlockCode,
        categories: Vec<RiskCategory>,
        reason: String,
    ) -> Confinement {
        Confinement {
            block: Block {
                code,
                tool_name: Some(tool.to_string()),
                action: PermissionAction::Deny,
                risk: Risk::from_categories(categories),
                path: Some(raw.to_string()),
                reason,
                recoverable: true,
            },
        }
    }
}

fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        normalize(path)
    } else {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        normalize(&cwd.join(path))
    }
}

/// Removes `.` and resolves `..` lexically (never above the root).
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[derive(Debug, PartialEq, Eq)]
enum ResolveError {
    Loop,
}

/// Follows every symlink in the absolute `path`, one component at a time. Missing
/// components are kept as they are (a file about to be created), and a dangling symlink is
/// followed to where it points, so creating through it is checked too.
fn real_path(path: &Path) -> Result<PathBuf, ResolveError> {
    let mut pending: VecDeque<OsString> = VecDeque::new();
    let mut out = PathBuf::from("/");
    fn push_components(pending: &mut VecDeque<OsString>, p: &Path, front: bool) {
        let comps: Vec<OsString> = p
            .components()
            .map(|c| match c {
                Component::RootDir | Component::Prefix(_) => OsString::from("/"),
                other => other.as_os_str().to_os_string(),
            })
            .collect();
        if front {
            for c in comps.into_iter().rev() {
                pending.push_front(c);
            }
        } else {
            pending.extend(comps);
        }
    }
    push_components(&mut pending, path, false);
    let mut hops = 0;
    let mut missing = false;
    while let Some(c) = pending.pop_front() {
        if c == "/" {
            out = PathBuf::from("/");
            continue;
        }
        if c == "." {
            continue;
        }
        if c == ".." {
            out.pop();
            continue;
        }
        let candidate = out.join(&c);
        if missing {
            out = candidate;
            continue;
        }
        match std::fs::symlink_metadata(&candidate) {
            Ok(meta) if meta.file_type().is_symlink() => {
                hops += 1;
                if hops > MAX_SYMLINK_HOPS {
                    return Err(ResolveError::Loop);
                }
                match std::fs::read_link(&candidate) {
                    Ok(target) => push_components(&mut pending, &target, true),
                    Err(_) => out = candidate,
                }
            }
            Ok(_) => out = candidate,
            Err(_) => {
                missing = true;
                out = candidate;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_resolves_dots() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(normalize(Path::new("/a/../../x")), PathBuf::from("/x"));
    }
}
