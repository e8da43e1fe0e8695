//! What the kernel supports, the report combining it with the policy, and the context tools
//! and hooks get.

use serde::{Deserialize, Serialize};

use super::policy::{
    NetworkAccess, SandboxEscalation, SandboxFallback, SandboxMode, SandboxPolicy,
};

/// What the running kernel lets an enforcer apply; probed by the enforcing crate.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SandboxSupport {
    /// Landlock ABI version, or `None` when Landlock is unavailable.
    pub landlock_abi: Option<u32>,
    /// Whether seccomp filters can be installed.
    pub seccomp: bool,
    /// Why something is missing, in words (e.g. "Landlock is not enabled at boot").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl SandboxSupport {
    /// Nothing can be enforced, because of `reason`.
    pub fn unavailable(reason: impl Into<String>) -> Self {
        Self {
            landlock_abi: None,
            seccomp: false,
            reason: Some(reason.into()),
        }
    }
}

/// How much of the policy is enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    /// Everything the policy asks for.
    Full,
    /// Some of it; the report's reason says what is missing.
    Partial,
    /// Nothing (or the sandbox is off).
    None,
}

/// What keeps confined commands off the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkFilter {
    /// Nothing: the network is allowed, or nothing can filter it.
    None,
    /// Landlock refuses TCP bind and connect (ABI 4 and later); other sockets are open.
    LandlockTcp,
    /// seccomp refuses creating any non-Unix socket.
    Seccomp,
    /// Both.
    SeccompAndLandlockTcp,
}

/// What the sandbox enforces for an agent's commands, for front ends to show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxReport {
    /// The policy's mode.
    pub mode: SandboxMode,
    /// The policy's network access.
    pub network: NetworkAccess,
    /// How much of the policy the kernel enforces.
    pub enforced: Enforcement,
    /// The Landlock ABI in use, if any.
    pub landlock_abi: Option<u32>,
    /// What filters the network.
    pub network_filter: NetworkFilter,
    /// The policy's fallback.
    pub fallback: SandboxFallback,
    /// True when the sandbox should confine commands but a part of the policy cannot be
    /// enforced at all, so the fallback decides what happens to them.
    pub fallback_active: bool,
    /// True when a tool of this agent runs commands under the sandbox. Without one there is
    /// nothing to confine, and a policy the kernel cannot enforce costs nothing.
    #[serde(default = "yes")]
    pub commands: bool,
    /// What is missing and why, when `enforced` is not `full`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

fn yes() -> bool {
    true
}

impl SandboxReport {
    /// True when commands would run with less confinement than the policy asks: the policy
    /// confines, a tool runs commands under it, and the kernel enforces less than all of it.
    /// This is what a front end warns about.
    pub fn falls_short(&self) -> bool {
        self.mode != SandboxMode::Off && self.commands && self.enforced != Enforcement::Full
    }

