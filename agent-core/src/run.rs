//! The agent loop: model calls, the permission gate, tool execution, compaction.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::Value;
use tokio::task::JoinHandle;
use tracing::Instrument;

use crate::emit::{Batch, Burst, Emitter};
use crate::event::{
    AgentEvent, ErrorCode, PermissionInfo, RecoveryReason, RequestScope, RunStatus, StopReason,
    ToolStatus,
};
use crate::inner::{error_event, Inner};
use crate::message::{ContentBlock, Message, Role, ToolCall, UserInput};
use crate::permission::{decide, Approval, ApprovalRequest, PermissionAction, Verdict};
use crate::provider::{ProviderError, ProviderEvent, ProviderRequest, ProviderStop};
use crate::secrets::scrub_error_output;
use crate::session::SessionRecord;
use crate::structured::OutputSpec;
use crate::telemetry;
use crate::tool::{
    Permission, ProgressReceiver, ProgressSink, SideEffect, Tool, ToolContext, ToolOutput,
};

/// How long a cancelled tool may take to wind down before its task is dropped.
const TOOL_CANCEL_GRACE: Duration = Duration::from_millis(500);

/// Text of the one bounded continuation added when the model stops without an answer.
pub const RECOVERY_PROMPT: &str =
    "Your previous reply ended without an answer. Continue and give your final answer now.";

/// Prefix of the synthetic user message that replaces a compacted transcript.
pub const COMPACTION_PREFIX: &str = "## Context Summary (compacted)\n\n";

pub(crate) async fn push_message(inner: &Inner, em: &Emitter, message: Message) {
    inner.state().messages.push(message.clone());
    em.log_message(&message);
    record(inner, em, SessionRecord::Message { message }).await;
}

pub(crate) async fn record(inner: &Inner, em: &Emitter, record: SessionRecord) {
    if let Some((store, id)) = &inner.session {
        if let Err(err) = store.append(id, &record).await {
            tracing::warn!(session = %id, error = %err, "session append failed");
            em.emit(AgentEvent::Error {
                code: ErrorCode::Session,
                message: err.to_string(),
                recoverable: true,
            })
            .await;
        }
    }
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
    let context = match crate::hooks::user_prompt(&inner, &em, &message).await {
        crate::hooks::UserPrompt::Proceed(context) => context,
        crate::hooks::UserPrompt::Stop if em.cancel.is_cancelled() => {
            return (RunStatus::Aborted, None)
        }
        crate::hooks::UserPrompt::Stop => return (RunStatus::Success, None),
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
        match crate::compaction::before_call(&inner, &em, std::mem::take(&mut overflowed)).await {
            crate::compaction::Flow::Proceed => {}
            crate::compaction::Flow::Aborted => return (RunStatus::Aborted, final_text),
            crate::compaction::Flow::Failed => return (RunStatus::Error, final_text),
        }
        step += 1;
        em.emit(AgentEvent::TurnStarted { step }).await;

        inner.refresh_sources(&em.cancel).await;
        let mut request = build_request(&inner, true);
        request.output_schema = output.as_ref().map(|o| o.schema.clone());
        let turn = telemetry::turn_span(inner.provider.id(), &request.model, step);
        let call = stream_call(&inner, &em, request, true)
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
                let stop =
                    crate::hooks::stop(&inner, &em, final_text.as_deref(), &mut continuations);
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
    }
}

pub(crate) enum CallEnd {
    Completed(Option<ProviderStop>),
    Aborted,
    Failed(ProviderError),
}

pub(crate) struct CallOutcome {
    /// The assistant message assembled from the stream.
    pub(crate) message: Message,
    /// Tool calls with their raw argument text when it was not valid JSON.
    calls: Vec<(ToolCall, Option<String>)>,
    pub(crate) end: CallEnd,
    /// The call's usage, when the provider reported it.
    pub(crate) usage: Option<crate::usage::Usage>,
}

/// Assembles streamed deltas into content blocks.
#[derive(Default)]
struct Assembler {
    blocks: Vec<ContentBlock>,
    reasoning_open: bool,
    /// Open tool calls: id, block index, argument text.
    calls: Vec<(String, usize, String)>,
}

impl Assembler {
    fn text(&mut self, delta: &str) {
        self.reasoning_open = false;
        match self.blocks.last_mut() {
            Some(ContentBlock::Text { text }) => text.push_str(delta),
            _ => self.blocks.push(ContentBlock::text(delta)),
        }
    }

