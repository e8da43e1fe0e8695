//! The session machinery shared by the protocol front ends: many sessions in one process,
//! each an [`Agent`] with persisted metadata, one turn at a time, driven by a task that
//! feeds a front end's [`TurnObserver`], and an [`Approver`] that turns permission prompts
//! into [`InteractionRequest`]s for the front end to put to its client.
//!
//! Ordering guarantees a front end can rely on:
//! - [`TurnObserver::started`] runs before any event of the turn, and
//!   [`TurnObserver::finished`] after the last one, exactly once per turn (also when the
//!   turn was stopped before it really started).
//! - When `finished` runs, the transcript holds the final text, the metadata is persisted,
//!   and [`Session::active_turn`] is already `None`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use agent_core::{
    async_trait, AbortHandle, Agent, AgentEvent, Approval, ApprovalRequest, Approver, ErrorCode,
    Message, PlanItem, ReasoningLevel, Run, RunKind, RunStatus, SessionError, ToolStatus, Usage,
    UserInput,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

use crate::backpressure::OutputGate;
use crate::config::{AgentFactory, FactoryError};
use crate::store::FileStore;
use crate::tools::{AskUserTool, ExitPlanModeTool, SessionSlot};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// A fresh id with a prefix: `<prefix>_<uuid v4>`.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4())
}

/// Agent events a turn takes from its run at once (those already waiting, up to this many).
const EVENT_BATCH: usize = 256;

/// Context window reported when the provider does not know the model.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 200_000;

/// A session's mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionMode {
    /// Read-only planning.
    Plan,
    /// Asks before every call with side effects.
    #[default]
    Build,
    /// Workspace edits pass; risky calls ask.
    Edit,
    /// Everything pre-approved.
    Yolo,
    /// Risk-based.
    Auto,
}

impl SessionMode {
    /// The mode's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plan => "plan",
            Self::Build => "build",
            Self::Edit => "edit",
            Self::Yolo => "yolo",
            Self::Auto => "auto",
        }
    }
}

/// A session goal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Goal {
    /// The objective.
    pub objective: String,
    /// Paused goals are kept but not pursued.
    #[serde(default)]
    pub paused: bool,
    /// Set at, ms.
    pub created_at: i64,
    /// Changed at, ms.
    pub updated_at: i64,
}

/// Everything persisted about a session besides its transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionMeta {
    /// Session id (`sess_<uuid>`).
    pub session_id: String,
    /// Workspace directory.
    pub workspace_path: String,
    /// Workspace identity as the client gave it.
    pub workspace_key: String,
    /// The session this one was forked from.
    #[serde(default)]
    pub parent_session_id: Option<String>,
    /// Trace id.
    #[serde(default)]
    pub trace_id: String,
    /// Title (first 80 characters of the first prompt).
    #[serde(default)]
    pub title: String,
    /// Whether the title came from the first prompt.
    #[serde(default)]
    pub title_from_input: bool,
    /// Mode.
    #[serde(default)]
    pub mode: SessionMode,
    /// Provider id.
    pub provider_id: String,
    /// Model id.
    pub model: String,
    /// Thought (reasoning) level.
    #[serde(default)]
    pub thought_level: ReasoningLevel,
    /// Created, ms.
    pub created_at: i64,
    /// Last changed, ms.
    pub updated_at: i64,
    /// Prompts run.
    #[serde(default)]
    pub turn_count: u32,
    /// All usage so far.
    #[serde(default)]
    pub usage: Usage,
    /// Tokens of the last model call (prompt + output).
    #[serde(default)]
    pub context_used: u64,
    /// The checklist from the plan tool.
    #[serde(default)]
    pub todos: Vec<PlanItem>,
    /// The goal.
    #[serde(default)]
    pub goal: Option<Goal>,
    /// Message of the last failed turn.
    #[serde(default)]
    pub last_error: Option<String>,
    /// Only these tools (when set).
    #[serde(default)]
    pub tool_allowlist: Option<Vec<String>>,
    /// Not these tools.
    #[serde(default)]
    pub tool_denylist: Vec<String>,
}

