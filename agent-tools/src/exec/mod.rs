//! `exec_command {cmd, workdir?, yield_time_ms?, max_output_tokens?, tty?}` and
//! `write_stdin {session_id, chars?, yield_time_ms?, max_output_tokens?}`: processes that
//! live across calls (a REPL, a dev server, a prompt waiting for input), on a
//! pseudo-terminal by default, confined by the agent's OS sandbox like `bash` — or, when the
//! call's context lends editor terminals that live across calls, in one of those (`editor`).
//! Texts follow Zero's tools of the same names.

mod editor;
mod session;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::{
    async_trait,
    permission::{Assessment, Risk},
    sandbox::SandboxSupport,
    SideEffect, Tool, ToolContext, ToolError, ToolOutput,
};
use agent_sandbox::{PrivateTmp, Roots};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

pub use session::{
    ExecError, ExecSessionInfo, ExecSessions, MAX_EXEC_SESSIONS, MAX_SESSION_BUFFER,
};

use crate::classify::{classify_command, SHELL_REASON};
use crate::common::{parse_args, schema_for, str_arg, Config, ToolsConfig};
use crate::scrub::finish_output;
use session::{Collected, Start};

const DEFAULT_EXEC_YIELD_MS: u64 = 10_000;
const DEFAULT_POLL_YIELD_MS: u64 = 5_000;
const DEFAULT_WRITE_YIELD_MS: u64 = 250;
const MIN_YIELD_MS: u64 = 250;
const MAX_EXEC_YIELD_MS: u64 = 30_000;
const MAX_POLL_YIELD_MS: u64 = 300_000;
const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 10_000;
const MAX_OUTPUT_TOKENS: u64 = 200_000;
const BUFFER_TRUNCATED: &str =
    "[output buffer truncated: undrained output exceeded 2MiB, oldest output dropped]";

/// Arguments of `exec_command`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExecCommandArgs {
    /// Shell command to execute.
    #[serde(alias = "command")]
    pub cmd: String,
    /// Working directory for the command, relative to the workspace root (default the root).
    #[serde(default, alias = "cwd")]
    pub workdir: Option<String>,
    /// Wait before yielding output, in milliseconds (default 10000; effective range
    /// 250-30000).
    #[serde(default)]
    pub yield_time_ms: Option<u64>,
    /// Output token budget (default 10000, at most 200000).
    #[serde(default)]
    pub max_output_tokens: Option<u64>,
    /// True (default) runs the command on a pseudo-terminal; false uses plain pipes.
    #[serde(default)]
    pub tty: Option<bool>,
}

/// Arguments of `write_stdin`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteStdinArgs {
    /// Identifier of a running session, as returned by exec_command. Never guess ids.
    pub session_id: Option<i64>,
    /// Characters to write to the process's input (default empty: poll without writing).
    /// "\u0003" interrupts it.
    #[serde(default)]
    pub chars: Option<String>,
    /// Wait before yielding output, in milliseconds (writes: default 250, at most 30000;
    /// empty polls: default 5000, at most 300000).
    #[serde(default)]
    pub yield_time_ms: Option<u64>,
    /// Output token budget (default 10000, at most 200000).
    #[serde(default)]
    pub max_output_tokens: Option<u64>,
}

/// What both tools share: the live sessions and the sandbox's private temp dir.
#[derive(Debug, Clone, Default)]
struct Shared {
    sessions: ExecSessions,
    tmp: Arc<Mutex<Option<PrivateTmp>>>,
}

/// Starts a process that may outlive the call.
#[derive(Debug, Clone)]
pub struct ExecCommand {
    config: Config,
    shared: Shared,
}

/// Writes to (or polls) a process `exec_command` started.
#[derive(Debug, Clone)]
pub struct WriteStdin {
    config: Config,
    shared: Shared,
}

/// The pair of tools over one set of sessions.
pub fn exec_tools(config: Arc<ToolsConfig>) -> (ExecCommand, WriteStdin) {
    let shared = Shared::default();
    (
        ExecCommand {
            config: config.clone(),
            shared: shared.clone(),
        },
        WriteStdin { config, shared },
    )
}

impl ExecCommand {
    /// The live sessions (for a host to list or stop them).
    pub fn sessions(&self) -> &ExecSessions {
        &self.shared.sessions
    }

    fn private_tmp(&self) -> Result<std::path::PathBuf, ToolError> {
        let mut tmp = self.shared.tmp.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tmp) = tmp.as_ref() {
            return Ok(tmp.path().to_path_buf());
        }
        let made = PrivateTmp::new()
            .map_err(|e| ToolError::io("creating the sandbox's private temp dir", e))?;
        let path = made.path().to_path_buf();
        *tmp = Some(made);
        Ok(path)
    }
}

