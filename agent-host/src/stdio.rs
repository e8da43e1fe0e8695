//! The process's stdin and stdout as a stdio server's async input and output: [`stdin`],
//! [`stdout`].
//!
//! A pipe or a Unix socket (what an editor or a script connects a stdio server with) is read
//! and written through the runtime's reactor: no thread waits on it, and no read or write is
//! handed to the blocking pool. tokio's own [`Stdin`](tokio::io::Stdin) and
//! [`Stdout`](tokio::io::Stdout) hand every read and write to a blocking-pool thread, because
//! they cannot assume anything about the file; here, a server that answers three requests
//! and streams one turn saves those hand-offs and the threads they start (benches/README.md,
//! "stdio through the reactor").
//!
//! For that the pipe or socket is put in non-blocking mode, which belongs to its open file
//! description: anyone sharing it sees the mode too. A stdio server's protocol channel is
//! its own, so that is safe as long as this process does not share it with itself; it is
//! put back in the mode it was found in when the [`Input`] or [`Output`] is dropped (a
//! process killed outright, by SIGKILL, cannot put it back).
//! Everything else goes through tokio's blocking-thread stdin and stdout, as before: a
//! file or a terminal (a terminal's mode is shared with the shell that started us), a
//! stdout that is also this process's stderr (`2>&1`: a log line must never meet a full pipe
//! in non-blocking mode), a stdin that is also its stdout or stderr (one socket for both
//! directions), and every platform but Unix.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The process's stdin for async reading: see the [module docs](self).
///
/// Must be called inside a Tokio runtime with I/O enabled (outside one, it falls back to
/// tokio's blocking-thread stdin).
pub fn stdin() -> Input {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let (out, err) = (io::stdout(), io::stderr());
        if let Some((kind, restore)) = unix::input(io::stdin().as_fd(), &[out.as_fd(), err.as_fd()])
        {
            return Input {
                kind,
                _restore: Some(restore),
            };
        }
    }
    Input {
        kind: InputKind::Blocking(tokio::io::stdin()),
        #[cfg(unix)]
        _restore: None,
    }
}

/// The process's stdout for async writing: see the [module docs](self).
///
/// Must be called inside a Tokio runtime with I/O enabled (outside one, it falls back to
/// tokio's blocking-thread stdout).
pub fn stdout() -> Output {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let (input, err) = (io::stdin(), io::stderr());
        if let Some((kind, restore)) =
            unix::output(io::stdout().as_fd(), &[input.as_fd(), err.as_fd()])
        {
            return Output {
                kind,
                _restore: Some(restore),
            };
        }
    }
    Output {
        kind: OutputKind::Blocking(tokio::io::stdout()),
        #[cfg(unix)]
        _restore: None,
    }
}

/// The process's stdin as an [`AsyncRead`] (from [`stdin`]).
#[derive(Debug)]
pub struct Input {
    kind: InputKind,
    /// Gives the descriptor back in the mode it was found in (dropped after `kind`).
    #[cfg(unix)]
    _restore: Option<unix::Restore>,
}

#[derive(Debug)]
enum InputKind {
    #[cfg(unix)]
    Pipe(tokio::net::unix::pipe::Receiver),
    #[cfg(unix)]
    Socket(tokio::net::UnixStream),
    Blocking(tokio::io::Stdin),
}

impl Input {
    /// Whether it is read through the runtime's reactor (a pipe or a Unix socket), not on
    /// a blocking-pool thread.
    pub fn is_nonblocking(&self) -> bool {
        !matches!(self.kind, InputKind::Blocking(_))
    }
}

impl AsyncRead for Input {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().kind {
            #[cfg(unix)]
            InputKind::Pipe(pipe) => Pin::new(pipe).poll_read(cx, buf),
            #[cfg(unix)]
            InputKind::Socket(socket) => Pin::new(socket).poll_read(cx, buf),
            InputKind::Blocking(stdin) => Pin::new(stdin).poll_read(cx, buf),
        }
    }
}

/// The process's stdout as an [`AsyncWrite`] (from [`stdout`]). Shutting it down only
/// flushes: stdout stays open (as with tokio's stdout).
#[derive(Debug)]
pub struct Output {
    kind: OutputKind,
    /// Gives the descriptor back in the mode it was found in (dropped after `kind`).
    #[cfg(unix)]
    _restore: Option<unix::Restore>,
}

#[derive(Debug)]
enum OutputKind {
    #[cfg(unix)]
    Pipe(tokio::net::unix::pipe::Sender),
    #[cfg(unix)]
    Socket(tokio::net::UnixStream),
    Blocking(tokio::io::Stdout),
}

impl Output {
    /// Whether it is written through the runtime's reactor (a pipe or a Unix socket), not
    /// on a blocking-pool thread.
    pub fn is_nonblocking(&self) -> bool {
        !matches!(self.kind, OutputKind::Blocking(_))
    }