/// Where a tool call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolCallStatus {
    /// Proposed, not started.
    Pending,
    /// Running.
    Running,
    /// Succeeded.
    Completed,
    /// Failed, refused or not run.
    Failed,
}

/// What the session knows about one tool call of this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallState {
    /// Tool name.
    pub name: String,
    /// Status.
    pub status: ToolCallStatus,
    /// Started, ms.
    pub started_at: Option<i64>,
    /// Finished, ms.
    pub completed_at: Option<i64>,
}

/// The running turn.
#[derive(Debug, Clone)]
pub struct ActiveTurn {
    /// Turn id (`turn_<uuid>`).
    pub turn_id: String,
    /// Prompt or compaction.
    pub kind: RunKind,
    /// Started, ms.
    pub started_at: i64,
    abort: AbortHandle,
}

/// Facts about a turn, given to the observer.
#[derive(Debug, Clone)]
pub struct TurnInfo {
    /// Turn id.
    pub turn_id: String,
    /// Prompt or compaction.
    pub kind: RunKind,
    /// 1-based prompt number in the session (for compaction: the count so far).
    pub number: u32,
    /// The prompt text (empty for compaction).
    pub input: String,
    /// The client's input id.
    pub input_id: Option<String>,
    /// Started, ms.
    pub started_at: i64,
}

/// How a turn ended.
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    /// Status of the run.
    pub status: RunStatus,
    /// Final answer text.
    pub final_text: Option<String>,
    /// The fatal error, when the run failed.
    pub error: Option<(ErrorCode, String)>,
    /// Usage of the turn's model calls.
    pub usage: Usage,
    /// Model calls made.
    pub model_calls: u32,
    /// Tool calls made.
    pub tool_calls: u32,
    /// Wall time, ms.
    pub duration_ms: u64,
    /// Compaction summary.
    pub summary: Option<String>,
}

/// A front end's view of one turn: it maps the turn's events to its protocol.
pub trait TurnObserver: Send + 'static {
    /// The turn started; no event of it was seen yet.
    fn started(&mut self, session: &Session, turn: &TurnInfo);
    /// One agent event of the turn.
    fn event(&mut self, session: &Session, turn: &TurnInfo, event: &AgentEvent);
    /// The turn ended; the session is idle again.
    fn finished(&mut self, session: &Session, turn: &TurnInfo, outcome: &TurnOutcome);
    /// Hands over output the observer holds back to send several events' frames at once.
    /// The session calls it before every wait (for the next agent events, for the output
    /// gate) and after [`started`](Self::started) and [`finished`](Self::finished), so
    /// output is batched only across events that were already waiting, never delayed.
    /// The default does nothing (an observer that sends every frame at once).
    fn flush(&mut self) {}
    /// The gate of the front end's output: the turn takes its next event only when the
    /// gate is [ready](OutputGate::ready), so a slow client stalls the turn instead of
    /// growing the output queue. `None` (the default): no backpressure.
    fn output_gate(&self) -> Option<Arc<OutputGate>> {
        None
    }
}

/// A second turn was started while one runs.
#[derive(Debug, Clone, thiserror::Error)]
#[error("prompt is running: a prompt is already running in session {session_id} (turn {turn_id})")]
pub struct Busy {
    /// The session.
    pub session_id: String,
    /// The running turn.
    pub turn_id: String,
}

// ---------------------------------------------------------------------------------------
// Interactions
// ---------------------------------------------------------------------------------------

/// A choice offered with a question.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionSpec {
    /// The question.
    pub question: String,
    /// A short header.
    pub header: String,
    /// Choices as `(value, label)`.
    pub options: Vec<(String, String)>,
    /// Several may be picked.
    pub multi_select: bool,
}

