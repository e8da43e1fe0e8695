//! Bounded line input: `\n`-terminated lines of at most [`MAX_LINE_BYTES`], read through a
//! `tokio_util::codec` decoder ([`LineCodec`]).
//!
//! A line longer than the limit is skipped (never buffered whole: memory stays bounded by
//! the limit plus one read) and reported as [`LineError::TooLong`]; a line that is not UTF-8
//! is reported as [`LineError::NotUtf8`]. Both are ordinary items: the caller answers them
//! with its protocol's error and keeps reading. Only [`LineError::Io`] ends the input.
//!
//! Lines are split on `\n` bytes only (never on U+2028/U+2029); one `\r` before the `\n` is
//! dropped; a final line without `\n` counts. Reading is cancellation safe: the partial line
//! lives in the decoder, so a `next_line` future dropped in a `select!` loses nothing.
//!
//! [`UntilStopped`] and [`termination_signal`] end the input early on SIGTERM/SIGINT, as if
//! stdin had closed.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, BytesMut};
use futures::{Stream, StreamExt};
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::codec::{Decoder, FramedRead};

/// The longest input line accepted, in bytes (without the newline): 16 MiB.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Bytes read from the input at a time (and the reader's initial buffer).
const READ_CAPACITY: usize = 64 * 1024;

