//! The ZCode app-server's I/O, on agent-host's line reader and batching writer: the stdio
//! loop that reads line-delimited requests and hands them to the dispatcher (`handlers`),
//! and the `Outbox` through which responses, `session/event` notifications and
//! `interaction/*` requests reach the writer's one ordered queue.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_host::backpressure::OutputGate;
use agent_host::lines::{LineError, LineReader};
use agent_host::output::{line_writer, Closed, Frames, LineSender, MAX_BATCH_BYTES};
use agent_host::session::{new_id, AgentFactory, FileStore, SessionManager, SessionStorage};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

use super::handlers::{Reply, Server};
use super::wire::{
    codes, ErrorObject, Outgoing, RequestId, StorageStateParams, StoredEventNotification,
    INVALID_MESSAGE_ID, STORAGE_STATE,
};
use crate::max_line_bytes;
use agent_host::session::{JournalSink, StoredEvent};

/// How long shutdown waits for running turns to wind down (they were stopped: their tools'
/// process groups are killed at once).
const TURN_WIND_DOWN: Duration = Duration::from_millis(1500);

/// How long the whole shutdown may take (turns, `session_end` hooks, MCP servers), within
/// the 3 s the zcode-acp-server bridge gives a SIGTERM before its SIGKILL. What is left
/// then ends with the process: MCP servers' process groups are killed when their managers
/// drop (and by the kernel's parent-death signal).
const SHUTDOWN_WAIT: Duration = Duration::from_millis(2500);

/// What the server needs.
pub struct ServerOptions {
    /// Builds the sessions' agents.
    pub factory: AgentFactory,
    /// Where sessions are stored (as files, when `storage` is `None`).
    pub data_dir: PathBuf,
    /// The sessions' storage, when not the files under `data_dir`: e.g. a PostgreSQL store
    /// shared by a fleet (`agent_store_postgres::StoreSpec::open_or_files`). Turns then take
    /// the session's writer claim first, so one process at a time runs a turn on a session.
    pub storage: Option<Arc<dyn SessionStorage>>,
}

