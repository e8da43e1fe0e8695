//! Line framing: a byte-oriented `\n` reader with a size limit, and the serialiser that
//! writes one frame per line.
//!
//! Lines are split on `\n` bytes only, never on U+2028/U+2029 or `\r`. On output, U+2028 and
//! U+2029 inside strings are written as `\u2028` / `\u2029` escapes (as zut does) so that no
//! client-side line splitter that honours Unicode line separators can cut a frame; serde_json
//! already escapes every control character, so a frame never contains a raw newline.

use std::io;

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter};
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

/// serde_json's compact formatter, escaping U+2028 and U+2029 inside strings.
struct LineSafeFormatter;

impl Formatter for LineSafeFormatter {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        // Both separators start with the byte E2; most fragments have none, and a byte
        // search (memchr) is far cheaper than a char search.
        if !fragment.as_bytes().contains(&0xE2) {
            return CompactFormatter.write_string_fragment(writer, fragment);
        }
        let mut rest = fragment;
        while let Some(pos) = rest.find(['\u{2028}', '\u{2029}']) {
            writer.write_all(&rest.as_bytes()[..pos])?;
            let escape: &[u8] = match rest[pos..].starts_with('\u{2028}') {
                true => b"\\u2028",
                false => b"\\u2029",
            };
            writer.write_all(escape)?;
            rest = &rest[pos + '\u{2028}'.len_utf8()..];
        }
        CompactFormatter.write_string_fragment(writer, rest)
    }
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
    let mut ser = serde_json::Serializer::with_formatter(&mut *out, LineSafeFormatter);
    if let Err(err) = value.serialize(&mut ser) {
        out.truncate(start);
        return Err(err);
    }
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
    fn line_separators_are_escaped() {
        let line = to_line(&serde_json::json!({"t": "a\u{2028}b\u{2029}c\nd"})).expect("ser");
        let text = String::from_utf8(line).expect("utf8");
        assert_eq!(text, "{\"t\":\"a\\u2028b\\u2029c\\nd\"}\n");
        let back: serde_json::Value = serde_json::from_str(&text).expect("parse");
        assert_eq!(back["t"], "a\u{2028}b\u{2029}c\nd");
    }
}
