//! The event stream parser of the HTML standard ("Interpreting an event stream"), fed the
//! response body's chunks as they arrive.
//!
//! Each chunk is scanned once: complete lines are interpreted where they lie (only a line
//! split across chunks is copied, into one reused buffer), and an event's type and data are
//! built in two reused strings that are lent to the caller on dispatch. A model server
//! streams one small event per token, so the parser allocates nothing per event in the
//! steady state. It replaces `eventsource-stream`, which copied the rest of its buffer after
//! every line (quadratic in a burst of events read at once) and allocated five strings per
//! event.
//!
//! What the standard leaves to the user agent: invalid UTF-8 is replaced by U+FFFD (the
//! standard's decoding), `id` and `retry` are ignored (a provider stream is never
//! reconnected), and one event may hold at most `limit` bytes of lines, so that a server
//! streaming an endless event cannot grow memory without bound.

use std::borrow::Cow;
use std::ops::ControlFlow;

/// The UTF-8 byte order mark, ignored once at the start of the stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// An event grew past the parser's limit (its lines, terminators not counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventTooLarge(pub(crate) usize);

/// Parses an event stream chunk by chunk (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct SseParser {
    /// The start of a line whose end has not arrived yet.
    partial: Vec<u8>,
    /// The event type buffer.
    event: String,
    /// The data buffer: every `data` line followed by a line feed.
    data: String,
    /// The last chunk ended in a carriage return: a line feed opening the next one belongs
    /// to it.
    after_cr: bool,
    /// No line has been interpreted yet (a byte order mark may open the first).
    first_line: bool,
    /// Bytes of the current event's lines so far.
    size: usize,
    limit: usize,
}

