//! [`TurnState`]: what a turn's events add up to so far, folded one event at a time.

use std::collections::HashMap;

use agent_core::{
    event::{CompactionReason, ErrorCode, StopReason, ToolStatus},
    hooks::{HookEvent, HookOutcome},
    permission::PermissionAction,
    AgentEvent, RunStatus, Usage,
};

use super::calls::{HookNote, ToolCallState, ToolCallStatus};
use super::outcome::TurnOutcome;

/// Milliseconds since the Unix epoch: the clock a [`TurnState`] stamps calls with.
fn wall_clock() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// A compaction of the transcript seen in the turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compaction {
    /// Why it started (`auto` when its start was not seen).
    pub reason: CompactionReason,
    /// Context tokens before and after it, once it finished.
    pub sizes: Option<(u64, u64)>,
}

/// A sub-agent a tool call of the turn runs (at any depth: a node's own run holds its
/// children).
#[derive(Debug, Clone)]
pub struct SubagentNode {
    /// The child's id (its session id when it records to the parent's store).
    pub task_id: String,
    /// The sub-agent's name.
    pub name: String,
    /// The parent's tool call that runs it (a call of the parent's own run).
    pub call_id: String,
    /// The caller's short label for the task.
    pub description: Option<String>,
    /// The model the child calls.
    pub model: String,
    /// It runs in the background.
    pub background: bool,
    /// 1 for a child of the turn's agent, 2 for a grandchild, ….
    pub depth: u32,
    /// How its run ended; `None` while it runs.
    pub status: Option<RunStatus>,
    /// Its final answer, once finished.
    pub final_text: Option<String>,
    /// What ended it, when it failed.
    pub error: Option<String>,
    /// Its total usage as its `SubagentFinished` reported it.
    finished_usage: Option<Usage>,
    /// Wall time of its run, ms, once finished.
    pub duration_ms: Option<u64>,
    /// The child's own run, folded from its wrapped events.
    run: Box<TurnState>,
}

impl SubagentNode {
    /// True while its run goes on.
    pub fn is_running(&self) -> bool {
        self.status.is_none()
    }

    /// The child's usage (its own children's included): the total its end reported, else
    /// what its model calls added up to so far.
    pub fn usage(&self) -> Usage {
        self.finished_usage.unwrap_or(self.run.usage)
    }

    /// The child's own run, as its wrapped events fold: its calls, its children, its
    /// outcome ([`TurnState::outcome`]).
    pub fn run(&self) -> &TurnState {
        &self.run
    }
}

/// What the events of one run (a turn) add up to so far: the tool-call table, the sub-agent
/// tree, usage and the outcome. Pure: no I/O but a clock read when a call starts or ends,
/// no locks; [`apply`](Self::apply) is cheap for the streamed deltas (they change nothing
/// here, and are neither cloned nor kept).
///
/// # Order
///
/// The state is applied *before* a mapping sees the event ([`Mapping`](super::Mapping)):
/// when a mapping maps an event, the state already includes it (the `ToolResult` of a call
/// finds the call completed, a `CompactionFinished` finds the compaction's reason and
/// sizes). [`Fold`](super::Fold) and the session host's turn driver keep that order.
///
/// A call's entry stays after its result, so a mapping can still read it; a result for a
/// call that already had one starts a fresh entry (a provider that reuses call ids). A
/// per-call event for a call never announced (no `ToolCall`) makes an entry too.
#[derive(Debug, Clone)]
pub struct TurnState {
    calls: HashMap<String, ToolCallState>,
    step: u32,
    step_calls: Vec<String>,
    subagents: HashMap<String, SubagentNode>,
    usage: Usage,
    cumulative: Option<Usage>,
    cost_usd: Option<f64>,
    model_calls: u32,
    tool_calls: u32,
    context: Option<(u64, u64)>,
    last_stop: Option<StopReason>,
    stopped_at_length: bool,
    prompt_blocked: bool,
    compaction: Option<Compaction>,
    summary: Option<String>,
    error: Option<(ErrorCode, String)>,
    status: Option<RunStatus>,
    final_text: Option<String>,
    clock: fn() -> i64,
}

impl Default for TurnState {
    fn default() -> Self {
        Self::new()
    }
}

impl TurnState {
    /// The state of a turn before its first event.
    pub fn new() -> Self {
        Self::with_clock(wall_clock)
    }

    /// The same, with `clock` (milliseconds since the epoch) stamping the calls' start and
    /// end (a fixed clock for tests).
    pub fn with_clock(clock: fn() -> i64) -> Self {
        Self {
            calls: HashMap::new(),
            step: 0,
            step_calls: Vec::new(),
            subagents: HashMap::new(),
            usage: Usage::default(),
            cumulative: None,
            cost_usd: None,
            model_calls: 0,
            tool_calls: 0,
            context: None,
            last_stop: None,
            stopped_at_length: false,
            prompt_blocked: false,
            compaction: None,
            summary: None,
            error: None,
            status: None,
            final_text: None,
            clock,
        }
    }

