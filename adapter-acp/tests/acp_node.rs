//! Drives `adapter-acp acp` with the official ACP client SDK (`@agentclientprotocol/sdk`,
//! Node): runs `tests/acp-client/test.mjs` (a client that lends nothing) and
//! `tests/acp-client/editor.mjs` (an editor lending its buffers, terminals and forms, on the
//! mock model server) against the built binary (see those files for the scenarios). The
//! client's locked dependencies are installed on first use
//! (`test_support::npm::npm_project`). Without Node >= 20 and npm it prints a `skipped: …`
//! line, unless `AGENT_SDK_NODE=required` (CI), when it fails.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use test_support::oauth::{curl_browser, OAuthServer};
use test_support::{MockModel, Reply, Script};
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
    // An MCP server behind OAuth, for a client without `elicitation.url`: its authorization
    // URL goes to `$BROWSER` (curl, following the redirect to the agent's callback).
    let oauth = OAuthServer::start();
    // Without curl the scenario is skipped (a failure with AGENT_SDK_CURL=required).
    let browser = curl_browser().inspect_err(|skip| skip.report()).ok();
    if let Some(browser) = &browser {
        node.env("ACP_TEST_OAUTH_MCP", oauth.url())
            .env("BROWSER", browser)
            .env("DISPLAY", "")
            .env("WAYLAND_DISPLAY", "");
    }
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
    if browser.is_some() {
        assert!(stdout.contains(
            "ok - without elicitation.url an MCP server's authorization URL goes to $BROWSER"
        ));
        // The browser's visit completed the login, and the session's server was reached
        // with the token.
        assert_eq!(oauth.counts().code_grants, 1);
        assert!(oauth.counts().authorized_requests > 0);
    }
}

/// The replies of the mock model to the editor scenarios (`tests/acp-client/editor.mjs`),
/// each scenario's requests recognised by the tag its prompt carries.
fn editor_script() -> Script<Reply> {
    let call = |id: &str, name: &str, args: serde_json::Value| Reply::chat_call(id, name, args);
    Script::new()
        .route(
            |r| r.contains("[scenario-read]"),
            [
                call("call_read", "read_file", json!({"path": "notes.txt"})),
                Reply::chat_text("The notes say hi."),
            ],
        )
        .route(
            |r| r.contains("[scenario-write]"),
            [
                call(
                    "call_write",
                    "write_file",
                    json!({"path": "new.txt", "content": "written via the editor\n"}),
                ),
                Reply::chat_text("Written."),
            ],
        )
        .route(
            |r| r.contains("[scenario-bash]"),
            [
                call(
                    "call_bash",
                    "bash",
                    json!({"command": "echo from-terminal"}),
                ),
                Reply::chat_text("Ran it."),
            ],
        )
        .route(
            |r| r.contains("[scenario-exec]"),
            [
                call(
                    "call_exec",
                    "exec_command",
                    json!({"cmd": "echo ready; read line; echo got:$line", "yield_time_ms": 250}),
                ),
                call(
                    "call_stdin",
                    "write_stdin",
                    json!({"session_id": 1, "chars": "hi\n", "yield_time_ms": 10000}),
                ),
                call(
                    "call_exec_long",
                    "exec_command",
                    json!({"cmd": "sleep 30", "yield_time_ms": 250}),
                ),
                call(
                    "call_interrupt",
                    "write_stdin",
                    json!({"session_id": 2, "chars": "\u{3}", "yield_time_ms": 10000}),
                ),
                Reply::chat_text("Both ran."),
            ],
        )
        .route(
            |r| r.contains("[scenario-cancel]"),
            [call("call_sleep", "bash", json!({"command": "sleep 30"}))],
        )
        .route(
            |r| r.contains("[scenario-fail]"),
            [
                call("call_fail", "read_file", json!({"path": "missing.txt"})),
                Reply::chat_text("It failed."),
            ],
        )
        .route(
            |r| r.contains("[scenario-ask]"),
            [
                call(
                    "call_ask",
                    "ask_user",
                    json!({"questions": [{"question": "Pick a color",
                        "options": [{"label": "Red"}, {"label": "Blue"}]}]}),
                ),
                Reply::chat_text("Blue it is."),
            ],
        )
        .route(
            |r| r.contains("[scenario-mention]"),
            [Reply::chat_text("Read them.")],
        )
        .route(
            |r| r.contains("[scenario-mcp-resource]"),
            [Reply::chat_text("Summarized.")],
        )
        .route(
            |r| r.contains("[scenario-model]"),
            [Reply::chat_text("Large.")],
        )
        .route(
            |r| r.contains("[scenario-resume]"),
            [Reply::chat_text("First."), Reply::chat_text("Second.")],
        )
        .route(
            |r| r.contains("[scenario-cmd]"),
            [Reply::chat_text("Hello, Ada!")],
        )
        .route(
            |r| r.contains("[scenario-oauth]"),
            [
                call("call_whoami", "mcp_docs_whoami", json!({})),
                Reply::chat_text("You are authorized."),
            ],
        )
        .route(
            |r| r.contains("[scenario-mcp]"),
            [
                call(
                    "call_mcp",
                    "mcp_everything_trigger_elicitation_request",
                    json!({}),
                ),
                Reply::chat_text("Thanks."),
            ],
        )
}

