//! A provider that replays a script of model turns.
//!
//! Each model call consumes the next [`Turn`]: text and reasoning chunks, tool calls with
//! streamed argument fragments, usage, a stop reason, errors and delays, in the order given.
//! Scripts are built in code or read from JSON:
//!
//! ```json
//! {"model": "scripted-demo", "turns": [
//!   {"steps": [{"reasoning": "Let me look."},
//!              {"tool_call": {"id": "call_1", "name": "read_file", "args": ["{\"path\":", "\"README.md\"}"]}}]},
//!   {"steps": [{"text": "Done."}, {"usage": {"input": 120, "output": 8}}]}
//! ]}
//! ```
//!
//! Every request the provider receives is recorded, so tests can assert what the agent sent.
//!
//! Structured output: a request with an [`agent_core::provider::OutputSchema`] is answered like any
//! other, so its answer is the turn's text; script the JSON (or invalid JSON, to exercise a
//! repair turn) as a text step. The schema is recorded with the request.

use std::collections::VecDeque;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use agent_core::{
    provider::{
        ModelInfo, Pricing, ProviderError, ProviderErrorKind, ProviderEvent, ProviderRequest,
        ProviderStop, ProviderStream,
    },
    Provider, Usage,
};
use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};

/// Model id the scripted provider reports by default.
pub const DEFAULT_MODEL: &str = "scripted-demo";

/// One step of a scripted turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// A chunk of answer text.
    Text(String),
    /// A chunk of reasoning text.
    Reasoning(String),
    /// Ends the current reasoning block with an optional signature.
    ReasoningEnd {
        /// Signature to attach.
        #[serde(default)]
        signature: Option<String>,
    },
    /// A tool call, its arguments streamed as the given fragments.
    ToolCall {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Argument text fragments; their concatenation is the JSON arguments.
        #[serde(default)]
        args: Vec<String>,
    },
    /// Token usage of this call.
    Usage(ScriptUsage),
    /// An explicit stop reason (otherwise `tool_use` when the turn has calls, else `end_turn`).
    Stop(ProviderStop),
    /// Waits before the next step.
    DelayMs(u64),
    /// Fails the stream here.
    Error {
        /// Error category.
        #[serde(default = "default_error_kind")]
        kind: ProviderErrorKind,
        /// Message.
        message: String,
    },
}

fn default_error_kind() -> ProviderErrorKind {
    ProviderErrorKind::Server
}

/// Usage figures in a script.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptUsage {
    /// Uncached input tokens.
    #[serde(default)]
    pub input: u64,
    /// Output tokens.
    #[serde(default)]
    pub output: u64,
    /// Reasoning tokens.
    #[serde(default)]
    pub reasoning: Option<u64>,
    /// Cache-read tokens.
    #[serde(default)]
    pub cache_read: u64,
    /// Cache-write tokens.
    #[serde(default)]
    pub cache_write: u64,
}

impl From<ScriptUsage> for Usage {
    fn from(u: ScriptUsage) -> Self {
        Usage {
            input: u.input,
            output: u.output,
            reasoning: u.reasoning,
            cache_read: u.cache_read,
            cache_write: u.cache_write,
            cost_usd: None,
        }
    }
}

/// One scripted model call.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Steps in order.
    pub steps: Vec<Step>,
}

impl Turn {
    /// An empty turn (the model says nothing).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds any step.
    pub fn step(mut self, step: Step) -> Self {
        self.steps.push(step);
        self
    }

    /// Adds a text chunk.
    pub fn text(self, text: impl Into<String>) -> Self {
        self.step(Step::Text(text.into()))
    }

    /// Adds a reasoning chunk.
    pub fn reasoning(self, text: impl Into<String>) -> Self {
        self.step(Step::Reasoning(text.into()))
    }

    /// Adds a tool call whose arguments arrive in one fragment.
    pub fn tool_call(
        self,
        id: impl Into<String>,
        name: impl Into<String>,
        args: impl Into<String>,
    ) -> Self {
        self.step(Step::ToolCall {
            id: id.into(),
            name: name.into(),
            args: vec![args.into()],
        })
    }

