//! MCP OAuth through `adapter-rpc`, end to end, against test-support's MCP server behind its
//! own authorization server: `adapter-rpc mcp oauth login NAME --mcp-config FILE` (`$BROWSER`
//! is curl following the redirect to the callback), an `rpc` session that uses the stored
//! token without a browser, and `logout`. Tokens live in `$ZUT_HOME/mcp-oauth`.

mod common;

use std::path::Path;

use common::*;
use serde_json::{json, Value};
use test_support::oauth::{curl_browser, OAuthServer};
use test_support::{MockModel, Reply};

/// Runs `adapter-rpc mcp oauth ARGS` (bounded); exit code, stdout, stderr.
async fn oauth(home: &Path, args: &[&str], browser: &str) -> (i32, String, String) {
    let mut cmd = tokio::process::Command::new(bin());
    cmd.arg("mcp")
        .arg("oauth")
        .args(args)
        .env("ZUT_HOME", home)
        .env("BROWSER", browser)
        .env("DISPLAY", "")
        .env("WAYLAND_DISPLAY", "")
        .kill_on_drop(true);
    let output = tokio::time::timeout(WAIT, cmd.output())
        .await
        .expect("mcp oauth finished in time")
        .expect("mcp oauth ran");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_serves_the_next_rpc_session_without_a_browser() {
    let browser = test_support::or_skip!(curl_browser());
    let server = OAuthServer::start();
    let home = tempfile::tempdir().expect("zut home");
    let dir = tempfile::tempdir().expect("workspace");
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"docs": {"type": "http", "url": server.url()}}}).to_string(),
    )
    .expect("write config");
    let config = config.display().to_string();

    let (code, out, err) = oauth(
        home.path(),
        &["login", "docs", "--mcp-config", &config],
        &browser,
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("Open this URL in your browser to authorize docs:"),
        "{out}"
    );
    assert!(
        out.ends_with("Stored OAuth credentials for docs.\n"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_dir(home.path().join("mcp-oauth"))
            .unwrap()
            .count(),
        1
    );

    let model = MockModel::start(vec![
        Reply::chat_call("w1", "mcp_docs_whoami", json!({})),
        Reply::chat_text("done"),
    ]);
    let home_text = home.path().display().to_string();
    let mut args = openai_args(&model.v1());
    args.extend(["--mcp-config".to_string(), config.clone()]);
    let mut rpc = Rpc::spawn(Opts {
        args,
        dir: Some(dir),
        env: vec![
            ("AGENT_SDK_MAX_RETRIES", "0"),
            ("ZUT_HOME", &home_text),
            ("BROWSER", "false"),
            ("DISPLAY", ""),
            ("WAYLAND_DISPLAY", ""),
        ],
        ..Opts::default()
    });
    let state = rpc.call(json!({"type": "get_state"}), "s").await;
    let docs = state["data"]["mcp_servers"]
        .as_array()
        .and_then(|servers| servers.iter().find(|s| s["name"] == "docs"))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(docs["status"], "connected", "{state}");
    let started = rpc
        .call(json!({"type": "prompt", "message": "who am I?"}), "p")
        .await;
    assert_eq!(started["data"]["started"], true, "{started}");
    let frames = rpc.until_type("done").await;
    let result = result_of(&frames, "w1");
    assert!(
        result.to_string().contains("authorized as client-1"),
        "{result}"
    );
    assert_eq!(server.counts().authorizations, 1, "no second login");
    for token in server.issued_tokens() {
        assert!(!rpc.pipe.raw.join("\n").contains(token.as_str()));
    }
    rpc.close();
    rpc.rest().await;

    let (code, out, _) = oauth(home.path(), &["logout", "docs"], "false").await;
    assert_eq!(
        (code, out.as_str()),
        (0, "Removed OAuth credentials for docs.\n")
    );
    let (code, _, err) = oauth(
        home.path(),
        &["login", "nope", "--mcp-config", &config],
        "false",
    )
    .await;
    assert_eq!(
        (code, err.as_str()),
        (1, "adapter-rpc: MCP server \"nope\" is not configured\n")
    );
}
