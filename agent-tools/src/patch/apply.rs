//! Applying parsed file operations: every hunk of every file is checked first (nothing is
//! written while one fails), then the files are written; an I/O error while writing undoes
//! what was written before it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::parse::{FileOp, Hunk, OpKind};
use crate::workspace::Workspace;

/// Why a patch did not apply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// A path leaves the workspace (or is absolute).
    #[error("patch path {path:?} must stay inside the workspace: {reason}")]
    Outside {
        /// The path in the patch.
        path: String,
        /// Why.
        reason: String,
    },
    /// A hunk did not match the file.
    #[error("hunk {hunk} of {path} (patch line {line}) did not apply: {reason}")]
    Hunk {
        /// 1-based hunk number within the file's operation.
        hunk: usize,
        /// The file, as the patch names it.
        path: String,
        /// The patch line of the hunk.
        line: usize,
        /// What did not match.
        reason: String,
    },
    /// The file is not in the state the operation needs.
    #[error("cannot {op} {path}: {reason}")]
    File {
        /// `add`, `delete`, `update` or `move`.
        op: String,
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// Writing failed; what was written before was restored (or not, as `reason` says).
    #[error("writing {path} failed: {reason}")]
    Write {
        /// The file.
        path: String,
        /// Why, and what became of the files written before.
        reason: String,
    },
}

/// One change to make, checked.
#[derive(Debug)]
pub(crate) enum Change {
    /// Write `contents` to `path` (`before`: the old bytes, `None` when it is new).
    Write {
        path: PathBuf,
        display: String,
        contents: Vec<u8>,
        before: Option<Vec<u8>>,
    },
    /// Remove `path` (whose bytes were `before`).
    Remove {
        path: PathBuf,
        display: String,
        before: Vec<u8>,
    },
}

impl Change {
    pub(crate) fn display(&self) -> &str {
        match self {
            Self::Write { display, .. } | Self::Remove { display, .. } => display,
        }
    }
}

/// Resolves the patch's `raw` path against the apply directory `base` (workspace-relative).
fn target(workspace: &Workspace, base: &str, raw: &str) -> Result<(PathBuf, String), ApplyError> {
    let outside = |reason: String| ApplyError::Outside {
        path: raw.to_string(),
        reason,
    };
    if Path::new(raw).is_absolute() {
        return Err(outside("absolute paths are not allowed in a patch".into()));
    }
    let joined = match base {
        "." | "" => raw.to_string(),
        base => format!("{}/{raw}", base.trim_end_matches('/')),
    };
    let resolved = workspace
        .resolve("apply_patch", &joined)
        .map_err(|c| outside(c.block.reason))?;
    if resolved.path == workspace.root() {
        return Err(outside("the path names the workspace itself".into()));
    }
    Ok((resolved.path, resolved.display))
}

fn read_text(
    path: &Path,
    raw: &str,
    op: &str,
    sources: &HashMap<PathBuf, String>,
) -> Result<(Vec<u8>, String), ApplyError> {
    // The text the client's editor has, when the patch goes through it.
    if let Some(text) = sources.get(path) {
        return Ok((text.clone().into_bytes(), text.clone()));
    }
    let file_error = |reason: String| ApplyError::File {
        op: op.to_string(),
        path: raw.to_string(),
        reason,
    };
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => file_error("it does not exist".into()),
        _ => file_error(e.to_string()),
    })?;
    if !meta.is_file() {
        return Err(file_error("it is not a regular file".into()));
    }
    let bytes = std::fs::read(path).map_err(|e| file_error(e.to_string()))?;
    let text =
        String::from_utf8(bytes.clone()).map_err(|_| file_error("it is not UTF-8 text".into()))?;
    Ok((bytes, text))
}

fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// Checks every operation and computes the new contents; nothing is written. The files of
/// `sources` (by absolute path: the texts of the client's editor) are read from there
/// instead of the disk.
pub(crate) fn plan_with(
    workspace: &Workspace,
    base: &str,
    ops: &[FileOp],
    sources: &HashMap<PathBuf, String>,
) -> Result<Vec<Change>, ApplyError> {
    let mut touched: HashSet<PathBuf> = HashSet::new();
    let mut changes = Vec::new();
    let mut claim = |path: &Path, raw: &str| -> Result<(), ApplyError> {
        match touched.insert(path.to_path_buf()) {
            true => Ok(()),
            false => Err(ApplyError::File {
                op: "change".into(),
                path: raw.to_string(),
                reason: "the patch changes it more than once".into(),
            }),
        }
    };
    for op in ops {
        let (path, display) = target(workspace, base, &op.path)?;
        claim(&path, &op.path)?;
        match &op.kind {
            OpKind::Add { contents } => {
                if exists(&path) {
                    return Err(ApplyError::File {
                        op: "add".into(),
                        path: op.path.clone(),
                        reason: "it already exists".into(),
                    });
                }
                changes.push(Change::Write {
                    path,
                    display,
                    contents: contents.clone().into_bytes(),
                    before: None,
                });
            }
            OpKind::Delete => {
                let meta = std::fs::symlink_metadata(&path).map_err(|_| ApplyError::File {
                    op: "delete".into(),
                    path: op.path.clone(),
                    reason: "it does not exist".into(),
                })?;
                if meta.is_dir() {
                    return Err(ApplyError::File {
                        op: "delete".into(),
                        path: op.path.clone(),
                        reason: "it is a directory".into(),
                    });
                }
                let before = std::fs::read(&path).unwrap_or_default();
                changes.push(Change::Remove {
                    path,
                    display,
                    before,
                });
            }
            OpKind::Update { hunks, move_to } => {
                let (before, text) = read_text(&path, &op.path, "update", sources)?;
                let updated =
                    apply_hunks(&text, hunks).map_err(|(index, reason)| ApplyError::Hunk {
                        hunk: index + 1,
                        path: op.path.clone(),
                        line: hunks.get(index).map(|h| h.line).unwrap_or(op.line),
                        reason,
                    })?;
                match move_to {
                    Some(dest) if dest != &op.path => {
                        let (dest_path, dest_display) = target(workspace, base, dest)?;
                        claim(&dest_path, dest)?;
                        if exists(&dest_path) {
                            return Err(ApplyError::File {
                                op: "move".into(),
                                path: op.path.clone(),
                                reason: format!("the destination {dest} already exists"),
                            });
                        }
                        changes.push(Change::Write {
                            path: dest_path,
                            display: dest_display,
                            contents: updated.into_bytes(),
                            before: None,
                        });
                        changes.push(Change::Remove {
                            path,
                            display,
                            before,
                        });
                    }
                    _ => changes.push(Change::Write {
                        path,
                        display,
                        contents: updated.into_bytes(),
                        before: Some(before),
                    }),
                }
            }
        }
    }
    Ok(changes)
}

/// The line ending of `text`: CRLF when every line break is one.
fn line_ending(text: &str) -> &'static str {
    if text.contains("\r\n") && !text.replace("\r\n", "").contains('\n') {
        "\r\n"
    } else {
        "\n"
    }
}

/// Applies `hunks` to `text`; on failure the index of the hunk and why.
pub(crate) fn apply_hunks(text: &str, hunks: &[Hunk]) -> Result<String, (usize, String)> {
    let ending = line_ending(text);
    let text = text.replace("\r\n", "\n");
    let trailing_newline = text.ends_with('\n');
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    if trailing_newline || text.is_empty() {
        lines.pop();
    }
    // (start, length of the old lines, replacement), in file order.
    let mut edits: Vec<(usize, usize, Vec<String>)> = Vec::new();
    let mut cursor = 0;
    for (index, hunk) in hunks.iter().enumerate() {
        if let Some(anchor) = &hunk.anchor {
            match find(&lines, std::slice::from_ref(anchor), cursor, None, false) {
                Found::One(at) => cursor = at + 1,
                Found::Many => {
                    return Err((
                        index,
                        format!("the context line {anchor:?} occurs more than once; give a more specific @@ line"),
                    ))
                }
                Found::None => {
                    return Err((index, format!("the context line {anchor:?} was not found")))
                }
            }
        }
        if hunk.old.is_empty() {
            let at = if hunk.end_of_file || (hunk.anchor.is_none() && hunk.old_start.is_none()) {
                lines.len()
            } else if let Some(start) = hunk.old_start.filter(|_| hunk.anchor.is_none()) {
                // A unified diff's pure insertion goes after line `start`.
                start.min(lines.len())
            } else {
                cursor
            };
            edits.push((at, 0, hunk.new.clone()));
            cursor = at;
            continue;
        }
        let hint = hunk.old_start.map(|s| s.saturating_sub(1));
        match find(&lines, &hunk.old, cursor, hint, hunk.end_of_file) {
            Found::One(at) => {
                edits.push((at, hunk.old.len(), hunk.new.clone()));
                cursor = at + hunk.old.len();
            }
            Found::Many => {
                return Err((
                    index,
                    format!(
                        "the expected lines occur more than once; add surrounding context:\n{}",
                        hunk.old.join("\n")
                    ),
                ))
            }
            Found::None => {
                return Err((
                    index,
                    format!(
                        "the expected lines were not found:\n{}",
                        hunk.old.join("\n")
                    ),
                ))
            }
        }
    }
    for pair in edits.windows(2) {
        if pair[1].0 < pair[0].0 + pair[0].1 {
            return Err((
                hunks.len().saturating_sub(1),
                "the hunks overlap or are out of order".to_string(),
            ));
        }
    }
    for (start, length, replacement) in edits.into_iter().rev() {
        lines.splice(start..start + length, replacement);
    }
    if lines.is_empty() {
        return Ok(String::new());
    }
    let mut out = lines.join(ending);
    if trailing_newline || text.is_empty() {
        out.push_str(ending);
    }
    Ok(out)
}

