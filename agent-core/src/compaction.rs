//! Compaction: the transcript, but for its last few messages, replaced by a summary.
//!
//! A compaction starts three ways ([`CompactionReason`]): the host asks
//! ([`crate::Agent::compact`]); the context crosses the auto-compact threshold
//! ([`crate::context::AutoCompact`]), checked before every model call of a prompt; or the
//! provider rejects a call as too long for the context window
//! ([`ProviderErrorKind::ContextLength`]), after which the call is retried once.
//!
//! What the model is asked: the part of the transcript that goes, rendered as plain text in
//! one user message (so it works on every provider, whatever tool-call or reasoning blocks
//! the transcript holds, and sends no tool specs), under the summary prompt
//! ([`DEFAULT_COMPACTION_PROMPT`], replaced with [`crate::AgentBuilder::compaction_prompt`]).
//! Long texts and tool results are clipped in that rendering, and when the whole would not
//! fit half the window the oldest messages are left out.
//!
//! What stays: a synthetic user message `COMPACTION_PREFIX + summary`, followed by the
//! pinned notes verbatim ([`crate::notes`]), then the last
//! [`crate::AgentBuilder::compact_keep_tail`] messages verbatim. The kept tail never starts
//! with tool results: it is extended back to the assistant message that made the calls, so
//! a call is never split from its result.

use std::borrow::Cow;
use std::sync::Arc;

use futures::StreamExt;

use crate::context::{usage_now, BYTES_PER_TOKEN};
use crate::emit::{record, Emitter};
use crate::event::{AgentEvent, CompactionReason, ErrorCode, RunStatus};
use crate::hooks::CompactTrigger;
use crate::inner::{error_event, Inner};
use crate::message::{ContentBlock, Message, Role};
use crate::model_call::{stream_call, CallEnd};
use crate::provider::{ProviderError, ProviderErrorKind, ProviderEvent, ProviderRequest};
use crate::session::SessionRecord;

/// Prefix of the synthetic user message that replaces a compacted transcript.
pub const COMPACTION_PREFIX: &str = "## Context Summary (compacted)\n\n";

/// The default summary prompt (the system prompt of the summary call).
pub const DEFAULT_COMPACTION_PROMPT: &str = "You summarise coding-agent conversations so that \
work can continue from the summary alone. Keep every fact needed to continue: the user's \
goals and constraints, decisions made, files read or changed and why, commands run and their \
outcomes, open problems and next steps. Be concise; use short sections and bullet points.";

/// The instruction that ends the summary request.
pub const COMPACTION_REQUEST: &str =
    "Summarise the conversation so far for a continuation. Reply with the summary only.";

/// Most bytes of one text block in the summary request.
const TEXT_CLIP: usize = 16 * 1024;
/// Most bytes of one tool result in the summary request.
const RESULT_CLIP: usize = 4 * 1024;
/// Most bytes of one call's arguments in the summary request.
const ARGS_CLIP: usize = 1024;
/// The least room the rendering gets, however small the window.
const MIN_RENDER_BYTES: usize = 16 * 1024;

/// Why a compaction did not happen.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The transcript has nothing to compact.
    Nothing(&'static str),
    /// The summary call failed.
    Provider(ProviderError),
    /// The model's summary was empty.
    Empty,
    /// The run was aborted.
    Aborted,
}

impl Failure {
    fn message(&self) -> String {
        match self {
            Self::Nothing(text) => (*text).to_string(),
            Self::Provider(err) => err.message.clone(),
            Self::Empty => "empty summary from model".to_string(),
            Self::Aborted => "aborted".to_string(),
        }
    }
}

/// Where the kept tail of `messages` starts when `keep` messages are kept: never at a tool
/// result message, so no call is split from its result.
pub(crate) fn tail_start(messages: &[Message], keep: usize) -> usize {
    let mut start = messages.len().saturating_sub(keep);
    while start > 0 && messages.get(start).is_some_and(|m| m.role == Role::Tool) {
        start -= 1;
    }
    start
}

