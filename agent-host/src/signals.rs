//! SIGTERM and SIGINT, once for every front end: [`termination`] resolves on the first of
//! them; each front end keeps its own exit behaviour ([`die_of`] ends the process as killed
//! by the signal, as zut does; [`Signal::exit_code`] is the shell's code for it, which
//! Zero's exec exits with).

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

    /// The signal's name (`SIGTERM`, `SIGINT`).
    pub fn name(self) -> &'static str {
        match self {
            Signal::Term => "SIGTERM",
            Signal::Int => "SIGINT",
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

/// Why the handlers could not be installed.
#[derive(Debug, thiserror::Error)]
#[error("cannot install signal handlers: {0}")]
pub struct SignalError(#[source] std::io::Error);

/// Installs SIGTERM and SIGINT handlers now (call it inside a tokio runtime) and returns a
/// future resolving to the first of them to arrive, or why the handlers could not be
/// installed (then the default actions still end the process).
pub fn try_termination() -> Result<impl Future<Output = Signal> + Send + 'static, SignalError> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).map_err(SignalError)?;
        let mut int = signal(SignalKind::interrupt()).map_err(SignalError)?;
        Ok(async move {
            tokio::select! {
                _ = term.recv() => Signal::Term,
                _ = int.recv() => Signal::Int,
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async move {
            match tokio::signal::ctrl_c().await {
                Ok(()) => Signal::Int,
                Err(_) => std::future::pending().await,
            }
        })
    }
}

/// [`try_termination`], with a future that never resolves when the handlers cannot be
/// installed (`on_error` is told why, at once).
pub fn termination_or(
    on_error: impl FnOnce(&SignalError),
) -> impl Future<Output = Signal> + Send + 'static {
    let handlers = try_termination();
    if let Err(err) = &handlers {
        on_error(err);
    }
    async move {
        match handlers {
            Ok(signal) => signal.await,
            Err(_) => std::future::pending().await,
        }
    }
}

/// [`try_termination`], with a future that never resolves when the handlers cannot be
/// installed (logged as a warning).
pub fn termination() -> impl Future<Output = Signal> + Send + 'static {
    termination_or(|err| tracing::warn!("{err}"))
}

/// Ends the process as killed by `signal` (the default action, restored and raised again);
/// where that is not possible, exits with the shell's code for it.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_the_shells() {
        assert_eq!(Signal::Term.exit_code(), 143);
        assert_eq!(Signal::Int.exit_code(), 130);
        assert_eq!(Signal::Term.name(), "SIGTERM");
        #[cfg(unix)]
        assert_eq!(
            i32::from(Signal::Int.exit_code()),
            128 + Signal::Int.number()
        );
    }
}
