//! The `Task`, `TaskOutput` and `TaskStop` tools.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use agent_core::{
    async_trait,
    schema::StrictSchema,
    subagent::{
        new_task_id, BackgroundChild, ParentRun, SubagentOutcome, SubagentRequest,
        MAX_SUBAGENT_DEPTH,
    },
    Agent, ReasoningLevel, RunStatus, SideEffect, Tool, ToolContext, ToolError, ToolOutput,
    DEFAULT_MAX_STEPS,
};
use serde_json::Value;

use crate::envelope;
use crate::manifest::{Specialist, TASK_TOOL_NAMES};
use crate::registry::SpecialistRegistry;
use crate::wire::{TaskArgs, TaskOutputArgs, TaskStopArgs};

/// Default number of background tasks that may run at once per agent.
pub const DEFAULT_MAX_BACKGROUND: usize = 4;
/// Finished background tasks kept for `TaskOutput`.
const KEPT_FINISHED: usize = 32;
/// `TaskOutput`'s wait when the model gives no timeout.
const DEFAULT_OUTPUT_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest `TaskOutput` waits.
const MAX_OUTPUT_TIMEOUT: Duration = Duration::from_secs(20 * 60);
/// How long `TaskStop` waits for a stopped task to report its end.
const STOP_WAIT: Duration = Duration::from_secs(5);

/// Builds the `Task`, `TaskOutput` and `TaskStop` tools over a [`SpecialistRegistry`].
///
/// ```
/// use agent_specialists::{SpecialistRegistry, TaskTools};
///
/// let tools = TaskTools::new(SpecialistRegistry::builtin()).build();
/// let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
/// assert_eq!(names, ["Task", "TaskOutput", "TaskStop"]);
/// // No specialists, no Task tool.
/// assert!(TaskTools::new(SpecialistRegistry::empty()).build().is_empty());
/// ```
///
/// Give the tools to the agent with the rest of its tools
/// (`Agent::builder(p).tools(tools)`); each `Task` call picks its child's tools from the
/// calling agent's own.
#[derive(Debug, Clone)]
pub struct TaskTools {
    registry: Arc<SpecialistRegistry>,
    options: Options,
}

#[derive(Debug, Clone)]
struct Options {
    max_steps: u32,
    max_depth: u32,
    max_background: usize,
    base_system_prompt: Option<String>,
}

impl TaskTools {
    /// The tools over `registry`: children run at most [`DEFAULT_MAX_STEPS`] model calls,
    /// may not start specialists themselves, and at most [`DEFAULT_MAX_BACKGROUND`] run in
    /// the background at once.
    pub fn new(registry: impl Into<Arc<SpecialistRegistry>>) -> Self {
        Self {
            registry: registry.into(),
            options: Options {
                max_steps: DEFAULT_MAX_STEPS,
                max_depth: 1,
                max_background: DEFAULT_MAX_BACKGROUND,
                base_system_prompt: None,
            },
        }
    }

    /// Model calls one child run may make.
    pub fn max_steps(mut self, steps: u32) -> Self {
        self.options.max_steps = steps.max(1);
        self
    }

    /// How deep specialists may nest (default 1: a specialist never gets `Task`). With 2 or
    /// more, a child gets the `Task` tools too while it is less deep than this. At most
    /// [`MAX_SUBAGENT_DEPTH`].
    pub fn max_depth(mut self, depth: u32) -> Self {
        self.options.max_depth = depth.clamp(1, MAX_SUBAGENT_DEPTH);
        self
    }

    /// How many background tasks may run at once.
    pub fn max_background(mut self, n: usize) -> Self {
        self.options.max_background = n;
        self
    }

    /// Text put before every child's system prompt (a host's own preamble: the workspace,
    /// context files).
    pub fn base_system_prompt(mut self, text: impl Into<String>) -> Self {
        let text = text.into();
        self.options.base_system_prompt = (!text.trim().is_empty()).then_some(text);
        self
    }

