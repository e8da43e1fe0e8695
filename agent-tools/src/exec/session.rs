//! The live processes of `exec_command`: each on a pseudo-terminal (or pipes), in a
//! session and process group of its own, its output gathered by a reader task until a
//! call collects it. [`ExecSessions`] holds them; dropping it (with the tools that share
//! it, when the agent goes) kills every group, so no process outlives the agent.

use std::collections::BTreeMap;
use std::os::fd::AsFd;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::sandbox::SandboxContext;
use agent_core::{CancellationToken, ToolContext};
use agent_sandbox::{ProcessGroup, Roots};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::editor::EditorSession;

/// Live sessions one agent may hold at once.
pub const MAX_EXEC_SESSIONS: usize = 8;
/// Output a session keeps between two calls; older output is dropped beyond it.
pub const MAX_SESSION_BUFFER: usize = 2 * 1024 * 1024;

/// Why a session could not be started or reached.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// Every slot is taken.
    #[error("too many live exec sessions ({0}); finish one (write_stdin with chars \"\\u0003\" interrupts it) before starting another")]
    TooMany(usize),
    /// No live session has this id.
    #[error("no live session {0}")]
    Unknown(i64),
    /// The sandbox could not be applied.
    #[error("{0}")]
    Sandbox(String),
    /// The editor's terminal failed a request.
    #[error("{0}")]
    Editor(agent_core::ToolError),
    /// Starting or talking to the process failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The cause.
        source: std::io::Error,
    },
}

fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> ExecError {
    let context = context.into();
    move |source| ExecError::Io { context, source }
}

/// What one process printed and how it ended, shared with its tasks.
#[derive(Debug, Default)]
struct Shared {
    output: Vec<u8>,
    /// Output was dropped since the last collection (the buffer was full).
    dropped: bool,
    /// The exit code, once the process has exited (a signal counts as 128 + its number).
    exit: Option<i32>,
    /// The readers saw the end of the output.
    eof: bool,
    /// Output streams still open.
    open: usize,
}

/// One live session: a process of ours, or a command in an editor terminal.
enum Session {
    Local(Local),
    Editor(EditorSession),
}

/// One live process of ours.
struct Local {
    command: String,
    pid: u32,
    tty: bool,
    shared: Arc<Mutex<Shared>>,
    changed: Arc<Notify>,
    stdin: tokio::sync::Mutex<Option<Box<dyn tokio::io::AsyncWrite + Send + Unpin>>>,
    group: ProcessGroup,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Local {
    fn drop(&mut self) {
        self.group.kill();
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// A snapshot of one live session, for hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecSessionInfo {
    /// The session id the model uses.
    pub id: i64,
    /// The process id (also its process group id); `None` for a command in an editor
    /// terminal.
    pub pid: Option<u32>,
    /// The command line.
    pub command: String,
}

/// What a call got from a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Collected {
    pub(crate) id: i64,
    pub(crate) output: String,
    pub(crate) dropped: bool,
    pub(crate) exit: Option<i32>,
}

/// The live sessions of one agent's `exec_command` and `write_stdin`.
#[derive(Clone, Default)]
pub struct ExecSessions {
    inner: Arc<Mutex<Registry>>,
}

#[derive(Default)]
struct Registry {
    next: i64,
    live: BTreeMap<i64, Arc<Session>>,
}

impl std::fmt::Debug for ExecSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecSessions")
            .field("live", &self.list())
            .finish()
    }
}

/// How a session is started.
pub(crate) struct Start<'a> {
    pub(crate) command: &'a str,
    pub(crate) cwd: &'a std::path::Path,
    pub(crate) roots: &'a Roots,
    pub(crate) sandbox: &'a SandboxContext,
    pub(crate) tty: bool,
}

impl ExecSessions {
    fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The live sessions, by id.
    pub fn list(&self) -> Vec<ExecSessionInfo> {
        self.registry()
            .live
            .iter()
            .map(|(id, s)| match s.as_ref() {
                Session::Local(s) => ExecSessionInfo {
                    id: *id,
                    pid: Some(s.pid),
                    command: s.command.clone(),
                },
                Session::Editor(s) => ExecSessionInfo {
                    id: *id,
                    pid: None,
                    command: s.command.clone(),
                },
            })
            .collect()
    }

    /// Kills every live session's process group and forgets them; returns their ids.
    pub fn stop_all(&self) -> Vec<i64> {
        let live = std::mem::take(&mut self.registry().live);
        live.keys().copied().collect()
    }

    fn get(&self, id: i64) -> Option<Arc<Session>> {
        self.registry().live.get(&id).cloned()
    }