    /// The report for `policy` on a kernel with `support` (`None`: no tool of the agent runs
    /// commands under the sandbox, so nothing is enforced).
    pub fn new(policy: &SandboxPolicy, support: Option<&SandboxSupport>) -> Self {
        let mut report = Self {
            mode: policy.mode,
            network: policy.network,
            enforced: Enforcement::None,
            landlock_abi: support.and_then(|s| s.landlock_abi),
            network_filter: NetworkFilter::None,
            fallback: policy.fallback,
            fallback_active: false,
            commands: support.is_some(),
            reason: None,
        };
        if !policy.confines() {
            report.reason = Some("the sandbox is off: commands run with the user's rights".into());
            return report;
        }
        let Some(support) = support else {
            report.reason = Some("no tool of this agent runs commands under the sandbox".into());
            return report;
        };
        let why = support.reason.as_deref();
        let mut missing = Vec::new();
        let fs = match support.landlock_abi {
            None => {
                missing.push(match why {
                    Some(why) => format!("file-system rules need Landlock: {why}"),
                    None => "file-system rules need Landlock, which is unavailable".to_string(),
                });
                Enforcement::None
            }
            Some(abi) if abi < 3 => {
                missing.push(format!(
                    "Landlock ABI {abi} cannot refuse truncating files outside the writable roots"
                ));
                Enforcement::Partial
            }
            Some(_) => Enforcement::Full,
        };
        let landlock_tcp = support.landlock_abi.is_some_and(|abi| abi >= 4);
        let net = match policy.network {
            NetworkAccess::Allow => Enforcement::Full,
            NetworkAccess::Deny => {
                report.network_filter = match (support.seccomp, landlock_tcp) {
                    (true, true) => NetworkFilter::SeccompAndLandlockTcp,
                    (true, false) => NetworkFilter::Seccomp,
                    (false, true) => NetworkFilter::LandlockTcp,
                    (false, false) => NetworkFilter::None,
                };
                match report.network_filter {
                    NetworkFilter::Seccomp | NetworkFilter::SeccompAndLandlockTcp => {
                        Enforcement::Full
                    }
                    NetworkFilter::LandlockTcp => {
                        missing.push(
                            "without seccomp only TCP is refused; UDP and other sockets are open"
                                .to_string(),
                        );
                        Enforcement::Partial
                    }
                    NetworkFilter::None => {
                        missing.push(
                            "the network cannot be denied: no seccomp and no Landlock ABI 4"
                                .to_string(),
                        );
                        Enforcement::None
                    }
                }
            }
        };
        report.enforced = match (fs, net) {
            (Enforcement::Full, Enforcement::Full) => Enforcement::Full,
            (Enforcement::None, Enforcement::None) => Enforcement::None,
            (Enforcement::None, Enforcement::Full) if policy.network == NetworkAccess::Allow => {
                Enforcement::None
            }
            _ => Enforcement::Partial,
        };
        report.fallback_active = fs == Enforcement::None || net == Enforcement::None;
        if !missing.is_empty() {
            report.reason = Some(missing.join("; "));
        }
        report
    }

    /// One line for a log or a warning, e.g. `sandbox workspace-write, network deny:
    /// enforced partial (Landlock ABI 2 …)`.
    pub fn summary(&self) -> String {
        let mut line = format!(
            "sandbox {}, network {}: enforced {}",
            self.mode,
            self.network,
            match self.enforced {
                Enforcement::Full => "full",
                Enforcement::Partial => "partial",
                Enforcement::None => "none",
            }
        );
        if let Some(abi) = self.landlock_abi {
            line.push_str(&format!(", Landlock ABI {abi}"));
        }
        if let Some(reason) = &self.reason {
            line.push_str(&format!(" ({reason})"));
        }
        if self.fallback_active {
            line.push_str(match self.fallback {
                SandboxFallback::Refuse => "; commands are refused (fallback refuse)",
                SandboxFallback::Prompt => "; every command asks for approval (fallback prompt)",
                SandboxFallback::Allow => "; commands run unconfined (fallback allow)",
            });
        }
        line
    }
}

/// The sandbox a tool applies to the processes one call starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxContext {
    /// The policy for this call (with an approved escalation applied).
    pub policy: SandboxPolicy,
    /// What the agent found the kernel supports; `None` when the agent has no view (a tool
    /// called outside an agent): the enforcer then probes the kernel itself.
    pub support: Option<SandboxSupport>,
    /// The escalation the approver allowed for this call, if any.
    pub escalation: Option<SandboxEscalation>,
}

impl SandboxContext {
    /// A context for `policy` with no view of the kernel and no escalation.
    pub fn new(policy: SandboxPolicy) -> Self {
        Self {
            policy,
            support: None,
            escalation: None,
        }
    }
}

impl Default for SandboxContext {
    /// No sandbox (what [`crate::ToolContext::new`] gives).
    fn default() -> Self {
        Self::new(SandboxPolicy::off())
    }
}
