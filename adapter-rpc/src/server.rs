//! The I/O loop: commands read line by line, dispatched without blocking the reader; the
//! process's one agent-host [`Session`] runs prompts and compactions in FIFO order; one
//! writer owns stdout.
//!
//! ```text
//! stdin ─► reader/dispatcher ──(responses)───────────────────┐
//!               │  (Session::enqueue_*, FIFO)                  ▼
//!               └──────────► Session turn ──(RpcTurn frames)──► writer ─► stdout
//! ```
//!
//! The reader, the writer (with its flush policy and output gate) and the session with its
//! turn queue are agent-host's: rpc is a one-session host
//! ([`Session::standalone`] over a [`MemoryStorage`], no session files). The dispatcher
//! answers every command at once, including `get_state` and friends while a prompt runs.
//! `prompt` and `compact` are queued on the session; each is answered with
//! `{"started":true}` when its turn starts — after the previous job's `done`
//! (zut-rpc-behaviour.md §1.4) — by its `RpcTurn` observer, which then maps the turn's
//! events ([`RpcMapping`] over the turn's state). Both write through one queue to the
//! single writer task, so lines never interleave and a job's events always follow its
//! response.

use std::future::Future;
use std::sync::Arc;

use agent_core::hooks::{HookReport, SessionEndReason, SessionSource};
use agent_core::sandbox::SandboxReport;
use agent_core::{Agent, AgentEvent, UserInput};
use agent_host::backpressure::OutputGate;
use agent_host::lines::{LineError, LineReader};
use agent_host::output::{line_writer, Frames, LineSender, MAX_BATCH_BYTES};
use agent_host::session::{MemoryStorage, Session, TurnInfo, TurnObserver, TurnOutcome};
use agent_host::turn::{Mapping, TurnState};
use agent_mcp::McpManager;
use base64::Engine;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::auth::Token;
use crate::framing::{ESCAPES, MAX_LINE_BYTES};
use crate::processor::{self, push_frame, RpcMapping, SharedMeter, UsageMeter};
use crate::reasoning;
use crate::wire::{
    Envelope, Event, FrameRef, HelloData, HelloParams, MessagesData, ModelData, ModelsData,
    PongData, PromptParams, ReasoningData, Response, ResponseData, SetModelParams,
    SetReasoningParams, StartedData, StateData, WireContext, PROTOCOL_VERSION,
};

/// The failure text of a command sent before a required `hello`.
pub const AUTH_REQUIRED: &str = "auth required: send hello with token first";
/// The failure text of a `hello` with a missing or wrong token.
pub const INVALID_TOKEN: &str = "invalid token";
/// The failure text of an unknown command.
pub const UNKNOWN_COMMAND: &str = "unknown command";

/// How the server is set up (everything except the agent).
#[derive(Debug)]
pub struct ServerConfig {
    /// The token `hello` must carry; `None` disables auth.
    pub token: Option<Token>,
    /// The working directory reported by `get_state` (`--cwd` verbatim, or the process cwd).
    pub cwd: String,
    /// Models `set_model` accepts besides the provider's catalogue (the startup model).
    pub extra_models: Vec<String>,
    /// Longest accepted input line in bytes.
    pub max_line_bytes: usize,
    /// The MCP servers (`--mcp-config`), listed by `get_state`; the session shuts them down
    /// when it ends, before [`serve`] returns (the caller may shut them down again).
    pub mcp: McpManager,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            token: None,
            cwd: String::new(),
            extra_models: Vec::new(),
            max_line_bytes: MAX_LINE_BYTES,
            mcp: McpManager::empty(),
        }
    }
}