    /// The three tools, sharing one table of background tasks; none when the registry
    /// has no specialists.
    pub fn build(self) -> Vec<Arc<dyn Tool>> {
        self.build_with_tasks().0
    }

    /// The tools and a handle on their background tasks, for a host that lists or stops
    /// them itself (ZCode's `session/subagents`, `session/cancelBackgroundTask`).
    pub fn build_with_tasks(self) -> (Vec<Arc<dyn Tool>>, BackgroundTasks) {
        let tasks = BackgroundTasks(Arc::default());
        if self.registry.is_empty() {
            return (Vec::new(), tasks);
        }
        let description = task_description(&self.registry);
        let shared = Arc::new(Shared {
            registry: self.registry,
            options: self.options,
            tasks: tasks.0.clone(),
        });
        let tools: Vec<Arc<dyn Tool>> = vec![
            Arc::new(TaskTool {
                shared: shared.clone(),
                description,
            }),
            Arc::new(TaskOutputTool {
                shared: shared.clone(),
            }),
            Arc::new(TaskStopTool { shared }),
        ];
        (tools, tasks)
    }
}

/// The background tasks the `Task` tools of one [`TaskTools::build_with_tasks`] started
/// (the running ones and the last finished ones). Cheap to clone.
#[derive(Clone, Default)]
pub struct BackgroundTasks(Arc<Tasks>);

impl std::fmt::Debug for BackgroundTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundTasks")
            .field("tasks", &self.0.lock().entries.len())
            .finish()
    }
}

impl BackgroundTasks {
    /// Every task kept, oldest first.
    pub fn list(&self) -> Vec<BackgroundChild> {
        self.0.lock().entries.clone()
    }

    /// The task `task_id`.
    pub fn get(&self, task_id: &str) -> Option<BackgroundChild> {
        self.0.get(task_id)
    }

    /// Stops the task `task_id` (its end is still reported): `None` when there is no such
    /// task, `Some(false)` when it had already finished.
    pub fn stop(&self, task_id: &str) -> Option<bool> {
        self.0.get(task_id).map(|child| child.stop())
    }

    /// How many are running.
    pub fn running(&self) -> usize {
        self.0
            .lock()
            .entries
            .iter()
            .filter(|c| !c.is_finished())
            .count()
    }
}

fn task_description(registry: &SpecialistRegistry) -> String {
    let mut text = String::from(
        "Launch a specialist sub-agent for a focused delegated task. It works on its own, \
         with its own context and tools, and its final report is this call's result. Give \
         it a complete, self-contained prompt. With run_in_background it returns a task_id \
         at once: read the result with TaskOutput, stop it with TaskStop.\n\nSpecialists:",
    );
    for spec in registry.iter() {
        text.push_str(&format!("\n- {}: {}", spec.name, spec.description));
    }
    text
}

struct Shared {
    registry: Arc<SpecialistRegistry>,
    options: Options,
    tasks: Arc<Tasks>,
}

/// The argument schemas of the three tools, made once per process: every session's tools
/// share them (a server with many idle sessions keeps one copy).
static TASK_SCHEMA: OnceLock<StrictSchema> = OnceLock::new();
static TASK_OUTPUT_SCHEMA: OnceLock<StrictSchema> = OnceLock::new();
static TASK_STOP_SCHEMA: OnceLock<StrictSchema> = OnceLock::new();

fn schema_of<T: schemars::JsonSchema>(
    cell: &'static OnceLock<StrictSchema>,
) -> &'static StrictSchema {
    cell.get_or_init(StrictSchema::of::<T>)
}

fn parse<T: schemars::JsonSchema + serde::de::DeserializeOwned>(
    cell: &'static OnceLock<StrictSchema>,
    args: Value,
) -> Result<T, ToolError> {
    schema_of::<T>(cell)
        .parse(args)
        .map_err(|err| ToolError::InvalidArguments(err.to_string()))
}

