//! Amazon Bedrock against a server that answers as AWS documents it and checks each SigV4
//! signature with its own implementation of AWS's algorithm (written here from the SigV4
//! documentation, on ring's SHA-256 and HMAC; not the aws-sigv4 crate the provider signs
//! with).

use agent_core::{
    message::{Role, ToolCall},
    provider::{OutputSchema, ProviderErrorKind, ProviderEvent, ProviderStop},
    ContentBlock, Message, ReasoningLevel,
};
use agent_providers::bedrock::{credentials::AwsCredentials, BedrockProvider};
use agent_providers::{build_provider_with, ProviderConfig, ProviderId};
use ring::{digest, hmac};
use serde_json::json;
use test_support::{bedrock, Request};

use crate::common::*;

const KEY_ID: &str = "AKIDEXAMPLE";
const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
const REGION: &str = "us-east-1";
const MODEL: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hmac(key: &[u8], data: &str) -> Vec<u8> {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data.as_bytes())
        .as_ref()
        .to_vec()
}

/// A path segment URI-encoded as SigV4 encodes it (every byte but `A-Za-z0-9-._~`).
fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// What is wrong with the SigV4 signature of `request`, checked as AWS documents it
/// ("Create a signed AWS API request"): the canonical request (method, the path with each
/// segment encoded again, no query, the signed headers, the payload's SHA-256), the
/// string to sign, the signing key derived from the secret, date, region and service.
fn check_signature(request: &Request, secret: &str) -> Result<(), String> {
    let auth = request.header("authorization").ok_or("no authorization")?;
    let rest = auth
        .strip_prefix("AWS4-HMAC-SHA256 ")
        .ok_or("not AWS4-HMAC-SHA256")?;
    let field = |name: &str| {
        rest.split(", ")
            .find_map(|p| p.strip_prefix(name))
            .ok_or(format!("no {name}"))
    };
    let credential = field("Credential=")?;
    let signed_headers = field("SignedHeaders=")?;
    let signature = field("Signature=")?;
    let scope: Vec<&str> = credential.split('/').collect();
    let [key_id, date, region, service, "aws4_request"] = scope[..] else {
        return Err(format!("credential scope {credential}"));
    };
    if key_id != KEY_ID || region != REGION || service != "bedrock" {
        return Err(format!("credential scope {credential}"));
    }
    let amz_date = request.header("x-amz-date").ok_or("no x-amz-date")?;
    if !amz_date.starts_with(date) {
        return Err("x-amz-date is not the scope's date".into());
    }
    let path = request.path.split('?').next().unwrap_or("");
    let canonical_uri: Vec<String> = path.split('/').map(encode).collect();
    let mut canonical_headers = String::new();
    for name in signed_headers.split(';') {
        let value = request
            .header(name)
            .ok_or(format!("signed {name} not sent"))?;
        let value = value.split_whitespace().collect::<Vec<_>>().join(" ");
        canonical_headers.push_str(&format!("{name}:{value}\n"));
    }
    let canonical = format!(
        "POST\n{}\n\n{canonical_headers}\n{signed_headers}\n{}",
        canonical_uri.join("/"),
        hex(digest::digest(&digest::SHA256, &request.body).as_ref())
    );
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{date}/{region}/{service}/aws4_request\n{}",
        hex(digest::digest(&digest::SHA256, canonical.as_bytes()).as_ref())
    );
    let key = hmac(format!("AWS4{secret}").as_bytes(), date);
    let key = hmac(&key, region);
    let key = hmac(&key, service);
    let key = hmac(&key, "aws4_request");
    match hex(&hmac(&key, &to_sign)) == signature {
        true => Ok(()),
        false => Err("signature mismatch".into()),
    }
}

/// A Bedrock server: requests whose signature does not verify get
/// `InvalidSignatureException`, an expired session token `ExpiredTokenException`; the
/// others get `replies` in order.
fn server(replies: Vec<Reply>) -> MockModel {
    let replies = std::sync::Mutex::new(replies.into_iter());
    MockModel::start(test_support::Script::respond(move |request, _| {
        if request.header("x-amz-security-token") == Some("expired-session-token") {
            return bedrock::expired_token();
        }
        if check_signature(request, SECRET).is_err() {
            return bedrock::invalid_signature();
        }
        replies
            .lock()
            .expect("replies")
            .next()
            .unwrap_or_else(|| bedrock::error(500, "InternalServerException", "no scripted reply"))
    }))
}

fn provider(server: &MockModel, secret: &str, token: &str) -> BedrockProvider {
    BedrockProvider::new(
        client(&server.url(), MODEL),
        REGION,
        AwsCredentials::new(KEY_ID, secret, Some(token.into())),
    )
}