    /// Adds a tool call whose arguments arrive in several fragments.
    pub fn tool_call_chunks<S: Into<String>>(
        self,
        id: impl Into<String>,
        name: impl Into<String>,
        fragments: impl IntoIterator<Item = S>,
    ) -> Self {
        self.step(Step::ToolCall {
            id: id.into(),
            name: name.into(),
            args: fragments.into_iter().map(Into::into).collect(),
        })
    }

    /// Adds usage figures.
    pub fn usage(self, input: u64, output: u64) -> Self {
        self.step(Step::Usage(ScriptUsage {
            input,
            output,
            ..ScriptUsage::default()
        }))
    }

    /// Adds a stop reason.
    pub fn stop(self, stop: ProviderStop) -> Self {
        self.step(Step::Stop(stop))
    }

    /// Adds a delay.
    pub fn delay(self, delay: Duration) -> Self {
        self.step(Step::DelayMs(
            u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
        ))
    }

    /// Fails the stream at this point.
    pub fn error(self, kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        self.step(Step::Error {
            kind,
            message: message.into(),
        })
    }
}

/// A whole script, as read from JSON.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Model id to report (default [`DEFAULT_MODEL`]).
    #[serde(default)]
    pub model: Option<String>,
    /// Turns in order.
    pub turns: Vec<Turn>,
}

/// Reading a script failed.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file could not be read.
    #[error("cannot read script {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The JSON is not a script.
    #[error("invalid script {path}: {source}")]
    Json {
        /// The file (or `<inline>`).
        path: String,
        /// The cause.
        source: serde_json::Error,
    },
}

/// The demo script used by the offline examples and binaries.
pub const DEMO_SCRIPT: &str = include_str!("../scripts/demo.json");

struct Shared {
    turns: VecDeque<Turn>,
    served: usize,
    requests: Vec<ProviderRequest>,
}

/// Replays scripted turns; clones share the same script and request log.
#[derive(Clone)]
pub struct ScriptedProvider {
    model: String,
    shared: Arc<Mutex<Shared>>,
}

impl std::fmt::Debug for ScriptedProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedProvider")
            .field("model", &self.model)
            .field("turns_left", &self.lock().turns.len())
            .finish()
    }
}

impl ScriptedProvider {
    /// A provider that plays `turns` in order, one per model call.
    pub fn new(turns: impl IntoIterator<Item = Turn>) -> Self {
        Self::from_script(Script {
            model: None,
            turns: turns.into_iter().collect(),
        })
    }

    /// A provider playing `script`.
    pub fn from_script(script: Script) -> Self {
        Self {
            model: script.model.unwrap_or_else(|| DEFAULT_MODEL.to_string()),
            shared: Arc::new(Mutex::new(Shared {
                turns: script.turns.into(),
                served: 0,
                requests: Vec::new(),
            })),
        }
    }

    /// Parses a script from JSON text.
    pub fn from_json(json: &str) -> Result<Self, ScriptError> {
        serde_json::from_str(json)
            .map(Self::from_script)
            .map_err(|source| ScriptError::Json {
                path: "<inline>".into(),
                source,
            })
    }

