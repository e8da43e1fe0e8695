//! Tracing spans of the loop, with the OpenTelemetry GenAI semantic-convention attributes.
//!
//! Every run is a span `agent.run`; each model call of a prompt is an `agent.turn` inside
//! it (the call and the tool calls it asked for), and each tool execution an `agent.tool`
//! inside its turn:
//!
//! | span | attributes |
//! |---|---|
//! | `agent.run` | `gen_ai.operation.name` = `invoke_agent`, `gen_ai.system`, `gen_ai.provider.name`, `gen_ai.request.model`, `agent.run.kind`; at the end `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`, `agent.run.status`, `error.type` |
//! | `agent.turn` | `gen_ai.operation.name` = `chat`, `gen_ai.system`, `gen_ai.provider.name`, `gen_ai.request.model`, `agent.turn.step`; at the end `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`, `gen_ai.response.finish_reasons` (`stop`, `tool_calls`, `length`, `content_filter`), `error.type` |
//! | `agent.tool` | `gen_ai.operation.name` = `execute_tool`, `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type` = `function`; at the end `error.type` on failure |
//!
//! Input tokens count every prompt token (cached included), as the conventions define them.
//! The spans carry no prompt, answer or tool text unless content capture is on
//! ([`set_capture_content`], or the conventions' environment switch
//! `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`); then a turn records
//! `gen_ai.output.messages` and a tool `gen_ai.tool.call.arguments` and
//! `gen_ai.tool.call.result`, scrubbed of registered secrets and sensitive environment
//! values. Keys are never recorded.
//!
//! With no subscriber installed the spans cost next to nothing. `agent-otel` exports them
//! over OTLP.

use std::sync::atomic::{AtomicU8, Ordering};

use tracing::field::Empty;
use tracing::Span;

use crate::event::{RunKind, RunStatus};
use crate::message::{Message, ToolCall};
use crate::provider::{ProviderError, ProviderStop};
use crate::secrets::scrub_known_values;
use crate::tool::ToolOutput;
use crate::usage::Usage;

/// The environment switch the GenAI conventions define for recording message content.
pub const CAPTURE_CONTENT_ENV: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// 0: not decided yet (read the environment), 1: off, 2: on.
static CAPTURE: AtomicU8 = AtomicU8::new(0);

/// Turns recording of prompt, answer and tool text on spans on or off for this process
/// (overrides [`CAPTURE_CONTENT_ENV`]).
pub fn set_capture_content(on: bool) {
    CAPTURE.store(if on { 2 } else { 1 }, Ordering::Relaxed);
}

