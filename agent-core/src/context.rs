//! Context accounting: how full the model's context window is, and when to compact.
//!
//! After every model call the agent knows `used`, the tokens in the context, and `window`,
//! the model's context window:
//!
//! - `used` is the provider's reported input (uncached, cache read and cache write) plus
//!   output tokens of the last call ([`crate::Usage::total_tokens`]), plus an estimate of
//!   the messages added since (tool results); when the provider reports no usage, it is an
//!   estimate of the whole request ([`estimate_request_tokens`]).
//! - `window` is the per-agent override ([`crate::AgentUpdate::context_window`],
//!   [`crate::AgentBuilder::context_window`]), else the model's catalogue entry
//!   ([`crate::provider::ModelInfo::context_window`]), else [`DEFAULT_CONTEXT_WINDOW`].
//!
//! The agent reports both as [`crate::AgentEvent::ContextUsage`] and
//! [`crate::Agent::context_usage`]. When `used` reaches the [`AutoCompact`] threshold
//! (default [`DEFAULT_AUTO_COMPACT_PERCENT`] %), the agent compacts the transcript before
//! its next model call.
//!
//! # The estimator
//!
//! Cheap and deliberately simple: about [`BYTES_PER_TOKEN`] bytes of UTF-8 text per token
//! (text, reasoning, tool-call arguments as JSON, tool results, the system prompt and the
//! tool specs), [`IMAGE_TOKENS`] per image and [`MESSAGE_OVERHEAD_TOKENS`] per message.
//! It reads each byte count once and allocates nothing; English prose and code come out
//! within about ±25 % of the real tokenizers, which is enough for a threshold. The agent
//! keeps a running estimate so each call only counts the messages added since the last one
//! (see `benches/benches/context.rs`).
//!
//! Front ends take the flag values with [`parse_context_window`] (`--context-window N`)
//! and [`AutoCompact::from_str`](std::str::FromStr) (`--auto-compact PERCENT|off`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::emit::Emitter;
use crate::inner::Inner;
use crate::message::{ContentBlock, Message};
use crate::provider::ToolSpec;
use crate::usage::Usage;

/// Window assumed when neither an override nor the model catalogue gives one.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
/// Default auto-compact threshold, in percent of the window.
pub const DEFAULT_AUTO_COMPACT_PERCENT: u8 = 85;
/// Bytes of text the estimator counts as one token.
pub const BYTES_PER_TOKEN: u64 = 4;
/// Tokens the estimator counts per image (a large image on the Anthropic and OpenAI APIs).
pub const IMAGE_TOKENS: u64 = 1_600;
/// Tokens the estimator counts per message for its role and framing.
pub const MESSAGE_OVERHEAD_TOKENS: u64 = 4;

/// How full the context window is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ContextUsage {
    /// Tokens in the context.
    pub used: u64,
    /// The context window in tokens.
    pub window: u64,
    /// `used` as a percentage of `window`, to one decimal (may exceed 100).
    pub percent: f64,
}

impl ContextUsage {
    /// The usage of `used` tokens out of `window` (a zero window counts as
    /// [`DEFAULT_CONTEXT_WINDOW`]).
    pub fn new(used: u64, window: u64) -> Self {
        let window = if window == 0 {
            DEFAULT_CONTEXT_WINDOW
        } else {
            window
        };
        let percent = (used as f64 * 1000.0 / window as f64).round() / 10.0;
        Self {
            used,
            window,
            percent,
        }
    }

    /// The [`crate::AgentEvent::ContextUsage`] event for this usage.
    pub fn event(self) -> crate::event::AgentEvent {
        crate::event::AgentEvent::ContextUsage {
            used: self.used,
            window: self.window,
            percent: self.percent,
        }
    }
}

/// When the agent compacts on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AutoCompact {
    /// Never; only [`crate::Agent::compact`] and a context overflow compact.
    Off,
    /// When the context reaches this percentage of the window (1–100).
    At(u8),
}

impl AutoCompact {
    /// The threshold in percent, if on.
    pub fn percent(self) -> Option<u8> {
        match self {
            Self::Off => None,
            Self::At(p) => Some(p),
        }
    }

    /// Whether `used` tokens of `window` reach the threshold.
    pub fn due(self, used: u64, window: u64) -> bool {
        match self {
            Self::Off => false,
            Self::At(p) => used.saturating_mul(100) >= u64::from(p).saturating_mul(window),
        }
    }
}

impl Default for AutoCompact {
    /// At [`DEFAULT_AUTO_COMPACT_PERCENT`] %.
    fn default() -> Self {
        Self::At(DEFAULT_AUTO_COMPACT_PERCENT)
    }
}

