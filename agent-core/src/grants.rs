//! The gate's side of permission rules and of the session's "always allow" answers: which
//! rule decides a call ([`rule`]), and an "always" answer kept for the rest of the session
//! and recorded with it ([`remember`]), so a resumed session still has it.

use crate::emit::{record, Emitter};
use crate::inner::Inner;
use crate::message::ToolCall;
use crate::permission::rules::{self, DecidingRule, RuleAction, RuleSource};
use crate::permission::{PermissionAction, PermissionMode, Verdict};
use crate::session::SessionRecord;
use crate::tool::Tool;

/// Applies the permission rules to `verdict` and returns the rule that decided the call: a
/// deny, ask or allow rule ([`rules::apply`]), or the session's "always allow" answer for
/// the tool when that is what let it run (`granted`).
pub(crate) fn rule(
    inner: &Inner,
    tool: &dyn Tool,
    call: &ToolCall,
    verdict: &mut Verdict,
    escalation: bool,
    granted: bool,
) -> Option<DecidingRule> {
    let mode = inner.state().mode;
    if !inner.guard.rules.is_empty() {
        let target = tool.call_target(&call.args);
        let decided = inner
            .guard
            .rules
            .evaluate(tool, &call.name, &target, &inner.cwd);
        if rules::apply(verdict, decided.as_ref(), escalation) {
            return decided;
        }
    }
    let by_grant = granted
        && mode != PermissionMode::Unsafe
        && verdict.granted
        && verdict.action == PermissionAction::Allow;
    by_grant.then(|| DecidingRule {
        rule: tool.name().to_string(),
        action: RuleAction::Allow,
        source: RuleSource::Session.to_string(),
    })
}

/// Keeps an "always allow" answer for `tool` for the rest of the session, and records it.
pub(crate) async fn remember(inner: &Inner, em: &Emitter, tool: &str) {
    let new = inner.state().granted.insert(tool.to_string());
    if new {
        let granted = SessionRecord::Granted {
            tool: tool.to_string(),
        };
        record(inner, em, granted).await;
    }
}
