//! Drives `adapter-acp acp` with the official ACP client SDK (`@agentclientprotocol/sdk`,
//! Node): runs `tests/acp-client/test.mjs` against the built binary (see that file for the
//! scenarios). The client's locked dependencies are installed on first use
//! (`test_support::npm::npm_project`). Without Node >= 20 and npm it prints a `skipped: …`
//! line, unless `AGENT_SDK_NODE=required` (CI), when it fails.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

/// Bound on the whole Node test (it bounds each of its own waits too).
const TEST_TIMEOUT: Duration = Duration::from_secs(180);

fn client_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("acp-client")
}

async fn run(mut command: Command, timeout: Duration, what: &str) -> std::process::Output {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Ok(Ok(output)) => output,
        Ok(Err(err)) => panic!("{what} failed to run: {err}"),
        Err(_) => panic!("{what} did not finish within {timeout:?}"),
    }
}

fn show(output: &std::process::Output) -> String {
    format!(
        "--- stdout ---\n{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_acp_client_drives_the_agent() {
    let dir = client_dir();
    let node_modules = test_support::or_skip!(test_support::npm::npm_project(&dir));
    assert!(
        node_modules
            .join("@agentclientprotocol/sdk/package.json")
            .exists(),
        "npm ci did not install the ACP SDK"
    );

    let mut node = Command::new("node");
    node.arg(dir.join("test.mjs"))
        .arg(env!("CARGO_BIN_EXE_adapter-acp"))
        .current_dir(&dir);
    let output = run(node, TEST_TIMEOUT, "node test.mjs").await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{}", show(&output));
    assert!(
        output.status.success(),
        "the ACP client test failed ({}):\n{}",
        output.status,
        show(&output)
    );
    assert!(
        stdout.contains("all ACP scenarios passed"),
        "the ACP client test did not finish its scenarios:\n{}",
        show(&output)
    );
    for scenario in [
        "ok - initialize",
        "ok - new session, prompt with an allowed permission, end_turn",
        "ok - cancel during a running prompt returns cancelled",
        "ok - a rejected permission fails the call; the turn ends with end_turn",
        "ok - cancel while a permission request is open returns cancelled",
        "ok - load replays the earlier session",
    ] {
        assert!(stdout.contains(scenario), "missing {scenario:?}");
    }
}
