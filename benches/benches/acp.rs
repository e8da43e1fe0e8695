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

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use adapter_acp::acp::{transport::transport, AcpAgent, AcpOptions};
use adapter_acp::backpressure::OutputGate;
use adapter_acp::config::AgentFactory;
use adapter_acp::zcode::wire::{EventBody, ModelStreamingPayload, SessionEvent};
use adapter_acp::zcode::{serve, ServerOptions};
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, SessionId, SessionNotification, SessionUpdate, TextContent,
};
use agent_client_protocol::ConnectTo;
use agent_providers::{ProviderConfig, ProviderId};
use benches::CountingSink;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde::Serialize;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

const DELTAS: usize = 10_000;
const DELTA: &str = " token";
/// Bounds every wait of the client so a broken front end fails the bench instead of hanging.
const WAIT: Duration = Duration::from_secs(60);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A script of one turn of `n` text deltas.
fn script(dir: &Path, n: usize) -> PathBuf {
    let steps: Vec<Value> = (0..n).map(|_| json!({ "text": DELTA })).collect();
    let path = dir.join("script.json");
    std::fs::write(
        &path,
        json!({"model": "scripted-bench", "turns": [{"steps": steps}]}).to_string(),
    )
    .expect("script");
    path
}

fn factory(script: &Path) -> AgentFactory {
    let mut config = ProviderConfig::new(ProviderId::Scripted);
    config.script = Some(script.to_path_buf());
    AgentFactory::new(config)
}

/// The client's side of the duplex: writes requests, reads lines into a reused buffer.
struct Client {
    input: DuplexStream,
    output: BufReader<DuplexStream>,
    line: Vec<u8>,
}

impl Client {
    async fn send(&mut self, message: Value) {
        let text = format!("{message}\n");
        tokio::time::timeout(WAIT, self.input.write_all(text.as_bytes()))
            .await
            .expect("write in time")
            .expect("write");
    }

    /// Reads one line (without its newline); panics at EOF.
    async fn next(&mut self) -> &[u8] {
        self.line.clear();
        let n = tokio::time::timeout(WAIT, self.output.read_until(b'\n', &mut self.line))
            .await
            .expect("a line in time")
            .expect("read");
        assert!(n > 0, "the front end closed its output");
        &self.line
    }

    /// Reads lines until one contains `mark`; returns that line as JSON and the bytes and
    /// lines read.
    async fn until(&mut self, mark: &str) -> (Value, u64, u64) {
        let (mut bytes, mut lines) = (0u64, 0u64);
        let finder = memchr::memmem::Finder::new(mark.as_bytes());
        loop {
            let line = self.next().await;
            bytes += line.len() as u64;
            lines += 1;
            if finder.find(line).is_some() {
                return (serde_json::from_slice(line).expect("json"), bytes, lines);
            }
        }
    }
}

fn duplex_pair() -> (Client, DuplexStream, DuplexStream) {
    let (input, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, output) = tokio::io::duplex(1 << 16);
    let client = Client {
        input,
        output: BufReader::new(output),
        line: Vec::with_capacity(512),
    };
    (client, server_in, server_out)
}

#[derive(Clone, Copy, Debug)]
enum FrontEnd {
    Zcode,
    Acp,
}

/// One turn of `DELTAS` deltas; returns (timed part, bytes and lines read in it).
fn run_once(
    rt: &tokio::runtime::Runtime,
    front: FrontEnd,
    dir: &Path,
    script: &Path,
) -> (Duration, u64, u64) {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    rt.block_on(async {
        let (mut client, server_in, server_out) = duplex_pair();
        match front {
            FrontEnd::Zcode => {
                let options = ServerOptions {
                    factory: factory(script),
                    data_dir: dir.join("data"),
                    storage: None,
                };
                let server = tokio::spawn(serve(options, server_in, server_out));
                client.send(json!({"id": 1, "method": "session/create", "params": {"workspace": {"workspacePath": ws, "workspaceKey": "k"}}})).await;
                let (created, _, _) = client.until("\"id\":1").await;
                let sid = created["result"]["session"]["sessionId"]
                    .as_str()
                    .expect("sid")
                    .to_string();
                client
                    .send(json!({"id": 2, "method": "session/subscribe", "params": {"sessionId": sid}}))
                    .await;
                client.until("\"id\":2").await;
                let started = Instant::now();
                client
                    .send(json!({"id": 3, "method": "session/send", "params": {"sessionId": sid, "content": "talk"}}))
                    .await;
                let (done, bytes, lines) = client.until("\"turn.completed\"").await;
                let elapsed = started.elapsed();
                assert_eq!(
                    done["params"]["payload"]["response"]
                        .as_str()
                        .map(str::len),
                    Some(DELTAS * DELTA.len())
                );
                drop(client);
                let served = tokio::time::timeout(WAIT, server)
                    .await
                    .expect("server ends")
                    .expect("join");
                assert!(served.is_ok(), "{served:?}");
                (elapsed, bytes, lines)
            }
            FrontEnd::Acp => {
                let gate = Arc::new(OutputGate::default());
                let io = transport(server_in, server_out, 1 << 20, gate.clone());
                let agent = AcpAgent::new(AcpOptions {
                    factory: factory(script),
                    data_dir: dir.join("data"),
                    storage: None,
                })
                .with_output_gate(gate)
                .with_update_outbox(io.update_outbox());
                let served = tokio::spawn(agent.connect_to(io));
                client.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})).await;
                client.until("\"id\":1").await;
                client.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": ws, "mcpServers": []}})).await;
                let (created, _, _) = client.until("\"id\":2").await;
                let sid = created["result"]["sessionId"]
                    .as_str()
                    .expect("sid")
                    .to_string();
                let started = Instant::now();
                client.send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "talk"}]}})).await;
                let (done, bytes, lines) = client.until("\"stopReason\"").await;
                let elapsed = started.elapsed();
                assert_eq!(done["result"]["stopReason"], "end_turn");
                assert!(lines as usize > DELTAS, "{lines} lines for {DELTAS} deltas");
                drop(client);
                let result = tokio::time::timeout(WAIT, served)
                    .await
                    .expect("agent ends")
                    .expect("join");
                assert!(result.is_ok(), "{result:?}");
                (elapsed, bytes, lines)
            }
        }
    })
}

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
        let (_, bytes, lines) = run_once(&rt, front, dir.path(), &script);
        eprintln!("{front:?}: {lines} lines, {bytes} bytes for {DELTAS} deltas");
        group.throughput(Throughput::ElementsAndBytes {
            elements: DELTAS as u64,
            bytes,
        });
        group.bench_function(format!("{front:?}/10k-deltas"), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| run_once(&rt, front, dir.path(), &script).0)
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