impl std::fmt::Debug for ServerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerOptions")
            .field("factory", &self.factory)
            .field("data_dir", &self.data_dir)
            .field("storage", &self.storage.as_ref().map(|_| ".."))
            .finish()
    }
}

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
    let storage = match options.storage {
        Some(storage) => storage,
        None => Arc::new(FileStore::new(options.data_dir)),
    };
    let manager = SessionManager::with_storage(options.factory, storage, int_tx);
    let server = Arc::new(Server::new(manager, Outbox { sender }));
    server.out.send(&Outgoing::Notification {
        method: STORAGE_STATE.to_string(),
        params: serde_json::to_value(StorageStateParams {
            schema_version: 1,
            attempt_id: new_id("startup"),
            sequence: 1,
            database_id: "sessions".to_string(),
            database_kind: "session",
            phase: "ready",
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
                let (code, kind) = match rejected {
                    LineError::NotUtf8 => (codes::PARSE_ERROR, "Parse error"),
                    _ => (codes::INVALID_REQUEST, "Invalid request"),
                };
                let message = format!("{kind}: {rejected}");
                tracing::warn!(%message, "rejected an input line");
                server.out.invalid(code, message);
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
    match written {
        Ok(()) => result,
        Err(err) => Err(err),
    }
}

fn join_writer(done: Result<std::io::Result<()>, tokio::task::JoinError>) -> std::io::Result<()> {
    match done {
        Ok(result) => result,
        Err(err) => Err(std::io::Error::other(err)),
    }
}

/// The server's end of the writer's one ordered queue: every message is serialised on the
/// sender's task and counted on the output gate until written.
#[derive(Debug, Clone)]
pub(crate) struct Outbox {
    pub(crate) sender: LineSender,
}

impl Outbox {
    /// The writer's gate.
    pub(crate) fn gate(&self) -> Arc<OutputGate> {
        self.sender.gate().clone()
    }

    /// Queues one message.
    pub(crate) fn send(&self, message: &Outgoing) {
        if let Err(err) = self.sender.send_json(message, None) {
            tracing::debug!(error = %err, "dropping a message");
        }
    }

    /// Answers request `id` (nothing for a notification, whose failure is logged).
    pub(crate) fn reply(&self, id: Option<RequestId>, reply: Reply) {
        let Some(id) = id else {
            if let Err(err) = reply {
                tracing::warn!(code = err.0.code, message = %err.0.message, "notification failed");
            }
            return;
        };
        self.send(&match reply {
            Ok(result) => Outgoing::Response { id, result },
            Err(err) => Outgoing::Error { id, error: err.0 },
        });
    }

    /// Answers input that is not a message, with the protocol's id for that.
    pub(crate) fn invalid(&self, code: i64, message: String) {
        self.send(&Outgoing::Error {
            id: RequestId::Str(INVALID_MESSAGE_ID.to_string()),
            error: ErrorObject {
                code,
                message,
                data: None,
            },
        });
    }
}

/// The live sink of a session's event log: copies each stored event's JSON (serialised once,
/// when it was appended) into its `session/event` line and holds the lines until the log
/// hands over a batch (once the batch is stored), then hands them to the writer as one
/// message; early when [`MAX_BATCH_BYTES`] are gathered.
/// The turn counts what it holds against the gate's limit
/// ([`TurnObserver::held`](agent_host::session::TurnObserver::held)).
pub(crate) struct EventLines {
    sender: LineSender,
    frames: Frames,
}

impl EventLines {
    /// A sink writing to `out`'s queue.
    pub(crate) fn new(out: &Outbox) -> Self {
        Self {
            sender: out.sender.clone(),
            frames: Frames::new(),
        }
    }
}

impl JournalSink for EventLines {
    fn push(&mut self, event: &StoredEvent) {
        let line = self.frames.push_with(|buf| {
            serde_json::to_writer(buf, &StoredEventNotification::new(&event.event))
        });
        if let Err(err) = line {
            tracing::error!(error = %err, "cannot serialise an event");
        }
        if self.frames.len_bytes() >= MAX_BATCH_BYTES {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if let Err(Closed) = self.sender.send_frames(&mut self.frames) {
            tracing::debug!("output closed; dropping events");
            self.frames.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zcode::eventlog::EventLog;
    use crate::zcode::wire::{EventBody, SessionEvent, SessionUpdatedPayload, SESSION_EVENT};
    use serde_json::{json, Value};
    use std::time::Duration;

    const WAIT: Duration = Duration::from_secs(10);

    fn event(seq: u64) -> SessionEvent {
        SessionEvent {
            event_id: format!("evt_{seq}"),
            session_id: "sess_1".into(),
            turn_id: Some("turn_1".into()),
            seq,
            timestamp: 1,
            body: EventBody::SessionUpdated(SessionUpdatedPayload::default()),
        }
    }

    fn note(n: u64) -> Outgoing {
        Outgoing::Notification {
            method: SESSION_EVENT.to_string(),
            params: json!({"seq": n}),
        }
    }

    #[tokio::test]
    async fn event_lines_and_messages_share_one_ordered_queue() {
        let gate = Arc::new(OutputGate::default());
        let (sender, writer) = line_writer(gate.clone());
        let out = Outbox { sender };
        let log = EventLog::new(EventLines::new(&out));
        // The subscription's reply is queued under the log's lock: before every event.
        log.subscribe(None, |_| out.send(&note(0)))
            .await
            .expect("subscribe");
        log.append_held(event);
        log.append_held(event);
        assert_eq!(gate.queued(), 1, "held event lines are not queued yet");
        log.flush();
        assert_eq!(gate.queued(), 3, "one flush hands both over");
        // A reply after the events, then events appended from elsewhere.
        out.send(&note(3));
        log.append(event);
        out.sender.finish();
        let (client, server) = tokio::io::duplex(1 << 16);
        let written = tokio::spawn(writer.run(server));
        let mut text = String::new();
        tokio::time::timeout(WAIT, async {
            use tokio::io::AsyncReadExt;
            let mut client = client;
            client.read_to_string(&mut text).await
        })
        .await
        .expect("read in time")
        .expect("read");
        written.await.expect("join").expect("written");
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        let seqs: Vec<u64> = lines
            .iter()
            .map(|l| l["params"]["seq"].as_u64().expect("seq"))
            .collect();
        assert_eq!(seqs, vec![0, 1, 2, 3, 3]);
        assert_eq!(gate.queued(), 0, "every line counted as written");
        // An event line is exactly the generic notification's.
        let generic = Outgoing::Notification {
            method: SESSION_EVENT.to_string(),
            params: serde_json::to_value(event(1)).expect("value"),
        };
        assert_eq!(
            text.lines().nth(1).expect("line"),
            serde_json::to_string(&generic).expect("json")
        );
    }

    #[tokio::test]
    async fn events_for_a_closed_output_are_dropped_and_never_hold_a_turn() {
        let gate = Arc::new(OutputGate::new(1));
        let (sender, writer) = line_writer(gate.clone());
        drop(writer);
        let out = Outbox { sender };
        let log = EventLog::new(EventLines::new(&out));
        log.subscribe(None, |_| ()).await.expect("subscribe");
        log.append_held(event);
        log.append(event);
        assert_eq!(gate.queued(), 0);
        tokio::time::timeout(WAIT, gate.ready())
            .await
            .expect("a closed gate never holds a turn");
    }
}
