//! The OS sandbox policy for the commands an agent runs, protocol-free.
//!
//! A [`SandboxPolicy`] says what a confined command may do: write only under its writable
//! roots (the workspace and a private temp dir by default, plus extra roots), read
//! everywhere, and reach the network or not. The policy is set on the builder
//! ([`crate::AgentBuilder::sandbox`]) and changed with [`crate::Agent::set_sandbox`]; tools
//! get it through [`crate::ToolContext::sandbox`] and enforce it when they start processes
//! (the `agent-sandbox` crate does that on Linux with Landlock and seccomp); command hooks
//! get it through [`crate::hooks::HookContext::sandbox`] and run under it too.
//!
//! The sandbox and the permission mode are independent: `unsafe` skips prompts, it does not
//! turn the sandbox off; only [`SandboxMode::Off`] does.
//!
//! What the kernel can enforce is a [`SandboxSupport`] (probed by the enforcing crate). The
//! agent combines it with the policy into a [`SandboxReport`], emitted once as
//! [`crate::AgentEvent::SandboxReport`] at the start of the agent's first prompt run (and
//! again after the policy changes). When a part of the policy cannot be enforced at all, the
//! [`SandboxFallback`] decides what happens to commands: refused, each one asks for approval
//! (the default), or they run unconfined; it is never silent.
//!
//! A command the sandbox refused (a denied path, a refused connection) gets a
//! [`crate::permission::Block`] with code [`crate::permission::BlockCode::Sandbox`] or [`crate::permission::BlockCode::Network`]
//! on its result ([`crate::AgentEvent::ToolBlocked`]). The model may then call the tool again
//! asking for a [`SandboxEscalation`] (bash: `"sandbox_permissions": "with_network"` or
//! `"require_escalated"`); such a call always goes to the approver as a permission request
//! carrying the block, in every permission mode, and runs with the relaxed policy only when
//! the approver allows it.
//!
//! ```
//! use agent_core::sandbox::{NetworkAccess, SandboxFallback, SandboxMode, SandboxPolicy};
//!
//! // What `--sandbox workspace-write --sandbox-network deny --add-dir ../shared` asks for.
//! let policy = SandboxPolicy::from_flags(
//!     Some("workspace-write"),
//!     Some("deny"),
//!     ["../shared"],
//!     None,
//! )
//! .unwrap();
//! assert_eq!(policy.mode, SandboxMode::WorkspaceWrite);
//! assert_eq!(policy.network, NetworkAccess::Deny);
//! assert_eq!(policy.fallback, SandboxFallback::Prompt);
//! assert!(policy.confines());
//! assert!(SandboxPolicy::from_flags(Some("everything"), None, [""; 0], None).is_err());
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::emit::Emitter;
use crate::event::AgentEvent;
use crate::permission::{
    Assessment, Block, BlockCode, Permission, PermissionAction, PermissionMode, RiskCategory,
    RiskLevel, Verdict,
};
use crate::tool::Tool;

/// How far commands are confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Commands read everywhere and write nowhere but the private temp dir.
    ReadOnly,
    /// Commands read everywhere and write under the workspace, the private temp dir and the
    /// extra writable roots.
    WorkspaceWrite,
    /// No sandbox: commands run with the user's full rights (`danger-full-access`).
    Off,
}

impl SandboxMode {
    /// The flag value (`read-only`, `workspace-write`, `off`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::Off => "off",
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SandboxMode {
    type Err = ParseSandboxError;

    /// `read-only`, `workspace-write`, `off` (or its alias `danger-full-access`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read-only" => Ok(Self::ReadOnly),
            "workspace-write" => Ok(Self::WorkspaceWrite),
            "off" | "danger-full-access" => Ok(Self::Off),
            _ => Err(ParseSandboxError::new(
                "--sandbox",
                s,
                "read-only, workspace-write or off",
            )),
        }
    }
}

