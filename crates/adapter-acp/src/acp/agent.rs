//! [`AcpAgent`]: the ACP agent side of a connection, on the official SDK's v1 builder.
//!
//! Requests are answered from the SDK's dispatch loop only when that is quick
//! (initialize, session setup, mode changes). A prompt starts a turn on the shared
//! [`SessionManager`] and returns; the turn's [`TurnObserver`] streams `session/update`
//! notifications from the session's own task and answers the `session/prompt` request when
//! the turn finishes. Permission prompts and questions arrive on the manager's interaction
//! channel and are put to the client from tasks of their own, so nothing that waits on the
//! client ever holds the dispatch loop, and `session/cancel` is handled while a permission
//! request is still open.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ContentBlock as AcpBlock, CurrentModeUpdate,
    Implementation, InitializeRequest, InitializeResponse, ListSessionsRequest,
    ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, NewSessionRequest,
    NewSessionResponse, PermissionOption, PermissionOptionKind, PromptCapabilities, PromptRequest,
    PromptResponse, RequestPermissionOutcome, RequestPermissionRequest, SessionCapabilities,
    SessionId, SessionInfo, SessionListCapabilities, SessionMode as AcpMode, SessionModeState,
    SessionNotification, SessionUpdate, SetSessionModeRequest, SetSessionModeResponse, TextContent,
    ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, Client, ConnectTo, Error, ErrorCode, Responder, V1};
use agent_core::{AgentEvent, Approval, RunKind};
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, watch};

use super::mapping::{self, TurnEnd, TurnMapper};
use super::transport::UpdateOutbox;
use crate::backpressure::OutputGate;
use crate::session::AgentFactory;
use crate::session::FileStore;
use crate::session::{
    CreateOptions, InteractionKind, InteractionReply, InteractionRequest, ManagerError,
    QuestionSpec, Session, SessionManager, SessionMode, TurnInfo, TurnObserver, TurnOutcome,
    UserInputAnswer, UserInputRequest,
};

/// How long a permission request waits for the call's `tool_call` to be sent first.
const ANNOUNCE_WAIT: Duration = Duration::from_secs(5);
/// How long shutdown waits for running turns to wind down.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// Option ids of a permission request.
mod option {
    pub const ALLOW_ONCE: &str = "allow_once";
    pub const ALLOW_ALWAYS: &str = "allow_always";
    pub const REJECT: &str = "reject_once";
    pub const APPROVE_PLAN: &str = "approve";
    pub const KEEP_PLANNING: &str = "reject";
}

/// The session modes offered, in order, as `(id, name, description)`. They are the ZCode
/// front end's modes (sessions are shared with it); `build` is the default.
pub const MODES: [(SessionMode, &str, &str); 5] = [
    (
        SessionMode::Build,
        "Build",
        "Asks before every call that changes files or runs commands",
    ),
    (
        SessionMode::Edit,
        "Accept edits",
        "Workspace edits run without asking; risky commands ask",
    ),
    (
        SessionMode::Auto,
        "Auto",
        "Reads, edits and low- or medium-risk commands run; high-risk calls ask",
    ),
    (
        SessionMode::Plan,
        "Plan",
        "Read-only: the agent explores and proposes a plan",
    ),
    (SessionMode::Yolo, "Yolo", "Everything runs without asking"),
];

/// The mode a `session/set_mode` id names: our ids, plus the common aliases `default` /
/// `ask` (build), `acceptEdits` (edit), `unsafe` / `bypassPermissions` (yolo).
pub fn parse_mode(id: &str) -> Option<SessionMode> {
    match id {
        "build" | "default" | "ask" => Some(SessionMode::Build),
        "edit" | "acceptEdits" | "accept_edits" => Some(SessionMode::Edit),
        "auto" => Some(SessionMode::Auto),
        "plan" => Some(SessionMode::Plan),
        "yolo" | "unsafe" | "bypassPermissions" => Some(SessionMode::Yolo),
        _ => None,
    }
}

