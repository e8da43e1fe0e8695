//! Parsing a patch into file operations: the `*** Begin Patch` format (Codex's and Zero's)
//! and unified diffs (`---`/`+++` headers, `@@ -a,b +c,d @@` hunks, `/dev/null` for added
//! and deleted files, `diff --git` renames).

use std::fmt;

/// A patch that could not be read, with the 1-based line it failed on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The patch is empty.
    #[error("the patch is empty")]
    Empty,
    /// A structured patch lacks its first or last line.
    #[error("the {which} line of a structured patch must be {expected:?}")]
    Frame {
        /// `first` or `last`.
        which: &'static str,
        /// The line expected.
        expected: &'static str,
    },
    /// A line that does not fit the format.
    #[error("invalid patch at line {line}: {message}")]
    Line {
        /// 1-based line number in the patch.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// No file operation at all.
    #[error("the patch contains no file operations")]
    NoOperations,
}

fn line_error(line: usize, message: impl Into<String>) -> ParseError {
    ParseError::Line {
        line,
        message: message.into(),
    }
}

/// What a patch does to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OpKind {
    /// Create the file with these contents (it must not exist).
    Add { contents: String },
    /// Delete the file (it must exist).
    Delete,
    /// Change the file by its hunks, and move it when `move_to` is given.
    Update {
        hunks: Vec<Hunk>,
        move_to: Option<String>,
    },
}

/// One file operation, with the patch line that started it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileOp {
    pub(crate) path: String,
    pub(crate) kind: OpKind,
    pub(crate) line: usize,
}

/// One hunk of an update: the lines it expects and the lines that replace them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Hunk {
    /// A line to find before the hunk (`@@ fn main()`), in the structured format.
    pub(crate) anchor: Option<String>,
    /// The lines expected (context and removed), in order.
    pub(crate) old: Vec<String>,
    /// The lines that replace them (context and added), in order.
    pub(crate) new: Vec<String>,
    /// The hunk must match at the end of the file.
    pub(crate) end_of_file: bool,
    /// Where a unified diff says the hunk starts in the old file (1-based), a hint.
    pub(crate) old_start: Option<usize>,
    /// The patch line of the hunk's header (or its first line).
    pub(crate) line: usize,
}

impl Hunk {
    fn is_empty(&self) -> bool {
        self.old.is_empty() && self.new.is_empty()
    }
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Add { .. } => "add",
            Self::Delete => "delete",
            Self::Update { .. } => "update",
        })
    }
}

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";

/// Whether `patch` is in the `*** Begin Patch` format.
pub(crate) fn is_structured(patch: &str) -> bool {
    patch
        .trim_start_matches('\u{feff}')
        .trim()
        .starts_with(BEGIN)
}

/// Parses either format.
pub(crate) fn parse(patch: &str) -> Result<Vec<FileOp>, ParseError> {
    if patch.trim().is_empty() {
        return Err(ParseError::Empty);
    }
    if is_structured(patch) {
        parse_structured(patch)
    } else {
        parse_unified(patch)
    }
}

fn normalized(patch: &str) -> String {
    patch.trim_start_matches('\u{feff}').replace("\r\n", "\n")
}

fn path_after(header: &str, prefix: &str, line: usize) -> Result<String, ParseError> {
    let path = header[prefix.len()..].trim();
    if path.is_empty() {
        return Err(line_error(line, "the file path is missing"));
    }
    Ok(path.to_string())
}

fn is_op_header(line: &str) -> bool {
    let line = line.trim();
    line == END || line.starts_with(ADD) || line.starts_with(DELETE) || line.starts_with(UPDATE)
}

