//! Text helpers every front end needs: the text of content blocks, cutting UTF-8 on a
//! character boundary, and the escapes some protocols require in serialised JSON lines.

use agent_core::ContentBlock;

/// The text blocks of `blocks`, concatenated (reasoning, images and tool blocks skipped):
/// the text of an assistant answer.
pub fn text_of(blocks: &[ContentBlock]) -> String {
    join_text(blocks, "", false)
}

/// The text blocks of `blocks` joined with newlines: the text of a tool result.
pub fn text_lines_of(blocks: &[ContentBlock]) -> String {
    join_text(blocks, "\n", false)
}

/// The text blocks of `blocks` joined with newlines, each image shown as
/// `[image <mime type>]` in its place: a tool result for a reader that cannot show images.
pub fn display_text_of(blocks: &[ContentBlock]) -> String {
    join_text(blocks, "\n", true)
}

/// The text blocks (and, with `images`, `[image <mime>]` for each image) of `blocks`, with
/// `separator` between them.
pub fn join_text(blocks: &[ContentBlock], separator: &str, images: bool) -> String {
    let mut out = String::new();
    let mut first = true;
    for block in blocks {
        let (text, mime) = match block {
            ContentBlock::Text { text } => (Some(text.as_str()), None),
            ContentBlock::Image { mime_type, .. } if images => (None, Some(mime_type.as_str())),
            _ => continue,
        };
        if !first {
            out.push_str(separator);
        }
        first = false;
        match (text, mime) {
            (Some(text), _) => out.push_str(text),
            (None, Some(mime)) => {
                out.push_str("[image ");
                out.push_str(mime);
                out.push(']');
            }
            (None, None) => {}
        }
    }
    out
}

/// The largest index `<= index` that is a character boundary of `s` (`s.len()` when
/// `index` is past the end).
pub fn floor_char_boundary(s: &str, index: usize) -> usize {
    if index >= s.len() {
        return s.len();
    }
    let mut at = index;
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest index `>= index` that is a character boundary of `s`.
pub fn ceil_char_boundary(s: &str, index: usize) -> usize {
    if index >= s.len() {
        return s.len();
    }
    let mut at = index;
    while !s.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
pub fn cut_utf8(s: &str, max: usize) -> &str {
    &s[..floor_char_boundary(s, max)]
}

/// [`cut_utf8`], and whether anything was cut.
pub fn truncate_utf8(s: &str, max: usize) -> (&str, bool) {
    let kept = cut_utf8(s, max);
    (kept, kept.len() < s.len())
}

/// The longest suffix of `s` of at most `max` bytes that starts on a character boundary.
pub fn cut_utf8_tail(s: &str, max: usize) -> &str {
    &s[ceil_char_boundary(s, s.len().saturating_sub(max))..]
}

/// The longest prefix of `bytes` of at most `max` bytes that does not end inside a UTF-8
/// sequence (for bytes that are mostly UTF-8, e.g. a file about to be decoded lossily: the
/// cut adds no replacement character).
pub fn cut_utf8_bytes(bytes: &[u8], max: usize) -> &[u8] {
    if bytes.len() <= max {
        return bytes;
    }
    let mut at = max;
    // Back off over at most three continuation bytes to the start of their sequence.
    while at > 0 && max - at < 3 && (bytes[at] & 0xC0) == 0x80 {
        at -= 1;
    }
    if (bytes[at] & 0xC0) == 0x80 {
        // Not UTF-8 here: cut where asked.
        at = max;
    }
    &bytes[..at]
}

/// Which characters [`escape_json_tail`] rewrites.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonEscapes {
    /// U+2028 and U+2029 as `\u2028` / `\u2029`, so that no reader that splits lines on
    /// Unicode line separators (JavaScript's) can cut a frame (zut RPC).
    LineSeparators,
    /// Go's `encoding/json` set: `<`, `>`, `&`, U+2028 and U+2029 as `\u003c`, `\u003e`,
    /// `\u0026`, `\u2028`, `\u2029` (Zero).
    Go,
}

/// Rewrites the characters `escapes` names in `out[start..]`, which holds serialised JSON.
///
/// In serialised JSON these characters occur only inside strings, so rewriting the bytes is
/// exact. Almost no line holds one: the check is one SIMD scan (`memchr`) for their first
/// bytes; only a line that has one is copied.
pub fn escape_json_tail(out: &mut Vec<u8>, start: usize, escapes: JsonEscapes) {
    let tail = &out[start..];
    let first = match escapes {
        JsonEscapes::LineSeparators => memchr::memchr(0xE2, tail),
        JsonEscapes::Go => match (
            memchr::memchr3(b'<', b'>', b'&', tail),
            memchr::memchr(0xE2, tail),
        ) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        },
    };
    let Some(first) = first else {
        return;
    };
    let html = escapes == JsonEscapes::Go;
    let rest = out.split_off(start + first);
    let (mut i, mut plain) = (0, 0);
    while i < rest.len() {
        // U+2028 and U+2029 are E2 80 A8 and E2 80 A9 in UTF-8.
        let (escape, len): (&[u8], usize) = match rest[i..] {
            [0xE2, 0x80, 0xA8, ..] => (b"\\u2028", 3),
            [0xE2, 0x80, 0xA9, ..] => (b"\\u2029", 3),
            [b'<', ..] if html => (b"\\u003c", 1),
            [b'>', ..] if html => (b"\\u003e", 1),
            [b'&', ..] if html => (b"\\u0026", 1),
            _ => {
                i += 1;
                continue;
            }
        };
        out.extend_from_slice(&rest[plain..i]);
        out.extend_from_slice(escape);
        i += len;
        plain = i;
    }
    out.extend_from_slice(&rest[plain..]);
}

