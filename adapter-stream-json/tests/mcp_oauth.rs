//! MCP OAuth through the binary, end to end, against test-support's MCP server behind its
//! own authorization server: `mcp oauth login` (Zero's texts; `$BROWSER` is curl following
//! the redirect to the callback), `status`, an `exec` run that uses the stored token without
//! a browser, `logout`, and the next run skipping the server with the login command; no
//! token in any output or session file.

mod common;

use common::{Run, Sandbox};
use serde_json::json;
use test_support::oauth::{curl_browser, OAuthServer};
use test_support::{MockModel, Reply};

fn oauth(sb: &Sandbox, args: &[&str], browser: &str) -> Run {
    let mut all = vec!["mcp", "oauth"];
    all.extend_from_slice(args);
    let mut cmd = sb.command(&all);
    cmd.env("BROWSER", browser)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY");
    sb.run_with(cmd, "")
}

fn exec(sb: &Sandbox, model: &MockModel) -> Run {
    let url = model.v1();
    let mut args = common::openai_exec(&url, Some("sk-mcp-oauth-tests-0123456789"));
    args.push("--skip-permissions-unsafe");
    args.push("Who am I?");
    let mut cmd = sb.command(&args);
    // No browser can open: a run that needed a login would be skipped.
    cmd.env("BROWSER", "false")
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env("AGENT_SDK_MAX_RETRIES", "0");
    let run = sb.run_with(cmd, "");
    run.assert_framing();
    run
}

/// Every file under `dir`, as text.
fn texts(dir: &std::path::Path) -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(texts(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    out
}

#[test]
fn login_status_a_run_on_the_stored_token_and_logout() {
    let browser = test_support::or_skip!(curl_browser());
    let server = OAuthServer::start();
    let sb = Sandbox::new();
    sb.zero_config(
        "config.json",
        &json!({"mcp": {"servers": {"docs": {"type": "http", "url": server.url(), "auth": "oauth"}}}}),
    );

    let status = oauth(&sb, &["status"], "false");
    assert_eq!(
        (status.code, status.stdout.as_str()),
        (0, "No MCP OAuth tokens are stored.\n")
    );

    let login = oauth(&sb, &["login", "docs"], &browser);
    assert_eq!(login.code, 0, "{}", login.stderr);
    assert!(
        login
            .stdout
            .starts_with("Open this URL in your browser to authorize docs:\n\n  http://127.0.0.1:"),
        "{}",
        login.stdout
    );
    assert!(
        login
            .stdout
            .ends_with("Stored OAuth credentials for docs.\n"),
        "{}",
        login.stdout
    );
    let store = sb.dir.path().join("data/zero/mcp-oauth");
    let files = texts(&store);
    assert_eq!(files.len(), 1, "{files:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&files[0].0).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    let status = oauth(&sb, &["status", "--json"], "false");
    assert_eq!(status.code, 0);
    let listed: serde_json::Value = serde_json::from_str(&status.stdout).expect("JSON");
    assert_eq!(listed["tokens"][0]["serverName"], "docs");
    assert_eq!(listed["tokens"][0]["hasToken"], true);

    // A run uses the stored token: the tool answers, no new login.
    let model = MockModel::start(vec![
        Reply::chat_call("c1", "mcp_docs_whoami", json!({})),
        Reply::chat_text("done"),
    ]);
    let run = exec(&sb, &model);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("authorized as client-1"),
        "{}",
        run.stdout
    );
    assert_eq!(server.counts().authorizations, 1);

    // No token in any output or session file (the token store holds them, 0600).
    let sessions = texts(&sb.sessions());
    assert!(!sessions.is_empty());
    for token in server.issued_tokens() {
        for text in [
            &login.stdout,
            &login.stderr,
            &status.stdout,
            &run.stdout,
            &run.stderr,
        ] {
            assert!(!text.contains(token.as_str()), "{token} in output");
        }
        for (path, text) in &sessions {
            assert!(
                !text.contains(token.as_str()),
                "{token} in {}",
                path.display()
            );
        }
    }

    let logout = oauth(&sb, &["logout", "docs"], "false");
    assert_eq!(
        (logout.code, logout.stdout.as_str()),
        (0, "Removed OAuth credentials for docs.\n")
    );
    assert!(texts(&store).is_empty());

    // Without a token and without a browser, the server is skipped, naming the command.
    let model = MockModel::start(vec![Reply::chat_text("fine")]);
    let run = exec(&sb, &model);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let warning = run
        .of("warning")
        .iter()
        .filter_map(|w| w["message"].as_str().map(str::to_string))
        .find(|m| m.starts_with("MCP server docs unavailable, skipped: "))
        .unwrap_or_else(|| panic!("no warning in {}", run.stdout));
    assert!(
        warning.contains("run `adapter-stream-json mcp oauth login docs`"),
        "{warning}"
    );

    let usage = oauth(&sb, &["login"], "false");
    assert_eq!(
        (usage.code, usage.stderr.as_str()),
        (2, "[zero] usage: zero mcp oauth login <server>\n")
    );
}