    /// Reads a script from a JSON file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ScriptError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Io {
            path: path.display().to_string(),
            source,
        })?;
        serde_json::from_str(&text)
            .map(Self::from_script)
            .map_err(|source| ScriptError::Json {
                path: path.display().to_string(),
                source,
            })
    }

    /// The built-in demo: reasoning, a `list_dir` tool call, then an answer.
    pub fn demo() -> Self {
        // The demo script is compiled in and covered by a test; fall back to an empty script
        // rather than panic if it were ever broken.
        Self::from_json(DEMO_SCRIPT).unwrap_or_else(|_| Self::new([]))
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<ProviderRequest> {
        self.lock().requests.clone()
    }

    /// Turns not yet played.
    pub fn remaining(&self) -> usize {
        self.lock().turns.len()
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A turn being played: events of the current step, the steps left, and the stop to add
/// at the end when the script names none.
struct Playback {
    pending: VecDeque<Item>,
    steps: std::vec::IntoIter<Step>,
    final_stop: Option<ProviderStop>,
    /// The delay being waited out, if any.
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

// A hand-written stream rather than `futures::stream::unfold`: unfold moves the whole state
// into and out of a fresh future for every event, which was a fifth of the agent loop's cost
// per text delta in the benches.
impl Stream for Playback {
    type Item = Result<ProviderEvent, ProviderError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(sleep) = &mut this.sleep {
                ready!(sleep.as_mut().poll(cx));
                this.sleep = None;
            }
            let item = match this.pending.pop_front() {
                Some(item) => item,
                None => match this.steps.next() {
                    // The common step, without a round trip through `pending`.
                    Some(Step::Text(text)) => Item::Event(ProviderEvent::TextDelta(text)),
                    Some(step) => {
                        expand(step, &mut this.pending);
                        continue;
                    }
                    None => match this.final_stop.take() {
                        Some(stop) => Item::Event(ProviderEvent::Stop(stop)),
                        None => return Poll::Ready(None),
                    },
                },
            };
            match item {
                Item::Event(event) => return Poll::Ready(Some(Ok(event))),
                Item::Delay(delay) => this.sleep = Some(Box::pin(tokio::time::sleep(delay))),
                Item::Error(err) => {
                    this.pending.clear();
                    this.steps = Vec::new().into_iter();
                    this.final_stop = None;
                    return Poll::Ready(Some(Err(err)));
                }
            }
        }
    }
}

/// The provider events of one step.
fn expand(step: Step, events: &mut VecDeque<Item>) {
    match step {
        Step::Text(text) => events.push_back(Item::Event(ProviderEvent::TextDelta(text))),
        Step::Reasoning(text) => events.push_back(Item::Event(ProviderEvent::ReasoningDelta(text))),
        Step::ReasoningEnd { signature } => {
            events.push_back(Item::Event(ProviderEvent::ReasoningEnd {
                signature,
                opaque: None,
            }))
        }
        Step::ToolCall { id, name, args } => {
            events.push_back(Item::Event(ProviderEvent::ToolCallStart {
                id: id.clone(),
                name,
            }));
            for delta in args {
                events.push_back(Item::Event(ProviderEvent::ToolCallDelta {
                    id: id.clone(),
                    delta,
                }));
            }
            events.push_back(Item::Event(ProviderEvent::ToolCallEnd { id }));
        }
        Step::Usage(usage) => events.push_back(Item::Event(ProviderEvent::Usage(usage.into()))),
        Step::Stop(stop) => events.push_back(Item::Event(ProviderEvent::Stop(stop))),
        Step::DelayMs(ms) => events.push_back(Item::Delay(Duration::from_millis(ms))),
        Step::Error { kind, message } => events.push_back(Item::Error(
            ProviderError::new(kind, message).retryable(false),
        )),
    }
}

impl Provider for ScriptedProvider {
    fn id(&self) -> &str {
        "scripted"
    }

    fn stream(&self, request: ProviderRequest) -> ProviderStream {
        let turn = {
            let mut shared = self.lock();
            shared.requests.push(request);
            shared.served += 1;
            shared.turns.pop_front().map(|t| (t, shared.served))
        };
        let Some((turn, _)) = turn else {
            let served = self.lock().served - 1;
            let err = ProviderError::new(
                ProviderErrorKind::Other,
                format!("scripted provider: the script has no turn left (played {served})"),
            )
            .retryable(false);
            return futures::stream::iter([
                Ok(ProviderEvent::RequestStarted {
                    attempt: 1,
                    max_attempts: 1,
                }),
                Err(err),
            ])
            .boxed();
        };
        let has_calls = turn
            .steps
            .iter()
            .any(|s| matches!(s, Step::ToolCall { .. }));
        let has_stop = turn.steps.iter().any(|s| matches!(s, Step::Stop(_)));
        let mut pending: VecDeque<Item> = VecDeque::new();
        pending.push_back(Item::Event(ProviderEvent::RequestStarted {
            attempt: 1,
            max_attempts: 1,
        }));
        pending.push_back(Item::Event(ProviderEvent::ResponseStarted));
        let final_stop = (!has_stop).then_some(match has_calls {
            true => ProviderStop::ToolUse,
            false => ProviderStop::EndTurn,
        });
        // Steps are turned into events as the stream is read, not all up front, so a long
        // script is not held twice.
        let state = Playback {
            pending,
            steps: turn.steps.into_iter(),
            final_stop,
            sleep: None,
        };
        Box::pin(state)
    }

    /// The scripted model only. Its prices are fictitious (no vendor sells this model): they
    /// exist so that the front ends' cost reporting runs offline. Any other model id is
    /// unknown to this provider, so it is not priced.
    fn models(&self) -> Vec<ModelInfo> {
        vec![ModelInfo {
            id: self.model.clone(),
            provider: "scripted".into(),
            context_window: 200_000,
            max_output: 8_192,
            reasoning: true,
            pricing: Some(Pricing {
                input: 1.0,
                output: 2.0,
                cache_read: 0.1,
                cache_write: 1.25,
            }),
        }]
    }
}

enum Item {
    Event(ProviderEvent),
    Delay(Duration),
    Error(ProviderError),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(provider: &ScriptedProvider) -> Vec<Result<ProviderEvent, ProviderError>> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        rt.block_on(provider.stream(request()).collect())
    }

    fn request() -> ProviderRequest {
        ProviderRequest {
            model: DEFAULT_MODEL.into(),
            system: None,
            messages: vec![],
            tools: vec![],
            reasoning: Default::default(),
            max_output_tokens: None,
            output_schema: None,
            session_id: None,
        }
    }

    #[test]
    fn plays_turns_in_order_and_records_requests() {
        let p = ScriptedProvider::new([
            Turn::new().text("a"),
            Turn::new().tool_call_chunks("c1", "t", ["{", "}"]),
        ]);
        let first = collect(&p);
        assert_eq!(first[2], Ok(ProviderEvent::TextDelta("a".into())));
        assert_eq!(
            first.last(),
            Some(&Ok(ProviderEvent::Stop(ProviderStop::EndTurn)))
        );
        let second = collect(&p);
        assert_eq!(
            second[3],
            Ok(ProviderEvent::ToolCallDelta {
                id: "c1".into(),
                delta: "{".into()
            })
        );
        assert_eq!(
            second.last(),
            Some(&Ok(ProviderEvent::Stop(ProviderStop::ToolUse)))
        );
        let third = collect(&p);
        assert!(matches!(third.last(), Some(Err(e)) if e.message.contains("no turn left")));
        assert_eq!(p.requests().len(), 3);
    }

    #[test]
    fn errors_end_the_stream() {
        let p = ScriptedProvider::new([Turn::new()
            .text("x")
            .error(ProviderErrorKind::Server, "boom")
            .text("never")]);
        let events = collect(&p);
        assert!(matches!(events.last(), Some(Err(e)) if e.message == "boom"));
        assert!(!events.contains(&Ok(ProviderEvent::TextDelta("never".into()))));
    }

    #[test]
    fn json_scripts_parse_and_reject_unknown_fields() {
        let p = ScriptedProvider::from_json(
            r#"{"turns":[{"steps":[{"text":"hi"},{"usage":{"input":3,"output":1}},{"delay_ms":1},{"stop":"max_tokens"}]}]}"#,
        )
        .expect("valid script");
        let events = collect(&p);
        assert!(events.contains(&Ok(ProviderEvent::Stop(ProviderStop::MaxTokens))));
        let err = ScriptedProvider::from_json(r#"{"turns":[{"steps":[{"txt":"hi"}]}]}"#)
            .expect_err("unknown step");
        assert!(err.to_string().contains("invalid script"));
    }

    #[test]
    fn demo_script_is_valid() {
        let script: Script = serde_json::from_str(DEMO_SCRIPT).expect("demo script parses");
        assert!(script.turns.len() >= 2);
    }
}
