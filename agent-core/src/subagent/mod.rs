//! Sub-agents: a tool call that runs a child agent.
//!
//! A tool running in the agent loop gets the run that called it in
//! [`ToolContext::parent`]. With it, any [`Agent`] can run as that run's child:
//! [`Agent::run_as_child`] runs a prompt on a fresh copy of the agent and waits for its
//! answer, [`Agent::spawn_as_child`] starts one in the background. [`Agent::as_tool`] wraps
//! the first in a tool, for hosts that build their own child agents; the `Task` tool of
//! `agent-specialists` builds children from specialist manifests.
//!
//! What the child has of its own: the agent's transcript (usually empty), system prompt,
//! tools, model, reasoning level and step limit, and a transcript recorded to the parent's
//! session store under the child's `task_id` when the parent records to one. What it takes
//! from the parent run: the approver (asked through
//! [`Approver::approve_subagent`](crate::Approver::approve_subagent)), the
//! permission mode and standing grants, the hooks (with `subagent_start` and
//! `subagent_stop` in place of `user_prompt` and `stop`) and the sandbox policy.
//!
//! How the parent sees it (see [`crate::event`] for the order):
//!
//! - every event of the child's run reaches the parent's stream as
//!   [`AgentEvent::Subagent`], between [`AgentEvent::SubagentStarted`] and
//!   [`AgentEvent::SubagentFinished`];
//! - the child's usage is added to the parent's as it arrives (the parent's cumulative
//!   usage includes its children) and reported per child in `SubagentFinished`;
//! - aborting the parent aborts the child; a child that fails or is aborted is the call's
//!   outcome ([`SubagentOutcome`]), never the end of the parent's run;
//! - a background child is stopped when the parent's run ends.
//!
//! Nesting is one level unless a request allows more ([`SubagentRequest::max_depth`]),
//! and never more than [`MAX_SUBAGENT_DEPTH`].

mod background;
mod tool;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, Run};
use crate::emit::Batch;
use crate::event::{AgentEvent, RunStatus};
use crate::inner::Inner;
use crate::message::UserInput;
use crate::outcome::RunError;
use crate::session::SessionRecord;
use crate::tool::{ToolContext, ToolError, ToolOutput};
use crate::usage::Usage;

pub use crate::parent_run::ParentRun;
pub use crate::subagent_info::SubagentInfo;
pub use background::{BackgroundChild, ChildSnapshot};
pub use tool::AgentTool;

/// The deepest a sub-agent may be nested, whatever a request allows.
pub const MAX_SUBAGENT_DEPTH: u32 = 8;

/// Most events the forwarder takes from a child's stream at once.
const FORWARD_BURST: usize = 64;
/// Most bytes of a child's current answer kept for [`ChildSnapshot::text`].
const TEXT_CAP: usize = 64 * 1024;

/// What to run as a sub-agent.
#[derive(Debug, Clone)]
pub struct SubagentRequest {
    /// The sub-agent's name, as events and hooks report it.
    pub name: String,
    /// The child's prompt.
    pub prompt: UserInput,
    /// A short label for the task.
    pub description: Option<String>,
    /// The child's id (also its session id); a fresh one when `None` ([`new_task_id`]).
    pub task_id: Option<String>,
    /// The deepest the child may be nested (default 1: only a top-level agent may start
    /// it); capped at [`MAX_SUBAGENT_DEPTH`].
    pub max_depth: u32,
}

impl SubagentRequest {
    /// A request to run `prompt` on a sub-agent called `name`.
    pub fn new(name: impl Into<String>, prompt: impl Into<UserInput>) -> Self {
        Self {
            name: name.into(),
            prompt: prompt.into(),
            description: None,
            task_id: None,
            max_depth: 1,
        }
    }

    /// Sets the short label.
    #[must_use = "returns the changed value"]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        let description = description.into();
        self.description = (!description.trim().is_empty()).then_some(description);
        self
    }

    /// Sets the child's id.
    #[must_use = "returns the changed value"]
    pub fn task_id(mut self, id: impl Into<String>) -> Self {
        self.task_id = Some(id.into());
        self
    }

    /// Sets the deepest nesting allowed.
    #[must_use = "returns the changed value"]
    pub fn max_depth(mut self, depth: u32) -> Self {
        self.max_depth = depth;
        self
    }
}

