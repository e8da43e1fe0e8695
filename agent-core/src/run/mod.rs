//! The agent loop: model calls, the permission gate, tool execution, compaction.

use std::sync::Arc;

use tracing::Instrument;

use crate::emit::record;
use crate::emit::Emitter;
use crate::event::{AgentEvent, ErrorCode, RecoveryReason, RunStatus, StopReason};
use crate::inner::{error_event, Inner};
use crate::message::{ContentBlock, Message, Role, UserInput};
use crate::provider::{ProviderRequest, ProviderStop};
use crate::session::SessionRecord;
use crate::structured::OutputSpec;
use crate::telemetry;

mod tools;

use crate::model_call::CallEnd;
use tools::run_tools;

/// Text of the one bounded continuation added when the model stops without an answer.
pub const RECOVERY_PROMPT: &str =
    "Your previous reply ended without an answer. Continue and give your final answer now.";

pub(crate) async fn push_message(inner: &Inner, em: &Emitter, message: Message) {
    inner.state().messages.push(message.clone());
    em.log_message(&message);
    record(inner, em, SessionRecord::Message { message }).await;
}

/// Runs one prompt to completion.
pub(crate) async fn prompt(
    inner: Arc<Inner>,
    input: UserInput,
    em: Emitter,
    output: Option<Arc<OutputSpec>>,
) -> (RunStatus, Option<String>) {
    if input.is_empty() {
        em.emit(error_event(ErrorCode::EmptyPrompt, "prompt is empty"))
            .await;
        return (RunStatus::Error, None);
    }
    let message = input.into_message();
    inner.state().run_usage = crate::usage::Usage::default();
    let context = match crate::hook_points::user_prompt(&inner, &em, &message).await {
        crate::hook_points::UserPrompt::Proceed(context) => context,
        crate::hook_points::UserPrompt::Stop if em.cancel.is_cancelled() => {
            return (RunStatus::Aborted, None)
        }
        crate::hook_points::UserPrompt::Stop => return (RunStatus::Success, None),
    };
    push_message(&inner, &em, message.clone()).await;
    em.emit(AgentEvent::UserMessage { message }).await;
    if let Some(text) = context {
        let message = Message::user_text(text).synthetic();
        push_message(&inner, &em, message.clone()).await;
        em.emit(AgentEvent::UserMessage { message }).await;
    }

    let mut recovered = false;
    let mut repaired = false;
    // A context overflow of the last call: compact, then retry it once.
    let mut overflowed = false;
    let mut overflow_retried = false;
    let mut continuations = 0u32;
    let mut final_text: Option<String> = None;
    let mut step = 0u32;
    loop {
        let steering = std::mem::take(&mut inner.state().steering);
        for message in steering {
            push_message(&inner, &em, message.clone()).await;
            em.emit(AgentEvent::UserMessage { message }).await;
        }
        if em.cancel.is_cancelled() {
            return (RunStatus::Aborted, final_text);
        }
        if step >= inner.max_steps {
            let message = format!("agent model step limit exceeded: {}", inner.max_steps);
            em.emit(error_event(ErrorCode::MaxSteps, message)).await;
            return (RunStatus::Error, final_text);
        }
        if crate::budget::stop(&inner, &em).await {
            return (RunStatus::Error, final_text);
        }
        match crate::compaction::before_call(&inner, &em, std::mem::take(&mut overflowed)).await {
            crate::compaction::Flow::Proceed => {}
            crate::compaction::Flow::Aborted => return (RunStatus::Aborted, final_text),
            crate::compaction::Flow::Failed => return (RunStatus::Error, final_text),
        }
        if crate::budget::stop(&inner, &em).await {
            return (RunStatus::Error, final_text);
        }
        step += 1;
        em.emit(AgentEvent::TurnStarted { step }).await;

        inner.refresh_sources(&em.cancel).await;
        let mut request = build_request(&inner, true);
        request.output_schema = output.as_ref().map(|o| o.schema.clone());
        let turn = telemetry::turn_span(inner.provider.id(), &request.model, step);
        let call = crate::fallback::call(&inner, &em, request)
            .instrument(turn.clone())
            .await;
        telemetry::record_output(&turn, &call.message);
        let turn_end = |stop, error| AgentEvent::TurnEnded { step, stop, error };
        match call.end {
            CallEnd::Aborted => {
                let kept: Vec<ContentBlock> = call
                    .message
                    .content
                    .into_iter()
                    .filter(|b| !matches!(b, ContentBlock::ToolCall(_)))
                    .collect();
                if !kept.is_empty() {
                    let message = Message::new(Role::Assistant, kept);
                    push_message(&inner, &em, message.clone()).await;
                    em.emit(AgentEvent::AssistantMessage { message }).await;
                }
                em.emit(turn_end(StopReason::Aborted, Some("aborted".into())))
                    .await;
                return (RunStatus::Aborted, final_text);
            }
            CallEnd::Failed(err)
                if crate::compaction::overflow_recoverable(&inner, &err, &mut overflow_retried) =>
            {
                em.emit(turn_end(StopReason::Continue, Some(err.message)))
                    .await;
                overflowed = true;
                continue;
            }
            CallEnd::Failed(err) => {
                em.emit(turn_end(StopReason::Error, Some(err.message.clone())))
                    .await;
                em.emit(error_event(ErrorCode::Provider, err.message)).await;
                return (RunStatus::Error, final_text);
            }
            CallEnd::Completed(stop) => {
                overflow_retried = false;
                let text = call.message.text();
                let has_reasoning = call
                    .message
                    .content
                    .iter()
                    .any(|b| matches!(b, ContentBlock::Reasoning { .. }));
                if !text.trim().is_empty() {
                    final_text = Some(text.clone());
                }
                if !call.message.content.is_empty() {
                    push_message(&inner, &em, call.message.clone()).await;
                    em.emit(AgentEvent::AssistantMessage {
                        message: call.message,
                    })
                    .await;
                }
                crate::context::after_call(&inner, &em, call.usage.as_ref()).await;
                for (tc, raw) in &call.calls {
                    em.emit(AgentEvent::ToolCall {
                        id: tc.id.clone(),
                        name: tc.name.clone(),
                        args: tc.args.clone(),
                        raw_args: raw.clone(),
                        side_effect: inner.tool(&tc.name).map(|t| t.side_effect()),
                    })
                    .await;
                }
                if !call.calls.is_empty() {
                    em.emit(turn_end(StopReason::ToolUse, None)).await;
                    if !run_tools(&inner, &em, call.calls).instrument(turn).await {
                        return (RunStatus::Aborted, final_text);
                    }
                    if inner.hooks.take_halt() {
                        return (RunStatus::Success, final_text);
                    }
                    continue;
                }
                match stop {
                    Some(ProviderStop::MaxTokens) => {
                        em.emit(turn_end(StopReason::Length, None)).await;
                        return (RunStatus::Success, final_text);
                    }
                    Some(ProviderStop::Refusal) => {
                        em.emit(turn_end(StopReason::Refusal, None)).await;
                        return (RunStatus::Success, final_text);
                    }
                    _ => {}
                }
                if text.trim().is_empty() && !recovered {
                    recovered = true;
                    em.emit(turn_end(StopReason::Continue, None)).await;
                    let reason = match has_reasoning {
                        true => RecoveryReason::CommentaryOnly,
                        false => RecoveryReason::MissingAnswer,
                    };
                    em.emit(AgentEvent::TurnRecovery { reason, attempt: 1 })
                        .await;
                    push_message(&inner, &em, Message::user_text(RECOVERY_PROMPT).synthetic())
                        .await;
                    continue;
                }
                // One repair turn for an answer that does not pass the run's output check.
                if let Some(output) = output.as_ref().filter(|_| !repaired) {
                    if let Err(error) = output.check(&text) {
                        repaired = true;
                        em.emit(turn_end(StopReason::Continue, None)).await;
                        let repair = Message::user_text(output.repair_prompt(&error)).synthetic();
                        push_message(&inner, &em, repair).await;
                        continue;
                    }
                }
                if !inner.state().steering.is_empty() {
                    em.emit(turn_end(StopReason::Continue, None)).await;
                    continue;
                }
                let stop = crate::hook_points::stop(
                    &inner,
                    &em,
                    final_text.as_deref(),
                    &mut continuations,
                );
                if let Some(reason) = stop.await {
                    em.emit(turn_end(StopReason::Continue, None)).await;
                    push_message(&inner, &em, Message::user_text(reason).synthetic()).await;
                    continue;
                }
                em.emit(turn_end(StopReason::End, None)).await;
                return (RunStatus::Success, final_text);
            }
        }
    }
}

fn build_request(inner: &Inner, with_tools: bool) -> ProviderRequest {
    let state = inner.state();
    ProviderRequest {
        model: state.model.clone(),
        system: state.system.clone(),
        messages: state.messages.clone(),
        tools: match with_tools {
            true => inner.all_specs(),
            false => Vec::new(),
        },
        reasoning: state.reasoning,
        max_output_tokens: None,
        output_schema: None,
        session_id: inner.session.as_ref().map(|(_, id)| id.clone()),
    }
}
