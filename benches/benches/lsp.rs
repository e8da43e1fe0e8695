//! What the language-server capability costs (agent-lsp).
//!
//! - `unused`: a session's `Lsp` and its tools built and dropped, every write tool wrapped,
//!   nothing asked: what a session pays that never uses a language server (no process, no
//!   task, no thread).
//! - `cold`: the time to the first answer of a fresh session: `lsp_navigate definition`
//!   starts pyright (spawn, `initialize`, the project's first analysis) and answers; the
//!   server is shut down outside the timed part.
//! - `warm`: the same query again on the running server (the file unchanged).
//! - `edit`: an edit's result with the file's new error from the running server (sync,
//!   wait for `publishDiagnostics`, settle).
//!
//! pyright is the npm package pinned in `agent-lsp/tests/servers`; `cold`, `warm` and
//! `edit` are skipped unless it is installed (`npm ci` there, which `.ci/run`'s tests do).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::{Tool, ToolContext};
use agent_lsp::{Dialect, Lsp, LspConfig};
use agent_tools::ToolSet;
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;

const UTIL_PY: &str = "def add(a: int, b: int) -> int:\n    return a + b\n";
const MAIN_PY: &str = "from util import add\n\ntotal: int = add(1, 2)\nprint(total)\n";
const BROKEN_PY: &str = "from util import add\n\ntotal: int = add(\"x\", 2)\nprint(total)\n";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn pyright() -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../agent-lsp/tests/servers/node_modules/.bin/pyright-langserver");
    path.is_file().then_some(path)
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, text) in [
        ("pyproject.toml", "[project]\nname = \"bench\"\n"),
        ("util.py", UTIL_PY),
        ("main.py", MAIN_PY),
    ] {
        std::fs::write(dir.path().join(name), text).expect("write");
    }
    dir
}

fn config(server: &Path) -> LspConfig {
    let mut config = LspConfig::builtin();
    let servers = json!({"servers": {"pyright-langserver": {"command": server}}});
    config.merge_json(&servers.to_string()).expect("valid");
    config
}

fn navigate(lsp: &Lsp) -> Arc<dyn Tool> {
    lsp.tools(Dialect::Zero, &[])
        .into_iter()
        .find(|t| t.name() == "lsp_navigate")
        .expect("lsp_navigate")
}

async fn definition(tool: &Arc<dyn Tool>, dir: &Path) {
    let args = json!({"op": "definition", "path": "main.py", "line": 3, "character": 14});
    let out = tool
        .call(args, ToolContext::new(dir))
        .await
        .expect("answers");
    assert!(out.text_content().contains("util.py:1:5"), "{out:?}");
}

fn unused(c: &mut Criterion) {
    let dir = project();
    let config = LspConfig::builtin();
    c.bench_function("lsp/unused", |b| {
        b.iter(|| {
            let lsp = Lsp::new(dir.path(), config.clone());
            let tools = lsp.attach(
                ToolSet::defaults(dir.path()).into_tools(),
                Dialect::Sdk,
                &[],
            );
            assert!(lsp.running().is_empty());
            tools.len()
        })
    });
}

fn servers(c: &mut Criterion) {
    let Some(server) = pyright() else {
        eprintln!("lsp/cold, lsp/warm, lsp/edit skipped: npm ci in agent-lsp/tests/servers first");
        return;
    };
    let rt = runtime();
    let dir = project();
    let config = config(&server);
    let mut group = c.benchmark_group("lsp");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(30));
    group.bench_function("cold", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let lsp = Lsp::new(dir.path(), config.clone());
                    let tool = navigate(&lsp);
                    let started = Instant::now();
                    definition(&tool, dir.path()).await;
                    total += started.elapsed();
                    lsp.shutdown().await;
                }
                total
            })
        })
    });
    let lsp = Lsp::new(dir.path(), config.clone());
    let tool = navigate(&lsp);
    rt.block_on(definition(&tool, dir.path()));
    group.bench_function("warm", |b| {
        b.iter(|| rt.block_on(definition(&tool, dir.path())))
    });
    let tools = lsp.attach(
        ToolSet::defaults(dir.path()).into_tools(),
        Dialect::Zero,
        &[],
    );
    let write = tools
        .iter()
        .find(|t| t.name() == "write_file")
        .cloned()
        .expect("write_file");
    group.bench_function("edit", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let started = Instant::now();
                    let args = json!({"path": "main.py", "content": BROKEN_PY});
                    let out = write
                        .call(args, ToolContext::new(dir.path()))
                        .await
                        .expect("writes");
                    total += started.elapsed();
                    assert!(
                        out.text_content().contains("main.py:3:18: error"),
                        "{out:?}"
                    );
                    // Back to the clean text, untimed.
                    let args = json!({"path": "main.py", "content": MAIN_PY});
                    write
                        .call(args, ToolContext::new(dir.path()))
                        .await
                        .expect("writes");
                }
                total
            })
        })
    });
    group.finish();
    rt.block_on(lsp.shutdown());
}

criterion_group!(benches, unused, servers);
criterion_main!(benches);
