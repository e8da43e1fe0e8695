//! [`AgentUpdate`]: the settings of a built agent that change between runs.

use std::sync::Arc;

use crate::context::AutoCompact;
use crate::hooks::{HookList, Hooks};
use crate::into_arc::IntoArc;
use crate::permission::{Approver, PermissionMode};
use crate::provider::ReasoningLevel;
use crate::sandbox::policy::SandboxPolicy;

use super::Agent;

/// Changes to an agent's settings for its later model calls, made with [`Agent::update`]
/// and applied together by [`AgentUpdate::apply`]. A run in flight sees them from its next
/// model call (or tool call, for the permission settings). Each method names the builder
/// method ([`crate::AgentBuilder`]) that sets the same thing before the agent is built.
///
/// ```
/// use agent_core::{Agent, PermissionMode, ReasoningLevel};
/// use agent_providers::scripted::ScriptedProvider;
///
/// let agent = Agent::builder(ScriptedProvider::new([])).model("small").build();
/// agent
///     .update()
///     .model("large")
///     .reasoning(ReasoningLevel::High)
///     .permission_mode(PermissionMode::Plan)
///     .apply();
/// let state = agent.state();
/// assert_eq!((state.model.as_str(), state.mode), ("large", PermissionMode::Plan));
/// ```
#[must_use = "an update changes nothing until `apply` is called"]
pub struct AgentUpdate<'a> {
    agent: &'a Agent,
    model: Option<String>,
    reasoning: Option<ReasoningLevel>,
    system_prompt: Option<Option<String>>,
    approver: Option<Option<Arc<dyn Approver>>>,
    mode: Option<PermissionMode>,
    context_window: Option<Option<u64>>,
    auto_compact: Option<AutoCompact>,
    sandbox: Option<SandboxPolicy>,
    hooks: Option<HookList>,
    max_stop_continuations: Option<u32>,
}

impl<'a> AgentUpdate<'a> {
    pub(super) fn new(agent: &'a Agent) -> Self {
        Self {
            agent,
            model: None,
            reasoning: None,
            system_prompt: None,
            approver: None,
            mode: None,
            context_window: None,
            auto_compact: None,
            sandbox: None,
            hooks: None,
            max_stop_continuations: None,
        }
    }

    /// Switches the model.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sets the reasoning level.
    pub fn reasoning(mut self, level: ReasoningLevel) -> Self {
        self.reasoning = Some(level);
        self
    }

    /// Replaces the system prompt (e.g. to add a goal to it); `None` or an empty prompt
    /// removes it.
    pub fn system_prompt(mut self, prompt: Option<String>) -> Self {
        self.system_prompt = Some(prompt.filter(|p| !p.is_empty()));
        self
    }

    /// Replaces the approver for later permission prompts. A fork keeps its parent's
    /// approver until an update replaces it.
    pub fn approver(mut self, approver: impl IntoArc<dyn Approver>) -> Self {
        self.approver = Some(Some(approver.into_arc()));
        self
    }

    /// Removes the approver: later permission prompts are denied.
    pub fn no_approver(mut self) -> Self {
        self.approver = Some(None);
        self
    }

    /// Sets the permission mode.
    pub fn permission_mode(mut self, mode: PermissionMode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// Overrides the context window (`None` or 0: back to the catalogue's).
    pub fn context_window(mut self, tokens: Option<u64>) -> Self {
        self.context_window = Some(tokens.filter(|t| *t > 0));
        self
    }

    /// Changes the auto-compact setting.
    pub fn auto_compact(mut self, auto: AutoCompact) -> Self {
        self.auto_compact = Some(auto);
        self
    }

    /// Sets the OS sandbox policy for commands; the next prompt run reports it.
    pub fn sandbox(mut self, policy: SandboxPolicy) -> Self {
        self.sandbox = Some(policy);
        self
    }

    /// Replaces the lifecycle hooks (see [`crate::hooks`]); an empty list removes them. A
    /// fork keeps its parent's hooks until an update replaces them.
    pub fn hooks(mut self, hooks: impl IntoIterator<Item = Arc<dyn Hooks>>) -> Self {
        self.hooks = Some(hooks.into_iter().collect());
        self
    }

    /// Sets how many times per run a stop hook may make the model go on.
    pub fn max_stop_continuations(mut self, n: u32) -> Self {
        self.max_stop_continuations = Some(n);
        self
    }

    /// Applies the changes: the transcript settings under one lock, so a model call sees
    /// all of them or none.
    pub fn apply(self) {
        let inner = &self.agent.inner;
        {
            let mut state = inner.state();
            if let Some(model) = self.model {
                state.model = model;
            }
            if let Some(level) = self.reasoning {
                state.reasoning = level;
            }
            if let Some(prompt) = self.system_prompt {
                state.system = prompt;
            }
            if let Some(approver) = self.approver {
                state.approver = approver;
            }
            if let Some(mode) = self.mode {
                state.mode = mode;
            }
            if let Some(window) = self.context_window {
                state.ctx.window = window;
            }
            if let Some(auto) = self.auto_compact {
                state.ctx.auto = auto;
            }
        }
        if let Some(policy) = self.sandbox {
            inner.sandbox.set_policy(policy);
        }
        if let Some(list) = self.hooks {
            inner.hooks.set(list);
        }
        if let Some(n) = self.max_stop_continuations {
            inner.hooks.set_max_continuations(n);
        }
    }
}