/// A request for user input (plan approval or questions).
#[derive(Debug, Clone, PartialEq)]
pub struct UserInputRequest {
    /// The tool call asking.
    pub call_id: Option<String>,
    /// The asking tool's protocol name (`ExitPlanMode`, `AskUserQuestion`).
    pub tool_name: String,
    /// A plan to approve.
    pub plan: Option<String>,
    /// Questions to answer.
    pub questions: Vec<QuestionSpec>,
}

/// What the user answered.
#[derive(Debug, Clone, PartialEq)]
pub enum UserInputAnswer {
    /// Accepted, with the answer content.
    Accepted(Value),
    /// Declined, with a reason.
    Declined(Option<String>),
    /// Dismissed or cancelled.
    Cancelled,
}

/// What is asked.
#[derive(Debug, Clone, PartialEq)]
pub enum InteractionKind {
    /// A permission prompt.
    Permission(ApprovalRequest),
    /// A user input request.
    UserInput(UserInputRequest),
}

/// The answer to an interaction.
#[derive(Debug, Clone, PartialEq)]
pub enum InteractionReply {
    /// To a permission prompt.
    Permission(Approval),
    /// To a user input request.
    UserInput(UserInputAnswer),
}

/// A question from a session's agent for the front end's client. Dropping `reply`
/// without sending means "cancelled".
#[derive(Debug)]
pub struct InteractionRequest {
    /// The session asking.
    pub session_id: String,
    /// Its running turn.
    pub turn_id: Option<String>,
    /// What is asked.
    pub kind: InteractionKind,
    /// Where the answer goes.
    pub reply: oneshot::Sender<InteractionReply>,
}

/// Sends a session's interactions to the front end.
#[derive(Debug, Clone)]
pub struct InteractionLink {
    session_id: String,
    turn: Arc<Mutex<Option<String>>>,
    tx: mpsc::UnboundedSender<InteractionRequest>,
}

impl InteractionLink {
    /// Asks the client; `None` when the front end is gone or the request was cancelled.
    pub async fn ask(&self, kind: InteractionKind) -> Option<InteractionReply> {
        let (reply, rx) = oneshot::channel();
        let turn_id = self.turn.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let request = InteractionRequest {
            session_id: self.session_id.clone(),
            turn_id,
            kind,
            reply,
        };
        self.tx.send(request).ok()?;
        rx.await.ok()
    }
}

/// The [`Approver`] of a session: forwards each prompt to the front end and waits for the
/// client's answer. An abort of the run drops this wait (agent-core cancels it).
#[derive(Debug, Clone)]
pub struct SessionApprover {
    link: InteractionLink,
}

#[async_trait]
impl Approver for SessionApprover {
    async fn approve(&self, request: ApprovalRequest) -> Approval {
        match self.link.ask(InteractionKind::Permission(request)).await {
            Some(InteractionReply::Permission(approval)) => approval,
            Some(InteractionReply::UserInput(_)) | None => Approval::Deny {
                reason: Some("permission request was cancelled".to_string()),
            },
        }
    }
}

// ---------------------------------------------------------------------------------------
// Session
// ---------------------------------------------------------------------------------------

struct Data {
    meta: SessionMeta,
    active: Option<ActiveTurn>,
    revision: u64,
    tool_calls: HashMap<String, ToolCallState>,
}

/// A point-in-time view of a session.
#[derive(Debug, Clone)]
pub struct SessionView {
    /// Persisted metadata.
    pub meta: SessionMeta,
    /// The running turn.
    pub active: Option<ActiveTurn>,
    /// State revision (bumped by every change).
    pub revision: u64,
    /// Context window of the current model.
    pub context_window: u64,
    /// Tool calls of the running turn that have not finished, in no particular order.
    pub active_tools: Vec<(String, ToolCallState)>,
}