#[tokio::test]
async fn a_signed_call_streams_reasoning_text_and_cached_usage() {
    let stream = bedrock::Stream::new()
        .reasoning("Greet them.", "sig-bedrock-1")
        .text("Hello from Bedrock.")
        .stop("end_turn", (20, 9, 100, 7));
    let server = server(vec![stream.reply()]);
    let provider = provider(&server, SECRET, "session-token-0123");
    let mut request = request("");
    request.reasoning = ReasoningLevel::Low;
    let events = ok_events(run(&provider, request).await);
    assert_eq!(reasoning(&events), "Greet them.");
    assert_eq!(text(&events), "Hello from Bedrock.");
    assert!(events.contains(&ProviderEvent::ReasoningEnd {
        signature: Some("sig-bedrock-1".into()),
        opaque: None
    }));
    assert_eq!(usage(&events), Some(usage_of(20, 9, 100, 7, None)));
    assert_eq!(stop(&events), ProviderStop::EndTurn);

    let sent = &server.requests()[0];
    assert_eq!(
        sent.path,
        "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    );
    check_signature(sent, SECRET).expect("the server's own check");
    assert_eq!(
        sent.header("x-amz-security-token"),
        Some("session-token-0123")
    );
    assert_eq!(
        sent.json(),
        json!({
            "messages": [{"role": "user", "content": [{"text": "Hi"}]}],
            "system": [{"text": "You are terse."}],
            "inferenceConfig": {"maxTokens": 64000},
            "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 4096}}
        })
    );
}

#[tokio::test]
async fn tool_use_then_the_signed_reasoning_and_results_go_back() {
    let first = bedrock::Stream::new()
        .reasoning("Need the weather.", "sig-r")
        .tool_use("tooluse_1", "get_weather", r#"{"city":"Paris"}"#)
        .stop("tool_use", (30, 12, 0, 0));
    let server = server(vec![first.reply(), bedrock::text("Sunny.")]);
    let provider = provider(&server, SECRET, "session-token-0123");
    let mut request = request("");
    request.tools = vec![weather_tool()];
    let events = ok_events(run(&provider, request.clone()).await);
    assert_eq!(stop(&events), ProviderStop::ToolUse);
    assert_eq!(
        calls(&events),
        vec![(
            "tooluse_1".into(),
            "get_weather".into(),
            r#"{"city":"Paris"}"#.into()
        )]
    );
    let body = server.requests()[0].json();
    assert_eq!(
        body["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"],
        weather_tool().parameters
    );

    request.messages.push(Message::new(
        Role::Assistant,
        vec![
            ContentBlock::Reasoning {
                text: "Need the weather.".into(),
                signature: Some("sig-r".into()),
                opaque: None,
            },
            ContentBlock::ToolCall(ToolCall {
                id: "tooluse_1".into(),
                name: "get_weather".into(),
                args: json!({"city": "Paris"}),
            }),
        ],
    ));
    request.messages.push(Message::new(
        Role::Tool,
        vec![ContentBlock::ToolResult {
            call_id: "tooluse_1".into(),
            is_error: false,
            content: vec![ContentBlock::text("21 C")],
        }],
    ));
    assert_eq!(text(&ok_events(run(&provider, request).await)), "Sunny.");
    let body = server.requests()[1].json();
    assert_eq!(
        body["messages"][1],
        json!({"role": "assistant", "content": [
            {"reasoningContent": {"reasoningText": {"text": "Need the weather.", "signature": "sig-r"}}},
            {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Paris"}}}
        ]})
    );
    assert_eq!(
        body["messages"][2],
        json!({"role": "user", "content": [
            {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "21 C"}], "status": "success"}}
        ]})
    );
}

#[tokio::test]
async fn a_rejected_signature_and_expired_credentials_are_auth_errors_with_awss_words() {
    let server = server(vec![]);
    let err = err_of(
        &run(
            &provider(&server, "not-the-secret", "t-0123456789"),
            request(""),
        )
        .await,
    );
    assert_eq!(err.kind, ProviderErrorKind::Auth);
    assert_eq!(err.status, Some(403));
    assert!(
        err.message.contains("InvalidSignatureException"),
        "{}",
        err.message
    );
    assert!(
        err.message
            .contains("signature we calculated does not match"),
        "{}",
        err.message
    );
    assert!(!err.retryable);

    let err = err_of(
        &run(
            &provider(&server, SECRET, "expired-session-token"),
            request(""),
        )
        .await,
    );
    assert_eq!(err.kind, ProviderErrorKind::Auth);
    assert!(
        err.message.contains("ExpiredTokenException"),
        "{}",
        err.message
    );
    assert!(err
        .message
        .contains("security token included in the request is expired"));
    assert!(!err.message.contains(SECRET));
    assert_eq!(server.request_count(), 2, "neither is retried");
}

