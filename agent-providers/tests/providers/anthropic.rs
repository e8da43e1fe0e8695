//! Anthropic Messages against recorded-shape streams.

use agent_core::{
    message::{Role, ToolCall},
    provider::{ProviderErrorKind, ProviderEvent, ProviderStop},
    ContentBlock, Message, ReasoningLevel,
};
use agent_providers::AnthropicProvider;
use bytes::Bytes;
use serde_json::json;

use crate::common::*;

fn ev(name: &'static str, data: serde_json::Value) -> (Option<&'static str>, serde_json::Value) {
    (Some(name), data)
}

fn thinking_body() -> String {
    frames(&[
        ev(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5",
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 50, "output_tokens": 1}}}),
        ),
        ev("ping", json!({"type": "ping"})),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "The user "}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "says hi."}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCkgIARABGAIiQL"}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "more=="}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        ev(
            "brand_new_event",
            json!({"type": "brand_new_event", "stuff": 1}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": "", "citations": null}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hello"}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "citations_delta", "citation": {}}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "!", "new_field": true}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        ),
        ev(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 30}}),
        ),
        ev("message_stop", json!({"type": "message_stop"})),
    ])
}

#[tokio::test]
async fn thinking_text_signature_and_merged_cache_usage() {
    let server = MockModel::start(vec![sse(&thinking_body())]);
    let provider =
        AnthropicProvider::new(client(&server.url(), "claude-sonnet-4-5").api_key("sk-ant-test"));
    let events = ok_events(run(&provider, request("claude-sonnet-4-5")).await);
    assert_eq!(
        events[2..],
        [
            ProviderEvent::ReasoningDelta("The user ".into()),
            ProviderEvent::ReasoningDelta("says hi.".into()),
            ProviderEvent::ReasoningEnd {
                signature: Some("EqQBCkgIARABGAIiQLmore==".into()),
                opaque: None
            },
            ProviderEvent::TextDelta("Hello".into()),
            ProviderEvent::TextDelta("!".into()),
            ProviderEvent::Usage(usage_of(10, 30, 100, 50, None)),
            ProviderEvent::Stop(ProviderStop::EndTurn),
        ]
    );
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(
        sent.json(),
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 64000,
            "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi", "cache_control": {"type": "ephemeral"}}]}],
            "stream": true,
            "thinking": {"type": "enabled", "budget_tokens": 10000}
        })
    );
}

#[tokio::test]
async fn two_tool_uses_with_streamed_json_input() {
    let body = frames(&[
        ev(
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 0}}}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Checking both."}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {}}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"city\": "}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "\"Paris\"}"}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_b", "name": "get_weather", "input": {}}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"city\": \"Oslo\"}"}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 2}),
        ),
        ev(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 40}}),
        ),
        ev("message_stop", json!({"type": "message_stop"})),
    ]);
    let server = MockModel::start(vec![sse(&body).fragmented(29)]);
    let provider = AnthropicProvider::new(client(&server.v1(), "claude-haiku-4-5"));
    let mut req = request("claude-haiku-4-5");
    req.tools = vec![weather_tool()];
    req.reasoning = ReasoningLevel::Off;
    let events = ok_events(run(&provider, req).await);
    assert_eq!(text(&events), "Checking both.");
    assert_eq!(
        calls(&events),
        vec![
            (
                "toolu_a".into(),
                "get_weather".into(),
                r#"{"city": "Paris"}"#.into()
            ),
            (
                "toolu_b".into(),
                "get_weather".into(),
                r#"{"city": "Oslo"}"#.into()
            ),
        ]
    );
    assert_eq!(stop(&events), ProviderStop::ToolUse);
    let sent = &server.requests()[0];
    assert_eq!(
        sent.path, "/v1/messages",
        "a base URL ending in /v1 is not doubled"
    );
    assert_eq!(sent.header("x-api-key"), None);
    assert_eq!(
        sent.json().get("thinking"),
        None,
        "reasoning off: no thinking"
    );
    assert_eq!(
        sent.json()["tools"],
        json!([{"name": "get_weather", "description": "Current weather of a city.",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}])
    );
}

