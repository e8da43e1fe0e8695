//! [`AcpAgent`]: the ACP agent side of a connection, on the official SDK's v1 builder, over
//! agent-host's [`SessionManager`].
//!
//! Requests are answered from the SDK's dispatch loop only when that is quick
//! (initialize, session setup, mode changes: `sessions`). A prompt starts a turn and
//! returns; the turn's [`TurnObserver`](agent_host::session::TurnObserver) streams
//! `session/update` notifications from the session's own task and answers the
//! `session/prompt` request when the turn finishes (`prompt`). Permission prompts and
//! questions arrive on the manager's interaction channel and are put to the client from
//! tasks of their own (`interact`), so nothing that waits on the client ever holds the
//! dispatch loop, and `session/cancel` is handled while a permission request is still open.
//!
//! The dispatch loop handles requests one at a time, in the order they arrived, and this
//! agent keeps its own "initialize first" rule on that order (`Shared::initialized`): a request a client
//! pipelines right after `initialize` (before its response arrived) is served, after the
//! `initialize`, instead of being refused because the response has not been written yet.

mod commands;
mod config;
mod interact;
mod lifecycle;
mod mentions;
mod prompt;
mod rewind;
mod sessions;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    CancelNotification, CloseSessionRequest, DeleteSessionRequest, InitializeRequest,
    InitializeResponse, ListSessionsRequest, LoadSessionRequest, LoadSessionResponse,
    NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse, ResumeSessionRequest,
    SessionId, SessionNotification, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionModeRequest,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{
    Agent, Client, ConnectTo, Error, ErrorCode, Handled, JsonRpcMessage, JsonRpcRequest, Responder,
    UntypedMessage, V1,
};
use agent_host::backpressure::OutputGate;
use agent_host::output::Frames;
use agent_host::session::{ManagerError, SessionManager};
use serde::Serialize;
use tokio::sync::mpsc;

use super::client::{ClientSide, Lender};
use super::transport::Outbox;
use interact::{Announced, Tasks};

pub use sessions::{mode_state, parse_mode, MODES};

/// The notification method of session updates.
const UPDATE_METHOD: &str = "session/update";
/// How long shutdown waits for running turns to wind down.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// What the ACP agent needs: the sessions' factory and storage.
pub type AcpOptions = crate::Options;

/// The agent side of one ACP connection. Connect it to a client transport with
/// [`ConnectTo::connect_to`], e.g. `AcpAgent::new(options).connect_to(Stdio::new())`, or to
/// the crate's line transport ([`transport`](super::transport::transport)) with its outbox.
#[derive(Debug)]
pub struct AcpAgent {
    options: AcpOptions,
    gate: Option<Arc<OutputGate>>,
    outbox: Option<Outbox>,
}

impl AcpAgent {
    /// An agent serving sessions built by `options.factory`, stored under
    /// `options.data_dir`.
    pub fn new(options: AcpOptions) -> Self {
        Self {
            options,
            gate: None,
            outbox: None,
        }
    }

    /// Writes `session/update` notifications into the line transport's output queue
    /// ([`LineTransport::update_outbox`](super::transport::LineTransport::update_outbox))
    /// instead of handing them to the SDK: serialised once on the turn's task, the updates
    /// of the events already waiting queued as one message when the turn flushes (before
    /// it waits, announces a tool call or answers), in order with everything the SDK
    /// writes (a reply sent after them is written after them), and counted against the
    /// transport's gate, so a turn waits for a slow client. Without it, they go through
    /// the SDK's `send_notification`.
    pub fn with_update_outbox(mut self, outbox: Outbox) -> Self {
        self.outbox = Some(outbox);
        self
    }

    /// Lets a turn take its next event only when `gate` is ready, when there is no outbox
    /// (with one, turns wait on the outbox's gate: the transport's). Without an outbox the
    /// updates go through the SDK and reach a transport's queue only some time after they
    /// were sent, so such a gate holds a turn back only loosely: for backpressure, use the
    /// outbox. Without either, turns never wait.
    pub fn with_output_gate(mut self, gate: Arc<OutputGate>) -> Self {
        self.gate = Some(gate);
        self
    }
}

