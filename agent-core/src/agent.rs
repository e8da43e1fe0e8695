//! [`Agent`], its builder, and [`Run`], the event stream of one prompt or compaction.

use std::collections::HashSet;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::context::{AutoCompact, ContextSettings, ContextState, ContextUsage};
use crate::emit::{Batch, Emitter, MessageLog};
use crate::event::{AgentEvent, RunKind, RunStatus};
use crate::hooks::{HookList, HookReport, Hooks, SessionEnd, SessionSource};
use crate::inner::{Inner, State};
use crate::into_arc::IntoArc;
use crate::message::{Message, UserInput};
use crate::permission::{Approver, PermissionMode};
use crate::provider::{ModelInfo, Provider, ReasoningLevel, ToolSpec};
use crate::sandbox::{AgentSandbox, SandboxPolicy, SandboxReport, SandboxSupport};
use crate::session::{SessionError, SessionRecord, SessionStore};
use crate::spill::{OutputBudget, Spill};
use crate::structured::OutputSpec;
use crate::tool::{PlanItem, Tool};
use crate::tool_source::{DynamicTools, ToolSource};
use crate::usage::Usage;

/// Default number of model calls one prompt may make.
pub const DEFAULT_MAX_STEPS: u32 = 50;
/// Default number of trailing messages a compaction keeps verbatim.
pub const DEFAULT_COMPACT_KEEP_TAIL: usize = 4;
/// Bursts (see `run::Batch`) a run's channel holds before the loop waits for its reader.
const EVENT_BUFFER: usize = 32;

/// Configures and builds an [`Agent`].
#[must_use = "an AgentBuilder does nothing until `build()` is called"]
pub struct AgentBuilder {
    provider: Arc<dyn Provider>,
    model: Option<String>,
    reasoning: ReasoningLevel,
    system_prompt: Option<String>,
    append_system_prompt: Vec<String>,
    tools: Vec<Arc<dyn Tool>>,
    sources: Vec<Arc<dyn ToolSource>>,
    mode: PermissionMode,
    approver: Option<Arc<dyn Approver>>,
    max_steps: u32,
    cwd: Option<PathBuf>,
    session: Option<(Arc<dyn SessionStore>, String)>,
    messages: Vec<Message>,
    compact_keep_tail: usize,
    sandbox: Option<SandboxPolicy>,
    sandbox_support: Option<SandboxSupport>,
    hooks: crate::hooks::HookSetup,
    context: ContextOptions,
}

/// The builder's context settings (see [`crate::context`]).
#[derive(Debug, Default)]
struct ContextOptions {
    window: Option<u64>,
    auto: AutoCompact,
    compaction_prompt: Option<String>,
    budget: OutputBudget,
    spill_dir: Option<PathBuf>,
    note_tool: bool,
    notes: Vec<String>,
}

impl AgentBuilder {
    /// Model id; defaults to the provider's first catalogue entry.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Reasoning effort (default `medium`).
    pub fn reasoning(mut self, level: ReasoningLevel) -> Self {
        self.reasoning = level;
        self
    }

    /// Replaces the system prompt.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Appends a section to the system prompt (may be called several times).
    pub fn append_system_prompt(mut self, text: impl Into<String>) -> Self {
        self.append_system_prompt.push(text.into());
        self
    }

    /// Adds a tool (a value or an `Arc`, see [`IntoArc`]).
    pub fn tool(mut self, tool: impl IntoArc<dyn Tool>) -> Self {
        self.tools.push(tool.into_arc());
        self
    }

    /// Adds tools (values or `Arc`s, see [`IntoArc`]).
    pub fn tools<T: IntoArc<dyn Tool>>(mut self, tools: impl IntoIterator<Item = T>) -> Self {
        self.tools.extend(tools.into_iter().map(IntoArc::into_arc));
        self
    }

    /// Adds a source of tools that may change between model calls (such as the tools of
    /// MCP servers); it is consulted before every model call. The agent's own tools win
    /// over a source's tool of the same name.
    pub fn tool_source(mut self, source: impl IntoArc<dyn ToolSource>) -> Self {
        self.sources.push(source.into_arc());
        self
    }