/// Why [`serve`] stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// `hello` carried a missing or wrong token, or a command came before `hello`.
    #[error("rpc: bad auth token")]
    BadAuth,
    /// Reading stdin failed.
    #[error("reading commands: {0}")]
    Read(#[source] std::io::Error),
    /// Writing stdout failed.
    #[error("writing frames: {0}")]
    Write(#[source] std::io::Error),
}

/// Sends frames to the writer.
#[derive(Clone)]
struct Out(LineSender);

impl Out {
    /// Queues one frame. A closed output means the writer failed; its error is reported by
    /// [`serve`].
    fn send(&self, frame: &FrameRef<'_>) {
        if let Err(agent_host::output::SendJsonError::Serialize(err)) =
            self.0.send_json(frame, Some(ESCAPES))
        {
            eprintln!("adapter-rpc: cannot serialise a frame: {err}");
        }
    }

    fn respond(&self, response: Response) {
        self.send(&FrameRef::Response(response));
    }

    fn event(&self, event: Event<'_>) {
        self.send(&FrameRef::Event(event));
    }

    /// Waits while the writer's queue is full (a client that stops reading holds the
    /// reader here, as it holds the turn).
    async fn room(&self) {
        let gate = self.0.gate();
        if !gate.has_room() {
            gate.ready().await;
        }
    }
}

/// One accepted prompt or compaction as its session turn's observer: answers the command
/// with `started` when the turn starts, then writes the turn's events, batched across the
/// events already waiting (the session flushes before every wait), under the writer's
/// output gate.
struct RpcTurn {
    out: Out,
    /// The command (`prompt` or `compact`) and id the `started` response answers.
    command: &'static str,
    id: Option<String>,
    mapping: RpcMapping,
    frames: Frames,
}

impl RpcTurn {
    fn new(out: Out, command: &'static str, id: Option<String>, meter: SharedMeter) -> Self {
        Self {
            out,
            command,
            id,
            mapping: RpcMapping::new(meter),
            frames: Frames::with_escapes(ESCAPES),
        }
    }
}

impl TurnObserver for RpcTurn {
    fn started(&mut self, _session: &Session, _turn: &TurnInfo) {
        // The turn starts now: the previous job's `done` is already queued before this.
        let data = ResponseData::Started(StartedData { started: true });
        self.out
            .respond(Response::ok(self.command, self.id.take(), Some(data)));
    }

    fn observe(
        &mut self,
        _session: &Session,
        _turn: &TurnInfo,
        state: &TurnState,
        event: &AgentEvent,
    ) {
        if let AgentEvent::SandboxReport(report) = event {
            log_sandbox(report);
        }
        let frames = &mut self.frames;
        self.mapping
            .map(state, event, |frame| push_frame(frames, frame));
        if self.frames.len_bytes() >= MAX_BATCH_BYTES {
            self.flush();
        }
    }

    fn finished(&mut self, _session: &Session, _turn: &TurnInfo, _outcome: &TurnOutcome) {}

    fn flush(&mut self) {
        if !self.frames.is_empty() && self.out.0.send_frames(&mut self.frames).is_err() {
            // The writer failed; [`serve`] reports its error. The run still goes on to
            // its end.
            self.frames.clear();
        }
    }

    fn held(&self) -> usize {
        self.frames.lines()
    }

    fn output_gate(&self) -> Option<Arc<OutputGate>> {
        Some(self.out.0.gate().clone())
    }
}

/// Hooks' reports outside a run have no frame in zut's protocol: they go to stderr.
fn log_hooks(reports: &[HookReport], point: &str) {
    for report in reports {
        match &report.reason {
            Some(reason) => eprintln!(
                "adapter-rpc: {point} hook {}: {} ({reason})",
                report.hook,
                report.outcome.as_str()
            ),
            None => eprintln!(
                "adapter-rpc: {point} hook {}: {}",
                report.hook,
                report.outcome.as_str()
            ),
        }
    }
}

/// A sandbox that enforces less than its policy asks is worth a line on stderr (zut has no
/// event for it; `get_state.sandbox` has the whole report).
fn log_sandbox(report: &SandboxReport) {
    if report.falls_short() {
        eprintln!("adapter-rpc: warning: {}", report.summary());
    }
}

/// How [`serve_until`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended<T> {
    /// The input ended and all accepted work was done.
    Input,
    /// `stop` resolved (to this): the active prompt or compaction was aborted and its last
    /// events written; queued ones were dropped.
    Stopped(T),
}