/// The state of one connection, shared by its handlers.
pub(crate) struct Shared {
    pub(crate) manager: SessionManager,
    /// The gate turns wait on (none: they never wait).
    gate: Option<Arc<OutputGate>>,
    /// Where updates go when not through the SDK.
    pub(crate) outbox: Option<Outbox>,
    /// Per session with a running prompt: whether the client cancelled it.
    cancels: Mutex<HashMap<String, Arc<AtomicBool>>>,
    pub(crate) announced: Announced,
    /// The sub-agents of running prompts, by task id.
    pub(crate) tasks: Tasks,
    /// `initialize` was answered: the "initialize first" rule, kept in the order requests
    /// are dispatched.
    initialized: AtomicBool,
    /// How many `session/prompt` requests are not answered yet.
    pub(crate) unanswered: tokio::sync::watch::Sender<usize>,
    /// Per session: the slash commands last announced.
    commands: Mutex<HashMap<String, agent_core::commands::Commands>>,
    /// What the client advertised and lends the sessions (files, terminals, elicitation).
    pub(crate) client: Arc<ClientSide>,
    /// The provider's models, for the `model` config option.
    models: agent_host::session::ModelList,
    /// The session titles the client was told.
    titles: lifecycle::Titles,
}

impl Shared {
    pub(crate) fn commands(
        &self,
    ) -> MutexGuard<'_, HashMap<String, agent_core::commands::Commands>> {
        self.commands.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn cancels(&self) -> MutexGuard<'_, HashMap<String, Arc<AtomicBool>>> {
        self.cancels.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One `session/prompt` fewer to answer.
    pub(crate) fn answered(&self) {
        self.unanswered.send_modify(|n| *n = n.saturating_sub(1));
    }

    /// Waits (at most `timeout`) until every prompt was answered.
    async fn all_answered(&self, timeout: Duration) -> bool {
        let mut rx = self.unanswered.subscribe();
        let waited = tokio::time::timeout(timeout, rx.wait_for(|n| *n == 0)).await;
        matches!(waited, Ok(Ok(_)))
    }

    /// The gate a turn waits on.
    pub(crate) fn output_gate(&self) -> Option<Arc<OutputGate>> {
        match &self.outbox {
            Some(outbox) => Some(outbox.gate().clone()),
            None => self.gate.clone(),
        }
    }
}

/// A `session/update` notification as the SDK writes it.
#[derive(Serialize)]
struct UpdateLine<'a> {
    jsonrpc: &'static str,
    method: &'static str,
    params: &'a SessionNotification,
}

/// Appends one `session/update` for `session_id` to `frames`, as the SDK writes it.
pub(crate) fn hold_update(frames: &mut Frames, session_id: &SessionId, update: SessionUpdate) {
    let notification = SessionNotification::new(session_id.clone(), update);
    let line = UpdateLine {
        jsonrpc: "2.0",
        method: UPDATE_METHOD,
        params: &notification,
    };
    if let Err(err) = frames.push(&line) {
        // Not reachable for the schema's types; dropped like the SDK drops a notification
        // it cannot serialise.
        tracing::error!(error = %err, "cannot serialise a session/update; dropped");
    }
}

/// Sends one `session/update` for `session_id`: into the transport's queue when there is an
/// outbox, else through the SDK.
pub(crate) fn notify(
    s: &Shared,
    cx: &ConnectionTo<Client>,
    session_id: &SessionId,
    update: SessionUpdate,
) {
    let notification = SessionNotification::new(session_id.clone(), update);
    let sent = match &s.outbox {
        Some(outbox) => outbox
            .send(&UpdateLine {
                jsonrpc: "2.0",
                method: UPDATE_METHOD,
                params: &notification,
            })
            .map_err(|e| e.to_string()),
        None => cx
            .send_notification(notification)
            .map_err(|e| format!("{e:?}")),
    };
    if let Err(err) = sent {
        tracing::debug!(session = %session_id.0, error = %err, "cannot send session/update");
    }
}

/// The `data` of a session-not-found error.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SessionRef<'a> {
    session_id: &'a str,
}

