//! The guards of an unattended run, fixed when the agent is built: the permission rules
//! ([`crate::permission::rules`]), the spend cap ([`crate::budget`]) and the fallback model
//! ([`crate::fallback`]). A sub-agent runs under its parent's.

use crate::permission::rules::RuleSet;

/// What [`crate::AgentBuilder::permission_rules`], [`crate::AgentBuilder::max_budget_usd`]
/// and [`crate::AgentBuilder::fallback_model`] set.
#[derive(Debug, Clone, Default)]
pub(crate) struct Guard {
    /// Allow / ask / deny rules, consulted before the permission mode.
    pub(crate) rules: RuleSet,
    /// The most a prompt run may cost, in USD.
    pub(crate) max_budget_usd: Option<f64>,
    /// The model a call that failed for overload, rate limit or a server error is made
    /// with once more.
    pub(crate) fallback_model: Option<String>,
    /// The tools a resumed session's "always allow" answers granted (moved into the
    /// agent's state when it is built).
    pub(crate) granted: std::collections::HashSet<String>,
}

impl Guard {
    /// The guard of a sub-agent built with `own`: its own rules, then its parent's; its
    /// own cap and fallback, else its parent's.
    pub(crate) fn for_child(own: &Guard, parent: &Guard) -> Guard {
        let mut rules = own.rules.clone();
        rules.extend(parent.rules.clone());
        Guard {
            rules,
            max_budget_usd: own.max_budget_usd.or(parent.max_budget_usd),
            fallback_model: own
                .fallback_model
                .clone()
                .or_else(|| parent.fallback_model.clone()),
            granted: Default::default(),
        }
    }
}