    fn remove(&self, id: i64) {
        self.registry().live.remove(&id);
    }

    /// Whether another session may start.
    pub(crate) fn has_room(&self) -> Result<(), ExecError> {
        match self.registry().live.len() >= MAX_EXEC_SESSIONS {
            true => Err(ExecError::TooMany(MAX_EXEC_SESSIONS)),
            false => Ok(()),
        }
    }

    fn insert(&self, session: Session) -> i64 {
        let mut registry = self.registry();
        registry.next += 1;
        let id = registry.next;
        registry.live.insert(id, Arc::new(session));
        id
    }

    /// Keeps `session`, a command in an editor terminal; returns its id.
    pub(crate) fn adopt(&self, session: EditorSession) -> Result<i64, ExecError> {
        self.has_room()?;
        Ok(self.insert(Session::Editor(session)))
    }

    /// Starts `start.command` with `bash -c`, returns its id.
    pub(crate) fn start(&self, start: Start<'_>) -> Result<i64, ExecError> {
        self.has_room()?;
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg("-c")
            .arg(start.command)
            .current_dir(start.cwd)
            .env("PAGER", "cat")
            .env("GIT_PAGER", "cat")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("NO_COLOR", "1");
        let shared = Arc::new(Mutex::new(Shared::default()));
        let changed = Arc::new(Notify::new());
        let mut readers: Vec<Box<dyn tokio::io::AsyncRead + Send + Unpin>> = Vec::new();
        let writer: Box<dyn tokio::io::AsyncWrite + Send + Unpin>;
        let mut child = if start.tty {
            let (pty, pts) = pty_process::open().map_err(|e| ExecError::Io {
                context: "opening a pseudo-terminal".into(),
                source: std::io::Error::other(e.to_string()),
            })?;
            let _ = pty.resize(pty_process::Size::new(40, 120));
            let fd = |what: &str| {
                pts.as_fd()
                    .try_clone_to_owned()
                    .map(Stdio::from)
                    .map_err(io(format!("attaching the terminal to {what}")))
            };
            cmd.stdin(fd("stdin")?)
                .stdout(fd("stdout")?)
                .stderr(fd("stderr")?)
                .env("TERM", "dumb");
            agent_sandbox::prepare_session(&mut cmd, start.sandbox, start.roots)
                .map_err(|e| ExecError::Sandbox(e.to_string()))?;
            let child = cmd
                .spawn()
                .map_err(io(format!("starting bash in {}", start.cwd.display())))?;
            // The child holds the terminal now; the master sees its end once it exits.
            drop(pts);
            let (read, write) = pty.into_split();
            readers.push(Box::new(read));
            writer = Box::new(write);
            child
        } else {
            cmd.stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            agent_sandbox::prepare(&mut cmd, start.sandbox, start.roots)
                .map_err(|e| ExecError::Sandbox(e.to_string()))?;
            let mut child = cmd
                .spawn()
                .map_err(io(format!("starting bash in {}", start.cwd.display())))?;
            let (Some(stdin), Some(stdout), Some(stderr)) =
                (child.stdin.take(), child.stdout.take(), child.stderr.take())
            else {
                return Err(ExecError::Io {
                    context: "starting bash".into(),
                    source: std::io::Error::other("no pipes"),
                });
            };
            readers.push(Box::new(stdout));
            readers.push(Box::new(stderr));
            writer = Box::new(stdin);
            child
        };
        let pid = child.id().unwrap_or_default();
        let group = ProcessGroup::from_pid(child.id());
        lock(&shared).open = readers.len();
        let mut tasks: Vec<JoinHandle<()>> = readers
            .into_iter()
            .map(|reader| tokio::spawn(read_output(reader, shared.clone(), changed.clone())))
            .collect();
        let (wait_shared, wait_changed) = (shared.clone(), changed.clone());
        let wait_group = ProcessGroup::from_pid(child.id());
        let wait_task = tokio::spawn(async move {
            let code = match child.wait().await {
                Ok(status) => exit_code(status),
                Err(_) => -1,
            };
            // Whatever it left running in its group goes with it.
            wait_group.kill();
            let mut wait_group = wait_group;
            wait_group.disarm();
            lock(&wait_shared).exit = Some(code);
            wait_changed.notify_waiters();
        });
        let session = Session::Local(Local {
            command: start.command.to_string(),
            pid,
            tty: start.tty,
            shared,
            changed,
            stdin: tokio::sync::Mutex::new(Some(writer)),
            group,
            tasks: {
                tasks.push(wait_task);
                tasks
            },
        });
        Ok(self.insert(session))
    }

    /// Whether session `id` is live.
    pub(crate) fn is_live(&self, id: i64) -> bool {
        self.get(id).is_some()
    }