/// The `*** Begin Patch` format.
fn parse_structured(patch: &str) -> Result<Vec<FileOp>, ParseError> {
    let text = normalized(patch);
    let text = text.trim();
    let lines: Vec<&str> = text.split('\n').collect();
    if lines.first().map(|l| l.trim()) != Some(BEGIN) {
        return Err(ParseError::Frame {
            which: "first",
            expected: BEGIN,
        });
    }
    if lines.len() < 2 || lines.last().map(|l| l.trim()) != Some(END) {
        return Err(ParseError::Frame {
            which: "last",
            expected: END,
        });
    }
    let last = lines.len() - 1;
    let mut ops = Vec::new();
    let mut i = 1;
    while i < last {
        let header = lines[i].trim();
        let number = i + 1;
        if header.is_empty() {
            i += 1;
            continue;
        }
        if header.starts_with(ADD) {
            let path = path_after(header, ADD, number)?;
            i += 1;
            let mut contents = String::new();
            while i < last && !is_op_header(lines[i]) {
                let Some(rest) = lines[i].strip_prefix('+') else {
                    return Err(line_error(
                        i + 1,
                        "the lines of an added file must start with '+'",
                    ));
                };
                contents.push_str(rest);
                contents.push('\n');
                i += 1;
            }
            ops.push(FileOp {
                path,
                kind: OpKind::Add { contents },
                line: number,
            });
        } else if header.starts_with(DELETE) {
            ops.push(FileOp {
                path: path_after(header, DELETE, number)?,
                kind: OpKind::Delete,
                line: number,
            });
            i += 1;
        } else if header.starts_with(UPDATE) {
            let path = path_after(header, UPDATE, number)?;
            i += 1;
            let mut move_to = None;
            if i < last && lines[i].trim().starts_with(MOVE) {
                move_to = Some(path_after(lines[i].trim(), MOVE, i + 1)?);
                i += 1;
            }
            let mut hunks: Vec<Hunk> = Vec::new();
            while i < last && !is_op_header(lines[i]) {
                let line = lines[i];
                let trimmed = line.trim();
                if trimmed == END_OF_FILE {
                    match hunks.last_mut() {
                        Some(hunk) if !hunk.is_empty() => hunk.end_of_file = true,
                        _ => {
                            return Err(line_error(
                                i + 1,
                                "*** End of File must follow the lines of a hunk",
                            ))
                        }
                    }
                    i += 1;
                    continue;
                }
                if trimmed == "@@" || trimmed.starts_with("@@ ") {
                    let anchor = trimmed.strip_prefix("@@").map(str::trim).unwrap_or("");
                    hunks.push(Hunk {
                        anchor: (!anchor.is_empty()).then(|| anchor.to_string()),
                        line: i + 1,
                        ..Hunk::default()
                    });
                    i += 1;
                    continue;
                }
                if hunks.is_empty() {
                    hunks.push(Hunk {
                        line: i + 1,
                        ..Hunk::default()
                    });
                }
                let hunk = hunks
                    .last_mut()
                    .ok_or_else(|| line_error(i + 1, "no hunk"))?;
                if line.is_empty() {
                    hunk.old.push(String::new());
                    hunk.new.push(String::new());
                } else if let Some(rest) = line.strip_prefix(' ') {
                    hunk.old.push(rest.to_string());
                    hunk.new.push(rest.to_string());
                } else if let Some(rest) = line.strip_prefix('+') {
                    hunk.new.push(rest.to_string());
                } else if let Some(rest) = line.strip_prefix('-') {
                    hunk.old.push(rest.to_string());
                } else {
                    return Err(line_error(
                        i + 1,
                        "the lines of a hunk must start with ' ', '+' or '-'",
                    ));
                }
                i += 1;
            }
            if hunks.is_empty() && move_to.is_none() {
                return Err(line_error(number, "the update has no hunk"));
            }
            if let Some(empty) = hunks.iter().find(|h| h.is_empty()) {
                return Err(line_error(empty.line, "the hunk is empty"));
            }
            ops.push(FileOp {
                path,
                kind: OpKind::Update { hunks, move_to },
                line: number,
            });
        } else {
            return Err(line_error(
                number,
                "expected *** Add File, *** Delete File or *** Update File",
            ));
        }
    }
    if ops.is_empty() {
        return Err(ParseError::NoOperations);
    }
    Ok(ops)
}

/// A path of a unified diff header: quotes and the tab-separated timestamp removed, and one
/// `a/` or `b/` prefix stripped. `None` for `/dev/null`.
fn header_path(raw: &str) -> Option<String> {
    let raw = raw.split('\t').next().unwrap_or("").trim();
    let raw = match raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        Some(quoted) => quoted.replace("\\\"", "\"").replace("\\\\", "\\"),
        None => raw.to_string(),
    };
    if raw == "/dev/null" || raw.is_empty() {
        return None;
    }
    let stripped = raw
        .strip_prefix("a/")
        .or_else(|| raw.strip_prefix("b/"))
        .unwrap_or(&raw);
    Some(stripped.to_string())
}