    fn writer(&mut self) -> Pin<&mut (dyn AsyncWrite + Unpin + Send)> {
        match &mut self.kind {
            #[cfg(unix)]
            OutputKind::Pipe(pipe) => Pin::new(pipe),
            #[cfg(unix)]
            OutputKind::Socket(socket) => Pin::new(socket),
            OutputKind::Blocking(stdout) => Pin::new(stdout),
        }
    }
}

impl AsyncWrite for Output {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().writer().poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().writer().poll_flush(cx)
    }

    /// Flushes only (a socket is not half-closed): stdout stays open.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().writer().poll_flush(cx)
    }
}

#[cfg(unix)]
mod unix {
    //! Telling pipes and Unix sockets apart, putting them in non-blocking mode and back.

    use std::fs::{File, Metadata};
    use std::io;
    use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
    use std::os::unix::fs::{FileTypeExt, MetadataExt};

    use super::{InputKind, OutputKind};

    /// What the reactor can drive.
    enum Kind {
        Pipe,
        Socket,
    }

    /// Puts a descriptor's open file description back in the mode it was found in, when
    /// dropped (through a descriptor of its own: the reader's or writer's is closed first).
    #[derive(Debug)]
    pub(super) struct Restore {
        fd: OwnedFd,
        flags: libc::c_int,
    }

    impl Drop for Restore {
        fn drop(&mut self) {
            if self.flags & libc::O_NONBLOCK == 0 {
                // SAFETY: F_SETFL on a descriptor this value owns (open until it is dropped).
                let _ = unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_SETFL, self.flags) };
            }
        }
    }

    fn flags(fd: BorrowedFd<'_>) -> io::Result<libc::c_int> {
        // SAFETY: F_GETFL only reads the flags of an open (borrowed) descriptor.
        let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
        if flags < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(flags)
    }

    /// `fd`'s kind, if the reactor can drive it and it is none of `others` (this process's
    /// other standard descriptors), with a descriptor of its own and the flags to restore.
    fn prepare(fd: BorrowedFd<'_>, others: &[BorrowedFd<'_>]) -> Option<(Kind, OwnedFd, Restore)> {
        // Registering with the reactor needs a runtime (tokio would panic without one).
        tokio::runtime::Handle::try_current().ok()?;
        let file = File::from(fd.try_clone_to_owned().ok()?);
        let meta = file.metadata().ok()?;
        let kind = match meta.file_type() {
            t if t.is_fifo() => Kind::Pipe,
            t if t.is_socket() => Kind::Socket,
            _ => return None,
        };
        if others.iter().any(|other| same_file(*other, &meta)) {
            return None;
        }
        let owned = OwnedFd::from(file);
        if let Kind::Socket = kind {
            // Unix sockets only: std refuses an address of another family.
            let probe = std::os::unix::net::UnixStream::from(owned.try_clone().ok()?);
            probe.local_addr().ok()?;
        }
        let restore = Restore {
            flags: flags(owned.as_fd()).ok()?,
            fd: owned.try_clone().ok()?,
        };
        Some((kind, owned, restore))
    }

    /// Whether `fd` is the file `meta` describes (the same pipe or socket).
    fn same_file(fd: BorrowedFd<'_>, meta: &Metadata) -> bool {
        fd.try_clone_to_owned()
            .and_then(|fd| File::from(fd).metadata())
            .is_ok_and(|other| other.dev() == meta.dev() && other.ino() == meta.ino())
    }

    fn socket(fd: OwnedFd) -> io::Result<tokio::net::UnixStream> {
        let socket = std::os::unix::net::UnixStream::from(fd);
        socket.set_nonblocking(true)?;
        tokio::net::UnixStream::from_std(socket)
    }

    /// `fd` as a reader through the reactor, or `None` (see the module docs).
    pub(super) fn input(
        fd: BorrowedFd<'_>,
        others: &[BorrowedFd<'_>],
    ) -> Option<(InputKind, Restore)> {
        let (kind, owned, restore) = prepare(fd, others)?;
        let kind = match kind {
            Kind::Pipe => {
                InputKind::Pipe(tokio::net::unix::pipe::Receiver::from_owned_fd(owned).ok()?)
            }
            Kind::Socket => InputKind::Socket(socket(owned).ok()?),
        };
        Some((kind, restore))
    }

    /// `fd` as a writer through the reactor, or `None` (see the module docs).
    pub(super) fn output(
        fd: BorrowedFd<'_>,
        others: &[BorrowedFd<'_>],
    ) -> Option<(OutputKind, Restore)> {
        let (kind, owned, restore) = prepare(fd, others)?;
        let kind = match kind {
            Kind::Pipe => {
                OutputKind::Pipe(tokio::net::unix::pipe::Sender::from_owned_fd(owned).ok()?)
            }
            Kind::Socket => OutputKind::Socket(socket(owned).ok()?),
        };
        Some((kind, restore))
    }

    /// Whether `fd`'s open file description is in non-blocking mode (for the tests).
    #[cfg(test)]
    pub(super) fn is_nonblocking(fd: BorrowedFd<'_>) -> bool {
        flags(fd).is_ok_and(|flags| flags & libc::O_NONBLOCK != 0)
    }
}

#[cfg(all(test, unix))]
mod tests;
