//! SIGTERM and SIGINT, the way zut ends on them.
//!
//! zut installs no handler in RPC mode, so Go's default applies: the process dies of the
//! signal (a shell reports 143 for SIGTERM, 130 for SIGINT; a parent's `wait` sees "killed
//! by signal"). We end the same way, after cleaning up: [`termination`] resolves on the
//! first of the two signals; the server then stops reading, aborts the active prompt (its
//! tools' process groups are killed) and writes its last events (`tool_result`,
//! `turn_end`, `done`), drops queued prompts, and flushes stdout; `main` shuts the MCP
//! servers down and calls [`die_of`], which restores the default action and raises the
//! signal again.

use std::future::Future;

/// A termination signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGTERM.
    Term,
    /// SIGINT.
    Int,
}

impl Signal {
    /// The signal number.
    #[cfg(unix)]
    pub fn number(self) -> i32 {
        match self {
            Signal::Term => libc::SIGTERM,
            Signal::Int => libc::SIGINT,
        }
    }

    /// The exit code a shell reports for a process killed by this signal (128 + number).
    pub fn exit_code(self) -> u8 {
        match self {
            Signal::Term => 143,
            Signal::Int => 130,
        }
    }
}

/// Installs SIGTERM and SIGINT handlers now (call it inside a tokio runtime) and returns a
/// future resolving to the first of them to arrive (never, when the handlers cannot be
/// installed: then the default action still ends the process).
pub fn termination() -> impl Future<Output = Signal> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let handlers = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        );
        async move {
            match handlers {
                (Ok(mut term), Ok(mut int)) => tokio::select! {
                    _ = term.recv() => Signal::Term,
                    _ = int.recv() => Signal::Int,
                },
                _ => {
                    eprintln!("adapter-rpc: warning: cannot install signal handlers");
                    std::future::pending().await
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async move {
            match tokio::signal::ctrl_c().await {
                Ok(()) => Signal::Int,
                Err(_) => std::future::pending().await,
            }
        }
    }
}

/// Ends the process as killed by `signal`, as zut is (the default action, restored and
/// raised again); where that is not possible, exits with the shell's code for it.
pub fn die_of(signal: Signal) -> ! {
    #[cfg(unix)]
    {
        // SAFETY: restoring the default disposition of a signal and raising it are plain
        // libc calls with valid arguments; nothing else runs after them.
        unsafe {
            libc::signal(signal.number(), libc::SIG_DFL);
            libc::raise(signal.number());
        }
    }
    std::process::exit(i32::from(signal.exit_code()))
}
