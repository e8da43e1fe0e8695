//! Stdio server processes: spawned in their own process group, killed with it.
//!
//! The group is killed when the [`ServerProcess`] is dropped or closed, so a server that
//! forks helpers (`npx` starting `node`, a shell wrapper) leaves nothing behind. On Linux the
//! direct child also gets `SIGKILL` when this process dies without running destructors.
//!
//! The group and the parent-death signal come from `agent_sandbox::prepare_server`, as for
//! language servers.
//!
//! A server with a sandbox policy is confined by `agent_sandbox::prepare` (Landlock and
//! seccomp in the child, its working directory as the workspace, a private `$TMPDIR` kept
//! while it runs). Where the kernel cannot enforce the policy, `refuse` does not start the
//! server; `prompt`, with nobody to ask, and `allow` start it with what the kernel enforces
//! and log a warning.

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::sandbox::SandboxReport;
use agent_core::sandbox::{SandboxContext, SandboxPolicy};
use agent_sandbox::{PrivateTmp, ProcessGroup, Roots};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::config::SecretMap;

/// Bytes of a server's stderr kept for error messages (the most recent).
const STDERR_TAIL: usize = 4096;

/// A running server process; dropping it kills its process group.
#[derive(Debug)]
pub(crate) struct ServerProcess {
    child: Child,
    /// Killed with the server (agent-sandbox's group guard, shared with `bash` and hooks).
    group: ProcessGroup,
    stderr: Arc<Mutex<String>>,
    /// Fires when the server's stderr reached its end.
    stderr_done: Option<tokio::sync::oneshot::Receiver<()>>,
    /// The private temp dir of a confined server, removed with it.
    _tmp: Option<PrivateTmp>,
}

/// What [`spawn`] hands over.
pub(crate) struct Spawned {
    pub(crate) process: ServerProcess,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: ChildStdout,
}

/// Starts `command` with piped stdio in its own process group, confined by `sandbox`
/// (none: unconfined).
pub(crate) fn spawn(
    server: &str,
    command: &str,
    args: &[String],
    env: &SecretMap,
    cwd: &Path,
    sandbox: Option<&SandboxPolicy>,
) -> std::io::Result<Spawned> {
    use secrecy::ExposeSecret;

    let mut cmd = Command::new(command);
    cmd.args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in &env.0 {
        cmd.env(name, value.expose_secret());
    }
    // Its own process group, killed on drop, and killed with this process.
    agent_sandbox::prepare_server(&mut cmd);
    let tmp = match sandbox {
        Some(policy) => confine(&mut cmd, server, policy, cwd)?,
        None => None,
    };
    let mut child = cmd.spawn()?;
    let group = ProcessGroup::of(&child);
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(std::io::Error::other("child stdio was not piped"));
    };
    let stderr = Arc::new(Mutex::new(String::new()));
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    if let Some(pipe) = child.stderr.take() {
        let tail = stderr.clone();
        let server = server.to_string();
        tokio::spawn(async move {
            let mut lines = BufReader::new(pipe).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let line = agent_tools::scrub_secrets_cow(&line).into_owned();
                tracing::debug!(target: "agent_mcp::server", server = %server, "{line}");
                let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
                tail.push_str(&line);
                tail.push('\n');
                if tail.len() > 2 * STDERR_TAIL {
                    let mut cut = tail.len() - STDERR_TAIL;
                    while !tail.is_char_boundary(cut) {
                        cut += 1;
                    }
                    tail.drain(..cut);
                }
            }
            let _ = done_tx.send(());
        });
    }
    Ok(Spawned {
        process: ServerProcess {
            child,
            group,
            stderr,
            stderr_done: Some(done_rx),
            _tmp: tmp,
        },
        stdin,
        stdout,
    })
}

/// Applies `policy` to `cmd` (a server started in `cwd`); returns the private temp dir to
/// keep while the server runs.
fn confine(
    cmd: &mut Command,
    server: &str,
    policy: &SandboxPolicy,
    cwd: &Path,
) -> std::io::Result<Option<PrivateTmp>> {
    if !policy.confines() {
        return Ok(None);
    }
    let tmp = match policy.private_tmp {
        true => Some(PrivateTmp::new().map_err(|e| {
            std::io::Error::new(e.kind(), format!("creating the sandbox temp dir: {e}"))
        })?),
        false => None,
    };
    let mut roots = Roots::new(cwd);
    roots.tmp = tmp.as_ref().map(|t| t.path().to_path_buf());
    let sandbox = SandboxContext::new(policy.clone());
    let confinement = agent_sandbox::prepare(cmd, &sandbox, &roots)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let report = SandboxReport::new(policy, Some(&agent_sandbox::probe()));
    if report.fallback_active {
        tracing::warn!(
            server = %server,
            "MCP server runs with less confinement than its sandbox policy asks for ({}): {}",
            report
                .reason
                .as_deref()
                .unwrap_or("the kernel cannot enforce it"),
            confinement.describe()
        );
    } else {
        tracing::debug!(server = %server, "MCP server confined: {}", confinement.describe());
    }
    Ok(tmp)
}

impl ServerProcess {
    /// The process id of the server (the group leader).
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// The last lines the server wrote to stderr (scrubbed of secrets).
    pub(crate) fn stderr_tail(&self) -> String {
        let tail = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        tail.trim().to_string()
    }

    /// After the connection broke: waits up to `grace` for the server to exit and for its
    /// last stderr lines, so that errors can say why.
    pub(crate) async fn settle(&mut self, grace: Duration) {
        let _ = tokio::time::timeout(grace, self.child.wait()).await;
        if let Some(done) = self.stderr_done.take() {
            let _ = tokio::time::timeout(grace, done).await;
        }
    }

    /// The exit status, if the server has exited.
    pub(crate) fn exit_status(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Waits up to `grace` for the server to exit on its own (its stdin is closed by
    /// then), then kills the group and reaps the server.
    pub(crate) async fn shutdown(&mut self, grace: Duration) {
        if tokio::time::timeout(grace, self.child.wait())
            .await
            .is_err()
        {
            self.kill_group();
        }
        // Helpers the server left in its group go too.
        self.kill_group();
        let _ = tokio::time::timeout(grace, self.child.wait()).await;
        self.group.disarm();
    }

    fn kill_group(&mut self) {
        self.group.kill();
        let _ = self.child.start_kill();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill_group();
        // Reap at once when possible; otherwise tokio reaps the killed child later.
        let _ = self.child.try_wait();
    }
}
