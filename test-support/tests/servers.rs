//! The mock model server and the fault server, driven by a real HTTP client.

use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use test_support::{fixtures, sse, End, Fault, FaultServer, MockModel, Reply, Script};

const WAIT: Duration = Duration::from_secs(20);

/// A client builder: reqwest is built without a crypto provider of its own, so it is given
/// a rustls configuration (without roots: the servers here speak plain HTTP).
fn builder() -> reqwest::ClientBuilder {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    reqwest::Client::builder().tls_backend_preconfigured(tls)
}

fn client() -> reqwest::Client {
    builder().timeout(WAIT).build().expect("client")
}

/// The body chunks of one POST, as the client received them.
async fn post(
    url: &str,
    body: serde_json::Value,
) -> (u16, reqwest::header::HeaderMap, Vec<Vec<u8>>) {
    let response = client()
        .post(url)
        .header("authorization", "Bearer sk-test")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("response");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let mut chunks = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        chunks.push(chunk.expect("chunk").to_vec());
    }
    (status, headers, chunks)
}

#[tokio::test]
async fn the_mock_streams_vendor_events_and_records_the_request() {
    let server = MockModel::start([Reply::sse(sse::anthropic::text("Hello there, world"))]);
    let (status, headers, chunks) = post(
        &format!("{}/v1/messages", server.url()),
        json!({"model": "claude-test", "stream": true}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "text/event-stream; charset=utf-8");
    assert_eq!(headers["request-id"], "req_test");
    let body = String::from_utf8(chunks.concat()).expect("utf-8");
    assert!(body.starts_with("event: message_start\n"), "{body}");
    assert!(body.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
    assert!(chunks.len() > 1, "streamed in several chunks");

    let requests = server.wait_for_requests(1, WAIT).await.expect("recorded");
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, "/v1/messages");
    assert_eq!(requests[0].header("Authorization"), Some("Bearer sk-test"));
    assert_eq!(requests[0].json()["model"], "claude-test");
    assert!(requests[0]
        .head()
        .starts_with("POST /v1/messages HTTP/1.1\r\n"));
}

#[tokio::test]
async fn routes_pick_replies_by_content_and_keep_their_own_sequence() {
    let server = MockModel::start(
        Script::new()
            .route(
                |r| r.contains("case-429"),
                [
                    Reply::error(429, "rate_limit_error", "slow down").header("retry-after", "2"),
                    Reply::json(200, json!({"ok": "after"})),
                ],
            )
            .fallback([
                Reply::json(200, json!({"ok": 1})),
                Reply::json(200, json!({"ok": 2})),
            ]),
    );
    let url = server.v1();
    let mut seen = Vec::new();
    for body in ["a", "case-429", "b", "case-429", "c"] {
        let (status, headers, chunks) = post(&url, json!({"input": body})).await;
        let json: serde_json::Value = serde_json::from_slice(&chunks.concat()).expect("json");
        seen.push((status, headers.get("retry-after").is_some(), json));
    }
    assert_eq!(
        seen,
        [
            (200, false, json!({"ok": 1})),
            (
                429,
                true,
                json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
            ),
            (200, false, json!({"ok": 2})),
            (200, false, json!({"ok": "after"})),
            (200, false, json!({"ok": 2})),
        ]
    );
    assert_eq!(server.request_count(), 5);
}

#[tokio::test]
async fn unanswered_requests_get_a_500_and_fragmented_replies_split_anywhere() {
    let server = MockModel::start(Script::new());
    let (status, _, _) = post(&server.v1(), json!({})).await;
    assert_eq!(status, 500);

    let text = "data: {\"x\":\"héllo\"}\n\n";
    let server = MockModel::start([Reply::sse(test_support::Sse::raw(text)).fragmented(3)]);
    let (_, _, chunks) = post(&server.v1(), json!({})).await;
    assert_eq!(String::from_utf8(chunks.concat()).expect("utf-8"), text);
}

#[test]
fn a_synchronous_test_can_wait_for_requests() {
    let server = MockModel::start([Reply::json(200, "{}")]);
    let err = server
        .wait_for_requests_blocking(1, Duration::from_millis(10))
        .expect_err("nothing sent yet");
    assert_eq!((err.wanted, err.received.len()), (1, 0));
    let addr = server.addr();
    let sender = std::thread::spawn(move || {
        use std::io::{Read, Write};
        let mut socket = std::net::TcpStream::connect(addr).expect("connect");
        socket
            .write_all(
                b"POST /x HTTP/1.1\r\nhost: a\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
            )
            .expect("write");
        let mut answer = String::new();
        socket.read_to_string(&mut answer).expect("read");
        answer
    });
    let requests = server
        .wait_for_requests_blocking(1, WAIT)
        .expect("the request arrives");
    assert_eq!(requests[0].path, "/x");
    assert!(sender.join().expect("sender").starts_with("HTTP/1.1 200"));
}

#[tokio::test]
async fn recorded_fixtures_replay_as_captured() {
    let Some(stream) = fixtures::sse("llama-server-smollm2/smollm2.openai.stream.plain.sse") else {
        eprintln!("note: no fixtures directory; nothing to replay");
        return;
    };
    let expected = stream.body();
    let server = MockModel::start([Reply::sse(stream)]);
    let (_, headers, chunks) = post(&server.v1(), json!({})).await;
    assert_eq!(headers["content-type"], "text/event-stream");
    assert_eq!(String::from_utf8(chunks.concat()).expect("utf-8"), expected);
}

/// POSTs `body` to `url` and returns the response once its head arrived.
async fn send(client: &reqwest::Client, url: &str, body: &'static str) -> reqwest::Response {
    client
        .post(url)
        .body(body)
        .send()
        .await
        .expect("response head")
}

async fn read_all(response: reqwest::Response) -> (Vec<u8>, Option<reqwest::Error>) {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(chunk) => body.extend_from_slice(&chunk),
            Err(err) => return (body, Some(err)),
        }
    }
    (body, None)
}

