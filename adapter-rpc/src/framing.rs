//! Line framing of zut RPC: one JSON frame per `\n`-terminated line.
//!
//! Input lines are read by agent-host's bounded reader ([`agent_host::lines`]: split on
//! `\n` bytes only, never on U+2028/U+2029). On output, U+2028 and U+2029 inside strings are
//! written as `\u2028` / `\u2029` escapes (as zut does) so that no client-side line splitter
//! that honours Unicode line separators can cut a frame; serde_json already escapes every
//! control character, so a frame never contains a raw newline.

use agent_host::text::{escape_json_tail, JsonEscapes};
use serde::Serialize;

/// Default longest accepted input line, in bytes (the newline excluded): 16 MiB, like zut.
pub const MAX_LINE_BYTES: usize = agent_host::lines::MAX_LINE_BYTES;

/// The escapes of every output line.
pub const ESCAPES: JsonEscapes = JsonEscapes::LineSeparators;

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
    escape_json_tail(out, start, ESCAPES);
    out.push(b'\n');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let line = to_line(&serde_json::json!({"t": "a\u{2028}b\u{2029}c\nd<&>"})).expect("ser");
        let text = String::from_utf8(line).expect("utf8");
        assert_eq!(text, "{\"t\":\"a\\u2028b\\u2029c\\nd<&>\"}\n");
        let back: serde_json::Value = serde_json::from_str(&text).expect("parse");
        assert_eq!(back["t"], "a\u{2028}b\u{2029}c\nd<&>");
    }
}
