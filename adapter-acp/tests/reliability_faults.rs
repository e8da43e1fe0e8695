//! The provider fault matrix end to end through both front ends: `app-server --stdio` and
//! `acp` on the OpenAI provider against a 127.0.0.1 server that fails in every way a real
//! one does (429 with retry-after, 500/502/503/529, a reset or a stall after content, a
//! truncated SSE frame, an empty body, invalid JSON tool arguments, an unknown tool, a
//! 400 echoing the request headers, connection refused). Every case ends with the
//! protocol's terminal event — `turn.completed`/`turn.failed`, or the `session/prompt`
//! reply (a stop reason or an error) — and the next prompt in the same process works.

#[path = "support/cases.rs"]
mod cases;
mod common;

use cases::{by_case, case_of, tool_round};
use common::acp_client::Acp;
use common::{walk, Client, Env};
use serde_json::{json, Value};
use test_support::{sse, End, Fault, FaultServer};

const KEY: &str = "sk-fault-matrix-9f8e7d6c5b4a";

/// One retry, a 1 ms backoff, a 500 ms idle timeout.
const FAST: [(&str, &str); 4] = [
    ("AGENT_SDK_MAX_RETRIES", "1"),
    ("AGENT_SDK_RETRY_BACKOFF_MS", "1"),
    ("AGENT_SDK_IDLE_TIMEOUT_MS", "500"),
    ("AGENT_SDK_CONNECT_TIMEOUT_MS", "2000"),
];

/// The fault matrix: the reply for `case` on `attempt`; tool cases answer the follow-up
/// request (after the tool ran) with text. Every case not named answers `"fine"`.
fn matrix(case: &str, attempt: usize, body: &str) -> Fault {
    let after_tool = tool_round(body);
    let partial = || sse::chat::Stream::new().delta("partial ");
    match case {
        "case-429" if attempt == 0 => Fault::status(429).header("retry-after", "0"),
        "case-500" => Fault::status(500),
        "case-502" => Fault::status(502),
        "case-503" => Fault::status(503),
        "case-529" => Fault::status(529),
        "case-reset" => Fault::sse_then(partial().unfinished(), End::Reset),
        "case-truncated" => Fault::truncated(&partial().delta("cut here").done(), 2),
        "case-stall" => Fault::sse_then(partial().unfinished(), End::Stall),
        "case-empty" => Fault::empty(),
        "case-badargs" if !after_tool => {
            Fault::sse(sse::chat::tool_call("list_dir", "{\"path\": \"."))
        }
        "case-unknowntool" if !after_tool => Fault::sse(sse::chat::tool_call("no_such_tool", "{}")),
        "case-echo" => Fault::EchoHeaders,
        _ => Fault::sse(sse::chat::text("fine")),
    }
}

/// How each fault case ends: `Some(true)` completes, `Some(false)` fails, `None` either
/// (the provider decides whether a cut stream is an error).
const CASES: [(&str, Option<bool>); 12] = [
    ("case-429", Some(true)),
    ("case-500", Some(false)),
    ("case-502", Some(false)),
    ("case-503", Some(false)),
    ("case-529", Some(false)),
    ("case-reset", Some(false)),
    ("case-truncated", None),
    ("case-stall", Some(false)),
    ("case-empty", None),
    ("case-badargs", Some(true)),
    ("case-unknowntool", Some(true)),
    ("case-echo", Some(false)),
];

fn provider_args(url: &str, env: &Env) -> Vec<String> {
    [
        "--provider",
        "openai",
        "--model",
        "gpt-test",
        "--base-url",
        url,
        "--api-key",
        KEY,
        "--data-dir",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([env.data().display().to_string()])
    .collect()
}

fn assert_no_key(env: &Env, stdout: &[String]) {
    for line in stdout {
        assert!(!line.contains(KEY), "key on stdout: {line}");
    }
    for file in walk(env.root.path()) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap_or_default()).into_owned();
        assert!(!text.contains(KEY), "key in {}", file.display());
    }
}

