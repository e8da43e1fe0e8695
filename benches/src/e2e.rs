//! The end-to-end pipelines of the `agent_loop` bench (and of `icount e2e-*`): `n` text
//! deltas from the scripted provider through `Agent::prompt` and a front end into a counting
//! stdout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use adapter_stream_json::{run_exec, ExecHooks, ExecIo};
use agent_core::Agent;
use agent_providers::scripted::{ScriptedProvider, Turn};
use futures::StreamExt;

use crate::CountingSink;

/// The text of every delta.
pub const DELTA: &str = " token";

/// A one-turn script of `n` text deltas and usage.
pub fn provider(n: usize) -> Arc<ScriptedProvider> {
    let mut turn = Turn::new();
    for _ in 0..n {
        turn = turn.text(DELTA);
    }
    Arc::new(ScriptedProvider::new([turn.usage(100, n as u64)]))
}

/// The 2-worker runtime the pipelines run on.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Where the deltas go after the agent loop.
#[derive(Clone, Copy, Debug)]
pub enum Pipeline {
    /// Nowhere: the run is drained (the agent loop alone).
    Drain,
    /// `adapter_stream_json::run_exec` (processor, redaction, writer, session recording).
    StreamJson,
    /// `adapter_rpc::serve` (dispatcher, worker, processor, writer task).
    Rpc,
}

/// One run of `n` deltas through `pipeline` (session files under `data`); returns the time of
/// the run and the output bytes. Building the script is not timed.
pub fn run_once(
    rt: &tokio::runtime::Runtime,
    pipeline: Pipeline,
    n: usize,
    data: &std::path::Path,
) -> (Duration, u64) {
    let provider = provider(n);
    let sink = CountingSink::default();
    let started = Instant::now();
    rt.block_on(async {
        match pipeline {
            Pipeline::Drain => {
                let agent = Agent::builder(provider).build();
                let mut run = agent.prompt("Say something long.");
                let mut events = 0u64;
                while run.next().await.is_some() {
                    events += 1;
                }
                assert!(events as usize > n);
            }
            Pipeline::StreamJson => {
                let data = data.to_path_buf();
                let hooks = ExecHooks {
                    provider: Some(provider),
                    env: Arc::new(move |k| match k {
                        "XDG_DATA_HOME" | "HOME" => Some(data.display().to_string()),
                        _ => None,
                    }),
                    ..ExecHooks::default()
                };
                let io = ExecIo {
                    stdin: Box::new(std::io::empty()),
                    stdout: Box::new(sink.clone()),
                    stderr: Box::new(std::io::sink()),
                };
                let args: Vec<String> = ["-o", "stream-json", "Say something long."]
                    .iter()
                    .map(|s| s.to_string())
                    .collect();
                let code = run_exec(&args, io, hooks).await;
                assert_eq!(code, 0);
            }
            Pipeline::Rpc => {
                let agent = Agent::builder(provider).build();
                let input: &[u8] =
                    b"{\"id\":\"1\",\"type\":\"prompt\",\"message\":\"Say something long.\"}\n";
                adapter_rpc::serve(agent, Default::default(), input, sink.clone())
                    .await
                    .expect("serve");
            }
        }
    });
    (started.elapsed(), sink.bytes())
}