/// `(old_start, old_count, new_count)` from `@@ -a,b +c,d @@ heading`; only the part
/// between the `@@` markers is read (a heading may contain `+` and `-`).
fn hunk_range(header: &str) -> Option<(usize, usize, usize)> {
    let rest = header.strip_prefix("@@")?;
    let range = rest.split("@@").next()?;
    let (mut old, mut new) = (None, None);
    for field in range.split_whitespace() {
        let parse = |spec: &str| -> Option<(usize, usize)> {
            match spec.split_once(',') {
                Some((start, count)) => Some((start.parse().ok()?, count.parse().ok()?)),
                None => Some((spec.parse().ok()?, 1)),
            }
        };
        if let Some(spec) = field.strip_prefix('-') {
            old = parse(spec);
        } else if let Some(spec) = field.strip_prefix('+') {
            new = parse(spec);
        }
    }
    let (old_start, old_count) = old?;
    let (_, new_count) = new?;
    Some((old_start, old_count, new_count))
}

/// A unified diff (`diff -u`, `git diff`): one operation per file.
fn parse_unified(patch: &str) -> Result<Vec<FileOp>, ParseError> {
    let text = normalized(patch);
    let mut lines: Vec<&str> = text.split('\n').collect();
    if text.ends_with('\n') {
        lines.pop();
    }
    let mut ops: Vec<FileOp> = Vec::new();
    let mut i = 0;
    // `diff --git` renames without content changes.
    let mut rename: Option<(String, String, usize)> = None;
    while i < lines.len() {
        let line = lines[i];
        if line.starts_with("diff --git ") {
            if let Some((from, to, at)) = rename.take() {
                ops.push(rename_op(from, to, at));
            }
            i += 1;
            continue;
        }
        if let Some(from) = line.strip_prefix("rename from ") {
            let to = lines
                .get(i + 1)
                .and_then(|l| l.strip_prefix("rename to "))
                .ok_or_else(|| line_error(i + 1, "rename from without rename to"))?;
            rename = Some((from.trim().to_string(), to.trim().to_string(), i + 1));
            i += 2;
            continue;
        }
        if !line.starts_with("--- ") {
            i += 1;
            continue;
        }
        let number = i + 1;
        let old = header_path(&line[4..]);
        let Some(plus) = lines.get(i + 1).and_then(|l| l.strip_prefix("+++ ")) else {
            return Err(line_error(
                number,
                "a '---' header must be followed by '+++'",
            ));
        };
        let new = header_path(plus);
        i += 2;
        let mut hunks = Vec::new();
        while i < lines.len() && lines[i].starts_with("@@") {
            let header_line = i + 1;
            let (old_start, mut old_left, mut new_left) = hunk_range(lines[i])
                .ok_or_else(|| line_error(header_line, "malformed hunk header"))?;
            i += 1;
            let mut hunk = Hunk {
                old_start: Some(old_start),
                line: header_line,
                ..Hunk::default()
            };
            while old_left > 0 || new_left > 0 {
                let Some(&body) = lines.get(i) else {
                    return Err(line_error(
                        header_line,
                        "the hunk ends before its line counts are reached",
                    ));
                };
                match body.as_bytes().first() {
                    Some(b'+') => {
                        hunk.new.push(body[1..].to_string());
                        new_left = new_left.checked_sub(1).ok_or_else(|| {
                            line_error(i + 1, "more added lines than the hunk header says")
                        })?;
                    }
                    Some(b'-') => {
                        hunk.old.push(body[1..].to_string());
                        old_left = old_left.checked_sub(1).ok_or_else(|| {
                            line_error(i + 1, "more removed lines than the hunk header says")
                        })?;
                    }
                    Some(b'\\') => {}
                    Some(b' ') | None => {
                        let rest = body.get(1..).unwrap_or("");
                        hunk.old.push(rest.to_string());
                        hunk.new.push(rest.to_string());
                        old_left = old_left.checked_sub(1).ok_or_else(|| {
                            line_error(i + 1, "more context lines than the hunk header says")
                        })?;
                        new_left = new_left.checked_sub(1).ok_or_else(|| {
                            line_error(i + 1, "more context lines than the hunk header says")
                        })?;
                    }
                    Some(_) => {
                        return Err(line_error(
                            i + 1,
                            "the lines of a hunk must start with ' ', '+' or '-'",
                        ))
                    }
                }
                i += 1;
            }
            // "\ No newline at end of file" after the last line.
            while lines.get(i).is_some_and(|l| l.starts_with('\\')) {
                i += 1;
            }
            hunks.push(hunk);
        }
        let op = match (old, new) {
            (None, None) => return Err(line_error(number, "both paths are /dev/null")),
            (None, Some(path)) => {
                let mut contents = String::new();
                for hunk in &hunks {
                    for line in &hunk.new {
                        contents.push_str(line);
                        contents.push('\n');
                    }
                }
                FileOp {
                    path,
                    kind: OpKind::Add { contents },
                    line: number,
                }
            }
            (Some(path), None) => FileOp {
                path,
                kind: OpKind::Delete,
                line: number,
            },
            (Some(from), Some(to)) => {
                if hunks.is_empty() && from == to {
                    return Err(line_error(number, "the file has no hunk"));
                }
                let move_to = match rename.take() {
                    Some((_, renamed, _)) => Some(renamed),
                    None => (from != to).then_some(to),
                };
                FileOp {
                    path: from,
                    kind: OpKind::Update { hunks, move_to },
                    line: number,
                }
            }
        };
        rename = None;
        ops.push(op);
    }
    if let Some((from, to, at)) = rename.take() {
        ops.push(rename_op(from, to, at));
    }
    if ops.is_empty() {
        return Err(ParseError::NoOperations);
    }
    Ok(ops)
}

