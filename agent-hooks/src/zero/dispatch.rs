//! [`ZeroHooks`]: Zero's hook dispatcher as an [`agent_core::hooks::Hooks`].

use agent_core::secrets::scrub_known_values;
use agent_core::{
    async_trait,
    hooks::{
        HookContext, HookOutcome, Hooks, ResultDecision, SessionEnd, SessionSource, StartDecision,
        ToolDecision,
    },
    message::ToolCall,
    PermissionMode, RunStatus, ToolOutput,
};
use serde::Serialize;

use super::audit::AuditLog;
use super::wire::{
    AfterToolPayload, AuditCommand, AuditEvent, AuditResult, BeforeToolPayload, SessionEndPayload,
    SessionStartPayload,
};
use super::{Definition, ZeroConfig, ZeroEvent};
use crate::runner::{self, Ending, Finished, Program, RunConfig};
use crate::HookOptions;

/// Zero's hooks for one workspace: runs the configured commands at Zero's four events,
/// with Zero's rules (see [the module docs](super)).
#[derive(Debug)]
pub struct ZeroHooks {
    config: ZeroConfig,
    run: RunConfig,
    audit: Option<AuditLog>,
}

/// What one dispatch did.
#[derive(Debug, Default)]
struct Outcome {
    /// The hook that vetoed and why.
    blocked: Option<(String, String)>,
    /// Output worth showing, per hook that produced any, in run order.
    messages: Vec<(String, String)>,
}

