//! The tool calls of one step: hooks, the permission gate, execution, results.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::task::JoinHandle;
use tracing::Instrument;

use crate::emit::{Batch, Emitter};
use crate::event::{AgentEvent, PermissionInfo, ToolStatus};
use crate::inner::Inner;
use crate::message::{ContentBlock, Message, Role, ToolCall};
use crate::permission::{decide, Approval, ApprovalRequest, PermissionAction, Verdict};
use crate::secrets::scrub_error_output;
use crate::telemetry;
use crate::tool::{
    Permission, ProgressReceiver, ProgressSink, SideEffect, Tool, ToolContext, ToolOutput,
};

use super::push_message;

/// How long a cancelled tool may take to wind down before its task is dropped.
const TOOL_CANCEL_GRACE: Duration = Duration::from_millis(500);

/// A call the gate let through, ready to run.
struct Ready {
    call: ToolCall,
    tool: Arc<dyn Tool>,
    /// Permission event to emit before execution, if the decision is reported.
    decided: Option<AgentEvent>,
    /// The sandbox escalation the approver allowed for this call.
    escalation: Option<crate::sandbox::policy::SandboxEscalation>,
}

/// The gate's outcome for one call.
enum Gate {
    Run(Box<Ready>),
    Refuse(ToolCall, String),
    Aborted(ToolCall),
}

/// Runs the calls of one step. Returns false when the run was aborted.
pub(super) async fn run_tools(
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
        match crate::hook_points::before_tool(inner, em, &hooks, &mut call).await {
            crate::hook_points::BeforeTool::Proceed { ask } => hook_ask = ask,
            crate::hook_points::BeforeTool::Refuse(text) => return Gate::Refuse(call, text),
            crate::hook_points::BeforeTool::Aborted => return Gate::Aborted(call),
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
        Some(_) => crate::agent_sandbox::decide_escalation(mode, permission, &assessment),
        None => decide(mode, permission, side_effect, &assessment, granted),
    };
    let escalated = escalation.is_some();
    let rule = crate::grants::rule(inner, &*tool, &call, &mut verdict, escalated, granted);
    if let Some(reason) = hook_ask {
        crate::hook_points::force_prompt(&mut verdict, reason);
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
        rule,
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
                        crate::grants::remember(inner, em, &call.name).await;
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
    link: crate::parent_run::CallLink,
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
    // The before-state of the files write calls change (file checkpoints).
    let mut checkpoints = Vec::with_capacity(batch.len());
    for ready in &batch {
        checkpoints.push(crate::checkpoint::before(inner, &*ready.tool, &ready.call).await);
    }
    let mut running: Vec<Running> = batch
        .iter()
        .map(|ready| {
            let (sink, progress) = ProgressSink::channel();
            let (parent, link) =
                crate::parent_run::ParentRun::for_call(inner.clone(), em, &ready.call.id);
            let ctx = ToolContext {
                call_id: ready.call.id.clone(),
                cwd: inner.cwd.clone(),
                cancel: tool_cancel.clone(),
                progress: sink,
                sandbox: inner.sandbox.context(&inner.tools, ready.escalation),
                parent: Some(parent),
                editor: inner.editor.clone(),
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
    let calls = batch.into_iter().zip(running.iter_mut()).zip(checkpoints);
    for ((ready, run), checkpoint) in calls {
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
        if let Some(checkpoint) = checkpoint {
            crate::checkpoint::record_after(inner, em, &call, checkpoint).await;
        }
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
        let mut output = crate::hook_points::after_tool(inner, em, &call, output).await;
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