    /// Folds one event of the run in.
    #[inline]
    pub fn apply(&mut self, event: &AgentEvent) {
        // The streamed deltas, nearly every event of a run, change nothing here: they are
        // passed over without a call into the fold of the others.
        if !matches!(
            event,
            AgentEvent::TextDelta { .. }
                | AgentEvent::ReasoningDelta { .. }
                | AgentEvent::ToolUseArgsDelta { .. }
                | AgentEvent::ToolProgress { .. }
        ) {
            self.apply_other(event);
        }
    }

    /// [`Self::apply`] of an event that is not a streamed delta.
    #[inline(never)]
    fn apply_other(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::TextDelta { .. }
            | AgentEvent::ReasoningDelta { .. }
            | AgentEvent::ToolUseArgsDelta { .. }
            | AgentEvent::ToolProgress { .. } => {}
            AgentEvent::TurnStarted { step } => {
                self.step = *step;
                self.step_calls.clear();
            }
            AgentEvent::Usage { turn, cumulative } => {
                self.usage += turn;
                self.model_calls += 1;
                self.cumulative = Some(*cumulative);
                if cumulative.cost_usd.is_some() {
                    self.cost_usd = cumulative.cost_usd;
                }
            }
            AgentEvent::ContextUsage { used, window, .. } => self.context = Some((*used, *window)),
            AgentEvent::ToolCall { id, name, args, .. } => {
                self.tool_calls += 1;
                self.step_calls.push(id.clone());
                let mut call = ToolCallState::pending(name.as_str());
                call.args = args.clone();
                call.step = self.step;
                self.calls.insert(id.clone(), call);
            }
            AgentEvent::PermissionDecided {
                info,
                action: PermissionAction::Deny | PermissionAction::Cancel,
                granted: false,
                ..
            } => self.with_call(&info.id, &info.name, |call| call.denied = true),
            AgentEvent::ToolExecutionStarted { id, name } => {
                let now = (self.clock)();
                self.with_call(id, name, |call| {
                    call.status = ToolCallStatus::Running;
                    call.started_at = Some(now);
                });
            }
            AgentEvent::ToolBlocked { id, name, block } => self.with_call(id, name, |call| {
                call.blocks.push(block.clone());
                call.block = Some(block.clone());
            }),
            AgentEvent::HookDecided {
                hook,
                event: point,
                outcome,
                reason,
                call_id,
            } => match call_id {
                Some(id) => self.with_call(id, "", |call| {
                    call.hooks.push(HookNote {
                        hook: hook.clone(),
                        event: *point,
                        outcome: *outcome,
                        reason: reason.clone(),
                    })
                }),
                None => {
                    if *point == HookEvent::UserPrompt && *outcome == HookOutcome::Block {
                        self.prompt_blocked = true;
                    }
                }
            },
            AgentEvent::ToolResult {
                id, name, status, ..
            } => {
                let now = (self.clock)();
                self.with_call(id, name, |call| {
                    if call.status.is_finished() {
                        *call = ToolCallState::pending(name.as_str());
                    }
                    call.status = match status {
                        ToolStatus::Ok => ToolCallStatus::Completed,
                        ToolStatus::Error => ToolCallStatus::Failed,
                    };
                    call.started_at.get_or_insert(now);
                    call.completed_at = Some(now);
                });
            }
            AgentEvent::TurnEnded { stop, .. } => {
                self.last_stop = Some(*stop);
                self.stopped_at_length |= *stop == StopReason::Length;
            }
            AgentEvent::CompactionStarted { reason } => {
                self.compaction = Some(Compaction {
                    reason: *reason,
                    sizes: None,
                })
            }
            AgentEvent::CompactionFinished {
                summary,
                before,
                after,
            } => {
                let reason = match self.compaction {
                    Some(Compaction {
                        reason,
                        sizes: None,
                    }) => reason,
                    _ => CompactionReason::Auto,
                };
                self.compaction = Some(Compaction {
                    reason,
                    sizes: Some((*before, *after)),
                });
                self.summary = Some(summary.clone());
            }
            AgentEvent::Error {
                code,
                message,
                recoverable: false,
            } => self.error = Some((*code, message.clone())),
            AgentEvent::RunFinished { status, final_text } => {
                self.status = Some(*status);
                self.final_text.clone_from(final_text);
            }
            AgentEvent::SubagentStarted {
                task_id,
                name,
                call_id,
                description,
                model,
                background,
                depth,
                ..
            } => {
                if let Some(call) = self.calls.get_mut(call_id) {
                    call.subagent = Some(task_id.clone());
                }
                let node = SubagentNode {
                    task_id: task_id.clone(),
                    name: name.clone(),
                    call_id: call_id.clone(),
                    description: description.clone(),
                    model: model.clone(),
                    background: *background,
                    depth: *depth,
                    status: None,
                    final_text: None,
                    error: None,
                    finished_usage: None,
                    duration_ms: None,
                    run: Box::new(Self::with_clock(self.clock)),
                };
                self.subagents.insert(task_id.clone(), node);
            }
            AgentEvent::Subagent {
                task_id,
                event: inner,
                ..
            } => {
                // A descendant's model calls count in this run's usage too.
                if let AgentEvent::Usage { turn, .. } = inner.innermost() {
                    self.usage += turn;
                }
                if let Some(node) = self.subagents.get_mut(task_id) {
                    node.run.apply(inner);
                }
            }
            AgentEvent::SubagentFinished {
                task_id,
                status,
                final_text,
                error,
                usage,
                duration_ms,
                ..
            } => {
                if let Some(node) = self.subagents.get_mut(task_id) {
                    node.status = Some(*status);
                    node.final_text.clone_from(final_text);
                    node.error.clone_from(error);
                    node.finished_usage = Some(*usage);
                    node.duration_ms = Some(*duration_ms);
                }
            }
            // Framing, and what the state has no field for.
            _ => {}
        }
    }

    /// Runs `f` on call `id`'s entry, made (named `name`) when the call was never
    /// announced.
    fn with_call(&mut self, id: &str, name: &str, f: impl FnOnce(&mut ToolCallState)) {
        match self.calls.get_mut(id) {
            Some(call) => f(call),
            None => f(self
                .calls
                .entry(id.to_string())
                .or_insert_with(|| ToolCallState::pending(name))),
        }
    }

    /// Tool call `id` of this run.
    pub fn call(&self, id: &str) -> Option<&ToolCallState> {
        self.calls.get(id)
    }

    /// Every tool call of this run (in no order), with its id.
    pub fn calls(&self) -> impl Iterator<Item = (&str, &ToolCallState)> {
        self.calls.iter().map(|(id, call)| (id.as_str(), call))
    }

    /// The running model call's step (1-based; 0 before the first).
    pub fn step(&self) -> u32 {
        self.step
    }

    /// The calls the running model call proposed, in order.
    pub fn step_calls(&self) -> &[String] {
        &self.step_calls
    }

    /// True when the running model call proposed calls and every one has its result.
    pub fn step_done(&self) -> bool {
        !self.step_calls.is_empty()
            && self
                .step_calls
                .iter()
                .all(|id| self.calls.get(id).is_some_and(|c| c.status.is_finished()))
    }

    /// The sub-agent `task_id`, at any depth.
    pub fn subagent(&self, task_id: &str) -> Option<&SubagentNode> {
        if let Some(node) = self.subagents.get(task_id) {
            return Some(node);
        }
        self.subagents
            .values()
            .find_map(|node| node.run.subagent(task_id))
    }

    /// The sub-agent tool call `call_id` of this run started (the last, if several).
    pub fn subagent_of_call(&self, call_id: &str) -> Option<&SubagentNode> {
        let task_id = self.calls.get(call_id)?.subagent.as_deref()?;
        self.subagents.get(task_id)
    }

    /// The direct children of this run (in no order).
    pub fn subagents(&self) -> impl Iterator<Item = &SubagentNode> {
        self.subagents.values()
    }

    /// Usage of the run's model calls so far, its sub-agents' included.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// The agent's running total as its last `Usage` event reported it.
    pub fn cumulative(&self) -> Option<Usage> {
        self.cumulative
    }

    /// The agent's cumulative cost in USD as last reported with a price (a call without
    /// one leaves it as it was).
    pub fn cost_usd(&self) -> Option<f64> {
        self.cost_usd
    }

    /// Model calls of this run so far (not its sub-agents').
    pub fn model_calls(&self) -> u32 {
        self.model_calls
    }

    /// Tool calls of this run so far (not its sub-agents').
    pub fn tool_calls(&self) -> u32 {
        self.tool_calls
    }

    /// The context in use and the window, as the last `ContextUsage` reported them.
    pub fn context(&self) -> Option<(u64, u64)> {
        self.context
    }

    /// The stop of the last model call.
    pub fn last_stop(&self) -> Option<StopReason> {
        self.last_stop
    }

    /// Some model call of the run stopped at the output token limit.
    pub fn stopped_at_length(&self) -> bool {
        self.stopped_at_length
    }

    /// A `user_prompt` hook blocked the prompt (it never entered the transcript).
    pub fn prompt_blocked(&self) -> bool {
        self.prompt_blocked
    }

    /// The last compaction seen (running while its sizes are unknown).
    pub fn compaction(&self) -> Option<Compaction> {
        self.compaction
    }

    /// The run's end status; `None` until its `RunFinished`.
    pub fn status(&self) -> Option<RunStatus> {
        self.status
    }

    /// The fatal error of the run (the last), if any.
    pub fn error(&self) -> Option<(ErrorCode, &str)> {
        self.error.as_ref().map(|(code, m)| (*code, m.as_str()))
    }

    /// How the run ended, or would if it ended now: `aborted` until its `RunFinished`.
    /// `duration_ms` is 0 (no clock measures the run here).
    pub fn outcome(&self) -> TurnOutcome {
        TurnOutcome {
            status: self.status.unwrap_or(RunStatus::Aborted),
            final_text: self.final_text.clone(),
            error: self.error.clone(),
            usage: self.usage,
            model_calls: self.model_calls,
            tool_calls: self.tool_calls,
            duration_ms: 0,
            summary: self.summary.clone(),
        }
    }
}
