//! `bash`: runs a command with `bash -lc` in the workspace, in its own process group, under
//! the OS sandbox of the call's [`agent_core::sandbox::SandboxContext`] (see `agent-sandbox`).
//!
//! The group is killed when the command times out, when the call is cancelled, when the
//! call's future is dropped (a guard with `Drop`), and right after the shell exits (so
//! background jobs it left behind do not outlive the call).
//!
//! When the sandbox refused something the command did (a write outside the writable roots,
//! a socket), the result carries a `sandbox` or `network` block, and its text tells the model
//! that the command was confined and how to ask for a rerun outside the sandbox:
//! `"sandbox_permissions": "with_network"` or `"require_escalated"`, which the agent always
//! puts to the approver.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::{
    async_trait,
    permission::{Assessment, Block, BlockCode, PermissionAction, Risk},
    sandbox::{SandboxEscalation, SandboxSupport},
    tool::ProgressStream,
    SideEffect, Tool, ToolContext, ToolError, ToolOutput,
};
use agent_sandbox::{Confinement, Denial, DenialKind, PrivateTmp, ProcessGroup, Roots};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::time::Instant;

use crate::classify::{classify_command, SHELL_REASON};
use crate::common::{parse_args, schema_for, str_arg, Config, ToolsConfig};
use crate::scrub::{finish_output, scrub_secrets_cow};

/// How often the stdout/stderr tails are reported while a command runs (at most).
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(150);
/// Bytes of each stream's tail sent as progress.
const PROGRESS_TAIL_BYTES: usize = 2048;
/// Bytes before the progress tail that are scrubbed with it (longer than any credential).
const PROGRESS_SCRUB_MARGIN: usize = 1024;
/// Bytes a stream's capture may grow past its limit before the oldest are dropped (so
/// they are dropped in chunks, not on every read).
const CAPTURE_SLACK: usize = 1024 * 1024;
/// How long to keep reading the pipes after the shell exited and its group was killed.
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// Sandbox refusals remembered (by command line) for the escalation request that may follow.
const RECENT_DENIALS: usize = 16;

/// What a call asks of the OS sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SandboxPermissions {
    /// Run inside the sandbox (the default).
    UseDefault,
    /// Rerun with network access (writes stay confined); the user is asked.
    WithNetwork,
    /// Rerun outside the sandbox; the user is asked.
    RequireEscalated,
}

/// Arguments of `bash`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BashArgs {
    /// The command line, run with `bash -lc` in the workspace root.
    pub command: String,
    /// Timeout in milliseconds (default 120000, at most 600000). The whole process group is
    /// killed when it expires.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Only after the sandbox refused this command: `with_network` to rerun it with network
    /// access, `require_escalated` to rerun it outside the sandbox. The user is asked first.
    #[serde(default)]
    pub sandbox_permissions: Option<SandboxPermissions>,
    /// Why the command needs what `sandbox_permissions` asks for (one sentence, shown to the
    /// user).
    #[serde(default)]
    pub justification: Option<String>,
}

/// Runs shell commands.
#[derive(Debug, Clone)]
pub struct Bash {
    config: Config,
    /// The private temp dir of confined commands, made on first use, removed with the tool.
    tmp: Arc<Mutex<Option<PrivateTmp>>>,
    /// Recent sandbox refusals by command line, for the escalation request that may follow.
    denials: Arc<Mutex<VecDeque<(String, Block)>>>,
}

impl Bash {
    /// The tool for `config`.
    pub fn new(config: Arc<ToolsConfig>) -> Self {
        Self {
            config,
            tmp: Arc::default(),
            denials: Arc::default(),
        }
    }

    fn private_tmp(&self) -> Result<PathBuf, ToolError> {
        let mut tmp = self.tmp.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tmp) = tmp.as_ref() {
            return Ok(tmp.path().to_path_buf());
        }
        let made = PrivateTmp::new()
            .map_err(|e| ToolError::io("creating the sandbox's private temp dir", e))?;
        let path = made.path().to_path_buf();
        *tmp = Some(made);
        Ok(path)
    }

    fn remember(&self, command: &str, block: &Block) {
        let mut denials = self.denials.lock().unwrap_or_else(|e| e.into_inner());
        denials.retain(|(c, _)| c != command);
        if denials.len() >= RECENT_DENIALS {
            denials.pop_front();
        }
        denials.push_back((command.to_string(), block.clone()));
    }

    fn recalled(&self, command: &str) -> Option<Block> {
        let denials = self.denials.lock().unwrap_or_else(|e| e.into_inner());
        denials
            .iter()
            .rev()
            .find(|(c, _)| c == command)
            .map(|(_, b)| b.clone())
    }
}

