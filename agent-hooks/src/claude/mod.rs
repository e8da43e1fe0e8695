//! Claude Code's hook settings, imported: teams keep their hook scripts.
//!
//! A settings file (`.claude/settings.json` style) holds
//! `{"hooks": {"<Event>": [{"matcher": "...", "hooks": [{"type": "command", "command": "...", "timeout": 30}]}]}}`.
//! The events `PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `Stop`, `SessionStart`,
//! `SessionEnd` and `PreCompact` are run; other events and hook types (`prompt`, `http`,
//! …) are skipped with a diagnostic. Each command runs with `sh -c` in the workspace, with
//! `CLAUDE_PROJECT_DIR` set to it, and reads Claude Code's payload on stdin
//! (`session_id`, `transcript_path`, `cwd`, `permission_mode`, `hook_event_name`,
//! `tool_name`, `tool_input`, `tool_use_id`, `tool_response`, `prompt`,
//! `stop_hook_active`, `source`, `reason`, `trigger`). Tool names and inputs are this
//! project's (`bash` with `{"command"}`, `write_file` with `{"path", …}`); matchers may
//! use Claude Code's names (`Bash`, `Edit|Write`) and MCP patterns (`mcp__server__.*`).
//!
//! Answers, as in Claude Code: exit 0 is success (stdout is context for
//! `UserPromptSubmit` and `SessionStart`, and is read as JSON when it is a JSON object);
//! exit 2 blocks, with stderr as the reason (a veto for `PreToolUse`, feedback for
//! `PostToolUse`, a refused prompt for `UserPromptSubmit`, a continuation for `Stop`); any
//! other ending (another exit code, a timeout, a command that cannot start) is a
//! non-blocking error: reported, and the agent goes on. JSON honoured: `continue: false`
//! (with `stopReason`), `decision`/`reason` (`block`; `approve` for `PreToolUse`),
//! `hookSpecificOutput.permissionDecision` `allow|deny|ask` (with
//! `permissionDecisionReason`), `updatedInput`, and `additionalContext`.
//!
//! Differences: `permissionDecision: "allow"` does not bypass this agent's permission gate
//! (the host's policy stands); `PostToolUse` runs for successful results only, as in
//! Claude Code; hooks of one event run one after another, composed as
//! [`agent_core::hooks`] describes, rather than in parallel.

mod wire;

use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    async_trait,
    hooks::{
        CompactTrigger, HookContext, HookList, HookOutcome, Hooks, PromptDecision, ResultDecision,
        SessionEnd, SessionEndReason, SessionSource, StartDecision, StopDecision, StopRequest,
        ToolDecision,
    },
    message::ToolCall,
    PermissionMode, ToolOutput,
};

use crate::matcher::ClaudeMatcher;
use crate::runner::{self, Ending, Finished, Program, RunConfig};
use crate::HookOptions;
use wire::{Output, Payload, Settings, ToolResponse};

/// The longest timeout a hook may ask for.
const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// A Claude Code hook event this crate runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClaudeEvent {
    /// Before a tool call.
    PreToolUse,
    /// After a tool call succeeded.
    PostToolUse,
    /// Before a prompt is processed.
    UserPromptSubmit,
    /// When the agent would stop.
    Stop,
    /// When a session starts.
    SessionStart,
    /// When a session ends.
    SessionEnd,
    /// Before a compaction.
    PreCompact,
}

impl ClaudeEvent {
    const ALL: [Self; 7] = [
        Self::PreToolUse,
        Self::PostToolUse,
        Self::UserPromptSubmit,
        Self::Stop,
        Self::SessionStart,
        Self::SessionEnd,
        Self::PreCompact,
    ];

    /// The name used in settings and payloads.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::Stop => "Stop",
            Self::SessionStart => "SessionStart",
            Self::SessionEnd => "SessionEnd",
            Self::PreCompact => "PreCompact",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == name)
    }
}

/// One command hook from a Claude Code settings file.
pub struct ClaudeHook {
    name: String,
    event: ClaudeEvent,
    matcher: ClaudeMatcher,
    program: Program,
    timeout: Option<Duration>,
    run: Arc<RunConfig>,
    options: HookOptions,
}

impl std::fmt::Debug for ClaudeHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaudeHook")
            .field("name", &self.name)
            .field("event", &self.event)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// The hooks of one settings file.
#[derive(Debug)]
pub struct ClaudeHooks {
    /// The hooks, one list member per command, in file order per event.
    pub list: HookList,
    /// What was skipped and why.
    pub diagnostics: Vec<String>,
}

