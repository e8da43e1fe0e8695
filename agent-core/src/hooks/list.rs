//! [`HookList`]: several hooks consulted in order.

use std::sync::Arc;

use async_trait::async_trait;

use crate::message::{ContentBlock, ToolCall};
use crate::tool_output::ToolOutput;

use super::types::{
    CompactTrigger, HookContext, HookOutcome, PromptDecision, ResultDecision, SessionEnd,
    SessionSource, StartDecision, StopDecision, StopRequest, ToolDecision,
};
use super::Hooks;

/// Several hooks consulted in order, composed as the [module docs](crate::hooks) describe.
#[derive(Clone, Default)]
pub struct HookList {
    members: Vec<Arc<dyn Hooks>>,
}

impl std::fmt::Debug for HookList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.members.iter().map(|m| m.name()).collect();
        f.debug_struct("HookList").field("members", &names).finish()
    }
}

impl HookList {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a hook at the end.
    pub fn push(&mut self, hooks: Arc<dyn Hooks>) {
        self.members.push(hooks);
    }

    /// True when there are no hooks.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Number of hooks.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// The hooks, in order.
    pub fn members(&self) -> &[Arc<dyn Hooks>] {
        &self.members
    }
}

impl FromIterator<Arc<dyn Hooks>> for HookList {
    fn from_iter<I: IntoIterator<Item = Arc<dyn Hooks>>>(iter: I) -> Self {
        Self {
            members: iter.into_iter().collect(),
        }
    }
}

/// Appends `text` to a tool result: to its last text block after a blank line, or as a
/// new text block.
pub fn append_to_output(output: &mut ToolOutput, text: &str) {
    if text.trim().is_empty() {
        return;
    }
    match output.content.iter_mut().rev().find_map(|b| match b {
        ContentBlock::Text { text } => Some(text),
        _ => None,
    }) {
        Some(last) if !last.trim().is_empty() => {
            last.push_str("\n\n");
            last.push_str(text);
        }
        Some(last) => *last = text.to_string(),
        None => output.content.push(ContentBlock::text(text)),
    }
}

#[async_trait]
impl Hooks for HookList {
    async fn before_tool(&self, ctx: &HookContext, call: &ToolCall) -> ToolDecision {
        let mut current = call.clone();
        let mut rewritten = false;
        let mut ask: Option<Option<String>> = None;
        for member in &self.members {
            let sub = ctx.fork();
            let decision = member.before_tool(&sub, &current).await;
            let answer = match &decision {
                ToolDecision::Allow => None,
                ToolDecision::Deny { reason } => Some((HookOutcome::Deny, Some(reason.clone()))),
                ToolDecision::Ask { reason, .. } => Some((HookOutcome::Ask, reason.clone())),
                ToolDecision::Rewrite { .. } => Some((HookOutcome::Rewrite, None)),
                ToolDecision::Halt { reason } => Some((HookOutcome::Halt, Some(reason.clone()))),
            };
            ctx.absorb(member.as_ref(), sub, answer);
            match decision {
                ToolDecision::Allow => {}
                ToolDecision::Deny { .. } | ToolDecision::Halt { .. } => return decision,
                ToolDecision::Rewrite { args } => {
                    current.args = args;
                    rewritten = true;
                }
                ToolDecision::Ask { reason, args } => {
                    if let Some(args) = args {
                        current.args = args;
                        rewritten = true;
                    }
                    if ask.is_none() {
                        ask = Some(reason);
                    }
                }
            }
        }
        let args = rewritten.then_some(current.args);
        match (ask, args) {
            (Some(reason), args) => ToolDecision::Ask { reason, args },
            (None, Some(args)) => ToolDecision::Rewrite { args },
            (None, None) => ToolDecision::Allow,
        }
    }

    async fn after_tool(
        &self,
        ctx: &HookContext,
        call: &ToolCall,
        result: &ToolOutput,
    ) -> ResultDecision {
        let mut current: Option<ToolOutput> = None;
        for member in &self.members {
            let sub = ctx.fork();
            let decision = member
                .after_tool(&sub, call, current.as_ref().unwrap_or(result))
                .await;
            let answer = match &decision {
                ResultDecision::Keep => None,
                ResultDecision::Append { text } => Some((HookOutcome::Append, Some(text.clone()))),
                ResultDecision::Replace { .. } => Some((HookOutcome::Replace, None)),
                ResultDecision::Halt { reason } => Some((HookOutcome::Halt, Some(reason.clone()))),
            };
            ctx.absorb(member.as_ref(), sub, answer);
            match decision {
                ResultDecision::Keep => {}
                ResultDecision::Append { text } => {
                    let output = current.get_or_insert_with(|| result.clone());
                    append_to_output(output, &text);
                }
                ResultDecision::Replace { result } => current = Some(result),
                ResultDecision::Halt { reason } => {
                    // The halt is in the reports (the loop looks there); what earlier
                    // hooks changed is kept.
                    return match current {
                        Some(result) => ResultDecision::Replace { result },
                        None => ResultDecision::Halt { reason },
                    };
                }
            }
        }
        match current {
            Some(result) => ResultDecision::Replace { result },
            None => ResultDecision::Keep,
        }
    }

