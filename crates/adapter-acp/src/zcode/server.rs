//! The ZCode app-server I/O loop: reads line-delimited requests, dispatches them to the
//! session machinery, and writes responses, `session/event` notifications and
//! `interaction/*` requests through a single writer task.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use agent_core::{Approval, ReasoningLevel, Role, RunKind};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use crate::backpressure::OutputGate;
use crate::eventlog::{EventLog, LogSink};
use crate::lines::{max_line_bytes, Line, LineReader, MAX_JSON_DEPTH};
use crate::session::AgentFactory;
use crate::session::{
    new_id, now_ms, CreateOptions, Goal, InteractionKind, InteractionReply, InteractionRequest,
    ManagerError, Session, SessionManager, UserInputAnswer,
};
use crate::session::{valid_session_id, FileStore};
use crate::zcode::events::{emit, ZLog, ZcodeTurn};
use crate::zcode::snapshot::{self, session_info, session_mode, wire_mode};
use crate::zcode::wire::{
    codes, CancelBackgroundTaskParams, CancelBackgroundTaskResult, CompactResult, CompactState,
    CreateParams, Decision, ErrorObject, EventBody, EventNotification, EventsParams, EventsResult,
    ForkParams, ForkResult, ForkTarget, GoalAction, GoalInfo, GoalParams, ListParams, ListResult,
    MessagesParams, MessagesResult, Outgoing, PermissionOption, PermissionResponse, PermissionRule,
    PermissionUpdate, Question, QuestionOption, RawMessage, ReadParams, RequestId,
    RequestPermissionParams, RequestUserInputParams, ResumeParams, SendParams, SendResult,
    SessionEvent, SessionParams, SessionUpdatedPayload, SetModeParams, SetModelParams,
    SetThoughtLevelParams, SteerParams, SteerResult, StopResult, StorageStateParams,
    SubscribeParams, SubscribeResult, UserInputAction, UserInputResponse, INVALID_MESSAGE_ID,
    REQUEST_PERMISSION, REQUEST_USER_INPUT, STORAGE_STATE,
};

/// How long a `session/stop` request waits for the turn to end before answering.
const STOP_WAIT: Duration = Duration::from_secs(10);
/// How long shutdown waits for running turns to wind down.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);
/// Default `session/list` limit.
const DEFAULT_LIST_LIMIT: usize = 50;

/// What the server needs.
#[derive(Debug)]
pub struct ServerOptions {
    /// Builds the sessions' agents.
    pub factory: AgentFactory,
    /// Where sessions are stored.
    pub data_dir: PathBuf,
}

/// An error reply.
#[derive(Debug, Clone)]
pub struct RpcError(ErrorObject);

impl RpcError {
    fn new(code: i64, message: impl Into<String>) -> Self {
        Self(ErrorObject {
            code,
            message: message.into(),
            data: None,
        })
    }

    fn with_data(mut self, data: Value) -> Self {
        self.0.data = Some(data);
        self
    }

    fn invalid_params(path: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        let path = if path.is_empty() { "(root)" } else { path };
        Self::new(
            codes::INVALID_PARAMS,
            format!("Invalid params — {path}: {message}"),
        )
        .with_data(json!({
            "name": "ZodError",
            "message": serde_json::to_string(&json!([{"path": path, "message": message}]))
                .unwrap_or_default(),
        }))
    }

    fn not_active(id: &str) -> Self {
        Self::new(
            codes::SESSION_UNAVAILABLE,
            format!("Session is not active: {id}"),
        )
    }

    fn not_found(id: &str) -> Self {
        Self::new(
            codes::SESSION_UNAVAILABLE,
            format!("Session not found: {id}"),
        )
    }

    fn internal(message: impl std::fmt::Display) -> Self {
        Self::new(codes::INTERNAL_ERROR, message.to_string())
    }

    fn running(message: impl Into<String>) -> Self {
        Self::new(codes::PROMPT_RUNNING, message)
    }
}

type Reply = Result<Value, RpcError>;

fn ok<T: Serialize>(value: T) -> Reply {
    serde_json::to_value(value).map_err(RpcError::internal)
}

/// Parses params into `T`; failures name the failing path.
fn parse<T: DeserializeOwned>(params: Option<Value>) -> Result<T, RpcError> {
    let value = params.unwrap_or_else(|| Value::Object(Default::default()));
    if !value.is_object() {
        return Err(RpcError::invalid_params("", "expected an object"));
    }
    serde_path_to_error::deserialize(value).map_err(|err| {
        let mut path = err.path().to_string();
        let message = err.inner().to_string();
        // serde reports a missing field at its parent; name the field itself.
        if let Some(field) = message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split('`').next())
        {
            path = match path.as_str() {
                "." | "" => field.to_string(),
                parent => format!("{parent}.{field}"),
            };
        }
        if path == "." {
            path.clear();
        }
        RpcError::invalid_params(&path, message)
    })
}

/// What the writer gets: a message to serialise, or lines serialised already.
#[derive(Debug)]
enum Frame {
    /// One message.
    Message(Outgoing),
    /// `count` complete lines (each ending in `\n`), already counted on the gate.
    Lines { bytes: Vec<u8>, count: usize },
}

/// The single writer's queue; every message is counted on the output gate until written.
#[derive(Debug, Clone)]
struct Outbox {
    tx: mpsc::UnboundedSender<Frame>,
    gate: Arc<OutputGate>,
}

impl Outbox {
    fn send(&self, message: Outgoing) {
        self.gate.queued_one();
        if self.tx.send(Frame::Message(message)).is_err() {
            self.gate.written_one();
            tracing::debug!("output closed; dropping a message");
        }
    }

    /// Sends `count` serialised lines as one frame; the caller counted them on the gate.
    fn send_lines(&self, bytes: Vec<u8>, count: usize) {
        if self.tx.send(Frame::Lines { bytes, count }).is_err() {
            self.gate.written_many(count);
            tracing::debug!(count, "output closed; dropping lines");
        }
    }