impl WriteStdin {
    /// The live sessions.
    pub fn sessions(&self) -> &ExecSessions {
        &self.shared.sessions
    }
}

fn clamp_yield(asked: Option<u64>, default: u64, max: u64) -> Duration {
    Duration::from_millis(asked.unwrap_or(default).clamp(MIN_YIELD_MS, max))
}

fn token_budget(asked: Option<u64>) -> Result<usize, ToolError> {
    match asked {
        None => Ok(usize::try_from(DEFAULT_MAX_OUTPUT_TOKENS * 4).unwrap_or(usize::MAX)),
        Some(n) if (1..=MAX_OUTPUT_TOKENS).contains(&n) => {
            Ok(usize::try_from(n * 4).unwrap_or(usize::MAX))
        }
        Some(_) => Err(ToolError::Failed(
            "Error: Invalid arguments: max_output_tokens must be between 1 and 200000".into(),
        )),
    }
}

/// Keeps the head and tail of `output` within `max_bytes`.
fn budget_output(output: &str, max_bytes: usize) -> (String, bool) {
    if output.len() <= max_bytes {
        return (output.to_string(), false);
    }
    let head = crate::scrub::truncate_utf8(output, max_bytes / 2).0;
    let mut start = output.len() - (max_bytes - max_bytes / 2);
    while !output.is_char_boundary(start) {
        start += 1;
    }
    (
        format!("{head}\n[output truncated]\n{}", &output[start..]),
        true,
    )
}

/// Zero's result text for what a session printed and where it stands.
fn render(collected: &Collected, max_bytes: usize, interrupted: bool) -> ToolOutput {
    let (output, truncated) =
        budget_output(collected.output.trim_end_matches(['\r', '\n']), max_bytes);
    let mut parts = Vec::new();
    if !output.is_empty() {
        parts.push(format!("output:\n{output}"));
    }
    match collected.exit {
        Some(code) => {
            if output.is_empty() {
                parts.push(match interrupted {
                    true => "Command interrupted.".to_string(),
                    false => "Command completed with no output.".to_string(),
                });
            }
            if interrupted {
                parts.push("interrupted: true".to_string());
            }
            parts.push(format!("exit_code: {code}"));
        }
        None => {
            if output.is_empty() {
                parts.push("Command is still running.".to_string());
            }
            let id = collected.id;
            parts.push(format!("session_id: {id}"));
            parts.push(format!(
                "Use write_stdin with session_id {id} and empty chars to poll; send chars \"\\u0003\" to interrupt/stop it."
            ));
        }
    }
    let mut body = parts.join("\n");
    if collected.dropped {
        body.push('\n');
        body.push_str(BUFFER_TRUNCATED);
    }
    let failed = matches!(collected.exit, Some(code) if code != 0) && !interrupted;
    let mut out = match failed {
        true => ToolOutput::error(body),
        false => ToolOutput::text(body),
    };
    out.truncated = truncated || collected.dropped;
    out
}

/// Zero's message for a session id that is not live (the id trails, so a model probing ids
/// gets one message).
fn unknown_session(id: i64) -> ToolError {
    ToolError::Failed(format!(
        "Error: write_stdin needs a session_id returned by a still-running exec_command; do not guess or probe session ids. Start a process with exec_command, or use write_file/edit_file/apply_patch for file changes. (no live session {id})"
    ))
}

#[async_trait]
impl Tool for ExecCommand {
    fn name(&self) -> &str {
        "exec_command"
    }

    fn description(&self) -> &str {
        "Runs a command in a PTY, returning output or a session ID for ongoing interaction. \
         A command still running after yield_time_ms keeps running: poll it or send it input \
         with write_stdin."
    }

    fn parameters(&self) -> Value {
        schema_for::<ExecCommandArgs>()
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Shell
    }

    fn assess(&self, args: &Value, _cwd: &Path) -> Assessment {
        match str_arg(args, "cmd").or_else(|| str_arg(args, "command")) {
            Some(command) => classify_command(command, &self.config.workspace).into_assessment(),
            None => Assessment {
                risk: Risk::for_side_effect(SideEffect::Shell),
                block: None,
                reason: Some(SHELL_REASON.to_string()),
            },
        }
    }

