//! The I/O loop: commands read line by line, dispatched without blocking the reader; one
//! worker runs prompts and compactions in FIFO order; one writer owns stdout.
//!
//! ```text
//! stdin ─► reader/dispatcher ──(responses)──────────────┐
//!               │  (jobs, FIFO)                          ▼
//!               └──────────────► worker ──(events)──► writer ─► stdout
//! ```
//!
//! The reader, the writer (with its flush policy and output gate) and the turn driver are
//! agent-host's. The dispatcher answers every command at once, including `get_state` and
//! friends while a prompt runs. `prompt` and `compact` are queued; the worker runs them one
//! at a time, and answers each with `{"started":true}` when its turn starts — after the
//! previous job's `done` (zut-rpc-behaviour.md §1.4) — then drives its
//! [`agent_core::Run`] to the end. Both write through one queue to the single writer task,
//! so lines never interleave and a job's events always follow its response.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

use agent_core::hooks::{HookReport, SessionEnd, SessionEndReason, SessionSource};
use agent_core::sandbox::SandboxReport;
use agent_core::{AbortHandle, Agent, AgentEvent, RunStatus, UserInput};
use agent_host::backpressure::OutputGate;
use agent_host::driver::drive;
use agent_host::lines::{LineError, LineReader};
use agent_host::output::{line_writer, Frames, LineSender};
use agent_mcp::McpManager;
use base64::Engine;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::auth::Token;
use crate::framing::{ESCAPES, MAX_LINE_BYTES};
use crate::processor::{self, EventProcessor, SharedMeter, UsageMeter};
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
    /// The MCP servers (`--mcp-config`), listed by `get_state`; the caller shuts them down
    /// after [`serve`] returns.
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

/// Control of one accepted prompt or compaction.
#[derive(Debug, Default)]
struct JobCtl {
    cancel: CancellationToken,
    /// The run's abort handle once the worker started it.
    run: Mutex<Option<AbortHandle>>,
}

impl JobCtl {
    fn run(&self) -> MutexGuard<'_, Option<AbortHandle>> {
        // Nothing panics while holding this lock.
        self.run.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The job's run has started: an abort asked for before now takes effect at once.
    fn started(&self, handle: AbortHandle) {
        let mut run = self.run();
        if self.cancel.is_cancelled() {
            handle.abort();
        }
        *run = Some(handle);
    }

    fn abort(&self) {
        self.cancel.cancel();
        if let Some(handle) = self.run().as_ref() {
            handle.abort();
        }
    }
}

/// Accepted prompts and compactions, oldest first; the head is the active one (running, or
/// about to be started by the worker).
#[derive(Debug, Clone, Default)]
struct Queue(Arc<Mutex<VecDeque<Arc<JobCtl>>>>);

impl Queue {
    fn lock(&self) -> MutexGuard<'_, VecDeque<Arc<JobCtl>>> {
        // Nothing panics while holding this lock.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// True when the active job exists and has not been aborted.
    fn busy(&self) -> bool {
        self.lock()
            .front()
            .is_some_and(|j| !j.cancel.is_cancelled())
    }

    /// Aborts the active job; queued ones are untouched.
    fn abort_active(&self) {
        let head = self.lock().front().cloned();
        if let Some(head) = head {
            head.abort();
        }
    }

    fn finish(&self, job: &Arc<JobCtl>) {
        self.lock().retain(|j| !Arc::ptr_eq(j, job));
    }
}

enum JobKind {
    Prompt(UserInput),
    Compact,
}

struct Job {
    ctl: Arc<JobCtl>,
    kind: JobKind,
    /// The command (`prompt` or `compact`) and id its `started` response answers.
    command: &'static str,
    id: Option<String>,
}