/// One live session.
pub struct Session {
    id: String,
    agent: Agent,
    store: Arc<FileStore>,
    data: Mutex<Data>,
    /// Orders turn start/finish against each other and against observers.
    gate: Mutex<()>,
    idle: watch::Sender<bool>,
    persist: tokio::sync::Mutex<()>,
    turn: Arc<Mutex<Option<String>>>,
    link: InteractionLink,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("id", &self.id).finish()
    }
}

impl Session {
    fn data(&self) -> MutexGuard<'_, Data> {
        // Nothing panics while holding the lock; recover the data if that ever changes.
        self.data.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn gate(&self) -> MutexGuard<'_, ()> {
        self.gate.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set_turn(&self, turn: Option<String>) {
        *self.turn.lock().unwrap_or_else(|e| e.into_inner()) = turn;
    }

    /// Session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The agent.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// The link tools of this session use to ask the client.
    pub fn interaction_link(&self) -> &InteractionLink {
        &self.link
    }

    /// The persisted metadata as it is now.
    pub fn meta(&self) -> SessionMeta {
        self.data().meta.clone()
    }

    /// A view of the session.
    pub fn view(&self) -> SessionView {
        let context_window = self
            .agent
            .model_info()
            .map(|m| u64::from(m.context_window))
            .filter(|w| *w > 0)
            .unwrap_or(DEFAULT_CONTEXT_WINDOW);
        let data = self.data();
        let active_tools = match &data.active {
            Some(_) => data
                .tool_calls
                .iter()
                .filter(|(_, s)| {
                    matches!(s.status, ToolCallStatus::Pending | ToolCallStatus::Running)
                })
                .map(|(id, s)| (id.clone(), s.clone()))
                .collect(),
            None => Vec::new(),
        };
        SessionView {
            meta: data.meta.clone(),
            active: data.active.clone(),
            revision: data.revision,
            context_window,
            active_tools,
        }
    }

    /// The running turn, if any.
    pub fn active_turn(&self) -> Option<ActiveTurn> {
        self.data().active.clone()
    }

    /// What the session knows about a tool call of this process.
    pub fn tool_call(&self, id: &str) -> Option<ToolCallState> {
        self.data().tool_calls.get(id).cloned()
    }

    /// The transcript.
    pub fn messages(&self) -> Vec<Message> {
        self.agent.messages()
    }

    /// Starts a prompt turn (text, optionally with images). Fails with [`Busy`] while a
    /// turn (or compaction) runs.
    pub fn start_prompt(
        self: &Arc<Self>,
        input: impl Into<UserInput>,
        input_id: Option<String>,
        observer: Box<dyn TurnObserver>,
    ) -> Result<TurnInfo, Busy> {
        self.start(RunKind::Prompt, input.into(), input_id, observer)
    }

    /// Starts a compaction of the transcript, which holds the prompt lock like a turn.
    pub fn start_compact(
        self: &Arc<Self>,
        observer: Box<dyn TurnObserver>,
    ) -> Result<TurnInfo, Busy> {
        self.start(RunKind::Compact, UserInput::default(), None, observer)
    }

    fn start(
        self: &Arc<Self>,
        kind: RunKind,
        input: UserInput,
        input_id: Option<String>,
        mut observer: Box<dyn TurnObserver>,
    ) -> Result<TurnInfo, Busy> {
        let gate = self.gate();
        let (info, run) = {
            let mut data = self.data();
            if let Some(active) = &data.active {
                return Err(Busy {
                    session_id: self.id.clone(),
                    turn_id: active.turn_id.clone(),
                });
            }
            let turn_id = new_id("turn");
            let started_at = now_ms();
            if kind == RunKind::Prompt {
                data.meta.turn_count += 1;
                if data.meta.title.is_empty() {
                    data.meta.title = input.text.trim().chars().take(80).collect();
                    data.meta.title_from_input = true;
                }
            }
            data.meta.updated_at = started_at;
            data.revision += 1;
            let text = input.text.clone();
            let run = match kind {
                RunKind::Prompt => self.agent.prompt(input),
                RunKind::Compact => self.agent.compact(),
            };
            data.active = Some(ActiveTurn {
                turn_id: turn_id.clone(),
                kind,
                started_at,
                abort: run.abort_handle(),
            });
            let info = TurnInfo {
                turn_id,
                kind,
                number: data.meta.turn_count,
                input: text,
                input_id,
                started_at,
            };
            (info, run)
        };
        self.set_turn(Some(info.turn_id.clone()));
        self.idle.send_replace(false);
        observer.started(self, &info);
        observer.flush();
        drop(gate);
        let session = self.clone();
        let turn = info.clone();
        tokio::spawn(async move { session.drive(run, turn, observer).await });
        Ok(info)
    }

