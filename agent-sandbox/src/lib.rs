//! The OS sandbox for the processes an agent starts on the model's behalf.
//!
//! [`prepare`] readies a [`tokio::process::Command`] for a [`SandboxContext`] (the policy of
//! [`agent_core::sandbox`] plus what the kernel supports): the child gets its own process
//! group, and on Linux it is confined between fork and exec with
//!
//! - **Landlock**: reads everywhere, writes only under the writable roots (the workspace in
//!   `workspace-write`, the extra roots, a private temp dir exported as `$TMPDIR`) and to a few
//!   devices such as `/dev/null`; with the network denied, TCP bind and connect are refused
//!   (ABI 4 and later); signals and abstract Unix sockets are scoped to the sandbox (ABI 6);
//! - **seccomp**: with the network denied, creating any socket but a Unix one is refused
//!   (`EACCES`), which covers UDP and raw sockets too, and so is `io_uring_setup`.
//!
//! The rulesets and the filter are built before the fork; the child only makes the
//! `prctl`/`landlock_restrict_self`/`seccomp` system calls (async-signal-safe). Children of a
//! confined command inherit the confinement; nothing needs root or a setuid helper.
//!
//! [`probe`] says what the kernel supports, [`ProcessGroup`] kills the command's whole group
//! (on timeout, cancel, drop), and [`Confinement::find_denial`] reads a confined command's
//! output for what the sandbox refused, which [`Denial::block`] turns into the
//! [`agent_core::permission::Block`] of the tool result.
//!
//! ```no_run
//! use agent_core::sandbox::{SandboxContext, SandboxPolicy};
//! use agent_sandbox::{prepare, ProcessGroup, Roots};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let sandbox = SandboxContext::new(SandboxPolicy::workspace_write());
//! let roots = Roots::new("/path/to/workspace");
//! let mut cmd = tokio::process::Command::new("bash");
//! cmd.arg("-c").arg("make test").current_dir(&roots.workspace);
//! let confinement = prepare(&mut cmd, &sandbox, &roots)?;
//! let child = cmd.spawn()?;
//! let group = ProcessGroup::of(&child); // kills the whole group when dropped
//! let output = child.wait_with_output().await?;
//! drop(group);
//! let stderr = String::from_utf8_lossy(&output.stderr);
//! if let Some(denial) = confinement.find_denial(&stderr, &roots.workspace) {
//!     println!("{}", denial.block("make").reason);
//! }
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

use std::path::{Path, PathBuf};

use agent_core::sandbox::SandboxReport;
use agent_core::sandbox::{NetworkAccess, SandboxContext, SandboxFallback, SandboxMode};

mod denial;
mod group;
#[cfg(target_os = "linux")]
mod linux;
mod probe;
mod tmp;

pub use denial::{Denial, DenialKind};
pub use group::{prepare_server, ProcessGroup};
pub use probe::{probe, probe_kernel, support_from};
pub use tmp::PrivateTmp;

/// Where a confined command may write besides the policy's own extra roots.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Roots {
    /// The workspace: writable in `workspace-write`.
    pub workspace: PathBuf,
    /// More roots writable in `workspace-write` (e.g. the file tools' extra roots).
    pub extra: Vec<PathBuf>,
    /// The private temp dir: writable in every confining mode (when the policy wants one)
    /// and exported as `$TMPDIR`.
    pub tmp: Option<PathBuf>,
}

impl Roots {
    /// Roots for `workspace`, with no extra roots and no temp dir.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            extra: Vec::new(),
            tmp: None,
        }
    }

    /// Adds an extra writable root.
    pub fn extra_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.extra.push(root.into());
        self
    }

    /// Sets the private temp dir.
    pub fn tmp(mut self, tmp: impl Into<PathBuf>) -> Self {
        self.tmp = Some(tmp.into());
        self
    }
}

/// The sandbox could not be applied to a command.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The kernel cannot enforce the policy and its fallback is `refuse`.
    #[error(
        "the OS sandbox cannot be enforced here ({reason}); commands are refused \
         (sandbox fallback: refuse)"
    )]
    Refused {
        /// What cannot be enforced.
        reason: String,
    },
    /// Building the Landlock ruleset or the seccomp filter failed.
    #[error("setting up the sandbox ({context}): {message}")]
    Setup {
        /// What was being set up.
        context: String,
        /// The underlying error.
        message: String,
    },
}

/// What [`prepare`] applied to a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confinement {
    mode: SandboxMode,
    network: NetworkAccess,
    writable: Vec<PathBuf>,
    landlock: bool,
    landlock_tcp: bool,
    seccomp: bool,
}

impl Confinement {
    /// Nothing applied (the sandbox is off, or nothing could be enforced).
    pub fn none(mode: SandboxMode, network: NetworkAccess) -> Self {
        Self {
            mode,
            network,
            writable: Vec::new(),
            landlock: false,
            landlock_tcp: false,
            seccomp: false,
        }
    }

    /// The policy's mode.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// True when anything confines the command.
    pub fn is_confined(&self) -> bool {
        self.landlock || self.seccomp
    }

    /// True when Landlock restricts the command's writes.
    pub fn filesystem_confined(&self) -> bool {
        self.landlock
    }

    /// True when something keeps the command off the network.
    pub fn network_filtered(&self) -> bool {
        self.seccomp || self.landlock_tcp
    }

    /// The roots the command may write under (symlinks resolved), when Landlock applies.
    pub fn writable_roots(&self) -> &[PathBuf] {
        &self.writable
    }