    fn reasoning(&mut self, delta: &str) {
        if self.reasoning_open {
            if let Some(ContentBlock::Reasoning { text, .. }) = self.blocks.last_mut() {
                text.push_str(delta);
                return;
            }
        }
        self.reasoning_open = true;
        self.blocks.push(ContentBlock::Reasoning {
            text: delta.to_string(),
            signature: None,
            opaque: None,
        });
    }

    fn reasoning_end(&mut self, sig: Option<String>, data: Option<Value>) {
        let open = self.reasoning_open;
        self.reasoning_open = false;
        if open {
            if let Some(ContentBlock::Reasoning {
                signature, opaque, ..
            }) = self.blocks.last_mut()
            {
                *signature = sig;
                *opaque = data;
                return;
            }
        }
        self.blocks.push(ContentBlock::Reasoning {
            text: String::new(),
            signature: sig,
            opaque: data,
        });
    }

    fn call_start(&mut self, id: &str, name: &str) {
        self.reasoning_open = false;
        self.calls
            .push((id.to_string(), self.blocks.len(), String::new()));
        self.blocks.push(ContentBlock::ToolCall(ToolCall {
            id: id.to_string(),
            name: name.to_string(),
            args: Value::Null,
        }));
    }

    fn call_delta(&mut self, id: &str, delta: &str) {
        if let Some((_, _, args)) = self.calls.iter_mut().find(|(cid, _, _)| cid == id) {
            args.push_str(delta);
        }
    }

    fn finish(mut self) -> (Message, Vec<(ToolCall, Option<String>)>) {
        let mut calls = Vec::with_capacity(self.calls.len());
        for (_, index, raw) in self.calls {
            let (args, raw) = parse_args(raw);
            if let Some(ContentBlock::ToolCall(call)) = self.blocks.get_mut(index) {
                call.args = args;
                calls.push((call.clone(), raw));
            }
        }
        (Message::new(Role::Assistant, self.blocks), calls)
    }
}

/// Parses tool-call argument text: blank means `{}`; invalid JSON gives `null` plus the raw
/// text.
fn parse_args(raw: String) -> (Value, Option<String>) {
    if raw.trim().is_empty() {
        return (Value::Object(Default::default()), None);
    }
    match serde_json::from_str(&raw) {
        Ok(value) => (value, None),
        Err(_) => (Value::Null, Some(raw)),
    }
}