#[tokio::test]
async fn faults_break_the_stream_the_way_they_say() {
    let partial = sse::chat::Stream::new().text("partial answer");
    let partial_body = partial.clone().done().without_last(1).body();
    let server = FaultServer::start([
        Fault::sse_then(partial.clone().done().without_last(1), End::Reset),
        Fault::sse_then(partial.clone().done().without_last(1), End::Cut),
        Fault::truncated(&sse::chat::text("whole"), 2),
        Fault::empty(),
        Fault::status(429).header("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"),
    ]);
    let client = client();
    let send = || client.post(server.v1()).body("{\"case\":1}").send();

    // Reset and cut: the content arrives, then the body fails.
    for _ in 0..2 {
        let (body, err) = read_all(send().await.expect("head")).await;
        assert_eq!(String::from_utf8(body).expect("utf-8"), partial_body);
        assert!(err.is_some(), "the body breaks after its content");
    }
    // Truncated: a complete response whose last frame stops half way.
    let (body, err) = read_all(send().await.expect("head")).await;
    assert!(err.is_none());
    let body = String::from_utf8(body).expect("utf-8");
    assert!(
        !body.ends_with("\n\n") && body.contains("data: {"),
        "{body}"
    );
    // Empty: a 200 stream with no event.
    let response = send().await.expect("head");
    assert_eq!(response.status(), 200);
    assert_eq!(read_all(response).await.0, b"");
    // A status with its headers.
    let response = send().await.expect("head");
    assert_eq!(response.status(), 429);
    assert_eq!(
        response.headers()["retry-after"],
        "Wed, 21 Oct 2015 07:28:00 GMT"
    );
    let body = response.text().await.expect("body");
    assert!(body.contains("fault 429"), "{body}");
    assert_eq!(server.request_count(), 5);
}

