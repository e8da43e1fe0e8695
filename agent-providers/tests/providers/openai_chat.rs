//! OpenAI Chat Completions against recorded-shape streams.

use agent_core::{
    message::Role,
    provider::{ProviderErrorKind, ProviderEvent, ProviderStop},
    ContentBlock, Message,
};
use agent_providers::OpenAiProvider;
use bytes::Bytes;
use serde_json::json;

use crate::common::*;

fn chunk(delta: serde_json::Value, finish: Option<&str>) -> serde_json::Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

#[tokio::test]
async fn plain_text_with_usage_and_no_key() {
    let body = frames(&[
        (
            None,
            chunk(json!({"role": "assistant", "content": null}), None),
        ),
        (None, chunk(json!({"content": "Hello"}), None)),
        (None, chunk(json!({"content": ", world."}), None)),
        (None, chunk(json!({}), Some("stop"))),
        (
            None,
            json!({"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}}),
        ),
    ]) + "data: [DONE]\n\n";
    let server = MockModel::start(vec![sse(&body)]);
    let provider = OpenAiProvider::new(client(&server.v1(), "local-model"));
    let events = ok_events(run(&provider, request("local-model")).await);

    assert_eq!(
        events[..2],
        [
            ProviderEvent::RequestStarted {
                attempt: 1,
                max_attempts: 4
            },
            ProviderEvent::ResponseStarted
        ]
    );
    assert_eq!(text(&events), "Hello, world.");
    assert_eq!(usage(&events), Some(usage_of(12, 3, 0, 0, None)));
    assert_eq!(stop(&events), ProviderStop::EndTurn);

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), None, "no key, no credentials");
    assert_eq!(
        sent.json(),
        json!({
            "model": "local-model",
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Hi"}
            ],
            "stream": true,
            "stream_options": {"include_usage": true}
        })
    );
}

#[tokio::test]
async fn the_key_is_sent_as_a_bearer_token() {
    let body =
        frames(&[(None, chunk(json!({"content": "ok"}), Some("stop")))]) + "data: [DONE]\n\n";
    let server = MockModel::start(vec![sse(&body)]);
    let provider = OpenAiProvider::new(client(&server.v1(), "m").api_key("sk-test-123"));
    ok_events(run(&provider, request("m")).await);
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer sk-test-123")
    );
}

#[tokio::test]
async fn reasoning_content_and_reasoning_are_reasoning_never_text() {
    for field in ["reasoning_content", "reasoning"] {
        let body = frames(&[
            (
                None,
                chunk(json!({"role": "assistant", "content": ""}), None),
            ),
            (None, chunk(json!({field: "Let me "}), None)),
            (None, chunk(json!({field: "think.", "content": null}), None)),
            (None, chunk(json!({"content": "Answer."}), None)),
            (None, chunk(json!({}), Some("stop"))),
        ]) + "data: [DONE]\n\n";
        let server = MockModel::start(vec![sse(&body)]);
        let provider = OpenAiProvider::new(client(&server.v1(), "deepseek-reasoner"));
        let events = ok_events(run(&provider, request("deepseek-reasoner")).await);
        assert_eq!(reasoning(&events), "Let me think.", "field {field}");
        assert_eq!(text(&events), "Answer.", "field {field}");
        let end = events
            .iter()
            .position(|e| matches!(e, ProviderEvent::ReasoningEnd { .. }))
            .expect("reasoning ends");
        let first_text = events
            .iter()
            .position(|e| matches!(e, ProviderEvent::TextDelta(_)))
            .expect("text");
        assert!(end < first_text, "reasoning ends before the answer");
    }
}

fn two_calls_body() -> String {
    frames(&[
        (
            None,
            chunk(json!({"role": "assistant", "content": null}), None),
        ),
        (
            None,
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]}),
                None,
            ),
        ),
        (
            None,
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"ci"}}]}),
                None,
            ),
        ),
        (
            None,
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "ty\": \"Paris\"}"}}]}),
                None,
            ),
        ),
        (
            None,
            chunk(
                json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\""}}]}),
                None,
            ),
        ),
        (
            None,
            chunk(
                json!({"tool_calls": [{"index": 1, "function": {"arguments": ": \"Oslo\"}"}}]}),
                None,
            ),
        ),
        (None, chunk(json!({}), Some("tool_calls"))),
    ]) + "data: [DONE]\n\n"
}