impl ClaudeHooks {
    /// Parses a settings file's text. Structural errors (not JSON, `hooks` not an object
    /// of arrays, a command without `command`, a regex that does not compile) are errors;
    /// events and hook types this crate does not run are diagnostics.
    pub fn parse(json: &str, options: &HookOptions) -> Result<Self, String> {
        let settings: Settings = serde_json::from_str(json).map_err(|e| e.to_string())?;
        let mut run = options.run_config();
        run.env.push((
            "CLAUDE_PROJECT_DIR".to_string(),
            options.cwd.display().to_string(),
        ));
        let run = Arc::new(run);
        let mut list = HookList::new();
        let mut diagnostics = Vec::new();
        for (event_name, groups) in settings.hooks {
            let Some(event) = ClaudeEvent::parse(&event_name) else {
                diagnostics.push(format!("hooks.{event_name}: event not supported, skipped"));
                continue;
            };
            for (g, group) in groups.into_iter().enumerate() {
                let field = format!("hooks.{event_name}.{g}");
                let matcher = ClaudeMatcher::parse(group.matcher.as_deref())
                    .map_err(|e| format!("{field}.matcher: {e}"))?;
                for (h, def) in group.hooks.into_iter().enumerate() {
                    let field = format!("{field}.hooks.{h}");
                    if def.kind != "command" {
                        diagnostics.push(format!(
                            "{field}: hook type {:?} not supported, skipped",
                            def.kind
                        ));
                        continue;
                    }
                    let command = match def.command.as_deref().map(str::trim) {
                        Some(c) if !c.is_empty() => c.to_string(),
                        _ => return Err(format!("{field}.command: expected a non-empty string")),
                    };
                    let timeout = match def.timeout {
                        None => None,
                        Some(secs) if secs.is_finite() && secs > 0.0 => {
                            Some(Duration::from_secs_f64(secs).min(MAX_TIMEOUT))
                        }
                        Some(_) => {
                            return Err(format!(
                                "{field}.timeout: expected a positive number of seconds"
                            ))
                        }
                    };
                    list.push(Arc::new(ClaudeHook {
                        name: hook_name(&command),
                        event,
                        matcher: matcher.clone(),
                        program: Program::Shell { script: command },
                        timeout,
                        run: run.clone(),
                        options: options.clone(),
                    }));
                }
            }
        }
        Ok(Self { list, diagnostics })
    }
}

/// A hook's reported name: its command, shortened.
fn hook_name(command: &str) -> String {
    let command = agent_core::secrets::scrub_known_values(command);
    let mut name: String = command.chars().take(80).collect();
    if command.chars().count() > 80 {
        name.push('…');
    }
    name
}

/// How a command answered.
#[derive(Debug, PartialEq)]
enum Answer {
    /// Exit 0 with nothing (or only whitespace) on stdout.
    Nothing,
    /// Exit 0 with plain text.
    Text(String),
    /// Exit 0 with a JSON answer.
    Json(Box<Output>),
    /// Exit 2: blocked, with this reason.
    Blocking(String),
    /// Anything else: a non-blocking error.
    Failed(String),
}

fn answer(finished: &Finished) -> Answer {
    match finished.ending {
        Ending::Exited(0) => {}
        Ending::Exited(2) => {
            return Answer::Blocking(match finished.stderr.trim() {
                "" => "blocked by hook".to_string(),
                stderr => stderr.to_string(),
            })
        }
        Ending::Exited(code) => {
            let stderr = finished.stderr.trim();
            return Answer::Failed(match stderr {
                "" => format!("hook exited with code {code}"),
                _ => format!("hook exited with code {code}: {stderr}"),
            });
        }
        _ => {
            return Answer::Failed(
                finished
                    .failure()
                    .unwrap_or_else(|| "hook failed".to_string()),
            )
        }
    }
    let stdout = finished.stdout.trim();
    if stdout.is_empty() {
        return Answer::Nothing;
    }
    match serde_json::from_str::<serde_json::Value>(stdout) {
        Ok(value) if value.is_object() => match serde_json::from_value::<Output>(value) {
            Ok(output) => Answer::Json(Box::new(output)),
            Err(err) => Answer::Failed(format!(
                "hook printed JSON that is not a hook answer: {err}"
            )),
        },
        _ => Answer::Text(stdout.to_string()),
    }
}

fn permission_mode(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::Ask => "default",
        PermissionMode::Auto => "acceptEdits",
        PermissionMode::Plan => "plan",
        PermissionMode::Unsafe => "bypassPermissions",
    }
}