    /// Permission mode (default `auto`).
    pub fn permission_mode(mut self, mode: PermissionMode) -> Self {
        self.mode = mode;
        self
    }

    /// The host's approver for permission prompts (a value or an `Arc`, see [`IntoArc`]).
    /// Without one, prompts are denied.
    pub fn approver(mut self, approver: impl IntoArc<dyn Approver>) -> Self {
        self.approver = Some(approver.into_arc());
        self
    }

    /// Maximum model calls per prompt (default [`DEFAULT_MAX_STEPS`]).
    pub fn max_steps(mut self, steps: u32) -> Self {
        self.max_steps = steps.max(1);
        self
    }

    /// Workspace directory for tools (default: the process's current directory).
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Records the transcript to `store` under session `id`.
    pub fn session(mut self, store: impl IntoArc<dyn SessionStore>, id: impl Into<String>) -> Self {
        self.session = Some((store.into_arc(), id.into()));
        self
    }

    /// Loads session `id` from `store` as the starting transcript and keeps recording to it.
    pub async fn resume(
        mut self,
        store: impl IntoArc<dyn SessionStore>,
        id: impl Into<String>,
    ) -> Result<Self, SessionError> {
        let (store, id) = (store.into_arc(), id.into());
        let records = store.load(&id).await?;
        self.messages = SessionRecord::replay(&records);
        self.context.notes = SessionRecord::replay_notes(&records);
        self.session = Some((store, id));
        Ok(self)
    }

    /// Starting transcript.
    pub fn messages(mut self, messages: Vec<Message>) -> Self {
        self.messages = messages;
        self
    }

    /// How many trailing messages compaction keeps verbatim (default 4; extended back so
    /// that tool results keep the message with their calls).
    pub fn compact_keep_tail(mut self, n: usize) -> Self {
        self.compact_keep_tail = n;
        self
    }

    /// The context window in tokens, overriding the model catalogue's
    /// (`--context-window`; see [`crate::context::parse_context_window`]). 0 means no
    /// override.
    pub fn context_window(mut self, tokens: u64) -> Self {
        self.context.window = (tokens > 0).then_some(tokens);
        self
    }

    /// When the agent compacts on its own (default at 85 % of the window;
    /// `--auto-compact`, parsed with [`AutoCompact`]'s `FromStr`).
    pub fn auto_compact(mut self, auto: AutoCompact) -> Self {
        self.context.auto = auto;
        self
    }