    /// The confinement in words, for the model: `workspace-write sandbox: writes only
    /// under /ws, /tmp/agent-sandbox-1; network denied`.
    pub fn describe(&self) -> String {
        if !self.is_confined() {
            return match self.mode {
                SandboxMode::Off => "no sandbox".to_string(),
                _ => format!("{} sandbox, not enforced on this kernel", self.mode),
            };
        }
        let mut text = format!("{} sandbox: ", self.mode);
        if self.landlock {
            if self.writable.is_empty() {
                text.push_str("no writes outside /dev/null");
            } else {
                let roots: Vec<String> = self
                    .writable
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect();
                text.push_str(&format!("writes only under {}", roots.join(", ")));
            }
        } else {
            text.push_str("writes not restricted");
        }
        text.push_str(match (self.network, self.network_filtered()) {
            (NetworkAccess::Allow, _) => "; network allowed",
            (NetworkAccess::Deny, true) => "; network denied",
            (NetworkAccess::Deny, false) => "; network not filtered on this kernel",
        });
        text
    }

    /// The first thing in `output` (a confined command's stdout or stderr) that reads as a
    /// sandbox refusal: a write outside the writable roots (relative paths resolve against
    /// `cwd`), or a refused socket or connection. Paths the user could not write without the
    /// sandbox either are not counted.
    pub fn find_denial(&self, output: &str, cwd: &Path) -> Option<Denial> {
        denial::find(self, output, cwd)
    }
}

/// Readies `cmd` for `sandbox`: its own process group, `kill_on_drop`, and on Linux the
/// Landlock ruleset and seccomp filter applied in the child (see the crate docs). Returns
/// what will be applied. With the sandbox off only the process group is set.
///
/// What the kernel supports comes from `sandbox.support`, or from [`probe`] when that is
/// `None`; only what it says is available is applied. When a part of the policy cannot be
/// enforced at all, a `refuse` fallback fails here with [`SandboxError::Refused`]; `prompt`
/// (which the agent's permission gate asked about already) and `allow` go on with what is
/// available.
pub fn prepare(
    cmd: &mut tokio::process::Command,
    sandbox: &SandboxContext,
    roots: &Roots,
) -> Result<Confinement, SandboxError> {
    cmd.kill_on_drop(true);
    prepare_std(cmd.as_std_mut(), sandbox, roots)
}

/// [`prepare`] for a [`std::process::Command`] (no `kill_on_drop` there: hold a
/// [`ProcessGroup`]).
pub fn prepare_std(
    cmd: &mut std::process::Command,
    sandbox: &SandboxContext,
    roots: &Roots,
) -> Result<Confinement, SandboxError> {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    confine_std(cmd, sandbox, roots)
}

/// [`prepare`] for a command on a pseudo-terminal: the child leads a session of its own
/// (`setsid`, so its process group id is its pid, as with [`prepare`]) and makes the
/// terminal on its standard input its controlling terminal, so the terminal's line
/// discipline delivers Ctrl-C to it; on Linux it is also killed when the thread that spawned
/// it exits (`PR_SET_PDEATHSIG`), so it cannot outlive the agent's process. Then the sandbox
/// is applied as [`prepare`] does. Set the command's standard input to the terminal before
/// spawning it.
pub fn prepare_session(
    cmd: &mut tokio::process::Command,
    sandbox: &SandboxContext,
    roots: &Roots,
) -> Result<Confinement, SandboxError> {
    cmd.kill_on_drop(true);
    #[cfg(unix)]
    {
        // SAFETY: setsid and ioctl are async-signal-safe system calls; the closure touches
        // no memory of the parent. It runs before the sandbox's own pre-exec steps.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                // A process that outlives the agent (which exited without dropping it) is
                // killed with it.
                #[cfg(target_os = "linux")]
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::isatty(0) == 1 && libc::ioctl(0, libc::TIOCSCTTY as _, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    confine_std(cmd.as_std_mut(), sandbox, roots)
}

/// The sandbox part of [`prepare_std`] and [`prepare_session`].
fn confine_std(
    cmd: &mut std::process::Command,
    sandbox: &SandboxContext,
    roots: &Roots,
) -> Result<Confinement, SandboxError> {
    let policy = &sandbox.policy;
    if !policy.confines() {
        return Ok(Confinement::none(policy.mode, policy.network));
    }
    let support = sandbox.support.clone().unwrap_or_else(probe);
    let report = SandboxReport::new(policy, Some(&support));
    if report.fallback_active && policy.fallback == SandboxFallback::Refuse {
        return Err(SandboxError::Refused {
            reason: report
                .reason
                .unwrap_or_else(|| "the kernel cannot enforce it".to_string()),
        });
    }
    let tmp = roots.tmp.as_ref().filter(|_| policy.private_tmp);
    let mut writable = policy.writable_roots_in(&roots.workspace);
    if policy.mode == SandboxMode::WorkspaceWrite {
        writable.extend(roots.extra.iter().cloned());
    }
    writable.extend(tmp.cloned());
    let writable = canonical_roots(writable);
    if let Some(tmp) = tmp {
        cmd.env("TMPDIR", tmp);
    }
    #[cfg(target_os = "linux")]
    {
        linux::confine(cmd, policy, &support, writable)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = writable;
        Ok(Confinement::none(policy.mode, policy.network))
    }
}

/// Existing roots with symlinks resolved, without duplicates.
fn canonical_roots(roots: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::with_capacity(roots.len());
    for root in roots {
        if let Ok(root) = std::fs::canonicalize(&root) {
            if !out.contains(&root) {
                out.push(root);
            }
        }
    }
    out
}