    fn reply(&self, id: Option<RequestId>, reply: Reply) {
        let Some(id) = id else {
            if let Err(err) = reply {
                tracing::warn!(code = err.0.code, message = %err.0.message, "notification failed");
            }
            return;
        };
        self.send(match reply {
            Ok(result) => Outgoing::Response { id, result },
            Err(err) => Outgoing::Error { id, error: err.0 },
        });
    }

    fn invalid(&self, code: i64, message: String) {
        self.send(Outgoing::Error {
            id: RequestId::Str(INVALID_MESSAGE_ID.to_string()),
            error: ErrorObject {
                code,
                message,
                data: None,
            },
        });
    }
}

/// The live sink of a session's event log: serialises each event straight into its
/// `session/event` line (typed, no `Value`), counts it on the gate at once (so a turn's
/// per-event gate check sees it), and hands the lines gathered since the last flush to the
/// writer as one frame (early when [`MAX_BATCH_BYTES`] are gathered).
struct EventLines {
    out: Outbox,
    bytes: Vec<u8>,
    count: usize,
}

impl EventLines {
    fn new(out: Outbox) -> Self {
        Self {
            out,
            bytes: Vec::new(),
            count: 0,
        }
    }
}

impl LogSink<SessionEvent> for EventLines {
    fn push(&mut self, event: &SessionEvent) {
        let start = self.bytes.len();
        match serde_json::to_writer(&mut self.bytes, &EventNotification::new(event)) {
            Ok(()) => {
                self.bytes.push(b'\n');
                self.count += 1;
                self.out.gate.queued_one();
            }
            Err(err) => {
                self.bytes.truncate(start);
                tracing::error!(error = %err, "cannot serialise an event");
            }
        }
        if self.bytes.len() >= MAX_BATCH_BYTES {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.count == 0 {
            return;
        }
        // The next batch likely looks like this one: start with room for it.
        let room = self.bytes.len().clamp(512, MAX_BATCH_BYTES + 4096);
        let bytes = std::mem::replace(&mut self.bytes, Vec::with_capacity(room));
        self.out.send_lines(bytes, std::mem::take(&mut self.count));
    }
}

enum PendingKind {
    Permission,
    UserInput,
}

struct Pending {
    session_id: String,
    request_id: String,
    kind: PendingKind,
    reply: oneshot::Sender<InteractionReply>,
}

struct Server {
    manager: SessionManager,
    out: Outbox,
    logs: Mutex<HashMap<String, Arc<ZLog>>>,
    pending: Mutex<HashMap<String, Pending>>,
    next_request: AtomicU64,
}

/// Serves the ZCode app-server protocol on `input`/`output` until `input` ends or
/// `output` fails (e.g. the client closed it: EPIPE), with the default output limit
/// ([`DEFAULT_OUTPUT_LIMIT`](crate::backpressure::DEFAULT_OUTPUT_LIMIT) queued messages)
/// and line limit ([`max_line_bytes`]).
pub async fn serve<R, W>(options: ServerOptions, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_gated(options, input, output, Arc::new(OutputGate::default())).await
}

/// [`serve`] with the caller's output gate (whose counters show how much output was ever
/// queued).
pub async fn serve_gated<R, W>(
    options: ServerOptions,
    input: R,
    output: W,
    gate: Arc<OutputGate>,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let started = Instant::now();
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let (done_tx, done_rx) = oneshot::channel();
    let mut writer = tokio::spawn(write_loop(output, out_rx, done_rx, gate.clone()));
    let (int_tx, int_rx) = mpsc::unbounded_channel();
    let server = Arc::new(Server {
        manager: SessionManager::new(options.factory, FileStore::new(options.data_dir), int_tx),
        out: Outbox { tx: out_tx, gate },
        logs: Mutex::new(HashMap::new()),
        pending: Mutex::new(HashMap::new()),
        next_request: AtomicU64::new(1),
    });
    server.out.send(Outgoing::Notification {
        method: STORAGE_STATE.to_string(),
        params: serde_json::to_value(StorageStateParams {
            schema_version: 1,
            attempt_id: new_id("startup"),
            sequence: 1,
            database_id: "sessions".to_string(),
            database_kind: "session",
            phase: "ready",
            elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(0),
        })
        .unwrap_or(Value::Null),
    });
    let interactions = tokio::spawn(server.clone().interaction_loop(int_rx));

    let mut lines = LineReader::new(BufReader::new(input), max_line_bytes());
    // The writer only ends early when output failed; then nobody can hear us any more.
    let mut written: Option<std::io::Result<()>> = None;
    let result = loop {
        let line = tokio::select! {
            line = lines.next_line() => line,
            done = &mut writer => {
                written = Some(join_writer(done));
                break Ok(());
            }
        };
        match line {
            Ok(Line::Eof) => break Ok(()),
            Ok(Line::Text(text)) => server.handle_line(&text).await,
            Ok(rejected) => {
                let code = match rejected {
                    Line::NotUtf8 => codes::PARSE_ERROR,
                    _ => codes::INVALID_REQUEST,
                };
                let message = rejected.error_message().unwrap_or_default();
                tracing::warn!(%message, "rejected an input line");
                server.out.invalid(code, message);
            }
            Err(err) => break Err(err),
        }
    };
    match &written {
        Some(Err(err)) => tracing::info!(error = %err, "output closed; shutting down"),
        _ => tracing::debug!("input closed; shutting down"),
    }
    server.manager.shutdown(SHUTDOWN_WAIT).await;
    interactions.abort();
    let _ = done_tx.send(());
    let written = match written {
        Some(written) => written,
        None => join_writer(writer.await),
    };
    match written {
        Ok(()) => result,
        Err(err) => Err(err),
    }
}

fn join_writer(done: Result<std::io::Result<()>, tokio::task::JoinError>) -> std::io::Result<()> {
    match done {
        Ok(result) => result,
        Err(err) => Err(std::io::Error::other(err)),
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    output: W,
    mut rx: mpsc::UnboundedReceiver<Frame>,
    done: oneshot::Receiver<()>,
    gate: Arc<OutputGate>,
) -> std::io::Result<()> {
    let result = write_all_messages(output, &mut rx, done, &gate).await;
    // Nothing more is written: release turns waiting for output, and stop counting.
    rx.close();
    gate.close();
    result
}

/// Lines queued in one write before the writer flushes anyway.
const MAX_BATCH_BYTES: usize = 64 * 1024;

/// Writes every message as one line. Lines of messages that are already waiting are
/// gathered into one buffer and written and flushed together once the queue is empty (or
/// [`MAX_BATCH_BYTES`] are gathered): a burst costs one write, and a line still reaches
/// `output` before the writer waits for the next message.
async fn write_all_messages<W: AsyncWrite + Unpin>(
    mut output: W,
    rx: &mut mpsc::UnboundedReceiver<Frame>,
    mut done: oneshot::Receiver<()>,
    gate: &OutputGate,
) -> std::io::Result<()> {
    let mut batch: Vec<u8> = Vec::new();
    // Serialises `first` and every message already waiting, then writes and flushes them
    // in one go; every message is counted as written on the gate (also on failure).
    async fn write_batch<W: AsyncWrite + Unpin>(
        output: &mut W,
        batch: &mut Vec<u8>,
        first: Frame,
        rx: &mut mpsc::UnboundedReceiver<Frame>,
        gate: &OutputGate,
    ) -> std::io::Result<()> {
        batch.clear();
        let mut count = 0usize;
        let mut next = Some(first);
        let mut serialised = Ok(());
        while let Some(frame) = next.take() {
            match frame {
                Frame::Message(message) => {
                    count += 1;
                    if let Err(err) = serde_json::to_writer(&mut *batch, &message) {
                        serialised = Err(std::io::Error::other(err));
                        break;
                    }
                    batch.push(b'\n');
                }
                Frame::Lines {
                    bytes,
                    count: lines,
                } => {
                    count += lines;
                    if batch.is_empty() && bytes.capacity() <= 4 * MAX_BATCH_BYTES {
                        // Take the frame's buffer instead of copying it (ours is dropped).
                        *batch = bytes;
                    } else {
                        batch.extend_from_slice(&bytes);
                    }
                }
            }
            if batch.len() < MAX_BATCH_BYTES {
                next = rx.try_recv().ok();
            }
        }
        let written = match serialised {
            Ok(()) => match output.write_all(batch).await {
                Ok(()) => output.flush().await,
                Err(err) => Err(err),
            },
            Err(err) => Err(err),
        };
        gate.written_many(count);
        if batch.capacity() > 4 * MAX_BATCH_BYTES {
            *batch = Vec::new();
        }
        written
    }
    loop {
        tokio::select! {
            message = rx.recv() => match message {
                Some(message) => write_batch(&mut output, &mut batch, message, rx, gate).await?,
                None => return Ok(()),
            },
            _ = &mut done => {
                while let Ok(message) = rx.try_recv() {
                    write_batch(&mut output, &mut batch, message, rx, gate).await?;
                }
                return Ok(());
            }
        }
    }
}

impl Server {
    fn logs(&self) -> MutexGuard<'_, HashMap<String, Arc<ZLog>>> {
        self.logs.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn pending(&self) -> MutexGuard<'_, HashMap<String, Pending>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The event log of a session, created on first use.
    fn log_for(&self, session_id: &str) -> Arc<ZLog> {
        self.logs()
            .entry(session_id.to_string())
            .or_insert_with(|| Arc::new(EventLog::new(EventLines::new(self.out.clone()))))
            .clone()
    }

    fn active(&self, session_id: &str) -> Result<(Arc<Session>, Arc<ZLog>), RpcError> {
        let session = self
            .manager
            .get(session_id)
            .ok_or_else(|| RpcError::not_active(session_id))?;
        Ok((session, self.log_for(session_id)))
    }

    /// `(request id, server id)` of a session's unanswered interactions.
    fn pending_of(&self, session_id: &str) -> Vec<(String, String)> {
        let mut ids: Vec<(String, String)> = self
            .pending()
            .iter()
            .filter(|(_, p)| p.session_id == session_id && !p.reply.is_closed())
            .map(|(server_id, p)| (p.request_id.clone(), server_id.clone()))
            .collect();
        ids.sort();
        ids
    }

    fn snapshot(
        &self,
        session: &Session,
        log: &ZLog,
        limit: Option<usize>,
    ) -> crate::zcode::wire::Snapshot {
        let pending = self.pending_of(session.id());
        snapshot::snapshot(session, log.seq(), &pending, limit)
    }

    async fn handle_line(self: &Arc<Self>, text: &str) {
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        let value: Value = match serde_json::from_str(text) {
            Ok(value) => value,
            Err(err) => {
                let message = match err.to_string() {
                    m if m.starts_with("recursion limit exceeded") => format!(
                        "Parse error: JSON nested deeper than {MAX_JSON_DEPTH} levels ({m})"
                    ),
                    m => format!("Parse error: {m}"),
                };
                self.out.invalid(codes::PARSE_ERROR, message);
                return;
            }
        };
        let Some(object) = value.as_object() else {
            self.out.invalid(
                codes::INVALID_REQUEST,
                "Invalid ZCode Protocol message: expected a JSON object".into(),
            );
            return;
        };
        if object.contains_key("jsonrpc") {
            self.out.invalid(
                codes::INVALID_REQUEST,
                "Invalid ZCode Protocol message: the `jsonrpc` field is not part of the ZCode \
                 Protocol (send requests without it)"
                    .into(),
            );
            return;
        }
        let raw: RawMessage = match serde_json::from_value(value) {
            Ok(raw) => raw,
            Err(err) => {
                self.out.invalid(
                    codes::INVALID_REQUEST,
                    format!("Invalid ZCode Protocol message: {err}"),
                );
                return;
            }
        };
        match (raw.id, raw.method) {
            (Some(id), Some(method)) => self.handle(Some(id), &method, raw.params).await,
            (None, Some(method)) => self.handle(None, &method, raw.params).await,
            (Some(id), None) if raw.result.is_some() || raw.error.is_some() => {
                let reply = match raw.error {
                    Some(error) => Err(error),
                    None => Ok(raw.result.unwrap_or(Value::Null)),
                };
                self.handle_response(&id, reply);
            }
            _ => self.out.invalid(
                codes::INVALID_REQUEST,
                "Invalid ZCode Protocol message: expected a request (id + method), a \
                 notification (method) or a response (id + result or error)"
                    .into(),
            ),
        }
    }

    /// Handles a request (`id` present) or notification.
    async fn handle(self: &Arc<Self>, id: Option<RequestId>, method: &str, params: Option<Value>) {
        tracing::debug!(%method, id = ?id, "request");
        let reply = match method {
            "session/create" => self.create(params).await,
            "session/list" => self.list(params).await,
            "session/resume" => self.resume(params).await,
            "session/read" => self.read(params),
            "session/messages" => self.messages(params),
            "session/subscribe" => return self.subscribe(id, params),
            "session/events" => self.events(params),
            "session/send" => self.send(params),
            "session/stop" => return self.stop(id, params),
            "session/steer" => self.steer(params),
            "session/fork" => self.fork(params).await,
            "session/compact" => self.compact(params),
            "session/goal" => self.goal(params).await,
            "session/setMode" => self.set_mode(params).await,
            "session/setThoughtLevel" => self.set_thought_level(params).await,
            "session/setModel" => self.set_model(params).await,
            "session/cancelBackgroundTask" => self.cancel_background_task(params),
            _ => Err(RpcError::new(
                codes::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            )),
        };
        self.out.reply(id, reply);
    }

    async fn create(&self, params: Option<Value>) -> Reply {
        let p: CreateParams = parse(params)?;
        if p.workspace.workspace_path.trim().is_empty() {
            return Err(RpcError::invalid_params(
                "workspace.workspacePath",
                "must not be empty",
            ));
        }
        if !std::path::Path::new(&p.workspace.workspace_path).is_dir() {
            return Err(RpcError::invalid_params(
                "workspace.workspacePath",
                format!("not a directory: {}", p.workspace.workspace_path),
            ));
        }
        let thought_level = p
            .thought_level
            .as_deref()
            .map(|l| {
                l.parse::<ReasoningLevel>()
                    .map_err(|e| RpcError::invalid_params("thoughtLevel", e.to_string()))
            })
            .transpose()?;
        let model = match p.model {
            Some(model) => Some(self.check_model(&model)?),
            None => None,
        };
        let session = self
            .manager
            .create(CreateOptions {
                workspace_path: p.workspace.workspace_path,
                workspace_key: Some(p.workspace.workspace_key),
                mode: p.mode.map(session_mode),
                model,
                thought_level,
                parent_session_id: p.parent_session_id,
                tool_allowlist: p.tool_allowlist,
                tool_denylist: p.tool_denylist.unwrap_or_default(),
            })
            .await
            .map_err(manager_error)?;
        let log = self.log_for(session.id());
        tracing::info!(session = %session.id(), "session created");
        ok(self.snapshot(&session, &log, None))
    }

    fn check_model(&self, model: &crate::zcode::wire::ModelRef) -> Result<String, RpcError> {
        let ours = self.manager.factory().provider_id().to_string();
        if model.provider_id != ours || model.model_id.trim().is_empty() {
            return Err(RpcError::new(
                codes::INTERNAL_ERROR,
                format!("Model not found: {}/{}", model.provider_id, model.model_id),
            )
            .with_data(json!({"name": "ModelProtocolError", "code": "model_not_found"})));
        }
        Ok(model.model_id.clone())
    }

    async fn list(&self, params: Option<Value>) -> Reply {
        let p: ListParams = parse(params)?;
        let metas = self.manager.list().await.map_err(RpcError::internal)?;
        let sessions = metas
            .iter()
            .filter(|m| {
                p.workspace.as_ref().is_none_or(|w| {
                    (!w.workspace_key.is_empty() && w.workspace_key == m.workspace_key)
                        || w.workspace_path == m.workspace_path
                })
            })
            .filter(|m| {
                p.session_ids
                    .as_ref()
                    .is_none_or(|ids| ids.contains(&m.session_id))
            })
            .take(p.limit.unwrap_or(DEFAULT_LIST_LIMIT))
            .map(|m| {
                let running = self
                    .manager
                    .get(&m.session_id)
                    .is_some_and(|s| s.active_turn().is_some());
                session_info(m, running)
            })
            .collect();
        ok(ListResult { sessions })
    }

    async fn resume(&self, params: Option<Value>) -> Reply {
        let p: ResumeParams = parse(params)?;
        if !valid_session_id(&p.session_id) {
            return Err(RpcError::not_found(&p.session_id));
        }
        let (session, loaded) = self
            .manager
            .resume(&p.session_id)
            .await
            .map_err(|e| match e {
                ManagerError::NotFound(id) => RpcError::not_found(&id),
                other => manager_error(other),
            })?;
        if loaded {
            if let Some(level) = p.thought_level {
                let level = level
                    .parse::<ReasoningLevel>()
                    .map_err(|e| RpcError::invalid_params("thoughtLevel", e.to_string()))?;
                session
                    .set_thought_level(level)
                    .await
                    .map_err(RpcError::internal)?;
            }
            tracing::info!(session = %session.id(), "session resumed");
        }
        let log = self.log_for(session.id());
        ok(self.snapshot(&session, &log, None))
    }

    fn read(&self, params: Option<Value>) -> Reply {
        let p: ReadParams = parse(params)?;
        let (session, log) = self.active(&p.session_id)?;
        ok(self.snapshot(&session, &log, p.message_limit))
    }

    fn messages(&self, params: Option<Value>) -> Reply {
        let p: MessagesParams = parse(params)?;
        let (session, _) = self.active(&p.session_id)?;
        let mut messages = snapshot::messages(&session, &session.view());
        if let Some(after) = &p.after_message_id {
            if let Some(pos) = messages.iter().position(|m| m.message_id() == after) {
                messages.drain(..=pos);
            }
        }
        if let Some(limit) = p.limit {
            let skip = messages.len().saturating_sub(limit);
            messages.drain(..skip);
        }
        ok(MessagesResult { messages })
    }

    fn subscribe(&self, id: Option<RequestId>, params: Option<Value>) {
        let result = parse::<SubscribeParams>(params).and_then(|p| {
            let (session, log) = self.active(&p.session_id)?;
            Ok((p, session, log))
        });
        let (p, session, log) = match result {
            Ok(parts) => parts,
            Err(err) => return self.out.reply(id, Err(err)),
        };
        let pending = self.pending_of(session.id());
        // The reply is queued under the log's lock, so it precedes every pushed event.
        log.subscribe(p.after_seq, |event_seq, events| {
            let snapshot = p
                .include_snapshot
                .then(|| Box::new(snapshot::snapshot(&session, event_seq, &pending, None)));
            self.out.reply(
                id,
                ok(SubscribeResult {
                    session_id: p.session_id.clone(),
                    event_seq,
                    events,
                    snapshot,
                }),
            );
        });
    }

    fn events(&self, params: Option<Value>) -> Reply {
        let p: EventsParams = parse(params)?;
        let (_, log) = self.active(&p.session_id)?;
        ok(EventsResult {
            events: log.events_after(p.after_seq.unwrap_or(0), p.limit.unwrap_or(usize::MAX)),
        })
    }

    fn send(&self, params: Option<Value>) -> Reply {
        let p: SendParams = parse(params)?;
        let (session, log) = self.active(&p.session_id)?;
        if p.content.trim().is_empty() {
            return Err(RpcError::invalid_params("content", "the prompt is empty"));
        }
        let observer = Box::new(ZcodeTurn::new(log, session.id()).with_gate(self.out.gate.clone()));
        let turn = session
            .start_prompt(p.content, p.input_id, observer)
            .map_err(|busy| RpcError::running(busy.to_string()))?;
        tracing::info!(session = %session.id(), turn = %turn.turn_id, "turn started");
        ok(SendResult {
            session_id: p.session_id,
            accepted: true,
            state_revision: session.view().revision,
        })
    }

    fn stop(self: &Arc<Self>, id: Option<RequestId>, params: Option<Value>) {
        let session = match parse::<SessionParams>(params)
            .and_then(|p| self.active(&p.session_id).map(|(s, _)| s))
        {
            Ok(session) => session,
            Err(err) => return self.out.reply(id, Err(err)),
        };
        let stopped = session.stop();
        self.cancel_interactions(session.id());
        let session_id = session.id().to_string();
        let result = move |stopped| {
            ok(StopResult {
                session_id: session_id.clone(),
                stopped,
            })
        };
        if !stopped || id.is_none() {
            return self.out.reply(id, result(stopped));
        }
        // Answer once the turn is over (its turn.completed is then already queued).
        let out = self.out.clone();
        tokio::spawn(async move {
            session.wait_idle(STOP_WAIT).await;
            out.reply(id, result(true));
        });
    }

    fn steer(&self, params: Option<Value>) -> Reply {
        let p: SteerParams = parse(params)?;
        let (session, _) = self.active(&p.session_id)?;
        if p.content.trim().is_empty() {
            return Err(RpcError::invalid_params("content", "the text is empty"));
        }
        let running = session.steer(p.content);
        ok(SteerResult {
            session_id: p.session_id,
            accepted: true,
            queued_for_next_turn: !running,
        })
    }

    async fn fork(&self, params: Option<Value>) -> Reply {
        let p: ForkParams = parse(params)?;
        let (parent, _) = self.active(&p.session_id)?;
        if let Some(active) = parent.active_turn() {
            return Err(RpcError::running(format!(
                "prompt is running: cannot fork session {} during turn {}",
                parent.id(),
                active.turn_id
            )));
        }
        let mut messages = parent.messages();
        match p.target.unwrap_or(ForkTarget::LatestCheckpoint) {
            ForkTarget::LatestCheckpoint => {}
            ForkTarget::Turn { turn_index } => {
                let cut = messages
                    .iter()
                    .enumerate()
                    .filter(|(_, m)| m.role == Role::User && !m.synthetic)
                    .map(|(i, _)| i)
                    .nth(turn_index + 1);
                let turns = messages
                    .iter()
                    .filter(|m| m.role == Role::User && !m.synthetic)
                    .count();
                if turn_index >= turns {
                    return Err(RpcError::invalid_params(
                        "target.turnIndex",
                        format!("out of range: the session has {turns} turns"),
                    ));
                }
                if let Some(cut) = cut {
                    messages.truncate(cut);
                }
            }
            ForkTarget::Message { message_id } => {
                let Some(index) = snapshot::message_index(&messages, &message_id) else {
                    return Err(RpcError::invalid_params(
                        "target.messageId",
                        format!("unknown message {message_id}"),
                    ));
                };
                // Keep the tool results of a kept tool-calling message.
                let mut end = index + 1;
                while messages.get(end).is_some_and(|m| m.role == Role::Tool) {
                    end += 1;
                }
                messages.truncate(end);
            }
        }
        let target_message_id = messages
            .iter()
            .enumerate()
            .rev()
            .find(|(_, m)| m.role != Role::Tool)
            .map(|(i, m)| snapshot::message_id(i, m));
        let forked = self
            .manager
            .fork(&parent, messages)
            .await
            .map_err(manager_error)?;
        let log = self.log_for(forked.id());
        ok(ForkResult {
            forked_session_id: forked.id().to_string(),
            parent_session_id: parent.id().to_string(),
            target_message_id,
            response: format!("Forked session {} into {}.", parent.id(), forked.id()),
            snapshot: Box::new(self.snapshot(&forked, &log, None)),
        })
    }

    fn compact(&self, params: Option<Value>) -> Reply {
        let p: SessionParams = parse(params)?;
        let (session, log) = self.active(&p.session_id)?;
        let observer =
            Box::new(ZcodeTurn::new(log.clone(), session.id()).with_gate(self.out.gate.clone()));
        let (response, state, operation_id) = match session.start_compact(observer) {
            Ok(turn) => ("Compaction started.", "accepted", Some(turn.turn_id)),
            Err(busy) => match session.active_turn().map(|a| a.kind) {
                Some(RunKind::Compact) => (
                    "A compaction is already running.",
                    "already_running",
                    Some(busy.turn_id),
                ),
                _ => return Err(RpcError::running(busy.to_string())),
            },
        };
        ok(CompactResult {
            response: response.to_string(),
            snapshot: Box::new(self.snapshot(&session, &log, None)),
            compact: CompactState {
                state,
                operation_id,
            },
        })
    }

    async fn goal(&self, params: Option<Value>) -> Reply {
        let p: GoalParams = parse(params)?;
        let (session, log) = self.active(&p.session_id)?;
        if let Some(active) = session.active_turn() {
            return Err(RpcError::running(format!(
                "prompt is running: session {} is busy with turn {}",
                session.id(),
                active.turn_id
            )));
        }
        let objective = p
            .objective
            .as_deref()
            .map(str::trim)
            .unwrap_or_default()
            .to_string();
        if matches!(p.action, GoalAction::Set | GoalAction::Replace) && objective.is_empty() {
            return Err(RpcError::invalid_params(
                "objective",
                "required for set and replace",
            ));
        }
        let action = p.action;
        let response = session
            .update_meta(move |meta| {
                let now = now_ms();
                match (action, meta.goal.as_mut()) {
                    (GoalAction::Show, Some(goal)) => format!(
                        "Goal ({}): {}",
                        if goal.paused { "paused" } else { "active" },
                        goal.objective
                    ),
                    (GoalAction::Set | GoalAction::Replace, existing) => {
                        let created_at = existing.map(|g| g.created_at).unwrap_or(now);
                        meta.goal = Some(Goal {
                            objective: objective.clone(),
                            paused: false,
                            created_at,
                            updated_at: now,
                        });
                        format!("Goal set: {objective}")
                    }
                    (GoalAction::Clear, Some(_)) => {
                        meta.goal = None;
                        "Goal cleared.".to_string()
                    }
                    (GoalAction::Pause, Some(goal)) => {
                        goal.paused = true;
                        goal.updated_at = now;
                        format!("Goal paused: {}", goal.objective)
                    }
                    (GoalAction::Resume, Some(goal)) => {
                        goal.paused = false;
                        goal.updated_at = now;
                        format!("Goal resumed: {}", goal.objective)
                    }
                    (_, None) => "No goal is set.".to_string(),
                }
            })
            .await
            .map_err(RpcError::internal)?;
        let goal = session.meta().goal.map(|g| GoalInfo {
            objective: g.objective,
            status: if g.paused { "paused" } else { "active" },
            created_at: g.created_at,
            updated_at: g.updated_at,
        });
        ok(crate::zcode::wire::GoalResult {
            response,
            goal,
            snapshot: Box::new(self.snapshot(&session, &log, None)),
        })
    }

    async fn set_mode(&self, params: Option<Value>) -> Reply {
        let p: SetModeParams = parse(params)?;
        let (session, log) = self.active(&p.session_id)?;
        let mode = session_mode(p.mode);
        session.set_mode(mode).await.map_err(RpcError::internal)?;
        emit(
            &log,
            session.id(),
            None,
            EventBody::SessionUpdated(SessionUpdatedPayload {
                mode: Some(wire_mode(mode)),
                ..Default::default()
            }),
        );
        ok(self.snapshot(&session, &log, Some(0)))
    }

    async fn set_thought_level(&self, params: Option<Value>) -> Reply {
        let p: SetThoughtLevelParams = parse(params)?;
        let (session, log) = self.active(&p.session_id)?;
        let level = match p.thought_level {
            Some(level) => level
                .parse::<ReasoningLevel>()
                .map_err(|e| RpcError::invalid_params("thoughtLevel", e.to_string()))?,
            None => ReasoningLevel::default(),
        };
        session
            .set_thought_level(level)
            .await
            .map_err(RpcError::internal)?;
        ok(self.snapshot(&session, &log, Some(0)))
    }

    async fn set_model(&self, params: Option<Value>) -> Reply {
        let p: SetModelParams = parse(params)?;
        let (session, log) = self.active(&p.session_id)?;
        let model = self.check_model(&p.model)?;
        session.set_model(model).await.map_err(RpcError::internal)?;
        ok(self.snapshot(&session, &log, Some(0)))
    }

    fn cancel_background_task(&self, params: Option<Value>) -> Reply {
        let p: CancelBackgroundTaskParams = parse(params)?;
        self.active(&p.session_id)?;
        ok(CancelBackgroundTaskResult {
            cancelled: false,
            reason: format!("no background task {}", p.task_id),
            status: "not_found",
            task_id: p.task_id,
        })
    }

    // -----------------------------------------------------------------------------------
    // Interactions
    // -----------------------------------------------------------------------------------

    async fn interaction_loop(
        self: Arc<Self>,
        mut rx: mpsc::UnboundedReceiver<InteractionRequest>,
    ) {
        while let Some(request) = rx.recv().await {
            self.put_interaction(request);
        }
    }

    fn put_interaction(&self, request: InteractionRequest) {
        if request.reply.is_closed() {
            return; // the run was aborted before we got here
        }
        let server_id = format!(
            "server-{}",
            self.next_request.fetch_add(1, Ordering::Relaxed)
        );
        let request_id = new_id("req");
        let (method, params, kind) = match &request.kind {
            InteractionKind::Permission(req) => {
                let always = format!("Always allow {} in this session", req.tool);
                let params = RequestPermissionParams {
                    request_id: request_id.clone(),
                    session_id: request.session_id.clone(),
                    turn_id: request.turn_id.clone(),
                    tool_call_id: req.call_id.clone(),
                    tool_name: req.tool.clone(),
                    reason: req.reason.clone().unwrap_or_else(|| req.risk.reason()),
                    risk_level: req.risk.level.as_str(),
                    input: req.args.clone(),
                    options: vec![
                        PermissionOption {
                            option_id: "allow_once",
                            kind: "allow_once",
                            name: "Allow once".to_string(),
                            response: PermissionResponse {
                                decision: Decision::Allow,
                                reason: Some("Approved once".to_string()),
                                modified_input: None,
                                permission_updates: None,
                            },
                        },
                        PermissionOption {
                            option_id: "allow_always",
                            kind: "allow_always",
                            name: always.clone(),
                            response: PermissionResponse {
                                decision: Decision::Allow,
                                reason: Some(always),
                                modified_input: None,
                                permission_updates: Some(vec![PermissionUpdate {
                                    kind: "addRules".to_string(),
                                    behavior: "allow".to_string(),
                                    rules: vec![PermissionRule {
                                        tool_name: req.tool.clone(),
                                        rule_content: None,
                                    }],
                                }]),
                            },
                        },
                        PermissionOption {
                            option_id: "deny",
                            kind: "deny",
                            name: "Deny".to_string(),
                            response: PermissionResponse {
                                decision: Decision::Deny,
                                reason: Some("Denied".to_string()),
                                modified_input: None,
                                permission_updates: None,
                            },
                        },
                    ],
                };
                (
                    REQUEST_PERMISSION,
                    serde_json::to_value(params),
                    PendingKind::Permission,
                )
            }
            InteractionKind::UserInput(req) => {
                let params = RequestUserInputParams {
                    request_id: request_id.clone(),
                    session_id: request.session_id.clone(),
                    turn_id: request.turn_id.clone(),
                    tool_call_id: req.call_id.clone(),
                    tool_name: Some(req.tool_name.clone()),
                    questions: (!req.questions.is_empty()).then(|| {
                        req.questions
                            .iter()
                            .map(|q| Question {
                                question: q.question.clone(),
                                header: q.header.clone(),
                                options: q
                                    .options
                                    .iter()
                                    .map(|(value, label)| QuestionOption {
                                        value: value.clone(),
                                        label: label.clone(),
                                    })
                                    .collect(),
                                multi_select: q.multi_select,
                            })
                            .collect()
                    }),
                    input: req.plan.as_ref().map(|plan| json!({ "plan": plan })),
                    schema: req
                        .plan
                        .as_ref()
                        .map(|_| json!({ "interaction": "plan_approval" })),
                };
                (
                    REQUEST_USER_INPUT,
                    serde_json::to_value(params),
                    PendingKind::UserInput,
                )
            }
        };
        let params = match params {
            Ok(params) => params,
            Err(err) => {
                tracing::error!(error = %err, "cannot serialise an interaction request");
                return; // dropping the reply cancels the interaction
            }
        };
        self.pending().insert(
            server_id.clone(),
            Pending {
                session_id: request.session_id,
                request_id,
                kind,
                reply: request.reply,
            },
        );
        self.out.send(Outgoing::Request {
            id: RequestId::Str(server_id),
            method: method.to_string(),
            params,
        });
    }

    fn handle_response(&self, id: &RequestId, reply: Result<Value, ErrorObject>) {
        let key = id.to_string();
        let Some(pending) = self.pending().remove(&key) else {
            tracing::warn!(id = %key, "reply to an unknown or cancelled server request");
            return;
        };
        let answer = match pending.kind {
            PendingKind::Permission => InteractionReply::Permission(permission_answer(reply)),
            PendingKind::UserInput => InteractionReply::UserInput(user_input_answer(reply)),
        };
        if pending.reply.send(answer).is_err() {
            tracing::debug!(id = %key, "interaction answered after its turn stopped waiting");
        }
    }

    /// Drops a session's pending interactions (their waits end as cancelled).
    fn cancel_interactions(&self, session_id: &str) {
        self.pending().retain(|_, p| p.session_id != session_id);
    }
}

fn manager_error(err: ManagerError) -> RpcError {
    match err {
        ManagerError::NotFound(id) => RpcError::not_found(&id),
        other => RpcError::internal(other),
    }
}

/// Maps the client's reply to a permission request to an approval.
fn permission_answer(reply: Result<Value, ErrorObject>) -> Approval {
    let value = match reply {
        Ok(value) => value,
        Err(err) => {
            return Approval::Deny {
                reason: Some(format!("the client could not answer: {}", err.message)),
            }
        }
    };
    if let Ok(response) = serde_json::from_value::<PermissionResponse>(value.clone()) {
        return match response.decision {
            Decision::Allow => {
                let always = response.permission_updates.iter().flatten().any(|u| {
                    u.kind == "addRules" && (u.behavior.is_empty() || u.behavior == "allow")
                });
                match always {
                    true => Approval::AllowAlways,
                    false => Approval::AllowOnce,
                }
            }
            Decision::Deny | Decision::Escalate | Decision::Modify => Approval::Deny {
                reason: response.reason.or(Some("Denied by the user".to_string())),
            },
        };
    }
    // Lenient: an option id, bare or as an ACP outcome.
    let option = value
        .get("optionId")
        .or_else(|| value.pointer("/outcome/optionId"))
        .and_then(Value::as_str);
    match option {
        Some("allow_once" | "allow") => Approval::AllowOnce,
        Some("allow_always" | "allow_project") => Approval::AllowAlways,
        _ => Approval::Deny {
            reason: Some("Denied by the user".to_string()),
        },
    }
}

/// Maps the client's reply to a user input request.
fn user_input_answer(reply: Result<Value, ErrorObject>) -> UserInputAnswer {
    match reply.map(serde_json::from_value::<UserInputResponse>) {
        Ok(Ok(response)) => match response.action {
            UserInputAction::Accept => {
                UserInputAnswer::Accepted(response.content.unwrap_or(Value::Null))
            }
            UserInputAction::Decline => UserInputAnswer::Declined(response.reason),
            UserInputAction::Cancel => UserInputAnswer::Cancelled,
        },
        Ok(Err(err)) => UserInputAnswer::Declined(Some(format!("unreadable answer: {err}"))),
        Err(err) => UserInputAnswer::Declined(Some(err.message)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zcode::wire::SESSION_EVENT;

    impl Frame {
        fn into_message(self) -> Outgoing {
            match self {
                Frame::Message(message) => message,
                Frame::Lines { .. } => panic!("not a message"),
            }
        }
    }

    #[test]
    fn invalid_params_name_the_failing_path() {
        let err = parse::<SendParams>(Some(json!({"content": "x"}))).expect_err("missing id");
        assert_eq!(err.0.code, codes::INVALID_PARAMS);
        assert!(err.0.message.contains("sessionId"), "{}", err.0.message);
        let err = parse::<CreateParams>(Some(json!({"workspace": {"workspacePath": 3}})))
            .expect_err("bad type");
        assert!(
            err.0
                .message
                .starts_with("Invalid params — workspace.workspacePath:"),
            "{}",
            err.0.message
        );
    }

    #[test]
    fn permission_replies_map_to_approvals() {
        let always = json!({"decision": "allow", "permissionUpdates": [
            {"type": "addRules", "behavior": "allow", "rules": [{"toolName": "bash"}]}]});
        assert_eq!(permission_answer(Ok(always)), Approval::AllowAlways);
        assert_eq!(
            permission_answer(Ok(json!({"decision": "allow"}))),
            Approval::AllowOnce
        );
        assert!(matches!(
            permission_answer(Ok(json!({"decision": "deny", "reason": "no"}))),
            Approval::Deny { reason: Some(r) } if r == "no"
        ));
        assert_eq!(
            permission_answer(Ok(
                json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}})
            )),
            Approval::AllowOnce
        );
    }

    /// Records every write and flush; `lines_at_flush` is how many lines had been written
    /// at each flush.
    #[derive(Default)]
    struct Recorder {
        bytes: Vec<u8>,
        writes: usize,
        lines_at_flush: Vec<usize>,
    }

    impl AsyncWrite for Recorder {
        fn poll_write(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            self.writes += 1;
            self.bytes.extend_from_slice(buf);
            std::task::Poll::Ready(Ok(buf.len()))
        }

        fn poll_flush(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            let lines = self.bytes.iter().filter(|b| **b == b'\n').count();
            self.lines_at_flush.push(lines);
            std::task::Poll::Ready(Ok(()))
        }

        fn poll_shutdown(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    use std::future::Future;

    fn note(n: u64) -> Frame {
        Frame::Message(Outgoing::Notification {
            method: SESSION_EVENT.to_string(),
            params: json!({"seq": n}),
        })
    }

    fn seqs(bytes: &[u8]) -> Vec<u64> {
        std::str::from_utf8(bytes)
            .expect("utf-8")
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).expect("json")["params"]["seq"]
                    .as_u64()
                    .expect("seq")
            })
            .collect()
    }

