//! The ZCode app-server's dispatcher: one [`Server`] per connection, reading each line as
//! a request, notification or response and answering through the writer's queue.
//!
//! - [`sessions`]: create, list, resume, read, messages, subscribe, events, fork and the
//!   settings (`setMode`, `setThoughtLevel`, `setModel`).
//! - [`turns`]: send, stop, steer, compact and goal.
//! - [`rewind`]: rewind to a checkpoint (files and transcript).
//! - [`interactions`]: permission and user-input requests to the client, and its answers.

mod interactions;
mod rewind;
mod sessions;
mod turns;

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::oneshot;

use super::commands::SessionCommands;
use super::eventlog::EventLog;
use super::mapping::{LogResolver, ZLog};
use super::outbox::{EventLines, Outbox};
pub(crate) use super::reply::{ok, Reply, RpcError};
use super::snapshot;
use super::wire::{codes, ClientRequest, RawMessage, RequestId, Snapshot, StoredEventNotification};
use crate::MAX_JSON_DEPTH;
use agent_host::session::{
    EventJournal, FactoryError, InteractionReply, ManagerError, ModelList, Session, SessionManager,
    TurnClaim,
};

/// How long a turn's writer claim is held after the turn, at most, while its last events
/// are stored.
const CLAIM_SYNC_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// A session that could not be created, resumed or forked, in the protocol's error form:
/// not found (-32004), an invalid MCP server list (-32602 naming `mcpServers`), else
/// internal (-32603).
fn manager_error(err: ManagerError) -> RpcError {
    match err {
        ManagerError::NotFound(id) => RpcError::not_found(&id),
        ManagerError::Factory(FactoryError::Mcp(err)) => {
            RpcError::invalid_params("mcpServers", err.to_string())
        }
        other => RpcError::internal(other),
    }
}

/// What a server request to the client asks.
pub(crate) enum PendingKind {
    Permission,
    UserInput,
}

/// A server request waiting for the client's answer.
pub(crate) struct Pending {
    pub(crate) session_id: String,
    pub(crate) request_id: String,
    pub(crate) kind: PendingKind,
    pub(crate) reply: oneshot::Sender<InteractionReply>,
}

/// The event logs of a connection's sessions by id, each over its session's journal and
/// writing to the connection's queue.
pub(crate) struct Logs {
    out: Outbox,
    manager: Arc<SessionManager>,
    logs: Mutex<HashMap<String, Arc<ZLog>>>,
}

impl Logs {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<ZLog>>> {
        self.logs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The event log of an active session: the one opened for it in this process, else that
    /// of a session without stored events (one created or forked here, or a sub-agent's).
    /// A session resumed from storage opens its log with [`open`](Self::open) first.
    pub(crate) fn get(&self, session_id: &str) -> Arc<ZLog> {
        if let Some(log) = self.lock().get(session_id) {
            return log.clone();
        }
        let journal = self.manager.fresh_journal(session_id);
        self.attach(session_id, journal)
    }

    /// The event log of a session, opened from storage on first use (numbering continues
    /// after its stored events).
    pub(crate) async fn open(&self, session_id: &str) -> Result<Arc<ZLog>, RpcError> {
        if let Some(log) = self.lock().get(session_id) {
            return Ok(log.clone());
        }
        let journal = self
            .manager
            .journal(session_id)
            .await
            .map_err(|err| RpcError::internal(format!("cannot open the event log: {err}")))?;
        Ok(self.attach(session_id, journal))
    }

    /// The event log of a session another process continued (its session was loaded again
    /// for a turn): the journal is opened again from storage, so numbering goes on after
    /// that process's events. A subscription to the old log carries over: the events the
    /// other process wrote since are pushed first (unless they are no longer retained),
    /// when `carry` (a `session/subscribe` about to subscribe again says not).
    pub(crate) async fn reopen(
        &self,
        session_id: &str,
        carry: bool,
    ) -> Result<Arc<ZLog>, RpcError> {
        let old = self.lock().remove(session_id);
        let log = self.open(session_id).await?;
        let Some(old) = old.filter(|old| old.journal().is_subscribed()) else {
            return Ok(log);
        };
        old.unsubscribe();
        if !carry {
            return Ok(log);
        }
        let out = self.out.clone();
        log.subscribe(Some(old.seq()), |replay| {
            if !replay.gap {
                for event in &replay.events {
                    let note = StoredEventNotification::new(&event.event);
                    if let Err(err) = out.sender.send_json(&note, None) {
                        tracing::debug!(error = %err, "dropping an event");
                    }
                }
            }
        })
        .await
        .map_err(|err| RpcError::internal(format!("cannot read the event log: {err}")))?;
        Ok(log)
    }