impl SseParser {
    /// A parser for a new stream whose events may hold at most `limit` bytes of lines.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            partial: Vec::new(),
            event: String::new(),
            data: String::new(),
            after_cr: false,
            first_line: true,
            size: 0,
            limit,
        }
    }

    /// Interprets `chunk`, calling `dispatch(event type, data)` for every event it
    /// completes, in order, until `dispatch` breaks (the rest of the chunk is then left
    /// unread). Fails once the current event is over the limit.
    pub(crate) fn feed(
        &mut self,
        mut chunk: &[u8],
        mut dispatch: impl FnMut(&str, &str) -> ControlFlow<()>,
    ) -> Result<ControlFlow<()>, EventTooLarge> {
        if chunk.is_empty() {
            return Ok(ControlFlow::Continue(()));
        }
        if std::mem::take(&mut self.after_cr) {
            chunk = chunk.strip_prefix(b"\n").unwrap_or(chunk);
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', chunk) {
            let (line, terminator, rest) = (&chunk[..end], chunk[end], &chunk[end + 1..]);
            chunk = match terminator {
                b'\r' if rest.is_empty() => {
                    self.after_cr = true;
                    rest
                }
                b'\r' => rest.strip_prefix(b"\n").unwrap_or(rest),
                _ => rest,
            };
            self.count(line.len())?;
            let flow = match self.partial.is_empty() {
                true => self.line(line, &mut dispatch),
                false => {
                    let mut whole = std::mem::take(&mut self.partial);
                    whole.extend_from_slice(line);
                    let flow = self.line(&whole, &mut dispatch);
                    whole.clear();
                    self.partial = whole;
                    flow
                }
            };
            if flow.is_break() {
                return Ok(flow);
            }
        }
        self.count(chunk.len())?;
        self.partial.extend_from_slice(chunk);
        Ok(ControlFlow::Continue(()))
    }

    /// Adds `n` bytes to the current event's size.
    fn count(&mut self, n: usize) -> Result<(), EventTooLarge> {
        self.size = self.size.saturating_add(n);
        match self.size > self.limit {
            true => Err(EventTooLarge(self.limit)),
            false => Ok(()),
        }
    }

    /// Interprets one line (without its terminator).
    fn line(
        &mut self,
        mut line: &[u8],
        dispatch: &mut impl FnMut(&str, &str) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        if std::mem::take(&mut self.first_line) {
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        if line.is_empty() {
            return self.dispatch(dispatch);
        }
        let (name, value) = match memchr::memchr(b':', line) {
            // A comment.
            Some(0) => return ControlFlow::Continue(()),
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match name {
            b"data" => {
                self.data.push_str(&text(value));
                self.data.push('\n');
            }
            b"event" => {
                self.event.clear();
                self.event.push_str(&text(value));
            }
            // `id`, `retry` and unknown fields.
            _ => {}
        }
        ControlFlow::Continue(())
    }

    /// A blank line: the event so far is dispatched (when it has data) and the buffers
    /// are reset.
    fn dispatch(
        &mut self,
        dispatch: &mut impl FnMut(&str, &str) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        self.size = 0;
        let flow = match self.data.strip_suffix('\n') {
            None => ControlFlow::Continue(()),
            Some(data) => match self.event.as_str() {
                "" => dispatch("message", data),
                event => dispatch(event, data),
            },
        };
        self.data.clear();
        self.event.clear();
        flow
    }
}

/// A field value as text, invalid UTF-8 replaced.
fn text(value: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events of `chunks` fed in order, and whether the limit tripped.
    fn parse(chunks: &[&[u8]], limit: usize) -> (Vec<(String, String)>, bool) {
        let mut parser = SseParser::new(limit);
        let mut events = Vec::new();
        for chunk in chunks {
            let fed = parser.feed(chunk, |event, data| {
                events.push((event.to_string(), data.to_string()));
                ControlFlow::Continue(())
            });
            if fed.is_err() {
                return (events, true);
            }
        }
        (events, false)
    }

    fn events(chunks: &[&[u8]]) -> Vec<(String, String)> {
        parse(chunks, usize::MAX).0
    }

    fn ev(event: &str, data: &str) -> (String, String) {
        (event.to_string(), data.to_string())
    }

    #[test]
    fn fields_follow_the_standard() {
        let stream = b"\xEF\xBB\xBFdata: a\ndata:b\ndata\n\n: a comment\nevent: x\nid: 7\nretry: 5\nfoo: bar\ndata:  two spaces\n\nevent: only a type\n\ndata:\n\nevent: y\nevent: z\ndata: last\n\ndata: never dispatched\n";
        assert_eq!(
            events(&[stream]),
            vec![
                ev("message", "a\nb\n"),
                ev("x", " two spaces"),
                ev("message", ""),
                ev("z", "last"),
            ]
        );
    }

    #[test]
    fn crlf_cr_and_lf_end_lines_wherever_the_chunks_split() {
        let stream: &[u8] = b"data: 1\r\n\r\ndata: 2\r\rdata: 3\n\ndata: \xE2\x82\xAC\r\n\r\n";
        let want = vec![
            ev("message", "1"),
            ev("message", "2"),
            ev("message", "3"),
            ev("message", "\u{20AC}"),
        ];
        for a in 0..=stream.len() {
            for b in a..=stream.len() {
                let chunks = [&stream[..a], &stream[a..b], &stream[b..]];
                assert_eq!(events(&chunks), want, "split at {a} and {b}");
            }
        }
    }

    #[test]
    fn a_split_bom_is_still_skipped_and_invalid_utf8_is_replaced() {
        assert_eq!(
            events(&[b"\xEF", b"\xBB\xBFdata: \xFF\n\n"]),
            vec![ev("message", "\u{FFFD}")]
        );
        // Only at the start of the stream.
        assert_eq!(events(&[b"\n\xEF\xBB\xBFdata: x\n\n"]), vec![]);
    }

    #[test]
    fn dispatch_can_stop_the_chunk() {
        let mut parser = SseParser::new(usize::MAX);
        let mut seen = Vec::new();
        let flow = parser.feed(b"data: 1\n\ndata: 2\n\n", |_, data| {
            seen.push(data.to_string());
            ControlFlow::Break(())
        });
        assert_eq!(flow, Ok(ControlFlow::Break(())));
        assert_eq!(seen, ["1"]);
    }

    #[test]
    fn the_limit_counts_one_event_and_its_unterminated_line() {
        // Two events of 10 bytes each fit a limit of 15; one event of two lines does not.
        assert_eq!(
            parse(&[b"data: 1234\r\n\r\ndata: 1234\n\n"], 15),
            (vec![ev("message", "1234"), ev("message", "1234")], false)
        );
        assert!(parse(&[b"data: 1234\r\n", b"data: 1234\r\n"], 15).1);
        // An endless line trips it before its end arrives.
        let x = [b'x'; 64];
        assert!(!parse(&[&x], 100).1);
        assert!(parse(&[&x, &x], 100).1);
    }
}