    async fn drive(
        self: Arc<Self>,
        mut run: Run,
        turn: TurnInfo,
        mut observer: Box<dyn TurnObserver>,
    ) {
        self.persist_logged().await;
        let started = Instant::now();
        let mut outcome = TurnOutcome {
            status: RunStatus::Aborted,
            final_text: None,
            error: None,
            usage: Usage::default(),
            model_calls: 0,
            tool_calls: 0,
            duration_ms: 0,
            summary: None,
        };
        let gate = observer.output_gate();
        let mut batch = Vec::with_capacity(EVENT_BATCH);
        loop {
            // Everything observed so far goes out before the turn waits for the provider.
            observer.flush();
            if let Some(gate) = &gate {
                gate.ready().await;
            }
            if run.recv_many(&mut batch, EVENT_BATCH).await == 0 {
                break;
            }
            for event in batch.drain(..) {
                // The gate bounds the output per event, also inside a batch: a turn goes on
                // only while fewer than the limit are queued (a lock-free check; it waits,
                // after handing over what it holds, only when the queue is full).
                if let Some(gate) = gate.as_ref().filter(|g| !g.has_room()) {
                    observer.flush();
                    gate.ready().await;
                }
                self.track(&event, &mut outcome);
                observer.event(&self, &turn, &event);
                if let AgentEvent::RunFinished { status, final_text } = event {
                    outcome.status = status;
                    outcome.final_text = final_text;
                }
            }
        }
        outcome.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        {
            let mut data = self.data();
            let now = now_ms();
            data.meta.updated_at = now;
            if outcome.status == RunStatus::Error {
                data.meta.last_error = outcome.error.as_ref().map(|(_, m)| m.clone());
            }
            // Calls the run never finished (it was aborted) are failed now.
            for state in data.tool_calls.values_mut() {
                if matches!(
                    state.status,
                    ToolCallStatus::Pending | ToolCallStatus::Running
                ) {
                    state.status = ToolCallStatus::Failed;
                    state.completed_at = Some(now);
                }
            }
        }
        self.persist_logged().await;
        let _gate = self.gate();
        {
            let mut data = self.data();
            data.active = None;
            data.revision += 1;
        }
        self.set_turn(None);
        self.idle.send_replace(true);
        observer.finished(&self, &turn, &outcome);
        observer.flush();
    }

