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

/// Readies `cmd` to start a long-lived helper server (a language server, an MCP server):
/// its own process group (hold a [`ProcessGroup`] of the child to kill it whole),
/// `kill_on_drop`, and on Linux `SIGKILL` for the server when this process dies without
/// running destructors (`PR_SET_PDEATHSIG`), so it is never left orphaned.
pub fn prepare_server(cmd: &mut tokio::process::Command) {
    cmd.kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    #[cfg(target_os = "linux")]
    {
        let parent = std::process::id();
        // SAFETY: the closure runs in the child between fork and exec and calls only
        // async-signal-safe functions (prctl, getppid, _exit); it allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                // Die with the parent even if it is killed before it can kill the group.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent may have died before prctl took effect.
                if u32::try_from(libc::getppid()).ok() != Some(parent) {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_server_leads_its_own_group_and_the_group_is_killed() {
        let mut cmd = tokio::process::Command::new("sleep");
        cmd.arg("30");
        prepare_server(&mut cmd);
        let mut child = cmd.spawn().expect("sleep starts");
        let pid = child.id().expect("a pid") as i32;
        // SAFETY: getpgid has no memory-safety preconditions.
        assert_eq!(unsafe { libc::getpgid(pid) }, pid);
        let group = ProcessGroup::of(&child);
        drop(group);
        let status = tokio::time::timeout(std::time::Duration::from_secs(10), child.wait())
            .await
            .expect("killed in time")
            .expect("reaped");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
    }
}
