//! [`Agent`], its builder ([`builder`]), and [`Run`], the event stream of one prompt or
//! compaction ([`stream`]).

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent_sandbox::AgentSandbox;
use crate::context::{AutoCompact, ContextSettings, ContextState, ContextUsage};
use crate::emit::{Batch, Emitter, MessageLog};
use crate::event::{AgentEvent, RunKind, RunStatus};
use crate::hooks::{HookReport, Hooks, SessionEnd, SessionSource};
use crate::inner::{Inner, State};
use crate::into_arc::IntoArc;
use crate::message::{Message, UserInput};
use crate::permission::{Approver, PermissionMode};
use crate::provider::{ModelInfo, Provider, ReasoningLevel, ToolSpec};
use crate::sandbox::policy::SandboxPolicy;
use crate::sandbox::report::{SandboxReport, SandboxSupport};
use crate::session::{SessionError, SessionRecord, SessionStore};
use crate::spill::{OutputBudget, Spill};
use crate::structured::OutputSpec;
use crate::tool::{PlanItem, Tool};
use crate::tool_source::{DynamicTools, ToolSource};
use crate::usage::Usage;

mod builder;
mod finish;
mod stream;
#[cfg(test)]
mod tests;
mod update;

pub use builder::AgentBuilder;
pub use stream::{AbortHandle, Run};
pub use update::AgentUpdate;

/// Default number of model calls one prompt may make.
pub const DEFAULT_MAX_STEPS: u32 = 50;
/// Default number of trailing messages a compaction keeps verbatim.
pub const DEFAULT_COMPACT_KEEP_TAIL: usize = 4;
/// Bursts (see `run::Batch`) a run's channel holds before the loop waits for its reader.
const EVENT_BUFFER: usize = 32;

/// A snapshot of an agent's state, readable while a run streams.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentState {
    /// Provider id.
    pub provider: String,
    /// Current model id.
    pub model: String,
    /// Current reasoning level.
    pub reasoning: ReasoningLevel,
    /// Current permission mode.
    pub mode: PermissionMode,
    /// Messages in the transcript.
    pub message_count: usize,
    /// A run is in flight and has not been aborted, or a run is queued.
    pub busy: bool,
    /// Cumulative usage.
    pub usage: Usage,
}

/// A coding agent: a transcript, a provider, tools and a permission gate.
///
/// Cloning is cheap and every clone drives the same agent. Runs are serialised: a prompt
/// made while another runs waits its turn.
#[derive(Clone)]
pub struct Agent {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("provider", &self.inner.provider.id())
            .field("state", &self.state())
            .finish()
    }
}

impl Agent {
    /// Sends a prompt. The returned [`Run`] streams its events; the run starts at once (or
    /// when the previous run finishes) whether or not the stream is polled, and it is
    /// aborted if the `Run` is dropped before it finishes. Must be called inside a Tokio
    /// runtime.
    pub fn prompt(&self, input: impl Into<UserInput>) -> Run {
        self.prompt_with(input.into(), None)
    }

    /// A prompt run, with the structured output its answer must match, if any.
    pub(crate) fn prompt_with(&self, input: UserInput, output: Option<Arc<OutputSpec>>) -> Run {
        self.spawn_run(RunKind::Prompt, move |inner, em| async move {
            inner.sandbox.announce(&inner.tools, &em).await;
            crate::run::prompt(inner, input, em, output).await
        })
    }

    /// Summarises the transcript through the provider into one synthetic user message
    /// (keeping the last few messages and the pinned notes verbatim; see
    /// [`crate::compaction`]). Queued like a prompt.
    pub fn compact(&self) -> Run {
        self.spawn_run(RunKind::Compact, crate::compaction::run_manual)
    }

