//! The `---`-delimited frontmatter of skill and command files, read the way Zero reads it:
//! a first line `---`, `key: value` lines, a closing line `---`; keys match
//! case-insensitively, the first occurrence wins, surrounding quotes are dropped. No YAML
//! library: nothing else of YAML is understood.

use std::io::Read;
use std::path::Path;

/// A file's text split at its frontmatter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Split<'a> {
    /// No frontmatter: the whole text is the body.
    None(&'a str),
    /// A frontmatter block and the body after it.
    Closed {
        /// The lines between the delimiters.
        front: &'a str,
        /// Everything after the closing delimiter.
        body: &'a str,
    },
    /// An opening `---` without a closing one.
    Unclosed,
}

/// Splits `text` (line ends already `\n`) at its frontmatter.
pub(crate) fn split(text: &str) -> Split<'_> {
    let Some(rest) = text.strip_prefix("---\n") else {
        return match text.trim_end() == "---" {
            true => Split::Unclosed,
            false => Split::None(text),
        };
    };
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim() == "---" {
            return Split::Closed {
                front: &rest[..at],
                body: &rest[at + line.len()..],
            };
        }
        at += line.len();
    }
    Split::Unclosed
}

/// The value of `key` in a frontmatter block: the first line `key: value` (the key
/// matched case-insensitively), trimmed, without surrounding quotes; `None` when no line
/// has the key or its value is empty.
pub(crate) fn value(front: &str, key: &str) -> Option<String> {
    front
        .lines()
        .find_map(|line| {
            let line = line.trim();
            let (name, value) = line.split_once(':')?;
            if !name.trim_end().eq_ignore_ascii_case(key) || name.len() != name.trim_end().len() {
                return None;
            }
            let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
            Some(value.to_string())
        })
        .filter(|v| !v.is_empty())
}

/// Whether `bytes` look like text: no NUL byte, and valid UTF-8 (a character cut at the
/// very end, where a bounded read stopped, is allowed).
pub(crate) fn is_text(bytes: &[u8]) -> bool {
    if bytes.contains(&0) {
        return false;
    }
    match std::str::from_utf8(bytes) {
        Ok(_) => true,
        Err(err) => err.error_len().is_none(),
    }
}

/// The valid UTF-8 prefix of `bytes` (a character cut at the end dropped).
pub(crate) fn text_prefix(bytes: &[u8]) -> &str {
    match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => std::str::from_utf8(&bytes[..err.valid_up_to()]).unwrap_or_default(),
    }
}

/// Reads at most `limit` bytes of the regular file at `path`; the second value says
/// whether the file is longer. A path that is not a regular file (a directory, a FIFO, a
/// device) is an error of kind `InvalidInput`, so nothing ever blocks on it.
pub(crate) fn read_bounded(path: &Path, limit: usize) -> std::io::Result<(Vec<u8>, bool)> {
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(limit).min(limit));
    file.take(limit as u64 + 1).read_to_end(&mut bytes)?;
    let longer = bytes.len() > limit;
    bytes.truncate(limit);
    Ok((bytes, longer))
}

/// Cuts `text` to at most `limit` bytes on a character boundary; the bool says whether
/// anything was cut.
pub(crate) fn cut(text: &str, limit: usize) -> (&str, bool) {
    if text.len() <= limit {
        return (text, false);
    }
    let mut end = limit;
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_zero() {
        assert_eq!(split("plain\n"), Split::None("plain\n"));
        assert_eq!(
            split("---\nname: a\n---\nbody\n"),
            Split::Closed {
                front: "name: a\n",
                body: "body\n"
            }
        );
        assert_eq!(
            split("---\n---"),
            Split::Closed {
                front: "",
                body: ""
            }
        );
        assert_eq!(split("---\nname: a\nbody"), Split::Unclosed);
        assert_eq!(split("---"), Split::Unclosed);
        // Only a first line `---` opens frontmatter.
        assert_eq!(split(" ---\nx\n---\n"), Split::None(" ---\nx\n---\n"));
    }

    #[test]
    fn values_match_keys_case_insensitively_and_drop_quotes() {
        let front = "Name: \"review\"\ndescription: 'Reviews: a file'\nmodel:\nname: second";
        assert_eq!(value(front, "name").as_deref(), Some("review"));
        assert_eq!(
            value(front, "description").as_deref(),
            Some("Reviews: a file")
        );
        assert_eq!(value(front, "model"), None);
        assert_eq!(value(front, "missing"), None);
        assert_eq!(value("names: x", "name"), None);
    }

    #[test]
    fn text_is_utf8_without_nul() {
        assert!(is_text("héllo".as_bytes()));
        assert!(is_text(&"é".as_bytes()[..1]), "cut at the end");
        assert!(!is_text(b"a\0b"));
        assert!(!is_text(&[0xff, b'a']));
        assert_eq!(text_prefix(&"aé".as_bytes()[..2]), "a");
        assert_eq!(cut("aé", 2), ("a", true));
        assert_eq!(cut("ab", 2), ("ab", false));
    }
}