/// How a sub-agent's run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubagentOutcome {
    /// The child's id.
    pub task_id: String,
    /// The sub-agent's name.
    pub name: String,
    /// How its run ended.
    pub status: RunStatus,
    /// Its final answer, if any.
    pub text: Option<String>,
    /// The error that ended it, when `status` is `error`.
    pub error: Option<RunError>,
    /// Token usage and cost of the child (with its own children's).
    pub usage: Usage,
    /// Wall time of its run.
    pub duration: Duration,
    /// Names of the tools it called, in first-call order.
    pub tools: Vec<String>,
}

impl SubagentOutcome {
    /// True when the child finished with an answer.
    pub fn is_success(&self) -> bool {
        self.status == RunStatus::Success && self.text.is_some()
    }

    /// Why the child gave no answer, in words for the parent's model; `None` on success.
    pub fn failure(&self) -> Option<String> {
        match (self.status, &self.text) {
            (RunStatus::Success, Some(_)) => None,
            (RunStatus::Success, None) => Some("it finished without an answer".to_string()),
            (RunStatus::Aborted, _) => Some("it was aborted".to_string()),
            (RunStatus::Error, _) => Some(match &self.error {
                Some(error) => error.message.clone(),
                None => "its run failed".to_string(),
            }),
        }
    }

    /// The outcome as a tool result: the answer, or an error result saying why there is
    /// none (and what the child said so far).
    pub fn into_tool_output(self) -> ToolOutput {
        match self.failure() {
            None => ToolOutput::text(self.text.unwrap_or_default()),
            Some(why) => {
                let mut text = format!("Error: sub-agent {} failed: {why}", self.name);
                if let Some(partial) = self.text.filter(|t| !t.trim().is_empty()) {
                    text.push_str("\n\n");
                    text.push_str(&partial);
                }
                ToolOutput::error(text)
            }
        }
    }
}

/// Why a sub-agent could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SubagentError {
    /// The tool was not called by an agent run ([`ToolContext::parent`] is `None`).
    #[error("a sub-agent can only be started from a tool call of an agent run")]
    NoParent,
    /// Starting it would nest deeper than allowed.
    #[error("sub-agent {name:?} would run at depth {depth}, deeper than the {max} allowed")]
    TooDeep {
        /// The sub-agent.
        name: String,
        /// The depth it would run at.
        depth: u32,
        /// The deepest allowed.
        max: u32,
    },
    /// The parent's run was aborted (or its stream dropped) before the child started.
    #[error("the run was aborted before sub-agent {0:?} started")]
    Aborted(String),
    /// The prompt had no content.
    #[error("sub-agent {0:?} got an empty prompt")]
    EmptyPrompt(String),
}

impl From<SubagentError> for ToolError {
    fn from(err: SubagentError) -> Self {
        match err {
            SubagentError::Aborted(_) => ToolError::Cancelled(err.to_string()),
            other => ToolError::Failed(other.to_string()),
        }
    }
}

/// A fresh id for a sub-agent: `prefix` followed by `_` and 24 random hex digits (Zero's
/// `specialist_…` form); valid as a session id of every front end.
pub fn new_task_id(prefix: &str) -> String {
    crate::ids::prefixed_hex(prefix, 24)
}

/// A child agent made for one request, its run started.
struct Started {
    info: Arc<SubagentInfo>,
    run: Run,
    model: String,
    started: Instant,
}

impl Started {
    fn started_event(&self) -> AgentEvent {
        AgentEvent::SubagentStarted {
            task_id: self.info.task_id.clone(),
            name: self.info.name.clone(),
            call_id: self.info.call_id.clone(),
            description: self.info.description.clone(),
            model: self.model.clone(),
            background: self.info.background,
            parent_session_id: self.info.parent_session_id.clone(),
            depth: self.info.depth,
        }
    }
}

impl Agent {
    /// A tool that runs a prompt on a fresh copy of this agent as a sub-agent of the run
    /// that calls it: the model passes `{"prompt": "…"}` and gets the child's answer. See
    /// [`AgentTool`].
    pub fn as_tool(&self, name: impl Into<String>, description: impl Into<String>) -> AgentTool {
        AgentTool::new(self.clone(), name.into(), description.into())
    }