/// Streams one model call, forwarding its events.
pub(crate) async fn stream_call(
    inner: &Inner,
    em: &Emitter,
    request: ProviderRequest,
    with_tools: bool,
) -> CallOutcome {
    let provider = inner.provider.id().to_string();
    let model = request.model.clone();
    let pricing = inner.provider.model_info(&model).and_then(|m| m.pricing);
    let mut burst = Burst::new(em);
    burst.push(AgentEvent::RequestStarted {
        scope: RequestScope::Agent,
        provider: provider.clone(),
        model: model.clone(),
        attempt: 1,
        max_attempts: 1,
    });
    let mut stream = inner.provider.stream(request);
    let mut asm = Assembler::default();
    let mut started = false;
    let mut stop = None;
    let mut usage = None;
    let cancelled = em.cancel.cancelled();
    tokio::pin!(cancelled);
    let end = loop {
        if burst.full() {
            burst.flush().await;
            // A stream that is always ready never reaches the `select!` below: look at the
            // token once per burst (checking it costs a lock).
            if em.cancel.is_cancelled() {
                break CallEnd::Aborted;
            }
        }
        // What the stream has ready is taken without waiting; before the loop waits for the
        // provider, everything it has so far goes to the reader.
        let item = match futures::poll!(stream.next()) {
            std::task::Poll::Ready(item) => item,
            std::task::Poll::Pending => {
                burst.flush().await;
                tokio::select! {
                    biased;
                    _ = &mut cancelled => break CallEnd::Aborted,
                    item = stream.next() => item,
                }
            }
        };
        let event = match item {
            None => break CallEnd::Completed(stop),
            Some(Err(err)) => {
                telemetry::record_call_error(&err);
                break CallEnd::Failed(err);
            }
            Some(Ok(event)) => event,
        };
        let content = matches!(
            event,
            ProviderEvent::TextDelta(_)
                | ProviderEvent::ReasoningDelta(_)
                | ProviderEvent::ReasoningEnd { .. }
                | ProviderEvent::ToolCallStart { .. }
        );
        if !started && (content || matches!(event, ProviderEvent::ResponseStarted)) {
            started = true;
            burst.push(AgentEvent::AssistantStarted);
        }
        match event {
            ProviderEvent::RequestStarted {
                attempt,
                max_attempts,
            } => burst.push(AgentEvent::RequestStarted {
                scope: RequestScope::Provider,
                provider: provider.clone(),
                model: model.clone(),
                attempt,
                max_attempts,
            }),
            ProviderEvent::RetryScheduled {
                attempt,
                max_attempts,
                delay,
            } => burst.push(AgentEvent::RetryScheduled {
                scope: RequestScope::Provider,
                attempt,
                max_attempts,
                delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            }),
            ProviderEvent::ResponseStarted => {}
            ProviderEvent::TextDelta(delta) => {
                if !delta.is_empty() {
                    asm.text(&delta);
                    burst.push(AgentEvent::TextDelta { delta });
                }
            }
            ProviderEvent::ReasoningDelta(delta) => {
                if !delta.is_empty() {
                    asm.reasoning(&delta);
                    burst.push(AgentEvent::ReasoningDelta { delta });
                }
            }
            ProviderEvent::ReasoningEnd { signature, opaque } => {
                asm.reasoning_end(signature, opaque)
            }
            ProviderEvent::ToolCallStart { id, name } if with_tools => {
                asm.call_start(&id, &name);
                burst.push(AgentEvent::ToolUseStarted { id, name });
            }
            ProviderEvent::ToolCallDelta { id, delta } if with_tools => {
                asm.call_delta(&id, &delta);
                burst.push(AgentEvent::ToolUseArgsDelta { id, delta });
            }
            ProviderEvent::ToolCallEnd { id } if with_tools => {
                burst.push(AgentEvent::ToolUseEnded { id });
            }
            ProviderEvent::ToolCallStart { .. }
            | ProviderEvent::ToolCallDelta { .. }
            | ProviderEvent::ToolCallEnd { .. } => {}
            ProviderEvent::Usage(mut turn) => {
                telemetry::record_usage(&turn);
                if turn.cost_usd.is_none() {
                    turn.cost_usd = pricing.map(|p| p.cost(&turn));
                }
                let cumulative = {
                    let mut state = inner.state();
                    state.usage += &turn;
                    state.usage
                };
                usage = Some(turn);
                burst.push(AgentEvent::Usage { turn, cumulative });
            }
            ProviderEvent::Stop(reason) => {
                telemetry::record_stop(reason);
                stop = Some(reason)
            }
        }
    };
    burst.flush().await;
    let (message, calls) = asm.finish();
    CallOutcome {
        message,
        calls,
        end,
        usage,
    }
}

/// A call the gate let through, ready to run.
struct Ready {
    call: ToolCall,
    tool: Arc<dyn Tool>,
    /// Permission event to emit before execution, if the decision is reported.
    decided: Option<AgentEvent>,
    /// The sandbox escalation the approver allowed for this call.
    escalation: Option<crate::sandbox::SandboxEscalation>,
}

/// The gate's outcome for one call.
enum Gate {
    Run(Box<Ready>),
    Refuse(ToolCall, String),
    Aborted(ToolCall),
}

/// Runs the calls of one step. Returns false when the run was aborted.
async fn run_tools(
    inner: &Arc<Inner>,
    em: &Emitter,
    calls: Vec<(ToolCall, Option<String>)>,
) -> bool {
    let mut results = Vec::with_capacity(calls.len());
    let mut aborted = false;
    let mut batch: Vec<Ready> = Vec::new();
    for (call, raw) in calls {
        if aborted || em.cancel.is_cancelled() {
            aborted = true;
            finish_unrun(
                em,
                &mut results,
                call,
                "aborted: the run was cancelled before this call ran",
            )
            .await;
            continue;
        }
        match check(inner, em, call, raw).await {
            Gate::Run(ready) if parallel_safe(&ready) => batch.push(*ready),
            gate => {
                if !execute(inner, em, std::mem::take(&mut batch), &mut results).await {
                    aborted = true;
                }
                match gate {
                    Gate::Run(ready) if !aborted => {
                        if !execute(inner, em, vec![*ready], &mut results).await {
                            aborted = true;
                        }
                    }
                    Gate::Run(ready) => {
                        finish_unrun(
                            em,
                            &mut results,
                            ready.call,
                            "aborted: the run was cancelled before this call ran",
                        )
                        .await
                    }
                    Gate::Refuse(call, text) => finish_unrun(em, &mut results, call, &text).await,
                    Gate::Aborted(call) => {
                        aborted = true;
                        finish_unrun(
                            em,
                            &mut results,
                            call,
                            "aborted: the run was cancelled while waiting for approval",
                        )
                        .await
                    }
                }
            }
        }
    }
    if !execute(inner, em, batch, &mut results).await {
        aborted = true;
    }
    if !results.is_empty() {
        push_message(inner, em, Message::new(Role::Tool, results)).await;
    }
    !aborted && !em.cancel.is_cancelled()
}