    fn attach(&self, session_id: &str, journal: Arc<EventJournal>) -> Arc<ZLog> {
        self.lock()
            .entry(session_id.to_string())
            .or_insert_with(|| {
                journal.attach(Box::new(EventLines::new(&self.out)), Some(self.out.gate()));
                Arc::new(EventLog::over(journal))
            })
            .clone()
    }
}

/// The state of one app-server connection: its sessions, their event logs, the
/// interactions waiting for the client, and the writer's queue.
pub(crate) struct Server {
    pub(crate) manager: Arc<SessionManager>,
    pub(crate) out: Outbox,
    logs: Arc<Logs>,
    pending: Mutex<HashMap<String, Pending>>,
    next_request: AtomicU64,
    /// Each session's slash commands.
    commands: SessionCommands,
    /// The provider's models, offered in every snapshot's settings.
    models: ModelList,
}
impl Server {
    /// A connection's state: sessions built by `manager`, offering `models`, output to
    /// `out`.
    pub(crate) fn new(manager: SessionManager, models: ModelList, out: Outbox) -> Self {
        let manager = Arc::new(manager);
        Self {
            logs: Arc::new(Logs {
                out: out.clone(),
                manager: manager.clone(),
                logs: Mutex::new(HashMap::new()),
            }),
            manager,
            out,
            pending: Mutex::new(HashMap::new()),
            next_request: AtomicU64::new(1),
            commands: SessionCommands::default(),
            models,
        }
    }

    /// Lists the provider's models (once per connection) for the snapshots' settings.
    pub(crate) async fn list_models(&self) {
        self.models.get(self.manager.factory()).await;
    }

    /// Finds sub-agent sessions' logs (for a turn's observer).
    pub(crate) fn log_resolver(&self) -> LogResolver {
        let logs = self.logs.clone();
        Arc::new(move |id: &str| logs.get(id))
    }

    pub(crate) fn pending(&self) -> MutexGuard<'_, HashMap<String, Pending>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Claims the active session `session_id` for a turn ([`SessionManager::claim_turn`]):
    /// the protocol's busy error (-32010, "prompt is running") while a turn runs on it here
    /// or on another node sharing the storage; an internal error naming the store when the
    /// storage fails. When another node changed the session since, it is loaded again and
    /// so is its event log. The claim is held until the turn's last events are stored.
    pub(crate) async fn claim(
        &self,
        session_id: &str,
    ) -> Result<(Arc<Session>, Arc<ZLog>, TurnClaim), RpcError> {
        let (session, mut claim) =
            self.manager
                .claim_turn(session_id)
                .await
                .map_err(|err| match err {
                    ManagerError::Busy(busy) => RpcError::running(busy.to_string()),
                    ManagerError::NotFound(id) => RpcError::not_active(&id),
                    other => RpcError::internal(format!(
                        "cannot claim session {session_id} for a turn: {other}"
                    )),
                })?;
        let log = match claim.reloaded() {
            true => {
                tracing::info!(session = %session_id, "the session changed on another node; reloaded");
                self.logs.reopen(session_id, true).await?
            }
            false => self.logs.get(session_id),
        };
        if claim.is_claimed() {
            let journal = log.journal().clone();
            claim.release_after(move || {
                Box::pin(async move {
                    if !journal.sync(CLAIM_SYNC_WAIT).await {
                        tracing::warn!(session = %journal.session_id(),
                            "the turn's last events were not stored before its claim was given back");
                    }
                })
            });
        }
        Ok((session, log, claim))
    }

    /// [`active`](Self::active), brought up to date first
    /// ([`SessionManager::refresh`]): a session another node changed since this one loaded
    /// it is loaded again, with its event log. For the requests that read a session.
    pub(crate) async fn current(
        &self,
        session_id: &str,
    ) -> Result<(Arc<Session>, Arc<ZLog>), RpcError> {
        self.current_with(session_id, true).await
    }

    /// [`current`](Self::current); a subscription to a log opened again carries over only
    /// when `carry`.
    pub(crate) async fn current_with(
        &self,
        session_id: &str,
        carry: bool,
    ) -> Result<(Arc<Session>, Arc<ZLog>), RpcError> {
        let active = self.active(session_id)?;
        match self.manager.refresh(session_id).await {
            Ok(None) => Ok(active),
            Ok(Some(session)) => {
                tracing::info!(session = %session_id, "the session changed on another node; reloaded");
                Ok((session, self.logs.reopen(session_id, carry).await?))
            }
            Err(err) => Err(RpcError::internal(format!(
                "cannot bring session {session_id} up to date: {err}"
            ))),
        }
    }