/// Whether spans record message and tool content.
pub fn capture_content() -> bool {
    match CAPTURE.load(Ordering::Relaxed) {
        0 => {
            let on = std::env::var(CAPTURE_CONTENT_ENV)
                .map(|v| v.trim().eq_ignore_ascii_case("true") || v.trim() == "1")
                .unwrap_or(false);
            // A concurrent `set_capture_content` wins.
            let _ = CAPTURE.compare_exchange(
                0,
                if on { 2 } else { 1 },
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            CAPTURE.load(Ordering::Relaxed) == 2
        }
        state => state == 2,
    }
}

pub(crate) fn run_span(kind: RunKind, provider: &str, model: &str) -> Span {
    tracing::info_span!(
        "agent.run",
        "gen_ai.operation.name" = "invoke_agent",
        "gen_ai.system" = provider,
        "gen_ai.provider.name" = provider,
        "gen_ai.request.model" = model,
        "agent.run.kind" = match kind {
            RunKind::Prompt => "prompt",
            RunKind::Compact => "compact",
        },
        "gen_ai.usage.input_tokens" = Empty,
        "gen_ai.usage.output_tokens" = Empty,
        "agent.run.status" = Empty,
        "error.type" = Empty,
    )
}

/// The usage added between two readings of an agent's cumulative usage.
pub(crate) fn usage_since(before: &Usage, after: &Usage) -> Usage {
    Usage {
        input: after.input.saturating_sub(before.input),
        output: after.output.saturating_sub(before.output),
        reasoning: match (before.reasoning, after.reasoning) {
            (_, None) => None,
            (b, Some(a)) => Some(a.saturating_sub(b.unwrap_or(0))),
        },
        cache_read: after.cache_read.saturating_sub(before.cache_read),
        cache_write: after.cache_write.saturating_sub(before.cache_write),
        cost_usd: match (before.cost_usd, after.cost_usd) {
            (_, None) => None,
            (b, Some(a)) => Some(a - b.unwrap_or(0.0)),
        },
    }
}

pub(crate) fn finish_run(span: &Span, status: RunStatus, usage: &Usage) {
    span.record("gen_ai.usage.input_tokens", usage.prompt_tokens());
    span.record("gen_ai.usage.output_tokens", usage.output);
    let status = match status {
        RunStatus::Success => "success",
        RunStatus::Error => "error",
        RunStatus::Aborted => "aborted",
    };
    span.record("agent.run.status", status);
    if status != "success" {
        span.record("error.type", status);
    }
}

pub(crate) fn turn_span(provider: &str, model: &str, step: u32) -> Span {
    tracing::info_span!(
        "agent.turn",
        "gen_ai.operation.name" = "chat",
        "gen_ai.system" = provider,
        "gen_ai.provider.name" = provider,
        "gen_ai.request.model" = model,
        "agent.turn.step" = step,
        "gen_ai.usage.input_tokens" = Empty,
        "gen_ai.usage.output_tokens" = Empty,
        "gen_ai.response.finish_reasons" = Empty,
        "gen_ai.output.messages" = Empty,
        "error.type" = Empty,
    )
}

/// Records a model call's usage on the current span (its turn, when there is one).
pub(crate) fn record_usage(usage: &Usage) {
    let span = Span::current();
    span.record("gen_ai.usage.input_tokens", usage.prompt_tokens());
    span.record("gen_ai.usage.output_tokens", usage.output);
}

/// Records why the model stopped on the current span, in the conventions' words.
pub(crate) fn record_stop(stop: ProviderStop) {
    let reason = match stop {
        ProviderStop::EndTurn => "stop",
        ProviderStop::ToolUse => "tool_calls",
        ProviderStop::MaxTokens => "length",
        ProviderStop::Refusal => "content_filter",
    };
    Span::current().record("gen_ai.response.finish_reasons", reason);
}

/// Records a failed model call on the current span (its kind only, never its text).
pub(crate) fn record_call_error(error: &ProviderError) {
    let kind = serde_json::to_value(error.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "other".to_string());
    Span::current().record("error.type", kind.as_str());
}

/// Records the assistant's message on a turn span, when content capture is on.
pub(crate) fn record_output(span: &Span, message: &Message) {
    if !capture_content() {
        return;
    }
    if let Ok(json) = serde_json::to_string(&[message]) {
        span.record("gen_ai.output.messages", scrub_known_values(&json).as_ref());
    }
}

pub(crate) fn tool_span(call: &ToolCall) -> Span {
    let span = tracing::info_span!(
        "agent.tool",
        "gen_ai.operation.name" = "execute_tool",
        "gen_ai.tool.name" = call.name.as_str(),
        "gen_ai.tool.call.id" = call.id.as_str(),
        "gen_ai.tool.type" = "function",
        "gen_ai.tool.call.arguments" = Empty,
        "gen_ai.tool.call.result" = Empty,
        "error.type" = Empty,
    );
    if capture_content() {
        let args = call.args.to_string();
        span.record(
            "gen_ai.tool.call.arguments",
            scrub_known_values(&args).as_ref(),
        );
    }
    span
}

pub(crate) fn finish_tool(span: &Span, output: &ToolOutput) {
    if output.is_error {
        span.record("error.type", "tool_error");
    }
    if capture_content() {
        span.record(
            "gen_ai.tool.call.result",
            scrub_known_values(&output.text_content()).as_ref(),
        );
    }
}
