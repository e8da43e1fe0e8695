//! OAuth against test-support's MCP server behind its own authorization server (127.0.0.1):
//! the token stored `0600` and reused without a browser, refreshed when expired, a refused
//! refresh turned into a new login, logout, no token in any output, and every bad answer of
//! an authorization server ending the attempt with a message naming the server while the
//! other servers work.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agent_mcp::oauth::{AuthorizationPrompt, OAuthConfig, OAuthOptions, Presented, TokenStore};
use agent_mcp::{McpManager, McpOptions, McpServerConfig, ServerState};
use async_trait::async_trait;
use common::*;
use serde_json::json;
use test_support::oauth::{Behaviour, OAuthServer};

/// A browser that is already logged in: follows the authorization endpoint's redirect to the
/// client's callback (or, [`Browser::idle`], opens the page and never comes back). It keeps
/// the URLs it was shown and what it was told when each attempt ended.
#[derive(Default)]
struct Browser {
    idle: bool,
    opened: AtomicUsize,
    shown: std::sync::Mutex<Vec<String>>,
    /// Each `finished`: the URL and whether it authorized.
    ended: std::sync::Mutex<Vec<(String, bool)>>,
}

impl Browser {
    fn idle() -> Self {
        Self {
            idle: true,
            ..Self::default()
        }
    }
}

#[async_trait]
impl AuthorizationPrompt for Browser {
    async fn present(&self, _server: &str, url: &str) -> Presented {
        self.opened.fetch_add(1, Ordering::SeqCst);
        self.shown.lock().expect("lock").push(url.to_string());
        if self.idle {
            return Presented::Shown;
        }
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::limited(5))
            .timeout(WAIT)
            .build()
            .expect("a client");
        match client.get(url).send().await {
            Ok(_) => Presented::Shown,
            Err(err) => Presented::NotShown(err.to_string()),
        }
    }

    async fn finished(&self, _server: &str, url: &str, authorized: bool) {
        self.ended
            .lock()
            .expect("lock")
            .push((url.to_string(), authorized));
    }
}

/// No browser can be opened here.
#[derive(Default)]
struct NoBrowser {
    asked: AtomicUsize,
}

#[async_trait]
impl AuthorizationPrompt for NoBrowser {
    async fn present(&self, _server: &str, _url: &str) -> Presented {
        self.asked.fetch_add(1, Ordering::SeqCst);
        Presented::NotShown("no browser to open it".into())
    }
}

fn options(store: &std::path::Path, prompt: Arc<dyn AuthorizationPrompt>) -> McpOptions {
    let _ = rustls::crypto::ring::default_provider().install_default();
    McpOptions::new(std::env::temp_dir())
        .connect_timeout(WAIT)
        .oauth(
            OAuthOptions::default()
                .store(store)
                .prompt(prompt)
                .login_command("agent mcp oauth login")
                .callback_timeout(Duration::from_secs(2)),
        )
}

async fn connect(servers: Vec<McpServerConfig>, options: McpOptions) -> McpManager {
    McpManager::connect(servers, options)
        .await
        .expect("valid config")
}

fn state(manager: &McpManager, name: &str) -> ServerState {
    manager
        .status()
        .into_iter()
        .find(|s| s.name == name)
        .map(|s| s.state)
        .unwrap_or_else(|| panic!("no server {name}"))
}

