//! [`AgentBuilder`].

use super::*;

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
    editor: crate::editor::Editor,
    hooks: crate::hook_points::HookSetup,
    context: ContextOptions,
    project: ProjectOptions,
    guard: crate::guard::Guard,
}

/// The builder's instructions and skills (see [`crate::instructions`], [`crate::skills`]).
#[derive(Debug, Default)]
struct ProjectOptions {
    instructions: Option<crate::instructions::Instructions>,
    skills: Option<crate::skills::Skills>,
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

    /// The project's and the user's instructions (see [`crate::instructions`]), put in the
    /// system prompt after the appended sections, each under a heading naming its file.
    /// Replaces instructions given before; without this call there are none.
    pub fn instructions(mut self, instructions: crate::instructions::Instructions) -> Self {
        self.project.instructions = Some(instructions);
        self
    }

    /// Offers `skills` (see [`crate::skills`]): their names and descriptions are listed in
    /// the system prompt (after the instructions) and the model loads a body with the
    /// `skill` tool, which is added unless the agent has a tool of that name already (a
    /// host that filters its tools adds [`crate::skills::Skills::tool`] itself). No skill:
    /// neither listing nor tool. Replaces skills given before.
    pub fn skills(mut self, skills: crate::skills::Skills) -> Self {
        self.project.skills = Some(skills);
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

    /// The text buffers and terminals a client (an editor) lends the tools (see
    /// [`crate::editor`]); by default they use the local disk and processes.
    pub fn editor(mut self, editor: crate::editor::Editor) -> Self {
        self.editor = editor;
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
        self.guard.granted = SessionRecord::replay_granted(&records);
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

    /// Permission rules consulted before the permission mode: deny wins, then ask, then
    /// allow (see [`crate::permission::rules`]). Added to those already given.
    pub fn permission_rules(mut self, rules: crate::permission::rules::RuleSet) -> Self {
        self.guard.rules.extend(rules);
        self
    }

    /// The most one prompt run may cost, in USD: before each model call the run's priced
    /// cost (its sub-agents' included) is checked, and at or over the cap the run ends with
    /// `Error{budget_exceeded}` and `RunFinished{error}`. A model without prices in the
    /// catalogue ends the run the same way: its cost cannot be capped. See [`crate::budget`].
    pub fn max_budget_usd(mut self, usd: f64) -> Self {
        self.guard.max_budget_usd = Some(usd);
        self
    }

    /// The model a call is made with once more when it fails before producing anything
    /// because the model is overloaded, rate-limited after the provider's retries, or the
    /// server failed (a 5xx); an [`AgentEvent::ModelFallback`] says so. See
    /// [`crate::fallback`].
    pub fn fallback_model(mut self, model: impl Into<String>) -> Self {
        self.guard.fallback_model = Some(model.into());
        self
    }

    /// Builds the agent.
    pub fn build(self) -> Agent {
        let model = self
            .model
            .or_else(|| self.provider.models().first().map(|m| m.id.clone()))
            .unwrap_or_else(|| "default".to_string());
        let mut system = self.system_prompt.unwrap_or_default();
        let ProjectOptions {
            instructions,
            skills,
        } = self.project;
        let project_sections = [
            instructions.as_ref().and_then(|i| i.render()),
            skills.as_ref().and_then(|s| s.prompt_section()),
        ];
        for extra in self
            .append_system_prompt
            .into_iter()
            .chain(project_sections.into_iter().flatten())
        {
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
        let mut guard = self.guard;
        let granted = std::mem::take(&mut guard.granted);
        if let Some(skills) = skills.filter(|s| !s.is_empty()) {
            if !tools.iter().any(|t| t.name() == crate::skills::SKILL_TOOL) {
                tools.push(Arc::new(skills.tool()));
            }
        }
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
                editor: self.editor,
                hooks: crate::hook_points::AgentHooks::new(self.hooks),
                guard: Arc::new(guard),
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
                    run_usage: Usage::default(),
                    busy: false,
                    queued: 0,
                    active: None,
                    steering: Vec::new(),
                    granted,
                    plan: Vec::new(),
                    ctx: ContextState::new(window, auto, notes),
                }),
            }),
        }
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
            editor: crate::editor::Editor::default(),
            hooks: crate::hook_points::HookSetup::default(),
            project: ProjectOptions::default(),
            guard: crate::guard::Guard::default(),
        }
    }
}