/// The `modes` of a session in `current`.
pub fn mode_state(current: SessionMode) -> SessionModeState {
    SessionModeState::new(
        current.as_str(),
        MODES
            .iter()
            .map(|(mode, name, description)| {
                AcpMode::new(mode.as_str(), *name).description(description.to_string())
            })
            .collect(),
    )
}

/// What the ACP agent needs.
#[derive(Debug)]
pub struct AcpOptions {
    /// Builds the sessions' agents.
    pub factory: AgentFactory,
    /// Where sessions are stored (shared with the ZCode front end).
    pub data_dir: PathBuf,
}

/// The agent side of one ACP connection. Connect it to a client transport with
/// [`ConnectTo::connect_to`], e.g. `AcpAgent::new(options).connect_to(Stdio::new())`.
#[derive(Debug)]
pub struct AcpAgent {
    options: AcpOptions,
    gate: Arc<OutputGate>,
    gated: bool,
    outbox: Option<Arc<UpdateOutbox>>,
}

impl AcpAgent {
    /// An agent serving sessions built by `options.factory`, stored under
    /// `options.data_dir`.
    pub fn new(options: AcpOptions) -> Self {
        Self {
            options,
            gate: Arc::new(OutputGate::default()),
            gated: false,
            outbox: None,
        }
    }

    /// Writes `session/update` notifications through `outbox` (the line transport's,
    /// [`LineTransport::update_outbox`](super::transport::LineTransport::update_outbox))
    /// instead of the SDK's outgoing queue: serialised once on the turn's task, written in
    /// the transport's next batch, still before any reply sent after them. Without it,
    /// they go through the SDK's `send_notification`.
    pub fn with_update_outbox(mut self, outbox: Arc<UpdateOutbox>) -> Self {
        self.outbox = Some(outbox);
        self
    }

    /// Counts the `session/update` notifications it sends on `gate`, and lets a turn take
    /// its next event only when the gate is ready. Give the same gate to the transport
    /// ([`transport`](super::transport::transport)), which counts them as written; without
    /// it, turns never wait.
    pub fn with_output_gate(mut self, gate: Arc<OutputGate>) -> Self {
        self.gate = gate;
        self.gated = true;
        self
    }
}

/// Tool call ids whose `tool_call` notification was sent, so that a permission request for
/// a call never reaches the client before the call itself (Zed needs that order).
#[derive(Debug, Default)]
struct Announced {
    ids: Mutex<HashSet<String>>,
    tx: watch::Sender<u64>,
}

impl Announced {
    fn key(session: &str, call: &str) -> String {
        format!("{session}\u{0}{call}")
    }

    fn lock(&self) -> MutexGuard<'_, HashSet<String>> {
        self.ids.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn add(&self, session: &str, call: &str) {
        self.lock().insert(Self::key(session, call));
        self.tx.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn forget_session(&self, session: &str) {
        let prefix = format!("{session}\u{0}");
        self.lock().retain(|k| !k.starts_with(&prefix));
    }

    /// Waits (at most `timeout`) until the call was announced.
    async fn wait(&self, session: &str, call: &str, timeout: Duration) -> bool {
        let key = Self::key(session, call);
        let mut rx = self.tx.subscribe();
        let waited =
            tokio::time::timeout(timeout, rx.wait_for(|_| self.lock().contains(&key))).await;
        matches!(waited, Ok(Ok(_)))
    }
}

struct Shared {
    manager: SessionManager,
    gate: Arc<OutputGate>,
    /// Whether the gate is shared with a transport that counts written updates.
    gated: bool,
    /// Where updates go when not through the SDK.
    outbox: Option<Arc<UpdateOutbox>>,
    /// Per session with a running prompt: whether the client cancelled it.
    cancels: Mutex<HashMap<String, Arc<AtomicBool>>>,
    announced: Announced,
}

impl Shared {
    fn cancels(&self) -> MutexGuard<'_, HashMap<String, Arc<AtomicBool>>> {
        self.cancels.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn session_not_found(id: &str) -> Error {
    Error::new(
        ErrorCode::RESOURCE_NOT_FOUND,
        format!("Session not found: {id}"),
    )
    .data(json!({ "sessionId": id }))
}

fn session_error(err: ManagerError, id: Option<&str>) -> Error {
    match (err, id) {
        (ManagerError::NotFound(_), Some(id)) => session_not_found(id),
        (err, _) => internal(err),
    }
}

fn internal(err: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::INTERNAL_ERROR, err.to_string())
}

fn invalid_params(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, message.into())
}