#[tokio::test]
async fn a_second_request_carries_thinking_tool_use_and_tool_results() {
    let body = frames(&[
        ev(
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 5}}}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "Done."}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        ev(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
        ),
        ev("message_stop", json!({"type": "message_stop"})),
    ]);
    let server = MockModel::start(vec![sse(&body)]);
    let provider = AnthropicProvider::new(client(&server.url(), "claude-opus-4-1").api_key("k"));
    let mut req = request("claude-opus-4-1");
    req.reasoning = ReasoningLevel::Max;
    req.tools = vec![weather_tool()];
    req.messages = vec![
        Message::user_text("Weather in Paris and Oslo?"),
        Message::new(
            Role::Assistant,
            vec![
                ContentBlock::Reasoning {
                    text: "Two cities.".into(),
                    signature: Some("sig-1".into()),
                    opaque: None,
                },
                ContentBlock::Reasoning {
                    text: String::new(),
                    signature: None,
                    opaque: Some(json!({"type": "redacted_thinking", "data": "ENCRYPTED"})),
                },
                ContentBlock::Reasoning {
                    text: "unsigned, from another provider".into(),
                    signature: None,
                    opaque: None,
                },
                ContentBlock::text("Checking."),
                weather_call("toolu_a", "Paris"),
                ContentBlock::ToolCall(ToolCall {
                    id: "toolu_b".into(),
                    name: "get_weather".into(),
                    args: serde_json::Value::Null,
                }),
            ],
        ),
        Message::new(
            Role::Tool,
            vec![
                ContentBlock::ToolResult {
                    call_id: "toolu_a".into(),
                    is_error: false,
                    content: vec![
                        ContentBlock::text("21°C"),
                        ContentBlock::image("image/png", Bytes::from_static(b"\x89PNG")),
                    ],
                },
                ContentBlock::ToolResult {
                    call_id: "toolu_b".into(),
                    is_error: true,
                    content: vec![ContentBlock::text("invalid arguments")],
                },
            ],
        ),
        Message::user_text("Be quick."),
    ];
    let events = ok_events(run(&provider, req).await);
    assert_eq!(text(&events), "Done.");
    let sent = &server.requests()[0].json();
    assert_eq!(sent["max_tokens"], json!(32000));
    assert_eq!(
        sent["thinking"],
        json!({"type": "enabled", "budget_tokens": 30976})
    );
    assert_eq!(
        sent["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Oslo?"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Two cities.", "signature": "sig-1"},
                {"type": "redacted_thinking", "data": "ENCRYPTED"},
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_b", "name": "get_weather", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": [
                    {"type": "text", "text": "21°C"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}}
                ]},
                {"type": "tool_result", "tool_use_id": "toolu_b", "content": [{"type": "text", "text": "invalid arguments"}], "is_error": true},
                {"type": "text", "text": "Be quick.", "cache_control": {"type": "ephemeral"}}
            ]}
        ])
    );
}

#[tokio::test]
async fn images_in_user_messages_are_base64_blocks() {
    let body = frames(&[
        ev(
            "message_start",
            json!({"type": "message_start", "message": {}}),
        ),
        ev(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}}),
        ),
        ev("message_stop", json!({"type": "message_stop"})),
    ]);
    let server = MockModel::start(vec![sse(&body)]);
    let provider = AnthropicProvider::new(client(&server.url(), "some-new-claude"));
    let mut req = request("some-new-claude");
    req.messages = vec![Message::new(
        Role::User,
        vec![
            ContentBlock::text("What is this?"),
            ContentBlock::image("image/jpeg", Bytes::from_static(b"abc")),
        ],
    )];
    let events = ok_events(run(&provider, req).await);
    assert_eq!(usage(&events), None, "no counts, no usage");
    let sent = &server.requests()[0].json();
    assert_eq!(
        sent["max_tokens"],
        json!(8192),
        "unknown models get a safe limit"
    );
    assert_eq!(sent.get("thinking"), None, "unknown models get no thinking");
    assert_eq!(
        sent["messages"][0]["content"][1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "YWJj"}, "cache_control": {"type": "ephemeral"}})
    );
}