    fn spawn_run<F, Fut>(&self, kind: RunKind, body: F) -> Run
    where
        F: FnOnce(Arc<Inner>, Emitter) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = (RunStatus, Option<String>)> + Send + 'static,
    {
        let (tx, rx) = mpsc::channel(EVENT_BUFFER);
        let cancel = CancellationToken::new();
        let inner = self.inner.clone();
        let em = Emitter::new(tx, cancel.clone());
        let log = em.log.clone();
        let span = {
            let mut state = inner.state();
            state.queued += 1;
            crate::telemetry::run_span(kind, inner.provider.id(), &state.model)
        };
        let task = async move {
            let _turn = inner.queue.lock().await;
            let usage_before = {
                let mut state = inner.state();
                state.queued -= 1;
                state.busy = true;
                state.active = Some(em.cancel.clone());
                state.usage
            };
            em.emit(AgentEvent::RunStarted { kind }).await;
            let (status, final_text) = if em.cancel.is_cancelled() {
                (RunStatus::Aborted, None)
            } else {
                body(inner.clone(), em.clone()).await
            };
            // Background sub-agents do not outlive the run that started them.
            em.scope.close().await;
            let usage = {
                let mut state = inner.state();
                state.busy = false;
                state.active = None;
                crate::telemetry::usage_since(&usage_before, &state.usage)
            };
            crate::telemetry::finish_run(&tracing::Span::current(), status, &usage);
            em.emit(AgentEvent::RunFinished { status, final_text })
                .await;
        };
        tokio::spawn(tracing::Instrument::instrument(task, span));
        Run {
            rx,
            burst: Vec::new().into_iter(),
            abort: AbortHandle(cancel),
            log,
        }
    }

    /// Queues text to be added as a user message before the next model call of the run in
    /// flight (or of the next run, when idle).
    pub fn steer(&self, input: impl Into<UserInput>) {
        let input = input.into();
        if !input.is_empty() {
            self.inner.state().steering.push(input.into_message());
        }
    }

    /// Aborts the run in flight, if any. Returns whether there was one.
    pub fn abort(&self) -> bool {
        match self.inner.state().active.as_ref() {
            Some(token) if !token.is_cancelled() => {
                token.cancel();
                true
            }
            _ => false,
        }
    }

    /// A snapshot of the agent's state.
    pub fn state(&self) -> AgentState {
        let state = self.inner.state();
        AgentState {
            provider: self.inner.provider.id().to_string(),
            model: state.model.clone(),
            reasoning: state.reasoning,
            mode: state.mode,
            message_count: state.messages.len(),
            busy: state.queued > 0
                || (state.busy && state.active.as_ref().is_some_and(|t| !t.is_cancelled())),
            usage: state.usage,
        }
    }

    /// A copy of the transcript.
    pub fn messages(&self) -> Vec<Message> {
        self.inner.state().messages.clone()
    }

    /// The session checklist last set by the plan tool.
    pub fn plan(&self) -> Vec<PlanItem> {
        self.inner.state().plan.clone()
    }

    /// How full the context window is now: the last call's reported tokens plus an
    /// estimate of what was added since (or an estimate of the whole request when usage was
    /// never reported), and the window (see [`crate::context`]).
    pub fn context_usage(&self) -> ContextUsage {
        crate::context::usage_now(&self.inner)
    }

    /// The context window of the current model in tokens (the override, else the
    /// catalogue's, else [`crate::context::DEFAULT_CONTEXT_WINDOW`]).
    pub fn context_window(&self) -> u64 {
        crate::context::window(&self.inner)
    }

    /// The auto-compact setting.
    pub fn auto_compact(&self) -> AutoCompact {
        self.inner.state().ctx.auto
    }

    /// The pinned notes, in the order they were pinned.
    pub fn notes(&self) -> Vec<String> {
        self.inner.state().ctx.notes.clone()
    }

    /// Pins `text` (ignored when blank): every compacted transcript carries it verbatim.
    /// Recorded to the session.
    pub async fn pin_note(&self, text: impl Into<String>) -> Result<(), SessionError> {
        let text = text.into();
        if text.trim().is_empty() {
            return Ok(());
        }
        let notes = {
            let mut state = self.inner.state();
            state.ctx.notes.push(text);
            state.ctx.notes.clone()
        };
        self.record_notes(notes).await
    }