fn rename_op(from: String, to: String, line: usize) -> FileOp {
    let strip = |p: String| header_path(&p).unwrap_or(p);
    FileOp {
        path: strip(from),
        kind: OpKind::Update {
            hunks: Vec::new(),
            move_to: Some(strip(to)),
        },
        line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_operations() {
        let ops = parse(
            "*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** Delete File: b.txt\n\
             *** Update File: c.txt\n*** Move to: d.txt\n@@ fn main\n-old\n+new\n context\n\
             *** End of File\n*** End Patch\n",
        )
        .expect("parses");
        assert_eq!(ops.len(), 3);
        assert_eq!(
            ops[0].kind,
            OpKind::Add {
                contents: "one\ntwo\n".into()
            }
        );
        assert_eq!(ops[1].kind, OpKind::Delete);
        let OpKind::Update { hunks, move_to } = &ops[2].kind else {
            panic!("an update");
        };
        assert_eq!(move_to.as_deref(), Some("d.txt"));
        assert_eq!(hunks[0].anchor.as_deref(), Some("fn main"));
        assert_eq!(hunks[0].old, ["old", "context"]);
        assert_eq!(hunks[0].new, ["new", "context"]);
        assert!(hunks[0].end_of_file);
    }

    #[test]
    fn structured_errors_name_the_line() {
        assert_eq!(
            parse("*** Begin Patch\n*** Frobnicate: x\n*** End Patch"),
            Err(ParseError::Line {
                line: 2,
                message: "expected *** Add File, *** Delete File or *** Update File".into()
            })
        );
        assert!(matches!(
            parse("*** Begin Patch\n*** Add File: x\n+a\n"),
            Err(ParseError::Frame { which: "last", .. })
        ));
        assert_eq!(
            parse("*** Begin Patch\n*** Update File: x\n@@\n*** End Patch"),
            Err(ParseError::Line {
                line: 3,
                message: "the hunk is empty".into()
            })
        );
    }

    #[test]
    fn unified_operations() {
        let ops = parse(
            "diff --git a/x.rs b/x.rs\n--- a/x.rs\n+++ b/x.rs\n@@ -1,3 +1,3 @@ fn a() -> i32 { -1 }\n a\n-b\n+B\n c\n\
             --- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+n1\n+n2\n\
             --- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n",
        )
        .expect("parses");
        assert_eq!(ops.len(), 3);
        let OpKind::Update { hunks, move_to } = &ops[0].kind else {
            panic!("an update");
        };
        assert!(move_to.is_none());
        assert_eq!(hunks[0].old, ["a", "b", "c"]);
        assert_eq!(hunks[0].new, ["a", "B", "c"]);
        assert_eq!(hunks[0].old_start, Some(1));
        assert_eq!(
            ops[1].kind,
            OpKind::Add {
                contents: "n1\nn2\n".into()
            }
        );
        assert_eq!(ops[2].path, "gone.txt");
        assert_eq!(ops[2].kind, OpKind::Delete);
    }

    #[test]
    fn unified_counts_are_checked() {
        assert!(matches!(
            parse("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n"),
            Err(ParseError::Line { line: 3, .. })
        ));
        assert!(matches!(
            parse("just some text"),
            Err(ParseError::NoOperations)
        ));
    }
}
