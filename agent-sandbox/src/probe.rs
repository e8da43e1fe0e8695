//! What the running kernel lets the sandbox enforce.

use std::sync::OnceLock;

use agent_core::sandbox::SandboxSupport;

/// What the kernel supports, probed once per process (see [`probe_kernel`]).
pub fn probe() -> SandboxSupport {
    static SUPPORT: OnceLock<SandboxSupport> = OnceLock::new();
    SUPPORT.get_or_init(probe_kernel).clone()
}

/// Probes the kernel now: the Landlock ABI (`landlock_create_ruleset` with the version
/// flag) and whether a seccomp filter with an errno action can be installed (and the
/// network filter compiles for this architecture).
pub fn probe_kernel() -> SandboxSupport {
    #[cfg(target_os = "linux")]
    {
        support_from(landlock_abi(), seccomp())
    }
    #[cfg(not(target_os = "linux"))]
    {
        SandboxSupport::unavailable("the OS sandbox (Landlock, seccomp) is Linux-only")
    }
}

/// The support for the outcomes of the two probes: the Landlock ABI or the `errno` of
/// `landlock_create_ruleset`, and whether seccomp works (or why not). Public so hosts and
/// tests can describe a kernel that fails a probe.
pub fn support_from(landlock: Result<u32, i32>, seccomp: Result<(), String>) -> SandboxSupport {
    let mut reasons = Vec::new();
    let landlock_abi = match landlock {
        Ok(abi) if abi >= 1 => Some(abi),
        Ok(abi) => {
            reasons.push(format!("Landlock reported ABI {abi}"));
            None
        }
        Err(errno) => {
            reasons.push(landlock_error(errno));
            None
        }
    };
    let seccomp = match seccomp {
        Ok(()) => true,
        Err(why) => {
            reasons.push(format!("seccomp unavailable: {why}"));
            false
        }
    };
    SandboxSupport {
        landlock_abi,
        seccomp,
        reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
    }
}

fn landlock_error(errno: i32) -> String {
    #[cfg(unix)]
    {
        match errno {
            libc::ENOSYS => "Landlock is not built into this kernel (ENOSYS)".to_string(),
            libc::EOPNOTSUPP => {
                "Landlock is built in but not enabled at boot (EOPNOTSUPP; add landlock to the \
                 lsm= kernel parameter)"
                    .to_string()
            }
            libc::EPERM => "Landlock system calls are blocked here, e.g. by a container's \
                            seccomp profile (EPERM)"
                .to_string(),
            other => format!(
                "Landlock probe failed: {}",
                std::io::Error::from_raw_os_error(other)
            ),
        }
    }
    #[cfg(not(unix))]
    {
        format!("Landlock probe failed (error {errno})")
    }
}

#[cfg(target_os = "linux")]
fn landlock_abi() -> Result<u32, i32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute and size 0 the call only returns the ABI version.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if abi < 0 {
        return Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::ENOSYS));
    }
    u32::try_from(abi).map_err(|_| libc::EINVAL)
}

#[cfg(target_os = "linux")]
fn seccomp() -> Result<(), String> {
    // SAFETY: PR_GET_SECCOMP takes no pointer; EINVAL means seccomp is not built in.
    if unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) } < 0 {
        return Err(format!(
            "not built into this kernel ({})",
            std::io::Error::last_os_error()
        ));
    }
    let action: u32 = libc::SECCOMP_RET_ERRNO;
    // SAFETY: SECCOMP_GET_ACTION_AVAIL reads one u32 from the pointer.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_ACTION_AVAIL,
            0 as libc::c_uint,
            &action as *const u32,
        )
    };
    if rc != 0 {
        return Err(format!(
            "filters with an errno action are not available ({})",
            std::io::Error::last_os_error()
        ));
    }
    crate::linux::network_filter()
        .map(|_| ())
        .map_err(|e| format!("the network filter does not build here: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_probes_say_why() {
        let none = support_from(Err(libc::EOPNOTSUPP), Err("test".to_string()));
        assert_eq!(none.landlock_abi, None);
        assert!(!none.seccomp);
        let reason = none.reason.unwrap();
        assert!(reason.contains("not enabled at boot"), "{reason}");
        assert!(reason.contains("seccomp unavailable: test"), "{reason}");
        let nosys = support_from(Err(libc::ENOSYS), Ok(()));
        assert!(nosys.reason.unwrap().contains("not built into this kernel"));
        let fine = support_from(Ok(4), Ok(()));
        assert_eq!(fine.landlock_abi, Some(4));
        assert!(fine.seccomp && fine.reason.is_none());
    }
}