    /// Runs `request` on a fresh copy of this agent as a sub-agent of the run that made the
    /// tool call `ctx`, and waits for it to end. The child's events go to the parent's
    /// stream inside the call; aborting the parent aborts the child.
    ///
    /// A child that fails or is aborted is a [`SubagentOutcome`] like any other; the error
    /// is only for a child that could not start.
    pub async fn run_as_child(
        &self,
        ctx: &ToolContext,
        request: SubagentRequest,
    ) -> Result<SubagentOutcome, SubagentError> {
        let parent = ctx.parent.as_ref().ok_or(SubagentError::NoParent)?;
        let started = start(self, parent, request, false).await?;
        parent.send(vec![started.started_event()]).await;
        let observed = Mutex::new(Observed::default());
        let Started {
            info, run, started, ..
        } = started;
        let sink = Sink::Call(parent);
        forward(run, &ctx.cancel, &info, &parent.inner, &sink, &observed).await;
        let outcome = lock(&observed).outcome(&info, started.elapsed());
        sink.send(vec![finished_event(&info, &outcome)]).await;
        Ok(outcome)
    }

    /// Starts `request` on a fresh copy of this agent as a background sub-agent of the run
    /// that made the tool call `ctx`, and returns at once. The child reports
    /// `SubagentStarted` inside the call and the rest of its events after the call's
    /// result; it is stopped when the parent's run ends (or is aborted), or by
    /// [`BackgroundChild::stop`].
    pub async fn spawn_as_child(
        &self,
        ctx: &ToolContext,
        request: SubagentRequest,
    ) -> Result<BackgroundChild, SubagentError> {
        let parent = ctx.parent.as_ref().ok_or(SubagentError::NoParent)?;
        let started = start(self, parent, request, true).await?;
        let Some(em) = parent.em.upgrade() else {
            return Err(SubagentError::Aborted(started.info.name.clone()));
        };
        parent.send(vec![started.started_event()]).await;
        let stop = parent.em.cancel.child_token();
        let child = BackgroundChild::new(started.info.clone(), started.model.clone(), stop.clone());
        let task = {
            let child = child.clone();
            let inner = parent.inner.clone();
            let released = parent.released.clone();
            let Started {
                info, run, started, ..
            } = started;
            async move {
                // Report only once the launching call's result is out.
                released.cancelled().await;
                let sink = Sink::Run(em);
                let observed = child.observed();
                forward(run, &stop, &info, &inner, &sink, observed).await;
                let outcome = lock(observed).outcome(&info, started.elapsed());
                sink.send(vec![finished_event(&info, &outcome)]).await;
                child.finish(outcome);
            }
        };
        parent.em.scope.spawn(child.clone(), task);
        Ok(child)
    }
}

/// Makes the child agent for `request` and starts its run.
async fn start(
    template: &Agent,
    parent: &ParentRun,
    request: SubagentRequest,
    background: bool,
) -> Result<Started, SubagentError> {
    let depth = parent.depth() + 1;
    let max = request.max_depth.min(MAX_SUBAGENT_DEPTH);
    if depth > max {
        return Err(SubagentError::TooDeep {
            name: request.name,
            depth,
            max,
        });
    }
    if request.prompt.is_empty() {
        return Err(SubagentError::EmptyPrompt(request.name));
    }
    if parent.is_aborted() {
        return Err(SubagentError::Aborted(request.name));
    }
    let task_id = request.task_id.unwrap_or_else(|| new_task_id("subagent"));
    let store = parent
        .inner
        .session
        .as_ref()
        .map(|(store, _)| store.clone());
    let info = Arc::new(SubagentInfo {
        task_id: task_id.clone(),
        name: request.name,
        description: request.description,
        call_id: parent.call_id.clone(),
        parent_session_id: parent.session_id().map(str::to_string),
        depth,
        background,
    });
    let session = store.map(|store| (store, task_id));
    let child = template.fork_inner(session, Some((&parent.inner, info.clone())));
    if let Some((store, id)) = &child.inner.session {
        let messages = child.messages();
        if !messages.is_empty() {
            if let Err(err) = store
                .append(id, &SessionRecord::Replaced { messages })
                .await
            {
                tracing::warn!(session = %id, error = %err, "sub-agent session append failed");
            }
        }
    }
    let model = child.inner.state().model.clone();
    let run = child.prompt(request.prompt);
    Ok(Started {
        info,
        run,
        model,
        started: Instant::now(),
    })
}

/// Where a child's wrapped events go.
enum Sink<'a> {
    /// Into the launching call's window (drained by the parent's loop).
    Call(&'a ParentRun),
    /// Straight into the parent's stream (a background child, after the call's result).
    Run(crate::emit::Emitter),
}

