//! No leaked secrets: with a random API key (given in the provider's environment variable,
//! so tools inherit an environment that holds it) full turns through both front ends —
//! a provider error whose body echoes the request headers, and a `bash` call running
//! `env` — never put the key on stdout, stderr (debug logging on), or into any file of
//! the data directory or workspace.
//!
//! A property over generated keys: 3 cases by default, `AGENT_SDK_PROPTEST_CASES` for more.

#[path = "support/cases.rs"]
mod cases;
mod common;

use cases::{by_case, tool_round};
use common::acp_client::Acp;
use common::{walk, Client, Env};
use proptest::test_runner::{Config, TestRunner};
use serde_json::json;
use test_support::{sse, Fault, FaultServer};

fn pick(case: &str, _attempt: usize, body: &str) -> Fault {
    match case {
        "case-echo" => Fault::EchoHeaders,
        "case-env" if !tool_round(body) => Fault::sse(sse::chat::tool_call(
            "bash",
            &json!({"command": "env; printenv OPENAI_API_KEY"}).to_string(),
        )),
        _ => Fault::sse(sse::chat::text("fine")),
    }
}

fn run_both(key: &str) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let env = Env::new();
        let server = FaultServer::start(by_case(pick));
        let url = server.v1();
        let envs = [
            ("OPENAI_API_KEY", key),
            ("ADAPTER_ACP_LOG", "debug"),
            ("AGENT_SDK_MAX_RETRIES", "0"),
        ];
        let common_args: Vec<String> = [
            "--provider",
            "openai",
            "--model",
            "gpt-test",
            "--base-url",
            &url,
            "--data-dir",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([env.data().display().to_string()])
        .collect();

        // ZCode.
        let stderr_z = env.root.path().join("zcode.stderr");
        let mut a = vec!["app-server".to_string(), "--stdio".to_string()];
        a.extend(common_args.clone());
        let mut c = Client::spawn_with(&a, &envs, Some(&stderr_z));
        let sid = c.create(&env.workspace_str(), "yolo").await;
        c.call("session/subscribe", json!({"sessionId": sid})).await;
        for (case, terminal) in [("case-echo", "turn.failed"), ("case-env", "turn.completed")] {
            c.call("session/send", json!({"sessionId": sid, "content": case}))
                .await;
            let events = c
                .events_until(&sid, &["turn.completed", "turn.failed"])
                .await;
            assert_eq!(events.last().expect("terminal")["type"], terminal, "{case}");
        }
        assert!(c.shutdown_keep().await);

        // ACP.
        let stderr_a = env.root.path().join("acp.stderr");
        let mut acp = Acp::spawn(&common_args, &envs, Some(&stderr_a));
        let sid = acp.yolo_session(&env.workspace()).await;
        let failed = acp.prompt(&sid, "case-echo").await;
        assert!(failed["error"]["code"].is_i64(), "{failed}");
        let ran = acp.prompt(&sid, "case-env").await;
        assert_eq!(ran["result"]["stopReason"], "end_turn", "{ran}");
        acp.close_stdin();
        assert!(acp.wait_exit().await.success());

        // The echo really carried the key, and the tool really ran `env`: the checks
        // below are not vacuous.
        let requests = server.requests();
        assert!(
            requests.iter().any(|r| r.head().contains(key)),
            "the key was sent"
        );
        assert!(
            c.raw.iter().any(|l| l.contains("PATH=")),
            "the env output reached the client"
        );
        let mut lines: Vec<String> = c.raw.clone();
        lines.extend(acp.raw.clone());
        for line in &lines {
            assert!(!line.contains(key), "key on stdout: {line}");
        }
        for file in walk(env.root.path()) {
            let bytes = std::fs::read(&file).unwrap_or_default();
            let text = String::from_utf8_lossy(&bytes);
            assert!(!text.contains(key), "key in {}", file.display());
        }
    });
}

#[test]
fn prop_random_keys_never_leak_through_either_front_end() {
    let cases = std::env::var("AGENT_SDK_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&"sk-[A-Za-z0-9]{24,40}", |key| {
            run_both(&key);
            Ok(())
        })
        .expect("property");
}
