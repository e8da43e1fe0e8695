//! A blocking output (a process's stdout, any [`Write`]) under the batching line writer (one
//! write and one flush per burst), run on a blocking thread so that a full pipe blocks
//! nothing else: [`Stdout`].

use std::io::{self, Write};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::backpressure::OutputGate;
use crate::output::{line_writer, Frames, LineSender};
use tokio::io::AsyncWrite;
use tokio::task::JoinHandle;

/// A blocking [`Write`] as an [`AsyncWrite`]: each call completes at once (blocking the
/// thread it runs on, which is a blocking-pool thread: see [`Stdout::start`]).
struct BlockingWrite(Box<dyn Write + Send>);

impl AsyncWrite for BlockingWrite {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Poll::Ready(self.get_mut().0.write(buf))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.get_mut().0.flush())
    }

    /// Flushes only: the process's stdout stays open.
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.get_mut().0.flush())
    }
}

/// The line writer over a blocking output (see the [module docs](self)).
#[derive(Debug)]
pub struct Stdout {
    sender: LineSender,
    task: JoinHandle<io::Result<()>>,
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "stdout is closed")
}

impl Stdout {
    /// Starts agent-host's line writer on `stdout`, on a blocking thread so that a full pipe
    /// blocks nothing else. Its gate admits one message: a burst is written before the next
    /// is taken from the run (as a synchronous writer would), so a client that stops reading
    /// stalls the run, and memory stays bounded.
    ///
    /// Must be called inside a Tokio runtime.
    pub fn start(stdout: Box<dyn Write + Send>) -> Self {
        let (sender, writer) = line_writer(Arc::new(OutputGate::new(1)));
        let runtime = tokio::runtime::Handle::current();
        let task = tokio::task::spawn_blocking(move || {
            runtime.block_on(writer.run(BlockingWrite(stdout)))
        });
        Self { sender, task }
    }

    /// The sender of the lines (its gate is the writer's).
    pub fn sender(&self) -> &LineSender {
        &self.sender
    }

    /// Hands the lines of `frames` to the writer (clearing `frames`).
    pub fn send(&self, frames: &mut Frames) -> io::Result<()> {
        self.sender
            .send_frames(frames)
            .map(|_| ())
            .map_err(|_| closed())
    }

    /// Hands over `frames` and waits until everything sent so far is written.
    pub async fn send_and_wait(&self, frames: &mut Frames) -> io::Result<()> {
        self.send(frames)?;
        self.sender.gate().ready().await;
        match self.sender.is_closed() {
            true => Err(closed()),
            false => Ok(()),
        }
    }

    /// Hands over `frames`, writes everything and ends the writer; the first error of the
    /// output, if any.
    pub async fn close(self, frames: &mut Frames) -> io::Result<()> {
        let sent = self.send(frames);
        self.sender.finish();
        let written = match self.task.await {
            Ok(result) => result,
            Err(err) => Err(io::Error::other(err)),
        };
        written.and(sent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    struct Broken;

    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::new(io::ErrorKind::BrokenPipe, "gone"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn lines_are_written_in_order_and_a_broken_stdout_is_an_error() {
        let out = Shared::default();
        let stdout = Stdout::start(Box::new(out.clone()));
        let mut frames = Frames::new();
        frames.push_line(b"one");
        stdout.send_and_wait(&mut frames).await.expect("written");
        assert_eq!(out.0.lock().expect("lock").as_slice(), b"one\n");
        frames.push_line(b"two");
        stdout.close(&mut frames).await.expect("closed");
        assert_eq!(out.0.lock().expect("lock").as_slice(), b"one\ntwo\n");

        let stdout = Stdout::start(Box::new(Broken));
        frames.push_line(b"lost");
        assert!(stdout.send_and_wait(&mut frames).await.is_err());
        assert!(stdout.close(&mut frames).await.is_err());
    }
}
