//! The I/O loop: commands read line by line, dispatched without blocking the reader; one
//! worker runs prompts and compactions in FIFO order; one writer owns stdout.
//!
//! ```text
//! stdin ─► reader/dispatcher ──(responses)──────────────┐
//!               │  (jobs, FIFO)                          ▼
//!               └──────────────► worker ──(events)──► writer ─► stdout
//! ```
//!
//! The dispatcher answers every command at once, including `get_state` and friends while a
//! prompt runs. `prompt` and `compact` are answered with `{"started":true}` as soon as they
//! are accepted and queued; the worker then runs them one at a time, draining each
//! [`agent_core::Run`] to its end and writing its events. Both write through one channel to a
//! single writer task, so lines never interleave and a job's events always follow its
//! response.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use agent_core::{Agent, UserInput};
use base64::Engine;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::auth::Token;
use crate::framing::{self, to_line, Line, LineReader, MAX_LINE_BYTES};
use crate::processor::{self, EventProcessor, SharedMeter, UsageMeter};
use crate::reasoning;
use crate::wire::{
    Envelope, Event, Frame, HelloData, HelloParams, MessagesData, ModelData, ModelsData, PongData,
    PromptParams, ReasoningData, Response, ResponseData, SetModelParams, SetReasoningParams,
    StartedData, StateData, PROTOCOL_VERSION,
};

/// Frames buffered between the producers and the writer before producers wait.
const OUT_BUFFER: usize = 1024;
/// Most bytes of events the worker gathers before handing them to the writer.
const MAX_BATCH_BYTES: usize = 32 * 1024;
/// Most events taken from the run at once.
const MAX_BATCH_EVENTS: usize = 256;

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
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            token: None,
            cwd: String::new(),
            extra_models: Vec::new(),
            max_line_bytes: MAX_LINE_BYTES,
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

/// Sends frames to the writer task.
#[derive(Clone)]
struct Out(mpsc::Sender<Vec<u8>>);

impl Out {
    async fn send(&self, frame: Frame) {
        match to_line(&frame) {
            // A closed channel means the writer failed; its error is reported by `serve`.
            Ok(line) => {
                let _ = self.0.send(line).await;
            }
            Err(err) => eprintln!("adapter-rpc: cannot serialise a frame: {err}"),
        }
    }

    /// Sends already-serialised lines.
    async fn send_bytes(&self, lines: Vec<u8>) {
        // A closed channel means the writer failed; its error is reported by `serve`.
        let _ = self.0.send(lines).await;
    }

    async fn respond(&self, response: Response) {
        self.send(Frame::Response(response)).await;
    }

    async fn event(&self, event: Event) {
        self.send(Frame::Event(event)).await;
    }
}

/// Appends `frame` as one line to `batch` (a frame that cannot be serialised is reported
/// on stderr and left out).
fn append_line(batch: &mut Vec<u8>, frame: &Frame) {
    if let Err(err) = framing::append_line(frame, batch) {
        eprintln!("adapter-rpc: cannot serialise a frame: {err}");
    }
}

/// Writes lines to `output`, flushing whenever no further line is waiting.
async fn write_frames<W: AsyncWrite + Unpin>(
    mut rx: mpsc::Receiver<Vec<u8>>,
    output: W,
) -> std::io::Result<()> {
    let mut output = tokio::io::BufWriter::new(output);
    while let Some(line) = rx.recv().await {
        output.write_all(&line).await?;
        while let Ok(line) = rx.try_recv() {
            output.write_all(&line).await?;
        }
        output.flush().await?;
    }
    output.flush().await?;
    output.shutdown().await
}