fn escalation_of(args: &Value) -> Option<SandboxEscalation> {
    match args.get("sandbox_permissions").and_then(Value::as_str)? {
        "with_network" => Some(SandboxEscalation::Network),
        "require_escalated" => Some(SandboxEscalation::Unsandboxed),
        _ => None,
    }
}

#[async_trait]
impl Tool for Bash {
    fn name(&self) -> &str {
        "bash"
    }

    fn description(&self) -> &str {
        "Runs a shell command with `bash -lc` in the workspace root and returns its exit code, \
         stdout and stderr. Non-interactive: stdin is empty. Use timeout_ms for long commands \
         (default 120000 ms). Prefer read_file, list_dir, glob and grep for looking at files. \
         Commands may run in an OS sandbox (writes only in the workspace and $TMPDIR, no \
         network); when the sandbox refuses something the result says so and how to ask the \
         user for a rerun outside it (sandbox_permissions with a justification)."
    }

    fn parameters(&self) -> Value {
        schema_for::<BashArgs>()
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Shell
    }

    fn assess(&self, args: &Value, _cwd: &Path) -> Assessment {
        let mut assessment = match str_arg(args, "command") {
            Some(command) => classify_command(command, &self.config.workspace).into_assessment(),
            None => Assessment {
                risk: Risk::for_side_effect(SideEffect::Shell),
                block: None,
                reason: Some(SHELL_REASON.to_string()),
            },
        };
        if let Some(escalation) = escalation_of(args) {
            // The escalation request carries the refusal it answers, when there was one.
            let command = str_arg(args, "command").unwrap_or_default();
            let mut block = self.recalled(command).unwrap_or_else(|| Block {
                code: BlockCode::Sandbox,
                tool_name: Some("bash".to_string()),
                action: PermissionAction::Prompt,
                risk: assessment.risk.clone(),
                path: None,
                reason: match escalation {
                    SandboxEscalation::Network => {
                        "bash asks to run a command with network access".to_string()
                    }
                    SandboxEscalation::Unsandboxed => {
                        "bash asks to run a command outside the OS sandbox".to_string()
                    }
                },
                recoverable: true,
            });
            if let Some(why) = str_arg(args, "justification").filter(|j| !j.trim().is_empty()) {
                block.reason = format!("{}; justification: {}", block.reason, why.trim());
            }
            assessment.block = Some(block);
        }
        assessment
    }

    fn sandbox_support(&self) -> Option<SandboxSupport> {
        Some(agent_sandbox::probe())
    }

    fn sandbox_escalation(&self, args: &Value) -> Option<SandboxEscalation> {
        escalation_of(args)
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: BashArgs = parse_args(self.name(), args)?;
        if args.command.trim().is_empty() {
            return Err(ToolError::InvalidArguments(
                "bash: command is empty".to_string(),
            ));
        }
        let timeout = match args.timeout_ms {
            Some(0) => {
                return Err(ToolError::InvalidArguments(
                    "bash: timeout_ms must be at least 1".to_string(),
                ))
            }
            Some(ms) => Duration::from_millis(ms).min(self.config.bash_max_timeout),
            None => self.config.bash_timeout,
        };
        // The whole output (up to the full-output cap) goes to the agent, which cuts it for
        // the model and spills it to a file.
        let cap = self.config.full_output_cap;
        let workspace = self.config.workspace.root();
        let mut roots = Roots::new(workspace);
        roots.extra = self.config.workspace.extra_roots().to_vec();
        let policy = &ctx.sandbox.policy;
        if policy.confines() && policy.private_tmp {
            roots.tmp = Some(self.private_tmp()?);
        }
        // In the client's terminal when it lends them (and the sandbox can follow there).
        let in_terminal = match ctx.editor.terminals() {
            Some(terminals) => {
                crate::editor_io::bash_in_terminal(
                    terminals,
                    &args.command,
                    &roots,
                    timeout,
                    cap,
                    &ctx,
                )
                .await?
            }
            None => None,
        };
        let output = match in_terminal {
            Some(output) => output,
            None => run(&args.command, &roots, timeout, cap, &ctx).await?,
        };
        if let Some(block) = &output.block {
            self.remember(&args.command, block);
        }
        Ok(finish_output(output, cap))
    }
}