/// `Task`: runs a specialist as a sub-agent of the calling run.
struct TaskTool {
    shared: Arc<Shared>,
    description: String,
}

#[async_trait]
impl Tool for TaskTool {
    fn name(&self) -> &str {
        "Task"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        schema_of::<TaskArgs>(&TASK_SCHEMA).schema.clone()
    }

    /// Starting a specialist changes nothing by itself: each of the child's calls goes
    /// through the permission gate with the parent's mode and approver.
    fn side_effect(&self) -> SideEffect {
        SideEffect::None
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: TaskArgs = parse(&TASK_SCHEMA, args)?;
        let name = args.name.trim();
        let prompt = args.prompt.trim();
        if prompt.is_empty() {
            return Err(ToolError::InvalidArguments("Task requires a prompt".into()));
        }
        let shared = &self.shared;
        let Some(parent) = ctx.parent.as_ref() else {
            return Err(ToolError::Failed(
                "Task can only run inside an agent run".into(),
            ));
        };
        let depth = parent.depth() + 1;
        let max_depth = shared.options.max_depth;
        if depth > max_depth {
            return Err(ToolError::Failed(format!(
                "a specialist cannot start another specialist here (nesting is limited to \
                 {max_depth} level{})",
                if max_depth == 1 { "" } else { "s" }
            )));
        }
        let Some(spec) = shared.registry.get(name) else {
            return Err(ToolError::Failed(format!(
                "specialist {name:?} not found. Available: {}. Pick one whose tools fit the task.",
                shared.registry.names().join(", ")
            )));
        };
        let mut tools = spec.select_tools(parent.tools());
        if depth < max_depth {
            tools.extend(
                parent
                    .tools()
                    .iter()
                    .filter(|t| TASK_TOOL_NAMES.contains(&t.name()))
                    .cloned(),
            );
        }
        if tools.is_empty() {
            let asked: Vec<String> = spec.selectors().iter().map(ToString::to_string).collect();
            return Err(ToolError::Failed(format!(
                "specialist {name:?} can use none of this agent's tools (it asks for {})",
                asked.join(", ")
            )));
        }
        let description = args
            .description
            .as_deref()
            .map(str::trim)
            .filter(|d| !d.is_empty());
        let template = child_template(spec, parent, tools, description, &shared.options);
        let mut request = SubagentRequest::new(name, envelope::task_prompt(prompt))
            .task_id(new_task_id("specialist"))
            .max_depth(max_depth);
        if let Some(description) = description {
            request = request.description(description);
        }
        if args.run_in_background.unwrap_or(false) {
            let slot = shared
                .tasks
                .reserve(shared.options.max_background)
                .map_err(ToolError::Failed)?;
            let child = template.spawn_as_child(&ctx, request).await?;
            let text = launched_text(&child, spec);
            slot.insert(child, description.map(str::to_string));
            return Ok(ToolOutput::text(text));
        }
        let outcome = template.run_as_child(&ctx, request).await?;
        foreground_result(outcome)
    }
}

/// The agent a specialist's child is a copy of: the parent's provider, the selected tools,
/// the specialist's prompt, its model (or the parent's) and reasoning.
fn child_template(
    spec: &Specialist,
    parent: &ParentRun,
    tools: Vec<Arc<dyn Tool>>,
    description: Option<&str>,
    options: &Options,
) -> Agent {
    // Zero's rule: a specialist with its own model does not inherit the parent's effort.
    let reasoning = match (&spec.reasoning, &spec.model) {
        (Some(level), _) => *level,
        (None, None) => parent.reasoning(),
        (None, Some(_)) => ReasoningLevel::default(),
    };
    Agent::builder(parent.provider())
        .model(spec.model.clone().unwrap_or_else(|| parent.model()))
        .reasoning(reasoning)
        .system_prompt(envelope::system_prompt(
            spec,
            description,
            options.base_system_prompt.as_deref(),
        ))
        .tools(tools)
        .max_steps(options.max_steps)
        .cwd(parent.cwd())
        .build()
}