    fn track(&self, event: &AgentEvent, outcome: &mut TurnOutcome) {
        match event {
            // The streaming events change nothing here: no lock for them.
            AgentEvent::TextDelta { .. }
            | AgentEvent::ReasoningDelta { .. }
            | AgentEvent::ToolProgress { .. } => return,
            _ => {}
        }
        let mut data = self.data();
        match event {
            AgentEvent::Usage { turn, .. } => {
                data.meta.usage += turn;
                data.meta.context_used = turn.total_tokens();
                outcome.usage += turn;
                outcome.model_calls += 1;
            }
            AgentEvent::ToolCall { id, name, .. } => {
                outcome.tool_calls += 1;
                data.tool_calls.insert(
                    id.clone(),
                    ToolCallState {
                        name: name.clone(),
                        status: ToolCallStatus::Pending,
                        started_at: None,
                        completed_at: None,
                    },
                );
            }
            AgentEvent::ToolExecutionStarted { id, .. } => {
                if let Some(state) = data.tool_calls.get_mut(id) {
                    state.status = ToolCallStatus::Running;
                    state.started_at = Some(now_ms());
                }
            }
            AgentEvent::ToolResult { id, status, .. } => {
                if let Some(state) = data.tool_calls.get_mut(id) {
                    let now = now_ms();
                    state.status = match status {
                        ToolStatus::Ok => ToolCallStatus::Completed,
                        _ => ToolCallStatus::Failed,
                    };
                    state.started_at.get_or_insert(now);
                    state.completed_at = Some(now);
                }
            }
            AgentEvent::PlanUpdated { plan, .. } => data.meta.todos = plan.clone(),
            AgentEvent::Error {
                code,
                message,
                recoverable: false,
            } => outcome.error = Some((*code, message.clone())),
            AgentEvent::Error {
                message,
                recoverable: true,
                ..
            } => tracing::warn!(session = %self.id, %message, "recoverable agent error"),
            AgentEvent::CompactionFinished { summary, .. } => {
                outcome.summary = Some(summary.clone())
            }
            _ => {}
        }
    }

    /// Aborts the running turn (streaming, tools and pending approvals stop). Returns whether
    /// a turn was running.
    pub fn stop(&self) -> bool {
        let data = self.data();
        match &data.active {
            Some(active) => {
                active.abort.abort();
                self.agent.abort();
                true
            }
            None => false,
        }
    }

    /// Waits until no turn runs, at most `timeout`. Returns whether the session is idle.
    pub async fn wait_idle(&self, timeout: Duration) -> bool {
        let mut rx = self.idle.subscribe();
        let waited = tokio::time::timeout(timeout, rx.wait_for(|idle| *idle))
            .await
            .map(|r| r.is_ok());
        waited.unwrap_or(false)
    }

    /// Queues steering text for the running turn (or the next one). Returns whether a turn
    /// was running.
    pub fn steer(&self, text: String) -> bool {
        self.agent.steer(text);
        self.data().active.is_some()
    }

    /// Changes the mode (and the agent's permission policy).
    pub async fn set_mode(&self, mode: SessionMode) -> Result<(), SessionError> {
        self.agent.set_permission_mode(mode.permission_mode());
        self.update_meta(|m| m.mode = mode).await
    }

    /// Changes the thought level.
    pub async fn set_thought_level(&self, level: ReasoningLevel) -> Result<(), SessionError> {
        self.agent.set_reasoning(level);
        self.update_meta(|m| m.thought_level = level).await
    }

    /// Changes the model.
    pub async fn set_model(&self, model: String) -> Result<(), SessionError> {
        self.agent.set_model(model.clone());
        self.update_meta(|m| m.model = model).await
    }

    /// Changes the metadata and persists it.
    pub async fn update_meta<R>(
        &self,
        f: impl FnOnce(&mut SessionMeta) -> R,
    ) -> Result<R, SessionError> {
        let result = {
            let mut data = self.data();
            let result = f(&mut data.meta);
            data.meta.updated_at = now_ms();
            data.revision += 1;
            result
        };
        self.persist().await?;
        Ok(result)
    }

    /// Writes the metadata to disk.
    pub async fn persist(&self) -> Result<(), SessionError> {
        let _serial = self.persist.lock().await;
        let meta = self.meta();
        self.store.save_meta(&meta).await
    }