impl fmt::Display for AutoCompact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Off => f.write_str("off"),
            Self::At(p) => write!(f, "{p}%"),
        }
    }
}

/// A flag value that is not a valid context setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseContextError {
    /// Not a percentage from 1 to 100 nor `off`.
    #[error(
        "invalid auto-compact value {0:?}: expected a percentage from 1 to 100 (85 or 85%) or off"
    )]
    AutoCompact(String),
    /// Not a positive token count.
    #[error(
        "invalid context window {0:?}: expected a positive number of tokens (200000, 200k or 1m)"
    )]
    Window(String),
}

impl FromStr for AutoCompact {
    type Err = ParseContextError;

    /// Parses `--auto-compact`: `85`, `85%`, `92.5` (rounded) or `off` (also `none`,
    /// `false`, `never`, `0`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim().to_ascii_lowercase();
        if matches!(text.as_str(), "off" | "none" | "false" | "never" | "0") {
            return Ok(Self::Off);
        }
        let number = text.strip_suffix('%').unwrap_or(&text).trim();
        let err = || ParseContextError::AutoCompact(s.to_string());
        let value: f64 = number.parse().map_err(|_| err())?;
        if !value.is_finite() || !(1.0..=100.0).contains(&value.round()) {
            return Err(err());
        }
        Ok(Self::At(value.round() as u8))
    }
}

/// Parses `--context-window`: a positive token count, with an optional `k` (×1000) or `m`
/// (×1 000 000) suffix: `200000`, `200k`, `1m`, `1.5m`.
pub fn parse_context_window(s: &str) -> Result<u64, ParseContextError> {
    let err = || ParseContextError::Window(s.to_string());
    let text = s.trim().to_ascii_lowercase().replace('_', "");
    let (number, scale) = match text.as_bytes().last() {
        Some(b'k') => (&text[..text.len() - 1], 1_000.0),
        Some(b'm') => (&text[..text.len() - 1], 1_000_000.0),
        _ => (text.as_str(), 1.0),
    };
    if scale == 1.0 {
        return match number.parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(err()),
        };
    }
    let value: f64 = number.trim().parse().map_err(|_| err())?;
    let tokens = (value * scale).round();
    if !tokens.is_finite() || tokens < 1.0 || tokens > u64::MAX as f64 {
        return Err(err());
    }
    Ok(tokens as u64)
}

/// Estimated tokens of `bytes` bytes of text.
pub fn estimate_text_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(BYTES_PER_TOKEN)
}

/// Counts the bytes a value serialises to, without building the string.
struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn json_len(value: &serde_json::Value) -> usize {
    let mut count = ByteCount(0);
    // Writing to a counter cannot fail; a value that could not serialise counts as empty.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

fn block_tokens(block: &ContentBlock) -> u64 {
    match block {
        ContentBlock::Text { text } => estimate_text_tokens(text.len()),
        ContentBlock::Image { .. } => IMAGE_TOKENS,
        ContentBlock::Reasoning { text, .. } => estimate_text_tokens(text.len()),
        ContentBlock::ToolCall(call) => {
            estimate_text_tokens(call.id.len() + call.name.len() + json_len(&call.args))
        }
        ContentBlock::ToolResult {
            call_id, content, ..
        } => estimate_text_tokens(call_id.len()) + content.iter().map(block_tokens).sum::<u64>(),
    }
}

/// Estimated tokens of one message.
pub fn estimate_message_tokens(message: &Message) -> u64 {
    MESSAGE_OVERHEAD_TOKENS + message.content.iter().map(block_tokens).sum::<u64>()
}

/// Estimated tokens of a transcript.
pub fn estimate_tokens(messages: &[Message]) -> u64 {
    messages.iter().map(estimate_message_tokens).sum()
}

/// Estimated tokens of what every request carries besides the transcript: the system
/// prompt and the tool specs.
pub fn estimate_preamble_tokens(system: Option<&str>, tools: &[ToolSpec]) -> u64 {
    let system = system.map_or(0, |s| estimate_text_tokens(s.len()));
    let tools: u64 = tools
        .iter()
        .map(|t| estimate_text_tokens(t.name.len() + t.description.len() + json_len(&t.parameters)))
        .sum();
    system + tools
}

/// Estimated tokens of a whole request: system prompt, tool specs and transcript.
pub fn estimate_request_tokens(
    system: Option<&str>,
    tools: &[ToolSpec],
    messages: &[Message],
) -> u64 {
    estimate_preamble_tokens(system, tools) + estimate_tokens(messages)
}

/// Keeps `used` current as a transcript grows: the last reported figure plus an estimate of
/// the messages added since, or a running estimate of the whole transcript when nothing
/// was reported.
///
/// The transcript must only grow between calls; after anything else replaces it
/// (compaction, clear), call [`ContextTracker::reset`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContextTracker {
    /// Tokens reported for the last call and the transcript length right after it.
    reported: Option<(u64, usize)>,
    /// Estimated tokens of the first `.0` messages.
    estimated: (usize, u64),
}