    /// Unpins the note at `index` (0-based, as [`Agent::notes`] lists them) and returns it,
    /// or `None` when there is no such note. Recorded to the session.
    pub async fn unpin_note(&self, index: usize) -> Result<Option<String>, SessionError> {
        let (removed, notes) = {
            let mut state = self.inner.state();
            if index >= state.ctx.notes.len() {
                return Ok(None);
            }
            let removed = state.ctx.notes.remove(index);
            (removed, state.ctx.notes.clone())
        };
        self.record_notes(notes).await?;
        Ok(Some(removed))
    }

    async fn record_notes(&self, notes: Vec<String>) -> Result<(), SessionError> {
        match &self.inner.session {
            Some((store, id)) => store.append(id, &SessionRecord::Notes { notes }).await,
            None => Ok(()),
        }
    }

    /// The directory over-budget tool output is spilled to.
    pub fn spill_dir(&self) -> &std::path::Path {
        &self.inner.ctx.spill.dir
    }

    /// The provider.
    pub fn provider(&self) -> &Arc<dyn Provider> {
        &self.inner.provider
    }

    /// Catalogue entry of the current model, if the provider knows it.
    pub fn model_info(&self) -> Option<ModelInfo> {
        let model = self.inner.state().model.clone();
        self.inner.provider.model_info(&model)
    }