    /// Replaces the summary prompt of compaction (default
    /// [`crate::compaction::DEFAULT_COMPACTION_PROMPT`]).
    pub fn compaction_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.context.compaction_prompt = Some(prompt.into()).filter(|p| !p.trim().is_empty());
        self
    }

    /// Bytes of a tool result's text the model gets before the result is spilled to a
    /// file (default [`crate::spill::DEFAULT_TOOL_OUTPUT_BUDGET`]; `usize::MAX` never
    /// spills). Per-tool budgets set with [`AgentBuilder::tool_output_budget_for`] stay.
    pub fn tool_output_budget(mut self, bytes: usize) -> Self {
        self.context.budget = std::mem::take(&mut self.context.budget).with_default(bytes);
        self
    }

    /// The tool-output budget of the tool called `name`.
    pub fn tool_output_budget_for(mut self, name: impl Into<String>, bytes: usize) -> Self {
        self.context.budget = std::mem::take(&mut self.context.budget).with_tool(name, bytes);
        self
    }

    /// The directory over-budget tool output is written to (a front end passes its
    /// session's directory). Default: `<temp>/agent-sdk-tool-output/<session id or a
    /// unique name>` ([`crate::spill::default_spill_root`]). Files here are readable by the
    /// file tools even outside the workspace ([`crate::spill::is_spill_file`]).
    pub fn spill_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.context.spill_dir = Some(dir.into());
        self
    }

    /// Offers the model the `note` tool ([`crate::notes::note_tool`]): `{text}` is pinned and
    /// carried verbatim into every compacted transcript.
    pub fn note_tool(mut self) -> Self {
        self.context.note_tool = true;
        self
    }

    /// Pinned notes to start with (a resumed session restores its own).
    pub fn notes(mut self, notes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.context.notes = notes.into_iter().map(Into::into).collect();
        self
    }

    /// The OS sandbox policy for the commands the agent's tools run (see
    /// [`crate::sandbox`]). Without it commands run unconfined, as [`SandboxPolicy::off`];
    /// front ends pass the `--sandbox` policy (default `workspace-write`).
    pub fn sandbox(mut self, policy: SandboxPolicy) -> Self {
        self.sandbox = Some(policy);
        self
    }

    /// What the kernel lets the sandbox enforce, instead of asking the agent's tools (which
    /// probe it): for hosts that probe once, and tests that simulate a kernel without
    /// Landlock. Tools apply only what this says is available.
    pub fn sandbox_support(mut self, support: SandboxSupport) -> Self {
        self.sandbox_support = Some(support);
        self
    }

    /// Adds lifecycle hooks (see [`crate::hooks`]): a value, or an `Arc` such as the
    /// command hooks a host loaded from a file (see [`IntoArc`]). Hooks added earlier are
    /// consulted first.
    pub fn hook(mut self, hooks: impl IntoArc<dyn Hooks>) -> Self {
        self.hooks.list.push(hooks.into_arc());
        self
    }

    /// How many times per run a stop hook may make the model go on (default
    /// [`crate::hooks::DEFAULT_MAX_STOP_CONTINUATIONS`]).
    pub fn max_stop_continuations(mut self, n: u32) -> Self {
        self.hooks.max_continuations = n;
        self
    }

    /// Builds the agent.
    pub fn build(self) -> Agent {
        let model = self
            .model
            .or_else(|| self.provider.models().first().map(|m| m.id.clone()))
            .unwrap_or_else(|| "default".to_string());
        let mut system = self.system_prompt.unwrap_or_default();
        for extra in self.append_system_prompt {
            if !system.is_empty() {
                system.push_str("\n\n");
            }
            system.push_str(&extra);
        }
        let cwd = self
            .cwd
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("."));
        let ContextOptions {
            window,
            auto,
            compaction_prompt,
            budget,
            spill_dir,
            note_tool,
            notes,
        } = self.context;
        let mut tools = self.tools;
        // A tool of the host's own called `note` wins; its calls pin nothing.
        let note_tool = note_tool && !tools.iter().any(|t| t.name() == crate::notes::NOTE_TOOL);
        if note_tool {
            tools.push(Arc::new(crate::notes::note_tool()));
        }
        let spill_dir = spill_dir.unwrap_or_else(|| {
            crate::spill::default_spill_dir(self.session.as_ref().map(|(_, id)| id.as_str()))
        });
        let ctx = Arc::new(ContextSettings {
            compaction_prompt,
            spill: Spill::new(spill_dir, budget),
            note_tool,
        });
        Agent {
            inner: Arc::new(Inner {
                provider: self.provider,
                specs: std::sync::OnceLock::new(),
                spec_tokens: std::sync::OnceLock::new(),
                sources: DynamicTools::new(self.sources),
                tools,
                max_steps: self.max_steps,
                cwd,
                compact_keep_tail: self.compact_keep_tail,
                session: self.session,
                ctx,
                sandbox: AgentSandbox::new(self.sandbox, self.sandbox_support),
                hooks: crate::hooks::AgentHooks::new(self.hooks),
                subagent: None,
                queue: tokio::sync::Mutex::new(()),
                state: Mutex::new(State {
                    messages: self.messages,
                    system: (!system.is_empty()).then_some(system),
                    approver: self.approver,
                    model,
                    reasoning: self.reasoning,
                    mode: self.mode,
                    usage: Usage::default(),
                    busy: false,
                    queued: 0,
                    active: None,
                    steering: Vec::new(),
                    granted: HashSet::new(),
                    plan: Vec::new(),
                    ctx: ContextState::new(window, auto, notes),
                }),
            }),
        }
    }
}

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
    /// Starts building an agent on `provider` (a value or an `Arc`, see [`IntoArc`]).
    pub fn builder(provider: impl IntoArc<dyn Provider>) -> AgentBuilder {
        AgentBuilder {
            provider: provider.into_arc(),
            model: None,
            reasoning: ReasoningLevel::default(),
            system_prompt: None,
            append_system_prompt: Vec::new(),
            tools: Vec::new(),
            sources: Vec::new(),
            mode: PermissionMode::default(),
            approver: None,
            max_steps: DEFAULT_MAX_STEPS,
            cwd: None,
            session: None,
            messages: Vec::new(),
            compact_keep_tail: DEFAULT_COMPACT_KEEP_TAIL,
            context: ContextOptions::default(),
            sandbox: None,
            sandbox_support: None,
            hooks: crate::hooks::HookSetup::default(),
        }
    }

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

    /// Overrides the context window for later calls (`None` or 0: back to the catalogue).
    pub fn set_context_window(&self, tokens: Option<u64>) {
        self.inner.state().ctx.window = tokens.filter(|t| *t > 0);
    }

    /// The auto-compact setting.
    pub fn auto_compact(&self) -> AutoCompact {
        self.inner.state().ctx.auto
    }

    /// Changes the auto-compact setting for later calls.
    pub fn set_auto_compact(&self, auto: AutoCompact) {
        self.inner.state().ctx.auto = auto;
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

    /// Switches the model for later calls.
    pub fn set_model(&self, model: impl Into<String>) {
        self.inner.state().model = model.into();
    }

    /// Sets the reasoning level for later calls.
    pub fn set_reasoning(&self, level: ReasoningLevel) {
        self.inner.state().reasoning = level;
    }

    /// The system prompt sent with every call.
    pub fn system_prompt(&self) -> Option<String> {
        self.inner.state().system.clone()
    }

    /// Replaces the system prompt for later calls (e.g. to add a goal to it).
    pub fn set_system_prompt(&self, prompt: Option<String>) {
        self.inner.state().system = prompt.filter(|p| !p.is_empty());
    }

    /// Replaces the approver for later permission prompts; `None` denies them. A fork keeps
    /// its parent's approver until this is called on it.
    pub fn set_approver(&self, approver: Option<Arc<dyn Approver>>) {
        self.inner.state().approver = approver;
    }

    /// Sets the permission mode for later calls.
    pub fn set_permission_mode(&self, mode: PermissionMode) {
        self.inner.state().mode = mode;
    }

    /// The OS sandbox policy for commands.
    pub fn sandbox(&self) -> SandboxPolicy {
        self.inner.sandbox.policy()
    }

    /// Sets the OS sandbox policy for later calls; the next prompt run reports it.
    pub fn set_sandbox(&self, policy: SandboxPolicy) {
        self.inner.sandbox.set_policy(policy);
    }

    /// What the sandbox enforces for this agent's commands (the content of
    /// [`AgentEvent::SandboxReport`]), for front ends that show it in their state.
    pub fn sandbox_report(&self) -> SandboxReport {
        self.inner.sandbox.report(&self.inner.tools)
    }

    /// Replaces the lifecycle hooks (see [`crate::hooks`]) for later hook points; an empty
    /// list removes them. A fork keeps its parent's hooks until this is called on it.
    pub fn set_hooks(&self, hooks: impl IntoIterator<Item = Arc<dyn Hooks>>) {
        self.inner
            .hooks
            .set(hooks.into_iter().collect::<HookList>());
    }

    /// Sets how many times per run a stop hook may make the model go on.
    pub fn set_max_stop_continuations(&self, n: u32) {
        self.inner.hooks.set_max_continuations(n);
    }

    /// Runs the `session_start` hooks. A host calls this when it starts, resumes or
    /// clears a session. Context they add is queued like [`Agent::steer`] text, so it
    /// lands before the next model call. Returns the hooks' reports (there is no run
    /// to carry them as events).
    pub async fn session_start(&self, source: SessionSource) -> Vec<HookReport> {
        let (reports, context) = crate::hooks::session_start(&self.inner, source).await;
        if let Some(text) = context {
            let message = Message::user_text(text).synthetic();
            self.inner.state().steering.push(message);
        }
        reports
    }

    /// Runs the `session_end` hooks (advisory). A host calls this when a session ends
    /// (its input closed, the session was cleared or closed). Returns the hooks' reports.
    pub async fn session_end(&self, end: SessionEnd) -> Vec<HookReport> {
        crate::hooks::session_end(&self.inner, &end).await
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
        Ok(forked)
    }

    /// A copy of this agent recording to `session`. For a sub-agent (`child`), the copy
    /// takes its parent's approver, permission mode, standing grants, hooks and sandbox,
    /// and starts with no plan.
    pub(crate) fn fork_inner(
        &self,
        session: Option<(Arc<dyn SessionStore>, String)>,
        child: Option<(&Inner, Arc<crate::subagent::SubagentInfo>)>,
    ) -> Agent {
        let inner = &self.inner;
        // Read the parent first: it may be this very agent (its lock is not reentrant).
        let from_parent = child.as_ref().map(|(parent, info)| {
            let state = parent.state();
            let approver = state
                .approver
                .clone()
                .map(|a| crate::subagent::child_approver(a, info.clone()));
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
                hooks,
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

/// Aborts a run from anywhere. Cheap to clone.
#[derive(Debug, Clone)]
pub struct AbortHandle(CancellationToken);

impl AbortHandle {
    /// Aborts the run: streaming, tools and approval waits stop, and the run ends with
    /// status `aborted`.
    pub fn abort(&self) {
        self.0.cancel();
    }

    /// Whether abort was requested.
    pub fn is_aborted(&self) -> bool {
        self.0.is_cancelled()
    }
}

/// The event stream of one prompt or compaction. Ends after [`AgentEvent::RunFinished`].
///
/// Dropping a `Run` before it finishes aborts it: read its events, or await
/// [`Run::finish`] or [`Run::collect_events`].
#[derive(Debug)]
#[must_use = "dropping a Run aborts it; read its events or await `finish()`"]
pub struct Run {
    rx: mpsc::Receiver<Batch>,
    /// The rest of the burst last received.
    burst: std::vec::IntoIter<AgentEvent>,
    abort: AbortHandle,
    /// The messages the run added to the transcript.
    pub(crate) log: MessageLog,
}

impl Run {
    /// A handle that aborts this run.
    pub fn abort_handle(&self) -> AbortHandle {
        self.abort.clone()
    }

    /// Aborts this run.
    pub fn abort(&self) {
        self.abort.abort();
    }

    /// Waits for the next event, then moves it and every further event already waiting (at
    /// most `limit` in all) to the end of `buf`. Returns how many were moved: 0 only when the
    /// run has ended (or `limit` is 0).
    ///
    /// A consumer that handles events in bursts (a front end writing one line per event)
    /// pays for synchronisation once per burst instead of once per event, and it never waits
    /// for an event that has not arrived: a lone event is returned at once.
    pub async fn recv_many(&mut self, buf: &mut Vec<AgentEvent>, limit: usize) -> usize {
        std::future::poll_fn(|cx| self.poll_recv_many(cx, buf, limit)).await
    }

    /// The polling form of [`Run::recv_many`].
    pub fn poll_recv_many(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut Vec<AgentEvent>,
        limit: usize,
    ) -> Poll<usize> {
        if limit == 0 {
            return Poll::Ready(0);
        }
        let mut moved = self.take_burst(buf, limit);
        while moved < limit {
            let next = match moved {
                // Wait only for the first event.
                0 => match self.rx.poll_recv(cx) {
                    Poll::Ready(next) => next,
                    Poll::Pending => return Poll::Pending,
                },
                _ => match self.rx.try_recv() {
                    Ok(next) => Some(next),
                    Err(_) => break,
                },
            };
            match next {
                None => break,
                Some(Batch::One(event)) => {
                    buf.push(event);
                    moved += 1;
                }
                Some(Batch::Many(events)) => {
                    self.burst = events.into_iter();
                    moved += self.take_burst(buf, limit - moved);
                }
            }
        }
        Poll::Ready(moved)
    }

    fn take_burst(&mut self, buf: &mut Vec<AgentEvent>, limit: usize) -> usize {
        let before = buf.len();
        buf.extend(self.burst.by_ref().take(limit));
        buf.len() - before
    }

    /// Waits for the run to finish and returns all its events.
    pub async fn collect_events(mut self) -> Vec<AgentEvent> {
        let mut events = Vec::new();
        while self.recv_many(&mut events, usize::MAX).await > 0 {}
        events
    }
}

impl Stream for Run {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        loop {
            if let Some(event) = self.burst.next() {
                return Poll::Ready(Some(event));
            }
            match std::task::ready!(self.rx.poll_recv(cx)) {
                None => return Poll::Ready(None),
                Some(Batch::One(event)) => return Poll::Ready(Some(event)),
                Some(Batch::Many(events)) => self.burst = events.into_iter(),
            }
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        // Nobody will read the rest; a run that already finished ignores this.
        self.abort.abort();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::StreamExt;

    use super::*;
    use crate::emit::MAX_BURST;
    use crate::provider::{ProviderEvent, ProviderRequest, ProviderStream};

    /// Answers every request with 200 numbered text deltas, all ready at once.
    struct Counting;

    impl Provider for Counting {
        fn id(&self) -> &str {
            "counting"
        }

        fn stream(&self, _: ProviderRequest) -> ProviderStream {
            futures::stream::iter((0..200).map(|i| Ok(ProviderEvent::TextDelta(format!("{i} ")))))
                .boxed()
        }
    }

    /// A stream that never ends and is always ready.
    struct Endless;

    impl Provider for Endless {
        fn id(&self) -> &str {
            "endless"
        }

        fn stream(&self, _: ProviderRequest) -> ProviderStream {
            futures::stream::repeat_with(|| Ok(ProviderEvent::TextDelta("x".into()))).boxed()
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn abort_stops_a_stream_that_is_always_ready() {
        let agent = Agent::builder(Endless).build();
        let mut run = agent.prompt("go on forever");
        let mut seen = Vec::new();
        while seen.len() < 1000 {
            let n = tokio::time::timeout(Duration::from_secs(10), run.recv_many(&mut seen, 100))
                .await
                .expect("events keep coming");
            assert!(n > 0);
        }
        run.abort();
        let drain = async {
            let mut last = None;
            while let Some(event) = run.next().await {
                last = Some(event);
            }
            last
        };
        let last = tokio::time::timeout(Duration::from_secs(10), drain)
            .await
            .expect("the run ends after abort");
        assert!(matches!(
            last,
            Some(AgentEvent::RunFinished {
                status: RunStatus::Aborted,
                ..
            })
        ));
    }

    #[tokio::test]
    async fn deltas_a_stream_has_ready_travel_as_bursts_in_order() {
        let agent = Agent::builder(Counting).build();
        let mut run = agent.prompt("count");
        let (mut bursts, mut deltas) = (0, Vec::new());
        loop {
            let next = tokio::time::timeout(Duration::from_secs(10), run.rx.recv())
                .await
                .expect("the run goes on");
            let events = match next {
                None => break,
                Some(Batch::One(event)) => vec![event],
                Some(Batch::Many(events)) => {
                    assert!(events.len() > 1 && events.len() <= MAX_BURST);
                    bursts += 1;
                    events
                }
            };
            deltas.extend(events.into_iter().filter_map(|e| match e {
                AgentEvent::TextDelta { delta } => Some(delta),
                _ => None,
            }));
        }
        assert!(bursts >= 200 / MAX_BURST, "only {bursts} bursts");
        let expected: Vec<String> = (0..200).map(|i| format!("{i} ")).collect();
        assert_eq!(deltas, expected);
    }
}