#[tokio::test]
async fn stalls_and_silence_hit_the_client_timeout() {
    let server = FaultServer::start([
        Fault::sse_then(
            sse::chat::Stream::new()
                .text("then silence")
                .done()
                .without_last(1),
            End::Stall,
        ),
        Fault::Silent,
    ]);
    let client = builder()
        .read_timeout(Duration::from_millis(300))
        .build()
        .expect("client");
    let response = send(&client, &server.v1(), "{}").await;
    let (body, err) = read_all(response).await;
    assert!(String::from_utf8(body).expect("utf-8").contains("silence"));
    let err = err.expect("stalled");
    assert!(
        err.is_timeout() || format!("{err:?}").contains("TimedOut"),
        "{err:?}"
    );
    let err = client
        .post(server.v1())
        .body("{}")
        .send()
        .await
        .expect_err("no response head");
    assert!(err.is_timeout(), "{err}");
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn echo_flood_and_refused() {
    let server = FaultServer::start(
        Script::new()
            .route(|r| r.contains("echo"), [Fault::EchoHeaders])
            .fallback([Fault::Flood {
                head: String::new(),
                frame: "data: {\"x\":1}\n\n".into(),
                count: 50,
                tail: "data: [DONE]\n\n".into(),
            }]),
    );
    let client = client();
    let echoed = client
        .post(server.v1())
        .header("authorization", "Bearer sk-echo-me")
        .body("echo")
        .send()
        .await
        .expect("head");
    assert_eq!(echoed.status(), 400);
    assert!(echoed
        .text()
        .await
        .expect("body")
        .contains("Bearer sk-echo-me"));

    let flood = send(&client, &server.v1(), "{}").await;
    let (body, err) = read_all(flood).await;
    assert!(err.is_none());
    assert_eq!(
        String::from_utf8(body)
            .expect("utf-8")
            .matches("data: ")
            .count(),
        51
    );
    assert_eq!(server.frames_written(), 50);

    let err = client
        .post(test_support::refused_url())
        .body("{}")
        .send()
        .await
        .expect_err("nothing listens");
    assert!(err.is_connect(), "{err}");
}

#[tokio::test]
async fn a_responder_sees_earlier_requests() {
    let server = FaultServer::start(Script::respond(|request, earlier| {
        let attempt = earlier.iter().filter(|e| e.body == request.body).count();
        match attempt {
            0 => Fault::status(503),
            _ => Fault::sse(sse::chat::text("fine")),
        }
    }));
    let client = client();
    let first = send(&client, &server.v1(), "same").await;
    let second = send(&client, &server.v1(), "same").await;
    let other = send(&client, &server.v1(), "other").await;
    assert_eq!(
        [first.status(), second.status(), other.status()].map(|s| s.as_u16()),
        [503, 200, 503]
    );
}

#[tokio::test]
async fn a_flood_of_a_vendor_stream_keeps_its_opening_and_its_end() {
    let stream = sse::chat::Stream::new().delta("y").finish("stop").done();
    // Frames: the role chunk, the delta (flooded), the finish chunk, `[DONE]`.
    let server = FaultServer::start([Fault::flood(&stream, 1, 40)]);
    let response = send(&client(), &server.v1(), "{}").await;
    let (body, err) = read_all(response).await;
    assert!(err.is_none(), "{err:?}");
    let body = String::from_utf8(body).expect("utf-8");
    assert!(body.starts_with(&stream.frames[0]), "{body}");
    assert!(body.ends_with(&stream.frames[2..].concat()), "{body}");
    assert_eq!(body.matches(&stream.frames[1]).count(), 40);
    assert_eq!(body.matches("data: ").count(), 43);
    assert_eq!(server.frames_written(), 40);

    let server = FaultServer::start([Fault::chat_flood(16, 5)]);
    let (body, err) = read_all(send(&client(), &server.v1(), "{}").await).await;
    assert!(err.is_none(), "{err:?}");
    let body = String::from_utf8(body).expect("utf-8");
    assert_eq!(body.matches(r#""content":"yyyyyyyyyyyyyyyy""#).count(), 5);
    assert!(body.ends_with("data: [DONE]\n\n"), "{body}");
}

#[test]
fn a_flood_stalls_on_a_client_that_stops_reading_and_runs_out_on_one_that_reads() {
    use std::io::{Read, Write};
    // 8 KiB frames, far more than the socket buffers between the two ends hold.
    let frame = format!("data: {}\n\n", "y".repeat(8192));
    let flood = |count| Fault::Flood {
        head: String::new(),
        frame: frame.clone(),
        count,
        tail: "data: [DONE]\n\n".into(),
    };
    let request = b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}";

    let server = FaultServer::start([flood(100_000)]);
    let mut idle = std::net::TcpStream::connect(server.addr()).expect("connect");
    idle.write_all(request).expect("request");
    let stalled = server.wait_for_flood_stall(Duration::from_millis(500), 100_000, WAIT);
    assert!(stalled > 0, "the flood started");
    assert!(stalled < 100_000, "the flood stopped with the reader");
    assert_eq!(server.frames_written(), stalled);
    drop(idle);

    let server = FaultServer::start([flood(30)]);
    let mut reader = std::net::TcpStream::connect(server.addr()).expect("connect");
    reader.write_all(request).expect("request");
    let mut body = Vec::new();
    reader.read_to_end(&mut body).expect("read");
    assert_eq!(server.wait_for_flood_stall(WAIT, 30, WAIT), 30);
    assert!(String::from_utf8_lossy(&body).ends_with("data: [DONE]\n\n\r\n0\r\n\r\n"));
}
