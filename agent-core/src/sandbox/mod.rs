//! The OS sandbox policy for the commands an agent runs, protocol-free.
//!
//! A [`SandboxPolicy`] says what a confined command may do: write only under its writable
//! roots (the workspace and a private temp dir by default, plus extra roots), read
//! everywhere, and reach the network or not. The policy is set on the builder
//! ([`crate::AgentBuilder::sandbox`]) and changed with [`crate::AgentUpdate::sandbox`]; tools
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

pub(crate) mod policy;
pub(crate) mod report;
#[cfg(test)]
mod tests;

pub use crate::agent_sandbox::decide_escalation;
pub use policy::{
    NetworkAccess, ParseSandboxError, SandboxEscalation, SandboxFallback, SandboxMode,
    SandboxPolicy,
};
pub use report::{Enforcement, NetworkFilter, SandboxContext, SandboxReport, SandboxSupport};