fn files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    match std::fs::read_dir(dir) {
        Ok(entries) => entries.flatten().map(|e| e.path()).collect(),
        Err(_) => Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_is_stored_privately_reused_without_a_browser_and_removed_by_logout() {
    let server = OAuthServer::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("mcp-oauth");
    let docs = || McpServerConfig::http("docs", server.url());

    // First use: the browser logs in.
    let browser = Arc::new(Browser::default());
    let manager = connect(vec![docs()], options(&store, browser.clone())).await;
    assert_eq!(state(&manager, "docs"), ServerState::Connected);
    let output = call(&manager, "mcp_docs_whoami", json!({})).await;
    assert_eq!(output.text_content(), "authorized as client-1");
    assert_eq!(browser.opened.load(Ordering::SeqCst), 1);
    // The prompt was told the URL it showed is done with, authorized.
    let shown = browser.shown.lock().expect("lock").clone();
    assert_eq!(
        *browser.ended.lock().expect("lock"),
        [(shown[0].clone(), true)]
    );
    let counts = server.counts();
    assert_eq!(
        (
            counts.registrations,
            counts.authorizations,
            counts.code_grants
        ),
        (1, 1, 1)
    );
    let status = format!(
        "{:?} {}",
        manager.status(),
        serde_json::to_string(&manager.status()).unwrap()
    );
    manager.shutdown().await;

    // Stored 0600, one file, and no token anywhere else.
    let stored = files(&store);
    assert_eq!(stored.len(), 1, "{stored:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&stored[0]).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let file = std::fs::read_to_string(&stored[0]).unwrap();
    let tokens = server.issued_tokens();
    assert!(!tokens.is_empty() && tokens.iter().all(|t| file.contains(t.as_str())));
    for token in &tokens {
        assert!(!status.contains(token.as_str()), "{token} in {status}");
        assert!(!output.text_content().contains(token.as_str()));
        // Registered with the scrubber: a tool echoing it would not show it.
        assert!(!agent_tools::scrub_secrets_cow(token).contains(token.as_str()));
    }

    // The next run uses the stored token: no browser, no new authorization.
    let no_browser = Arc::new(NoBrowser::default());
    let manager = connect(vec![docs()], options(&store, no_browser.clone())).await;
    assert_eq!(state(&manager, "docs"), ServerState::Connected);
    assert_eq!(
        call(&manager, "mcp_docs_whoami", json!({}))
            .await
            .text_content(),
        "authorized as client-1"
    );
    assert_eq!(no_browser.asked.load(Ordering::SeqCst), 0);
    assert_eq!(server.counts().authorizations, 1);
    manager.shutdown().await;

    let statuses = TokenStore::new(&store).status().unwrap();
    assert_eq!(statuses.len(), 1);
    assert!(statuses[0].has_token && statuses[0].has_refresh_token && !statuses[0].expired);
    assert_eq!(statuses[0].server_name, "docs");

    // Logout: gone, and the next run needs a login (none possible here: skipped, saying how).
    assert!(TokenStore::new(&store).remove("docs").unwrap());
    assert!(files(&store).is_empty());
    let manager = connect(vec![docs()], options(&store, no_browser.clone())).await;
    match state(&manager, "docs") {
        ServerState::Failed { reason } => {
            assert!(reason.contains("\"docs\" needs an OAuth login"), "{reason}");
            assert!(
                reason.contains("run `agent mcp oauth login docs`"),
                "{reason}"
            );
        }
        other => panic!("connected without a token: {other:?}"),
    }
    assert_eq!(no_browser.asked.load(Ordering::SeqCst), 1);
    assert!(files(&store).is_empty());
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_tokens_are_refreshed_and_a_refused_refresh_means_a_new_login() {
    // Expired on the server: the 401 is answered with a refresh, not a login.
    let server = OAuthServer::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let docs = || McpServerConfig::http("docs", server.url());
    let manager = connect(
        vec![docs()],
        options(dir.path(), Arc::new(Browser::default())),
    )
    .await;
    assert_eq!(state(&manager, "docs"), ServerState::Connected);
    manager.shutdown().await;
    server.expire_access_tokens();
    let no_browser = Arc::new(NoBrowser::default());
    let manager = connect(vec![docs()], options(dir.path(), no_browser.clone())).await;
    assert_eq!(state(&manager, "docs"), ServerState::Connected);
    assert_eq!(
        call(&manager, "mcp_docs_whoami", json!({}))
            .await
            .text_content(),
        "authorized as client-1"
    );
    let counts = server.counts();
    assert_eq!(
        (counts.authorizations, counts.refresh_grants),
        (1, 1),
        "{counts:?}"
    );
    assert_eq!(no_browser.asked.load(Ordering::SeqCst), 0);
    manager.shutdown().await;

    // About to expire by the client's own clock: refreshed before it is sent. (A server
    // declared as OAuth sends its stored token from its first request.)
    let short = OAuthServer::with(Behaviour {
        expires_in: 30,
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let config = || McpServerConfig::http("short", short.url()).oauth(OAuthConfig::default());
    let manager = connect(
        vec![config()],
        options(dir.path(), Arc::new(Browser::default())),
    )
    .await;
    manager.shutdown().await;
    let refused_before = short.counts().refused_requests;
    let manager = connect(
        vec![config()],
        options(dir.path(), Arc::new(NoBrowser::default())),
    )
    .await;
    assert_eq!(state(&manager, "short"), ServerState::Connected);
    let counts = short.counts();
    assert!(counts.refresh_grants >= 1, "{counts:?}");
    assert_eq!(
        counts.refused_requests, refused_before,
        "no request went out with the old token"
    );
    manager.shutdown().await;

    // A refused refresh: a new login, not an error.
    let revoked = OAuthServer::with(Behaviour {
        refuse_refresh: true,
        ..Behaviour::default()
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let config = || McpServerConfig::http("revoked", revoked.url());
    let browser = Arc::new(Browser::default());
    let manager = connect(vec![config()], options(dir.path(), browser.clone())).await;
    manager.shutdown().await;
    revoked.expire_access_tokens();
    let manager = connect(vec![config()], options(dir.path(), browser.clone())).await;
    assert_eq!(state(&manager, "revoked"), ServerState::Connected);
    assert_eq!(browser.opened.load(Ordering::SeqCst), 2);
    let counts = revoked.counts();
    assert_eq!(
        (counts.refresh_grants, counts.authorizations),
        (1, 2),
        "{counts:?}"
    );
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_authorization_servers_end_the_attempt_naming_the_server() {
    let cases: [(Behaviour, &str); 4] = [
        (
            Behaviour {
                malformed_metadata: true,
                ..Behaviour::default()
            },
            "malformed authorization server metadata",
        ),
        (
            Behaviour {
                failing_token_endpoint: true,
                ..Behaviour::default()
            },
            "server_error: the token service is down",
        ),
        (
            Behaviour {
                wrong_state: true,
                ..Behaviour::default()
            },
            "state does not match",
        ),
        (
            Behaviour {
                no_redirect: true,
                ..Behaviour::default()
            },
            "no authorization callback within 2 s",
        ),
    ];
    for (behaviour, expected) in cases {
        let server = OAuthServer::with(behaviour);
        let dir = tempfile::tempdir().expect("temp dir");
        let browser = Arc::new(match expected.starts_with("no authorization") {
            true => Browser::idle(),
            false => Browser::default(),
        });
        let prompt: Arc<dyn AuthorizationPrompt> = browser.clone();
        // The run goes on with the other server.
        let manager = connect(
            vec![
                McpServerConfig::http("docs", server.url()),
                fixture("local"),
            ],
            options(dir.path(), prompt),
        )
        .await;
        match state(&manager, "docs") {
            ServerState::Failed { reason } => {
                assert!(reason.contains("MCP server \"docs\""), "{reason}");
                assert!(reason.contains(expected), "{expected:?} in {reason}");
                for token in server.issued_tokens() {
                    assert!(!reason.contains(token.as_str()));
                }
            }
            other => panic!("{expected}: {other:?}"),
        }
        assert_eq!(state(&manager, "local"), ServerState::Connected);
        assert!(
            files(dir.path()).is_empty(),
            "{expected}: nothing is stored"
        );
        // Every URL shown was ended, unauthorized, before the server was given up.
        let shown = browser.shown.lock().expect("lock").clone();
        let ended = browser.ended.lock().expect("lock").clone();
        let expected_ends: Vec<(String, bool)> = shown.into_iter().map(|u| (u, false)).collect();
        assert_eq!(ended, expected_ends, "{expected}");
        manager.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_of_oauth_runs_for_servers_that_do_not_ask() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("never");
    let no_browser = Arc::new(NoBrowser::default());
    let manager = connect(vec![fixture("local")], options(&store, no_browser.clone())).await;
    assert_eq!(state(&manager, "local"), ServerState::Connected);
    manager.shutdown().await;
    assert!(!store.exists());
    assert_eq!(no_browser.asked.load(Ordering::SeqCst), 0);

    // Logins are not started while connecting when the host says so.
    let server = OAuthServer::start();
    let mut options = options(&store, no_browser.clone());
    options.oauth.interactive = false;
    let manager = connect(vec![McpServerConfig::http("docs", server.url())], options).await;
    match state(&manager, "docs") {
        ServerState::Failed { reason } => {
            assert!(reason.contains("not started while connecting"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.counts().authorizations, 0);
    assert_eq!(no_browser.asked.load(Ordering::SeqCst), 0);
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_oauth_command_has_zeros_texts_and_exit_codes() {
    use agent_mcp::oauth::cli::OAuthCommand;
    let server = OAuthServer::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let mut oauth = options(dir.path(), Arc::new(Browser::default())).oauth;
    oauth.store = Some(dir.path().to_path_buf());
    let command = OAuthCommand {
        program: "zero".into(),
        prefix: "[zero] ".into(),
        servers: vec![
            McpServerConfig::http("docs", server.url()),
            McpServerConfig::stdio("local", "true"),
        ],
        options: oauth,
        config_flags: false,
    };
    let run = |args: &'static [&'static str]| {
        let command = command.clone();
        async move {
            let (mut out, mut err) = (Vec::new(), Vec::new());
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            let code = command.run(&args, &mut out, &mut err).await;
            (
                code,
                String::from_utf8_lossy(&out).into_owned(),
                String::from_utf8_lossy(&err).into_owned(),
            )
        }
    };
    let (code, out, _) = run(&["status"]).await;
    assert_eq!(
        (code, out.as_str()),
        (0, "No MCP OAuth tokens are stored.\n")
    );
    let (code, out, err) = run(&["login", "docs"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("Open this URL in your browser to authorize docs:\n\n  http://127.0.0.1:"),
        "{out}"
    );
    assert!(
        out.ends_with(
            "\n\nWaiting for the authorization callback...\nStored OAuth credentials for docs.\n"
        ),
        "{out}"
    );
    let (code, out, _) = run(&["status", "--json"]).await;
    assert_eq!(code, 0);
    let status: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(status["tokens"][0]["serverName"], "docs");
    assert_eq!(status["tokens"][0]["hasToken"], true);
    for token in server.issued_tokens() {
        assert!(!out.contains(token.as_str()));
    }
    let (code, out, _) = run(&["status", "docs"]).await;
    assert_eq!(code, 0);
    assert!(
        out.starts_with("docs [") && out.contains(": token present (refreshable), expires "),
        "{out}"
    );

    assert_eq!(
        run(&["login", "docs", "--json"]).await.2,
        "[zero] zero mcp oauth login does not support --json\n"
    );
    assert_eq!(
        run(&["login"]).await,
        (
            2,
            String::new(),
            "[zero] usage: zero mcp oauth login <server>\n".into()
        )
    );
    assert_eq!(
        run(&["login", "nope"]).await,
        (
            1,
            String::new(),
            "[zero] MCP server \"nope\" is not configured\n".into()
        )
    );
    assert_eq!(
        run(&["login", "local"]).await.2,
        "[zero] MCP server \"local\" does not declare auth: \"oauth\"\n"
    );
    assert_eq!(
        run(&["frobnicate"]).await,
        (
            2,
            String::new(),
            "[zero] unknown mcp oauth subcommand \"frobnicate\"\n".into()
        )
    );
    assert_eq!(
        run(&["status", "--x"]).await.2,
        "[zero] unknown mcp permissions flag \"--x\"\n"
    );
    assert_eq!(
        run(&[]).await.2,
        "[zero] mcp oauth subcommand required. Use `zero mcp oauth status`.\n"
    );
    assert!(run(&["--help"])
        .await
        .1
        .starts_with("Usage:\n  zero mcp oauth <command>\n"));

    let (code, out, _) = run(&["logout", "docs", "--json"]).await;
    assert_eq!(
        (code, out.as_str()),
        (
            0,
            "{\n  \"serverName\": \"docs\",\n  \"removed\": true\n}\n"
        )
    );
    assert_eq!(
        run(&["logout", "docs"]).await.1,
        "No OAuth credentials stored for docs.\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_url_of_a_skipped_server_still_logs_in_and_the_server_joins() {
    let server = OAuthServer::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let manager = connect(
        vec![McpServerConfig::http("docs", server.url())],
        options(dir.path(), Arc::new(NoBrowser::default())),
    )
    .await;
    let reason = match state(&manager, "docs") {
        ServerState::Failed { reason } => reason,
        other => panic!("{other:?}"),
    };
    // The warning carries the URL, which still completes the login for a while.
    let url = reason
        .split("; open ")
        .nth(1)
        .and_then(|rest| rest.split(" within ").next())
        .unwrap_or_else(|| panic!("no URL in {reason}"))
        .to_string();
    assert!(
        reason.contains("or run `agent mcp oauth login docs`"),
        "{reason}"
    );
    let before = agent_core::tool_source::ToolSource::generation(&manager);
    assert_eq!(
        Browser::default().present("docs", &url).await,
        Presented::Shown
    );
    // The login completes in the background; the next refreshes connect the server.
    let deadline = tokio::time::Instant::now() + WAIT;
    while state(&manager, "docs") != ServerState::Connected {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not connected in time"
        );
        manager.refresh().await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(agent_core::tool_source::ToolSource::generation(&manager) > before);
    assert_eq!(
        call(&manager, "mcp_docs_whoami", json!({}))
            .await
            .text_content(),
        "authorized as client-1"
    );
    assert_eq!(files(dir.path()).len(), 1, "the token is stored");
    manager.shutdown().await;
}
