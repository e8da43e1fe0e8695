//! The client's terminals, for `bash` and `exec_command` of one session: `terminal/create`
//! (command, args, cwd, env, `outputByteLimit`), the terminal shown in the call's content at
//! once (`{type: "terminal", terminalId}`, and again in its final update).
//!
//! `bash` then waits with `terminal/wait_for_exit` (bounded by the command's timeout), reads
//! `terminal/output`, and sends `terminal/release`; a timeout or a cancelled call kills the
//! command first (`terminal/kill`), and a call dropped mid-way still kills and releases its
//! terminal. An `exec_command` session keeps its terminal across calls: each call waits at
//! most its yield time (`terminal/wait_for_exit`, withdrawn when it passes) and reads the
//! output; `write_stdin` shows the same terminal in its own call, and its `"\u0003"` is a
//! `terminal/kill`. The terminal is released when the session ends or the agent goes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, EnvVariable, KillTerminalRequest, ReleaseTerminalRequest, SessionId,
    SessionUpdate, Terminal, TerminalExitStatus, TerminalId, TerminalOutputRequest,
    TerminalOutputResponse, ToolCallContent, ToolCallUpdate, ToolCallUpdateFields,
    WaitForTerminalExitRequest,
};
use agent_core::editor::{
    EditorTerminals, LiveTerminal, TerminalCommand, TerminalExit, TerminalOutput, TerminalRun,
};
use agent_core::{async_trait, ToolContext, ToolError};

use super::{ClientError, ClientSide, CLIENT_TIMEOUT};

/// How long the terminal's update waits for its call's `tool_call` to be sent first.
const ANNOUNCE_WAIT: Duration = Duration::from_secs(5);

/// The tool calls of this connection running in a client terminal: (session, call) → the
/// terminal, until the session's prompt ends.
#[derive(Debug, Default)]
pub(crate) struct TerminalCalls(Mutex<HashMap<(String, String), TerminalId>>);

impl TerminalCalls {
    fn lock(&self) -> MutexGuard<'_, HashMap<(String, String), TerminalId>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn add(&self, session: &str, call: &str, terminal: &TerminalId) {
        self.lock()
            .insert((session.to_string(), call.to_string()), terminal.clone());
    }

    /// The terminal call `call` of `session` runs in, if any.
    pub(crate) fn get(&self, session: &str, call: &str) -> Option<TerminalId> {
        self.lock()
            .get(&(session.to_string(), call.to_string()))
            .cloned()
    }

    /// Forgets the calls of `session` (its prompt ended).
    pub(crate) fn forget_session(&self, session: &str) {
        self.lock().retain(|(s, _), _| s != session);
    }

    /// `update` with the call's terminal first in its content, when the call runs in one
    /// and the update replaces the content (so the terminal stays shown).
    pub(crate) fn keep_shown(&self, session: &str, update: SessionUpdate) -> SessionUpdate {
        let SessionUpdate::ToolCallUpdate(mut call) = update else {
            return update;
        };
        if let Some(content) = call.fields.content.as_mut() {
            if let Some(terminal) = self.get(session, &call.tool_call_id.0) {
                let shown = content.iter().any(
                    |c| matches!(c, ToolCallContent::Terminal(t) if t.terminal_id == terminal),
                );
                if !shown {
                    content.insert(0, ToolCallContent::Terminal(Terminal::new(terminal)));
                }
            }
        }
        SessionUpdate::ToolCallUpdate(call)
    }
}

/// The client's terminals, for session `session`.
#[derive(Debug)]
pub(crate) struct ClientTerminals {
    side: Arc<ClientSide>,
    session: SessionId,
}

impl ClientTerminals {
    pub(crate) fn new(side: Arc<ClientSide>, session: &str) -> Self {
        Self {
            side,
            session: SessionId::new(session),
        }
    }

    /// Creates a terminal running `command` (its timeout is the caller's to keep).
    async fn create(&self, command: TerminalCommand) -> Result<Created, ToolError> {
        let env = (command.env.iter())
            .map(|(name, value)| EnvVariable::new(name.clone(), value.clone()))
            .collect();
        let create = CreateTerminalRequest::new(self.session.clone(), command.program)
            .args(command.args)
            .env(env)
            .cwd(command.cwd)
            .output_byte_limit(command.output_byte_limit);
        let created = self
            .side
            .request("terminal/create", create, CLIENT_TIMEOUT)
            .await
            .map_err(|e| failed("could not start the command", e))?;
        Ok(Created {
            side: self.side.clone(),
            session: self.session.clone(),
            id: created.terminal_id,
            released: false,
            ended: AtomicBool::new(false),
        })
    }