/// Whether confined commands may use the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkAccess {
    /// No network: creating non-Unix sockets and TCP bind/connect are refused.
    Deny,
    /// The network is open.
    Allow,
}

impl NetworkAccess {
    /// The flag value (`deny`, `allow`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Deny => "deny",
            Self::Allow => "allow",
        }
    }
}

impl fmt::Display for NetworkAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for NetworkAccess {
    type Err = ParseSandboxError;

    /// `deny` or `allow`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "deny" => Ok(Self::Deny),
            "allow" => Ok(Self::Allow),
            _ => Err(ParseSandboxError::new(
                "--sandbox-network",
                s,
                "allow or deny",
            )),
        }
    }
}

/// What happens to commands when the kernel cannot enforce a part of the policy at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxFallback {
    /// Commands are refused.
    Refuse,
    /// Every command asks for approval and says why (pre-approved only where the permission
    /// mode pre-approves blocks, i.e. `unsafe`, or by a standing grant).
    #[default]
    Prompt,
    /// Commands run with whatever the kernel enforces (possibly nothing).
    Allow,
}

impl SandboxFallback {
    /// The flag value (`refuse`, `prompt`, `allow`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Refuse => "refuse",
            Self::Prompt => "prompt",
            Self::Allow => "allow",
        }
    }
}

impl fmt::Display for SandboxFallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SandboxFallback {
    type Err = ParseSandboxError;

    /// `refuse`, `prompt` or `allow`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "refuse" => Ok(Self::Refuse),
            "prompt" => Ok(Self::Prompt),
            "allow" => Ok(Self::Allow),
            _ => Err(ParseSandboxError::new(
                "--sandbox-fallback",
                s,
                "refuse, prompt or allow",
            )),
        }
    }
}

/// A sandbox flag value that is not one of the accepted names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {flag} value {value:?}: expected {expected}")]
pub struct ParseSandboxError {
    /// The flag (`--sandbox`, `--sandbox-network`, `--sandbox-fallback`).
    pub flag: &'static str,
    /// The value given.
    pub value: String,
    /// The accepted values, in words.
    pub expected: &'static str,
}

impl ParseSandboxError {
    fn new(flag: &'static str, value: &str, expected: &'static str) -> Self {
        Self {
            flag,
            value: value.to_string(),
            expected,
        }
    }
}

/// What the OS sandbox lets confined commands do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxPolicy {
    /// How far commands are confined.
    pub mode: SandboxMode,
    /// Whether the network is open to them.
    pub network: NetworkAccess,
    /// Extra writable roots besides the workspace (`--add-dir`); used in `workspace-write`
    /// only. Relative paths resolve against the workspace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writable_roots: Vec<PathBuf>,
    /// Give confined commands a private temp dir (writable, `$TMPDIR`, removed with the
    /// tool); default true.
    pub private_tmp: bool,
    /// What happens when the kernel cannot enforce a part of this policy at all.
    pub fallback: SandboxFallback,
}

impl SandboxPolicy {
    /// The policy for `mode` with its defaults: network denied unless the mode is `off`, a
    /// private temp dir, no extra roots, fallback `prompt`.
    pub fn new(mode: SandboxMode) -> Self {
        Self {
            mode,
            network: match mode {
                SandboxMode::Off => NetworkAccess::Allow,
                _ => NetworkAccess::Deny,
            },
            writable_roots: Vec::new(),
            private_tmp: true,
            fallback: SandboxFallback::default(),
        }
    }

    /// `workspace-write` with the network denied: the recommended policy.
    pub fn workspace_write() -> Self {
        Self::new(SandboxMode::WorkspaceWrite)
    }

    /// `read-only` with the network denied.
    pub fn read_only() -> Self {
        Self::new(SandboxMode::ReadOnly)
    }

    /// No sandbox.
    pub fn off() -> Self {
        Self::new(SandboxMode::Off)
    }