fn launched_text(child: &BackgroundChild, spec: &Specialist) -> String {
    let id = child.task_id();
    format!(
        "Task launched in background.\ntask_id: {id}\nspecialist: {}\ndescription: {}\n\n\
         Use TaskOutput with task_id \"{id}\" to check progress.\n\
         Use TaskStop with task_id \"{id}\" to stop it.",
        spec.name,
        child.info().description.as_deref().unwrap_or("")
    )
}

/// A finished foreground child as the call's result: its answer, or an error saying why
/// there is none.
fn foreground_result(outcome: SubagentOutcome) -> Result<ToolOutput, ToolError> {
    match outcome.failure() {
        None => Ok(ToolOutput::text(format!(
            "task_id: {}\n\n{}",
            outcome.task_id,
            outcome.text.unwrap_or_default()
        ))),
        Some(why) if outcome.status == RunStatus::Aborted => Err(ToolError::Cancelled(format!(
            "specialist {} (task_id {}) {why}",
            outcome.name, outcome.task_id
        ))),
        Some(why) => {
            let mut text = format!(
                "Error: specialist {} failed: {why}\ntask_id: {}",
                outcome.name, outcome.task_id
            );
            if !outcome.tools.is_empty() {
                text.push_str(&format!("\ntools executed: {}", outcome.tools.join(", ")));
            }
            if let Some(partial) = outcome.text.filter(|t| !t.trim().is_empty()) {
                text.push_str("\n\n");
                text.push_str(partial.trim());
            }
            Err(ToolError::Failed(text))
        }
    }
}

/// The background tasks of one set of tools.
#[derive(Default)]
struct Tasks {
    inner: Mutex<TaskTable>,
}

#[derive(Default)]
struct TaskTable {
    entries: Vec<BackgroundChild>,
    /// Slots taken by calls that are starting a task.
    reserved: usize,
}

/// A slot for a background task being started; given back unless filled.
struct Slot<'a> {
    tasks: &'a Tasks,
    filled: bool,
}

impl Tasks {
    fn lock(&self) -> MutexGuard<'_, TaskTable> {
        // Nothing panics while holding this lock; recover the data if that ever changes.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn reserve(&self, max: usize) -> Result<Slot<'_>, String> {
        let mut table = self.lock();
        let running = table.entries.iter().filter(|c| !c.is_finished()).count();
        if running + table.reserved >= max {
            return Err(format!(
                "{running} background task{} already running (the limit is {max}): wait for \
                 one with TaskOutput (block: true) or stop one with TaskStop",
                if running == 1 { " is" } else { "s are" }
            ));
        }
        table.reserved += 1;
        Ok(Slot {
            tasks: self,
            filled: false,
        })
    }

    fn get(&self, task_id: &str) -> Option<BackgroundChild> {
        self.lock()
            .entries
            .iter()
            .find(|c| c.task_id() == task_id)
            .cloned()
    }
}

impl Slot<'_> {
    fn insert(mut self, child: BackgroundChild, _description: Option<String>) {
        let mut table = self.tasks.lock();
        table.reserved = table.reserved.saturating_sub(1);
        self.filled = true;
        let finished = table.entries.iter().filter(|c| c.is_finished()).count();
        if finished >= KEPT_FINISHED {
            if let Some(oldest) = table.entries.iter().position(|c| c.is_finished()) {
                table.entries.remove(oldest);
            }
        }
        table.entries.push(child);
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if !self.filled {
            let mut table = self.tasks.lock();
            table.reserved = table.reserved.saturating_sub(1);
        }
    }
}

/// Zero's status words for a task.
fn status_word(status: Option<RunStatus>) -> &'static str {
    match status {
        None => "running",
        Some(RunStatus::Success) => "completed",
        Some(RunStatus::Error) => "error",
        Some(RunStatus::Aborted) => "killed",
    }
}

