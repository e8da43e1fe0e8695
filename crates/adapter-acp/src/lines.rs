//! Bounded line input shared by both front ends: a line longer than the limit is skipped
//! (never buffered whole) and reported, a line that is not UTF-8 is reported, and input
//! can be ended early by a shutdown signal (SIGTERM) as if stdin had closed.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, ReadBuf};

/// The longest input line accepted, in bytes (without the newline): 16 MiB. Longer lines
/// are skipped and answered with an error; the connection keeps serving.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Environment variable overriding [`DEFAULT_MAX_LINE_BYTES`] (a positive byte count).
pub const MAX_LINE_ENV: &str = "ADAPTER_ACP_MAX_LINE_BYTES";

/// Nesting depth of JSON input that serde_json accepts (its recursion limit); deeper input
/// is a parse error.
pub const MAX_JSON_DEPTH: usize = 128;

/// The line limit in effect: [`MAX_LINE_ENV`] when it holds a positive number, else
/// [`DEFAULT_MAX_LINE_BYTES`].
pub fn max_line_bytes() -> usize {
    std::env::var(MAX_LINE_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_MAX_LINE_BYTES)
}

/// One read from a [`LineReader`].
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A complete line (without its newline; a final line without newline counts too).
    Text(String),
    /// A line that is not valid UTF-8.
    NotUtf8,
    /// A line longer than the limit; `len` is its length in bytes. Its content was
    /// discarded.
    TooLong {
        /// Length of the line in bytes.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// End of input.
    Eof,
}

impl Line {
    /// The clear error message of a rejected line, `None` for text and end of input.
    pub fn error_message(&self) -> Option<String> {
        match self {
            Line::NotUtf8 => Some("Parse error: the line is not valid UTF-8".to_string()),
            Line::TooLong { len, limit } => Some(format!(
                "Invalid request: the line is {len} bytes long, more than the limit of \
                 {limit} bytes; it was skipped"
            )),
            Line::Text(_) | Line::Eof => None,
        }
    }
}

/// Reads `\n`-terminated lines of at most `limit` bytes.
#[derive(Debug)]
pub struct LineReader<R> {
    reader: R,
    limit: usize,
    buf: Vec<u8>,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    /// Lines of `reader`, at most `limit` bytes each.
    pub fn new(reader: R, limit: usize) -> Self {
        Self {
            reader,
            limit: limit.max(1),
            buf: Vec::new(),
        }
    }

    /// The next line. Memory use is bounded by the limit plus the reader's buffer, however
    /// long the line. Not cancellation safe (a cancelled read loses a partial line).
    pub async fn next_line(&mut self) -> std::io::Result<Line> {
        self.buf.clear();
        let mut len = 0usize;
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                // End of input: a final unterminated line still counts.
                return Ok(match len {
                    0 => Line::Eof,
                    _ => self.finish(len),
                });
            }
            let (chunk, found) = match available.iter().position(|b| *b == b'\n') {
                Some(pos) => (&available[..pos], Some(pos + 1)),
                None => (available, None),
            };
            if len + chunk.len() <= self.limit {
                self.buf.extend_from_slice(chunk);
            } else {
                self.buf.clear();
            }
            len += chunk.len();
            let consumed = found.unwrap_or(chunk.len());
            self.reader.consume(consumed);
            if found.is_some() {
                return Ok(self.finish(len));
            }
        }
    }

    fn finish(&mut self, len: usize) -> Line {
        if len > self.limit {
            return Line::TooLong {
                len,
                limit: self.limit,
            };
        }
        let mut bytes = std::mem::take(&mut self.buf);
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
        match String::from_utf8(bytes) {
            Ok(text) => Line::Text(text),
            Err(_) => Line::NotUtf8,
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
/// future resolving on the first of them (never, when the handlers cannot be installed).
pub fn termination_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let handlers = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        );
        async move {
            match handlers {
                (Ok(mut term), Ok(mut int)) => {
                    tokio::select! {
                        _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
                        _ = int.recv() => tracing::info!("SIGINT: shutting down"),
                    }
                }
                _ => {
                    tracing::warn!("cannot install signal handlers");
                    std::future::pending::<()>().await
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async move {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], limit: usize) -> Vec<Line> {
        let reader = tokio::io::BufReader::with_capacity(4, input);
        let mut lines = LineReader::new(reader, limit);
        let mut out = Vec::new();
        loop {
            let line = lines.next_line().await.expect("read");
            let eof = line == Line::Eof;
            out.push(line);
            if eof {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn long_and_non_utf8_lines_are_reported_and_reading_goes_on() {
        let got = lines(b"abc\r\n0123456789\n\xff\xfe\nlast", 5).await;
        assert_eq!(
            got,
            vec![
                Line::Text("abc".into()),
                Line::TooLong { len: 10, limit: 5 },
                Line::NotUtf8,
                Line::Text("last".into()),
                Line::Eof
            ]
        );
        assert!(Line::TooLong { len: 10, limit: 5 }
            .error_message()
            .is_some_and(|m| m.contains("10 bytes") && m.contains("limit of 5")));
    }

    #[tokio::test]
    async fn stop_ends_input() {
        use tokio::io::AsyncReadExt;
        let (_keep, rx) = tokio::io::duplex(64);
        let mut reader = UntilStopped::new(rx, async {});
        let mut buf = Vec::new();
        let n = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            reader.read_to_end(&mut buf),
        )
        .await
        .expect("in time")
        .expect("read");
        assert_eq!(n, 0);
    }
}