pub(crate) fn session_not_found(id: &str) -> Error {
    let error = Error::new(
        ErrorCode::RESOURCE_NOT_FOUND,
        format!("Session not found: {id}"),
    );
    match serde_json::to_value(SessionRef { session_id: id }) {
        Ok(data) => error.data(data),
        Err(_) => error,
    }
}

pub(crate) fn session_error(err: ManagerError, id: Option<&str>) -> Error {
    match (err, id) {
        (ManagerError::NotFound(_), Some(id)) => session_not_found(id),
        (err, _) => internal(err),
    }
}

pub(crate) fn internal(err: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::INTERNAL_ERROR, err.to_string())
}

pub(crate) fn invalid_params(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, message.into())
}

pub(crate) fn invalid_request(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::INVALID_REQUEST, message.into())
}

/// The SDK's own answer to a request before initialization.
fn initialization_required(method: &str) -> Error {
    Error::invalid_request().data(format!(
        "ACP initialization must complete before `{method}` can be used"
    ))
}

/// The responder of a request not parsed yet.
type UntypedResponder = Responder<serde_json::Value, V1>;

/// Runs first for every request: answers `initialize` (opening the gate in dispatch
/// order), refuses other requests until then, and hands every other request on.
fn gatekeeper(
    s: &Shared,
    request: UntypedMessage,
    responder: UntypedResponder,
) -> Result<Handled<(UntypedMessage, UntypedResponder)>, Error> {
    if request.method() == "initialize" {
        let responder = responder.cast::<InitializeResponse>();
        return match InitializeRequest::parse_message(request.method(), request.params()) {
            Ok(init) => {
                s.client.set_capabilities(&init.client_capabilities);
                s.initialized.store(true, Ordering::Release);
                responder.respond(sessions::initialize(&init))
            }
            Err(err) => responder.respond_with_error(err),
        }
        .map(|()| Handled::Yes);
    }
    if !s.initialized.load(Ordering::Acquire) {
        return responder
            .respond_with_error(initialization_required(request.method()))
            .map(|()| Handled::Yes);
    }
    Ok(Handled::No {
        message: (request, responder),
        retry: false,
    })
}

/// A request handler answering with `$call`'s result: a closure over its own clone of the
/// connection's state `$s`, getting the request and the connection.
macro_rules! answer {
    ($s:ident, |$req:ident: $kind:ty, $cx:pat_param| $call:expr) => {{
        let $s = $s.clone();
        type Answer = Responder<<$kind as JsonRpcRequest>::Response, V1>;
        async move |$req: $kind, responder: Answer, $cx: ConnectionTo<Client>| {
            responder.respond_with_result($call.await)
        }
    }};
}

