//! The process group of a started command, killed as a whole.

/// Kills a command's process group (the command and everything it started that did not
/// leave the group) when dropped, unless disarmed. [`crate::prepare`] puts the command in a
/// group of its own, whose id is the command's pid.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: Option<i32>,
}

impl ProcessGroup {
    /// The group of `child` (started after [`crate::prepare`]); empty when it has no pid
    /// any more.
    pub fn of(child: &tokio::process::Child) -> Self {
        Self::from_pid(child.id())
    }

    /// The group led by `pid` (e.g. from [`std::process::Child::id`]).
    pub fn from_pid(pid: Option<u32>) -> Self {
        Self {
            pgid: pid
                .and_then(|pid| i32::try_from(pid).ok())
                .filter(|p| *p > 0),
        }
    }

    /// The group id, while armed.
    pub fn id(&self) -> Option<i32> {
        self.pgid
    }

    /// Sends SIGKILL to every process of the group (nothing once disarmed). A group that is
    /// already gone is not an error.
    pub fn kill(&self) {
        #[cfg(unix)]
        if let Some(pgid) = self.pgid {
            // SAFETY: killpg has no memory-safety preconditions; a stale group id only
            // yields ESRCH, which is ignored.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }

    /// Stops the guard from killing on drop (after the group was reaped and killed, so a
    /// recycled id is never signalled).
    pub fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}