impl ContextTracker {
    /// A tracker that has seen no call.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a model call: `reported` is the provider's input + output tokens for it (if
    /// it reported usage), `len` the transcript length once its reply was added.
    pub fn record_call(&mut self, reported: Option<u64>, len: usize) {
        self.reported = reported.map(|tokens| (tokens, len));
    }

    /// Forgets everything (the transcript was replaced).
    pub fn reset(&mut self) {
        *self = Self::default();
    }

    /// Whether the last call's usage was reported by the provider.
    pub fn has_report(&self) -> bool {
        self.reported.is_some()
    }

    /// Tokens in the context for `messages`, the transcript as it is now; `preamble`
    /// gives the system prompt and tool specs' estimate (see [`estimate_preamble_tokens`]),
    /// asked for only when no usage was reported.
    pub fn used(&mut self, messages: &[Message], preamble: impl FnOnce() -> u64) -> u64 {
        match self.reported {
            Some((tokens, len)) if len <= messages.len() => {
                tokens + estimate_tokens(&messages[len..])
            }
            _ => preamble() + self.estimate(messages),
        }
    }

    /// The running estimate of `messages`, counting only what was added since last time.
    fn estimate(&mut self, messages: &[Message]) -> u64 {
        let (len, tokens) = self.estimated;
        if len > messages.len() {
            self.estimated = (messages.len(), estimate_tokens(messages));
        } else {
            self.estimated = (messages.len(), tokens + estimate_tokens(&messages[len..]));
        }
        self.estimated.1
    }
}

/// The context settings of one agent that may change while it lives (held in its state).
#[derive(Debug, Clone, Default)]
pub(crate) struct ContextState {
    pub(crate) tracker: ContextTracker,
    /// The window override, if any.
    pub(crate) window: Option<u64>,
    /// The catalogue's window for a model id, looked up once per model.
    pub(crate) window_cache: Option<(String, u64)>,
    pub(crate) auto: AutoCompact,
    /// A model call completed since the last automatic compaction attempt (or the agent
    /// was built): an attempt that could not bring the context under the threshold is not
    /// repeated before the model has been called again.
    pub(crate) called_since_compaction: bool,
    /// Pinned notes, carried verbatim into every compacted transcript.
    pub(crate) notes: Vec<String>,
}

impl ContextState {
    pub(crate) fn new(window: Option<u64>, auto: AutoCompact, notes: Vec<String>) -> Self {
        Self {
            window: window.filter(|w| *w > 0),
            auto,
            called_since_compaction: true,
            notes,
            ..Self::default()
        }
    }
}

/// The context settings of one agent fixed when it is built (shared with its forks).
#[derive(Debug)]
pub(crate) struct ContextSettings {
    /// The summary prompt, when not the default.
    pub(crate) compaction_prompt: Option<String>,
    /// The tool-output budget and where over-budget output goes.
    pub(crate) spill: crate::spill::Spill,
    /// The built-in `note` tool is offered: its successful calls pin their text.
    pub(crate) note_tool: bool,
}

/// The window of `inner`'s current model: the override, else the catalogue's (looked up
/// once per model id), else [`DEFAULT_CONTEXT_WINDOW`].
pub(crate) fn window(inner: &Inner) -> u64 {
    let model = {
        let state = inner.state();
        if let Some(window) = state.ctx.window {
            return window;
        }
        match &state.ctx.window_cache {
            Some((model, window)) if *model == state.model => return *window,
            _ => state.model.clone(),
        }
    };
    let window = inner
        .provider
        .model_info(&model)
        .map(|m| u64::from(m.context_window))
        .filter(|w| *w > 0)
        .unwrap_or(DEFAULT_CONTEXT_WINDOW);
    inner.state().ctx.window_cache = Some((model, window));
    window
}

/// How full the context is now.
pub(crate) fn usage_now(inner: &Inner) -> ContextUsage {
    let window = window(inner);
    // Without a reported figure the system prompt and every offered tool spec (tool
    // sources' included) are estimated, outside the state lock.
    let system = {
        let state = inner.state();
        (!state.ctx.tracker.has_report()).then(|| state.system.clone())
    };
    let preamble = system.map_or(0, |system| inner.preamble_tokens(system.as_deref()));
    let mut guard = inner.state();
    let state = &mut *guard;
    let used = state.ctx.tracker.used(&state.messages, || preamble);
    ContextUsage::new(used, window)
}