/// What the model is told after the sandbox refused something the command did.
pub(crate) fn sandbox_note(confinement: &Confinement, denial: &Denial) -> String {
    let (what, ask, rerun) = match denial.kind {
        DenialKind::Network => (
            "network access".to_string(),
            "with_network",
            "with network access",
        ),
        DenialKind::FileSystem => (
            match &denial.path {
                Some(path) => format!("a write to {path}"),
                None => "a write outside the writable roots".to_string(),
            },
            "require_escalated",
            "outside the sandbox",
        ),
    };
    format!(
        "[sandbox] The command ran confined ({}) and the sandbox refused {what}: {}\n\
         [sandbox] Keep writes inside the writable roots ($TMPDIR for scratch files) if you can. \
         If the command really needs this, call bash again with the same command, \
         \"sandbox_permissions\": \"{ask}\" and a one-sentence \"justification\"; the user \
         is asked to approve running it {rerun}.",
        confinement.describe(),
        denial.line
    )
}

/// Written to stderr by a confined command line before the command itself, so what the login
/// shell's profile printed (a version manager failing to write under `$HOME`, say) is not
/// taken for the command's own sandbox refusals. Removed from the output.
pub(crate) const PROFILE_END: &[u8] = b"\x1eagent-sandbox: profile done\x1e\n";
/// The same, as the shell prints it.
pub(crate) const PROFILE_END_PRINTF: &str =
    "printf '\\036agent-sandbox: profile done\\036\\n' >&2; ";

/// The recent bytes of one output stream: at most `limit` once the command is done.
#[derive(Debug, Default)]
pub(crate) struct Capture {
    bytes: Vec<u8>,
    limit: usize,
    dropped: usize,
    dirty: bool,
    /// The marker still to be cut out of the stream, if any.
    marker: Option<&'static [u8]>,
    /// Where the marker was, in `bytes` (what the command printed starts there).
    command_start: Option<usize>,
    /// Bytes of `bytes` already searched for the marker.
    scanned: usize,
}

impl Capture {
    /// A capture keeping the last `limit` bytes.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            ..Self::default()
        }
    }

    /// A capture that cuts `marker` out of the stream and remembers where it was.
    pub(crate) fn with_marker(marker: &'static [u8], limit: usize) -> Self {
        Self {
            marker: Some(marker),
            limit,
            ..Self::default()
        }
    }

    pub(crate) fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        self.dirty = true;
        if let Some(marker) = self.marker {
            let from = self.scanned.saturating_sub(marker.len());
            match self.bytes[from..]
                .windows(marker.len())
                .position(|w| w == marker)
            {
                Some(at) => {
                    let at = from + at;
                    self.bytes.drain(at..at + marker.len());
                    self.command_start = Some(at);
                    self.marker = None;
                }
                None => self.scanned = self.bytes.len(),
            }
        }
        if self.bytes.len() > self.limit.saturating_add(CAPTURE_SLACK) {
            self.trim();
        }
    }

    /// Drops the oldest bytes over the limit.
    fn trim(&mut self) {
        if self.bytes.len() > self.limit {
            let excess = self.bytes.len() - self.limit;
            self.bytes.drain(..excess);
            self.dropped += excess;
            self.scanned = self.scanned.saturating_sub(excess);
            self.command_start = self.command_start.map(|s| s.saturating_sub(excess));
        }
    }

    /// What the command itself printed: everything after the marker, or everything when
    /// the marker never came.
    pub(crate) fn command_text(&self) -> String {
        let start = self.command_start.unwrap_or(0).min(self.bytes.len());
        String::from_utf8_lossy(&self.bytes[start..]).into_owned()
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    /// The last `max` bytes (on a character boundary). Only those bytes are decoded, so a
    /// large capture costs nothing extra per progress report.
    fn tail(&self, max: usize) -> String {
        // A few bytes more, so a character cut at the start is dropped rather than mangled.
        let start = self.bytes.len().saturating_sub(max + 3);
        let text = String::from_utf8_lossy(&self.bytes[start..]);
        tail_str(&text, max).to_string()
    }
}