#[tokio::test]
async fn throttling_is_retried_and_an_exception_in_the_stream_is_an_error() {
    let broken = bedrock::Stream::new().text("Part").push(bedrock::exception(
        "throttlingException",
        "Too many tokens, please wait before trying again.",
    ));
    let server = server(vec![
        bedrock::error(
            429,
            "ThrottlingException",
            "Too many requests, please wait before trying again.",
        ),
        bedrock::text("fine"),
        broken.reply(),
    ]);
    let provider = provider(&server, SECRET, "t-0123456789");
    assert_eq!(text(&ok_events(run(&provider, request("")).await)), "fine");
    assert_eq!(server.request_count(), 2);
    let err = err_of(&run(&provider, request("")).await);
    assert_eq!(err.kind, ProviderErrorKind::RateLimited);
    assert!(
        err.message.contains("throttlingException"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn a_frame_with_a_wrong_crc_and_a_cut_stream_are_errors_not_panics() {
    let stream = bedrock::Stream::new()
        .text("Hello there")
        .stop("end_turn", (1, 1, 0, 0));
    let mut frames = stream.frames().to_vec();
    // Flip a payload byte of the second frame: its message CRC no longer matches.
    let len = frames[1].len();
    frames[1][len - 10] ^= 0x20;
    let cut: Vec<Vec<u8>> = stream.frames()[..3].to_vec();
    let mut mid_frame = stream.frames()[..2].to_vec();
    mid_frame.push(stream.frames()[2][..7].to_vec());
    let server = server(vec![
        bedrock::reply(frames),
        bedrock::reply(cut),
        bedrock::reply(mid_frame),
    ]);
    let provider = provider(&server, SECRET, "t-0123456789");
    let err = err_of(&run(&provider, request("")).await);
    assert_eq!(err.kind, ProviderErrorKind::Decode);
    assert!(
        err.message.contains("malformed event-stream frame"),
        "{}",
        err.message
    );
    for _ in 0..2 {
        let err = err_of(&run(&provider, request("")).await);
        assert_eq!(err.kind, ProviderErrorKind::Network);
        assert!(err.message.contains("messageStop"), "{}", err.message);
    }
}

#[tokio::test]
async fn structured_output_is_a_forced_tool_whose_input_is_the_answer() {
    let answer = bedrock::Stream::new()
        .tool_use("tooluse_a", "verdict", r#"{"ok":true}"#)
        .stop("tool_use", (5, 5, 0, 0));
    let server = server(vec![answer.reply()]);
    let mut request = request("");
    request.output_schema = Some(OutputSchema {
        name: "verdict".into(),
        schema: json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
        strict: true,
    });
    let events = ok_events(run(&provider(&server, SECRET, "t-0123456789"), request).await);
    assert_eq!(text(&events), r#"{"ok":true}"#);
    assert!(calls(&events).is_empty());
    assert_eq!(stop(&events), ProviderStop::EndTurn);
    let body = server.requests()[0].json();
    assert_eq!(
        body["toolConfig"]["toolChoice"],
        json!({"tool": {"name": "verdict"}})
    );
    assert!(
        body.get("additionalModelRequestFields").is_none(),
        "no thinking with a forced tool"
    );
}

#[tokio::test]
async fn an_api_key_is_a_bearer_token_without_a_signature() {
    let server = MockModel::start([bedrock::text("ok")]);
    let mut config = ProviderConfig::new(ProviderId::Bedrock);
    config.base_url = Some(server.url());
    config.region = Some("eu-west-1".into());
    config.api_key = Some("ABSKbedrock-api-key-0123".into());
    config.model = Some("amazon.nova-pro-v1:0".into());
    let provider = build_provider_with(&config, &fast_http()).expect("builds");
    assert_eq!(provider.id(), "bedrock");
    let info = provider.model_info("amazon.nova-pro-v1:0").expect("info");
    assert_eq!(info.context_window, 300_000);
    assert!(info.pricing.is_some());
    assert_eq!(
        text(&ok_events(run(provider.as_ref(), request("")).await)),
        "ok"
    );
    let sent = &server.requests()[0];
    assert_eq!(
        sent.header("authorization"),
        Some("Bearer ABSKbedrock-api-key-0123")
    );
    assert_eq!(sent.header("x-amz-date"), None);
    assert_eq!(sent.path, "/model/amazon.nova-pro-v1%3A0/converse-stream");
    // Without a region anywhere, the build says where to put one.
    config.region = None;
    config.base_url = None;
    if std::env::var_os("AWS_REGION").is_none() && std::env::var_os("AWS_DEFAULT_REGION").is_none()
    {
        let mut no_region = config.clone();
        no_region.region = Some("us east".into());
        let err = build_provider_with(&no_region, &fast_http())
            .err()
            .expect("bad region");
        assert!(err.to_string().contains("invalid AWS region"), "{err}");
    }
}