    /// Sets the network access.
    #[must_use = "returns the changed value"]
    pub fn network(mut self, network: NetworkAccess) -> Self {
        self.network = network;
        self
    }

    /// Adds an extra writable root (`--add-dir`).
    #[must_use = "returns the changed value"]
    pub fn writable_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.writable_roots.push(root.into());
        self
    }

    /// Sets the fallback for a kernel that cannot enforce the policy.
    #[must_use = "returns the changed value"]
    pub fn fallback(mut self, fallback: SandboxFallback) -> Self {
        self.fallback = fallback;
        self
    }

    /// Whether confined commands get a private temp dir.
    #[must_use = "returns the changed value"]
    pub fn private_tmp(mut self, yes: bool) -> Self {
        self.private_tmp = yes;
        self
    }

    /// Builds a policy from front-end flag values: `--sandbox` (default `workspace-write`),
    /// `--sandbox-network` (default: the mode's), the `--add-dir` values and
    /// `--sandbox-fallback` (default `prompt`).
    pub fn from_flags<P: Into<PathBuf>>(
        mode: Option<&str>,
        network: Option<&str>,
        add_dirs: impl IntoIterator<Item = P>,
        fallback: Option<&str>,
    ) -> Result<Self, ParseSandboxError> {
        let mode = mode.map(str::parse).transpose()?;
        let mut policy = Self::new(mode.unwrap_or(SandboxMode::WorkspaceWrite));
        if let Some(network) = network {
            policy.network = network.parse()?;
        }
        if let Some(fallback) = fallback {
            policy.fallback = fallback.parse()?;
        }
        policy.writable_roots = add_dirs.into_iter().map(Into::into).collect();
        Ok(policy)
    }

    /// True unless the mode is `off`.
    pub fn confines(&self) -> bool {
        self.mode != SandboxMode::Off
    }

    /// The policy an approved escalation runs with.
    pub fn escalated(&self, escalation: SandboxEscalation) -> Self {
        let mut policy = self.clone();
        match escalation {
            SandboxEscalation::Network => policy.network = NetworkAccess::Allow,
            SandboxEscalation::Unsandboxed => policy.mode = SandboxMode::Off,
        }
        policy
    }

    /// The writable roots for a command run in `workspace` (the private temp dir, which the
    /// enforcer creates, not included): nothing in `read-only` and `off`, the workspace and
    /// the extra roots (resolved against the workspace) in `workspace-write`.
    pub fn writable_roots_in(&self, workspace: &Path) -> Vec<PathBuf> {
        match self.mode {
            SandboxMode::WorkspaceWrite => std::iter::once(workspace.to_path_buf())
                .chain(self.writable_roots.iter().map(|r| workspace.join(r)))
                .collect(),
            SandboxMode::ReadOnly | SandboxMode::Off => Vec::new(),
        }
    }
}

/// What a call asks for beyond the policy; approved only by the approver, never by a mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxEscalation {
    /// Run with the network open (the file-system confinement stays).
    Network,
    /// Run without the sandbox.
    Unsandboxed,
}

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

/// The sandbox state of one agent: policy, kernel view, whether the report went out.
pub(crate) struct AgentSandbox {
    state: Mutex<SandboxState>,
    /// The builder's explicit kernel view.
    support_override: Option<SandboxSupport>,
    /// The kernel view of the agent's sandboxed tools, asked for on first use.
    tool_support: OnceLock<Option<SandboxSupport>>,
}

struct SandboxState {
    policy: SandboxPolicy,
    /// The policy was set explicitly (builder or `set_sandbox`).
    explicit: bool,
    /// The report for the current policy was emitted.
    reported: bool,
}

impl AgentSandbox {
    pub(crate) fn new(policy: Option<SandboxPolicy>, support: Option<SandboxSupport>) -> Self {
        Self {
            state: Mutex::new(SandboxState {
                explicit: policy.is_some(),
                policy: policy.unwrap_or_else(SandboxPolicy::off),
                reported: false,
            }),
            support_override: support,
            tool_support: OnceLock::new(),
        }
    }