fn nonempty(text: Option<&String>) -> Option<String> {
    text.map(|t| t.trim())
        .filter(|t| !t.is_empty())
        .map(str::to_string)
}

impl ClaudeHook {
    fn payload<'a>(&self, ctx: &'a HookContext) -> Payload<'a> {
        let session_id = ctx.session_id.as_deref().unwrap_or("");
        let transcript_path = self
            .options
            .transcript_path
            .as_ref()
            .and_then(|f| f(session_id))
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        Payload {
            session_id,
            transcript_path,
            cwd: ctx.cwd.display().to_string(),
            permission_mode: permission_mode(ctx.mode),
            hook_event_name: self.event.as_str(),
            tool_name: None,
            tool_input: None,
            tool_use_id: None,
            tool_response: None,
            prompt: None,
            stop_hook_active: None,
            last_assistant_message: None,
            source: None,
            reason: None,
            trigger: None,
            custom_instructions: None,
        }
    }

    /// Runs the command with `payload`; reports a non-blocking failure.
    async fn ask(&self, ctx: &HookContext, payload: &Payload<'_>) -> Answer {
        let bytes = match serde_json::to_vec(payload) {
            Ok(bytes) => bytes,
            Err(err) => {
                tracing::warn!(error = %err, "claude hook payload");
                Vec::new()
            }
        };
        let finished = runner::run(
            &self.program,
            &bytes,
            &self.run,
            &ctx.sandbox,
            &ctx.cwd,
            self.timeout,
        )
        .await;
        let answer = answer(&finished);
        if let Answer::Failed(why) = &answer {
            tracing::warn!(hook = %self.name, event = self.event.as_str(), "{why}");
            ctx.report(self.name.clone(), HookOutcome::Failed, Some(why.clone()));
        }
        answer
    }

    fn is(&self, event: ClaudeEvent) -> bool {
        self.event == event
    }
}

#[async_trait]
impl Hooks for ClaudeHook {
    fn name(&self) -> &str {
        &self.name
    }

    async fn before_tool(&self, ctx: &HookContext, call: &ToolCall) -> ToolDecision {
        if !self.is(ClaudeEvent::PreToolUse) || !self.matcher.matches(&call.name) {
            return ToolDecision::Allow;
        }
        let mut payload = self.payload(ctx);
        payload.tool_name = Some(&call.name);
        payload.tool_input = Some(&call.args);
        payload.tool_use_id = Some(&call.id);
        match self.ask(ctx, &payload).await {
            Answer::Blocking(reason) => ToolDecision::Deny { reason },
            Answer::Json(output) => pre_tool_decision(&output),
            Answer::Nothing | Answer::Text(_) | Answer::Failed(_) => ToolDecision::Allow,
        }
    }

    async fn after_tool(
        &self,
        ctx: &HookContext,
        call: &ToolCall,
        result: &ToolOutput,
    ) -> ResultDecision {
        if !self.is(ClaudeEvent::PostToolUse)
            || result.is_error
            || !self.matcher.matches(&call.name)
        {
            return ResultDecision::Keep;
        }
        let mut payload = self.payload(ctx);
        payload.tool_name = Some(&call.name);
        payload.tool_input = Some(&call.args);
        payload.tool_use_id = Some(&call.id);
        payload.tool_response = Some(ToolResponse {
            output: result.text_content(),
            success: !result.is_error,
            changed_files: &result.changed_files,
        });
        match self.ask(ctx, &payload).await {
            Answer::Blocking(text) => ResultDecision::Append { text },
            Answer::Json(output) => {
                if output.continue_ == Some(false) {
                    return ResultDecision::Halt {
                        reason: nonempty(output.stop_reason.as_ref())
                            .unwrap_or_else(|| "stopped by a PostToolUse hook".to_string()),
                    };
                }
                let mut parts = Vec::new();
                if output.decision.as_deref() == Some("block") {
                    parts.extend(nonempty(output.reason.as_ref()));
                }
                if let Some(spec) = &output.hook_specific_output {
                    parts.extend(nonempty(spec.additional_context.as_ref()));
                }
                match parts.is_empty() {
                    true => ResultDecision::Keep,
                    false => ResultDecision::Append {
                        text: parts.join("\n\n"),
                    },
                }
            }
            Answer::Nothing | Answer::Text(_) | Answer::Failed(_) => ResultDecision::Keep,
        }
    }