/// [`escape_json_tail`] with [`JsonEscapes::LineSeparators`].
pub fn escape_line_separators(out: &mut Vec<u8>, start: usize) {
    escape_json_tail(out, start, JsonEscapes::LineSeparators)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_of_blocks() {
        let blocks = vec![
            ContentBlock::Reasoning {
                text: "hmm".into(),
                signature: None,
                opaque: None,
            },
            ContentBlock::text("a"),
            ContentBlock::image("image/png", vec![1, 2]),
            ContentBlock::text("b"),
        ];
        assert_eq!(text_of(&blocks), "ab");
        assert_eq!(text_lines_of(&blocks), "a\nb");
        assert_eq!(display_text_of(&blocks), "a\n[image image/png]\nb");
        assert_eq!(text_lines_of(&[]), "");
        assert_eq!(
            display_text_of(&[ContentBlock::image("image/gif", vec![])]),
            "[image image/gif]"
        );
    }

    #[test]
    fn cuts_land_on_character_boundaries() {
        let s = "aé€😀";
        // a=1 byte, é=2, €=3, 😀=4.
        assert_eq!(cut_utf8(s, 0), "");
        assert_eq!(cut_utf8(s, 2), "a");
        assert_eq!(cut_utf8(s, 3), "aé");
        assert_eq!(cut_utf8(s, 5), "aé");
        assert_eq!(cut_utf8(s, 100), s);
        assert_eq!(truncate_utf8(s, 2), ("a", true));
        assert_eq!(truncate_utf8(s, 10), (s, false));
        assert_eq!(cut_utf8_tail(s, 4), "😀");
        assert_eq!(cut_utf8_tail(s, 6), "😀");
        assert_eq!(cut_utf8_tail(s, 7), "€😀");
        assert_eq!(cut_utf8_tail(s, 100), s);
        assert_eq!(cut_utf8_tail(s, 0), "");
        for max in 0..=s.len() {
            assert_eq!(
                cut_utf8_bytes(s.as_bytes(), max),
                cut_utf8(s, max).as_bytes()
            );
        }
        // Bytes that are not UTF-8 are cut where asked.
        assert_eq!(cut_utf8_bytes(&[0x80, 0x80, 0x80, 0x80, 0x80], 4).len(), 4);
        assert_eq!(floor_char_boundary(s, 2), 1);
        assert_eq!(ceil_char_boundary(s, 2), 3);
    }

    #[test]
    fn line_separators_are_escaped_and_the_head_is_left_alone() {
        let mut out = "{\"old\":\"\u{2028}\"}\n".as_bytes().to_vec();
        let head = out.clone();
        let start = out.len();
        let value = json!({"k\u{2029}": "\u{20ac}\u{2026}\u{2028}x\u{2028}<&>"});
        serde_json::to_writer(&mut out, &value).expect("ser");
        escape_line_separators(&mut out, start);
        assert_eq!(&out[..head.len()], &head[..]);
        let line = std::str::from_utf8(&out[head.len()..]).expect("utf-8");
        assert_eq!(
            line,
            "{\"k\\u2029\":\"\u{20ac}\u{2026}\\u2028x\\u2028<&>\"}"
        );
        let back: serde_json::Value = serde_json::from_str(line).expect("json");
        assert_eq!(back, value);
    }

    #[test]
    fn go_escapes() {
        for (json, go) in [
            (r#"{"t":"plain"}"#, r#"{"t":"plain"}"#),
            (r#"{"t":"<a&b>"}"#, r#"{"t":"\u003ca\u0026b\u003e"}"#),
            (
                "{\"t\":\"line\u{2028}para\u{2029}end\"}",
                r#"{"t":"line\u2028para\u2029end"}"#,
            ),
            (
                "{\"t\":\"euro \u{20ac} and \u{2028}<\"}",
                "{\"t\":\"euro \u{20ac} and \\u2028\\u003c\"}",
            ),
            (
                "{\"<k>\":\"\u{2026}\"}",
                "{\"\\u003ck\\u003e\":\"\u{2026}\"}",
            ),
        ] {
            let mut out = b"<head>".to_vec();
            out.extend_from_slice(json.as_bytes());
            escape_json_tail(&mut out, 6, JsonEscapes::Go);
            assert_eq!(&out[..6], b"<head>");
            assert_eq!(std::str::from_utf8(&out[6..]).expect("utf-8"), go);
        }
    }
}