/// Runs the `session_start` hooks (source `startup`) first, then jobs one at a time:
/// answers each with `started` when it starts, then writes its events. Returns how the
/// last run ended, for the `session_end` hooks.
async fn worker(
    agent: Agent,
    mut jobs: mpsc::UnboundedReceiver<Job>,
    queue: Queue,
    out: Out,
    meter: SharedMeter,
    shutdown: CancellationToken,
) -> Option<RunStatus> {
    // Before the first prompt; commands other than prompts are answered meanwhile. Context
    // the hooks add lands before the first model call.
    log_hooks(
        &agent.session_start(SessionSource::Startup).await,
        "session_start",
    );
    let mut frames = Frames::with_escapes(ESCAPES);
    let mut last_status = None;
    while let Some(job) = jobs.recv().await {
        if shutdown.is_cancelled() {
            // Stopped by a signal: jobs not started yet never start (they were not
            // answered yet either).
            queue.finish(&job.ctl);
            continue;
        }
        // The turn starts now: the previous job's `done` is already queued before this.
        let data = ResponseData::Started(StartedData { started: true });
        out.respond(Response::ok(job.command, job.id, Some(data)));
        let mut run = match job.kind {
            JobKind::Prompt(input) => agent.prompt(input),
            JobKind::Compact => agent.compact(),
        };
        job.ctl.started(run.abort_handle());
        let mut processor = EventProcessor::new(meter.clone());
        drive(&mut run, &out.0, &mut frames, |event, frames| {
            if let AgentEvent::RunFinished { status, .. } = event {
                // Off the queue before `done` is written: a client that reads `done` and
                // asks `get_state` sees `busy` of the next job only.
                queue.finish(&job.ctl);
                last_status = Some(*status);
            }
            if let AgentEvent::SandboxReport(report) = event {
                log_sandbox(report);
            }
            processor.map_into(event, frames)
        })
        .await;
        queue.finish(&job.ctl);
    }
    last_status
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
    let queue = Queue::default();
    let meter = SharedMeter::new(UsageMeter::new(agent.provider().id()));
    let (job_tx, job_rx) = mpsc::unbounded_channel();
    let shutdown = CancellationToken::new();
    let worker = tokio::spawn(worker(
        agent.clone(),
        job_rx,
        queue.clone(),
        out.clone(),
        meter.clone(),
        shutdown.clone(),
    ));
    let mut dispatcher = Dispatcher {
        authed: config.token.is_none(),
        agent,
        config,
        out,
        queue,
        meter,
        jobs: job_tx,
    };
    let mut reader = LineReader::with_limit(input, dispatcher.config.max_line_bytes);
    let mut stop = std::pin::pin!(stop);
    let result = loop {
        let next = tokio::select! {
            line = reader.next_line() => line,
            signal = &mut stop => {
                // Stop: nothing queued starts; the active job ends aborted.
                shutdown.cancel();
                dispatcher.queue.abort_active();
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
    let agent = dispatcher.agent.clone();
    drop(dispatcher);
    let last_status = worker.await.ok().flatten();
    // The session ends with the process: its input ended (or failed auth), or a signal
    // (reason `other`). The hooks are bounded by their own timeouts and kill their
    // process groups.
    let reason = match &result {
        Ok(Ended::Stopped(_)) => SessionEndReason::Other,
        _ => SessionEndReason::Exit,
    };
    let mut end = SessionEnd::new(reason);
    end.last_status = last_status;
    log_hooks(&agent.session_end(end).await, "session_end");
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
    agent: Agent,
    config: ServerConfig,
    out: Out,
    queue: Queue,
    meter: SharedMeter,
    jobs: mpsc::UnboundedSender<Job>,
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
                Ok(input) => return self.start("prompt", id, JobKind::Prompt(input)),
                Err(err) => Response::fail(&command, id, err),
            },
            "compact" => return self.start("compact", id, JobKind::Compact),
            "abort" => {
                // Answer first so the response precedes the aborted run's last events.
                self.out.respond(Response::ok(&command, id, None));
                self.queue.abort_active();
                return Flow::Continue;
            }
            "get_state" => Response::ok(
                &command,
                id,
                Some(ResponseData::State(Box::new(self.state()))),
            ),
            "get_messages" => {
                let messages = self
                    .agent
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
            "clear" => match self.agent.clear().await {
                Ok(()) => Response::ok(&command, id, None),
                Err(err) => Response::fail(&command, id, err.to_string()),
            },
            "set_model" => match self.set_model(&value) {
                Ok(model) => Response::ok(&command, id, Some(ResponseData::Model(model))),
                Err(err) => Response::fail(&command, id, err),
            },
            "set_reasoning" => match self.set_reasoning(&value) {
                Ok(data) => Response::ok(&command, id, Some(ResponseData::Reasoning(data))),
                Err(err) => Response::fail(&command, id, err),
            },
            "get_models" => {
                let models = self
                    .agent
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
        let state = self.agent.state();
        Ok(HelloData {
            protocol_version: PROTOCOL_VERSION,
            version: env!("CARGO_PKG_VERSION").to_string(),
            provider: state.provider,
            model: state.model,
        })
    }

    /// Accepts a prompt or compaction: queues it for the worker, which answers `started`
    /// when it starts it.
    fn start(&mut self, command: &'static str, id: Option<String>, kind: JobKind) -> Flow {
        let ctl = Arc::new(JobCtl::default());
        self.queue.lock().push_back(ctl.clone());
        let job = Job {
            ctl: ctl.clone(),
            kind,
            command,
            id,
        };
        if let Err(mpsc::error::SendError(job)) = self.jobs.send(job) {
            // The worker is gone (it only stops after the dispatcher); never leave the job
            // looking busy.
            self.queue.finish(&ctl);
            let data = ResponseData::Started(StartedData { started: true });
            self.out.respond(Response::ok(command, job.id, Some(data)));
            self.out.event(Event::Error {
                message: "internal error: the worker stopped".into(),
            });
            self.out.event(Event::Done);
        }
        Flow::Continue
    }

    fn state(&self) -> StateData {
        let state = self.agent.state();
        let context = self.agent.context_usage();
        StateData {
            provider: state.provider,
            model: state.model,
            reasoning: reasoning::wire_name(state.reasoning).to_string(),
            cwd: self.config.cwd.clone(),
            message_count: state.message_count,
            busy: self.queue.busy(),
            usage: self.meter.lock().cumulative(&state.usage),
            context: Some(WireContext {
                used: context.used,
                window: context.window,
                percent: context.percent,
            }),
            sandbox: Some(processor::sandbox(&self.agent.sandbox_report())),
            tools: Some(
                self.agent
                    .tool_specs()
                    .into_iter()
                    .map(|spec| spec.name)
                    .collect(),
            ),
            mcp_servers: self
                .config
                .mcp
                .status()
                .iter()
                .map(processor::mcp_server)
                .collect(),
        }
    }

    fn set_model(&self, value: &Value) -> Result<ModelData, String> {
        let params: SetModelParams = params(value)?;
        let model = params.model.unwrap_or_default();
        let provider = self.agent.provider();
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
        self.agent.set_model(model.clone());
        Ok(ModelData { model })
    }

    fn set_reasoning(&self, value: &Value) -> Result<ReasoningData, String> {
        let params: SetReasoningParams = params(value)?;
        let level = reasoning::parse(params.reasoning.as_deref().unwrap_or_default())?;
        self.agent.set_reasoning(level);
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
