//! What MCP servers cost before the first model request.
//!
//! One iteration: connect N servers (`McpManager::connect`, all at once), build an agent
//! with the manager as its tool source, send a prompt, and stop the clock when the run
//! reports `RequestStarted` (the provider has the request, tools included). The servers
//! are shut down outside the timed part.
//!
//! - `fixture/{0,1,5}`: agent-mcp's test server (a small Rust binary, built here as the
//!   `mcp-bench-server` bin): process spawn, `initialize` and `tools/list` (13 tools in 5
//!   pages), i.e. the SDK's own overhead. `0` is an agent without a tool source.
//! - `everything/{1,5}`: `@modelcontextprotocol/server-everything` on Node, a real server's
//!   start-up, when `agent-mcp/tests/servers` has been installed (`npm ci`);
//!   skipped otherwise.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use agent_core::{Agent, AgentEvent};
use agent_mcp::{McpManager, McpOptions, McpServerConfig};
use agent_providers::scripted::{ScriptedProvider, Turn};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use futures::StreamExt;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn fixture(name: String) -> McpServerConfig {
    McpServerConfig::stdio(name, env!("CARGO_BIN_EXE_mcp-bench-server"))
}

fn everything_script() -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../agent-mcp/tests/servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    path.is_file().then_some(path)
}

fn everything(name: String, script: &std::path::Path) -> McpServerConfig {
    McpServerConfig::stdio(name, "node").args([script.display().to_string(), "stdio".into()])
}

/// Connects `servers`, prompts, and returns the time to the first model request.
async fn first_request(servers: Vec<McpServerConfig>) -> Duration {
    let with_mcp = !servers.is_empty();
    let started = Instant::now();
    let manager = match with_mcp {
        true => Some(
            McpManager::connect(servers, McpOptions::new(std::env::temp_dir()))
                .await
                .expect("valid config"),
        ),
        false => None,
    };
    let provider = ScriptedProvider::new([Turn::new().text("ok")]);
    let mut builder = Agent::builder(provider);
    if let Some(manager) = &manager {
        builder = builder.tool_source(manager.clone());
    }
    let agent = builder.build();
    let mut run = agent.prompt("hi");
    while let Some(event) = run.next().await {
        if matches!(event, AgentEvent::RequestStarted { .. }) {
            break;
        }
    }
    let elapsed = started.elapsed();
    while run.next().await.is_some() {}
    if let Some(manager) = manager {
        assert!(
            manager
                .status()
                .iter()
                .all(|s| s.state == agent_mcp::ServerState::Connected),
            "{:?}",
            manager.status()
        );
        manager.shutdown().await;
    }
    elapsed
}

fn bench(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("mcp_connect");
    group.sample_size(20);
    for n in [0usize, 1, 5] {
        group.bench_with_input(BenchmarkId::new("fixture", n), &n, |b, &n| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let servers = (0..n).map(|i| fixture(format!("s{i}"))).collect();
                        total += first_request(servers).await;
                    }
                    total
                })
            })
        });
    }
    match everything_script() {
        Some(script) => {
            for n in [1usize, 5] {
                group.bench_with_input(BenchmarkId::new("everything", n), &n, |b, &n| {
                    b.iter_custom(|iters| {
                        rt.block_on(async {
                            let mut total = Duration::ZERO;
                            for _ in 0..iters {
                                let servers = (0..n)
                                    .map(|i| everything(format!("e{i}"), &script))
                                    .collect();
                                total += first_request(servers).await;
                            }
                            total
                        })
                    })
                });
            }
        }
        None => {
            eprintln!("mcp_connect/everything skipped: run `npm ci` in agent-mcp/tests/servers")
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
