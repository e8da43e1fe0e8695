//! A child process driven over its pipes one line at a time, as the front ends' end-to-end
//! test clients drive their servers. Every write, read and wait is bounded by the wait the
//! pipe was given.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// A spawned process with piped stdin and stdout, killed when dropped.
pub struct Pipe {
    /// The process.
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    /// Every stdout line read so far, raw.
    pub raw: Vec<String>,
    wait: Duration,
}

impl Pipe {
    /// Spawns `command` with stdin and stdout piped (stderr as `command` has it); every
    /// later write, read and wait is bounded by `wait`. Panics when it does not start.
    pub fn spawn(command: &mut Command, wait: Duration) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {:?}: {e}", command.as_std().get_program()));
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout is piped");
        Self {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
            raw: Vec::new(),
            wait,
        }
    }

    /// Writes `bytes` and flushes.
    pub async fn write(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        tokio::time::timeout(self.wait, async {
            stdin.write_all(bytes).await.expect("write");
            stdin.flush().await.expect("flush");
        })
        .await
        .expect("write timed out");
    }

    /// Writes `line`, then a newline, and flushes.
    pub async fn send_line(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        tokio::time::timeout(self.wait, async {
            stdin.write_all(line).await.expect("write");
            stdin.write_all(b"\n").await.expect("write");
            stdin.flush().await.expect("flush");
        })
        .await
        .expect("write timed out");
    }

    /// The next stdout line (also kept in [`Pipe::raw`]); `None` at the end of the output.
    pub async fn next_line(&mut self) -> Option<String> {
        let line = tokio::time::timeout(self.wait, self.lines.next_line())
            .await
            .expect("timed out waiting for a line")
            .expect("read stdout")?;
        self.raw.push(line.clone());
        Some(line)
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    /// Closes stdin (the process sees the end of its input).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Reads the rest of stdout into [`Pipe::raw`] and waits for the exit status.
    pub async fn wait_exit(&mut self) -> ExitStatus {
        let mut rest = String::new();
        let read = self.lines.get_mut().read_to_string(&mut rest);
        let _ = tokio::time::timeout(self.wait, read).await;
        self.raw.extend(rest.lines().map(str::to_string));
        self.exit().await
    }

    /// Waits for the exit status without reading stdout.
    pub async fn exit(&mut self) -> ExitStatus {
        tokio::time::timeout(self.wait, self.child.wait())
            .await
            .expect("the process did not exit")
            .expect("wait")
    }

    /// Closes stdin and waits for the exit; whether the process exited cleanly.
    pub async fn shutdown(&mut self) -> bool {
        self.close_stdin();
        self.wait_exit().await.success()
    }
}
