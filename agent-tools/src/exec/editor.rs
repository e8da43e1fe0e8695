//! `exec_command` sessions in one of the editor's terminals, when the call's context lends
//! terminals that live across calls ([`EditorTerminals::start`]): the user watches the
//! command run in the editor, `write_stdin` polls it through the terminal's output, and
//! `"\u0003"` kills it there.
//!
//! An editor terminal takes no input (ACP has no request for it), so the command's standard
//! input is a FIFO of the session's own, in a private temp dir, that `write_stdin` writes
//! to: the command opens it first thing (`exec 0<fifo`), and reads `/dev/null` where it
//! cannot (an editor whose terminals run on another machine). Its output still goes to the
//! editor's pseudo-terminal, so a program sees a terminal on standard output and a pipe on
//! standard input: line-oriented input works, a full-screen program does not; the input is
//! not echoed.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::editor::{EditorTerminals, LiveTerminal, TerminalExit};
use agent_core::{ToolContext, ToolError};
use agent_sandbox::{PrivateTmp, Roots};
use tokio::io::AsyncWriteExt;
use tokio::net::unix::pipe;

use super::session::{Collected, MAX_SESSION_BUFFER};

/// How long a write to the command's input may wait for it to read (a full pipe).
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// One command in an editor terminal.
pub(crate) struct EditorSession {
    pub(crate) command: String,
    terminal: Box<dyn LiveTerminal>,
    /// The write end of the command's input (opened read-write, so neither side's open
    /// blocks and a write never fails for want of a reader).
    stdin: tokio::sync::Mutex<pipe::Sender>,
    /// Holds the FIFO; removed when the session goes.
    _dir: PrivateTmp,
    /// What the terminal showed at the last collection.
    seen: tokio::sync::Mutex<String>,
    /// How the command ended, once seen.
    exit: Mutex<Option<i32>>,
}

impl EditorSession {
    /// Starts `command` in a terminal of `terminals`, in `cwd`, confined as `exec_command`
    /// confines its own processes. `None` when the editor cannot keep a terminal across
    /// calls or the sandbox needs a launcher this executable lacks: then the tool starts the
    /// process itself.
    pub(crate) async fn start(
        terminals: &Arc<dyn EditorTerminals>,
        command: &str,
        cwd: &Path,
        roots: &Roots,
        ctx: &ToolContext,
    ) -> Result<Option<Self>, ToolError> {
        let dir = PrivateTmp::new()
            .map_err(|e| ToolError::io("creating the directory of the command's input", e))?;
        let fifo = dir.path().join("stdin");
        make_fifo(&fifo).map_err(|e| ToolError::io("creating the command's input pipe", e))?;
        let stdin = pipe::OpenOptions::new()
            .read_write(true)
            .open_sender(&fifo)
            .map_err(|e| ToolError::io("opening the command's input pipe", e))?;
        let fifo = shell_words::quote(&fifo.to_string_lossy()).into_owned();
        let line = format!("{{ exec 0<{fifo}; }} 2>/dev/null || exec 0</dev/null\n{command}");
        let Some((mut request, _)) = crate::editor_io::terminal_command(
            "exec_command",
            vec!["-c".to_string(), line],
            cwd,
            roots,
            u64::try_from(MAX_SESSION_BUFFER).ok(),
            Duration::MAX,
            ctx,
        )?
        else {
            return Ok(None);
        };
        request.env.push(("NO_COLOR".to_string(), "1".to_string()));
        let Some(terminal) = terminals.start(request, ctx).await? else {
            return Ok(None);
        };
        Ok(Some(Self {
            command: command.to_string(),
            terminal,
            stdin: tokio::sync::Mutex::new(stdin),
            _dir: dir,
            seen: tokio::sync::Mutex::new(String::new()),
            exit: Mutex::new(None),
        }))
    }

    fn known_exit(&self) -> Option<i32> {
        *self.exit.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record_exit(&self, exit: &TerminalExit) -> i32 {
        let code = exit_code(exit);
        *self.exit.lock().unwrap_or_else(|e| e.into_inner()) = Some(code);
        code
    }

    /// How the command ended, if it has (asks the editor).
    pub(crate) async fn exited(&self) -> Result<Option<i32>, ToolError> {
        if let Some(code) = self.known_exit() {
            return Ok(Some(code));
        }
        let shown = self.terminal.output().await?;
        Ok(shown.exit.map(|exit| self.record_exit(&exit)))
    }

    /// Writes `chars` to the command's input; a `"\u0003"` kills the command instead (the
    /// editor's terminal cannot deliver an interrupt).
    pub(crate) async fn write(&self, chars: &str, ctx: &ToolContext) -> Result<(), ToolError> {
        self.terminal.show(ctx).await;
        if chars.contains('\u{3}') {
            return self.terminal.kill().await;
        }
        let mut stdin = self.stdin.lock().await;
        let written = async {
            stdin.write_all(chars.as_bytes()).await?;
            stdin.flush().await
        };
        match tokio::time::timeout(WRITE_TIMEOUT, written).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(ToolError::io("writing to the command's input", e)),
            Err(_) => Err(ToolError::Failed(format!(
                "Error writing to exec session: the command did not read its input within {} s",
                WRITE_TIMEOUT.as_secs()
            ))),
        }
    }