    fn event(seq: u64) -> SessionEvent {
        SessionEvent {
            event_id: format!("evt_{seq}"),
            session_id: "sess_1".into(),
            turn_id: Some("turn_1".into()),
            seq,
            timestamp: 1,
            body: EventBody::SessionUpdated(SessionUpdatedPayload::default()),
        }
    }

    #[tokio::test]
    async fn held_event_lines_go_out_as_one_frame_in_order_with_messages() {
        let gate = Arc::new(OutputGate::default());
        let (tx, mut rx) = mpsc::unbounded_channel();
        let out = Outbox {
            tx,
            gate: gate.clone(),
        };
        let log = EventLog::new(EventLines::new(out.clone()));
        log.subscribe(None, |_, _| out.send(note(0).into_message()));
        log.append_held(event);
        log.append_held(event);
        assert_eq!(gate.queued(), 3, "held lines count on the gate at once");
        assert_eq!(rx.len(), 1, "held lines are not sent before a flush");
        log.flush();
        log.flush();
        assert_eq!(
            rx.len(),
            2,
            "one frame for both lines; an empty flush sends nothing"
        );
        // A flushing append from elsewhere (a mode change) keeps seq order.
        log.append_held(event);
        log.append(event);
        assert_eq!(rx.len(), 3);
        let (_done_tx, done) = oneshot::channel();
        let mut sink = Recorder::default();
        let mut writer = Box::pin(write_all_messages(&mut sink, &mut rx, done, &gate));
        let waker = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(writer.as_mut().poll(&mut cx).is_pending());
        drop(writer);
        assert_eq!(seqs(&sink.bytes), vec![0, 1, 2, 3, 4]);
        assert_eq!(sink.lines_at_flush, vec![5], "all frames in one write");
        assert_eq!(gate.queued(), 0, "every line counted as written");
        assert_eq!(gate.high_water(), 5);
        // The lines are exactly the generic notification's.
        let first = sink.bytes.split(|b| *b == b'\n').nth(1).expect("line");
        let generic = Outgoing::Notification {
            method: SESSION_EVENT.to_string(),
            params: serde_json::to_value(event(1)).expect("value"),
        };
        assert_eq!(
            first,
            serde_json::to_vec(&generic).expect("json").as_slice()
        );
    }