/// The official client as an editor lending its buffers, terminals and forms
/// (`tests/acp-client/editor.mjs`), against the mock model server; then what reached the
/// model: the buffer (never the disk), the switched model, the resumed history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_acp_client_lends_its_editor() {
    let dir = client_dir();
    let node_modules = test_support::or_skip!(test_support::npm::npm_project(&dir));
    assert!(node_modules
        .join("@agentclientprotocol/sdk/package.json")
        .exists());
    let server = MockModel::start(editor_script());
    // An MCP server behind OAuth: its authorization URL reaches the editor as a url-mode
    // elicitation. No browser may open it instead (`$BROWSER` fails, no display).
    let oauth = OAuthServer::start();
    let mut node = Command::new("node");
    node.arg(dir.join("editor.mjs"))
        .arg(env!("CARGO_BIN_EXE_adapter-acp"))
        .arg(server.v1())
        .env("ACP_TEST_OAUTH_MCP", oauth.url())
        .env("BROWSER", "false")
        .env("DISPLAY", "")
        .env("WAYLAND_DISPLAY", "")
        .current_dir(&dir);
    // The MCP scenario needs server-everything (installed like the client's packages).
    if test_support::mcp::ready() {
        node.arg(test_support::mcp::node())
            .arg(test_support::mcp::script("server-everything"));
    }
    let output = run(node, TEST_TIMEOUT, "node editor.mjs").await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{}", show(&output));
    assert!(
        output.status.success() && stdout.contains("all editor scenarios passed"),
        "the editor scenarios failed ({}):\n{}",
        output.status,
        show(&output)
    );
    for scenario in [
        "ok - initialize, configOptions with the provider's models",
        "ok - read_file sees the unsaved buffer, not the disk",
        "ok - write_file goes to the editor, not to the disk",
        "ok - bash runs in an editor terminal, which the call names and which is released",
        "ok - exec_command runs in an editor terminal; write_stdin feeds it and \\u0003 kills it",
        "ok - cancel kills the command's terminal and releases it",
        "ok - a read the editor fails is the call's error; the turn ends",
        "ok - ask_user is one elicitation form",
        "ok - a resource_link is read (the editor's buffer) and an embedded resource is context",
        "ok - set_config_option switches the model of the next request",
        "ok - close, resume (the next prompt keeps the history), delete",
        "ok - slash commands reach the client and expand",
        "ok - an MCP server's authorization URL is an elicitation in url mode",
    ] {
        assert!(stdout.contains(scenario), "missing {scenario:?}");
    }

    let requests = server.requests();
    let of = |tag: &str| -> Vec<&test_support::Request> {
        requests.iter().filter(|r| r.contains(tag)).collect()
    };
    assert_eq!(
        server.model_list_requests(),
        1,
        "the models are listed once"
    );
    let read = of("[scenario-read]");
    assert_eq!(read.len(), 2);
    assert!(
        read[1].contains("unsaved buffer text"),
        "the model read the buffer"
    );
    assert!(
        read.iter().all(|r| !r.contains("disk text")),
        "never the disk"
    );
    let model = of("[scenario-model]");
    assert_eq!(model.len(), 1);
    assert_eq!(model[0].json()["model"], "mock-model-large");
    assert_eq!(read[0].json()["model"], "mock-model-small");
    let resumed = of("[scenario-resume] second prompt");
    assert_eq!(resumed.len(), 1);
    assert!(
        resumed[0].contains("[scenario-resume] first prompt"),
        "history kept"
    );
    assert!(resumed[0].contains("First."), "the earlier answer too");
    let asked = of("[scenario-ask]");
    assert!(asked
        .last()
        .is_some_and(|r| r.contains("Pick a color: Blue")));
    // A mentioned file of the workspace reaches the model from the editor's buffer (never
    // the disk), after the prompt, as context; one outside it is not read, and the model
    // is told why; an embedded resource is context too.
    let mention = of("[scenario-mention]");
    assert_eq!(mention.len(), 1);
    let body = mention[0].json();
    let user = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .map(|m| m["content"].clone())
        .unwrap_or_default();
    let sent = match &user {
        serde_json::Value::String(text) => text.clone(),
        parts => (parts.as_array().into_iter().flatten())
            .filter_map(|p| p["text"].as_str())
            .collect(),
    };
    assert!(
        sent.starts_with("[scenario-mention] Look at [@notes.txt](file://"),
        "{sent}"
    );
    assert!(
        sent.contains("notes.txt\">\nunsaved buffer text\n\n</context>"),
        "{sent}"
    );
    assert!(!sent.contains("disk text"), "{sent}");
    assert!(
        sent.contains("<context ref=\"file:///etc/passwd\">\n(not read: "),
        "{sent}"
    );
    assert!(!sent.contains("root:"), "{sent}");
    assert!(
        sent.contains(
            "<context ref=\"file:///elsewhere/spec.md\">\nembedded spec text\n</context>"
        ),
        "{sent}"
    );
    let failed = of("[scenario-fail]");
    assert!(failed
        .last()
        .is_some_and(|r| r.contains("through the editor")));
    let expanded = of("[scenario-cmd]");
    assert_eq!(expanded.len(), 1);
    assert!(
        expanded[0].contains("Greet Ada warmly."),
        "the command's text, expanded"
    );
    if stdout.contains("ok - a resource_link to an MCP resource is read") {
        let read = of("[scenario-mcp-resource]");
        assert_eq!(read.len(), 1);
        assert!(
            read[0].contains("demo://resource/static/document/features.md")
                && read[0].contains("Everything Server - Features"),
            "the resource's text reached the model"
        );
    }
    // The editor's visit completed the one authorization, and the tool's answer (the
    // server's, on the token it issued) reached the model.
    assert_eq!(oauth.counts().code_grants, 1);
    assert!(oauth.counts().authorized_requests > 0);
    assert!(of("[scenario-oauth]")
        .last()
        .is_some_and(|r| r.contains("authorized as ")));
    if stdout.contains("ok - an MCP server's elicitation is answered through the client") {
        assert!(of("[scenario-mcp]")
            .last()
            .is_some_and(|r| r.contains("Ada Lovelace")));
    }
}