#[tokio::test]
async fn an_error_event_after_content_is_an_error() {
    let body = frames(&[
        ev(
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 5}}}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Part"}}),
        ),
        ev(
            "error",
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
    ]);
    let server = MockModel::start(vec![sse(&body)]);
    let provider = AnthropicProvider::new(client(&server.url(), "claude-haiku-4-5"));
    let items = run(&provider, request("claude-haiku-4-5")).await;
    let err = err_of(&items);
    assert_eq!(err.kind, ProviderErrorKind::Overloaded);
    assert!(err.message.contains("Overloaded"));
    assert!(items.contains(&Ok(ProviderEvent::TextDelta("Part".into()))));
    assert_eq!(server.requests().len(), 1, "no retry after content");
}

#[tokio::test]
async fn http_401_carries_the_api_message() {
    let body = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_1"}"#;
    let server = MockModel::start(vec![Reply::json(401, body)]);
    let provider = AnthropicProvider::new(client(&server.url(), "claude-haiku-4-5").api_key("bad"));
    let err = err_of(&run(&provider, request("claude-haiku-4-5")).await);
    assert_eq!(err.kind, ProviderErrorKind::Auth);
    assert_eq!(err.status, Some(401));
    assert!(err.message.contains("invalid x-api-key"), "{}", err.message);
    assert_eq!(err.raw.as_deref(), Some(body));
}

#[tokio::test]
async fn context_length_errors_are_typed() {
    let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
    let server = MockModel::start(vec![Reply::json(400, body)]);
    let provider = AnthropicProvider::new(client(&server.url(), "claude-haiku-4-5"));
    let err = err_of(&run(&provider, request("claude-haiku-4-5")).await);
    assert_eq!(err.kind, ProviderErrorKind::ContextLength);
    assert!(err.message.contains("prompt is too long"));
}

#[tokio::test]
async fn an_auth_token_is_sent_as_a_bearer_token_beside_any_key() {
    let server = MockModel::start([Reply::sse(vendor::anthropic::text("ok"))]);
    let token_only =
        AnthropicProvider::new(client(&server.url(), "claude-haiku-4-5").auth_token("tok-123"));
    let both = AnthropicProvider::new(
        client(&server.url(), "claude-haiku-4-5")
            .api_key("sk-ant-456")
            .auth_token("tok-123"),
    );
    ok_events(run(&token_only, request("claude-haiku-4-5")).await);
    ok_events(run(&both, request("claude-haiku-4-5")).await);
    let requests = server.requests();
    assert_eq!(requests[0].header("authorization"), Some("Bearer tok-123"));
    assert_eq!(requests[0].header("x-api-key"), None);
    assert_eq!(requests[1].header("authorization"), Some("Bearer tok-123"));
    assert_eq!(requests[1].header("x-api-key"), Some("sk-ant-456"));
    for sent in &requests {
        assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    }
    assert!(
        !format!("{both:?}").contains("tok-123"),
        "the token stays out of Debug output"
    );
}

#[tokio::test]
async fn an_echoed_auth_token_is_scrubbed_from_errors() {
    let server = FaultServer::start([Fault::EchoHeaders]);
    let provider = AnthropicProvider::new(
        client(&server.url(), "claude-haiku-4-5")
            .api_key("sk-ant-echo-key")
            .auth_token("tok-echo-secret"),
    );
    let err = err_of(&run(&provider, request("claude-haiku-4-5")).await);
    let shown = format!("{} {}", err.message, err.raw.clone().unwrap_or_default());
    assert!(shown.contains("[REDACTED]"), "{shown}");
    assert!(!shown.contains("tok-echo-secret"), "{shown}");
    assert!(!shown.contains("sk-ant-echo-key"), "{shown}");
}

