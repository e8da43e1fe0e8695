//! Permissions: modes, risk metadata, the policy that decides each call, and the
//! [`Approver`] a host implements to answer prompts.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::subagent_info::SubagentInfo;

pub mod rules;
pub mod shell;
pub mod target;

pub use target::CallTarget;

/// What a tool does to the world; drives permissions and protocol metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SideEffect {
    /// Reads files or state.
    Read,
    /// Writes files.
    Write,
    /// Runs shell commands.
    Shell,
    /// Reaches the network.
    Network,
    /// Nothing outside the agent (e.g. the plan checklist).
    None,
}

impl SideEffect {
    /// The canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Shell => "shell",
            Self::Network => "network",
            Self::None => "none",
        }
    }
}

impl fmt::Display for SideEffect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tool's static permission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    /// Always runs.
    Allow,
    /// Runs when the mode or the approver allows it.
    Prompt,
    /// Never runs.
    Deny,
}

impl Permission {
    /// The canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Prompt => "prompt",
            Self::Deny => "deny",
        }
    }
}

/// How tool calls are gated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionMode {
    /// Everything that is not allowed by default asks the approver.
    Ask,
    /// Reads pass; other calls are decided by the tool's risk classification: low and
    /// medium risk pass, high and critical ask.
    #[default]
    Auto,
    /// Read-only: calls with side effects are denied.
    Plan,
    /// Everything is pre-approved (blocks included).
    Unsafe,
}

impl PermissionMode {
    /// The canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::Auto => "auto",
            Self::Plan => "plan",
            Self::Unsafe => "unsafe",
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown permission mode name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid permission mode {0:?}: expected ask, auto, plan or unsafe")]
pub struct ParseModeError(pub String);

impl FromStr for PermissionMode {
    type Err = ParseModeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ask" => Ok(Self::Ask),
            "auto" => Ok(Self::Auto),
            "plan" => Ok(Self::Plan),
            "unsafe" => Ok(Self::Unsafe),
            _ => Err(ParseModeError(s.to_string())),
        }
    }
}

/// What the gate does with a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionAction {
    /// Run it.
    Allow,
    /// Ask the approver.
    Prompt,
    /// Refuse it.
    Deny,
    /// The request was abandoned (the run was aborted while waiting).
    Cancel,
}

impl PermissionAction {
    /// The canonical (wire) name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Prompt => "prompt",
            Self::Deny => "deny",
            Self::Cancel => "cancel",
        }
    }
}

/// Severity of a call.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum RiskLevel {
    /// Reads.
    #[default]
    Low,
    /// Workspace writes.
    Medium,
    /// Shell, network.
    High,
    /// Destructive, out of workspace, piped installers.
    Critical,
}

impl RiskLevel {
    /// The canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Critical => "critical",
        }
    }
}

/// Why a call is risky.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RiskCategory {
    /// Reads files.
    Read,
    /// Writes files.
    Write,
    /// Runs a shell command.
    Shell,
    /// Reaches the network.
    Network,
    /// Deletes or overwrites irrecoverably.
    Destructive,
    /// Touches a path outside the workspace.
    OutOfWorkspace,
    /// Pipes a download into a shell.
    PipedInstaller,
    /// The command line could not be parsed.
    UnparseableCommand,
    /// Names an absolute path.
    AbsolutePath,
    /// Escapes the workspace with `..`.
    PathEscape,
    /// Follows a symlink out of the workspace.
    SymlinkTraversal,
}

impl RiskCategory {
    /// The canonical (wire) name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Shell => "shell",
            Self::Network => "network",
            Self::Destructive => "destructive",
            Self::OutOfWorkspace => "out_of_workspace",
            Self::PipedInstaller => "piped_installer",
            Self::UnparseableCommand => "unparseable_command",
            Self::AbsolutePath => "absolute_path",
            Self::PathEscape => "path_escape",
            Self::SymlinkTraversal => "symlink_traversal",
        }
    }

    /// The level this category implies on its own.
    pub fn level(self) -> RiskLevel {
        match self {
            Self::Read => RiskLevel::Low,
            Self::Write | Self::AbsolutePath => RiskLevel::Medium,
            Self::Shell | Self::Network | Self::UnparseableCommand => RiskLevel::High,
            Self::Destructive
            | Self::OutOfWorkspace
            | Self::PipedInstaller
            | Self::PathEscape
            | Self::SymlinkTraversal => RiskLevel::Critical,
        }
    }
}

/// Risk classification of a call.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Risk {
    /// Overall level.
    pub level: RiskLevel,
    /// Sorted, de-duplicated categories.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<RiskCategory>,
}

impl Risk {
    /// A risk whose level is the maximum over `categories` (low when empty).
    pub fn from_categories(categories: impl IntoIterator<Item = RiskCategory>) -> Self {
        let mut categories: Vec<_> = categories.into_iter().collect();
        categories.sort();
        categories.dedup();
        let level = categories
            .iter()
            .map(|c| c.level())
            .max()
            .unwrap_or_default();
        Self { level, categories }
    }

