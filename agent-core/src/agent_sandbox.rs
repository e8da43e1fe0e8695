//! An agent's sandbox state and how a call's risk and escalation are decided.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use serde_json::Value;

use crate::emit::Emitter;
use crate::event::AgentEvent;
use crate::permission::{
    Assessment, Block, BlockCode, Permission, PermissionAction, PermissionMode, RiskCategory,
    RiskLevel, Verdict,
};
use crate::tool::Tool;

use crate::sandbox::policy::{NetworkAccess, SandboxEscalation, SandboxFallback, SandboxPolicy};
use crate::sandbox::report::{SandboxContext, SandboxReport, SandboxSupport};

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
    /// The policy was set explicitly (builder or `AgentUpdate::sandbox`).
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