/// `text` cut to about `max` bytes: its head and tail around a note of what was left out.
fn clip(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let mut head = max / 2;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - max / 2;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    Cow::Owned(format!(
        "{}\n[… {} bytes left out …]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    ))
}

fn is_summary(message: &Message) -> bool {
    message.role == Role::User && message.synthetic && message.text().starts_with(COMPACTION_PREFIX)
}

/// One message as text for the summariser.
fn render_message(message: &Message) -> String {
    let summary = is_summary(message);
    let label = match message.role {
        Role::User if summary => "earlier summary",
        Role::User if message.synthetic => "note from the agent",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool results",
    };
    let mut out = format!("[{label}]\n");
    for block in &message.content {
        match block {
            ContentBlock::Text { text } => {
                let text = match summary {
                    true => crate::notes::strip_section(
                        text.strip_prefix(COMPACTION_PREFIX).unwrap_or(text),
                    ),
                    false => text,
                };
                out.push_str(&clip(text, TEXT_CLIP));
                out.push('\n');
            }
            ContentBlock::Image { .. } => out.push_str("[image]\n"),
            ContentBlock::Reasoning { .. } => {}
            ContentBlock::ToolCall(call) => {
                let args = call.args.to_string();
                out.push_str(&format!(
                    "[tool call {} {}: {}]\n",
                    call.id,
                    call.name,
                    clip(&args, ARGS_CLIP)
                ));
            }
            ContentBlock::ToolResult {
                call_id,
                is_error,
                content,
            } => {
                let status = if *is_error { " (error)" } else { "" };
                out.push_str(&format!("[result of {call_id}{status}]\n"));
                let mut text = String::new();
                for part in content {
                    match part {
                        ContentBlock::Text { text: t } => text.push_str(t),
                        ContentBlock::Image { .. } => text.push_str("[image]"),
                        _ => {}
                    }
                }
                out.push_str(&clip(&text, RESULT_CLIP));
                out.push('\n');
            }
        }
    }
    out
}

/// `messages` as text for the summariser, within about `max_bytes`: an earlier summary
/// first is always kept; past the limit the oldest of the rest are left out.
pub(crate) fn render(messages: &[Message], max_bytes: usize) -> String {
    let chunks: Vec<String> = messages.iter().map(render_message).collect();
    let (first, rest) = match messages.first() {
        Some(m) if is_summary(m) => (chunks.first().map(String::as_str), &chunks[1..]),
        _ => (None, &chunks[..]),
    };
    let mut room = max_bytes.saturating_sub(first.map_or(0, str::len));
    let mut kept = 0;
    for chunk in rest.iter().rev() {
        if chunk.len() + 1 > room && kept > 0 {
            break;
        }
        room = room.saturating_sub(chunk.len() + 1);
        kept += 1;
    }
    let mut out = String::from("The conversation so far:\n\n");
    if let Some(first) = first {
        out.push_str(first);
        out.push('\n');
    }
    let left_out = rest.len() - kept;
    if left_out > 0 {
        out.push_str(&format!(
            "[… {left_out} earlier messages left out to fit the summary request …]\n\n"
        ));
    }
    for chunk in &rest[left_out..] {
        out.push_str(chunk);
        out.push('\n');
    }
    out
}

/// Runs one summary call without streaming it to the reader: only its usage is reported.
async fn quiet_call(
    inner: &Inner,
    em: &Emitter,
    request: ProviderRequest,
) -> Result<String, Failure> {
    let pricing = inner
        .provider
        .model_info(&request.model)
        .and_then(|m| m.pricing);
    let mut stream = inner.provider.stream(request);
    let mut text = String::new();
    loop {
        let item = tokio::select! {
            biased;
            _ = em.cancel.cancelled() => return Err(Failure::Aborted),
            item = stream.next() => item,
        };
        match item {
            None => return Ok(text),
            Some(Err(err)) => return Err(Failure::Provider(err)),
            Some(Ok(ProviderEvent::TextDelta(delta))) => text.push_str(&delta),
            Some(Ok(ProviderEvent::Usage(mut turn))) => {
                if turn.cost_usd.is_none() {
                    turn.cost_usd = pricing.map(|p| p.cost(&turn));
                }
                let cumulative = {
                    let mut state = inner.state();
                    state.add_usage(&turn);
                    state.usage
                };
                em.emit(AgentEvent::Usage { turn, cumulative }).await;
            }
            Some(Ok(_)) => {}
        }
    }
}

/// Compacts the transcript now. Emits `CompactionStarted`, the summary call's events
/// (streamed for a manual compaction, only `Usage` otherwise), then `CompactionFinished`
/// and `ContextUsage`. On failure nothing is changed and nothing more is emitted.
pub(crate) async fn compact(
    inner: &Arc<Inner>,
    em: &Emitter,
    reason: CompactionReason,
) -> Result<(), Failure> {
    let keep = inner.compact_keep_tail;
    let (messages, model, reasoning, notes) = {
        let state = inner.state();
        (
            state.messages.clone(),
            state.model.clone(),
            state.reasoning,
            !state.ctx.notes.is_empty(),
        )
    };
    if messages.is_empty() {
        return Err(Failure::Nothing("nothing to compact"));
    }
    let start = tail_start(&messages, keep);
    if start == 0 {
        return Err(Failure::Nothing(
            "nothing to compact: keep-tail covers the whole transcript",
        ));
    }
    let before = usage_now(inner);
    em.emit(AgentEvent::CompactionStarted { reason }).await;
    let trigger = match reason {
        CompactionReason::Manual => CompactTrigger::Manual,
        CompactionReason::Auto | CompactionReason::Overflow => CompactTrigger::Auto,
    };
    crate::hook_points::pre_compact(inner, em, trigger).await;
    if em.cancel.is_cancelled() {
        return Err(Failure::Aborted);
    }

    let max_bytes = usize::try_from(before.window.saturating_mul(BYTES_PER_TOKEN) / 2)
        .unwrap_or(usize::MAX)
        .max(MIN_RENDER_BYTES);
    let mut text = render(&messages[..start], max_bytes);
    if notes {
        text.push_str(
            "\nThe pinned notes are carried over verbatim after your summary; do not repeat them.\n",
        );
    }
    text.push('\n');
    text.push_str(COMPACTION_REQUEST);
    let request = ProviderRequest {
        model,
        system: Some(
            inner
                .ctx
                .compaction_prompt
                .clone()
                .unwrap_or_else(|| DEFAULT_COMPACTION_PROMPT.to_string()),
        ),
        messages: vec![Message::user_text(text)],
        tools: Vec::new(),
        reasoning,
        max_output_tokens: None,
        output_schema: None,
        session_id: inner.session.as_ref().map(|(_, id)| id.clone()),
    };
    let summary = match reason {
        CompactionReason::Manual => {
            let call = stream_call(inner, em, request, false).await;
            match call.end {
                CallEnd::Aborted => return Err(Failure::Aborted),
                CallEnd::Failed(err) => return Err(Failure::Provider(err)),
                CallEnd::Completed(_) => call.message.text(),
            }
        }
        CompactionReason::Auto | CompactionReason::Overflow => {
            quiet_call(inner, em, request).await?
        }
    };
    let summary = summary.trim().to_string();
    if summary.is_empty() {
        return Err(Failure::Empty);
    }
    let replaced = {
        let mut state = inner.state();
        let section = crate::notes::section(&state.ctx.notes);
        // Re-read the transcript: a `clear()` may have run while the summary streamed.
        let current = std::mem::take(&mut state.messages);
        let start = tail_start(&current, keep);
        let mut next = Vec::with_capacity(current.len() - start + 1);
        next.push(Message::user_text(format!("{COMPACTION_PREFIX}{summary}{section}")).synthetic());
        next.extend(drop_orphan_results(current[start..].to_vec()));
        state.messages = next.clone();
        state.ctx.tracker.reset();
        state.ctx.called_since_compaction = false;
        next
    };
    record(inner, em, SessionRecord::Replaced { messages: replaced }).await;
    let after = usage_now(inner);
    em.emit(AgentEvent::CompactionFinished {
        summary,
        before: before.used,
        after: after.used,
    })
    .await;
    em.emit(after.event()).await;
    Ok(())
}

/// Removes tool results whose calls are not in `messages`, and messages left empty.
pub(crate) fn drop_orphan_results(messages: Vec<Message>) -> Vec<Message> {
    let call_ids: std::collections::HashSet<String> = messages
        .iter()
        .flat_map(|m| m.tool_calls().map(|c| c.id.clone()))
        .collect();
    messages
        .into_iter()
        .filter_map(|mut m| {
            if m.role == Role::Tool {
                m.content.retain(|b| match b {
                    ContentBlock::ToolResult { call_id, .. } => call_ids.contains(call_id),
                    _ => true,
                });
                if m.content.is_empty() {
                    return None;
                }
            }
            Some(m)
        })
        .collect()
}

/// The body of a compaction run ([`crate::Agent::compact`]).
pub(crate) async fn run_manual(inner: Arc<Inner>, em: Emitter) -> (RunStatus, Option<String>) {
    match compact(&inner, &em, CompactionReason::Manual).await {
        Ok(()) => (RunStatus::Success, None),
        Err(Failure::Aborted) => (RunStatus::Aborted, None),
        Err(Failure::Provider(err)) => {
            em.emit(error_event(ErrorCode::Provider, err.message)).await;
            (RunStatus::Error, None)
        }
        Err(failure) => {
            em.emit(error_event(ErrorCode::Compaction, failure.message()))
                .await;
            (RunStatus::Error, None)
        }
    }
}

/// What the loop does after [`before_call`].
pub(crate) enum Flow {
    /// Make the model call.
    Proceed,
    /// The run was aborted.
    Aborted,
    /// The run ends with an error (already reported).
    Failed,
}

/// Whether the context has reached the auto-compact threshold (and there is something to
/// compact, and the model was called since the last automatic attempt).
fn auto_due(inner: &Inner) -> bool {
    let (auto, called) = {
        let state = inner.state();
        (state.ctx.auto, state.ctx.called_since_compaction)
    };
    if !called || auto.percent().is_none() {
        return false;
    }
    let usage = usage_now(inner);
    if !auto.due(usage.used, usage.window) {
        return false;
    }
    let state = inner.state();
    tail_start(&state.messages, inner.compact_keep_tail) > 0
}

/// Before a model call of a prompt: compacts when the previous call overflowed the window
/// or the context reached the threshold. A failed automatic compaction is reported as a
/// recoverable error and the call goes ahead; a failed overflow compaction ends the run.
pub(crate) async fn before_call(inner: &Arc<Inner>, em: &Emitter, overflowed: bool) -> Flow {
    let reason = match overflowed {
        true => CompactionReason::Overflow,
        false if auto_due(inner) => CompactionReason::Auto,
        false => return Flow::Proceed,
    };
    match compact(inner, em, reason).await {
        Ok(()) => Flow::Proceed,
        Err(Failure::Aborted) => Flow::Aborted,
        Err(failure) => {
            let auto = reason == CompactionReason::Auto;
            if auto {
                // Do not try again before the model has been called.
                inner.state().ctx.called_since_compaction = false;
            }
            let message = match auto {
                true => format!("automatic compaction failed: {}", failure.message()),
                false => format!(
                    "the prompt is too long for the model's context window and compaction failed: {}",
                    failure.message()
                ),
            };
            em.emit(AgentEvent::Error {
                code: ErrorCode::Compaction,
                message,
                recoverable: auto,
            })
            .await;
            match auto {
                true => Flow::Proceed,
                false => Flow::Failed,
            }
        }
    }
}

/// Whether a failed call is a context overflow to recover from by compacting and retrying:
/// the provider said the prompt was too long, this call has not been retried for it yet,
/// and the transcript has something to compact. Marks the retry as used.
pub(crate) fn overflow_recoverable(inner: &Inner, err: &ProviderError, retried: &mut bool) -> bool {
    if err.kind != ProviderErrorKind::ContextLength || *retried {
        return false;
    }
    let state = inner.state();
    if tail_start(&state.messages, inner.compact_keep_tail) == 0 {
        return false;
    }
    *retried = true;
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    fn call(id: &str) -> Message {
        Message::new(
            Role::Assistant,
            vec![ContentBlock::ToolCall(ToolCall {
                id: id.into(),
                name: "t".into(),
                args: serde_json::json!({}),
            })],
        )
    }

    fn result(id: &str, text: &str) -> Message {
        Message::new(
            Role::Tool,
            vec![ContentBlock::ToolResult {
                call_id: id.into(),
                is_error: false,
                content: vec![ContentBlock::text(text)],
            }],
        )
    }

    #[test]
    fn the_tail_never_starts_at_a_result() {
        let messages = vec![
            Message::user_text("go"),
            call("a"),
            result("a", "ra"),
            call("b"),
            result("b", "rb"),
        ];
        assert_eq!(tail_start(&messages, 1), 3);
        assert_eq!(tail_start(&messages, 2), 3);
        assert_eq!(tail_start(&messages, 3), 1);
        assert_eq!(tail_start(&messages, 0), 5);
        assert_eq!(tail_start(&messages, 9), 0);
    }

    #[test]
    fn orphan_results_are_dropped() {
        let kept = drop_orphan_results(vec![result("gone", ""), Message::user_text("hi")]);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].role, Role::User);
    }

    #[test]
    fn render_clips_results_and_leaves_out_the_oldest() {
        let big = "x".repeat(100_000);
        let messages = vec![
            Message::user_text(format!("{COMPACTION_PREFIX}old summary")).synthetic(),
            Message::user_text("first question"),
            call("a"),
            result("a", &big),
            Message::assistant_text("answer"),
        ];
        let text = render(&messages, 1_000_000);
        assert!(text.contains("[earlier summary]\nold summary"));
        assert!(text.contains("[tool call a t: {}]"));
        assert!(text.contains("bytes left out"));
        assert!(text.len() < 10_000);
        let small = render(&messages, 300);
        assert!(
            small.contains("old summary"),
            "an earlier summary is always kept"
        );
        assert!(small.contains("[assistant]\nanswer"));
        assert!(small.contains("earlier messages left out"));
        assert!(!small.contains("first question"));
    }

    #[test]
    fn clip_keeps_char_boundaries() {
        let text = "é".repeat(100);
        let clipped = clip(&text, 51);
        assert!(clipped.contains("bytes left out"));
        assert!(clipped.starts_with('é') && clipped.ends_with('é'));
    }
}