    async fn user_prompt(&self, ctx: &HookContext, prompt: &str) -> PromptDecision {
        let mut context = Vec::new();
        for member in &self.members {
            let sub = ctx.fork();
            let decision = member.user_prompt(&sub, prompt).await;
            let answer = match &decision {
                PromptDecision::Keep => None,
                PromptDecision::Block { reason } => {
                    Some((HookOutcome::Block, Some(reason.clone())))
                }
                PromptDecision::AddContext { text } => {
                    Some((HookOutcome::AddContext, Some(text.clone())))
                }
            };
            ctx.absorb(member.as_ref(), sub, answer);
            match decision {
                PromptDecision::Keep => {}
                PromptDecision::Block { .. } => return decision,
                PromptDecision::AddContext { text } => context.push(text),
            }
        }
        join_context(context).map_or(PromptDecision::Keep, |text| PromptDecision::AddContext {
            text,
        })
    }

    async fn stop(&self, ctx: &HookContext, stop: &StopRequest) -> StopDecision {
        for member in &self.members {
            let sub = ctx.fork();
            let decision = member.stop(&sub, stop).await;
            let answer = stop_answer(&decision);
            ctx.absorb(member.as_ref(), sub, answer);
            if let StopDecision::Continue { .. } = decision {
                return decision;
            }
        }
        StopDecision::Accept
    }

    async fn subagent_start(&self, ctx: &HookContext, prompt: &str) -> StartDecision {
        let mut context = Vec::new();
        for member in &self.members {
            let sub = ctx.fork();
            let decision = member.subagent_start(&sub, prompt).await;
            let answer = match &decision {
                StartDecision::Keep => None,
                StartDecision::AddContext { text } => {
                    Some((HookOutcome::AddContext, Some(text.clone())))
                }
            };
            ctx.absorb(member.as_ref(), sub, answer);
            if let StartDecision::AddContext { text } = decision {
                context.push(text);
            }
        }
        join_context(context).map_or(StartDecision::Keep, |text| StartDecision::AddContext {
            text,
        })
    }

    async fn subagent_stop(&self, ctx: &HookContext, stop: &StopRequest) -> StopDecision {
        for member in &self.members {
            let sub = ctx.fork();
            let decision = member.subagent_stop(&sub, stop).await;
            let answer = stop_answer(&decision);
            ctx.absorb(member.as_ref(), sub, answer);
            if let StopDecision::Continue { .. } = decision {
                return decision;
            }
        }
        StopDecision::Accept
    }

    async fn session_start(&self, ctx: &HookContext, source: SessionSource) -> StartDecision {
        let mut context = Vec::new();
        for member in &self.members {
            let sub = ctx.fork();
            let decision = member.session_start(&sub, source).await;
            let answer = match &decision {
                StartDecision::Keep => None,
                StartDecision::AddContext { text } => {
                    Some((HookOutcome::AddContext, Some(text.clone())))
                }
            };
            ctx.absorb(member.as_ref(), sub, answer);
            if let StartDecision::AddContext { text } = decision {
                context.push(text);
            }
        }
        join_context(context).map_or(StartDecision::Keep, |text| StartDecision::AddContext {
            text,
        })
    }

    async fn session_end(&self, ctx: &HookContext, end: &SessionEnd) {
        for member in &self.members {
            let sub = ctx.fork();
            member.session_end(&sub, end).await;
            ctx.absorb(member.as_ref(), sub, None);
        }
    }

    async fn pre_compact(&self, ctx: &HookContext, trigger: CompactTrigger) {
        for member in &self.members {
            let sub = ctx.fork();
            member.pre_compact(&sub, trigger).await;
            ctx.absorb(member.as_ref(), sub, None);
        }
    }
}

/// What a stop decision reports (`None`: accepted, nothing to report).
fn stop_answer(decision: &StopDecision) -> Option<(HookOutcome, Option<String>)> {
    match decision {
        StopDecision::Accept => None,
        StopDecision::Continue { reason } => Some((HookOutcome::Continue, Some(reason.clone()))),
    }
}

/// The non-blank parts of `context`, joined by blank lines (`None` when there are none).
fn join_context(context: Vec<String>) -> Option<String> {
    let parts: Vec<String> = context
        .into_iter()
        .filter(|t| !t.trim().is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}
