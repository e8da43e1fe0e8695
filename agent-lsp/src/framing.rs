//! The base protocol's framing: `Content-Length: N\r\n\r\n` then N bytes of JSON.

use std::io;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The longest header line accepted (servers send two short ones).
const MAX_HEADER_LINE: usize = 8 * 1024;
/// The largest message body accepted (a workspace's symbols or diagnostics fit easily).
pub(crate) const MAX_BODY: usize = 64 * 1024 * 1024;

/// Reads one message body; `None` at a clean end of stream (before any header byte).
pub(crate) async fn read_message<R: AsyncBufRead + Unpin>(
    reader: &mut R,
) -> io::Result<Option<Vec<u8>>> {
    let mut length: Option<usize> = None;
    let mut line = Vec::new();
    let mut first = true;
    loop {
        line.clear();
        let read = (&mut *reader)
            .take(MAX_HEADER_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await?;
        if read == 0 {
            return match first {
                true => Ok(None),
                false => Err(invalid("the stream ended inside a message header")),
            };
        }
        first = false;
        if line.len() > MAX_HEADER_LINE {
            return Err(invalid("a header line is longer than 8 KiB"));
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            break;
        }
        let Some((name, value)) = text.split_once(':') else {
            return Err(invalid(format!("a header line without ':': {text:?}")));
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            let value = value.trim();
            let n = value
                .parse::<usize>()
                .map_err(|_| invalid(format!("Content-Length is not a number: {value:?}")))?;
            length = Some(n);
        }
    }
    let length = length.ok_or_else(|| invalid("a message without Content-Length"))?;
    if length > MAX_BODY {
        return Err(invalid(format!(
            "a message of {length} bytes is over the {MAX_BODY}-byte limit"
        )));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await?;
    Ok(Some(body))
}

/// Writes one message (header and body) and flushes.
pub(crate) async fn write_message<W: AsyncWrite + Unpin>(
    writer: &mut W,
    body: &[u8],
) -> io::Result<()> {
    let header = format!("Content-Length: {}\r\n\r\n", body.len());
    writer.write_all(header.as_bytes()).await?;
    writer.write_all(body).await?;
    writer.flush().await
}

fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    async fn read_all(bytes: &[u8]) -> io::Result<Vec<Vec<u8>>> {
        let mut reader = BufReader::new(bytes);
        let mut out = Vec::new();
        while let Some(body) = read_message(&mut reader).await? {
            out.push(body);
        }
        Ok(out)
    }

    #[tokio::test]
    async fn round_trips_messages_and_ignores_other_headers() {
        let mut wire = Vec::new();
        write_message(&mut wire, br#"{"a":1}"#)
            .await
            .expect("write");
        wire.extend_from_slice(
            b"content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}",
        );
        let bodies = read_all(&wire).await.expect("reads");
        assert_eq!(bodies, [br#"{"a":1}"#.to_vec(), b"{}".to_vec()]);
    }

    #[tokio::test]
    async fn bad_frames_are_errors_not_hangs() {
        for wire in [
            &b"Content-Length: x\r\n\r\n"[..],
            b"Content-Type: a\r\n\r\n{}",
            b"Content-Length: 10\r\n\r\n{}",
            b"Content-Length: 2\r\n",
            b"no colon\r\n\r\n",
            b"Content-Length: 99999999999\r\n\r\n",
        ] {
            assert!(
                read_all(wire).await.is_err(),
                "{:?}",
                String::from_utf8_lossy(wire)
            );
        }
        let long = vec![b'a'; MAX_HEADER_LINE + 10];
        assert!(read_all(&long).await.is_err());
    }
}