    fn sandbox_support(&self) -> Option<SandboxSupport> {
        Some(agent_sandbox::probe())
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: ExecCommandArgs = parse_args(self.name(), args)?;
        if args.cmd.trim().is_empty() {
            return Err(ToolError::Failed(
                "Error: Invalid arguments for exec_command: cmd is required".into(),
            ));
        }
        let max_bytes = token_budget(args.max_output_tokens)?;
        let wait = clamp_yield(args.yield_time_ms, DEFAULT_EXEC_YIELD_MS, MAX_EXEC_YIELD_MS);
        let workdir = args.workdir.as_deref().unwrap_or(".");
        let cwd = self
            .config
            .workspace
            .resolve(self.name(), workdir)
            .map_err(|c| ToolError::Blocked(Box::new(c.block)))?;
        if !cwd.path.is_dir() {
            return Err(ToolError::Failed(format!(
                "Error running exec_command: workdir {workdir} is not a directory"
            )));
        }
        let mut roots = Roots::new(self.config.workspace.root());
        roots.extra = self.config.workspace.extra_roots().to_vec();
        let policy = &ctx.sandbox.policy;
        if policy.confines() && policy.private_tmp {
            roots.tmp = Some(self.private_tmp()?);
        }
        let sessions = &self.shared.sessions;
        let starting =
            |e: ExecError| ToolError::Failed(format!("Error starting exec_command: {e}"));
        // In the editor's terminal when it lends one that lives across calls; `tty: false`
        // asks for plain pipes, which an editor's terminal is not: that runs here.
        let mut in_editor = None;
        let terminals = ctx.editor.terminals().filter(|_| args.tty != Some(false));
        if let Some(terminals) = terminals {
            sessions.has_room().map_err(starting)?;
            in_editor =
                editor::EditorSession::start(terminals, &args.cmd, &cwd.path, &roots, &ctx).await?;
        }
        let id = match in_editor {
            Some(session) => sessions.adopt(session),
            None => sessions.start(Start {
                command: &args.cmd,
                cwd: &cwd.path,
                roots: &roots,
                sandbox: &ctx.sandbox,
                tty: args.tty.unwrap_or(true),
            }),
        }
        .map_err(starting)?;
        let collected = sessions
            .collect(id, wait, &ctx)
            .await
            .map_err(|e| ToolError::Failed(format!("Error running exec_command: {e}")))?;
        Ok(finish_output(
            render(&collected, max_bytes, false),
            self.config.full_output_cap,
        ))
    }
}

fn is_interrupt(chars: &str) -> bool {
    chars.contains('\u{3}')
}

#[async_trait]
impl Tool for WriteStdin {
    fn name(&self) -> &str {
        "write_stdin"
    }

    fn description(&self) -> &str {
        "Writes characters to an existing exec_command session and returns recent output. \
         Empty chars polls; \"\\u0003\" interrupts."
    }

    fn parameters(&self) -> Value {
        schema_for::<WriteStdinArgs>()
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Shell
    }

    fn assess(&self, args: &Value, _cwd: &Path) -> Assessment {
        let chars = str_arg(args, "chars").unwrap_or("");
        // Polling and interrupting only observe or stop what already runs.
        if chars.is_empty() || chars == "\u{3}" {
            return Assessment::default();
        }
        Assessment {
            risk: Risk::for_side_effect(SideEffect::Shell),
            block: None,
            reason: Some(
                "Sending stdin can drive an existing shell process beyond the original command."
                    .to_string(),
            ),
        }
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: WriteStdinArgs = parse_args(self.name(), args)?;
        let id = match args.session_id {
            Some(id) if id >= 1 => id,
            other => return Err(unknown_session(other.unwrap_or(0))),
        };
        let chars = args.chars.unwrap_or_default();
        let max_bytes = token_budget(args.max_output_tokens)?;
        let wait = match chars.is_empty() {
            true => clamp_yield(args.yield_time_ms, DEFAULT_POLL_YIELD_MS, MAX_POLL_YIELD_MS),
            false => clamp_yield(
                args.yield_time_ms,
                DEFAULT_WRITE_YIELD_MS,
                MAX_EXEC_YIELD_MS,
            ),
        };
        let sessions = &self.shared.sessions;
        if !sessions.is_live(id) {
            return Err(unknown_session(id));
        }
        if !chars.is_empty() {
            if let Some(code) = sessions.exited(id).await {
                // Nothing is written: report the end, with what was left unread.
                let collected = sessions
                    .collect(id, Duration::ZERO, &ctx)
                    .await
                    .map_err(|_| unknown_session(id))?;
                let leftover = render(&collected, max_bytes, false).text_content();
                return Err(ToolError::Failed(format!(
                    "Error: exec session {id} has already exited (exit code {code}); nothing was written. Start a new one with exec_command.\n{leftover}"
                )));
            }
            sessions
                .write(id, &chars, &ctx)
                .await
                .map_err(|e| match e {
                    ExecError::Unknown(_) => unknown_session(id),
                    other => ToolError::Failed(format!("Error writing to exec session: {other}")),
                })?;
        }
        let collected = sessions
            .collect(id, wait, &ctx)
            .await
            .map_err(|e| match e {
                ExecError::Editor(err) => err,
                _ => unknown_session(id),
            })?;
        Ok(finish_output(
            render(&collected, max_bytes, is_interrupt(&chars)),
            self.config.full_output_cap,
        ))
    }
}