    /// Shows terminal `id` as the content of call `call_id` (after the call itself).
    async fn show(&self, call_id: &str, id: &TerminalId) {
        show(&self.side, &self.session, call_id, id).await;
    }
}

/// Shows terminal `id` of `session` as the content of call `call_id` (after the call itself).
async fn show(side: &ClientSide, session_id: &SessionId, call_id: &str, id: &TerminalId) {
    let session = &session_id.0;
    side.terminals.add(session, call_id, id);
    let (Some(shared), Some(cx)) = (side.shared(), side.connection()) else {
        return;
    };
    if !shared.announced.wait(session, call_id, ANNOUNCE_WAIT).await {
        tracing::debug!(
            call = call_id,
            "showing a terminal before its call was announced"
        );
    }
    let update = ToolCallUpdate::new(
        call_id.to_string(),
        ToolCallUpdateFields::new()
            .content(vec![ToolCallContent::Terminal(Terminal::new(id.clone()))]),
    );
    crate::acp::handlers::notify(
        &shared,
        cx,
        session_id,
        SessionUpdate::ToolCallUpdate(update),
    );
}

/// A created terminal: released when dropped without [`Created::release`], and killed
/// first unless its command was seen to end.
struct Created {
    side: Arc<ClientSide>,
    session: SessionId,
    id: TerminalId,
    released: bool,
    /// The command was seen to end (no kill needed).
    ended: AtomicBool,
}

impl Created {
    /// `terminal/wait_for_exit`, given up (and withdrawn) after `within`.
    async fn wait(&self, within: Duration) -> Result<TerminalExitStatus, ClientError> {
        let wait = WaitForTerminalExitRequest::new(self.session.clone(), self.id.clone());
        let waited = self.side.request("terminal/wait_for_exit", wait, within);
        let status = waited.await?.exit_status;
        self.ended.store(true, Ordering::Relaxed);
        Ok(status)
    }

    /// `terminal/output`.
    async fn output(&self) -> Result<TerminalOutputResponse, ClientError> {
        let asked = TerminalOutputRequest::new(self.session.clone(), self.id.clone());
        let output = (self.side)
            .request("terminal/output", asked, CLIENT_TIMEOUT)
            .await?;
        if output.exit_status.is_some() {
            self.ended.store(true, Ordering::Relaxed);
        }
        Ok(output)
    }

    async fn kill(&self) -> Result<(), ClientError> {
        let kill = KillTerminalRequest::new(self.session.clone(), self.id.clone());
        let killed = self
            .side
            .request("terminal/kill", kill, CLIENT_TIMEOUT)
            .await;
        if let Err(err) = &killed {
            tracing::debug!(terminal = %self.id.0, error = %err, "terminal/kill failed");
        }
        killed.map(|_| ())
    }

    async fn release(mut self) {
        self.released = true;
        release(&self.side, &self.session, &self.id).await;
    }
}

async fn release(side: &ClientSide, session: &SessionId, id: &TerminalId) {
    let release = ReleaseTerminalRequest::new(session.clone(), id.clone());
    if let Err(err) = side
        .request("terminal/release", release, CLIENT_TIMEOUT)
        .await
    {
        tracing::debug!(terminal = %id.0, error = %err, "terminal/release failed");
    }
}

impl Drop for Created {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (side, session, id) = (self.side.clone(), self.session.clone(), self.id.clone());
        let kill = !self.ended.load(Ordering::Relaxed);
        runtime.spawn(async move {
            if kill {
                let kill = KillTerminalRequest::new(session.clone(), id.clone());
                let _ = side.request("terminal/kill", kill, CLIENT_TIMEOUT).await;
            }
            release(&side, &session, &id).await;
        });
    }
}

/// How the wait for the command ended.
enum Ending {
    Exited(TerminalExitStatus),
    TimedOut,
    Cancelled,
    Failed(ClientError),
}

fn exit_of(status: &TerminalExitStatus) -> TerminalExit {
    match (&status.exit_code, &status.signal) {
        (Some(code), _) => TerminalExit::Code(*code),
        (None, Some(signal)) => TerminalExit::Signal(signal.clone()),
        (None, None) => TerminalExit::Unknown,
    }
}

fn failed(what: &str, err: ClientError) -> ToolError {
    ToolError::Failed(format!("the editor's terminal {what}: {err}"))
}

