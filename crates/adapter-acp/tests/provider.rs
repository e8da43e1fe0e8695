//! The app-server on a real provider implementation (OpenAI Chat Completions) against a
//! mock server on 127.0.0.1.

mod common;

use common::{Client, Env};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Serves `sse` to every request; returns the base URL and the received (head, body) pairs.
async fn mock_server(
    sse: String,
) -> (
    String,
    tokio::sync::mpsc::UnboundedReceiver<(String, Value)>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let (sse, tx) = (sse.clone(), tx.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let head_end = loop {
                    let n = socket.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break p + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                let length = head
                    .lines()
                    .filter_map(|l| l.split_once(':'))
                    .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
                    .and_then(|(_, v)| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                let mut body = buf[head_end..].to_vec();
                while body.len() < length {
                    let n = socket.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    body.extend_from_slice(&chunk[..n]);
                }
                let _ = tx.send((head, serde_json::from_slice(&body).unwrap_or(Value::Null)));
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{sse}"
                );
                let _ = socket.write_all(reply.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    (format!("http://{addr}/v1"), rx)
}

fn sse() -> String {
    let chunk = |delta: Value, finish: Value, usage: Option<Value>| {
        let mut c = json!({"id": "c1", "object": "chat.completion.chunk", "created": 1,
            "model": "gpt-test", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        if let Some(u) = usage {
            c["usage"] = u;
        }
        format!("data: {c}\n\n")
    };
    [
        chunk(
            json!({"role": "assistant", "content": "Hello "}),
            Value::Null,
            None,
        ),
        chunk(json!({"content": "from the mock."}), Value::Null, None),
        chunk(
            json!({}),
            json!("stop"),
            Some(json!({"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15})),
        ),
        "data: [DONE]\n\n".to_string(),
    ]
    .concat()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_provider_turn_against_a_local_mock() {
    let env = Env::new();
    let ws = env.workspace_str();
    let (base_url, mut requests) = mock_server(sse()).await;
    let mut c = Client::spawn(&[
        "app-server".into(),
        "--stdio".into(),
        "--provider".into(),
        "openai".into(),
        "--model".into(),
        "gpt-test".into(),
        "--base-url".into(),
        base_url,
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
    let (head, body) = tokio::time::timeout(common::WAIT, requests.recv())
        .await
        .expect("request in time")
        .expect("a request");
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
    assert!(files.iter().any(|f| f.ends_with("meta.json")), "{files:?}");
    for entry in files {
        let text = std::fs::read_to_string(&entry).unwrap_or_default();
        assert!(
            !text.contains("sk-test-secret-123"),
            "key in {}",
            entry.display()
        );
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
