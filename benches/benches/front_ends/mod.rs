//! The ZCode app-server and ACP front ends of `adapter-acp` driven in process over
//! `tokio::io::duplex`, shared by the `acp` bench and the `icount` example (`e2e-zcode`,
//! `e2e-acp`): `session/create` and `session/subscribe` (ZCode) or `initialize` and
//! `session/new` (ACP), then one prompt answered by the scripted provider, read until the
//! turn's last line.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use adapter_acp::acp::{transport::transport, AcpAgent, AcpOptions};
use adapter_acp::backpressure::OutputGate;
use adapter_acp::config::AgentFactory;
use adapter_acp::zcode::{serve, ServerOptions};
use agent_client_protocol::ConnectTo;
use agent_providers::{ProviderConfig, ProviderId};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

/// The text of every delta.
pub const DELTA: &str = " token";
/// Bounds every wait of the client so a broken front end fails the bench instead of hanging.
const WAIT: Duration = Duration::from_secs(60);

/// The 2-worker runtime the front ends run on.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A script of one turn of `n` text deltas.
pub fn script(dir: &Path, n: usize) -> PathBuf {
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
pub enum FrontEnd {
    /// `adapter_acp::zcode::serve`.
    Zcode,
    /// `AcpAgent` on the crate's line transport.
    Acp,
}

/// One turn of the `deltas` deltas of `script`; returns (timed part, bytes and lines read in
/// it).
pub fn run_once(
    rt: &tokio::runtime::Runtime,
    front: FrontEnd,
    dir: &Path,
    script: &Path,
    deltas: usize,
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
                    Some(deltas * DELTA.len())
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
                assert!(lines as usize > deltas, "{lines} lines for {deltas} deltas");
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