/// A line that could not be read. [`TooLong`](Self::TooLong) and
/// [`NotUtf8`](Self::NotUtf8) are per line (reading goes on); [`Io`](Self::Io) ends the
/// input.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    /// The line is longer than the limit; its bytes were skipped.
    #[error("the line is {len} bytes long, more than the limit of {limit} bytes; it was skipped")]
    TooLong {
        /// Its length in bytes (without the newline).
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// The line is not valid UTF-8.
    #[error("the line is not valid UTF-8")]
    NotUtf8,
    /// Reading the input failed.
    #[error("reading input: {0}")]
    Io(#[from] std::io::Error),
}

impl LineError {
    /// Whether reading goes on after this error (true for a bad line, false for I/O).
    pub fn is_recoverable(&self) -> bool {
        !matches!(self, LineError::Io(_))
    }
}

/// The decoder: `\n`-terminated UTF-8 lines of at most `limit` bytes. Each item is the
/// line (without `\n` and a `\r` before it) or the reason it was rejected.
#[derive(Debug, Clone)]
pub struct LineCodec {
    limit: usize,
    /// Where to resume looking for `\n` in the buffer.
    searched: usize,
    /// While skipping an over-long line: how many of its bytes were dropped so far.
    skipped: Option<usize>,
}

impl LineCodec {
    /// Lines of at most `limit` bytes (at least 1).
    pub fn new(limit: usize) -> Self {
        Self {
            limit: limit.max(1),
            searched: 0,
            skipped: None,
        }
    }

    /// The limit.
    pub fn limit(&self) -> usize {
        self.limit
    }

    fn line(&self, line: BytesMut) -> Result<String, LineError> {
        if line.len() > self.limit {
            return Err(LineError::TooLong {
                len: line.len(),
                limit: self.limit,
            });
        }
        let text = match line.last() {
            Some(b'\r') => &line[..line.len() - 1],
            _ => &line[..],
        };
        match std::str::from_utf8(text) {
            Ok(text) => Ok(text.to_owned()),
            Err(_) => Err(LineError::NotUtf8),
        }
    }
}

impl Default for LineCodec {
    fn default() -> Self {
        Self::new(MAX_LINE_BYTES)
    }
}

impl Decoder for LineCodec {
    type Item = Result<String, LineError>;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> std::io::Result<Option<Self::Item>> {
        let from = self.searched.min(buf.len());
        match memchr::memchr(b'\n', &buf[from..]) {
            Some(at) => {
                let end = from + at;
                self.searched = 0;
                if let Some(skipped) = self.skipped.take() {
                    buf.advance(end + 1);
                    return Ok(Some(Err(LineError::TooLong {
                        len: skipped + end,
                        limit: self.limit,
                    })));
                }
                let mut line = buf.split_to(end + 1);
                line.truncate(end);
                Ok(Some(self.line(line)))
            }
            None => {
                if let Some(skipped) = self.skipped.as_mut() {
                    *skipped += buf.len();
                    buf.clear();
                    self.searched = 0;
                } else if buf.len() > self.limit {
                    // Over the limit before its end: drop what is here and skip the rest.
                    self.skipped = Some(buf.len());
                    buf.clear();
                    self.searched = 0;
                } else {
                    self.searched = buf.len();
                }
                Ok(None)
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> std::io::Result<Option<Self::Item>> {
        if let Some(item) = self.decode(buf)? {
            return Ok(Some(item));
        }
        // End of input: a final line without `\n` still counts.
        self.searched = 0;
        if let Some(skipped) = self.skipped.take() {
            let len = skipped + buf.len();
            buf.clear();
            return Ok(Some(Err(LineError::TooLong {
                len,
                limit: self.limit,
            })));
        }
        if buf.is_empty() {
            return Ok(None);
        }
        let line = buf.split_to(buf.len());
        Ok(Some(self.line(line)))
    }
}

/// Reads lines of at most a limit from an [`AsyncRead`] (see the module docs).
#[derive(Debug)]
pub struct LineReader<R> {
    framed: FramedRead<R, LineCodec>,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// Lines of `reader` of at most [`MAX_LINE_BYTES`].
    pub fn new(reader: R) -> Self {
        Self::with_limit(reader, MAX_LINE_BYTES)
    }

    /// Lines of `reader` of at most `limit` bytes.
    pub fn with_limit(reader: R, limit: usize) -> Self {
        Self {
            framed: FramedRead::with_capacity(reader, LineCodec::new(limit), READ_CAPACITY),
        }
    }

    /// The limit.
    pub fn limit(&self) -> usize {
        self.framed.decoder().limit()
    }

    /// The next line, or why it was rejected; `None` at the end of input (and after an
    /// [`LineError::Io`]). Cancellation safe.
    pub async fn next_line(&mut self) -> Option<Result<String, LineError>> {
        self.next().await
    }
}

impl<R: AsyncRead + Unpin> Stream for LineReader<R> {
    type Item = Result<String, LineError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match std::task::ready!(self.framed.poll_next_unpin(cx)) {
            None => Poll::Ready(None),
            Some(Ok(line)) => Poll::Ready(Some(line)),
            Some(Err(err)) => Poll::Ready(Some(Err(LineError::Io(err)))),
        }
    }
}

/// An [`AsyncRead`] that reads `inner` until `stop` resolves, then reports end of input
/// (so a SIGTERM shuts a front end down like a closed stdin).
pub struct UntilStopped<R> {
    inner: R,
    stop: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl<R> std::fmt::Debug for UntilStopped<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UntilStopped")
            .field("stopped", &self.stop.is_none())
            .finish()
    }
}

impl<R> UntilStopped<R> {
    /// `inner` until `stop` resolves.
    pub fn new(inner: R, stop: impl Future<Output = ()> + Send + 'static) -> Self {
        Self {
            inner,
            stop: Some(Box::pin(stop)),
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for UntilStopped<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.stop.as_mut() {
            None => return Poll::Ready(Ok(())),
            Some(stop) => {
                if stop.as_mut().poll(cx).is_ready() {
                    self.stop = None;
                    return Poll::Ready(Ok(()));
                }
            }
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

/// Installs SIGTERM and SIGINT handlers now (call it inside a tokio runtime) and returns a
/// future resolving on the first of them (never, when the handlers cannot be installed):
/// [`crate::signals::termination`], logged.
pub fn termination_signal() -> impl Future<Output = ()> + Send + 'static {
    let signal = crate::signals::termination();
    async move {
        let signal = signal.await;
        tracing::info!("{}: shutting down", signal.name());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// What a line came out as, comparable.
    #[derive(Debug, PartialEq, Eq)]
    enum Got {
        Text(String),
        TooLong(usize, usize),
        NotUtf8,
    }

    async fn lines_of<R: AsyncRead + Unpin>(reader: R, limit: usize) -> Vec<Got> {
        let mut lines = LineReader::with_limit(reader, limit);
        let mut out = Vec::new();
        while let Some(line) = lines.next_line().await {
            out.push(match line {
                Ok(text) => Got::Text(text),
                Err(LineError::TooLong { len, limit }) => Got::TooLong(len, limit),
                Err(LineError::NotUtf8) => Got::NotUtf8,
                Err(LineError::Io(err)) => panic!("io: {err}"),
            });
        }
        out
    }

    async fn lines(input: &[u8], limit: usize) -> Vec<Got> {
        lines_of(input, limit).await
    }

    fn text(s: &str) -> Got {
        Got::Text(s.to_string())
    }

    #[tokio::test]
    async fn splits_on_newline_bytes_only_and_drops_one_cr() {
        let got = lines("a\u{2028}b\r\n\n\r\r\nlast".as_bytes(), 100).await;
        assert_eq!(
            got,
            vec![text("a\u{2028}b"), text(""), text("\r"), text("last")]
        );
    }

    #[tokio::test]
    async fn long_and_non_utf8_lines_are_reported_and_reading_goes_on() {
        let got = lines(b"abc\r\n0123456789\n\xff\xfe\nok\n0123456789", 5).await;
        assert_eq!(
            got,
            vec![
                text("abc"),
                Got::TooLong(10, 5),
                Got::NotUtf8,
                text("ok"),
                Got::TooLong(10, 5),
            ]
        );
        assert_eq!(
            LineError::TooLong { len: 10, limit: 5 }.to_string(),
            "the line is 10 bytes long, more than the limit of 5 bytes; it was skipped"
        );
        assert!(LineError::NotUtf8.is_recoverable());
        assert!(!LineError::Io(std::io::ErrorKind::Other.into()).is_recoverable());
    }

    #[tokio::test]
    async fn a_line_of_exactly_the_limit_is_accepted() {
        let got = lines(b"12345\n123456\n12345", 5).await;
        assert_eq!(got, vec![text("12345"), Got::TooLong(6, 5), text("12345")]);
    }

    #[tokio::test]
    async fn over_long_lines_arriving_in_small_pieces_are_skipped_with_bounded_memory() {
        // A 1 MiB line written in 7-byte pieces through a small pipe, then a good line.
        let (mut tx, rx) = tokio::io::duplex(16);
        let writer = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let long = vec![b'x'; 1 << 20];
            for piece in long.chunks(7) {
                tx.write_all(piece).await.expect("write");
            }
            tx.write_all(b"\nafter\n").await.expect("write");
        });
        let got = tokio::time::timeout(Duration::from_secs(20), lines_of(rx, 1000))
            .await
            .expect("in time");
        writer.await.expect("writer");
        assert_eq!(got, vec![Got::TooLong(1 << 20, 1000), text("after")]);
    }

    #[tokio::test]
    async fn reading_is_cancellation_safe() {
        let (mut tx, rx) = tokio::io::duplex(64);
        let mut reader = LineReader::new(rx);
        use tokio::io::AsyncWriteExt;
        tx.write_all(b"hal").await.expect("write");
        // A read that is given up half-way through a line loses nothing.
        use futures::FutureExt;
        assert!(
            reader.next_line().now_or_never().is_none(),
            "no whole line yet"
        );
        tx.write_all(b"f\n").await.expect("write");
        let line = tokio::time::timeout(Duration::from_secs(10), reader.next_line())
            .await
            .expect("in time");
        assert_eq!(line.map(|l| l.ok()), Some(Some("half".to_string())));
    }

    #[tokio::test]
    async fn stop_ends_input() {
        use tokio::io::AsyncReadExt;
        let (_keep, rx) = tokio::io::duplex(64);
        let mut reader = UntilStopped::new(rx, async {});
        let mut buf = Vec::new();
        let n = tokio::time::timeout(Duration::from_secs(5), reader.read_to_end(&mut buf))
            .await
            .expect("in time")
            .expect("read");
        assert_eq!(n, 0);
    }
}