#[tokio::test]
async fn two_parallel_tool_calls_with_fragmented_arguments() {
    // Byte-level fragmentation and CRLF framing on top of fragmented arguments.
    let body = two_calls_body().replace('\n', "\r\n");
    let server = MockModel::start(vec![sse(&body).fragmented(13)]);
    let provider = OpenAiProvider::new(client(&server.v1(), "gpt-4.1"));
    let mut req = request("gpt-4.1");
    req.tools = vec![weather_tool()];
    let events = ok_events(run(&provider, req).await);
    assert_eq!(
        calls(&events),
        weather_calls(r#"{"city": "Paris"}"#, r#"{"city": "Oslo"}"#)
    );
    assert_eq!(stop(&events), ProviderStop::ToolUse);
    let sent = &server.requests()[0].json();
    assert_eq!(
        sent["tools"],
        json!([{"type": "function", "function": {"name": "get_weather", "description": "Current weather of a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])
    );
}

#[tokio::test]
async fn a_second_request_carries_calls_and_results_in_openai_pairing() {
    let body = frames(&[(
        None,
        chunk(
            json!({"content": "Paris 21°C, Oslo unknown."}),
            Some("stop"),
        ),
    )]) + "data: [DONE]\n\n";
    let server = MockModel::start(vec![sse(&body)]);
    let provider = OpenAiProvider::new(client(&server.v1(), "gpt-4.1"));
    let mut req = request("gpt-4.1");
    req.tools = vec![weather_tool()];
    req.messages = vec![
        Message::new(
            Role::User,
            vec![
                ContentBlock::text("Weather in Paris and Oslo? See the map."),
                ContentBlock::image("image/png", Bytes::from_static(b"\x89PNG")),
            ],
        ),
        Message::new(
            Role::Assistant,
            vec![
                ContentBlock::Reasoning {
                    text: "Two cities.".into(),
                    signature: None,
                    opaque: None,
                },
                ContentBlock::text("Checking."),
                weather_call("call_a", "Paris"),
                weather_call("call_b", "Oslo"),
            ],
        ),
        Message::new(
            Role::Tool,
            vec![
                ContentBlock::ToolResult {
                    call_id: "call_a".into(),
                    is_error: false,
                    content: vec![ContentBlock::text(r#"{"temp_c":21}"#)],
                },
                ContentBlock::ToolResult {
                    call_id: "call_b".into(),
                    is_error: true,
                    content: vec![ContentBlock::text("station offline")],
                },
            ],
        ),
    ];
    let events = ok_events(run(&provider, req).await);
    assert_eq!(text(&events), "Paris 21°C, Oslo unknown.");
    assert_eq!(
        server.requests()[0].json()["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": [
                {"type": "text", "text": "Weather in Paris and Oslo? See the map."},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}}
            ]},
            {"role": "assistant", "content": "Checking.", "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
                {"id": "call_b", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_a", "content": "{\"temp_c\":21}"},
            {"role": "tool", "tool_call_id": "call_b", "content": "station offline"}
        ])
    );
}

#[tokio::test]
async fn usage_with_cached_and_reasoning_tokens() {
    let body = frames(&[
        (None, chunk(json!({"content": "Hi"}), Some("stop"))),
        (
            None,
            json!({"choices": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050,
            "prompt_tokens_details": {"cached_tokens": 800, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 20}}}),
        ),
    ]) + "data: [DONE]\n\n";
    let server = MockModel::start(vec![sse(&body)]);
    let provider = OpenAiProvider::new(client(&server.v1(), "gpt-5-mini"));
    let events = ok_events(run(&provider, request("gpt-5-mini")).await);
    assert_eq!(usage(&events), Some(usage_of(200, 50, 800, 0, Some(20))));
    // A known reasoning model gets an effort from the catalogue.
    assert_eq!(
        server.requests()[0].json()["reasoning_effort"],
        json!("medium")
    );
}

#[tokio::test]
async fn unknown_events_fields_and_empty_values_are_ignored() {
    let body = String::from(": keep-alive comment\n\n")
        + "retry: 1000\n\n"
        + "event: something_new\ndata: {\"whatever\": [1, 2, 3]}\n\n"
        + &frames(&[
            (
                None,
                json!({"id": "x", "choices": [{"index": 0, "delta": {"content": "A", "brand_new": {"x": 1}}, "finish_reason": "", "logprobs": null}], "usage": null, "extra": true}),
            ),
            (
                None,
                json!({"id": "x", "choices": [{"index": 0, "delta": {"content": "B", "tool_calls": null}, "finish_reason": null}], "usage": {}}),
            ),
            (
                None,
                json!({"id": "x", "choices": [{"index": 0, "delta": {}, "finish_reason": "brand_new_reason"}]}),
            ),
        ])
        + "data: [DONE]\n\n";
    let server = MockModel::start(vec![sse(&body)]);
    let provider = OpenAiProvider::new(client(&server.v1(), "m"));
    let events = ok_events(run(&provider, request("m")).await);
    assert_eq!(text(&events), "AB");
    assert_eq!(usage(&events), None, "empty usage is absent");
    assert_eq!(stop(&events), ProviderStop::EndTurn);
}

#[tokio::test]
async fn a_malformed_frame_is_a_decode_error_with_the_raw_data() {
    let body = frames(&[(None, chunk(json!({"content": "A"}), None))])
        + "data: {\"choices\": [oops\n\n"
        + &frames(&[(None, chunk(json!({"content": "never"}), Some("stop")))]);
    let server = MockModel::start(vec![sse(&body)]);
    let provider = OpenAiProvider::new(client(&server.v1(), "m"));
    let items = run(&provider, request("m")).await;
    let err = err_of(&items);
    assert_eq!(err.kind, ProviderErrorKind::Decode);
    assert_eq!(err.raw.as_deref(), Some("{\"choices\": [oops"));
    assert!(items.contains(&Ok(ProviderEvent::TextDelta("A".into()))));
    assert!(!items.contains(&Ok(ProviderEvent::TextDelta("never".into()))));
}

#[tokio::test]
async fn an_error_chunk_inside_the_stream_is_an_error() {
    let body = frames(&[
        (None, chunk(json!({"content": "A"}), None)),
        (
            None,
            json!({"error": {"message": "Upstream provider overloaded", "code": "overloaded"}}),
        ),
    ]);
    let server = MockModel::start(vec![sse(&body)]);
    let provider = OpenAiProvider::new(client(&server.v1(), "m"));
    let items = run(&provider, request("m")).await;
    let err = err_of(&items);
    assert_eq!(err.kind, ProviderErrorKind::Overloaded);
    assert!(err.message.contains("Upstream provider overloaded"));
    assert_eq!(server.requests().len(), 1, "no retry after content");
}

#[tokio::test]
async fn http_401_carries_the_api_message() {
    let body = r#"{"error":{"message":"Incorrect API key provided: sk-bad. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
    let server = MockModel::start(vec![Reply::json(401, body)]);
    let provider = OpenAiProvider::new(client(&server.v1(), "m").api_key("sk-bad"));
    let items = run(&provider, request("m")).await;
    let err = err_of(&items);
    assert_eq!(err.kind, ProviderErrorKind::Auth);
    assert_eq!(err.status, Some(401));
    assert!(!err.retryable);
    assert!(
        err.message.contains("Incorrect API key provided"),
        "{}",
        err.message
    );
    assert!(
        !err.message.contains("sk-bad"),
        "the key is scrubbed: {}",
        err.message
    );
    assert_eq!(
        items[0],
        Ok(ProviderEvent::RequestStarted {
            attempt: 1,
            max_attempts: 4
        })
    );
    assert_eq!(server.requests().len(), 1, "auth errors are not retried");
}

#[tokio::test]
async fn a_server_that_ignores_stream_true_still_works() {
    let body = json!({"id": "c", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": "", "reasoning_content": "hmm",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5}});
    let server = MockModel::start(vec![Reply::json(200, body)]);
    let provider = OpenAiProvider::new(client(&server.v1(), "m"));
    let events = ok_events(run(&provider, request("m")).await);
    assert_eq!(reasoning(&events), "hmm");
    assert_eq!(
        calls(&events),
        vec![(
            "c1".into(),
            "get_weather".into(),
            r#"{"city":"Paris"}"#.into()
        )]
    );
    assert_eq!(usage(&events), Some(usage_of(10, 5, 0, 0, None)));
    assert_eq!(stop(&events), ProviderStop::ToolUse);
}