    /// A copy for a forked agent: same policy and kernel view, report not yet sent.
    pub(crate) fn fork(&self) -> Self {
        let state = self.state();
        Self {
            state: Mutex::new(SandboxState {
                policy: state.policy.clone(),
                explicit: state.explicit,
                reported: false,
            }),
            support_override: self.support_override.clone(),
            tool_support: self.tool_support.clone(),
        }
    }

    /// A copy for a sub-agent: the parent's policy and kernel view, which the parent
    /// already reported.
    pub(crate) fn inherit(&self) -> Self {
        let child = self.fork();
        child.state().reported = true;
        child
    }

    fn state(&self) -> MutexGuard<'_, SandboxState> {
        // Nothing panics while holding this lock; recover the data if that ever changes.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn policy(&self) -> SandboxPolicy {
        self.state().policy.clone()
    }

    pub(crate) fn set_policy(&self, policy: SandboxPolicy) {
        let mut state = self.state();
        state.policy = policy;
        state.explicit = true;
        state.reported = false;
    }

    /// The agent's view of the kernel: the builder's, else the first sandboxed tool's.
    pub(crate) fn support(&self, tools: &[Arc<dyn Tool>]) -> Option<SandboxSupport> {
        if let Some(support) = &self.support_override {
            return Some(support.clone());
        }
        self.tool_support
            .get_or_init(|| tools.iter().find_map(|t| t.sandbox_support()))
            .clone()
    }

    pub(crate) fn report(&self, tools: &[Arc<dyn Tool>]) -> SandboxReport {
        let policy = self.policy();
        SandboxReport::new(&policy, self.support(tools).as_ref())
    }

    /// Emits the report once per policy, when there is something to report: an explicit
    /// policy, an explicit kernel view, or a tool that runs commands under the sandbox.
    pub(crate) async fn announce(&self, tools: &[Arc<dyn Tool>], em: &Emitter) {
        let (reported, explicit) = {
            let state = self.state();
            (state.reported, state.explicit)
        };
        if reported || !(explicit || self.support(tools).is_some()) {
            return;
        }
        let report = self.report(tools);
        self.state().reported = true;
        em.emit(AgentEvent::SandboxReport(report)).await;
    }

    /// The escalation a call asks for, when it would change anything.
    pub(crate) fn escalation(&self, tool: &dyn Tool, args: &Value) -> Option<SandboxEscalation> {
        let escalation = tool.sandbox_escalation(args)?;
        let policy = self.policy();
        match escalation {
            _ if !policy.confines() => None,
            SandboxEscalation::Network if policy.network == NetworkAccess::Allow => None,
            escalation => Some(escalation),
        }
    }

    /// Adds the sandbox's blocks to a call's assessment: the escalation it asks for, and the
    /// fallback when the kernel cannot enforce the policy.
    pub(crate) fn assess(
        &self,
        tools: &[Arc<dyn Tool>],
        tool: &dyn Tool,
        escalation: Option<SandboxEscalation>,
        mut assessment: Assessment,
    ) -> Assessment {
        if tool.sandbox_support().is_none() {
            // The tool starts no processes under the sandbox.
            return assessment;
        }
        let support = self.support(tools);
        let policy = self.policy();
        let name = tool.name().to_string();
        if let Some(escalation) = escalation {
            let code = match escalation {
                SandboxEscalation::Network => BlockCode::Network,
                SandboxEscalation::Unsandboxed => BlockCode::Sandbox,
            };
            let mut risk = assessment.risk.clone();
            if escalation == SandboxEscalation::Network {
                risk.categories.push(RiskCategory::Network);
                risk.categories.sort();
                risk.categories.dedup();
            }
            risk.level = risk.level.max(RiskLevel::Critical);
            let block = match assessment.block.take() {
                Some(mut own) if matches!(own.code, BlockCode::Sandbox | BlockCode::Network) => {
                    own.code = code;
                    own.action = PermissionAction::Prompt;
                    own.recoverable = true;
                    own.risk = risk.clone();
                    own
                }
                _ => Block {
                    code,
                    tool_name: Some(name.clone()),
                    action: PermissionAction::Prompt,
                    risk: risk.clone(),
                    path: None,
                    reason: match escalation {
                        SandboxEscalation::Network => {
                            format!("{name} asks to run with network access outside the sandbox")
                        }
                        SandboxEscalation::Unsandboxed => {
                            format!("{name} asks to run outside the OS sandbox")
                        }
                    },
                    recoverable: true,
                },
            };
            assessment.risk = risk;
            assessment.reason = Some(block.reason.clone());
            assessment.block = Some(block);
        }
        let report = SandboxReport::new(&policy, support.as_ref());
        if escalation == Some(SandboxEscalation::Unsandboxed) || !report.fallback_active {
            return assessment;
        }
        let why = report
            .reason
            .clone()
            .unwrap_or_else(|| "the kernel cannot enforce it".to_string());
        let block = |action, reason: String, recoverable| Block {
            code: BlockCode::Sandbox,
            tool_name: Some(name.clone()),
            action,
            risk: assessment.risk.clone(),
            path: None,
            reason,
            recoverable,
        };
        let replaced = match policy.fallback {
            SandboxFallback::Allow => None,
            SandboxFallback::Refuse => Some(block(
                PermissionAction::Deny,
                format!(
                    "the OS sandbox cannot be enforced here ({why}); commands are refused \
                     (sandbox fallback: refuse)"
                ),
                false,
            )),
            SandboxFallback::Prompt => match &assessment.block {
                Some(own) if own.action == PermissionAction::Deny || escalation.is_some() => None,
                own => {
                    let mut reason = format!(
                        "the OS sandbox cannot be enforced here ({why}): this command would run \
                         unconfined"
                    );
                    if let Some(own) = own {
                        reason.push_str("; ");
                        reason.push_str(&own.reason);
                    }
                    Some(block(PermissionAction::Prompt, reason, true))
                }
            },
        };
        if let Some(block) = replaced {
            assessment.reason = Some(block.reason.clone());
            assessment.block = Some(block);
        }
        assessment
    }

    /// The sandbox for running one call, with the escalation the approver allowed for it.
    pub(crate) fn context(
        &self,
        tools: &[Arc<dyn Tool>],
        escalation: Option<SandboxEscalation>,
    ) -> SandboxContext {
        let policy = self.policy();
        SandboxContext {
            policy: match escalation {
                Some(e) => policy.escalated(e),
                None => policy,
            },
            support: self.support(tools),
            escalation,
        }
    }
}

/// The gate's verdict on a call that asks for a [`SandboxEscalation`]: the approver decides,
/// whatever the mode (plan mode and a `deny` tool refuse it). Unlike [`crate::permission::decide`],
/// `unsafe` mode and standing grants do not pre-approve it.
pub fn decide_escalation(
    mode: PermissionMode,
    permission: Permission,
    assessment: &Assessment,
) -> Verdict {
    let reason = assessment
        .block
        .as_ref()
        .map(|b| b.reason.clone())
        .or_else(|| assessment.reason.clone());
    let action = match (mode, permission) {
        (PermissionMode::Plan, _) => {
            return Verdict {
                action: PermissionAction::Deny,
                granted: false,
                reason: Some("plan mode is read-only".to_string()),
            }
        }
        (_, Permission::Deny) => PermissionAction::Deny,
        _ if assessment
            .block
            .as_ref()
            .is_some_and(|b| b.action == PermissionAction::Deny) =>
        {
            PermissionAction::Deny
        }
        _ => PermissionAction::Prompt,
    };
    Verdict {
        action,
        granted: false,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
