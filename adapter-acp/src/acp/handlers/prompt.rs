//! `session/prompt` and `session/cancel`: a prompt starts a turn whose observer
//! ([`AcpTurn`]) streams `session/update`s and answers the request when the turn ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use agent_client_protocol::v1::schema::{
    ContentBlock as AcpBlock, CurrentModeUpdate, Meta, PromptRequest, PromptResponse, SessionId,
    SessionUpdate, StopReason as AcpStop,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Client, Error, Responder, V1};
use agent_core::{
    event::{RunKind, StopReason as CoreStop},
    AgentEvent, UserInput,
};
use agent_host::backpressure::OutputGate;
use agent_host::output::Frames;
use agent_host::session::{Session, SessionMode, TurnInfo, TurnObserver, TurnOutcome};
use agent_host::turn::{Mapping, TurnState};
use serde::Serialize;

use super::commands;
use super::config;
use super::mentions;
use super::sessions::active;
use super::{
    hold_update, internal, invalid_params, invalid_request, notify, session_not_found, Shared,
};
use crate::acp::mapping::{self, AcpMapping, TurnEnd};
use agent_host::session::ManagerError;

/// The turn's usage, as `_meta.usage` of the prompt's response.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UsageMeta {
    input_tokens: u64,
    output_tokens: u64,
    cached_read_tokens: u64,
    total_tokens: u64,
    model_calls: u32,
    tool_calls: u32,
}

/// The `_meta` of a prompt's response: `{"usage": …}`.
fn usage_meta(outcome: &TurnOutcome) -> Option<Meta> {
    let usage = &outcome.usage;
    let meta = UsageMeta {
        input_tokens: usage.prompt_tokens(),
        output_tokens: usage.output,
        cached_read_tokens: usage.cache_read,
        total_tokens: usage.total_tokens(),
        model_calls: outcome.model_calls,
        tool_calls: outcome.tool_calls,
    };
    mapping::meta::meta("usage", meta)
}

