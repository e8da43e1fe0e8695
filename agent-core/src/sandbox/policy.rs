//! The policy: modes, network access, the fallback, flag parsing and escalations.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

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