    /// The default classification of a side effect.
    pub fn for_side_effect(side_effect: SideEffect) -> Self {
        Self::from_categories(match side_effect {
            SideEffect::Read => vec![RiskCategory::Read],
            SideEffect::Write => vec![RiskCategory::Write],
            SideEffect::Shell => vec![RiskCategory::Shell],
            SideEffect::Network => vec![RiskCategory::Network],
            SideEffect::None => vec![],
        })
    }

    /// `"<level> risk: <cat>, <cat>"`, or just the level without categories.
    pub fn reason(&self) -> String {
        if self.categories.is_empty() {
            return self.level.as_str().to_string();
        }
        let cats: Vec<&str> = self.categories.iter().map(|c| c.as_str()).collect();
        format!("{} risk: {}", self.level.as_str(), cats.join(", "))
    }
}

/// Machine-readable reason a call was stopped or gated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockCode {
    /// The run was cancelled.
    ContextCanceled,
    /// The approver denied it.
    DeniedPermission,
    /// A path lies outside the workspace.
    OutsideWorkspace,
    /// A symlink leads outside the workspace.
    SymlinkTraversal,
    /// Network access (asked for, or refused by the OS sandbox).
    Network,
    /// The OS sandbox refused something a command did (or cannot be enforced, or a call
    /// asks to run outside it).
    Sandbox,
    /// A destructive command.
    DestructiveCommand,
    /// A standing deny rule.
    PersistentDeny,
    /// Denied for another reason.
    Denied,
}

impl BlockCode {
    /// The canonical (wire) name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ContextCanceled => "context_canceled",
            Self::DeniedPermission => "denied_permission",
            Self::OutsideWorkspace => "outside_workspace",
            Self::SymlinkTraversal => "symlink_traversal",
            Self::Network => "network",
            Self::Sandbox => "sandbox",
            Self::DestructiveCommand => "destructive_command",
            Self::PersistentDeny => "persistent_deny",
            Self::Denied => "denied",
        }
    }
}

/// Structured sandbox metadata explaining why a call is gated or refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Block {
    /// Machine-readable code.
    pub code: BlockCode,
    /// Tool the call was for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// What the gate does about it: `prompt` (ask) or `deny`.
    pub action: PermissionAction,
    /// Risk of the call.
    pub risk: Risk,
    /// Offending path, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Human-readable reason.
    pub reason: String,
    /// Whether the model can recover (e.g. by choosing another path).
    pub recoverable: bool,
}

/// A tool's own classification of one call, made before it runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Assessment {
    /// Risk of the call.
    pub risk: Risk,
    /// Why it is gated, if it is.
    pub block: Option<Block>,
    /// A short reason shown with permission prompts.
    pub reason: Option<String>,
}

/// The gate's verdict on one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// What to do.
    pub action: PermissionAction,
    /// True when the call was pre-approved (unsafe mode or a standing grant).
    pub granted: bool,
    /// Why.
    pub reason: Option<String>,
}

/// Decides a call from the mode, the tool's static permission and side effect, its
/// assessment, and whether the session already granted the tool.
pub fn decide(
    mode: PermissionMode,
    permission: Permission,
    side_effect: SideEffect,
    assessment: &Assessment,
    granted_for_session: bool,
) -> Verdict {
    let verdict = |action, granted, reason: Option<String>| Verdict {
        action,
        granted,
        reason,
    };
    let reason = assessment
        .block
        .as_ref()
        .map(|b| b.reason.clone())
        .or_else(|| assessment.reason.clone());
    if mode == PermissionMode::Unsafe {
        return verdict(PermissionAction::Allow, true, reason);
    }
    if permission == Permission::Deny {
        return verdict(PermissionAction::Deny, false, reason);
    }
    if let Some(block) = &assessment.block {
        if block.action == PermissionAction::Deny {
            return verdict(PermissionAction::Deny, false, reason);
        }
    }
    let read_only = matches!(side_effect, SideEffect::Read | SideEffect::None);
    if mode == PermissionMode::Plan && !read_only {
        return verdict(
            PermissionAction::Deny,
            false,
            Some("plan mode is read-only".to_string()),
        );
    }
    if assessment.block.is_some() {
        return match granted_for_session {
            true => verdict(PermissionAction::Allow, true, reason),
            false => verdict(PermissionAction::Prompt, false, reason),
        };
    }
    if permission == Permission::Allow {
        return verdict(PermissionAction::Allow, false, reason);
    }
    if granted_for_session {
        return verdict(PermissionAction::Allow, true, reason);
    }
    match mode {
        PermissionMode::Auto if read_only || assessment.risk.level <= RiskLevel::Medium => {
            let reason = match side_effect {
                SideEffect::Write => Some("workspace write is allowed".to_string()),
                _ => reason,
            };
            verdict(PermissionAction::Allow, false, reason)
        }
        PermissionMode::Plan if read_only => verdict(PermissionAction::Allow, false, reason),
        _ => verdict(PermissionAction::Prompt, false, reason),
    }
}

