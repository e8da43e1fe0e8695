//! The ZCode app-server's I/O, on agent-host's line reader and batching writer: the stdio
//! loop that reads line-delimited requests and hands them to the dispatcher (`handlers`),
//! answering through the `Outbox` (module `outbox`) of the writer's one ordered queue.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_host::backpressure::OutputGate;
use agent_host::lines::{LineError, LineReader};
use agent_host::output::line_writer;
use agent_host::session::{new_id, AskThroughInteractions};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

use super::handlers::Server;
use super::outbox::Outbox;
use super::wire::{DatabaseKind, StartupPhase};
use super::wire::{Outgoing, StorageStateParams, STORAGE_STATE};
use crate::max_line_bytes;

/// How long shutdown waits for running turns to wind down (they were stopped: their tools'
/// process groups are killed at once).
const TURN_WIND_DOWN: Duration = Duration::from_millis(1500);

/// How long the whole shutdown may take (turns, `session_end` hooks, MCP servers), within
/// the 3 s the zcode-acp-server bridge gives a SIGTERM before its SIGKILL. What is left
/// then ends with the process: MCP servers' process groups are killed when their managers
/// drop (and by the kernel's parent-death signal).
const SHUTDOWN_WAIT: Duration = Duration::from_millis(2500);

/// What the server needs: the sessions' factory and storage.
pub type ServerOptions = crate::Options;

/// Serves the ZCode app-server protocol on `input`/`output` until `input` ends or
/// `output` fails (e.g. the client closed it: EPIPE), with the default output limit
/// ([`DEFAULT_OUTPUT_LIMIT`](agent_host::backpressure::DEFAULT_OUTPUT_LIMIT) queued
/// messages) and line limit ([`max_line_bytes`]).
pub async fn serve<R, W>(options: ServerOptions, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_gated(options, input, output, Arc::new(OutputGate::default())).await
}

/// [`serve`] with the caller's output gate (whose counters show how much output was ever
/// queued).
pub async fn serve_gated<R, W>(
    options: ServerOptions,
    input: R,
    output: W,
    gate: Arc<OutputGate>,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let started = Instant::now();
    let (sender, writer) = line_writer(gate);
    let mut writer = tokio::spawn(writer.run(output));
    let (int_tx, int_rx) = mpsc::unbounded_channel();
    // MCP servers' questions are asked as the session's questions (requestUserInput).
    let mut options = options;
    options.factory = options
        .factory
        .session_client(Arc::new(AskThroughInteractions::new(int_tx.clone())));
    let models = options.model_list();
    let server = Arc::new(Server::new(
        options.manager(int_tx),
        models,
        Outbox { sender },
    ));
    server.out.send(&Outgoing::Notification {
        method: STORAGE_STATE.to_string(),
        params: serde_json::to_value(StorageStateParams {
            schema_version: 1,
            attempt_id: new_id("startup"),
            sequence: 1,
            database_id: "sessions".to_string(),
            database_kind: DatabaseKind::Session,
            phase: StartupPhase::Ready,
            elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(0),
        })
        .unwrap_or_default(),
    });
    let interactions = tokio::spawn(server.clone().interaction_loop(int_rx));

    let mut lines = LineReader::with_limit(input, max_line_bytes());
    // The writer only ends early when output failed; then nobody can hear us any more.
    let mut written: Option<std::io::Result<()>> = None;
    let result = loop {
        let line = tokio::select! {
            line = lines.next_line() => line,
            done = &mut writer => {
                written = Some(join_writer(done));
                break Ok(());
            }
        };
        match line {
            None => break Ok(()),
            Some(Ok(text)) => server.handle_line(&text).await,
            Some(Err(LineError::Io(err))) => break Err(err),
            Some(Err(rejected)) => {
                let (code, message) = crate::rejected_line(&rejected);
                server.out.invalid(code.into(), message);
            }
        }
    };
    match &written {
        Some(Err(err)) => tracing::info!(error = %err, "output closed; shutting down"),
        _ => tracing::debug!("input closed; shutting down"),
    }
    if tokio::time::timeout(SHUTDOWN_WAIT, server.manager.shutdown(TURN_WIND_DOWN))
        .await
        .is_err()
    {
        tracing::warn!("shutdown took too long; leaving what is left to the process exit");
    }
    interactions.abort();
    // Everything queued is written, then the writer ends.
    server.out.sender.finish();
    let written = match written {
        Some(written) => written,
        None => join_writer(writer.await),
    };
    written.and(result)
}

fn join_writer(done: Result<std::io::Result<()>, tokio::task::JoinError>) -> std::io::Result<()> {
    done.unwrap_or_else(|err| Err(std::io::Error::other(err)))
}