enum Found {
    One(usize),
    Many,
    None,
}

/// Finds `wanted` in `lines` at or after `from`: exactly, then ignoring trailing
/// whitespace, then ignoring surrounding whitespace. With a `hint` (a unified diff's
/// line number) the match nearest it wins; without one a second match is ambiguous.
fn find(lines: &[String], wanted: &[String], from: usize, hint: Option<usize>, eof: bool) -> Found {
    if wanted.len() > lines.len() {
        return Found::None;
    }
    let last = lines.len() - wanted.len();
    let start = match eof {
        true => last.max(from),
        false => from,
    };
    type Eq = fn(&str, &str) -> bool;
    let passes: [Eq; 3] = [
        |a, b| a == b,
        |a, b| a.trim_end() == b.trim_end(),
        |a, b| a.trim() == b.trim(),
    ];
    for eq in passes {
        let matches: Vec<usize> = (start..=last)
            .filter(|&at| wanted.iter().zip(&lines[at..]).all(|(w, l)| eq(l, w)))
            .collect();
        match (matches.as_slice(), hint) {
            ([], _) => continue,
            ([one], _) => return Found::One(*one),
            (many, Some(hint)) => {
                let nearest = many
                    .iter()
                    .min_by_key(|&&at| at.abs_diff(hint))
                    .copied()
                    .unwrap_or(many[0]);
                return Found::One(nearest);
            }
            (_, None) => return Found::Many,
        }
    }
    Found::None
}

/// Writes the changes in order; on an I/O error restores what was written before it.
pub(crate) fn commit(changes: &[Change]) -> Result<(), ApplyError> {
    for (done, change) in changes.iter().enumerate() {
        if let Err(err) = commit_one(change) {
            // Every change is undone, even after one fails to be.
            let mut restored = true;
            for change in changes[..done].iter().rev() {
                restored &= undo(change);
            }
            let state = match restored {
                true => "nothing was changed",
                false => "the patch was partly applied; read the files before retrying",
            };
            return Err(ApplyError::Write {
                path: change.display().to_string(),
                reason: format!("{err}; {state}"),
            });
        }
    }
    Ok(())
}

fn commit_one(change: &Change) -> std::io::Result<()> {
    match change {
        Change::Write { path, contents, .. } => write_atomic(path, contents),
        Change::Remove { path, .. } => std::fs::remove_file(path),
    }
}

fn undo(change: &Change) -> bool {
    match change {
        Change::Write {
            path,
            before: Some(before),
            ..
        } => write_atomic(path, before).is_ok(),
        Change::Write {
            path, before: None, ..
        } => std::fs::remove_file(path).is_ok(),
        Change::Remove { path, before, .. } => write_atomic(path, before).is_ok(),
    }
}

/// Writes `contents` to a temp file beside `path` and renames it over `path`, keeping the
/// old file's permissions.
fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let parent = path.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(parent)?;
    let permissions = std::fs::metadata(path).ok().map(|m| m.permissions());
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = parent.join(format!(".{name}.{}.patch-tmp", std::process::id()));
    std::fs::write(&temp, contents)?;
    if let Some(permissions) = permissions {
        let _ = std::fs::set_permissions(&temp, permissions);
    }
    std::fs::rename(&temp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hunk(old: &[&str], new: &[&str]) -> Hunk {
        Hunk {
            old: old.iter().map(|s| s.to_string()).collect(),
            new: new.iter().map(|s| s.to_string()).collect(),
            ..Hunk::default()
        }
    }

    #[test]
    fn hunks_apply_in_order_and_keep_line_endings() {
        let text = "a\r\nb\r\nc\r\nd\r\n";
        let out =
            apply_hunks(text, &[hunk(&["b"], &["B"]), hunk(&["d"], &["D", "E"])]).expect("applies");
        assert_eq!(out, "a\r\nB\r\nc\r\nD\r\nE\r\n");
    }

    #[test]
    fn a_missing_or_ambiguous_hunk_is_named() {
        let err = apply_hunks("x\ny\n", &[hunk(&["x"], &["X"]), hunk(&["nope"], &[])])
            .expect_err("fails");
        assert_eq!(err.0, 1);
        assert!(err.1.contains("not found"), "{}", err.1);
        let err = apply_hunks("x\nx\n", &[hunk(&["x"], &["X"])]).expect_err("ambiguous");
        assert!(err.1.contains("more than once"), "{}", err.1);
    }

    #[test]
    fn whitespace_is_forgiven_after_an_exact_miss() {
        let out = apply_hunks(
            "    let a = 1;  \n",
            &[hunk(&["let a = 1;"], &["let a = 2;"])],
        )
        .expect("applies");
        assert_eq!(out, "let a = 2;\n");
    }
}