impl ZeroHooks {
    /// Hooks running `config` with `options` (its `audit` path turns the audit log on).
    pub fn new(config: ZeroConfig, options: &HookOptions) -> Self {
        Self {
            config,
            run: options.run_config(),
            audit: options.audit.clone().map(AuditLog::new),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &ZeroConfig {
        &self.config
    }

    async fn dispatch(
        &self,
        ctx: &HookContext,
        event: ZeroEvent,
        tool: Option<&str>,
        call_id: &str,
        payload: &impl Serialize,
    ) -> Outcome {
        let mut outcome = Outcome::default();
        let selected: Vec<&Definition> = self.config.select(event, tool).collect();
        if selected.is_empty() {
            return outcome;
        }
        let payload = match serde_json::to_vec(payload) {
            Ok(bytes) => bytes,
            Err(err) => {
                tracing::warn!(error = %err, "zero hook payload");
                Vec::new()
            }
        };
        for hook in selected {
            let program = Program::Exec {
                command: hook.command.clone(),
                args: hook.args.clone(),
            };
            self.record(hook, event, call_id, |e| {
                e.kind = "hook_execution_started".into();
                e.commands = vec![AuditCommand {
                    command: hook.command.clone(),
                    args: hook.args.clone(),
                }];
            })
            .await;
            let finished =
                runner::run(&program, &payload, &self.run, &ctx.sandbox, &ctx.cwd, None).await;
            let blocks = event == ZeroEvent::BeforeTool && !finished.success();
            let status = match (&finished.ending, blocks) {
                (_, true) => "blocked",
                (Ending::Exited(0), false) => "completed",
                _ => "error",
            };
            self.record(hook, event, call_id, |e| {
                e.kind = "hook_execution_completed".into();
                e.status = status.into();
                e.results = vec![AuditResult {
                    exit_code: finished.code().unwrap_or(-1),
                    stdout: scrub_known_values(&finished.stdout).into_owned(),
                    stderr: scrub_known_values(&finished.stderr).into_owned(),
                }];
                e.duration_ms = u64::try_from(finished.duration.as_millis()).unwrap_or(u64::MAX);
            })
            .await;
            if let Some(failure) = finished.failure() {
                tracing::warn!(hook = %hook.id, event = event.as_str(), "{failure}");
                if matches!(finished.ending, Ending::NotStarted(_) | Ending::TimedOut(_)) {
                    ctx.report(hook.id.clone(), HookOutcome::Failed, Some(failure));
                }
            }
            if let Some(message) = message(&finished) {
                outcome.messages.push((hook.id.clone(), message));
            }
            if blocks {
                outcome.blocked = Some((hook.id.clone(), block_reason(&finished)));
                // The first veto decides; the rest do not run.
                return outcome;
            }
        }
        outcome
    }

    async fn record(
        &self,
        hook: &Definition,
        event: ZeroEvent,
        call_id: &str,
        fill: impl FnOnce(&mut AuditEvent),
    ) {
        let Some(audit) = &self.audit else {
            return;
        };
        let mut record = AuditEvent {
            sequence: 0,
            created_at: String::new(),
            kind: String::new(),
            hook_id: hook.id.clone(),
            event: event.as_str().into(),
            matcher: hook.matcher.clone(),
            tool_call_id: call_id.into(),
            commands: Vec::new(),
            status: String::new(),
            results: Vec::new(),
            duration_ms: 0,
        };
        fill(&mut record);
        audit.append(record).await;
    }
}

/// Output worth surfacing: stdout, else stderr, trimmed.
fn message(finished: &Finished) -> Option<String> {
    [&finished.stdout, &finished.stderr]
        .into_iter()
        .map(|s| s.trim())
        .find(|s| !s.is_empty())
        .map(str::to_string)
}

/// Why a `beforeTool` hook vetoed: its stderr, else stdout; or what went wrong.
fn block_reason(finished: &Finished) -> String {
    match &finished.ending {
        Ending::TimedOut(_) => match finished.stderr.trim() {
            "" => "hook timed out before returning a verdict".to_string(),
            stderr => format!("hook timed out: {stderr}"),
        },
        Ending::NotStarted(err) => format!("hook could not start: {err}"),
        _ => message(finished).unwrap_or_else(|| "hook exited non-zero".to_string()),
    }
}

fn cwd(ctx: &HookContext) -> String {
    ctx.cwd.display().to_string()
}

/// Zero runs no advisory hooks in plan mode: they would run host commands outside the
/// read-only promise. `beforeTool` still runs (skipping a veto would fail open).
fn suppressed(ctx: &HookContext) -> bool {
    ctx.mode == PermissionMode::Plan
}

#[async_trait]
impl Hooks for ZeroHooks {
    fn name(&self) -> &str {
        "zero"
    }

    async fn before_tool(&self, ctx: &HookContext, call: &ToolCall) -> ToolDecision {
        let cwd = cwd(ctx);
        let payload = BeforeToolPayload {
            event: ZeroEvent::BeforeTool.as_str(),
            tool: &call.name,
            tool_call_id: &call.id,
            session_id: ctx.session_id.as_deref().unwrap_or(""),
            cwd: &cwd,
            args: &call.args,
        };
        let outcome = self
            .dispatch(
                ctx,
                ZeroEvent::BeforeTool,
                Some(&call.name),
                &call.id,
                &payload,
            )
            .await;
        match outcome.blocked {
            Some((id, reason)) => {
                ctx.report(id, HookOutcome::Deny, Some(reason.clone()));
                ToolDecision::Deny { reason }
            }
            None => ToolDecision::Allow,
        }
    }

    async fn after_tool(
        &self,
        ctx: &HookContext,
        call: &ToolCall,
        result: &ToolOutput,
    ) -> ResultDecision {
        if suppressed(ctx) {
            return ResultDecision::Keep;
        }
        let cwd = cwd(ctx);
        let payload = AfterToolPayload {
            event: ZeroEvent::AfterTool.as_str(),
            tool: &call.name,
            tool_call_id: &call.id,
            session_id: ctx.session_id.as_deref().unwrap_or(""),
            cwd: &cwd,
            status: if result.is_error { "error" } else { "ok" },
            changed_files: &result.changed_files,
        };
        let outcome = self
            .dispatch(
                ctx,
                ZeroEvent::AfterTool,
                Some(&call.name),
                &call.id,
                &payload,
            )
            .await;
        let feedback = outcome
            .messages
            .iter()
            .map(|(_, m)| m.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let feedback = feedback.trim();
        if feedback.is_empty() {
            return ResultDecision::Keep;
        }
        let text = format!("Hook output:\n{feedback}");
        let ids: Vec<&str> = outcome.messages.iter().map(|(id, _)| id.as_str()).collect();
        ctx.report(ids.join(","), HookOutcome::Append, Some(text.clone()));
        ResultDecision::Append { text }
    }

    async fn session_start(&self, ctx: &HookContext, _source: SessionSource) -> StartDecision {
        if suppressed(ctx) {
            return StartDecision::Keep;
        }
        let cwd = cwd(ctx);
        let payload = SessionStartPayload {
            event: ZeroEvent::SessionStart.as_str(),
            session_id: ctx.session_id.as_deref().unwrap_or(""),
            cwd: &cwd,
            provider: &ctx.provider,
            model: &ctx.model,
            depth: 0,
            tag: "",
            session_title: "",
        };
        self.dispatch(ctx, ZeroEvent::SessionStart, None, "", &payload)
            .await;
        StartDecision::Keep
    }

    async fn session_end(&self, ctx: &HookContext, end: &SessionEnd) {
        if suppressed(ctx) {
            return;
        }
        let cwd = cwd(ctx);
        let finish_reason = match end.last_status {
            Some(RunStatus::Success) => "stop",
            Some(RunStatus::Error) => "error",
            Some(RunStatus::Aborted) => "cancelled",
            None => "",
        };
        let payload = SessionEndPayload {
            event: ZeroEvent::SessionEnd.as_str(),
            session_id: ctx.session_id.as_deref().unwrap_or(""),
            cwd: &cwd,
            provider: &ctx.provider,
            model: &ctx.model,
            turns: end.turns.unwrap_or(0),
            stop_reason: "",
            finish_reason,
            incomplete: end.last_status.is_some_and(|s| s != RunStatus::Success),
            error: end.error.as_deref(),
        };
        self.dispatch(ctx, ZeroEvent::SessionEnd, None, "", &payload)
            .await;
    }
}
