//! The shared state behind an [`crate::Agent`] and its runs.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

use crate::event::{AgentEvent, ErrorCode};
use crate::message::Message;
use crate::permission::{Approver, PermissionMode};
use crate::provider::{Provider, ReasoningLevel, ToolSpec};
use crate::session::SessionStore;
use crate::tool::{PlanItem, Tool};
use crate::tool_source::DynamicTools;
use crate::usage::Usage;

pub(crate) struct Inner {
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) tools: Vec<Arc<dyn Tool>>,
    /// The tools' specs, built on first use and kept: schemas are costly to generate, and
    /// an agent that never calls the model (an idle session) should not hold them.
    pub(crate) specs: std::sync::OnceLock<Vec<ToolSpec>>,
    /// The estimated tokens of the agent's own tool specs, for a context estimate before the
    /// first model call (kept apart from `specs`, so an idle agent holds a number, not the
    /// specs).
    pub(crate) spec_tokens: std::sync::OnceLock<u64>,
    /// Tools that may change between model calls (empty for most agents).
    pub(crate) sources: DynamicTools,
    pub(crate) max_steps: u32,
    pub(crate) cwd: PathBuf,
    pub(crate) compact_keep_tail: usize,
    pub(crate) session: Option<(Arc<dyn SessionStore>, String)>,
    /// The OS sandbox policy for commands, and whether it was reported.
    pub(crate) sandbox: crate::agent_sandbox::AgentSandbox,
    /// The client's buffers and terminals the tools use ([`crate::editor`]; none: the disk).
    pub(crate) editor: crate::editor::Editor,
    /// Lifecycle hooks (none: nothing is consulted).
    pub(crate) hooks: crate::hook_points::AgentHooks,
    /// Permission rules, the spend cap and the fallback model ([`crate::guard`]).
    pub(crate) guard: Arc<crate::guard::Guard>,
    /// Set when this agent is a sub-agent: which one, and where it was started from.
    pub(crate) subagent: Option<Arc<crate::subagent_info::SubagentInfo>>,
    /// Context settings fixed at build time: summary prompt, tool-output budget, spill dir.
    pub(crate) ctx: Arc<crate::context::ContextSettings>,
    /// Serialises runs: a second prompt waits here, in FIFO order.
    pub(crate) queue: tokio::sync::Mutex<()>,
    pub(crate) state: Mutex<State>,
}

pub(crate) struct State {
    pub(crate) messages: Vec<Message>,
    pub(crate) system: Option<String>,
    pub(crate) approver: Option<Arc<dyn Approver>>,
    pub(crate) model: String,
    pub(crate) reasoning: ReasoningLevel,
    pub(crate) mode: PermissionMode,
    pub(crate) usage: Usage,
    /// The usage of the prompt run in flight (its sub-agents' included), for the spend cap.
    pub(crate) run_usage: Usage,
    pub(crate) busy: bool,
    /// Runs created but still waiting for the queue.
    pub(crate) queued: usize,
    pub(crate) active: Option<CancellationToken>,
    pub(crate) steering: Vec<Message>,
    pub(crate) granted: HashSet<String>,
    pub(crate) plan: Vec<PlanItem>,
    /// Context accounting, window, auto-compact setting and pinned notes.
    pub(crate) ctx: crate::context::ContextState,
}

impl State {
    /// Adds one model call's usage to the agent's total and the run's.
    pub(crate) fn add_usage(&mut self, turn: &Usage) {
        self.usage += turn;
        self.run_usage += turn;
    }
}

impl Inner {
    /// The tools' specs (built on first use).
    pub(crate) fn specs(&self) -> &[ToolSpec] {
        self.specs
            .get_or_init(|| self.tools.iter().map(|t| t.spec()).collect())
    }

    /// Estimated tokens of the agent's own tool specs: from the specs when they are built,
    /// else from each tool's spec made and dropped one at a time.
    pub(crate) fn spec_tokens(&self) -> u64 {
        *self.spec_tokens.get_or_init(|| match self.specs.get() {
            Some(specs) => crate::context::estimate_preamble_tokens(None, specs),
            None => self
                .tools
                .iter()
                .map(|t| crate::context::estimate_preamble_tokens(None, &[t.spec()]))
                .sum(),
        })
    }

    /// Estimated tokens of the system prompt and every tool spec offered (tool sources'
    /// included), without building and keeping the agent's specs.
    pub(crate) fn preamble_tokens(&self, system: Option<&str>) -> u64 {
        let dynamic = match self.sources.is_empty() {
            true => 0,
            false => crate::context::estimate_preamble_tokens(
                None,
                &self.sources.specs(&|n| self.is_static(n)),
            ),
        };
        crate::context::estimate_preamble_tokens(system, &[]) + self.spec_tokens() + dynamic
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding this lock; recover the data if that ever changes.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The agent's tool called `name`, or else its tool sources'.
    pub(crate) fn tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        if let Some(tool) = self.tools.iter().find(|t| t.name() == name) {
            return Some(tool.clone());
        }
        let from_source = match self.sources.is_empty() {
            true => None,
            false => self.sources.tool(name, &|n| self.is_static(n)),
        };
        // An earlier name of one of the agent's own tools (a resumed transcript's).
        from_source.or_else(|| self.tools.iter().find(|t| t.answers_to(name)).cloned())
    }

    /// Every tool spec offered to the model: the agent's own, then its tool sources'.
    pub(crate) fn all_specs(&self) -> Vec<ToolSpec> {
        let specs = self.specs();
        if self.sources.is_empty() {
            return specs.to_vec();
        }
        let dynamic = self.sources.specs(&|n| self.is_static(n));
        let mut all = Vec::with_capacity(specs.len() + dynamic.len());
        all.extend_from_slice(specs);
        all.extend_from_slice(&dynamic);
        all
    }

    /// Lets the tool sources apply pending changes before a model call; an abort stops the
    /// wait.
    pub(crate) async fn refresh_sources(&self, cancel: &CancellationToken) {
        if self.sources.is_empty() {
            return;
        }
        tokio::select! {
            _ = cancel.cancelled() => {}
            _ = self.sources.refresh() => {}
        }
    }

    fn is_static(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.name() == name)
    }
}

pub(crate) fn error_event(code: ErrorCode, message: impl Into<String>) -> AgentEvent {
    AgentEvent::Error {
        code,
        message: message.into(),
        recoverable: false,
    }
}