#[tokio::test]
async fn reasoning_levels_map_to_thinking_budgets_and_effort() {
    let server = MockModel::start([Reply::sse(vendor::anthropic::text("ok"))]);
    // (level, thinking budget, effort of Claude Opus 4.5)
    let expected = [
        (ReasoningLevel::Off, None, "low"),
        (ReasoningLevel::Minimum, Some(1_024), "low"),
        (ReasoningLevel::Low, Some(4_096), "low"),
        (ReasoningLevel::Medium, Some(10_000), "medium"),
        (ReasoningLevel::High, Some(20_000), "high"),
        (ReasoningLevel::Xhigh, Some(32_000), "high"),
        // At most max_tokens (64 000) minus 1 024 left for the answer.
        (ReasoningLevel::Max, Some(62_976), "high"),
    ];
    for model in ["claude-opus-4-5", "claude-sonnet-4-5-20250929"] {
        let provider = AnthropicProvider::new(client(&server.url(), model).api_key("k"));
        for (level, budget, effort) in expected {
            let mut req = request(model);
            req.reasoning = level;
            ok_events(run(&provider, req).await);
            let sent = server.requests().last().expect("sent").json();
            assert_eq!(sent["max_tokens"], 64_000, "{model} {level}");
            let thinking = budget.map(|b| json!({"type": "enabled", "budget_tokens": b}));
            assert_eq!(sent.get("thinking"), thinking.as_ref(), "{model} {level}");
            let effort = (model == "claude-opus-4-5").then(|| json!({"effort": effort}));
            assert_eq!(
                sent.get("output_config"),
                effort.as_ref(),
                "{model} {level}"
            );
        }
    }
    // No room for the 1 024-token minimum below max_tokens: no thinking.
    let provider = AnthropicProvider::new(client(&server.url(), "claude-sonnet-4-5").api_key("k"));
    let mut req = request("claude-sonnet-4-5");
    req.reasoning = ReasoningLevel::High;
    req.max_output_tokens = Some(2_000);
    ok_events(run(&provider, req).await);
    let sent = server.requests().last().expect("sent").json();
    assert_eq!(sent["max_tokens"], 2_000);
    assert_eq!(sent.get("thinking"), None);
    // Models without extended thinking get neither.
    let provider = AnthropicProvider::new(client(&server.url(), "claude-3-5-haiku").api_key("k"));
    let mut req = request("claude-3-5-haiku");
    req.reasoning = ReasoningLevel::High;
    ok_events(run(&provider, req).await);
    let sent = server.requests().last().expect("sent").json();
    assert_eq!(
        (sent.get("thinking"), sent.get("output_config")),
        (None, None)
    );
}

/// A block index at the top of the range (what the stream property test once found) is a
/// block like any other: no overflow, its text comes through.
#[tokio::test]
async fn the_largest_block_index_does_not_overflow() {
    let body = frames(&[
        ev(
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 5}}}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": u64::MAX, "content_block": {"type": "text", "text": ""}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": u64::MAX, "delta": {"type": "text_delta", "text": "Edge"}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": u64::MAX}),
        ),
        ev(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}}),
        ),
        ev("message_stop", json!({"type": "message_stop"})),
    ]);
    let server = MockModel::start(vec![sse(&body)]);
    let provider = AnthropicProvider::new(client(&server.url(), "claude-haiku-4-5"));
    let items = run(&provider, request("claude-haiku-4-5")).await;
    assert!(
        items.contains(&Ok(ProviderEvent::TextDelta("Edge".into()))),
        "{items:?}"
    );
    assert!(items.iter().all(Result::is_ok), "{items:?}");
}