/// A permission prompt put to the [`Approver`].
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    /// Tool call id.
    pub call_id: String,
    /// Tool name.
    pub tool: String,
    /// Parsed arguments.
    pub args: Value,
    /// Active permission mode.
    pub mode: PermissionMode,
    /// The tool's side effect.
    pub side_effect: SideEffect,
    /// Why approval is needed.
    pub reason: Option<String>,
    /// Risk classification.
    pub risk: Risk,
    /// Sandbox metadata, if the call hit a block.
    pub block: Option<Block>,
}

/// An approver's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run this call.
    AllowOnce,
    /// Run this call and every later call of the same tool in this agent.
    AllowAlways,
    /// Do not run it.
    Deny {
        /// Why, shown to the model.
        reason: Option<String>,
    },
}

/// Answers permission prompts interactively. A host (an editor, a protocol server)
/// implements this; the agent awaits it, and an abort cancels the wait.
#[async_trait]
pub trait Approver: Send + Sync + 'static {
    /// Decides one request.
    async fn approve(&self, request: ApprovalRequest) -> Approval;

    /// Decides one request of a sub-agent's call ([`crate::subagent`]): a child asks its
    /// parent's approver through this, with `subagent` naming the child (the request's
    /// `call_id` is the child's own call id). The default asks [`Approver::approve`]; a
    /// host that shows where a request comes from overrides it.
    async fn approve_subagent(
        &self,
        subagent: &crate::subagent_info::SubagentInfo,
        request: ApprovalRequest,
    ) -> Approval {
        let _ = subagent;
        self.approve(request).await
    }
}

/// A child's approver: its parent's, asked through [`Approver::approve_subagent`].
struct ChildApprover {
    parent: Arc<dyn Approver>,
    info: Arc<SubagentInfo>,
}

#[async_trait]
impl Approver for ChildApprover {
    async fn approve(&self, request: ApprovalRequest) -> Approval {
        self.parent.approve_subagent(&self.info, request).await
    }

    async fn approve_subagent(
        &self,
        subagent: &SubagentInfo,
        request: ApprovalRequest,
    ) -> Approval {
        // A grandchild's request reaches the top-level approver with its own identity.
        self.parent.approve_subagent(subagent, request).await
    }
}

/// The approver a sub-agent asks: `parent`'s, told which child asks.
pub(crate) fn child_approver(
    parent: Arc<dyn Approver>,
    info: Arc<SubagentInfo>,
) -> Arc<dyn Approver> {
    Arc::new(ChildApprover { parent, info })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `as_str` is the serde name of every variant, so a wire can use either.
    #[test]
    fn names_are_the_serde_names() {
        fn check<T: Serialize + Copy>(values: &[T], name: impl Fn(T) -> &'static str) {
            for &value in values {
                let serde = serde_json::to_value(value).expect("a unit variant serialises");
                assert_eq!(serde.as_str(), Some(name(value)));
            }
        }
        use PermissionAction as A;
        check(&[A::Allow, A::Prompt, A::Deny, A::Cancel], A::as_str);
        use RiskCategory as C;
        let categories = [
            C::Read,
            C::Write,
            C::Shell,
            C::Network,
            C::Destructive,
            C::OutOfWorkspace,
            C::PipedInstaller,
            C::UnparseableCommand,
            C::AbsolutePath,
            C::PathEscape,
            C::SymlinkTraversal,
        ];
        check(&categories, C::as_str);
        use BlockCode as B;
        let codes = [
            B::ContextCanceled,
            B::DeniedPermission,
            B::OutsideWorkspace,
            B::SymlinkTraversal,
            B::Network,
            B::Sandbox,
            B::DestructiveCommand,
            B::PersistentDeny,
            B::Denied,
        ];
        check(&codes, B::as_str);
    }

    #[test]
    fn risk_level_is_max_of_categories() {
        let risk = Risk::from_categories([RiskCategory::Network, RiskCategory::Shell]);
        assert_eq!(risk.level, RiskLevel::High);
        assert_eq!(risk.reason(), "high risk: shell, network");
        assert_eq!(Risk::default().reason(), "low");
    }

    #[test]
    fn modes_decide_as_documented() {
        let write = Assessment {
            risk: Risk::for_side_effect(SideEffect::Write),
            ..Default::default()
        };
        let shell = Assessment {
            risk: Risk::for_side_effect(SideEffect::Shell),
            ..Default::default()
        };
        let d = |mode, a: &Assessment, se| decide(mode, Permission::Prompt, se, a, false).action;
        assert_eq!(
            d(PermissionMode::Auto, &write, SideEffect::Write),
            PermissionAction::Allow
        );
        assert_eq!(
            d(PermissionMode::Auto, &shell, SideEffect::Shell),
            PermissionAction::Prompt
        );
        assert_eq!(
            d(PermissionMode::Ask, &write, SideEffect::Write),
            PermissionAction::Prompt
        );
        assert_eq!(
            d(PermissionMode::Plan, &write, SideEffect::Write),
            PermissionAction::Deny
        );
        let unsafe_verdict = decide(
            PermissionMode::Unsafe,
            Permission::Prompt,
            SideEffect::Shell,
            &shell,
            false,
        );
        assert_eq!(unsafe_verdict.action, PermissionAction::Allow);
        assert!(unsafe_verdict.granted);
    }
}