    async fn user_prompt(&self, ctx: &HookContext, prompt: &str) -> PromptDecision {
        if !self.is(ClaudeEvent::UserPromptSubmit) {
            return PromptDecision::Keep;
        }
        let mut payload = self.payload(ctx);
        payload.prompt = Some(prompt);
        match self.ask(ctx, &payload).await {
            Answer::Blocking(reason) => PromptDecision::Block { reason },
            Answer::Text(text) => PromptDecision::AddContext { text },
            Answer::Json(output) => {
                if output.continue_ == Some(false) {
                    return PromptDecision::Block {
                        reason: nonempty(output.stop_reason.as_ref())
                            .unwrap_or_else(|| "stopped by a UserPromptSubmit hook".to_string()),
                    };
                }
                if output.decision.as_deref() == Some("block") {
                    return PromptDecision::Block {
                        reason: nonempty(output.reason.as_ref())
                            .unwrap_or_else(|| "blocked by a UserPromptSubmit hook".to_string()),
                    };
                }
                match output
                    .hook_specific_output
                    .as_ref()
                    .and_then(|s| nonempty(s.additional_context.as_ref()))
                {
                    Some(text) => PromptDecision::AddContext { text },
                    None => PromptDecision::Keep,
                }
            }
            Answer::Nothing | Answer::Failed(_) => PromptDecision::Keep,
        }
    }

    async fn stop(&self, ctx: &HookContext, stop: &StopRequest) -> StopDecision {
        if !self.is(ClaudeEvent::Stop) {
            return StopDecision::Accept;
        }
        let mut payload = self.payload(ctx);
        payload.stop_hook_active = Some(stop.active());
        payload.last_assistant_message = stop.final_text.as_deref();
        match self.ask(ctx, &payload).await {
            Answer::Blocking(reason) => StopDecision::Continue { reason },
            Answer::Json(output) => {
                if output.continue_ == Some(false) || output.decision.as_deref() != Some("block") {
                    return StopDecision::Accept;
                }
                StopDecision::Continue {
                    reason: nonempty(output.reason.as_ref())
                        .unwrap_or_else(|| "A stop hook asked you to continue.".to_string()),
                }
            }
            Answer::Nothing | Answer::Text(_) | Answer::Failed(_) => StopDecision::Accept,
        }
    }

    async fn session_start(&self, ctx: &HookContext, source: SessionSource) -> StartDecision {
        let source = match source {
            SessionSource::Startup => "startup",
            SessionSource::Resume => "resume",
            SessionSource::Clear => "clear",
            SessionSource::Compact => "compact",
        };
        if !self.is(ClaudeEvent::SessionStart) || !self.matcher.matches(source) {
            return StartDecision::Keep;
        }
        let mut payload = self.payload(ctx);
        payload.source = Some(source);
        match self.ask(ctx, &payload).await {
            Answer::Text(text) => StartDecision::AddContext { text },
            Answer::Json(output) => match output
                .hook_specific_output
                .as_ref()
                .and_then(|s| nonempty(s.additional_context.as_ref()))
            {
                Some(text) => StartDecision::AddContext { text },
                None => StartDecision::Keep,
            },
            Answer::Blocking(_) | Answer::Nothing | Answer::Failed(_) => StartDecision::Keep,
        }
    }

    async fn session_end(&self, ctx: &HookContext, end: &SessionEnd) {
        let reason = match end.reason {
            SessionEndReason::Clear => "clear",
            SessionEndReason::Exit => "prompt_input_exit",
            SessionEndReason::Other => "other",
        };
        if !self.is(ClaudeEvent::SessionEnd) || !self.matcher.matches(reason) {
            return;
        }
        let mut payload = self.payload(ctx);
        payload.reason = Some(reason);
        self.ask(ctx, &payload).await;
    }

    async fn pre_compact(&self, ctx: &HookContext, trigger: CompactTrigger) {
        let trigger = match trigger {
            CompactTrigger::Manual => "manual",
            CompactTrigger::Auto => "auto",
        };
        if !self.is(ClaudeEvent::PreCompact) || !self.matcher.matches(trigger) {
            return;
        }
        let mut payload = self.payload(ctx);
        payload.trigger = Some(trigger);
        payload.custom_instructions = Some("");
        self.ask(ctx, &payload).await;
    }
}