    #[tokio::test]
    async fn lines_for_a_closed_output_are_counted_as_written() {
        let gate = Arc::new(OutputGate::default());
        let (tx, rx) = mpsc::unbounded_channel();
        drop(rx);
        let log = EventLog::new(EventLines::new(Outbox {
            tx,
            gate: gate.clone(),
        }));
        log.subscribe(None, |_, _| ());
        log.append_held(event);
        log.append_held(event);
        assert_eq!(gate.queued(), 2);
        log.flush();
        assert_eq!(gate.queued(), 0);
    }

    #[tokio::test]
    async fn a_burst_is_one_write_and_a_lone_line_is_flushed_before_waiting() {
        let gate = OutputGate::default();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (_done_tx, done) = oneshot::channel();
        // A burst: three messages already waiting.
        for n in 0..3 {
            gate.queued_one();
            tx.send(note(n)).expect("send");
        }
        let mut out = Recorder::default();
        let mut writer = Box::pin(write_all_messages(&mut out, &mut rx, done, &gate));
        // The writer drains the burst, then waits for more: poll it until it would block.
        let waker = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(writer.as_mut().poll(&mut cx).is_pending());
        drop(writer);
        assert_eq!(out.writes, 1, "one write for the burst");
        assert_eq!(
            out.lines_at_flush,
            vec![3],
            "one flush, after all three lines"
        );
        assert_eq!(gate.queued(), 0, "every message counted as written");
        // A lone line is flushed before the writer waits again.
        gate.queued_one();
        tx.send(note(3)).expect("send");
        let (_done_tx, done) = oneshot::channel();
        let mut writer = Box::pin(write_all_messages(&mut out, &mut rx, done, &gate));
        assert!(writer.as_mut().poll(&mut cx).is_pending());
        drop(writer);
        assert_eq!(out.lines_at_flush, vec![3, 4]);
        assert_eq!(seqs(&out.bytes), vec![0, 1, 2, 3]);
    }
}