    /// Whether session `id` has exited (its exit not yet reported).
    pub(crate) async fn exited(&self, id: i64) -> Option<i32> {
        match self.get(id)?.as_ref() {
            Session::Local(s) => lock(&s.shared).exit,
            Session::Editor(s) => s.exited().await.ok().flatten(),
        }
    }

    /// Writes `chars` to session `id`'s input; on pipes a Ctrl-C interrupts the group, and in
    /// an editor terminal it kills the command.
    pub(crate) async fn write(
        &self,
        id: i64,
        chars: &str,
        ctx: &ToolContext,
    ) -> Result<(), ExecError> {
        let session = self.get(id).ok_or(ExecError::Unknown(id))?;
        let session = match session.as_ref() {
            Session::Local(local) => local,
            Session::Editor(editor) => {
                return editor.write(chars, ctx).await.map_err(ExecError::Editor)
            }
        };
        if !session.tty && chars.contains('\u{3}') {
            if let Some(pgid) = session.group.id() {
                // SAFETY: killpg has no memory-safety preconditions.
                unsafe {
                    libc::killpg(pgid, libc::SIGINT);
                }
            }
        }
        let mut stdin = session.stdin.lock().await;
        let Some(writer) = stdin.as_mut() else {
            return Err(ExecError::Unknown(id));
        };
        writer
            .write_all(chars.as_bytes())
            .await
            .map_err(io(format!("writing to session {id}")))?;
        writer
            .flush()
            .await
            .map_err(io(format!("writing to session {id}")))
    }

    /// Waits up to `wait` (or until the process exits and its output ends, or `cancel`),
    /// then takes what session `id` printed since the last call. A session whose exit is
    /// reported is removed.
    pub(crate) async fn collect(
        &self,
        id: i64,
        wait: Duration,
        ctx: &ToolContext,
    ) -> Result<Collected, ExecError> {
        let session = self.get(id).ok_or(ExecError::Unknown(id))?;
        let collected = match session.as_ref() {
            Session::Local(local) => collect_local(id, local, wait, &ctx.cancel).await,
            Session::Editor(editor) => {
                (editor.collect(id, wait, ctx).await).map_err(ExecError::Editor)?
            }
        };
        if collected.exit.is_some() {
            self.remove(id);
        }
        Ok(collected)
    }
}

/// Waits up to `wait` (or until the process exits and its output ends, or `cancel`), then
/// takes what `session` printed since the last call.
async fn collect_local(
    id: i64,
    session: &Local,
    wait: Duration,
    cancel: &CancellationToken,
) -> Collected {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let notified = session.changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        {
            let shared = lock(&session.shared);
            if shared.exit.is_some() && shared.eof {
                break;
            }
        }
        tokio::select! {
            _ = &mut notified => {}
            _ = tokio::time::sleep_until(deadline) => break,
            _ = cancel.cancelled() => break,
        }
    }
    if lock(&session.shared).exit.is_some() && !lock(&session.shared).eof {
        // The process is gone: give the reader a moment to drain the terminal.
        let drain = tokio::time::Instant::now() + Duration::from_millis(500);
        loop {
            let notified = session.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if lock(&session.shared).eof {
                break;
            }
            tokio::select! {
                _ = &mut notified => {}
                _ = tokio::time::sleep_until(drain) => break,
            }
        }
    }
    let (output, dropped, exit) = {
        let mut shared = lock(&session.shared);
        let output = std::mem::take(&mut shared.output);
        let dropped = std::mem::take(&mut shared.dropped);
        (output, dropped, shared.exit)
    };
    let text = String::from_utf8_lossy(&output).replace("\r\n", "\n");
    Collected {
        id,
        output: text,
        dropped,
        exit,
    }
}

fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return 128 + signal;
        }
    }
    -1
}

async fn read_output(
    mut reader: Box<dyn tokio::io::AsyncRead + Send + Unpin>,
    shared: Arc<Mutex<Shared>>,
    changed: Arc<Notify>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf).await {
            // A terminal whose last holder closed it reads as EIO.
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let mut shared = lock(&shared);
                shared.output.extend_from_slice(&buf[..n]);
                if shared.output.len() > MAX_SESSION_BUFFER {
                    let excess = shared.output.len() - MAX_SESSION_BUFFER;
                    shared.output.drain(..excess);
                    shared.dropped = true;
                }
                drop(shared);
                changed.notify_waiters();
            }
        }
    }
    let mut state = lock(&shared);
    state.open = state.open.saturating_sub(1);
    state.eof = state.open == 0;
    drop(state);
    changed.notify_waiters();
}