/// Runs the RPC server for `agent` until `input` ends and all accepted work is done.
///
/// The agent's `session_start` hooks (source `startup`) run before the first prompt
/// starts, its `session_end` hooks (reason `exit`; `other` when stopped) once all work is
/// done, before this returns; their reports go to stderr.
///
/// Returns [`ServeError::BadAuth`] right after answering a failed authentication (the caller
/// exits 1); everything else is answered in the protocol and never stops the server.
pub async fn serve<R, W>(
    agent: Agent,
    config: ServerConfig,
    input: R,
    output: W,
) -> Result<(), ServeError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_until(agent, config, input, output, std::future::pending::<()>())
        .await
        .map(|_| ())
}

/// [`serve`] until `stop` resolves (the binary passes SIGTERM/SIGINT): then the input is no
/// longer read, the active prompt or compaction is aborted (its tools' process groups are
/// killed) and its last events (`tool_result`, `turn_end`, `done`) are written, prompts
/// still queued are dropped unanswered, the `session_end` hooks run, and the output is
/// flushed.
pub async fn serve_until<R, W, S>(
    agent: Agent,
    config: ServerConfig,
    input: R,
    output: W,
    stop: S,
) -> Result<Ended<S::Output>, ServeError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
    S: Future,
{
    let (sender, writer) = line_writer(Arc::new(OutputGate::default()));
    let writer = tokio::spawn(writer.run(output));
    let out = Out(sender);
    let meter = SharedMeter::new(UsageMeter::new(agent.provider().id()));
    let storage = Arc::new(MemoryStorage::new());
    let session = Session::standalone(agent, &config.cwd, storage, config.mcp.clone());
    // Before the first prompt; commands other than prompts are answered meanwhile (prompts
    // wait in the session's queue). Context the hooks add lands before the first model
    // call.
    let begun = tokio::spawn({
        let session = session.clone();
        async move {
            log_hooks(
                &session.begin(SessionSource::Startup).await,
                "session_start",
            );
        }
    });
    let mut dispatcher = Dispatcher {
        authed: config.token.is_none(),
        session: session.clone(),
        config,
        out,
        meter,
    };
    let mut reader = LineReader::with_limit(input, dispatcher.config.max_line_bytes);
    let mut stop = std::pin::pin!(stop);
    let result = loop {
        let next = tokio::select! {
            line = reader.next_line() => line,
            signal = &mut stop => {
                // Stop: nothing queued starts (unanswered); the active job ends aborted.
                session.drop_queued();
                session.abort_current();
                break Ok(Ended::Stopped(signal));
            }
        };
        let line = match next {
            Some(Err(LineError::Io(err))) => break Err(ServeError::Read(err)),
            Some(line) => line,
            None => break Ok(Ended::Input),
        };
        dispatcher.out.room().await;
        if let Flow::Exit = dispatcher.line(line).await {
            break Err(ServeError::BadAuth);
        }
    };
    // End of input (or a failed auth, or a stop): let accepted work finish, then drain the
    // writer.
    drop(dispatcher);
    if let Err(err) = begun.await {
        eprintln!("adapter-rpc: the session_start hooks failed: {err}");
    }
    session.idle().await;
    // The session ends with the process: its input ended (or failed auth), or a signal
    // (reason `other`). The hooks are bounded by their own timeouts and kill their
    // process groups.
    let reason = match &result {
        Ok(Ended::Stopped(_)) => SessionEndReason::Other,
        _ => SessionEndReason::Exit,
    };
    log_hooks(&session.close(reason).await, "session_end");
    drop(session);
    let written = match writer.await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(err)) => Err(ServeError::Write(err)),
        Err(join) => Err(ServeError::Write(std::io::Error::other(join))),
    };
    result.and_then(|ended| written.map(|()| ended))
}

enum Flow {
    Continue,
    Exit,
}

struct Dispatcher {
    authed: bool,
    session: Arc<Session>,
    config: ServerConfig,
    out: Out,
    meter: SharedMeter,
}

/// Decodes a command's own fields; a `null` line has none.
fn params<T: DeserializeOwned + Default>(value: &Value) -> Result<T, String> {
    match value {
        Value::Null => Ok(T::default()),
        other => T::deserialize(other).map_err(|e| e.to_string()),
    }
}