fn parallel_safe(ready: &Ready) -> bool {
    matches!(
        ready.tool.side_effect(),
        SideEffect::Read | SideEffect::None
    ) && ready.tool.name() != "plan"
}

/// Reports a call that did not run and records its error result.
async fn finish_unrun(em: &Emitter, results: &mut Vec<ContentBlock>, call: ToolCall, text: &str) {
    let mut output = ToolOutput::error(text);
    scrub_error_output(&mut output);
    let content = output.content;
    em.emit(AgentEvent::ToolResult {
        id: call.id.clone(),
        name: call.name,
        status: ToolStatus::Error,
        content: content.clone(),
        truncated: false,
        redacted: output.redacted,
        changed_files: Vec::new(),
        duration_ms: 0,
    })
    .await;
    results.push(ContentBlock::ToolResult {
        call_id: call.id,
        is_error: true,
        content,
    });
}

/// The permission gate for one call: emits permission events and asks the approver.
async fn check(inner: &Inner, em: &Emitter, mut call: ToolCall, raw: Option<String>) -> Gate {
    let Some(tool) = inner.tool(&call.name) else {
        let text = format!("unknown tool: {}", call.name);
        return Gate::Refuse(call, text);
    };
    if let Some(raw) = raw {
        let text = match serde_json::from_str::<Value>(&raw) {
            Err(err) => format!("invalid arguments for {}: {err}", call.name),
            Ok(_) => format!("invalid arguments for {}", call.name),
        };
        return Gate::Refuse(call, text);
    }
    let mut hook_ask = None;
    if let Some(hooks) = inner.hooks.active() {
        match crate::hooks::before_tool(inner, em, &hooks, &mut call).await {
            crate::hooks::BeforeTool::Proceed { ask } => hook_ask = ask,
            crate::hooks::BeforeTool::Refuse(text) => return Gate::Refuse(call, text),
            crate::hooks::BeforeTool::Aborted => return Gate::Aborted(call),
        }
    }
    let escalation = inner.sandbox.escalation(&*tool, &call.args);
    let assessment = inner.sandbox.assess(
        &inner.tools,
        &*tool,
        escalation,
        tool.assess(&call.args, &inner.cwd),
    );
    let (mode, granted) = {
        let state = inner.state();
        (state.mode, state.granted.contains(tool.name()))
    };
    let permission = tool.permission();
    let side_effect = tool.side_effect();
    let mut verdict = match escalation {
        // Running outside the sandbox is the approver's call in every mode.
        Some(_) => crate::sandbox::decide_escalation(mode, permission, &assessment),
        None => decide(mode, permission, side_effect, &assessment, granted),
    };
    if let Some(reason) = hook_ask {
        crate::hooks::force_prompt(&mut verdict, reason);
    }
    let info = PermissionInfo {
        id: call.id.clone(),
        name: call.name.clone(),
        args: call.args.clone(),
        mode,
        permission,
        side_effect,
        reason: verdict.reason.clone(),
        risk: assessment.risk.clone(),
        block: assessment.block.clone(),
    };
    let decided = |info: PermissionInfo, action, granted, always| AgentEvent::PermissionDecided {
        info: Box::new(info),
        action,
        granted,
        always,
    };
    let reason_text = |v: &Verdict| v.reason.clone().unwrap_or_else(|| assessment.risk.reason());
    match verdict.action {
        PermissionAction::Allow | PermissionAction::Cancel => {
            let report = permission != Permission::Allow || verdict.granted || info.block.is_some();
            let decided =
                report.then(|| decided(info, PermissionAction::Allow, verdict.granted, false));
            Gate::Run(Box::new(Ready {
                call,
                tool,
                decided,
                // An escalation is never pre-approved (see `decide_escalation`).
                escalation: None,
            }))
        }
        PermissionAction::Deny => {
            let text = format!(
                "Error: Permission denied for {}: {}",
                call.name,
                reason_text(&verdict)
            );
            em.emit(decided(info, PermissionAction::Deny, false, false))
                .await;
            Gate::Refuse(call, text)
        }
        PermissionAction::Prompt => {
            em.emit(AgentEvent::PermissionRequested(Box::new(info.clone())))
                .await;
            let approver = inner.state().approver.clone();
            let Some(approver) = approver else {
                let text = format!(
                    "Error: Permission required for {}: {} The tool is marked \"prompt\" and was not executed.",
                    call.name,
                    reason_text(&verdict)
                );
                return Gate::Refuse(call, text);
            };
            let request = ApprovalRequest {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                args: call.args.clone(),
                mode,
                side_effect,
                reason: verdict.reason.clone(),
                risk: assessment.risk.clone(),
                block: assessment.block.clone(),
            };
            let approval = tokio::select! {
                biased;
                _ = em.cancel.cancelled() => None,
                approval = approver.approve(request) => Some(approval),
            };
            match approval {
                None => {
                    em.emit(decided(info, PermissionAction::Cancel, false, false))
                        .await;
                    Gate::Aborted(call)
                }
                Some(Approval::Deny { reason }) => {
                    let reason = reason.unwrap_or_else(|| "denied by the user".to_string());
                    let text = format!("Error: Permission denied for {}: {reason}", call.name);
                    let mut info = info;
                    info.reason = Some(reason);
                    em.emit(decided(info, PermissionAction::Deny, false, false))
                        .await;
                    Gate::Refuse(call, text)
                }
                Some(approval) => {
                    let always = approval == Approval::AllowAlways;
                    if always {
                        inner.state().granted.insert(call.name.clone());
                    }
                    Gate::Run(Box::new(Ready {
                        call,
                        tool,
                        decided: Some(decided(info, PermissionAction::Allow, true, always)),
                        escalation,
                    }))
                }
            }
        }
    }
}