fn invalid_request(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::INVALID_REQUEST, message.into())
}

fn notify(s: &Shared, cx: &ConnectionTo<Client>, session_id: &SessionId, update: SessionUpdate) {
    let notification = SessionNotification::new(session_id.clone(), update);
    if s.gated {
        s.gate.queued_one();
    }
    let sent = match &s.outbox {
        Some(outbox) => outbox.send(&notification).map_err(|e| e.to_string()),
        None => cx
            .send_notification(notification)
            .map_err(|e| format!("{e:?}")),
    };
    if let Err(err) = sent {
        if s.gated {
            s.gate.written_one();
        }
        tracing::debug!(session = %session_id.0, error = %err, "cannot send session/update");
    }
}

fn absolute_cwd(cwd: &Path) -> Result<String, Error> {
    if !cwd.is_absolute() {
        return Err(invalid_params(format!(
            "cwd must be an absolute path, got {}",
            cwd.display()
        )));
    }
    Ok(cwd.to_string_lossy().into_owned())
}

impl ConnectTo<Client> for AcpAgent {
    async fn connect_to(self, client: impl ConnectTo<Agent>) -> agent_client_protocol::Result<()> {
        let (int_tx, int_rx) = mpsc::unbounded_channel();
        let store = FileStore::new(&self.options.data_dir);
        let shared = Arc::new(Shared {
            manager: SessionManager::new(self.options.factory, store, int_tx),
            gated: self.gated,
            gate: self.gate,
            outbox: self.outbox,
            cancels: Mutex::new(HashMap::new()),
            announced: Announced::default(),
        });
        let s = shared.clone();
        let result = Agent
            .v1()
            .name("adapter-acp")
            .on_receive_request(
                async move |req: InitializeRequest,
                            responder: Responder<InitializeResponse, V1>,
                            _cx| { responder.respond(initialize(&req)) },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                {
                    let s = s.clone();
                    async move |req: NewSessionRequest,
                                responder: Responder<NewSessionResponse, V1>,
                                _cx| {
                        responder.respond_with_result(new_session(&s, req).await)
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                {
                    let s = s.clone();
                    async move |req: LoadSessionRequest,
                                responder: Responder<LoadSessionResponse, V1>,
                                cx: ConnectionTo<Client>| {
                        responder.respond_with_result(load_session(&s, &cx, req).await)
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                {
                    let s = s.clone();
                    async move |req: ListSessionsRequest,
                                responder: Responder<ListSessionsResponse, V1>,
                                _cx| {
                        responder.respond_with_result(list_sessions(&s, req).await)
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                {
                    let s = s.clone();
                    async move |req: SetSessionModeRequest,
                                responder: Responder<SetSessionModeResponse, V1>,
                                _cx| {
                        responder.respond_with_result(set_mode(&s, req).await)
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                {
                    let s = s.clone();
                    async move |req: PromptRequest,
                                responder: Responder<PromptResponse, V1>,
                                cx: ConnectionTo<Client>| {
                        match start_prompt(&s, &cx, req) {
                            // The turn's observer answers when the turn ends.
                            Ok(observer) => {
                                observer.attach(responder);
                                Ok(())
                            }
                            Err(err) => responder.respond_with_error(err),
                        }
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_notification(
                {
                    let s = s.clone();
                    async move |n: CancelNotification, _cx| {
                        cancel(&s, &n.session_id.0);
                        Ok(())
                    }
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .connect_with(client, {
                let s = shared.clone();
                async move |cx: ConnectionTo<Client>| {
                    let mut int_rx = int_rx;
                    loop {
                        tokio::select! {
                            _ = cx.incoming_closed() => break,
                            request = int_rx.recv() => match request {
                                Some(request) => {
                                    tokio::spawn(interact(s.clone(), cx.clone(), request));
                                }
                                None => break,
                            },
                        }
                    }
                    Ok(())
                }
            })
            .await;
        // Nothing is written any more: turns must not wait for output while they stop.
        shared.gate.close();
        shared.manager.shutdown(SHUTDOWN_WAIT).await;
        result
    }
}

fn initialize(req: &InitializeRequest) -> InitializeResponse {
    tracing::debug!(version = ?req.protocol_version, "initialize");
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .prompt_capabilities(PromptCapabilities::new().image(true).embedded_context(true))
                .session_capabilities(
                    SessionCapabilities::new().list(SessionListCapabilities::new()),
                ),
        )
        .agent_info(
            Implementation::new("adapter-acp", env!("CARGO_PKG_VERSION"))
                .title("adapter-acp (agent-core)".to_string()),
        )
}

async fn new_session(s: &Shared, req: NewSessionRequest) -> Result<NewSessionResponse, Error> {
    let cwd = absolute_cwd(&req.cwd)?;
    if !req.mcp_servers.is_empty() {
        tracing::info!(
            count = req.mcp_servers.len(),
            "MCP servers are not supported; ignoring them"
        );
    }
    let session = s
        .manager
        .create(CreateOptions {
            workspace_path: cwd,
            ..Default::default()
        })
        .await
        .map_err(|e| session_error(e, None))?;
    let meta = session.meta();
    Ok(
        NewSessionResponse::new(SessionId::new(meta.session_id.as_str()))
            .modes(mode_state(meta.mode)),
    )
}

async fn load_session(
    s: &Shared,
    cx: &ConnectionTo<Client>,
    req: LoadSessionRequest,
) -> Result<LoadSessionResponse, Error> {
    let id = req.session_id.0.to_string();
    let (session, _) = s
        .manager
        .resume(&id)
        .await
        .map_err(|e| session_error(e, Some(&id)))?;
    let meta = session.meta();
    if Path::new(&meta.workspace_path) != req.cwd {
        tracing::info!(
            session = %id,
            stored = %meta.workspace_path,
            requested = %req.cwd.display(),
            "session/load: keeping the session's own workspace"
        );
    }
    // Notifications go out in order, before the response.
    let sid = SessionId::new(id.as_str());
    for update in mapping::replay(&session.messages(), Path::new(&meta.workspace_path)) {
        notify(s, cx, &sid, update);
    }
    if !meta.todos.is_empty() {
        notify(s, cx, &sid, mapping::plan_update(&meta.todos));
    }
    Ok(LoadSessionResponse::new().modes(mode_state(meta.mode)))
}

async fn list_sessions(
    s: &Shared,
    req: ListSessionsRequest,
) -> Result<ListSessionsResponse, Error> {
    let metas = s.manager.list().await.map_err(internal)?;
    let sessions = metas
        .into_iter()
        .filter(|m| {
            req.cwd
                .as_ref()
                .is_none_or(|cwd| Path::new(&m.workspace_path) == cwd)
        })
        .map(|m| {
            let updated =
                chrono::DateTime::from_timestamp_millis(m.updated_at).map(|t| t.to_rfc3339());
            SessionInfo::new(
                SessionId::new(m.session_id.as_str()),
                m.workspace_path.clone(),
            )
            .title((!m.title.is_empty()).then(|| m.title.clone()))
            .updated_at(updated)
        })
        .collect();
    Ok(ListSessionsResponse::new(sessions))
}

fn active(s: &Shared, id: &str) -> Result<Arc<Session>, Error> {
    s.manager.get(id).ok_or_else(|| session_not_found(id))
}

async fn set_mode(s: &Shared, req: SetSessionModeRequest) -> Result<SetSessionModeResponse, Error> {
    let session = active(s, &req.session_id.0)?;
    let mode = parse_mode(&req.mode_id.0).ok_or_else(|| {
        let ids: Vec<&str> = MODES.iter().map(|(m, _, _)| m.as_str()).collect();
        invalid_params(format!(
            "unknown mode {:?}; expected one of {}",
            &*req.mode_id.0,
            ids.join(", ")
        ))
    })?;
    session.set_mode(mode).await.map_err(internal)?;
    Ok(SetSessionModeResponse::new())
}

fn cancel(s: &Shared, session_id: &str) {
    if let Some(flag) = s.cancels().get(session_id) {
        flag.store(true, Ordering::SeqCst);
    }
    if let Some(session) = s.manager.get(session_id) {
        session.stop();
    }
}

/// Where the `session/prompt` responder waits until the turn ends. The responder arrives
/// after the turn started, so the turn may finish first and leave its answer here.
#[derive(Default)]
struct Reply {
    responder: Option<Responder<PromptResponse, V1>>,
    answer: Option<Result<PromptResponse, Error>>,
}

#[derive(Clone, Default)]
struct ReplySlot(Arc<Mutex<Reply>>);

impl ReplySlot {
    fn lock(&self) -> MutexGuard<'_, Reply> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn attach(&self, responder: Responder<PromptResponse, V1>) {
        let answer = {
            let mut reply = self.lock();
            match reply.answer.take() {
                Some(answer) => answer,
                None => {
                    reply.responder = Some(responder);
                    return;
                }
            }
        };
        send_answer(responder, answer);
    }

    fn answer(&self, answer: Result<PromptResponse, Error>) {
        let responder = {
            let mut reply = self.lock();
            match reply.responder.take() {
                Some(responder) => responder,
                None => {
                    reply.answer = Some(answer);
                    return;
                }
            }
        };
        send_answer(responder, answer);
    }
}

fn send_answer(responder: Responder<PromptResponse, V1>, answer: Result<PromptResponse, Error>) {
    if let Err(err) = responder.respond_with_result(answer) {
        tracing::debug!(error = ?err, "cannot answer session/prompt");
    }
}

fn start_prompt(
    s: &Arc<Shared>,
    cx: &ConnectionTo<Client>,
    req: PromptRequest,
) -> Result<ReplySlot, Error> {
    let id = req.session_id.0.to_string();
    let session = active(s, &id)?;
    let input = mapping::prompt_input(&req.prompt).map_err(|e| invalid_params(e.to_string()))?;
    let meta = session.meta();
    let cancelled = Arc::new(AtomicBool::new(false));
    let reply = ReplySlot::default();
    let observer = AcpTurn {
        shared: s.clone(),
        cx: cx.clone(),
        session_id: id.clone(),
        sid: SessionId::new(id.as_str()),
        mapper: TurnMapper::new(&meta.workspace_path, session.view().context_window),
        mode: meta.mode,
        cancelled: cancelled.clone(),
        reply: reply.clone(),
    };
    {
        // Registered before the turn starts so a quick cancel is never lost.
        let mut cancels = s.cancels();
        if cancels.contains_key(&id) {
            return Err(invalid_request(format!(
                "a prompt is already running in session {id}"
            )));
        }
        cancels.insert(id.clone(), cancelled);
    }
    match session.start_prompt(input, None, Box::new(observer)) {
        Ok(_) => Ok(reply),
        Err(busy) => {
            s.cancels().remove(&id);
            Err(invalid_request(busy.to_string()))
        }
    }
}

/// The ACP view of one prompt turn.
struct AcpTurn {
    shared: Arc<Shared>,
    cx: ConnectionTo<Client>,
    session_id: String,
    /// The same, as sent in every notification.
    sid: SessionId,
    mapper: TurnMapper,
    mode: SessionMode,
    cancelled: Arc<AtomicBool>,
    reply: ReplySlot,
}

impl TurnObserver for AcpTurn {
    fn output_gate(&self) -> Option<Arc<OutputGate>> {
        self.shared.gated.then(|| self.shared.gate.clone())
    }

    fn started(&mut self, _session: &Session, _turn: &TurnInfo) {}

    fn event(&mut self, session: &Session, _turn: &TurnInfo, event: &AgentEvent) {
        let (shared, cx, sid) = (&self.shared, &self.cx, &self.sid);
        self.mapper
            .map_each(event, |update| notify(shared, cx, sid, update));
        match event {
            AgentEvent::ToolCall { id, .. } => self.shared.announced.add(&self.session_id, id),
            AgentEvent::ToolResult { .. } => {
                // A tool (exit_plan_mode) may have changed the mode.
                let mode = session.meta().mode;
                if mode != self.mode {
                    self.mode = mode;
                    notify(
                        &self.shared,
                        &self.cx,
                        &self.sid,
                        SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode.as_str())),
                    );
                }
            }
            _ => {}
        }
    }

    fn finished(&mut self, _session: &Session, turn: &TurnInfo, outcome: &TurnOutcome) {
        self.shared.cancels().remove(&self.session_id);
        self.shared.announced.forget_session(&self.session_id);
        if turn.kind != RunKind::Prompt {
            return;
        }
        let error = outcome.error.as_ref().map(|(code, m)| (*code, m.as_str()));
        let end = mapping::turn_end(
            outcome.status,
            self.mapper.last_stop(),
            error,
            self.cancelled.load(Ordering::SeqCst),
        );
        let answer = match end {
            TurnEnd::Stop(reason) => {
                let usage = &outcome.usage;
                let mut meta = Map::new();
                meta.insert(
                    "usage".to_string(),
                    json!({
                        "inputTokens": usage.prompt_tokens(),
                        "outputTokens": usage.output,
                        "cachedReadTokens": usage.cache_read,
                        "totalTokens": usage.total_tokens(),
                        "modelCalls": outcome.model_calls,
                        "toolCalls": outcome.tool_calls,
                    }),
                );
                Ok(PromptResponse::new(reason).meta(meta))
            }
            TurnEnd::Failed(message) => Err(internal(message)),
        };
        self.reply.answer(answer);
    }
}

// ---------------------------------------------------------------------------------------
// Interactions: permission prompts and questions, each in a task of its own.
// ---------------------------------------------------------------------------------------

async fn interact(s: Arc<Shared>, cx: ConnectionTo<Client>, request: InteractionRequest) {
    let InteractionRequest {
        session_id,
        kind,
        mut reply,
        ..
    } = request;
    let cwd = s
        .manager
        .get(&session_id)
        .map(|session| PathBuf::from(session.meta().workspace_path))
        .unwrap_or_default();
    let work = async {
        match kind {
            InteractionKind::Permission(request) => {
                if !s
                    .announced
                    .wait(&session_id, &request.call_id, ANNOUNCE_WAIT)
                    .await
                {
                    tracing::debug!(call = %request.call_id, "asking before the call was announced");
                }
                let tool_call = mapping::permission_tool_call(&request, &cwd);
                let options = vec![
                    PermissionOption::new(
                        option::ALLOW_ONCE,
                        "Allow",
                        PermissionOptionKind::AllowOnce,
                    ),
                    PermissionOption::new(
                        option::ALLOW_ALWAYS,
                        format!("Always allow {}", request.tool),
                        PermissionOptionKind::AllowAlways,
                    ),
                    PermissionOption::new(
                        option::REJECT,
                        "Reject",
                        PermissionOptionKind::RejectOnce,
                    ),
                ];
                let picked = ask(&cx, &session_id, tool_call, options).await;
                InteractionReply::Permission(match picked.as_deref() {
                    Some(option::ALLOW_ONCE) => Approval::AllowOnce,
                    Some(option::ALLOW_ALWAYS) => Approval::AllowAlways,
                    Some(_) => Approval::Deny {
                        reason: Some("The user rejected this call.".to_string()),
                    },
                    None => Approval::Deny {
                        reason: Some("The permission request was cancelled.".to_string()),
                    },
                })
            }
            InteractionKind::UserInput(request) => {
                InteractionReply::UserInput(user_input(&cx, &session_id, request).await)
            }
        }
    };
    // When the turn stops waiting (cancel, abort), the request is dropped, which also
    // withdraws it from the client with `$/cancel_request`.
    tokio::select! {
        answer = work => {
            let _ = reply.send(answer);
        }
        _ = reply.closed() => {}
    }
}

/// Puts one `session/request_permission` to the client; the picked option id, or `None`
/// when the client cancelled or failed.
async fn ask(
    cx: &ConnectionTo<Client>,
    session_id: &str,
    tool_call: ToolCallUpdate,
    options: Vec<PermissionOption>,
) -> Option<String> {
    let request = RequestPermissionRequest::new(SessionId::new(session_id), tool_call, options);
    match cx.send_request(request).block_task().await {
        Ok(response) => match response.outcome {
            RequestPermissionOutcome::Selected(selected) => Some(selected.option_id.0.to_string()),
            _ => None,
        },
        Err(err) => {
            tracing::warn!(session = session_id, error = ?err, "session/request_permission failed");
            None
        }
    }
}

/// Plan approval and questions, put to the client as permission requests: the plan with
/// approve / keep-planning options; each question with its choices as options.
async fn user_input(
    cx: &ConnectionTo<Client>,
    session_id: &str,
    request: UserInputRequest,
) -> UserInputAnswer {
    let call_id = request
        .call_id
        .clone()
        .unwrap_or_else(|| crate::session::new_id("ask"));
    if let Some(plan) = &request.plan {
        let tool_call = ToolCallUpdate::new(
            call_id,
            ToolCallUpdateFields::new()
                .title("Ready to code?".to_string())
                .kind(ToolKind::SwitchMode)
                .status(ToolCallStatus::Pending)
                .content(vec![ToolCallContent::from(AcpBlock::Text(
                    TextContent::new(plan.clone()),
                ))]),
        );
        let options = vec![
            PermissionOption::new(
                option::APPROVE_PLAN,
                "Yes, start building",
                PermissionOptionKind::AllowOnce,
            ),
            PermissionOption::new(
                option::KEEP_PLANNING,
                "No, keep planning",
                PermissionOptionKind::RejectOnce,
            ),
        ];
        return match ask(cx, session_id, tool_call, options).await.as_deref() {
            Some(option::APPROVE_PLAN) => UserInputAnswer::Accepted(json!({"answer_0": "approve"})),
            Some(_) => UserInputAnswer::Declined(None),
            None => UserInputAnswer::Cancelled,
        };
    }
    let mut answers = Map::new();
    for (index, question) in request.questions.iter().enumerate() {
        let QuestionSpec {
            question: text,
            header,
            options,
            ..
        } = question;
        let tool_call = ToolCallUpdate::new(
            format!("{call_id}#{index}"),
            ToolCallUpdateFields::new()
                .title(text.clone())
                .kind(ToolKind::Other)
                .status(ToolCallStatus::Pending)
                .raw_input(json!({"header": header, "question": text})),
        );
        let choices = options
            .iter()
            .map(|(value, label)| {
                PermissionOption::new(
                    value.clone(),
                    label.clone(),
                    PermissionOptionKind::AllowOnce,
                )
            })
            .collect();
        match ask(cx, session_id, tool_call, choices).await {
            Some(value) => {
                answers.insert(text.clone(), Value::String(value));
            }
            None => return UserInputAnswer::Cancelled,
        }
    }
    UserInputAnswer::Accepted(json!({ "answers": answers }))
}