/// `session/cancel`: marks the running prompt cancelled and stops its turn.
pub(super) fn cancel(s: &Shared, session_id: &str) {
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
pub(super) struct ReplySlot(Arc<Mutex<Reply>>);

impl ReplySlot {
    fn lock(&self) -> MutexGuard<'_, Reply> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn attach(&self, responder: Responder<PromptResponse, V1>) {
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

/// A `session/prompt` taken in: its session is active, its slash command expanded, its
/// blocks a valid input, and the session's prompt slot reserved (a `session/cancel` from
/// now on is not lost, and a second prompt is refused).
pub(super) struct Prepared {
    id: String,
    session: Arc<Session>,
    blocks: Vec<AcpBlock>,
    /// The input, when nothing is left to read.
    input: Option<UserInput>,
    cancelled: Arc<AtomicBool>,
}

impl Prepared {
    /// Whether the prompt mentions something to read first (a `resource_link`), which may
    /// ask the client: it must then start from a task of its own, leaving the connection's
    /// dispatch free to receive the client's answers.
    pub(super) fn reads(&self) -> bool {
        self.input.is_none()
    }
}

/// Takes in a `session/prompt` (see [`Prepared`]).
pub(super) async fn prepare(
    s: &Arc<Shared>,
    cx: &ConnectionTo<Client>,
    req: PromptRequest,
) -> Result<Prepared, Error> {
    let id = req.session_id.0.to_string();
    let session = active(s, &id)?;
    // `/name args` naming one of the session's commands goes to the model expanded.
    let blocks = commands::expand(s, cx, &session, &req.prompt)
        .await?
        .unwrap_or(req.prompt);
    let input = mapping::prompt_input(&blocks, &HashMap::new())
        .map_err(|e| invalid_params(e.to_string()))?;
    let input = (!mentions::any(&blocks)).then_some(input);
    let cancelled = Arc::new(AtomicBool::new(false));
    {
        // Registered before the turn starts so a quick cancel is never lost.
        let mut cancels = s.cancels();
        if cancels.contains_key(&id) {
            return Err(invalid_request(format!(
                "a prompt is already running in session {id}"
            )));
        }
        cancels.insert(id.clone(), cancelled.clone());
    }
    Ok(Prepared {
        id,
        session,
        blocks,
        input,
        cancelled,
    })
}

/// Starts the turn of `prepared` (reading what it mentions first), after claiming the
/// session ([`SessionManager::claim_turn`](agent_host::session::SessionManager::claim_turn)):
/// a turn running on it here or on another node sharing the storage is `invalid_request`
/// ("prompt is running: …", as for a second prompt in this process); a failing storage is
/// an internal error naming it. A prompt cancelled while its mentions were read ends
/// `cancelled` without a turn.
pub(super) async fn start_prompt(
    s: &Arc<Shared>,
    cx: &ConnectionTo<Client>,
    prepared: Prepared,
) -> Result<ReplySlot, Error> {
    let id = prepared.id.clone();
    let started = start(s, cx, prepared).await;
    if started.is_err() {
        s.cancels().remove(&id);
    }
    started
}

async fn start(
    s: &Arc<Shared>,
    cx: &ConnectionTo<Client>,
    prepared: Prepared,
) -> Result<ReplySlot, Error> {
    let Prepared {
        id,
        session,
        blocks,
        input,
        cancelled,
    } = prepared;
    let input = match input {
        Some(input) => input,
        None => {
            let read = mentions::read_links(s, &session, &blocks).await;
            mapping::prompt_input(&blocks, &read).map_err(|e| invalid_params(e.to_string()))?
        }
    };
    let reply = ReplySlot::default();
    if cancelled.load(Ordering::SeqCst) {
        s.cancels().remove(&id);
        reply.answer(Ok(PromptResponse::new(AcpStop::Cancelled)));
        return Ok(reply);
    }
    let (session, claim) = s.manager.claim_turn(&id).await.map_err(|err| match err {
        ManagerError::Busy(busy) => invalid_request(busy.to_string()),
        ManagerError::NotFound(id) => session_not_found(&id),
        other => internal(format!("cannot claim session {id} for a prompt: {other}")),
    })?;
    let meta = session.meta();
    let observer = AcpTurn {
        shared: s.clone(),
        cx: cx.clone(),
        session_id: id.clone(),
        sid: SessionId::new(id.as_str()),
        // The session's MCP servers describe their tools (none configured: nothing asked).
        mapping: AcpMapping::new(&meta.workspace_path)
            .mcp(Some(session.mcp().clone()).filter(|m| !m.is_empty())),
        stop: None,
        mode: meta.mode,
        cancelled,
        reply: reply.clone(),
        frames: Frames::new(),
    };
    // Counted before the turn starts: it may finish (and answer) at once.
    s.unanswered.send_modify(|n| *n += 1);
    match session.start_prompt(input, None, claim.observe(&session, Box::new(observer))) {
        Ok(_) => Ok(reply),
        Err(err) => {
            s.answered();
            Err(invalid_request(err.to_string()))
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
    mapping: AcpMapping,
    /// The turn's stop so far ([`mapping::stop_reason`] of its state), for the answer.
    stop: Option<CoreStop>,
    mode: SessionMode,
    cancelled: Arc<AtomicBool>,
    reply: ReplySlot,
    /// The updates of the events already waiting, held (with an outbox) until the session
    /// flushes before its next wait, then queued as one message.
    frames: Frames,
}

impl AcpTurn {
    /// One update of the turn: held for the next flush with an outbox, else sent through
    /// the SDK.
    fn send(&mut self, update: SessionUpdate) {
        match &self.shared.outbox {
            Some(_) => hold_update(&mut self.frames, &self.sid, update),
            None => notify(&self.shared, &self.cx, &self.sid, update),
        }
    }
}

impl TurnObserver for AcpTurn {
    fn output_gate(&self) -> Option<Arc<OutputGate>> {
        self.shared.output_gate()
    }

    fn flush(&mut self) {
        if let Some(outbox) = &self.shared.outbox {
            if let Err(err) = outbox.send_frames(&mut self.frames) {
                tracing::debug!(session = %self.session_id, error = %err, "cannot send session/update");
                self.frames.clear();
            }
        }
    }

    fn held(&self) -> usize {
        self.frames.lines()
    }

    fn started(&mut self, session: &Session, _turn: &TurnInfo) {
        // The first prompt gives the session its title.
        if let Some(update) = self.shared.titles.update(session) {
            self.send(update);
        }
    }

    fn observe(
        &mut self,
        session: &Session,
        _turn: &TurnInfo,
        state: &TurnState,
        event: &AgentEvent,
    ) {
        let (mapping, frames, sid) = (&mut self.mapping, &mut self.frames, &self.sid);
        // A call running in a client terminal keeps it in its content.
        let (terminals, id) = (&self.shared.client.terminals, &self.session_id);
        match &self.shared.outbox {
            Some(_) => mapping.map(state, event, |update| {
                hold_update(frames, sid, terminals.keep_shown(id, update))
            }),
            None => {
                let (shared, cx) = (&self.shared, &self.cx);
                mapping.map(state, event, |update| {
                    notify(shared, cx, sid, terminals.keep_shown(id, update))
                })
            }
        };
        self.stop = mapping::stop_reason(state);
        // The sub-agents this prompt starts, at any depth, for their permission requests.
        match event.innermost() {
            AgentEvent::SubagentStarted { task_id, .. } => {
                self.shared.tasks.add(task_id.clone(), &self.session_id)
            }
            AgentEvent::SubagentFinished { task_id, .. } => self.shared.tasks.remove(task_id),
            _ => {}
        }
        match event {
            AgentEvent::ToolCall { id, .. } => {
                // The call's `tool_call` goes out before any permission request for it.
                self.flush();
                self.shared.announced.add(&self.session_id, id);
            }
            AgentEvent::ToolResult { .. } => {
                // A tool (exit_plan_mode) may have changed the mode.
                let mode = session.meta().mode;
                if mode != self.mode {
                    self.mode = mode;
                    self.send(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
                        mode.as_str(),
                    )));
                    self.send(config::changed(&self.shared, session));
                }
            }
            _ => {}
        }
    }

    fn finished(&mut self, _session: &Session, turn: &TurnInfo, outcome: &TurnOutcome) {
        // Every update of the turn goes out before its answer.
        self.flush();
        self.shared.cancels().remove(&self.session_id);
        self.shared.announced.forget_session(&self.session_id);
        self.shared
            .client
            .terminals
            .forget_session(&self.session_id);
        if turn.kind != RunKind::Prompt {
            return self.shared.answered();
        }
        let error = outcome.error.as_ref().map(|(code, m)| (*code, m.as_str()));
        let end = mapping::turn_end(
            outcome.status,
            self.stop,
            error,
            self.cancelled.load(Ordering::SeqCst),
        );
        let answer = match end {
            TurnEnd::Stop(reason) => Ok(PromptResponse::new(reason).meta(usage_meta(outcome))),
            TurnEnd::Failed(message) => Err(internal(message)),
        };
        self.reply.answer(answer);
        self.shared.answered();
    }
}
