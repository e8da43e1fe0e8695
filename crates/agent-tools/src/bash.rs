//! `bash`: runs a command with `bash -lc` in the workspace, in its own process group.
//!
//! The group is killed when the command times out, when the call is cancelled, when the
//! call's future is dropped (a guard with `Drop`), and right after the shell exits (so
//! background jobs it left behind do not outlive the call).

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    async_trait, Assessment, ProgressStream, Risk, SideEffect, Tool, ToolContext, ToolError,
    ToolOutput,
};
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

/// Arguments of `bash`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BashArgs {
    /// The command line, run with `bash -lc` in the workspace root.
    pub command: String,
    /// Timeout in milliseconds (default 120000, at most 600000). The whole process group is
    /// killed when it expires.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// Runs shell commands.
#[derive(Debug, Clone)]
pub struct Bash {
    config: Config,
}

impl Bash {
    /// The tool for `config`.
    pub fn new(config: Arc<ToolsConfig>) -> Self {
        Self { config }
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
         (default 120000 ms). Prefer read_file, list_dir, glob and grep for looking at files."
    }

    fn parameters(&self) -> Value {
        schema_for::<BashArgs>()
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Shell
    }

    fn assess(&self, args: &Value, _cwd: &Path) -> Assessment {
        match str_arg(args, "command") {
            Some(command) => classify_command(command, &self.config.workspace).into_assessment(),
            None => Assessment {
                risk: Risk::for_side_effect(SideEffect::Shell),
                block: None,
                reason: Some(SHELL_REASON.to_string()),
            },
        }
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
        let output = run(
            &args.command,
            self.config.workspace.root(),
            timeout,
            cap,
            &ctx,
        )
        .await?;
        Ok(finish_output(output, cap))
    }
}

/// Kills a process group when dropped (unless disarmed).
#[derive(Debug)]
struct GroupGuard {
    pgid: Option<i32>,
}

impl GroupGuard {
    fn kill(&self) {
        #[cfg(unix)]
        if let Some(pgid) = self.pgid {
            // SAFETY: killpg has no memory-safety preconditions; a stale group id only
            // yields ESRCH, which is ignored.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }

    fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The recent bytes of one output stream: at most `limit` once the command is done.
#[derive(Debug)]
struct Capture {
    bytes: Vec<u8>,
    limit: usize,
    dropped: usize,
    dirty: bool,
}

impl Capture {
    fn new(limit: usize) -> Self {
        Self {
            bytes: Vec::new(),
            limit,
            dropped: 0,
            dirty: false,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        self.dirty = true;
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
        }
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
    cwd: &Path,
    timeout: Duration,
    cap: usize,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-lc")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0")
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = cmd
        .spawn()
        .map_err(|e| ToolError::io(format!("starting bash in {}", cwd.display()), e))?;
    let mut guard = GroupGuard {
        pgid: child.id().and_then(|pid| i32::try_from(pid).ok()),
    };
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let mut out = Capture::new(cap);
    let mut err = Capture::new(cap);
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
    let (body, truncated) = render(&header, &out, &err, cap);
    let mut output = if failed {
        ToolOutput::error(body)
    } else {
        ToolOutput::text(body)
    };
    output.truncated = truncated;
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
fn render(header: &str, out: &Capture, err: &Capture, cap: usize) -> (String, bool) {
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