impl Sink<'_> {
    async fn send(&self, events: Vec<AgentEvent>) {
        match self {
            Sink::Call(parent) => parent.send(events).await,
            Sink::Run(em) => {
                if let Some(batch) = Batch::of(events) {
                    em.send(batch).await;
                }
            }
        }
    }
}

/// Forwards the child's events, wrapped, until its run ends; `stop` aborts it (the rest
/// of its events still go out).
async fn forward(
    mut run: Run,
    stop: &CancellationToken,
    info: &SubagentInfo,
    parent: &Inner,
    sink: &Sink<'_>,
    observed: &Mutex<Observed>,
) {
    let mut buf = Vec::with_capacity(FORWARD_BURST);
    let mut aborting = false;
    loop {
        let n = tokio::select! {
            biased;
            _ = stop.cancelled(), if !aborting => {
                run.abort();
                aborting = true;
                continue;
            }
            n = run.recv_many(&mut buf, FORWARD_BURST) => n,
        };
        if n == 0 {
            break;
        }
        let wrapped: Vec<AgentEvent> = {
            let mut seen = lock(observed);
            buf.drain(..)
                .map(|event| {
                    seen.observe(&event, parent);
                    AgentEvent::Subagent {
                        task_id: info.task_id.clone(),
                        name: info.name.clone(),
                        call_id: info.call_id.clone(),
                        event: Box::new(event),
                    }
                })
                .collect()
        };
        sink.send(wrapped).await;
    }
}

fn finished_event(info: &SubagentInfo, outcome: &SubagentOutcome) -> AgentEvent {
    AgentEvent::SubagentFinished {
        task_id: info.task_id.clone(),
        name: info.name.clone(),
        call_id: info.call_id.clone(),
        status: outcome.status,
        final_text: outcome.text.clone(),
        error: outcome.error.as_ref().map(|e| e.message.clone()),
        usage: outcome.usage,
        duration_ms: u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
    }
}

fn lock(observed: &Mutex<Observed>) -> std::sync::MutexGuard<'_, Observed> {
    // Nothing panics while holding this lock; recover the data if that ever changes.
    observed.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the forwarder learnt of a child's run so far.
#[derive(Debug, Default)]
pub(crate) struct Observed {
    usage: Usage,
    /// The text of the child's current (or last) reply, capped.
    text: String,
    tools: Vec<String>,
    /// Recoverable errors.
    errors: Vec<String>,
    error: Option<RunError>,
    status: Option<RunStatus>,
    final_text: Option<String>,
}

impl Observed {
    /// Notes one event of the child's stream; its usage (at any depth) goes to the parent.
    fn observe(&mut self, event: &AgentEvent, parent: &Inner) {
        if let AgentEvent::Usage { turn, .. } = event.innermost() {
            self.usage += turn;
            parent.state().add_usage(turn);
        }
        match event {
            AgentEvent::AssistantStarted => self.text.clear(),
            AgentEvent::TextDelta { delta } if self.text.len() + delta.len() <= TEXT_CAP => {
                self.text.push_str(delta);
            }
            AgentEvent::ToolCall { name, .. } if !self.tools.contains(name) => {
                self.tools.push(name.clone());
            }
            AgentEvent::Error {
                code,
                message,
                recoverable,
            } => match recoverable {
                true => self.errors.push(message.clone()),
                false => {
                    self.error = Some(RunError {
                        code: *code,
                        message: message.clone(),
                    })
                }
            },
            AgentEvent::RunFinished { status, final_text } => {
                self.status = Some(*status);
                self.final_text = final_text.clone();
            }
            _ => {}
        }
    }

    fn outcome(&self, info: &SubagentInfo, duration: Duration) -> SubagentOutcome {
        let status = self.status.unwrap_or(RunStatus::Aborted);
        SubagentOutcome {
            task_id: info.task_id.clone(),
            name: info.name.clone(),
            status,
            text: self.final_text.clone(),
            error: match status {
                RunStatus::Error => self.error.clone(),
                _ => None,
            },
            usage: self.usage,
            duration,
            tools: self.tools.clone(),
        }
    }

    fn snapshot(&self) -> ChildSnapshot {
        ChildSnapshot {
            status: self.status,
            text: match &self.final_text {
                Some(text) => text.clone(),
                None => self.text.clone(),
            },
            tools: self.tools.clone(),
            errors: self
                .errors
                .iter()
                .cloned()
                .chain(self.error.as_ref().map(|e| e.message.clone()))
                .collect(),
            usage: self.usage,
        }
    }
}
