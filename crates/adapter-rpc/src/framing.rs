//! Line framing: a byte-oriented `\n` reader with a size limit, and the serialiser that
//! writes one frame per line.
//!
//! Lines are split on `\n` bytes only, never on U+2028/U+2029 or `\r`. On output, U+2028 and
//! U+2029 inside strings are written as `\u2028` / `\u2029` escapes (as zut does) so that no
//! client-side line splitter that honours Unicode line separators can cut a frame; serde_json
//! already escapes every control character, so a frame never contains a raw newline.

use std::io;

use serde::Serialize;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// Default longest accepted input line, in bytes (the newline excluded): 16 MiB, like zut.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// One input line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// The bytes of a line, without its `\n`.
    Data(Vec<u8>),
    /// A line longer than the limit; its bytes were discarded up to the next `\n`.
    TooLong,
}

/// Reads `\n`-terminated lines of at most `max` bytes.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    max: usize,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    /// A reader over `inner` accepting lines of up to `max` bytes.
    pub fn new(inner: R, max: usize) -> Self {
        Self { inner, max }
    }

    /// The next line; `None` at end of input. A final line without `\n` is returned too.
    pub async fn next_line(&mut self) -> io::Result<Option<Line>> {
        let mut line = Vec::new();
        let mut too_long = false;
        loop {
            let chunk = self.inner.fill_buf().await?;
            if chunk.is_empty() {
                return Ok(match (too_long, line.is_empty()) {
                    (true, _) => Some(Line::TooLong),
                    (false, true) => None,
                    (false, false) => Some(Line::Data(line)),
                });
            }
            let (take, found) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            if !too_long {
                if line.len() + take > self.max {
                    too_long = true;
                    line = Vec::new();
                } else {
                    line.extend_from_slice(&chunk[..take]);
                }
            }
            let consumed = if found { take + 1 } else { take };
            self.inner.consume(consumed);
            if found {
                return Ok(Some(match too_long {
                    true => Line::TooLong,
                    false => Line::Data(line),
                }));
            }
        }
    }
}

/// Writes U+2028 and U+2029 in `out[start..]`, which holds serialised JSON, as `\u2028` /
/// `\u2029`. In serialised JSON a non-ASCII character can only occur inside a string, so
/// rewriting the bytes is exact; almost no line holds one, and the check is one SIMD scan
/// for their first byte (E2) instead of a check in every string fragment.
fn escape_line_separators(out: &mut Vec<u8>, start: usize) {
    let Some(first) = memchr::memchr(0xE2, &out[start..]) else {
        return;
    };
    let rest = out.split_off(start + first);
    let (mut i, mut plain) = (0, 0);
    while let Some(at) = memchr::memchr(0xE2, &rest[i..]) {
        i += at;
        let escape: &[u8] = match rest[i..] {
            [0xE2, 0x80, 0xA8, ..] => b"\\u2028",
            [0xE2, 0x80, 0xA9, ..] => b"\\u2029",
            _ => {
                i += 1;
                continue;
            }
        };
        out.extend_from_slice(&rest[plain..i]);
        out.extend_from_slice(escape);
        i += 3;
        plain = i;
    }
    out.extend_from_slice(&rest[plain..]);
}

/// Serialises `value` as one JSON line (with its trailing `\n`).
pub fn to_line<T: Serialize>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(128);
    append_line(value, &mut out)?;
    Ok(out)
}

/// Appends `value` as one JSON line (with its trailing `\n`) to `out`; on an error `out` is
/// left as it was.
pub fn append_line<T: Serialize>(value: &T, out: &mut Vec<u8>) -> serde_json::Result<()> {
    let start = out.len();
    if let Err(err) = serde_json::to_writer(&mut *out, value) {
        out.truncate(start);
        return Err(err);
    }
    escape_line_separators(out, start);
    out.push(b'\n');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<Line> {
        let mut reader = LineReader::new(tokio::io::BufReader::with_capacity(4, input), max);
        let mut out = Vec::new();
        while let Some(line) = reader.next_line().await.expect("read") {
            out.push(line);
        }
        out
    }

    #[tokio::test]
    async fn splits_on_newline_bytes_only() {
        let input = "a\u{2028}b\r\n\nlast".as_bytes();
        assert_eq!(
            lines(input, 100).await,
            vec![
                Line::Data("a\u{2028}b\r".as_bytes().to_vec()),
                Line::Data(vec![]),
                Line::Data(b"last".to_vec()),
            ]
        );
    }

    #[tokio::test]
    async fn long_lines_are_reported_and_skipped() {
        let input = b"0123456789\nok\n0123456789";
        assert_eq!(
            lines(input, 5).await,
            vec![Line::TooLong, Line::Data(b"ok".to_vec()), Line::TooLong]
        );
    }

    #[test]
    fn only_separators_are_rewritten_and_earlier_lines_stay() {
        let mut out = "{\"old\":\"\u{2028}\"}\n".as_bytes().to_vec();
        let head = out.clone();
        let value = serde_json::json!({"k\u{2029}": "\u{20ac}\u{2026}\u{2028}x\u{2028}"});
        append_line(&value, &mut out).expect("ser");
        assert_eq!(&out[..head.len()], &head[..]);
        let line = std::str::from_utf8(&out[head.len()..]).expect("utf-8");
        assert_eq!(line, "{\"k\\u2029\":\"\u{20ac}\u{2026}\\u2028x\\u2028\"}\n");
        let back: serde_json::Value = serde_json::from_str(line).expect("json");
        assert_eq!(back, value);
    }

    #[test]
    fn line_separators_are_escaped() {
        let line = to_line(&serde_json::json!({"t": "a\u{2028}b\u{2029}c\nd"})).expect("ser");
        let text = String::from_utf8(line).expect("utf8");
        assert_eq!(text, "{\"t\":\"a\\u2028b\\u2029c\\nd\"}\n");
        let back: serde_json::Value = serde_json::from_str(&text).expect("parse");
        assert_eq!(back["t"], "a\u{2028}b\u{2029}c\nd");
    }
}
