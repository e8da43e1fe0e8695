//! Runs one hook command: a child process per call, the JSON payload on stdin, the
//! workspace as its directory, a timeout that kills its whole process group, and capped
//! output. Nothing it starts outlives the call, and nothing in it waits without a bound.
//!
//! # The OS sandbox
//!
//! A hook command runs under the agent's sandbox policy
//! ([`agent_core::hooks::HookContext::sandbox`]), confined exactly as the `bash` tool's commands
//! are (`agent_sandbox::prepare`): in `workspace-write` it writes only under the agent's
//! workspace ([`agent_core::hooks::HookContext::cwd`]), the directory the hook runs in
//! ([`RunConfig::cwd`]), the policy's extra roots and a private temp dir (`$TMPDIR`, removed
//! after the call); in `read-only` only under that temp dir; with the network
//! denied it cannot open non-Unix sockets. With the sandbox `off` it runs with the user's
//! rights.
//!
//! When the kernel cannot enforce a part of the policy, the policy's fallback decides, as
//! Zero degrades its hook runner: `refuse` does not start the hook (it ends
//! [`Ending::NotStarted`], so a Zero `beforeTool` hook blocks the tool and a Claude Code
//! hook fails open); `allow` runs it with what the kernel enforces; `prompt` cannot ask
//! anyone for a hook, so it runs as `allow` and a warning is logged (once per process).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use agent_core::sandbox::SandboxReport;
use agent_core::sandbox::{SandboxContext, SandboxFallback};
use agent_sandbox::{Confinement, Denial, PrivateTmp, ProcessGroup, Roots};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

/// Default time a hook command may run before it is killed.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Default bytes kept of each of a hook's output streams; the rest is read and dropped.
pub const DEFAULT_OUTPUT_CAP: usize = 64 * 1024;

/// How long the pipes of an exited (or killed) hook may take to close once its group was
/// killed.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// What to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Program {
    /// A program and its arguments, started directly (Zero's hooks). A relative path with
    /// a `/` in it is taken relative to the workspace.
    Exec {
        /// Program name or path.
        command: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// A command line run by `sh -c` (Claude Code's hooks).
    Shell {
        /// The command line.
        script: String,
    },
}

impl Program {
    /// The command as one line, for logs and names.
    pub fn display(&self) -> String {
        match self {
            Self::Exec { command, args } => {
                let mut line = command.clone();
                for arg in args {
                    line.push(' ');
                    line.push_str(arg);
                }
                line
            }
            Self::Shell { script } => script.clone(),
        }
    }
}

/// Where and how hook commands run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Working directory (the workspace).
    pub cwd: PathBuf,
    /// Variables added to the inherited environment.
    pub env: Vec<(String, String)>,
    /// Time a command may run (unless the hook sets its own).
    pub timeout: Duration,
    /// Bytes kept of stdout and of stderr.
    pub output_cap: usize,
}

impl RunConfig {
    /// Defaults for running in `cwd`.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        Self {
            cwd: cwd.into(),
            env: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            output_cap: DEFAULT_OUTPUT_CAP,
        }
    }
}

/// How a hook command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it.
    Signaled(i32),
    /// It ran past its timeout and its process group was killed.
    TimedOut(Duration),
    /// It could not be started.
    NotStarted(String),
}

/// What one hook command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// How it ended.
    pub ending: Ending,
    /// Its standard output (lossy UTF-8, capped).
    pub stdout: String,
    /// Its standard error (lossy UTF-8, capped).
    pub stderr: String,
    /// Either stream went past the cap.
    pub truncated: bool,
    /// Wall time.
    pub duration: Duration,
    /// Process id it ran as (tests check that nothing of its group survives).
    pub pid: Option<u32>,
    /// What the OS sandbox refused it, as read from its stderr (confined hooks only).
    pub denial: Option<Denial>,
}

impl Finished {
    /// The exit code, when it exited.
    pub fn code(&self) -> Option<i32> {
        match self.ending {
            Ending::Exited(code) => Some(code),
            _ => None,
        }
    }