    async fn persist_logged(&self) {
        if let Err(err) = self.persist().await {
            tracing::warn!(session = %self.id, error = %err, "cannot persist session metadata");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Manager
// ---------------------------------------------------------------------------------------

/// Why a session could not be created, resumed or forked.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// No stored session with that id.
    #[error("Session not found: {0}")]
    NotFound(String),
    /// The agent could not be built.
    #[error(transparent)]
    Factory(#[from] FactoryError),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] SessionError),
}

/// Options of a new session.
#[derive(Debug, Clone, Default)]
pub struct CreateOptions {
    /// Workspace directory.
    pub workspace_path: String,
    /// Workspace identity (defaults to the path).
    pub workspace_key: Option<String>,
    /// Mode (default build).
    pub mode: Option<SessionMode>,
    /// Model (default: the factory's).
    pub model: Option<String>,
    /// Thought level (default medium).
    pub thought_level: Option<ReasoningLevel>,
    /// Parent session.
    pub parent_session_id: Option<String>,
    /// Only these tools.
    pub tool_allowlist: Option<Vec<String>>,
    /// Not these tools.
    pub tool_denylist: Vec<String>,
}

/// Many sessions in one process, persisted in a [`FileStore`].
pub struct SessionManager {
    factory: Arc<AgentFactory>,
    store: Arc<FileStore>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    interactions: mpsc::UnboundedSender<InteractionRequest>,
    activation: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for SessionManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionManager")
            .field("store", &self.store)
            .field("active", &self.lock().len())
            .finish()
    }
}

impl SessionManager {
    /// A manager building agents with `factory`, persisting to `store`, and sending every
    /// session's interactions to `interactions`.
    pub fn new(
        factory: AgentFactory,
        store: FileStore,
        interactions: mpsc::UnboundedSender<InteractionRequest>,
    ) -> Self {
        Self {
            factory: Arc::new(factory),
            store: Arc::new(store),
            sessions: Mutex::new(HashMap::new()),
            interactions,
            activation: tokio::sync::Mutex::new(()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The factory.
    pub fn factory(&self) -> &AgentFactory {
        &self.factory
    }

    /// A session created or resumed in this process.
    pub fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.lock().get(id).cloned()
    }

    /// Every active session.
    pub fn active(&self) -> Vec<Arc<Session>> {
        self.lock().values().cloned().collect()
    }

    async fn activate(
        &self,
        meta: SessionMeta,
        resume: bool,
        messages: Vec<Message>,
    ) -> Result<Arc<Session>, ManagerError> {
        let turn = Arc::new(Mutex::new(None));
        let link = InteractionLink {
            session_id: meta.session_id.clone(),
            turn: turn.clone(),
            tx: self.interactions.clone(),
        };
        let approver = Arc::new(SessionApprover { link: link.clone() });
        let slot: SessionSlot = Arc::new(std::sync::OnceLock::new());
        let session_tools: Vec<Arc<dyn agent_core::Tool>> = vec![
            Arc::new(AskUserTool::new(link.clone())),
            Arc::new(ExitPlanModeTool::new(link.clone(), slot.clone())),
        ];
        let agent = self
            .factory
            .build(
                &meta,
                approver,
                self.store.clone(),
                session_tools,
                resume,
                messages,
            )
            .await?;
        let (idle, _) = watch::channel(true);
        let session = Arc::new(Session {
            id: meta.session_id.clone(),
            agent,
            store: self.store.clone(),
            data: Mutex::new(Data {
                meta,
                active: None,
                revision: 1,
                tool_calls: HashMap::new(),
            }),
            gate: Mutex::new(()),
            idle,
            persist: tokio::sync::Mutex::new(()),
            turn,
            link,
        });
        let _ = slot.set(Arc::downgrade(&session));
        session.persist().await?;
        self.lock().insert(session.id.clone(), session.clone());
        Ok(session)
    }

    fn new_meta(&self, options: CreateOptions, model: String) -> SessionMeta {
        let now = now_ms();
        SessionMeta {
            session_id: new_id("sess"),
            workspace_key: options
                .workspace_key
                .filter(|k| !k.is_empty())
                .unwrap_or_else(|| options.workspace_path.clone()),
            workspace_path: options.workspace_path,
            parent_session_id: options.parent_session_id,
            trace_id: new_id("trace"),
            title: String::new(),
            title_from_input: false,
            mode: options.mode.unwrap_or_default(),
            provider_id: self.factory.provider_id().to_string(),
            model,
            thought_level: options.thought_level.unwrap_or_default(),
            created_at: now,
            updated_at: now,
            turn_count: 0,
            usage: Usage::default(),
            context_used: 0,
            todos: Vec::new(),
            goal: None,
            last_error: None,
            tool_allowlist: options.tool_allowlist,
            tool_denylist: options.tool_denylist,
        }
    }

    /// Creates (and persists) a new session.
    pub async fn create(&self, options: CreateOptions) -> Result<Arc<Session>, ManagerError> {
        let model = match &options.model {
            Some(model) => model.clone(),
            None => {
                let provider = self.factory.provider()?;
                self.factory.default_model(provider.as_ref())
            }
        };
        let meta = self.new_meta(options, model);
        let _serial = self.activation.lock().await;
        self.activate(meta, false, Vec::new()).await
    }

    /// Makes a stored session active in this process (a no-op returning it when it already
    /// is). The flag tells whether it was loaded now.
    pub async fn resume(&self, id: &str) -> Result<(Arc<Session>, bool), ManagerError> {
        let _serial = self.activation.lock().await;
        if let Some(session) = self.get(id) {
            return Ok((session, false));
        }
        let meta = match self.store.load_meta(id).await {
            Ok(meta) => meta,
            Err(SessionError::NotFound(_)) => return Err(ManagerError::NotFound(id.to_string())),
            Err(err) => return Err(err.into()),
        };
        Ok((self.activate(meta, true, Vec::new()).await?, true))
    }

    /// A new session with `parent`'s settings and the given transcript (for a whole copy,
    /// `parent.messages()`).
    pub async fn fork(
        &self,
        parent: &Session,
        messages: Vec<Message>,
    ) -> Result<Arc<Session>, ManagerError> {
        let parent_meta = parent.meta();
        let mut meta = self.new_meta(
            CreateOptions {
                workspace_path: parent_meta.workspace_path.clone(),
                workspace_key: Some(parent_meta.workspace_key.clone()),
                mode: Some(parent_meta.mode),
                model: None,
                thought_level: Some(parent_meta.thought_level),
                parent_session_id: Some(parent_meta.session_id.clone()),
                tool_allowlist: parent_meta.tool_allowlist.clone(),
                tool_denylist: parent_meta.tool_denylist.clone(),
            },
            parent_meta.model.clone(),
        );
        meta.title = parent_meta.title.clone();
        meta.title_from_input = parent_meta.title_from_input;
        meta.todos = parent_meta.todos.clone();
        meta.goal = parent_meta.goal.clone();
        let _serial = self.activation.lock().await;
        self.activate(meta, false, messages).await
    }

    /// Metadata of every stored session (active ones as they are now), most recently
    /// updated first.
    pub async fn list(&self) -> Result<Vec<SessionMeta>, SessionError> {
        let mut metas = self.store.list_meta().await?;
        let active = self.active();
        for meta in &mut metas {
            if let Some(session) = active.iter().find(|s| s.id() == meta.session_id) {
                *meta = session.meta();
            }
        }
        for session in &active {
            if !metas.iter().any(|m| m.session_id == session.id()) {
                metas.push(session.meta());
            }
        }
        metas.sort_by_key(|m| std::cmp::Reverse(m.updated_at));
        Ok(metas)
    }

    /// Stops every running turn and waits (bounded) for them to wind down.
    pub async fn shutdown(&self, timeout: Duration) {
        let sessions = self.active();
        for session in &sessions {
            session.stop();
        }
        for session in &sessions {
            session.wait_idle(timeout).await;
        }
    }
}
