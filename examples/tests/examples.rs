//! Runs every capability example (each checks its own outcome with `assert!`s) on the
//! scripted provider, offline. The examples are compiled into this test as modules, so the
//! test always runs the current source; `cargo test` also builds them as examples.

// Each module is an example file; its `main` is what `cargo run --example` runs.
#[path = "../context_budget.rs"]
mod context_budget;
#[path = "../custom_tool.rs"]
mod custom_tool;
#[path = "../hooks.rs"]
mod hooks;
#[allow(dead_code)] // its `main` reads the server from the command line; the test calls `run`
#[path = "../mcp.rs"]
mod mcp;
#[path = "../run_to_end.rs"]
mod run_to_end;
#[path = "../sandbox.rs"]
mod sandbox;
#[path = "../structured_output.rs"]
mod structured_output;
#[path = "../subagents.rs"]
mod subagents;

use std::time::Duration;

/// Every example finishes well within this.
const LIMIT: Duration = Duration::from_secs(60);

/// Runs `example` on its own thread, failing if it panics, fails or does not finish in time.
fn run<E: std::fmt::Debug + 'static>(name: &str, example: fn() -> Result<(), E>) {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let outcome = std::panic::catch_unwind(|| example().map_err(|err| format!("{err:?}")));
        let _ = done.send(outcome);
    });
    match finished.recv_timeout(LIMIT) {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(err))) => panic!("example {name} failed: {err}"),
        Ok(Err(_)) => panic!("example {name} panicked (see its output above)"),
        Err(_) => panic!("example {name} did not finish within {LIMIT:?}"),
    }
}

#[test]
fn custom_tool() {
    run("custom_tool", || {
        custom_tool::main();
        Ok::<(), ()>(())
    });
}

#[test]
fn structured_output() {
    run("structured_output", structured_output::main);
}

#[test]
fn run_to_end() {
    run("run_to_end", run_to_end::main);
}

#[test]
fn mcp() {
    run("mcp", || {
        let server =
            agent_mcp::McpServerConfig::stdio("demo", env!("CARGO_BIN_EXE_examples-mcp-fixture"));
        let answer = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?
            .block_on(mcp::run(server))
            .map_err(|e| e.to_string())?;
        assert_eq!(answer, "echo: hello over MCP");
        Ok::<(), String>(())
    });
}

#[test]
fn hooks() {
    run("hooks", hooks::main);
}

#[test]
fn subagents() {
    run("subagents", subagents::main);
}

#[test]
fn sandbox() {
    run("sandbox", sandbox::main);
}

#[test]
fn context_budget() {
    run("context_budget", context_budget::main);
}