/// A spawned tool call; dropping it aborts the task.
struct Running {
    handle: JoinHandle<(Result<ToolOutput, crate::tool::ToolError>, Duration)>,
    progress: ProgressReceiver,
    /// The events of sub-agents the call runs, and the signal that its result went out.
    link: crate::subagent::CallLink,
    span: tracing::Span,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.handle.abort();
        self.link.released.cancel();
    }
}

/// Runs `batch` concurrently and reports each call in order. Returns false if aborted.
async fn execute(
    inner: &Arc<Inner>,
    em: &Emitter,
    batch: Vec<Ready>,
    results: &mut Vec<ContentBlock>,
) -> bool {
    if batch.is_empty() {
        return true;
    }
    let tool_cancel = em.cancel.child_token();
    let mut running: Vec<Running> = batch
        .iter()
        .map(|ready| {
            let (sink, progress) = ProgressSink::channel();
            let (parent, link) =
                crate::subagent::ParentRun::for_call(inner.clone(), em, &ready.call.id);
            let ctx = ToolContext {
                call_id: ready.call.id.clone(),
                cwd: inner.cwd.clone(),
                cancel: tool_cancel.clone(),
                progress: sink,
                sandbox: inner.sandbox.context(&inner.tools, ready.escalation),
                parent: Some(parent),
            };
            let tool = ready.tool.clone();
            let args = ready.call.args.clone();
            let span = telemetry::tool_span(&ready.call);
            let task = async move {
                let started = Instant::now();
                let result = tool.call(args, ctx).await;
                (result, started.elapsed())
            };
            let handle = tokio::spawn(task.instrument(span.clone()));
            Running {
                handle,
                progress,
                link,
                span,
            }
        })
        .collect();
    let mut aborted = false;
    for (ready, run) in batch.into_iter().zip(running.iter_mut()) {
        let Ready {
            call,
            tool: _,
            decided,
            escalation: _,
        } = ready;
        if aborted {
            finish_unrun(
                em,
                results,
                call,
                "aborted: the run was cancelled before this call ran",
            )
            .await;
            continue;
        }
        if let Some(event) = decided {
            em.emit(event).await;
        }
        em.emit(AgentEvent::ToolExecutionStarted {
            id: call.id.clone(),
            name: call.name.clone(),
        })
        .await;
        // After an abort, the tool gets a moment to wind down on its own (a sub-agent
        // reports its end meanwhile); then it is dropped.
        let mut grace: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;
        let outcome = loop {
            tokio::select! {
                biased;
                Some(progress) = run.progress.recv() => {
                    em.emit(AgentEvent::ToolProgress {
                        id: call.id.clone(),
                        stream: progress.stream,
                        text: progress.text,
                    }).await;
                }
                Some(events) = run.link.events.recv() => {
                    if let Some(batch) = Batch::of(events) {
                        em.send(batch).await;
                    }
                }
                joined = &mut run.handle => break Some(joined),
                _ = em.cancel.cancelled(), if grace.is_none() => {
                    grace = Some(Box::pin(tokio::time::sleep(TOOL_CANCEL_GRACE)));
                }
                Some(()) = futures::future::OptionFuture::from(grace.as_mut()) => break None,
            }
        };
        while let Ok(progress) = run.progress.try_recv() {
            em.emit(AgentEvent::ToolProgress {
                id: call.id.clone(),
                stream: progress.stream,
                text: progress.text,
            })
            .await;
        }
        while let Ok(events) = run.link.events.try_recv() {
            if let Some(batch) = Batch::of(events) {
                em.send(batch).await;
            }
        }
        let (mut output, elapsed) = match outcome {
            Some(Ok((Ok(output), elapsed))) => (output, elapsed),
            Some(Ok((Err(err), elapsed))) => (ToolOutput::from_error(err), elapsed),
            Some(Err(join)) if join.is_panic() => (
                ToolOutput::error(format!("tool {} panicked", call.name)),
                Duration::ZERO,
            ),
            Some(Err(_)) | None => (
                ToolOutput::error("aborted: the run was cancelled while the tool ran"),
                Duration::ZERO,
            ),
        };
        // The one place an error result of a run call becomes content.
        scrub_error_output(&mut output);
        // A result over its tool's budget is cut for the model (and the spans and hooks)
        // and spilled to a file.
        crate::spill::apply(&inner.ctx.spill, &call, &mut output).await;
        telemetry::finish_tool(&run.span, &output);
        if em.cancel.is_cancelled() {
            aborted = true;
        }
        if inner.ctx.note_tool && call.name == crate::notes::NOTE_TOOL && !output.is_error {
            crate::notes::pin_from_call(inner, em, &call).await;
        }
        if let Some(update) = output.plan.clone() {
            inner.state().plan = update.plan.clone();
            em.emit(AgentEvent::PlanUpdated {
                id: Some(call.id.clone()),
                explanation: update.explanation,
                plan: update.plan,
            })
            .await;
        }
        if let Some(block) = output.block.clone() {
            em.emit(AgentEvent::ToolBlocked {
                id: call.id.clone(),
                name: call.name.clone(),
                block,
            })
            .await;
        }
        let mut output = crate::hooks::after_tool(inner, em, &call, output).await;
        // Again, in case a hook made the result longer (a no-op otherwise).
        crate::spill::apply(&inner.ctx.spill, &call, &mut output).await;
        em.emit(AgentEvent::ToolResult {
            id: call.id.clone(),
            name: call.name.clone(),
            status: match output.is_error {
                true => ToolStatus::Error,
                false => ToolStatus::Ok,
            },
            content: output.content.clone(),
            truncated: output.truncated,
            redacted: output.redacted,
            changed_files: output.changed_files,
            duration_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        })
        .await;
        // Background sub-agents the call started report from here on.
        run.link.released.cancel();
        results.push(ContentBlock::ToolResult {
            call_id: call.id,
            is_error: output.is_error,
            content: output.content,
        });
    }
    tool_cancel.cancel();
    !aborted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_args_are_an_empty_object_and_bad_args_keep_raw_text() {
        assert_eq!(parse_args("  ".into()), (serde_json::json!({}), None));
        assert_eq!(
            parse_args("{\"a\":1}".into()),
            (serde_json::json!({"a": 1}), None)
        );
        assert_eq!(
            parse_args("{\"a\":".into()),
            (Value::Null, Some("{\"a\":".to_string()))
        );
    }

    #[test]
    fn assembler_splits_reasoning_and_text_blocks() {
        let mut asm = Assembler::default();
        asm.reasoning("think");
        asm.reasoning("ing");
        asm.reasoning_end(Some("sig".into()), None);
        asm.text("hel");
        asm.text("lo");
        asm.call_start("c1", "read_file");
        asm.call_delta("c1", "{\"path\":");
        asm.call_delta("c1", "\"a\"}");
        let (message, calls) = asm.finish();
        assert_eq!(message.content.len(), 3);
        assert_eq!(
            message.content[0],
            ContentBlock::Reasoning {
                text: "thinking".into(),
                signature: Some("sig".into()),
                opaque: None
            }
        );
        assert_eq!(message.text(), "hello");
        assert_eq!(calls[0].0.args, serde_json::json!({"path": "a"}));
    }
}