impl ConnectTo<Client> for AcpAgent {
    async fn connect_to(self, client: impl ConnectTo<Agent>) -> agent_client_protocol::Result<()> {
        let (int_tx, int_rx) = mpsc::unbounded_channel();
        // What the client lends each session, by the capabilities `initialize` brings.
        let client_side = Arc::new(ClientSide::default());
        let mut options = self.options;
        let models = options.model_list();
        options.factory = options
            .factory
            .session_client(Arc::new(Lender(client_side.clone())));
        let shared = Arc::new(Shared {
            manager: options.manager(int_tx),
            gate: self.gate,
            outbox: self.outbox,
            cancels: Mutex::new(HashMap::new()),
            announced: Announced::default(),
            tasks: Tasks::default(),
            initialized: AtomicBool::new(false),
            unanswered: tokio::sync::watch::channel(0).0,
            commands: Mutex::new(HashMap::new()),
            client: client_side,
            models,
            titles: lifecycle::Titles::default(),
        });
        let s = shared.clone();
        // The SDK's v1 agent refuses requests until the response to `initialize` has been
        // sent (a typed `initialize` handler turns that on), which refuses the requests a
        // client pipelines behind it. The gatekeeper answers `initialize` untyped instead,
        // so the SDK leaves the rule to it.
        let result = Agent
            .v1()
            .name("adapter-acp")
            .on_receive_request(
                {
                    let s = s.clone();
                    async move |request: UntypedMessage,
                                responder: UntypedResponder,
                                _cx| { gatekeeper(&s, request, responder) }
                },
                agent_client_protocol::on_receive_request!(),
            )
            // The session's slash commands are announced after the response.
            .on_receive_request(
                {
                    let s = s.clone();
                    async move |req: NewSessionRequest,
                                responder: Responder<NewSessionResponse, V1>,
                                cx: ConnectionTo<Client>| {
                        let result = sessions::new_session(&s, req).await;
                        let id = result.as_ref().ok().map(|r| r.session_id.0.to_string());
                        responder.respond_with_result(result)?;
                        if let Some(id) = id {
                            commands::announce_session(&s, &cx, &id);
                        }
                        Ok(())
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
                        let id = req.session_id.0.to_string();
                        let result = sessions::load_session(&s, &cx, req).await;
                        let loaded = result.is_ok();
                        responder.respond_with_result(result)?;
                        if loaded {
                            commands::announce_session(&s, &cx, &id);
                        }
                        Ok(())
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                answer!(s, |req: ListSessionsRequest, _cx| sessions::list_sessions(&s, req)),
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                answer!(s, |req: SetSessionModeRequest, cx| sessions::set_mode(&s, &cx, req)),
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                answer!(s, |req: SetSessionConfigOptionRequest, cx| {
                    config::set_config_option(&s, &cx, req)
                }),
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                answer!(s, |req: ResumeSessionRequest, _cx| lifecycle::resume_session(&s, req)),
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                answer!(s, |req: CloseSessionRequest, _cx| lifecycle::close_session(&s, req)),
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                answer!(s, |req: DeleteSessionRequest, _cx| lifecycle::delete_session(&s, req)),
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                {
                    let s = s.clone();
                    async move |req: PromptRequest,
                                responder: Responder<PromptResponse, V1>,
                                cx: ConnectionTo<Client>| {
                        // `/rewind` is answered here, with no turn.
                        if let Some(answer) = rewind::command(&s, &cx, &req).await {
                            return responder.respond_with_result(answer);
                        }
                        let prepared = match prompt::prepare(&s, &cx, req).await {
                            Ok(prepared) => prepared,
                            Err(err) => return responder.respond_with_error(err),
                        };
                        // Reading what the prompt mentions may ask the client, whose
                        // answers this dispatch must stay free to receive.
                        let reads = prepared.reads();
                        let start = {
                            let (s, cx) = (s.clone(), cx.clone());
                            async move {
                                match prompt::start_prompt(&s, &cx, prepared).await {
                                    // The turn's observer answers when the turn ends.
                                    Ok(reply) => {
                                        reply.attach(responder);
                                        Ok(())
                                    }
                                    Err(err) => responder.respond_with_error(err),
                                }
                            }
                        };
                        match reads {
                            true => {
                                tokio::spawn(async move {
                                    if let Err(err) = start.await {
                                        tracing::debug!(error = ?err, "cannot answer session/prompt");
                                    }
                                });
                                Ok(())
                            }
                            false => start.await,
                        }
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_notification(
                {
                    let s = s.clone();
                    async move |n: CancelNotification, _cx| {
                        prompt::cancel(&s, &n.session_id.0);
                        Ok(())
                    }
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .connect_with(client, {
                let s = shared.clone();
                async move |cx: ConnectionTo<Client>| {
                    s.client.attach(&cx, &s);
                    let mut int_rx = int_rx;
                    loop {
                        tokio::select! {
                            _ = cx.incoming_closed() => break,
                            request = int_rx.recv() => match request {
                                Some(request) => {
                                    tokio::spawn(interact::interact(s.clone(), cx.clone(), request));
                                }
                                None => break,
                            },
                        }
                    }
                    // The input ended (stdin closed, or SIGTERM/SIGINT): stop the running
                    // turns while the connection can still write, so what is in flight is
                    // finished — each prompt is answered (`cancelled`) after its updates.
                    s.manager.shutdown(SHUTDOWN_WAIT).await;
                    if !s.all_answered(SHUTDOWN_WAIT).await {
                        tracing::warn!("a prompt was not answered before shutdown");
                    }
                    Ok(())
                }
            })
            .await;
        // Nothing is written any more: turns must not wait for output while they stop.
        if let Some(gate) = shared.output_gate() {
            gate.close();
        }
        shared.manager.shutdown(SHUTDOWN_WAIT).await;
        result
    }
}