/// A `PreToolUse` JSON answer as a decision.
fn pre_tool_decision(output: &Output) -> ToolDecision {
    if output.continue_ == Some(false) {
        return ToolDecision::Halt {
            reason: nonempty(output.stop_reason.as_ref())
                .unwrap_or_else(|| "stopped by a PreToolUse hook".to_string()),
        };
    }
    let spec = output.hook_specific_output.clone().unwrap_or_default();
    let updated = spec.updated_input.filter(|v| v.is_object());
    let reason = nonempty(spec.permission_decision_reason.as_ref())
        .or_else(|| nonempty(output.reason.as_ref()));
    let decision = spec
        .permission_decision
        .as_deref()
        .or(match output.decision.as_deref() {
            Some("block") => Some("deny"),
            Some("approve") => Some("allow"),
            _ => None,
        });
    match decision {
        Some("deny") => ToolDecision::Deny {
            reason: reason.unwrap_or_else(|| "denied by a PreToolUse hook".to_string()),
        },
        Some("ask") => ToolDecision::Ask {
            reason,
            args: updated,
        },
        _ => match updated {
            Some(args) => ToolDecision::Rewrite { args },
            None => ToolDecision::Allow,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn done(code: i32, stdout: &str, stderr: &str) -> Finished {
        Finished {
            ending: Ending::Exited(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
            truncated: false,
            duration: Duration::ZERO,
            pid: None,
            denial: None,
        }
    }

    fn json_decision(stdout: &str) -> ToolDecision {
        match answer(&done(0, stdout, "")) {
            Answer::Json(output) => pre_tool_decision(&output),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn exit_codes() {
        assert_eq!(answer(&done(0, "  ", "")), Answer::Nothing);
        assert_eq!(
            answer(&done(0, "hello\n", "")),
            Answer::Text("hello".into())
        );
        assert_eq!(
            answer(&done(2, "ignored", "no way\n")),
            Answer::Blocking("no way".into())
        );
        assert!(matches!(answer(&done(1, "", "oops")), Answer::Failed(m) if m.contains("oops")));
        assert!(matches!(
            answer(&done(0, r#"{"decision": 5}"#, "")),
            Answer::Failed(_)
        ));
        let timed_out = Finished {
            ending: Ending::TimedOut(Duration::from_secs(1)),
            ..done(0, "", "")
        };
        assert!(matches!(answer(&timed_out), Answer::Failed(m) if m.contains("timed out")));
    }

    #[test]
    fn pre_tool_json_answers() {
        assert_eq!(
            json_decision(
                r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "nope"}}"#
            ),
            ToolDecision::Deny {
                reason: "nope".into()
            }
        );
        assert_eq!(
            json_decision(
                r#"{"hookSpecificOutput": {"permissionDecision": "ask", "updatedInput": {"command": "ls -la"}}}"#
            ),
            ToolDecision::Ask {
                reason: None,
                args: Some(serde_json::json!({"command": "ls -la"}))
            }
        );
        assert_eq!(
            json_decision(
                r#"{"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"x": 1}}}"#
            ),
            ToolDecision::Rewrite {
                args: serde_json::json!({"x": 1})
            }
        );
        assert_eq!(
            json_decision(r#"{"decision": "block", "reason": "legacy"}"#),
            ToolDecision::Deny {
                reason: "legacy".into()
            }
        );
        assert_eq!(
            json_decision(r#"{"decision": "approve"}"#),
            ToolDecision::Allow
        );
        assert_eq!(
            json_decision(r#"{"continue": false, "stopReason": "enough"}"#),
            ToolDecision::Halt {
                reason: "enough".into()
            }
        );
        assert_eq!(
            json_decision(r#"{"suppressOutput": true}"#),
            ToolDecision::Allow
        );
    }

    #[test]
    fn settings_parse_with_diagnostics_and_errors() {
        let options = HookOptions::new("/tmp");
        let hooks = ClaudeHooks::parse(
            r#"{"permissions": {"allow": []}, "hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh", "timeout": 5}]}],
                "Notification": [{"hooks": [{"type": "command", "command": "notify"}]}],
                "Stop": [{"hooks": [{"type": "prompt", "prompt": "done?"}, {"type": "command", "command": "check"}]}]
            }}"#,
            &options,
        )
        .unwrap();
        assert_eq!(hooks.list.len(), 2);
        assert_eq!(hooks.diagnostics.len(), 2, "{:?}", hooks.diagnostics);
        assert!(ClaudeHooks::parse(
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}}"#,
            &options
        )
        .is_err());
        assert!(ClaudeHooks::parse(
            r#"{"hooks": {"PreToolUse": [{"matcher": "(", "hooks": []}]}}"#,
            &options
        )
        .is_err());
        assert!(ClaudeHooks::parse(r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}}"#, &options).is_err());
        assert!(ClaudeHooks::parse(r#"{"hooks": []}"#, &options).is_err());
    }
}