fn unknown_task(task_id: &str) -> ToolError {
    ToolError::Failed(format!("background task not found: {task_id}"))
}

/// A background task's state as `TaskOutput` reports it (Zero's layout).
fn output_text(child: &BackgroundChild) -> String {
    let snapshot = child.snapshot();
    let info = child.info();
    let mut text = format!(
        "task_id: {}\nstatus: {}\nspecialist: {}\n",
        info.task_id,
        status_word(snapshot.status),
        info.name
    );
    if let Some(description) = &info.description {
        text.push_str(&format!("description: {description}\n"));
    }
    let output = snapshot.text.trim();
    if !output.is_empty() {
        text.push_str(&format!("\noutput:\n{output}\n"));
    }
    if !snapshot.tools.is_empty() {
        text.push_str(&format!("\ntools: {}\n", snapshot.tools.join(", ")));
    }
    if !snapshot.errors.is_empty() {
        text.push_str(&format!("\nerrors: {}\n", snapshot.errors.join("; ")));
    }
    if output.is_empty() && snapshot.tools.is_empty() && snapshot.errors.is_empty() {
        text.push_str("\noutput: <empty>\n");
    }
    text.trim_end().to_string()
}

/// `TaskOutput`: reads, or waits for, a background task's output.
struct TaskOutputTool {
    shared: Arc<Shared>,
}

#[async_trait]
impl Tool for TaskOutputTool {
    fn name(&self) -> &str {
        "TaskOutput"
    }

    fn description(&self) -> &str {
        "Read the output of a background specialist task started by Task; with block: true, \
         wait for it to finish first (up to timeout milliseconds)."
    }

    fn parameters(&self) -> Value {
        schema_of::<TaskOutputArgs>(&TASK_OUTPUT_SCHEMA)
            .schema
            .clone()
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::None
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: TaskOutputArgs = parse(&TASK_OUTPUT_SCHEMA, args)?;
        let task_id = args.task_id.trim();
        let child = self
            .shared
            .tasks
            .get(task_id)
            .ok_or_else(|| unknown_task(task_id))?;
        if args.block.unwrap_or(false) && !child.is_finished() {
            let timeout = args
                .timeout
                .filter(|ms| *ms > 0)
                .map_or(DEFAULT_OUTPUT_TIMEOUT, Duration::from_millis)
                .min(MAX_OUTPUT_TIMEOUT);
            tokio::select! {
                _ = child.wait() => {}
                _ = tokio::time::sleep(timeout) => {}
                _ = ctx.cancel.cancelled() => {}
            }
        }
        Ok(ToolOutput::text(output_text(&child)))
    }
}

/// `TaskStop`: stops a background task.
struct TaskStopTool {
    shared: Arc<Shared>,
}

#[async_trait]
impl Tool for TaskStopTool {
    fn name(&self) -> &str {
        "TaskStop"
    }

    fn description(&self) -> &str {
        "Stop a running background specialist task started by Task."
    }

    fn parameters(&self) -> Value {
        schema_of::<TaskStopArgs>(&TASK_STOP_SCHEMA).schema.clone()
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::None
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: TaskStopArgs = parse(&TASK_STOP_SCHEMA, args)?;
        let task_id = args.task_id.trim();
        let child = self
            .shared
            .tasks
            .get(task_id)
            .ok_or_else(|| unknown_task(task_id))?;
        if !child.stop() {
            let status = status_word(child.snapshot().status);
            return Ok(ToolOutput::text(format!(
                "task_id: {task_id}\nstatus: {status} (it had already finished)"
            )));
        }
        tokio::select! {
            _ = child.wait() => {}
            _ = tokio::time::sleep(STOP_WAIT) => {}
            _ = ctx.cancel.cancelled() => {}
        }
        Ok(ToolOutput::text(format!(
            "task_id: {task_id}\nstatus: killed"
        )))
    }
}
