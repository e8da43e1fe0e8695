use std::path::{Path, PathBuf};

use super::*;
use crate::event::AgentEvent;
use crate::permission::{Assessment, Permission, PermissionAction, PermissionMode};

fn support(abi: Option<u32>, seccomp: bool) -> SandboxSupport {
    SandboxSupport {
        landlock_abi: abi,
        seccomp,
        reason: abi.is_none().then(|| "simulated".to_string()),
    }
}

#[test]
fn flag_values_parse_and_bad_ones_name_the_flag() {
    assert_eq!("read-only".parse(), Ok(SandboxMode::ReadOnly));
    assert_eq!("danger-full-access".parse(), Ok(SandboxMode::Off));
    assert_eq!("allow".parse(), Ok(NetworkAccess::Allow));
    assert_eq!("refuse".parse(), Ok(SandboxFallback::Refuse));
    let err = "open".parse::<NetworkAccess>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid --sandbox-network value \"open\": expected allow or deny"
    );
    let policy = SandboxPolicy::from_flags(Some("off"), None, [""; 0], None).unwrap();
    assert_eq!(policy.network, NetworkAccess::Allow);
    let policy = SandboxPolicy::from_flags(None, Some("allow"), ["x"], Some("refuse")).unwrap();
    assert_eq!(policy.mode, SandboxMode::WorkspaceWrite);
    assert_eq!(policy.network, NetworkAccess::Allow);
    assert_eq!(policy.fallback, SandboxFallback::Refuse);
    assert_eq!(
        policy.writable_roots_in(Path::new("/ws")),
        [PathBuf::from("/ws"), PathBuf::from("/ws/x")]
    );
    assert!(SandboxPolicy::read_only()
        .writable_roots_in(Path::new("/ws"))
        .is_empty());
}

#[test]
fn report_grades_what_the_kernel_enforces() {
    let ww = SandboxPolicy::workspace_write();
    let full = SandboxReport::new(&ww, Some(&support(Some(7), true)));
    assert_eq!(full.enforced, Enforcement::Full);
    assert_eq!(full.network_filter, NetworkFilter::SeccompAndLandlockTcp);
    assert_eq!(full.reason, None);
    assert!(!full.fallback_active);

    let old = SandboxReport::new(&ww, Some(&support(Some(2), true)));
    assert_eq!(old.enforced, Enforcement::Partial);
    assert_eq!(old.network_filter, NetworkFilter::Seccomp);
    assert!(!old.fallback_active);

    let tcp_only = SandboxReport::new(&ww, Some(&support(Some(5), false)));
    assert_eq!(tcp_only.enforced, Enforcement::Partial);
    assert_eq!(tcp_only.network_filter, NetworkFilter::LandlockTcp);
    assert!(!tcp_only.fallback_active);

    let none = SandboxReport::new(&ww, Some(&support(None, false)));
    assert_eq!(none.enforced, Enforcement::None);
    assert!(none.fallback_active);
    assert!(
        none.summary().contains("fallback prompt"),
        "{}",
        none.summary()
    );
    assert!(none.reason.as_deref().unwrap().contains("simulated"));

    let seccomp_only = SandboxReport::new(&ww, Some(&support(None, true)));
    assert_eq!(seccomp_only.enforced, Enforcement::Partial);
    assert!(seccomp_only.fallback_active);

    let open = ww.clone().network(NetworkAccess::Allow);
    let no_landlock = SandboxReport::new(&open, Some(&support(None, true)));
    assert_eq!(no_landlock.enforced, Enforcement::None);
    assert_eq!(no_landlock.network_filter, NetworkFilter::None);

    let no_tools = SandboxReport::new(&ww, None);
    assert_eq!(no_tools.enforced, Enforcement::None);
    assert!(!no_tools.fallback_active);

    let off = SandboxReport::new(&SandboxPolicy::off(), Some(&support(Some(7), true)));
    assert_eq!(off.enforced, Enforcement::None);
    assert!(!off.fallback_active);
}

#[test]
fn escalations_always_ask_except_in_plan_mode() {
    let a = Assessment::default();
    for mode in [
        PermissionMode::Unsafe,
        PermissionMode::Auto,
        PermissionMode::Ask,
    ] {
        let v = decide_escalation(mode, Permission::Prompt, &a);
        assert_eq!(v.action, PermissionAction::Prompt, "{mode}");
        assert!(!v.granted);
    }
    let plan = decide_escalation(PermissionMode::Plan, Permission::Prompt, &a);
    assert_eq!(plan.action, PermissionAction::Deny);
    let denied = decide_escalation(PermissionMode::Unsafe, Permission::Deny, &a);
    assert_eq!(denied.action, PermissionAction::Deny);
}

#[test]
fn the_report_serialises_with_flag_values() {
    let report = SandboxReport::new(&SandboxPolicy::read_only(), Some(&support(Some(7), true)));
    let json = serde_json::to_value(AgentEvent::SandboxReport(report)).unwrap();
    assert_eq!(json["type"], "sandbox_report");
    assert_eq!(json["mode"], "read-only");
    assert_eq!(json["network"], "deny");
    assert_eq!(json["enforced"], "full");
    assert_eq!(json["landlock_abi"], 7);
    assert_eq!(json["network_filter"], "seccomp_and_landlock_tcp");
    assert_eq!(json["fallback"], "prompt");
}