#[async_trait]
impl EditorTerminals for ClientTerminals {
    async fn run(
        &self,
        command: TerminalCommand,
        ctx: &ToolContext,
    ) -> Result<TerminalRun, ToolError> {
        let timeout = command.timeout;
        let terminal = self.create(command).await?;
        self.show(&ctx.call_id, &terminal.id).await;
        let ending = tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => Ending::Cancelled,
            waited = terminal.wait(timeout) => match waited {
                Ok(status) => Ending::Exited(status),
                Err(ClientError::TimedOut(..)) => Ending::TimedOut,
                Err(err) => Ending::Failed(err),
            },
        };
        if !matches!(ending, Ending::Exited(_)) {
            let _ = terminal.kill().await;
        }
        let output = match ending {
            Ending::Cancelled => None,
            _ => Some(terminal.output().await),
        };
        terminal.release().await;
        let (exit, output) = match (ending, output) {
            (Ending::Cancelled, _) => {
                return Err(ToolError::Cancelled(
                    "the command was cancelled and its terminal killed".to_string(),
                ))
            }
            (Ending::Failed(err), _) => return Err(failed("failed", err)),
            (_, Some(Err(err))) => return Err(failed("output could not be read", err)),
            (_, None) => {
                return Err(ToolError::Failed(
                    "the editor's terminal gave no output".into(),
                ))
            }
            (Ending::TimedOut, Some(Ok(output))) => (TerminalExit::TimedOut, output),
            (Ending::Exited(status), Some(Ok(output))) => (exit_of(&status), output),
        };
        // The output's own exit status is as good as the wait's (some clients fill only it).
        let exit = match (&exit, &output.exit_status) {
            (TerminalExit::Unknown, Some(status)) => exit_of(status),
            _ => exit,
        };
        Ok(TerminalRun {
            output: output.output,
            truncated: output.truncated,
            exit,
        })
    }

    async fn start(
        &self,
        command: TerminalCommand,
        ctx: &ToolContext,
    ) -> Result<Option<Box<dyn LiveTerminal>>, ToolError> {
        let terminal = self.create(command).await?;
        self.show(&ctx.call_id, &terminal.id).await;
        Ok(Some(Box::new(Live(terminal))))
    }
}

/// A command left running in a client terminal across calls (`exec_command`); released
/// when dropped, and killed first unless it was seen to end.
struct Live(Created);

#[async_trait]
impl LiveTerminal for Live {
    async fn show(&self, ctx: &ToolContext) {
        let terminal = &self.0;
        show(
            &terminal.side,
            &terminal.session,
            &ctx.call_id,
            &terminal.id,
        )
        .await;
    }

    async fn wait(
        &self,
        within: Duration,
        ctx: &ToolContext,
    ) -> Result<Option<TerminalExit>, ToolError> {
        tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => Ok(None),
            waited = self.0.wait(within) => match waited {
                Ok(status) => Ok(Some(exit_of(&status))),
                Err(ClientError::TimedOut(..)) => Ok(None),
                Err(err) => Err(failed("failed", err)),
            },
        }
    }

    async fn output(&self) -> Result<TerminalOutput, ToolError> {
        let output = (self.0.output().await).map_err(|e| failed("output could not be read", e))?;
        Ok(TerminalOutput {
            output: output.output,
            truncated: output.truncated,
            exit: output.exit_status.as_ref().map(exit_of),
        })
    }

    async fn kill(&self) -> Result<(), ToolError> {
        (self.0.kill().await).map_err(|e| failed("could not be killed", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::ToolCallStatus;

    #[test]
    fn a_terminal_stays_first_in_its_calls_content() {
        let calls = TerminalCalls::default();
        calls.add("s", "call_1", &TerminalId::new("term_1"));
        let text = ToolCallContent::from("exit code: 0".to_string());
        let update = |content: Option<Vec<ToolCallContent>>| {
            let mut fields = ToolCallUpdateFields::new().status(ToolCallStatus::Completed);
            if let Some(content) = content {
                fields = fields.content(content);
            }
            SessionUpdate::ToolCallUpdate(ToolCallUpdate::new("call_1", fields))
        };
        let json = |u: SessionUpdate| serde_json::to_value(u).expect("json");
        let kept = json(calls.keep_shown("s", update(Some(vec![text.clone()]))));
        assert_eq!(kept["content"][0]["type"], "terminal");
        assert_eq!(kept["content"][0]["terminalId"], "term_1");
        assert_eq!(kept["content"][1]["type"], "content");
        // No content: nothing replaced, nothing added; another session's call: unchanged.
        assert!(json(calls.keep_shown("s", update(None)))
            .get("content")
            .is_none());
        let other = json(calls.keep_shown("t", update(Some(vec![text]))));
        assert_eq!(other["content"][0]["type"], "content");
        calls.forget_session("s");
        assert!(calls.get("s", "call_1").is_none());
    }
}
