//! `adapter-acp mcp oauth`, end to end, against test-support's MCP server behind its own
//! authorization server: a login for a server of a client's session (`--url`, as ACP's
//! `mcpServers` name it), kept in the data directory's `mcp-oauth` (`--data-dir`), status
//! without the token, logout.

use std::path::Path;
use std::time::Duration;

use test_support::oauth::{curl_browser, OAuthServer};

/// Runs `adapter-acp mcp oauth ARGS` (bounded); exit code, stdout, stderr.
fn oauth(args: &[&str], browser: &str, data_dir: &Path) -> (i32, String, String) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_adapter-acp"));
    cmd.args(["mcp", "oauth"])
        .args(args)
        .arg("--data-dir")
        .arg(data_dir)
        .env("BROWSER", browser)
        .env("DISPLAY", "")
        .env("WAYLAND_DISPLAY", "")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().expect("adapter-acp runs");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let output = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("mcp oauth finished in time")
        .expect("mcp oauth ran");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn login_status_and_logout_of_a_session_server() {
    let browser = test_support::or_skip!(curl_browser());
    let server = OAuthServer::start();
    let data = tempfile::tempdir().expect("data dir");
    let url = server.url();

    let (code, out, err) = oauth(&["login", "docs", "--url", &url], &browser, data.path());
    assert_eq!(code, 0, "{err}");
    assert!(
        out.ends_with("Stored OAuth credentials for docs.\n"),
        "{out}"
    );
    assert_eq!(server.counts().code_grants, 1);
    let stored: Vec<_> = std::fs::read_dir(data.path().join("mcp-oauth"))
        .expect("the token store")
        .flatten()
        .collect();
    assert_eq!(stored.len(), 1);

    let (code, out, _) = oauth(&["status", "--json"], "false", data.path());
    assert_eq!(code, 0);
    let status: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(status["tokens"][0]["serverName"], "docs");
    assert_eq!(status["tokens"][0]["hasRefreshToken"], true);
    for token in server.issued_tokens() {
        assert!(!out.contains(token.as_str()));
    }

    let (code, out, _) = oauth(&["logout", "docs"], "false", data.path());
    assert_eq!(
        (code, out.as_str()),
        (0, "Removed OAuth credentials for docs.\n")
    );
    let (code, out, _) = oauth(&["status"], "false", data.path());
    assert_eq!(
        (code, out.as_str()),
        (0, "No MCP OAuth tokens are stored.\n")
    );
    let (code, _, err) = oauth(&["login"], "false", data.path());
    assert_eq!(
        (code, err.as_str()),
        (
            2,
            "adapter-acp: usage: adapter-acp mcp oauth login <server>\n"
        )
    );
}