impl Dispatcher {
    async fn line(&mut self, line: Result<String, LineError>) -> Flow {
        let text = match line {
            Ok(text) => text,
            Err(LineError::TooLong { limit, .. }) => {
                let error = format!("line too long: a command line may hold at most {limit} bytes");
                self.out.respond(Response::fail("", None, error));
                return Flow::Continue;
            }
            Err(err) => return self.malformed(err),
        };
        if text.trim().is_empty() {
            return Flow::Continue;
        }
        let value: Value = match serde_json::from_str(&text) {
            Ok(value) => value,
            Err(err) => return self.malformed(err),
        };
        if !(value.is_object() || value.is_null()) {
            let kind = match value {
                Value::Array(_) => "an array",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                _ => "a boolean",
            };
            return self.malformed(format!("a command must be a JSON object, not {kind}"));
        }
        let envelope = match params::<Envelope>(&value) {
            Ok(envelope) => envelope,
            Err(err) => return self.malformed(err),
        };
        let command = envelope.kind.unwrap_or_default();
        let id = envelope.id;
        if !self.authed && command != "hello" {
            self.out
                .respond(Response::fail(&command, id, AUTH_REQUIRED));
            return Flow::Exit;
        }
        let response = match command.as_str() {
            "hello" => match self.hello(&value) {
                Ok(data) => Response::ok(&command, id, Some(ResponseData::Hello(data))),
                Err(()) => {
                    self.out
                        .respond(Response::fail(&command, id, INVALID_TOKEN));
                    return Flow::Exit;
                }
            },
            "prompt" => match prompt_input(&value) {
                Ok(input) => return self.start("prompt", id, Some(input)),
                Err(err) => Response::fail(&command, id, err),
            },
            "compact" => return self.start("compact", id, None),
            "abort" => {
                // Answer first so the response precedes the aborted run's last events.
                self.out.respond(Response::ok(&command, id, None));
                self.session.abort_current();
                return Flow::Continue;
            }
            "get_state" => Response::ok(
                &command,
                id,
                Some(ResponseData::State(Box::new(self.state()))),
            ),
            "get_messages" => {
                let messages = self
                    .agent()
                    .messages()
                    .iter()
                    .map(processor::message)
                    .collect();
                Response::ok(
                    &command,
                    id,
                    Some(ResponseData::Messages(MessagesData { messages })),
                )
            }
            "clear" => match self.session.clear().await {
                Ok(()) => Response::ok(&command, id, None),
                Err(err) => Response::fail(&command, id, err.to_string()),
            },
            "set_model" => match self.set_model(&value).await {
                Ok(model) => Response::ok(&command, id, Some(ResponseData::Model(model))),
                Err(err) => Response::fail(&command, id, err),
            },
            "set_reasoning" => match self.set_reasoning(&value).await {
                Ok(data) => Response::ok(&command, id, Some(ResponseData::Reasoning(data))),
                Err(err) => Response::fail(&command, id, err),
            },
            "get_models" => {
                let models = self
                    .agent()
                    .provider()
                    .models()
                    .iter()
                    .map(processor::model)
                    .collect();
                Response::ok(
                    &command,
                    id,
                    Some(ResponseData::Models(ModelsData { models })),
                )
            }
            "ping" => Response::ok(
                &command,
                id,
                Some(ResponseData::Pong(PongData { pong: true })),
            ),
            _ => Response::fail(&command, id, UNKNOWN_COMMAND),
        };
        self.out.respond(response);
        Flow::Continue
    }

    fn malformed(&self, err: impl std::fmt::Display) -> Flow {
        self.out
            .respond(Response::fail("", None, format!("malformed json: {err}")));
        Flow::Continue
    }

    /// Checks the token (when one is required) and returns the hello data.
    fn hello(&mut self, value: &Value) -> Result<HelloData, ()> {
        if !self.authed {
            let params: HelloParams = params(value).unwrap_or_default();
            let ok = match (&self.config.token, params.token) {
                (Some(token), Some(Value::String(candidate))) => token.matches(&candidate),
                (None, _) => true,
                _ => false,
            };
            if !ok {
                return Err(());
            }
            self.authed = true;
        }
        let state = self.agent().state();
        Ok(HelloData {
            protocol_version: PROTOCOL_VERSION,
            version: env!("CARGO_PKG_VERSION").to_string(),
            provider: state.provider,
            model: state.model,
        })
    }