fn tail_str(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while start < text.len() && !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

async fn read_some<R: AsyncRead + Unpin>(
    reader: Option<&mut R>,
    buf: &mut [u8],
) -> std::io::Result<usize> {
    match reader {
        Some(r) => r.read(buf).await,
        None => std::future::pending().await,
    }
}

enum Ending {
    Exited(std::process::ExitStatus),
    TimedOut,
    Cancelled,
}

async fn run(
    command: &str,
    roots: &Roots,
    timeout: Duration,
    cap: usize,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let cwd = roots.workspace.as_path();
    let confined = ctx.sandbox.policy.confines();
    let line = match confined {
        true => format!("{PROFILE_END_PRINTF}{command}"),
        false => command.to_string(),
    };
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-lc")
        .arg(line)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0");
    let confinement =
        agent_sandbox::prepare(&mut cmd, &ctx.sandbox, roots).map_err(|e| match e {
            agent_sandbox::SandboxError::Refused { .. } => ToolError::Blocked(Box::new(Block {
                code: BlockCode::Sandbox,
                tool_name: Some("bash".to_string()),
                action: PermissionAction::Deny,
                risk: Risk::for_side_effect(SideEffect::Shell),
                path: None,
                reason: e.to_string(),
                recoverable: false,
            })),
            other => ToolError::Failed(format!("bash: {other}")),
        })?;
    let mut child = cmd.spawn().map_err(|e| {
        ToolError::io(
            format!(
                "starting bash in {} ({})",
                cwd.display(),
                confinement.describe()
            ),
            e,
        )
    })?;
    let mut guard = ProcessGroup::of(&child);
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let mut out = Capture::new(cap);
    let mut err = match confined {
        true => Capture::with_marker(PROFILE_END, cap),
        false => Capture::new(cap),
    };
    let mut out_buf = vec![0u8; 16 * 1024];
    let mut err_buf = vec![0u8; 16 * 1024];
    let deadline = Instant::now() + timeout;
    let mut ticker = tokio::time::interval(PROGRESS_INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut status: Option<std::process::ExitStatus> = None;
    let mut drain_until: Option<Instant> = None;
    let ending = loop {
        if let Some(status) = status {
            if stdout.is_none() && stderr.is_none() {
                break Ending::Exited(status);
            }
        }
        tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => break Ending::Cancelled,
            _ = tokio::time::sleep_until(deadline), if status.is_none() => break Ending::TimedOut,
            _ = tokio::time::sleep_until(drain_until.unwrap_or(deadline)), if drain_until.is_some() => {
                match status {
                    Some(status) => break Ending::Exited(status),
                    None => break Ending::TimedOut,
                }
            }
            _ = ticker.tick() => send_progress(ctx, &mut out, &mut err),
            read = read_some(stdout.as_mut(), &mut out_buf), if stdout.is_some() => match read {
                Ok(n) if n > 0 => out.push(&out_buf[..n]),
                _ => stdout = None,
            },
            read = read_some(stderr.as_mut(), &mut err_buf), if stderr.is_some() => match read {
                Ok(n) if n > 0 => err.push(&err_buf[..n]),
                _ => stderr = None,
            },
            waited = child.wait(), if status.is_none() => {
                let exit = waited.map_err(|e| ToolError::io("waiting for bash", e))?;
                status = Some(exit);
                // Background jobs left behind must not outlive the call (and would keep the
                // pipes open).
                guard.kill();
                drain_until = Some(Instant::now() + DRAIN_GRACE);
            }
        }
    };
    guard.kill();
    if !matches!(ending, Ending::Exited(_)) {
        // Reap the shell; bounded so a stuck process cannot hang the call.
        let _ = tokio::time::timeout(DRAIN_GRACE, child.wait()).await;
    }
    guard.disarm();
    send_progress(ctx, &mut out, &mut err);
    out.trim();
    err.trim();
    let header = match &ending {
        Ending::Cancelled => {
            return Err(ToolError::Cancelled(
                "the command was cancelled and its processes killed".to_string(),
            ))
        }
        Ending::TimedOut => format!(
            "timed out after {} ms; the command and its processes were killed",
            timeout.as_millis()
        ),
        Ending::Exited(status) => match status.code() {
            Some(code) => format!("exit code: {code}"),
            None => {
                #[cfg(unix)]
                {
                    use std::os::unix::process::ExitStatusExt;
                    format!("killed by signal {}", status.signal().unwrap_or(0))
                }
                #[cfg(not(unix))]
                {
                    "killed".to_string()
                }
            }
        },
    };
    let failed = !matches!(&ending, Ending::Exited(s) if s.success());
    let mut header = header;
    let mut block = None;
    if confinement.is_confined() {
        let denial = confinement
            .find_denial(&err.command_text(), cwd)
            .or_else(|| confinement.find_denial(&out.text(), cwd));
        if let Some(denial) = denial {
            header.push('\n');
            header.push_str(&sandbox_note(&confinement, &denial));
            block = Some(denial.block("bash"));
        }
    }
    match ctx.sandbox.escalation {
        Some(SandboxEscalation::Network) => {
            header.push_str("\n[sandbox] ran with network access (approved by the user)")
        }
        Some(SandboxEscalation::Unsandboxed) => {
            header.push_str("\n[sandbox] ran outside the sandbox (approved by the user)")
        }
        None => {}
    }
    let (body, truncated) = render(&header, &out, &err, cap);
    let mut output = if failed {
        ToolOutput::error(body)
    } else {
        ToolOutput::text(body)
    };
    output.truncated = truncated;
    output.block = block;
    Ok(output)
}

fn send_progress(ctx: &ToolContext, out: &mut Capture, err: &mut Capture) {
    for (capture, stream) in [(out, ProgressStream::Stdout), (err, ProgressStream::Stderr)] {
        if capture.dirty {
            capture.dirty = false;
            // Scrub a wider window than is shown: a secret straddling the start of the tail
            // is recognised whole, so no part of it reaches the progress report.
            let window = capture.tail(PROGRESS_TAIL_BYTES + PROGRESS_SCRUB_MARGIN);
            let clean = scrub_secrets_cow(&window);
            ctx.progress
                .send(stream, tail_str(&clean, PROGRESS_TAIL_BYTES).to_string());
        }
    }
}

/// Formats the result, keeping the end of each stream when the whole would exceed `cap`.
pub(crate) fn render(header: &str, out: &Capture, err: &Capture, cap: usize) -> (String, bool) {
    let stdout = out.text();
    let stderr = err.text();
    let overhead = header.len() + 64;
    let budget = cap.saturating_sub(overhead);
    let total = stdout.len() + stderr.len();
    let mut truncated = out.dropped > 0 || err.dropped > 0;
    let (out_budget, err_budget) = if total <= budget {
        (stdout.len(), stderr.len())
    } else {
        truncated = true;
        let err_budget = stderr.len().min(budget / 3);
        (budget - err_budget, err_budget)
    };
    let section = |text: &str, dropped: usize, budget: usize| -> String {
        let kept = tail_str(text, budget);
        let omitted = dropped + text.len() - kept.len();
        let kept = kept.trim_end_matches('\n');
        if omitted > 0 {
            format!("[… {omitted} earlier bytes omitted]\n{kept}")
        } else {
            kept.to_string()
        }
    };
    let mut body = header.to_string();
    if !stdout.is_empty() {
        body.push_str("\n--- stdout ---\n");
        body.push_str(&section(&stdout, out.dropped, out_budget));
    }
    if !stderr.is_empty() {
        body.push_str("\n--- stderr ---\n");
        body.push_str(&section(&stderr, err.dropped, err_budget));
    }
    if stdout.is_empty() && stderr.is_empty() {
        body.push_str("\n(no output)");
    }
    (body, truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profile_marker_is_cut_out_even_across_chunks() {
        let mut capture = Capture::with_marker(PROFILE_END, 1024);
        capture.push(b"pyenv: cannot rehash\n\x1eagent-sandbox: pro");
        capture.push(b"file done\x1e\ntouch: cannot touch 'x'\n");
        assert_eq!(
            capture.text(),
            "pyenv: cannot rehash\ntouch: cannot touch 'x'\n"
        );
        assert_eq!(capture.command_text(), "touch: cannot touch 'x'\n");

        let mut never = Capture::with_marker(PROFILE_END, 1024);
        never.push(b"bash: syntax error\n");
        assert_eq!(never.command_text(), "bash: syntax error\n");
    }
}