    pub(crate) fn active(&self, session_id: &str) -> Result<(Arc<Session>, Arc<ZLog>), RpcError> {
        let session = self
            .manager
            .get(session_id)
            .ok_or_else(|| RpcError::not_active(session_id))?;
        Ok((session, self.logs.get(session_id)))
    }

    /// `(request id, server id)` of a session's unanswered interactions.
    pub(crate) fn pending_of(&self, session_id: &str) -> Vec<(String, String)> {
        let mut ids: Vec<(String, String)> = self
            .pending()
            .iter()
            .filter(|(_, p)| p.session_id == session_id && !p.reply.is_closed())
            .map(|(server_id, p)| (p.request_id.clone(), server_id.clone()))
            .collect();
        ids.sort();
        ids
    }

    pub(crate) fn snapshot(&self, session: &Session, log: &ZLog, limit: Option<usize>) -> Snapshot {
        let pending = self.pending_of(session.id());
        let mut snapshot = snapshot::snapshot(session, log.seq(), &pending, limit);
        snapshot.slash_commands = self.commands.listed(&self.manager, session);
        snapshot::offer_models(&mut snapshot, self.models.listed());
        snapshot
    }

    /// Handles one input line (a request, notification or response).
    pub(crate) async fn handle_line(self: &Arc<Self>, text: &str) {
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
            (id, Some(method)) => self.handle(id, &method, raw.params).await,
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

    /// Handles a request (`id` present) or notification: parsed into a [`ClientRequest`]
    /// first (an unknown method or invalid params are answered as such), then dispatched.
    async fn handle(self: &Arc<Self>, id: Option<RequestId>, method: &str, params: Option<Value>) {
        tracing::debug!(%method, id = ?id, "request");
        let request = match ClientRequest::parse(method, params) {
            Ok(request) => request,
            Err(err) => return self.out.reply(id, Err(err.into())),
        };
        let reply = match request {
            ClientRequest::Create(p) => self.create(p).await,
            ClientRequest::List(p) => self.list(p).await,
            ClientRequest::Resume(p) => self.resume(p).await,
            ClientRequest::Read(p) => self.read(p).await,
            ClientRequest::Messages(p) => self.messages(p).await,
            ClientRequest::Subscribe(p) => return self.subscribe(id, p).await,
            ClientRequest::Events(p) => self.events(p).await,
            ClientRequest::Send(p) => self.send(p).await,
            ClientRequest::Stop(p) => return self.stop(id, p),
            ClientRequest::Steer(p) => self.steer(p),
            ClientRequest::Fork(p) => self.fork(p).await,
            ClientRequest::Compact(p) => self.compact(p).await,
            ClientRequest::Rewind(p) => self.rewind(p).await,
            ClientRequest::Goal(p) => self.goal(p).await,
            ClientRequest::SetMode(p) => self.set_mode(p).await,
            ClientRequest::SetThoughtLevel(p) => self.set_thought_level(p).await,
            ClientRequest::SetModel(p) => self.set_model(p).await,
            ClientRequest::CancelBackgroundTask(p) => self.cancel_background_task(p).await,
            ClientRequest::Subagents(p) => self.subagents(p).await,
            ClientRequest::Close(p) => self.close(p).await,
            ClientRequest::McpList(p) => self.mcp_list(p),
        };
        self.out.reply(id, reply);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn invalid_params_name_the_failing_path() {
        let err = RpcError::from(
            ClientRequest::parse("session/send", Some(json!({"content": "x"})))
                .expect_err("missing id"),
        );
        assert_eq!(err.0.code, codes::INVALID_PARAMS);
        assert!(err.0.message.contains("sessionId"), "{}", err.0.message);
        let err = RpcError::from(
            ClientRequest::parse(
                "session/create",
                Some(json!({"workspace": {"workspacePath": 3}})),
            )
            .expect_err("bad type"),
        );
        assert!(
            err.0
                .message
                .starts_with("Invalid params — workspace.workspacePath:"),
            "{}",
            err.0.message
        );
        let err = RpcError::from(
            ClientRequest::parse("session/read", Some(json!([1]))).expect_err("not an object"),
        );
        assert_eq!(err.0.message, "Invalid params — (root): expected an object");
    }

    #[test]
    fn an_unknown_method_is_method_not_found() {
        let err =
            RpcError::from(ClientRequest::parse("session/nope", None).expect_err("unknown method"));
        assert_eq!(err.0.code, codes::METHOD_NOT_FOUND);
        assert_eq!(err.0.message, "Method not found: session/nope");
        assert!(err.0.data.is_none());
    }
}