    /// True when it exited with code 0.
    pub fn success(&self) -> bool {
        self.code() == Some(0)
    }

    /// A one-line description of a failure to start or finish, if there was one.
    pub fn failure(&self) -> Option<String> {
        match &self.ending {
            Ending::NotStarted(err) => Some(format!("hook could not start: {err}")),
            Ending::TimedOut(after) => Some(format!(
                "hook timed out after {} ms and was killed",
                after.as_millis()
            )),
            Ending::Signaled(signal) => Some(format!("hook was killed by signal {signal}")),
            Ending::Exited(_) => None,
        }
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Readies `cmd` as a hook child: piped stdio, a process group of its own, and the OS
/// sandbox of `sandbox` for `roots` (see the module docs). This is the one place a hook's
/// process is configured.
fn prepare(
    cmd: &mut Command,
    sandbox: &SandboxContext,
    roots: &Roots,
) -> Result<Confinement, agent_sandbox::SandboxError> {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    warn_if_unenforced(sandbox);
    agent_sandbox::prepare(cmd, sandbox, roots)
}

/// Logs once per process that hooks run with less confinement than the policy asks for
/// because its `prompt` fallback cannot ask anyone.
fn warn_if_unenforced(sandbox: &SandboxContext) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    let policy = &sandbox.policy;
    if !policy.confines() || policy.fallback != SandboxFallback::Prompt {
        return;
    }
    if WARNED.load(Ordering::Relaxed) {
        return;
    }
    let support = sandbox.support.clone().unwrap_or_else(agent_sandbox::probe);
    let report = SandboxReport::new(policy, Some(&support));
    if report.fallback_active && !WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            "the OS sandbox cannot be fully enforced for hook commands ({}); hooks cannot ask \
             for approval, so they run with what the kernel enforces (sandbox fallback \
             `prompt` is taken as `allow` for hooks)",
            report
                .reason
                .as_deref()
                .unwrap_or("the kernel cannot enforce it")
        );
    }
}

/// Starts the prepared `cmd`; its group is killed when the returned guard drops.
fn spawn(cmd: &mut Command) -> std::io::Result<(Child, ProcessGroup)> {
    let child = cmd.spawn()?;
    let group = ProcessGroup::of(&child);
    Ok((child, group))
}

fn command(program: &Program, cwd: &Path) -> Command {
    match program {
        Program::Exec { command, args } => {
            let path = Path::new(command);
            let mut cmd = if path.is_relative() && command.contains('/') {
                Command::new(cwd.join(path))
            } else {
                Command::new(command)
            };
            cmd.args(args);
            cmd
        }
        Program::Shell { script } => {
            let mut cmd = Command::new("sh");
            cmd.arg("-c").arg(script);
            cmd
        }
    }
}

/// Reads `reader` to its end, keeping the first `cap` bytes.
async fn read_capped(reader: Option<impl AsyncRead + Unpin>, cap: usize) -> (Vec<u8>, bool) {
    let Some(mut reader) = reader else {
        return (Vec::new(), false);
    };
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                truncated |= n > room;
            }
        }
    }
    (kept, truncated)
}

