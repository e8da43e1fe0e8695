//! A client that stops reading does not make memory grow: in process, both front ends
//! serve a turn of 3000 text deltas into a 4 KiB pipe nobody reads. The turn runs until
//! the output queue is full (the producer really outran the reader), then waits; once the
//! client reads again every delta arrives, in order, and the queue never held more than
//! its limit (plus one event's fan-out). Without backpressure the queue would hold
//! nearly the whole turn.

use std::sync::Arc;
use std::time::Duration;

use adapter_acp::acp::{transport::transport, AcpAgent, AcpOptions};
use adapter_acp::zcode::{serve_gated, ServerOptions};
use agent_client_protocol::ConnectTo;
use agent_host::backpressure::OutputGate;
use agent_host::session::AgentFactory;
use agent_providers::{ProviderConfig, ProviderId};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

const WAIT: Duration = Duration::from_secs(30);
const LIMIT: usize = 64;
const DELTAS: usize = 3000;
/// One agent event maps to at most this many messages.
const FAN_OUT: usize = 8;

fn factory(dir: &std::path::Path) -> AgentFactory {
    let steps: Vec<Value> = (0..DELTAS)
        .map(|i| json!({"text": format!("{i:05} {} ", "x".repeat(100))}))
        .collect();
    let script = dir.join("script.json");
    std::fs::write(
        &script,
        json!({"model": "scripted-test", "turns": [{"steps": steps}]}).to_string(),
    )
    .expect("script");
    let mut config = ProviderConfig::new(ProviderId::Scripted);
    config.script = Some(script);
    AgentFactory::new(config)
}

async fn write(input: &mut DuplexStream, message: Value) {
    tokio::time::timeout(WAIT, input.write_all(format!("{message}\n").as_bytes()))
        .await
        .expect("write in time")
        .expect("write");
}

async fn next(lines: &mut Lines<BufReader<DuplexStream>>) -> Value {
    let line = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .expect("a line in time")
        .expect("read")
        .expect("output open");
    serde_json::from_str(&line).expect("json")
}

async fn until(
    lines: &mut Lines<BufReader<DuplexStream>>,
    pred: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let message = next(lines).await;
        let done = pred(&message);
        seen.push(message);
        if done {
            return seen;
        }
    }
}

/// Waits (bounded) until the gate reports a full queue.
async fn wait_full(gate: &OutputGate) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while gate.queued() < gate.limit() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the queue never filled: {} of {}",
            gate.queued(),
            gate.limit()
        );
        // Polling a counter: the producer has no event to wait on from here.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn expected_text() -> String {
    (0..DELTAS)
        .map(|i| format!("{i:05} {} ", "x".repeat(100)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zcode_turn_waits_for_a_slow_client_and_loses_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    let gate = Arc::new(OutputGate::new(LIMIT));
    let (mut input, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, output) = tokio::io::duplex(4096);
    let options = ServerOptions {
        factory: factory(dir.path()),
        data_dir: dir.path().join("data"),
        storage: None,
    };
    let server = tokio::spawn(serve_gated(options, server_in, server_out, gate.clone()));
    let mut lines = BufReader::new(output).lines();
    write(&mut input, json!({"id": 1, "method": "session/create", "params": {"workspace": {"workspacePath": ws, "workspaceKey": "k"}}})).await;
    let created = until(&mut lines, |m| m["id"] == 1).await;
    let sid = created.last().expect("reply")["result"]["session"]["sessionId"]
        .as_str()
        .expect("sid")
        .to_string();
    write(
        &mut input,
        json!({"id": 2, "method": "session/subscribe", "params": {"sessionId": sid}}),
    )
    .await;
    until(&mut lines, |m| m["id"] == 2).await;
    write(
        &mut input,
        json!({"id": 3, "method": "session/send", "params": {"sessionId": sid, "content": "talk"}}),
    )
    .await;
    // Stop reading until the turn has filled the queue.
    wait_full(&gate).await;
    let events = until(&mut lines, |m| {
        m["method"] == "session/event" && m["params"]["type"] == "turn.completed"
    })
    .await;
    let text: String = events
        .iter()
        .filter(|m| {
            m["params"]["type"] == "model.streaming"
                && m["params"]["payload"]["kind"] == "text_delta"
        })
        .filter_map(|m| m["params"]["payload"]["delta"].as_str())
        .collect();
    let done = events.last().expect("completed");
    assert_eq!(done["params"]["payload"]["response"], expected_text());
    assert_eq!(text, expected_text(), "every delta, in order");
    assert!(
        gate.high_water() <= LIMIT + FAN_OUT,
        "queue grew to {} (limit {LIMIT})",
        gate.high_water()
    );
    drop(input);
    let served = tokio::time::timeout(WAIT, server)
        .await
        .expect("server ends")
        .expect("join");
    assert!(served.is_ok(), "{served:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_turn_waits_for_a_slow_client_and_loses_nothing() {
    acp_slow_client(true).await;
}

/// Updates through the SDK's own outgoing queue (no outbox) still all arrive, in order and
/// before the reply. Only the outbox bounds the queue: the transport knows no method names,
/// so it cannot count the SDK's updates when they are sent, only once they reach its queue,
/// by which time a turn has long run ahead (the binary always uses the outbox).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_turn_without_the_outbox_loses_nothing_either() {
    acp_slow_client(false).await;
}

async fn acp_slow_client(outbox: bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    let gate = Arc::new(OutputGate::new(LIMIT));
    let (mut input, agent_in) = tokio::io::duplex(1 << 16);
    let (agent_out, output) = tokio::io::duplex(4096);
    let io = transport(agent_in, agent_out, 1 << 20, gate.clone());
    let mut agent = AcpAgent::new(AcpOptions {
        factory: factory(dir.path()),
        data_dir: dir.path().join("data"),
        storage: None,
    })
    .with_output_gate(gate.clone());
    if outbox {
        agent = agent.with_update_outbox(io.update_outbox());
    }
    let served = tokio::spawn(agent.connect_to(io));
    let mut lines = BufReader::new(output).lines();
    write(&mut input, json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})).await;
    until(&mut lines, |m| m["id"] == 1).await;
    write(&mut input, json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": ws, "mcpServers": []}})).await;
    let created = until(&mut lines, |m| m["id"] == 2).await;
    let sid = created.last().expect("reply")["result"]["sessionId"]
        .as_str()
        .expect("sid")
        .to_string();
    write(&mut input, json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "talk"}]}})).await;
    wait_full(&gate).await;
    let messages = until(&mut lines, |m| m["id"] == 3).await;
    assert_eq!(
        messages.last().expect("reply")["result"]["stopReason"],
        "end_turn"
    );
    let text: String = messages
        .iter()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|m| m["params"]["update"]["content"]["text"].as_str())
        .collect();
    assert_eq!(text, expected_text(), "every chunk, in order");
    if outbox {
        assert!(
            gate.high_water() <= LIMIT + FAN_OUT,
            "queue grew to {} (limit {LIMIT})",
            gate.high_water()
        );
    }
    drop(input);
    let result = tokio::time::timeout(WAIT, served)
        .await
        .expect("agent ends")
        .expect("join");
    assert!(result.is_ok(), "{result:?}");
}