/// Records a completed model call (its reply already in the transcript) and reports the
/// context usage.
pub(crate) async fn after_call(inner: &Inner, em: &Emitter, usage: Option<&Usage>) {
    {
        let mut state = inner.state();
        let len = state.messages.len();
        state
            .ctx
            .tracker
            .record_call(usage.map(Usage::total_tokens), len);
        state.ctx.called_since_compaction = true;
    }
    em.emit(usage_now(inner).event()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_compact_parses_percentages_and_off() {
        assert_eq!("85".parse(), Ok(AutoCompact::At(85)));
        assert_eq!(" 70% ".parse(), Ok(AutoCompact::At(70)));
        assert_eq!("92.5".parse(), Ok(AutoCompact::At(93)));
        assert_eq!("100".parse(), Ok(AutoCompact::At(100)));
        for off in ["off", "OFF", "none", "0", "false"] {
            assert_eq!(off.parse(), Ok(AutoCompact::Off), "{off}");
        }
        for bad in ["", "101", "-5", "0.2", "eighty", "nan", "85%%"] {
            assert!(bad.parse::<AutoCompact>().is_err(), "{bad}");
        }
        assert_eq!(AutoCompact::default(), AutoCompact::At(85));
        assert_eq!(AutoCompact::At(85).to_string(), "85%");
    }

    #[test]
    fn context_window_parses_suffixes() {
        assert_eq!(parse_context_window("200000"), Ok(200_000));
        assert_eq!(parse_context_window("200k"), Ok(200_000));
        assert_eq!(parse_context_window("1M"), Ok(1_000_000));
        assert_eq!(parse_context_window("1.5m"), Ok(1_500_000));
        assert_eq!(parse_context_window("128_000"), Ok(128_000));
        for bad in ["", "0", "-1", "k", "lots", "0k", "1e400k"] {
            assert!(parse_context_window(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn thresholds_and_percent() {
        assert!(AutoCompact::At(85).due(170_000, 200_000));
        assert!(!AutoCompact::At(85).due(169_999, 200_000));
        assert!(!AutoCompact::Off.due(u64::MAX, 1));
        assert_eq!(ContextUsage::new(170_000, 200_000).percent, 85.0);
        assert_eq!(ContextUsage::new(1, 3).percent, 33.3);
        assert_eq!(ContextUsage::new(10, 0).window, DEFAULT_CONTEXT_WINDOW);
    }

    #[test]
    fn estimates_count_text_images_calls_and_results() {
        let text = Message::user_text("x".repeat(400));
        assert_eq!(
            estimate_message_tokens(&text),
            MESSAGE_OVERHEAD_TOKENS + 100
        );
        let image = Message::new(
            crate::message::Role::User,
            vec![ContentBlock::image("image/png", vec![0u8; 10])],
        );
        assert_eq!(
            estimate_message_tokens(&image),
            MESSAGE_OVERHEAD_TOKENS + IMAGE_TOKENS
        );
        let call = Message::new(
            crate::message::Role::Assistant,
            vec![ContentBlock::ToolCall(crate::message::ToolCall {
                id: "c1".into(),
                name: "read".into(),
                args: serde_json::json!({"path": "a"}),
            })],
        );
        // "c1" + "read" + {"path":"a"} = 2 + 4 + 12 bytes.
        assert_eq!(estimate_message_tokens(&call), MESSAGE_OVERHEAD_TOKENS + 5);
    }

    #[test]
    fn tracker_adds_new_messages_to_the_reported_figure() {
        let mut messages = vec![Message::user_text("hi"), Message::assistant_text("hello")];
        let mut tracker = ContextTracker::new();
        let first = tracker.used(&messages, || 1000);
        assert_eq!(first, 1000 + estimate_tokens(&messages));
        tracker.record_call(Some(5000), messages.len());
        assert_eq!(tracker.used(&messages, || unreachable!()), 5000);
        messages.push(Message::user_text("y".repeat(40)));
        assert_eq!(
            tracker.used(&messages, || unreachable!()),
            5000 + MESSAGE_OVERHEAD_TOKENS + 10
        );
        // No usage reported: the running estimate, extended incrementally.
        tracker.record_call(None, messages.len());
        assert_eq!(
            tracker.used(&messages, || 7),
            7 + estimate_tokens(&messages)
        );
        messages.truncate(1);
        tracker.reset();
        assert_eq!(tracker.used(&messages, || 0), estimate_tokens(&messages));
    }
}