    /// The agent's own tools (without those of its tool sources, which
    /// [`Agent::tool_specs`] includes).
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.inner.tools
    }

    /// The tool specs offered to the model: the agent's own tools and the current tools of
    /// its tool sources (changes a source has not applied yet show after its next refresh).
    pub fn tool_specs(&self) -> Vec<ToolSpec> {
        self.inner.all_specs()
    }

    /// The workspace directory.
    pub fn cwd(&self) -> &std::path::Path {
        &self.inner.cwd
    }

    /// The session this agent records to, if any.
    pub fn session_id(&self) -> Option<&str> {
        self.inner.session.as_ref().map(|(_, id)| id.as_str())
    }

    /// Changes settings for later model calls (model, reasoning, system prompt, approver,
    /// permission mode, context window, auto-compact, sandbox, hooks), applied together by
    /// [`AgentUpdate::apply`].
    pub fn update(&self) -> AgentUpdate<'_> {
        AgentUpdate::new(self)
    }

    /// The system prompt sent with every call.
    pub fn system_prompt(&self) -> Option<String> {
        self.inner.state().system.clone()
    }

    /// The OS sandbox policy for commands.
    pub fn sandbox(&self) -> SandboxPolicy {
        self.inner.sandbox.policy()
    }

    /// What the sandbox enforces for this agent's commands (the content of
    /// [`AgentEvent::SandboxReport`]), for front ends that show it in their state.
    pub fn sandbox_report(&self) -> SandboxReport {
        self.inner.sandbox.report(&self.inner.tools)
    }

    /// Runs the `session_start` hooks. A host calls this when it starts, resumes or
    /// clears a session. Context they add is queued like [`Agent::steer`] text, so it
    /// lands before the next model call. Returns the hooks' reports (there is no run
    /// to carry them as events).
    pub async fn session_start(&self, source: SessionSource) -> Vec<HookReport> {
        let (reports, context) = crate::hook_points::session_start(&self.inner, source).await;
        if let Some(text) = context {
            let message = Message::user_text(text).synthetic();
            self.inner.state().steering.push(message);
        }
        reports
    }

    /// Runs the `session_end` hooks (advisory). A host calls this when a session ends
    /// (its input closed, the session was cleared or closed). Returns the hooks' reports.
    pub async fn session_end(&self, end: SessionEnd) -> Vec<HookReport> {
        crate::hook_points::session_end(&self.inner, &end).await
    }

    /// Drops the whole transcript (and the plan and the pinned notes), recording the clear
    /// to the session.
    pub async fn clear(&self) -> Result<(), SessionError> {
        {
            let mut state = self.inner.state();
            state.messages.clear();
            state.plan.clear();
            state.ctx.notes.clear();
            state.ctx.tracker.reset();
        }
        match &self.inner.session {
            Some((store, id)) => store.append(id, &SessionRecord::Cleared).await,
            None => Ok(()),
        }
    }

    /// A new agent with the same configuration and a copy of the transcript, recording to
    /// no session; its usage starts at zero.
    pub fn fork(&self) -> Agent {
        self.fork_inner(None, None)
    }

    /// Like [`Agent::fork`], recording the copied transcript to a new session `id` in `store`.
    pub async fn fork_into(
        &self,
        store: impl IntoArc<dyn SessionStore>,
        id: impl Into<String>,
    ) -> Result<Agent, SessionError> {
        let (store, id) = (store.into_arc(), id.into());
        let forked = self.fork_inner(Some((store.clone(), id.clone())), None);
        let messages = forked.messages();
        store
            .append(&id, &SessionRecord::Replaced { messages })
            .await?;
        let notes = forked.notes();
        if !notes.is_empty() {
            store.append(&id, &SessionRecord::Notes { notes }).await?;
        }
        let mut granted: Vec<String> = forked.inner.state().granted.iter().cloned().collect();
        granted.sort();
        for tool in granted {
            store.append(&id, &SessionRecord::Granted { tool }).await?;
        }
        Ok(forked)
    }

    /// A copy of this agent recording to `session`. For a sub-agent (`child`), the copy
    /// takes its parent's approver, permission mode, standing grants, hooks and sandbox,
    /// and starts with no plan.
    pub(crate) fn fork_inner(
        &self,
        session: Option<(Arc<dyn SessionStore>, String)>,
        child: Option<(&Inner, Arc<crate::subagent_info::SubagentInfo>)>,
    ) -> Agent {
        let inner = &self.inner;
        // Read the parent first: it may be this very agent (its lock is not reentrant).
        let from_parent = child.as_ref().map(|(parent, info)| {
            let state = parent.state();
            let approver = state
                .approver
                .clone()
                .map(|a| crate::permission::child_approver(a, info.clone()));
            (approver, state.mode, state.granted.clone())
        });
        let state = inner.state();
        let (approver, mode, granted) = match from_parent {
            Some(inherited) => inherited,
            None => (state.approver.clone(), state.mode, state.granted.clone()),
        };
        let (sandbox, hooks, plan) = match &child {
            Some((parent, _)) => (parent.sandbox.inherit(), parent.hooks.fork(), Vec::new()),
            None => (inner.sandbox.fork(), inner.hooks.fork(), state.plan.clone()),
        };
        // A sub-agent's calls use the local disk and processes (see `crate::editor`).
        let editor = match &child {
            Some(_) => crate::editor::Editor::default(),
            None => inner.editor.clone(),
        };
        let guard = match &child {
            Some((parent, _)) => {
                Arc::new(crate::guard::Guard::for_child(&inner.guard, &parent.guard))
            }
            None => inner.guard.clone(),
        };
        let subagent = match child {
            Some((_, info)) => Some(info),
            None => inner.subagent.clone(),
        };
        Agent {
            inner: Arc::new(Inner {
                provider: inner.provider.clone(),
                specs: inner.specs.clone(),
                spec_tokens: inner.spec_tokens.clone(),
                sources: inner.sources.fork(),
                tools: inner.tools.clone(),
                max_steps: inner.max_steps,
                cwd: inner.cwd.clone(),
                compact_keep_tail: inner.compact_keep_tail,
                session,
                ctx: inner.ctx.clone(),
                sandbox,
                editor,
                hooks,
                guard,
                subagent,
                queue: tokio::sync::Mutex::new(()),
                state: Mutex::new(State {
                    messages: state.messages.clone(),
                    system: state.system.clone(),
                    approver,
                    model: state.model.clone(),
                    reasoning: state.reasoning,
                    mode,
                    usage: Usage::default(),
                    run_usage: Usage::default(),
                    busy: false,
                    queued: 0,
                    active: None,
                    steering: Vec::new(),
                    granted,
                    plan,
                    ctx: state.ctx.clone(),
                }),
            }),
        }
    }
}
