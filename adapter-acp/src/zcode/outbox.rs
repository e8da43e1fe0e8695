//! The server's end of the writer's one ordered queue ([`Outbox`]), through which
//! responses, `session/event` notifications and `interaction/*` requests reach the writer,
//! and the live sink of a session's event log ([`EventLines`]).

use std::sync::Arc;

use agent_host::backpressure::OutputGate;
use agent_host::output::{Closed, Frames, LineSender, MAX_BATCH_BYTES};
use agent_host::session::{JournalSink, StoredEvent};

use super::reply::Reply;
use super::wire::{ErrorObject, Outgoing, RequestId, StoredEventNotification, INVALID_MESSAGE_ID};

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
    use agent_host::output::line_writer;
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