    /// Accepts a prompt (`input`) or compaction (none): queues it on the session, whose
    /// turn answers `started` when it starts.
    fn start(
        &mut self,
        command: &'static str,
        id: Option<String>,
        input: Option<UserInput>,
    ) -> Flow {
        let turn = RpcTurn::new(self.out.clone(), command, id.clone(), self.meter.clone());
        let queued = match input {
            Some(input) => self.session.enqueue_prompt(input, None, Box::new(turn)),
            None => self.session.enqueue_compact(Box::new(turn)),
        };
        if let Err(err) = queued {
            // The session is closed (it only closes after the dispatcher is gone): answer
            // the job as a failed turn, never leave it looking busy.
            let data = ResponseData::Started(StartedData { started: true });
            self.out.respond(Response::ok(command, id, Some(data)));
            self.out.event(Event::Error {
                message: format!("internal error: {err}").into(),
            });
            self.out.event(Event::Done);
        }
        Flow::Continue
    }

    fn agent(&self) -> &Agent {
        self.session.agent()
    }

    fn state(&self) -> StateData {
        let state = self.agent().state();
        let context = self.agent().context_usage();
        StateData {
            provider: state.provider,
            model: state.model,
            reasoning: reasoning::wire_name(state.reasoning).to_string(),
            cwd: self.config.cwd.clone(),
            message_count: state.message_count,
            busy: self.session.busy(),
            usage: self.meter.lock().cumulative(&state.usage),
            context: Some(WireContext {
                used: context.used,
                window: context.window,
                percent: context.percent,
            }),
            sandbox: Some(processor::sandbox(&self.agent().sandbox_report())),
            tools: Some(
                self.agent()
                    .tool_specs()
                    .into_iter()
                    .map(|spec| spec.name)
                    .collect(),
            ),
            mcp_servers: self
                .session
                .mcp()
                .status()
                .iter()
                .map(processor::mcp_server)
                .collect(),
        }
    }

    async fn set_model(&self, value: &Value) -> Result<ModelData, String> {
        let params: SetModelParams = params(value)?;
        let model = params.model.unwrap_or_default();
        let provider = self.agent().provider();
        let catalogue = provider.models();
        let known = !model.is_empty()
            && (catalogue.is_empty()
                || catalogue.iter().any(|m| m.id == model)
                || self.config.extra_models.contains(&model));
        if !known {
            return Err(format!(
                "unknown model {model:?} (provider={:?})",
                provider.id()
            ));
        }
        self.session
            .set_model(model.clone())
            .await
            .map_err(|err| err.to_string())?;
        Ok(ModelData { model })
    }

    async fn set_reasoning(&self, value: &Value) -> Result<ReasoningData, String> {
        let params: SetReasoningParams = params(value)?;
        let level = reasoning::parse(params.reasoning.as_deref().unwrap_or_default())?;
        self.session
            .set_thought_level(level)
            .await
            .map_err(|err| err.to_string())?;
        Ok(ReasoningData {
            reasoning: reasoning::wire_name(level).to_string(),
        })
    }
}

/// Decodes a prompt's text and images.
fn prompt_input(value: &Value) -> Result<UserInput, String> {
    let params: PromptParams = params(value)?;
    let mut input = UserInput::text(params.message.unwrap_or_default());
    for image in params.images.unwrap_or_default() {
        let data = image.data.unwrap_or_default();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.as_bytes())
            .map_err(|err| base64_error(&err, data.len()))?;
        input = input.with_image(image.mime_type.unwrap_or_default(), bytes);
    }
    Ok(input)
}

/// Go's wording for a bad base64 image: `illegal base64 data at input byte N`.
fn base64_error(err: &base64::DecodeError, len: usize) -> String {
    let at = match *err {
        base64::DecodeError::InvalidByte(at, _) | base64::DecodeError::InvalidLastSymbol(at, _) => {
            at
        }
        base64::DecodeError::InvalidLength(_) | base64::DecodeError::InvalidPadding => len,
    };
    format!("illegal base64 data at input byte {at}")
}
