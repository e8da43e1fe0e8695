//! The app-server on a real provider implementation (OpenAI Chat Completions) against a
//! mock server on 127.0.0.1.

mod common;

use common::{walk, Client, Env};
use serde_json::json;
use test_support::{sse, MockModel, Reply, Sse};

/// "Hello from the mock." in two deltas, with usage (11 + 4 tokens).
fn sse() -> Sse {
    sse::chat::Stream::new()
        .delta("Hello ")
        .delta("from the mock.")
        .finish("stop")
        .usage(11, 4, 0)
        .done()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_provider_turn_against_a_local_mock() {
    let env = Env::new();
    let ws = env.workspace_str();
    let server = MockModel::start([Reply::sse(sse())]);
    let mut c = Client::spawn(&[
        "app-server".into(),
        "--stdio".into(),
        "--provider".into(),
        "openai".into(),
        "--model".into(),
        "gpt-test".into(),
        "--base-url".into(),
        server.v1(),
        "--api-key".into(),
        "sk-test-secret-123".into(),
        "--data-dir".into(),
        env.data().display().to_string(),
    ]);
    let sid = c.create(&ws, "yolo").await;
    let read = c.call("session/read", json!({"sessionId": sid})).await;
    assert_eq!(
        read["settings"]["model"]["current"],
        json!({"providerId": "openai", "modelId": "gpt-test"})
    );
    c.call("session/subscribe", json!({"sessionId": sid})).await;
    c.call(
        "session/send",
        json!({"sessionId": sid, "content": "say hello"}),
    )
    .await;
    let events = c
        .events_until(&sid, &["turn.completed", "turn.failed"])
        .await;
    let done = events.last().expect("terminal");
    assert_eq!(done["type"], "turn.completed", "{done}");
    assert_eq!(done["payload"]["response"], "Hello from the mock.");
    assert_eq!(done["payload"]["usage"]["totalTokens"], 15);
    let requests = server
        .wait_for_requests(1, common::WAIT)
        .await
        .expect("request in time");
    let (head, body) = (requests[0].head(), requests[0].json());
    assert!(head.starts_with("POST /v1/chat/completions"), "{head}");
    assert!(head
        .to_ascii_lowercase()
        .contains("bearer sk-test-secret-123"));
    assert_eq!(body["model"], "gpt-test");
    assert!(body.to_string().contains("say hello"));
    // The key never reaches stdout or the session files.
    assert!(c.raw.iter().all(|l| !l.contains("sk-test-secret-123")));
    assert!(c.shutdown().await);
    let files = walk(&env.data());
    assert!(files.iter().any(|f| f.ends_with("meta.jsonl")), "{files:?}");
    for entry in files {
        let text = std::fs::read_to_string(&entry).unwrap_or_default();
        assert!(
            !text.contains("sk-test-secret-123"),
            "key in {}",
            entry.display()
        );
    }
}