    /// Waits up to `wait` (or until the command ends, or the call is cancelled), then takes
    /// what the terminal showed since the last collection.
    pub(crate) async fn collect(
        &self,
        id: i64,
        wait: Duration,
        ctx: &ToolContext,
    ) -> Result<Collected, ToolError> {
        let mut exit = self.known_exit();
        if exit.is_none() {
            exit = (self.terminal.wait(wait, ctx).await?).map(|e| self.record_exit(&e));
        }
        let shown = self.terminal.output().await?;
        if exit.is_none() {
            exit = shown.exit.as_ref().map(|e| self.record_exit(e));
        }
        let mut seen = self.seen.lock().await;
        let (new, dropped) = since(&seen, &shown.output, shown.truncated);
        let output = new.replace("\r\n", "\n");
        *seen = shown.output;
        Ok(Collected {
            id,
            output,
            dropped,
            exit,
        })
    }
}

/// What `now` shows beyond `before` (the terminal's whole output at the last look), and
/// whether output may have been lost in between. The output grows at its end; past the
/// terminal's byte limit its start is dropped, and then what is new follows the first place
/// `now` shows the end of `before` (repeated output may come back twice; none is lost).
/// Output that was rewritten rather than extended comes back whole.
fn since<'a>(before: &str, now: &'a str, truncated: bool) -> (&'a str, bool) {
    if let Some(new) = now.strip_prefix(before) {
        return (new, false);
    }
    if !truncated {
        return (now, false);
    }
    let mut start = before.len().saturating_sub(4096);
    while !before.is_char_boundary(start) {
        start += 1;
    }
    let tail = &before[start..];
    match now.find(tail) {
        Some(at) if !tail.is_empty() => (&now[at + tail.len()..], false),
        _ => (now, true),
    }
}

/// The exit code `exec_command` reports for `exit` (a signal as 128 + its number, as a
/// shell reports it).
fn exit_code(exit: &TerminalExit) -> i32 {
    match exit {
        TerminalExit::Code(code) => i32::try_from(*code).unwrap_or(-1),
        TerminalExit::Signal(name) => signal_number(name).map_or(-1, |n| 128 + n),
        TerminalExit::TimedOut | TerminalExit::Unknown => -1,
    }
}

fn signal_number(name: &str) -> Option<i32> {
    let name = name.trim().trim_start_matches("SIG");
    if let Ok(n) = name.parse() {
        return Some(n);
    }
    Some(match name {
        "HUP" => libc::SIGHUP,
        "INT" => libc::SIGINT,
        "QUIT" => libc::SIGQUIT,
        "ABRT" => libc::SIGABRT,
        "KILL" => libc::SIGKILL,
        "PIPE" => libc::SIGPIPE,
        "ALRM" => libc::SIGALRM,
        "TERM" => libc::SIGTERM,
        _ => return None,
    })
}

fn make_fifo(path: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: `path` is a valid NUL-terminated string for the duration of the call.
    match unsafe { libc::mkfifo(path.as_ptr(), 0o600) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_the_terminal_added_is_new() {
        assert_eq!(since("", "a\n", false), ("a\n", false));
        assert_eq!(since("a\n", "a\nb\n", false), ("b\n", false));
        // Rewritten (a progress line redrawn): the whole screen again, nothing lost.
        assert_eq!(since("50%", "100%", false), ("100%", false));
        // Its start dropped past the byte limit: what follows the end seen before.
        let before = format!("{}end", "x".repeat(5000));
        let now = format!("{}end+new", "x".repeat(4200));
        assert_eq!(since(&before, &now, true), ("+new", false));
        // Nothing seen before survives: all of it, and the loss is reported.
        assert_eq!(since("xyz", "abcd", true), ("abcd", true));
    }

    #[test]
    fn signals_end_as_a_shell_reports_them() {
        assert_eq!(exit_code(&TerminalExit::Code(3)), 3);
        assert_eq!(exit_code(&TerminalExit::Signal("SIGKILL".into())), 137);
        assert_eq!(exit_code(&TerminalExit::Signal("15".into())), 143);
        assert_eq!(exit_code(&TerminalExit::Signal("SIGWINCH".into())), -1);
        assert_eq!(exit_code(&TerminalExit::Unknown), -1);
    }
}