async fn zcode_turn(c: &mut Client, sid: &str, text: &str) -> Value {
    c.call("session/send", json!({"sessionId": sid, "content": text}))
        .await;
    let events = c
        .events_until(sid, &["turn.completed", "turn.failed"])
        .await;
    events.last().cloned().expect("terminal event")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zcode_fault_matrix_ends_every_turn_and_keeps_serving() {
    let env = Env::new();
    let server = FaultServer::start(by_case(matrix));
    let mut args = vec!["app-server".to_string(), "--stdio".to_string()];
    args.extend(provider_args(&server.v1(), &env));
    let stderr = env.root.path().join("stderr.log");
    let mut c = Client::spawn_with(&args, &FAST, Some(&stderr));
    let sid = c.create(&env.workspace_str(), "yolo").await;
    c.call("session/subscribe", json!({"sessionId": sid})).await;
    for (n, (case, completes)) in CASES.iter().enumerate() {
        let done = zcode_turn(&mut c, &sid, &format!("{case} please")).await;
        let completed = done["type"] == "turn.completed";
        if let Some(expected) = completes {
            assert_eq!(completed, *expected, "{case}: {done}");
        }
        if !completed {
            assert_eq!(done["type"], "turn.failed", "{case}: {done}");
            assert!(
                done["payload"]["error"]["message"]
                    .as_str()
                    .is_some_and(|m| !m.is_empty()),
                "{case}: {done}"
            );
        }
        // The process stays usable: the next turn works.
        let next = zcode_turn(&mut c, &sid, &format!("case-ok{n} again")).await;
        assert_eq!(next["type"], "turn.completed", "after {case}: {next}");
        assert_eq!(next["payload"]["response"], "fine", "after {case}: {next}");
    }
    // The 429 was retried after its retry-after, the 5xx once each.
    let requests = server.requests();
    let count = |case: &str| {
        requests
            .iter()
            .filter(|r| case_of(&r.text()) == case)
            .count()
    };
    assert_eq!(count("case-429"), 2);
    assert_eq!(count("case-503"), 2);
    assert!(c.shutdown_keep().await, "clean exit");
    let stderr = std::fs::read_to_string(&stderr).unwrap_or_default();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains(KEY), "key on stderr");
    assert_no_key(&env, &c.raw);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_fault_matrix_answers_every_prompt_and_keeps_serving() {
    let env = Env::new();
    let server = FaultServer::start(by_case(matrix));
    let stderr = env.root.path().join("stderr.log");
    let mut acp = Acp::spawn(&provider_args(&server.v1(), &env), &FAST, Some(&stderr));
    let sid = acp.yolo_session(&env.workspace()).await;
    for (n, (case, completes)) in CASES.iter().enumerate() {
        let id = acp
            .request(
                "session/prompt",
                json!({"sessionId": sid, "prompt": [{"type": "text", "text": format!("{case} please")}]}),
            )
            .await;
        let reply = acp.reply_answering(id, "allow_once").await;
        let completed = reply["result"]["stopReason"] == "end_turn";
        if let Some(expected) = completes {
            assert_eq!(completed, *expected, "{case}: {reply}");
        }
        if !completed {
            assert!(
                reply["error"]["message"]
                    .as_str()
                    .is_some_and(|m| !m.is_empty()),
                "{case}: {reply}"
            );
        }
        let next = acp.prompt(&sid, &format!("case-ok{n} again")).await;
        assert_eq!(
            next["result"]["stopReason"], "end_turn",
            "after {case}: {next}"
        );
    }
    acp.close_stdin();
    assert!(acp.wait_exit().await.success(), "clean exit");
    let stderr = std::fs::read_to_string(&stderr).unwrap_or_default();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains(KEY), "key on stderr");
    assert_no_key(&env, &acp.raw);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_refused_fails_the_turn_in_both_front_ends() {
    let env = Env::new();
    let url = format!("{}/v1", test_support::refused_url());
    let mut args = vec!["app-server".to_string(), "--stdio".to_string()];
    args.extend(provider_args(&url, &env));
    let mut c = Client::spawn_with(&args, &FAST, None);
    let sid = c.create(&env.workspace_str(), "yolo").await;
    c.call("session/subscribe", json!({"sessionId": sid})).await;
    for attempt in 0..2 {
        let done = zcode_turn(&mut c, &sid, "hello").await;
        assert_eq!(done["type"], "turn.failed", "attempt {attempt}: {done}");
    }
    assert!(c.shutdown_keep().await);

    let mut acp = Acp::spawn(&provider_args(&url, &env), &FAST, None);
    acp.initialize().await;
    let sid = acp.new_session(&env.workspace()).await;
    for attempt in 0..2 {
        let reply = acp.prompt(&sid, "hello").await;
        assert!(
            reply["error"]["code"].is_i64(),
            "attempt {attempt}: {reply}"
        );
    }
    assert!(acp.shutdown().await);
}
