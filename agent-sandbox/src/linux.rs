//! Linux enforcement: the Landlock ruleset and the seccomp filter, built in the parent and
//! applied in the child between fork and exec.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use agent_core::sandbox::{NetworkAccess, SandboxPolicy, SandboxSupport};
use landlock::{
    Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};

use crate::{Confinement, SandboxError};

/// Device files a confined command may read and write (they are not writable roots).
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// What the child applies to itself before exec.
struct ChildSetup {
    ruleset: Option<OwnedFd>,
    filter: Option<&'static [libc::sock_filter]>,
}

impl ChildSetup {
    /// Runs in the forked child: system calls only, no allocation, no locks.
    fn apply(&self) -> io::Result<()> {
        // SAFETY: prctl with integer arguments; required before an unprivileged
        // landlock_restrict_self or seccomp filter, and inherited by everything exec'd.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if let Some(ruleset) = &self.ruleset {
            // SAFETY: the fd is a Landlock ruleset created in the parent and still open.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_landlock_restrict_self,
                    ruleset.as_raw_fd(),
                    0 as libc::c_uint,
                )
            };
            if rc != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        if let Some(filter) = self.filter {
            let prog = libc::sock_fprog {
                // The program is a few dozen instructions (checked when it was built).
                len: filter.len() as libc::c_ushort,
                filter: filter.as_ptr().cast_mut(),
            };
            // SAFETY: the kernel copies the program; `prog` and the static filter outlive
            // the call.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0 as libc::c_uint,
                    &prog as *const libc::sock_fprog,
                )
            };
            if rc != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// Builds what `policy` needs on a kernel with `support` and installs it in `cmd`.
pub(crate) fn confine(
    cmd: &mut std::process::Command,
    policy: &SandboxPolicy,
    support: &SandboxSupport,
    writable: Vec<PathBuf>,
) -> Result<Confinement, SandboxError> {
    let deny_network = policy.network == NetworkAccess::Deny;
    let mut confinement = Confinement::none(policy.mode, policy.network);
    let ruleset = match support.landlock_abi {
        Some(abi) => {
            let abi = ABI::from(i32::try_from(abi).unwrap_or(i32::MAX));
            let fd =
                ruleset(abi, deny_network, &writable).map_err(|message| SandboxError::Setup {
                    context: "Landlock ruleset".to_string(),
                    message,
                })?;
            confinement.landlock = true;
            confinement.landlock_tcp = deny_network && abi >= ABI::V4;
            confinement.writable = writable;
            Some(fd)
        }
        None => None,
    };
    let filter = match (deny_network, support.seccomp) {
        (true, true) => {
            let filter = network_filter().map_err(|message| SandboxError::Setup {
                context: "seccomp filter".to_string(),
                message: message.clone(),
            })?;
            confinement.seccomp = true;
            Some(filter)
        }
        _ => None,
    };
    if ruleset.is_some() || filter.is_some() {
        let setup = ChildSetup { ruleset, filter };
        // SAFETY: `apply` only makes async-signal-safe system calls on data built before
        // the fork (see `ChildSetup::apply`).
        unsafe {
            cmd.pre_exec(move || setup.apply());
        }
    }
    Ok(confinement)
}

/// The Landlock ruleset: read (and execute) everywhere, write under `writable` and to the
/// devices; with `deny_network`, no TCP bind or connect; signals (and, with
/// `deny_network`, abstract Unix sockets) scoped to the sandbox.
fn ruleset(abi: ABI, deny_network: bool, writable: &[PathBuf]) -> Result<OwnedFd, String> {
    let all = AccessFs::from_all(abi);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)
        .map_err(|e| e.to_string())?;
    if deny_network && abi >= ABI::V4 {
        // Handled with no rule: every TCP bind and connect is refused.
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(|e| e.to_string())?;
    }
    if abi >= ABI::V6 {
        let scopes = match deny_network {
            true => Scope::from_all(abi),
            false => Scope::Signal.into(),
        };
        ruleset = ruleset.scope(scopes).map_err(|e| e.to_string())?;
    }
    let mut created = ruleset.create().map_err(|e| e.to_string())?;
    created = created
        .add_rule(PathBeneath::new(
            open(Path::new("/"))?,
            AccessFs::from_read(abi),
        ))
        .map_err(|e| e.to_string())?;
    for device in DEVICES {
        let path = Path::new(device);
        if path.exists() {
            created = created
                .add_rule(PathBeneath::new(open(path)?, AccessFs::from_file(abi)))
                .map_err(|e| format!("{device}: {e}"))?;
        }
    }
    for root in writable {
        created = created
            .add_rule(PathBeneath::new(open(root)?, all))
            .map_err(|e| format!("{}: {e}", root.display()))?;
    }
    Option::<OwnedFd>::from(created)
        .ok_or_else(|| "the kernel did not create a Landlock ruleset".to_string())
}

fn open(path: &Path) -> Result<PathFd, String> {
    PathFd::new(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The seccomp program refusing non-Unix sockets and io_uring, built once per process.
pub(crate) fn network_filter() -> Result<&'static [libc::sock_filter], &'static String> {
    static FILTER: OnceLock<Result<Vec<libc::sock_filter>, String>> = OnceLock::new();
    FILTER
        .get_or_init(build_network_filter)
        .as_ref()
        .map(Vec::as_slice)
}

fn build_network_filter() -> Result<Vec<libc::sock_filter>, String> {
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let not_unix = || -> Result<Vec<SeccompRule>, String> {
        let condition = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )
        .map_err(|e| e.to_string())?;
        Ok(vec![
            SeccompRule::new(vec![condition]).map_err(|e| e.to_string())?
        ])
    };
    let rules = [
        (libc::SYS_socket, not_unix()?),
        (libc::SYS_socketpair, not_unix()?),
        // io_uring can open sockets without the socket system call.
        (libc::SYS_io_uring_setup, Vec::new()),
    ]
    .into_iter()
    .collect();
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    if program.is_empty() || program.len() > usize::from(u16::MAX) {
        return Err(format!("unexpected filter length {}", program.len()));
    }
    Ok(program
        .into_iter()
        .map(|i| libc::sock_filter {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect())
}