/// Control of one accepted prompt or compaction.
#[derive(Debug, Default)]
struct JobCtl {
    cancel: CancellationToken,
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
        if let Some(head) = self.lock().front() {
            head.cancel.cancel();
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
}

/// Runs jobs one at a time, writing their events.
async fn worker(
    agent: Agent,
    mut jobs: mpsc::UnboundedReceiver<Job>,
    queue: Queue,
    out: Out,
    meter: SharedMeter,
) {
    while let Some(job) = jobs.recv().await {
        let mut run = match job.kind {
            JobKind::Prompt(input) => agent.prompt(input),
            JobKind::Compact => agent.compact(),
        };
        let abort = run.abort_handle();
        let mut processor = EventProcessor::new(meter.clone());
        let mut events = Vec::with_capacity(MAX_BATCH_EVENTS);
        let mut batch = Vec::new();
        let mut ended = false;
        while !ended {
            tokio::select! {
                biased;
                _ = job.ctl.cancel.cancelled(), if !abort.is_aborted() => abort.abort(),
                // This event and every one already waiting go to the writer as one message:
                // one channel hop per burst instead of one per frame.
                n = run.recv_many(&mut events, MAX_BATCH_EVENTS) => {
                    ended = n == 0;
                    for event in events.drain(..) {
                        if let Some(event) = processor.process(event) {
                            append_line(&mut batch, &Frame::Event(event));
                        }
                        if batch.len() >= MAX_BATCH_BYTES {
                            out.send_bytes(std::mem::take(&mut batch)).await;
                        }
                    }
                    if !batch.is_empty() {
                        // The next burst is likely the size of this one.
                        let next = Vec::with_capacity(batch.len());
                        out.send_bytes(std::mem::replace(&mut batch, next)).await;
                    }
                }
            }
        }
        queue.finish(&job.ctl);
    }
}

/// Runs the RPC server for `agent` until `input` ends and all accepted work is done.
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
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out_tx, out_rx) = mpsc::channel(OUT_BUFFER);
    let writer = tokio::spawn(write_frames(out_rx, output));
    let out = Out(out_tx);
    let queue = Queue::default();
    let meter = SharedMeter::new(UsageMeter::new(agent.provider().id()));
    let (job_tx, job_rx) = mpsc::unbounded_channel();
    let worker = tokio::spawn(worker(
        agent.clone(),
        job_rx,
        queue.clone(),
        out.clone(),
        meter.clone(),
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
    let mut reader = LineReader::new(input, dispatcher.config.max_line_bytes);
    let result = loop {
        let line = match reader.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => break Ok(()),
            Err(err) => break Err(ServeError::Read(err)),
        };
        if let Flow::Exit = dispatcher.line(line).await {
            break Err(ServeError::BadAuth);
        }
    };
    // End of input (or a failed auth): let queued work finish, then drain the writer.
    drop(dispatcher);
    let _ = worker.await;
    let written = match writer.await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(err)) => Err(ServeError::Write(err)),
        Err(join) => Err(ServeError::Write(std::io::Error::other(join))),
    };
    result.and(written)
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
    async fn line(&mut self, line: Line) -> Flow {
        let bytes = match line {
            Line::TooLong => {
                let error = format!(
                    "line too long: a command line may hold at most {} bytes",
                    self.config.max_line_bytes
                );
                self.out.respond(Response::fail("", None, error)).await;
                return Flow::Continue;
            }
            Line::Data(bytes) => bytes,
        };
        let blank = match std::str::from_utf8(&bytes) {
            Ok(text) => text.trim().is_empty(),
            Err(_) => false,
        };
        if blank {
            return Flow::Continue;
        }
        let value: Value = match serde_json::from_slice(&bytes) {
            Ok(value) => value,
            Err(err) => return self.malformed(err).await,
        };
        if !(value.is_object() || value.is_null()) {
            let kind = match value {
                Value::Array(_) => "an array",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                _ => "a boolean",
            };
            return self
                .malformed(format!("a command must be a JSON object, not {kind}"))
                .await;
        }
        let envelope = match params::<Envelope>(&value) {
            Ok(envelope) => envelope,
            Err(err) => return self.malformed(err).await,
        };
        let command = envelope.kind.unwrap_or_default();
        let id = envelope.id;
        if !self.authed && command != "hello" {
            self.out
                .respond(Response::fail(&command, id, AUTH_REQUIRED))
                .await;
            return Flow::Exit;
        }
        let response = match command.as_str() {
            "hello" => match self.hello(&value) {
                Ok(data) => Response::ok(&command, id, Some(ResponseData::Hello(data))),
                Err(()) => {
                    self.out
                        .respond(Response::fail(&command, id, INVALID_TOKEN))
                        .await;
                    return Flow::Exit;
                }
            },
            "prompt" => match prompt_input(&value) {
                Ok(input) => return self.start(&command, id, JobKind::Prompt(input)).await,
                Err(err) => Response::fail(&command, id, err),
            },
            "compact" => return self.start(&command, id, JobKind::Compact).await,
            "abort" => {
                // Answer first so the response precedes the aborted run's last events.
                self.out.respond(Response::ok(&command, id, None)).await;
                self.queue.abort_active();
                return Flow::Continue;
            }
            "get_state" => Response::ok(&command, id, Some(ResponseData::State(self.state()))),
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
        self.out.respond(response).await;
        Flow::Continue
    }

    async fn malformed(&self, err: impl std::fmt::Display) -> Flow {
        self.out
            .respond(Response::fail("", None, format!("malformed json: {err}")))
            .await;
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

    /// Accepts a prompt or compaction: answers `started`, then queues it for the worker.
    async fn start(&mut self, command: &str, id: Option<String>, kind: JobKind) -> Flow {
        let ctl = Arc::new(JobCtl::default());
        self.queue.lock().push_back(ctl.clone());
        let data = ResponseData::Started(StartedData { started: true });
        self.out
            .respond(Response::ok(command, id, Some(data)))
            .await;
        if self
            .jobs
            .send(Job {
                ctl: ctl.clone(),
                kind,
            })
            .is_err()
        {
            // The worker is gone (it only stops after the dispatcher); never leave the job
            // looking busy.
            self.queue.finish(&ctl);
            self.out
                .event(Event::Error {
                    message: "internal error: the worker stopped".into(),
                })
                .await;
            self.out.event(Event::Done).await;
        }
        Flow::Continue
    }

    fn state(&self) -> StateData {
        let state = self.agent.state();
        StateData {
            provider: state.provider,
            model: state.model,
            reasoning: reasoning::wire_name(state.reasoning).to_string(),
            cwd: self.config.cwd.clone(),
            message_count: state.message_count,
            busy: self.queue.busy(),
            usage: self.meter.lock().cumulative(&state.usage),
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
