//! The ZCode app-server and ACP front ends of `adapter-acp`, in process over
//! `tokio::io::duplex`, beside a serialise-only baseline of the same frames.
//!
//! - `zcode`: `adapter_acp::zcode::serve` with the scripted provider streaming `DELTAS` text
//!   deltas: `session/create` and `session/subscribe` (not timed), then `session/send`; the
//!   time runs from writing `session/send` until the `turn.completed` `session/event` line has
//!   been read (the deltas' `session/event` lines, the turn's framing events and the reply);
//! - `acp`: `AcpAgent` on the crate's line transport: `initialize` and `session/new` (not
//!   timed), then `session/prompt`, timed until its reply has been read (the deltas'
//!   `session/update` `agent_message_chunk` lines, usage updates and the reply);
//! - `*/serialise-only`: `DELTAS` of the same text frames with plain `serde_json::to_writer` of
//!   the wire structs (`zcode::wire::SessionEvent` in a `session/event` notification, the ACP
//!   SDK's `SessionNotification` in a `session/update` one) into a reused buffer.
//!
//! The timed part includes the agent loop, the session machinery (event log, output gate,
//! transcript), the writer task and the client reading the lines; the script file is parsed
//! when the session's agent is built, i.e. before the timed part.
//!
//! The front ends are driven by `front_ends` (shared with the `icount` example).

mod front_ends;

use std::time::Duration;

use adapter_acp::zcode::wire::{EventBody, ModelStreamingPayload, SessionEvent};
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, SessionId, SessionNotification, SessionUpdate, TextContent,
};
use benches::CountingSink;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use front_ends::{run_once, runtime, script, FrontEnd, DELTA};
use serde::Serialize;

const DELTAS: usize = 10_000;

/// A JSON-RPC notification as the ZCode front end writes it (no `jsonrpc` member).
#[derive(Serialize)]
struct ZcodeNote<'a> {
    method: &'static str,
    params: &'a SessionEvent,
}

/// A JSON-RPC 2.0 notification as the ACP SDK writes it.
#[derive(Serialize)]
struct AcpNote<'a> {
    jsonrpc: &'static str,
    method: &'static str,
    params: &'a SessionNotification,
}

/// Serialise-only: `n` text frames of `front` with plain serde_json, one line each.
fn serialise_frames(front: FrontEnd, n: usize, sink: &mut CountingSink) {
    let mut buf = Vec::with_capacity(512);
    let zcode = SessionEvent {
        event_id: "evt_0b8f4c1e-5d7a-4f2b-9c3e-1a2b3c4d5e6f".into(),
        session_id: "ses_0b8f4c1e-5d7a-4f2b-9c3e-1a2b3c4d5e6f".into(),
        turn_id: Some("turn_0b8f4c1e-5d7a-4f2b-9c3e-1a2b3c4d5e6f".into()),
        seq: 1_000,
        timestamp: 1_767_225_600_000,
        body: EventBody::ModelStreaming(ModelStreamingPayload::TextDelta {
            delta: DELTA.into(),
        }),
    };
    let acp = SessionNotification::new(
        SessionId::new("0b8f4c1e-5d7a-4f2b-9c3e-1a2b3c4d5e6f"),
        SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(
            DELTA,
        )))),
    );
    for _ in 0..n {
        buf.clear();
        match front {
            FrontEnd::Zcode => serde_json::to_writer(
                &mut buf,
                &ZcodeNote {
                    method: "session/event",
                    params: &zcode,
                },
            ),
            FrontEnd::Acp => serde_json::to_writer(
                &mut buf,
                &AcpNote {
                    jsonrpc: "2.0",
                    method: "session/update",
                    params: &acp,
                },
            ),
        }
        .expect("serialisable");
        buf.push(b'\n');
        std::io::Write::write_all(sink, &buf).expect("sink");
    }
}

fn bench_front_ends(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("tempdir");
    let script = script(dir.path(), DELTAS);

    let mut group = c.benchmark_group("acp");
    group.sample_size(10);
    for front in [FrontEnd::Zcode, FrontEnd::Acp] {
        let (_, bytes, lines) = run_once(&rt, front, dir.path(), &script, DELTAS);
        eprintln!("{front:?}: {lines} lines, {bytes} bytes for {DELTAS} deltas");
        group.throughput(Throughput::ElementsAndBytes {
            elements: DELTAS as u64,
            bytes,
        });
        group.bench_function(format!("{front:?}/10k-deltas"), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| run_once(&rt, front, dir.path(), &script, DELTAS).0)
                    .sum()
            })
        });
        let mut sink = CountingSink::default();
        serialise_frames(front, DELTAS, &mut sink);
        group.throughput(Throughput::ElementsAndBytes {
            elements: DELTAS as u64,
            bytes: sink.bytes(),
        });
        group.bench_function(format!("{front:?}/serialise-only-10k"), |b| {
            b.iter(|| serialise_frames(front, DELTAS, &mut sink))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = bench_front_ends
}
criterion_main!(benches);