/// Runs `program` with `payload` on stdin, under `sandbox` (see the module docs; pass
/// [`SandboxContext::default`] for none) with `workspace` (the agent's,
/// [`agent_core::hooks::HookContext::cwd`]) and the hook's own directory as the workspace of a
/// `workspace-write` policy. `timeout` overrides the config's.
pub async fn run(
    program: &Program,
    payload: &[u8],
    config: &RunConfig,
    sandbox: &SandboxContext,
    workspace: &Path,
    timeout: Option<Duration>,
) -> Finished {
    let timeout = timeout.unwrap_or(config.timeout);
    let started = Instant::now();
    let not_started = |why: String| Finished {
        ending: Ending::NotStarted(format!("{}: {why}", program.display())),
        stdout: String::new(),
        stderr: String::new(),
        truncated: false,
        duration: started.elapsed(),
        pid: None,
        denial: None,
    };
    let mut cmd = command(program, &config.cwd);
    cmd.current_dir(&config.cwd);
    for (name, value) in &config.env {
        cmd.env(name, value);
    }
    let policy = &sandbox.policy;
    // The private temp dir lives as long as the call.
    let tmp = match policy.confines() && policy.private_tmp {
        true => match PrivateTmp::new() {
            Ok(tmp) => Some(tmp),
            Err(err) => return not_started(format!("creating the sandbox temp dir: {err}")),
        },
        false => None,
    };
    let mut roots = Roots::new(workspace);
    if config.cwd != workspace {
        roots.extra.push(config.cwd.clone());
    }
    roots.tmp = tmp.as_ref().map(|t| t.path().to_path_buf());
    let confinement = match prepare(&mut cmd, sandbox, &roots) {
        Ok(confinement) => confinement,
        Err(err) => return not_started(err.to_string()),
    };
    let mut attempts = 0;
    let spawned = loop {
        match spawn(&mut cmd) {
            // A script written a moment ago may still be open for writing in a child another
            // thread is forking ("text file busy"); that passes in moments.
            #[cfg(unix)]
            Err(err) if err.raw_os_error() == Some(libc::ETXTBSY) && attempts < 10 => {
                attempts += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            other => break other,
        }
    };
    let (mut child, guard) = match spawned {
        Ok(spawned) => spawned,
        Err(err) if confinement.is_confined() => {
            return not_started(format!("{err} ({})", confinement.describe()))
        }
        Err(err) => return not_started(err.to_string()),
    };
    let pid = child.id();
    let stdin = child.stdin.take();
    let payload = payload.to_vec();
    // A hook that never reads its stdin must not stall the call: write on the side.
    let _writer = AbortOnDrop(tokio::spawn(async move {
        if let Some(mut stdin) = stdin {
            // A hook may exit without reading; the broken pipe is not an error.
            let _ = stdin.write_all(&payload).await;
            let _ = stdin.shutdown().await;
        }
    }));
    let cap = config.output_cap;
    let stdout = AbortOnDrop(tokio::spawn(read_capped(child.stdout.take(), cap)));
    let stderr = AbortOnDrop(tokio::spawn(read_capped(child.stderr.take(), cap)));
    let ending = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(Ok(status)) => match status.code() {
            Some(code) => Ending::Exited(code),
            None => {
                #[cfg(unix)]
                {
                    use std::os::unix::process::ExitStatusExt;
                    Ending::Signaled(status.signal().unwrap_or(0))
                }
                #[cfg(not(unix))]
                {
                    Ending::Signaled(0)
                }
            }
        },
        Ok(Err(err)) => Ending::NotStarted(format!("waiting for {}: {err}", program.display())),
        Err(_) => Ending::TimedOut(timeout),
    };
    // Whatever the hook left running in its group goes with it.
    guard.kill();
    if matches!(ending, Ending::TimedOut(_)) {
        let _ = tokio::time::timeout(DRAIN_GRACE, child.wait()).await;
    }
    let mut truncated = false;
    let mut collect = |joined: Option<Result<(Vec<u8>, bool), tokio::task::JoinError>>| {
        let (bytes, cut) = match joined {
            Some(Ok(read)) => read,
            _ => (Vec::new(), false),
        };
        truncated |= cut;
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let stdout = collect(join_within(stdout).await);
    let stderr = collect(join_within(stderr).await);
    drop(guard);
    drop(tmp);
    let denial = match confinement.is_confined() {
        true => confinement.find_denial(&stderr, &config.cwd),
        false => None,
    };
    if let Some(denial) = &denial {
        tracing::warn!(
            hook = %program.display(),
            "{} ({})",
            denial.block("hook").reason,
            confinement.describe()
        );
    }
    Finished {
        ending,
        stdout,
        stderr,
        truncated,
        duration: started.elapsed(),
        pid,
        denial,
    }
}

async fn join_within<T>(mut task: AbortOnDrop<T>) -> Option<Result<T, tokio::task::JoinError>> {
    tokio::time::timeout(DRAIN_GRACE, &mut task.0).await.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(script: &str) -> Program {
        Program::Shell {
            script: script.into(),
        }
    }

    #[tokio::test]
    async fn payload_goes_in_and_output_comes_out() {
        let dir = std::env::temp_dir();
        let config = RunConfig::new(&dir);
        let done = run(
            &shell("cat; echo err >&2; exit 3"),
            b"{\"a\":1}",
            &config,
            &SandboxContext::default(),
            &config.cwd,
            None,
        )
        .await;
        assert_eq!(done.ending, Ending::Exited(3));
        assert_eq!(done.stdout, "{\"a\":1}");
        assert_eq!(done.stderr, "err\n");
        assert!(!done.truncated);
    }

    #[tokio::test]
    async fn output_is_capped_and_the_rest_drained() {
        let mut config = RunConfig::new(std::env::temp_dir());
        config.output_cap = 10;
        let done = run(
            &shell("head -c 200000 /dev/zero | tr '\\0' x"),
            b"",
            &config,
            &SandboxContext::default(),
            &config.cwd,
            None,
        )
        .await;
        assert_eq!(done.ending, Ending::Exited(0));
        assert_eq!(done.stdout, "x".repeat(10));
        assert!(done.truncated);
    }

    #[tokio::test]
    async fn a_hook_that_ignores_a_large_payload_does_not_stall() {
        let config = RunConfig::new(std::env::temp_dir());
        let payload = vec![b'x'; 4 * 1024 * 1024];
        let done = run(
            &shell("exit 0"),
            &payload,
            &config,
            &SandboxContext::default(),
            &config.cwd,
            None,
        )
        .await;
        assert_eq!(done.ending, Ending::Exited(0));
    }

    #[tokio::test]
    async fn a_hung_hook_is_killed_with_its_group_at_the_timeout() {
        let config = RunConfig::new(std::env::temp_dir());
        let script = "sleep 600 & echo $!; wait";
        let done = run(
            &shell(script),
            b"",
            &config,
            &SandboxContext::default(),
            &config.cwd,
            Some(Duration::from_secs(2)),
        )
        .await;
        assert_eq!(done.ending, Ending::TimedOut(Duration::from_secs(2)));
        assert!(done.failure().unwrap().contains("timed out"));
        let child: i32 = done
            .stdout
            .trim()
            .parse()
            .expect("the hook printed its child's pid");
        let hook = i32::try_from(done.pid.expect("it started")).unwrap();
        for pid in [hook, child] {
            let gone = tokio::time::timeout(Duration::from_secs(10), async {
                while alive(pid) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
            .await;
            assert!(gone.is_ok(), "process {pid} survived its hook");
        }
    }

    /// True while `pid` exists and is not a zombie.
    fn alive(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        })
    }

    #[tokio::test]
    async fn a_missing_program_is_reported_not_started() {
        let config = RunConfig::new(std::env::temp_dir());
        let program = Program::Exec {
            command: "/nonexistent/hook-binary".into(),
            args: vec![],
        };
        let done = run(
            &program,
            b"",
            &config,
            &SandboxContext::default(),
            &config.cwd,
            None,
        )
        .await;
        assert!(
            matches!(done.ending, Ending::NotStarted(_)),
            "{:?}",
            done.ending
        );
        assert!(done.failure().unwrap().contains("could not start"));
    }

    #[tokio::test]
    async fn relative_programs_resolve_against_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("hook.sh");
        std::fs::write(&script, "#!/bin/sh\necho from-workspace\n").unwrap();
        make_executable(&script);
        let config = RunConfig::new(dir.path());
        let program = Program::Exec {
            command: "./hook.sh".into(),
            args: vec![],
        };
        let done = run(
            &program,
            b"",
            &config,
            &SandboxContext::default(),
            &config.cwd,
            None,
        )
        .await;
        assert_eq!(done.stdout, "from-workspace\n");
    }

    fn make_executable(path: &Path) {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
}
