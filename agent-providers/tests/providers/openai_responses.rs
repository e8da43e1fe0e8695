//! OpenAI Responses against recorded-shape streams.

use agent_core::{
    message::Role,
    provider::{ProviderErrorKind, ProviderEvent, ProviderStop},
    ContentBlock, Message,
};
use agent_providers::OpenAiResponsesProvider;
use serde_json::json;

use crate::common::*;

fn ev(
    name: &'static str,
    mut data: serde_json::Value,
) -> (Option<&'static str>, serde_json::Value) {
    data["type"] = json!(name);
    (Some(name), data)
}

fn reasoning_item() -> serde_json::Value {
    json!({"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "Plan: check."}],
           "encrypted_content": "gAAAAB-opaque"})
}

fn full_body() -> String {
    frames(&[
        ev(
            "response.created",
            json!({"sequence_number": 0, "response": {"id": "resp_1", "status": "in_progress", "output": []}}),
        ),
        ev(
            "response.in_progress",
            json!({"response": {"id": "resp_1"}}),
        ),
        ev(
            "response.output_item.added",
            json!({"output_index": 0, "item": {"id": "rs_1", "type": "reasoning", "summary": []}}),
        ),
        ev(
            "response.reasoning_summary_part.added",
            json!({"item_id": "rs_1", "output_index": 0, "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
        ),
        ev(
            "response.reasoning_summary_text.delta",
            json!({"item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "Plan: "}),
        ),
        ev(
            "response.reasoning_summary_text.delta",
            json!({"item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "check."}),
        ),
        ev(
            "response.output_item.done",
            json!({"output_index": 0, "item": reasoning_item()}),
        ),
        ev(
            "response.output_item.added",
            json!({"output_index": 1, "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "status": "in_progress"}}),
        ),
        ev(
            "response.content_part.added",
            json!({"item_id": "msg_1", "output_index": 1, "content_index": 0, "part": {"type": "output_text", "text": ""}}),
        ),
        ev(
            "response.output_text.delta",
            json!({"item_id": "msg_1", "output_index": 1, "content_index": 0, "delta": "Checking", "logprobs": []}),
        ),
        ev(
            "response.output_text.delta",
            json!({"item_id": "msg_1", "output_index": 1, "content_index": 0, "delta": " both."}),
        ),
        ev(
            "response.brand_new_event",
            json!({"anything": {"at": "all"}}),
        ),
        ev(
            "response.output_item.done",
            json!({"output_index": 1, "item": {"id": "msg_1", "type": "message", "content": [{"type": "output_text", "text": "Checking both."}]}}),
        ),
        ev(
            "response.output_item.added",
            json!({"output_index": 2, "item": {"id": "fc_1", "type": "function_call", "call_id": "call_a", "name": "get_weather", "arguments": ""}}),
        ),
        ev(
            "response.function_call_arguments.delta",
            json!({"item_id": "fc_1", "output_index": 2, "delta": "{\"city\":"}),
        ),
        ev(
            "response.function_call_arguments.delta",
            json!({"item_id": "fc_1", "output_index": 2, "delta": "\"Paris\"}"}),
        ),
        ev(
            "response.function_call_arguments.done",
            json!({"item_id": "fc_1", "output_index": 2, "arguments": "{\"city\":\"Paris\"}"}),
        ),
        ev(
            "response.output_item.done",
            json!({"output_index": 2, "item": {"id": "fc_1", "type": "function_call", "call_id": "call_a", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}),
        ),
        ev(
            "response.output_item.added",
            json!({"output_index": 3, "item": {"id": "fc_2", "type": "function_call", "call_id": "call_b", "name": "get_weather", "arguments": ""}}),
        ),
        ev(
            "response.function_call_arguments.delta",
            json!({"item_id": "fc_2", "output_index": 3, "delta": "{\"city\":\"Oslo\"}"}),
        ),
        ev(
            "response.output_item.done",
            json!({"output_index": 3, "item": {"id": "fc_2", "type": "function_call", "call_id": "call_b", "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}),
        ),
        ev(
            "response.completed",
            json!({"response": {"id": "resp_1", "status": "completed",
            "usage": {"input_tokens": 500, "input_tokens_details": {"cached_tokens": 300}, "output_tokens": 80, "output_tokens_details": {"reasoning_tokens": 64}, "total_tokens": 580}}}),
        ),
    ])
}

#[tokio::test]
async fn reasoning_text_function_calls_and_usage() {
    let server = MockModel::start(vec![sse(&full_body())]);
    let provider = OpenAiResponsesProvider::new(client(&server.v1(), "gpt-5.1").api_key("sk-r"));
    let mut req = request("gpt-5.1");
    req.tools = vec![weather_tool()];
    let events = ok_events(run(&provider, req).await);
    assert_eq!(reasoning(&events), "Plan: check.");
    assert!(events.contains(&ProviderEvent::ReasoningEnd {
        signature: None,
        opaque: Some(reasoning_item())
    }));
    assert_eq!(
        text(&events),
        "Checking both.",
        "text is not doubled by output_item.done"
    );
    assert_eq!(
        calls(&events),
        weather_calls(r#"{"city":"Paris"}"#, r#"{"city":"Oslo"}"#)
    );
    assert_eq!(usage(&events), Some(usage_of(200, 80, 300, 0, Some(64))));
    assert_eq!(stop(&events), ProviderStop::ToolUse);

    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/responses");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-r"));
    assert_eq!(
        sent.json(),
        json!({
            "model": "gpt-5.1",
            "instructions": "You are terse.",
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]}],
            "tools": [{"type": "function", "name": "get_weather", "description": "Current weather of a city.",
                       "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, "strict": false}],
            "stream": true,
            "store": false,
            "include": ["reasoning.encrypted_content"],
            "reasoning": {"effort": "medium", "summary": "auto"}
        })
    );
}

/// Found by prop_sse: a done item without its type (here an empty array) still ends the
/// call it closes, once; a done item typed as a call the stream never started ends nothing.
#[tokio::test]
async fn a_started_call_ends_whatever_its_done_item_says() {
    let body = frames(&[
        ev(
            "response.output_item.added",
            json!({"output_index": 1, "item": {"id": "fc1", "type": "function_call", "call_id": "c1", "name": "f", "arguments": ""}}),
        ),
        ev(
            "response.output_item.done",
            json!({"output_index": 1, "item": []}),
        ),
        ev(
            "response.output_item.added",
            json!({"output_index": 2, "item": {"id": "msg_1", "type": "message", "content": []}}),
        ),
        ev(
            "response.output_item.done",
            json!({"output_index": 2, "item": {"id": "msg_1", "type": "function_call", "call_id": "c2", "arguments": "{}"}}),
        ),
        ev(
            "response.completed",
            json!({"response": {"status": "completed"}}),
        ),
    ]);
    let server = MockModel::start(vec![sse(&body)]);
    let provider = OpenAiResponsesProvider::new(client(&server.v1(), "gpt-5.1"));
    let events = ok_events(run(&provider, request("gpt-5.1")).await);
    let ends: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, ProviderEvent::ToolCallEnd { .. }))
        .collect();
    assert_eq!(ends, [&ProviderEvent::ToolCallEnd { id: "c1".into() }]);
    assert_eq!(stop(&events), ProviderStop::ToolUse);
}

#[tokio::test]
async fn a_second_request_carries_reasoning_calls_and_outputs() {
    let body = frames(&[
        ev(
            "response.output_text.delta",
            json!({"item_id": "msg_2", "output_index": 0, "delta": "Paris 21°C."}),
        ),
        ev(
            "response.completed",
            json!({"response": {"status": "completed", "usage": {"input_tokens": 10, "output_tokens": 3}}}),
        ),
    ]);
    let server = MockModel::start(vec![sse(&body)]);
    let provider = OpenAiResponsesProvider::new(client(&server.v1(), "gpt-5.1"));
    let mut req = request("gpt-5.1");
    req.messages = vec![
        Message::user_text("Weather in Paris?"),
        Message::new(
            Role::Assistant,
            vec![
                ContentBlock::Reasoning {
                    text: "Plan: check.".into(),
                    signature: None,
                    opaque: Some(reasoning_item()),
                },
                ContentBlock::Reasoning {
                    text: "no replay data".into(),
                    signature: Some("anthropic-signature".into()),
                    opaque: None,
                },
                ContentBlock::text("Checking."),
                weather_call("call_a", "Paris"),
            ],
        ),
        Message::new(
            Role::Tool,
            vec![ContentBlock::ToolResult {
                call_id: "call_a".into(),
                is_error: false,
                content: vec![ContentBlock::text("21°C")],
            }],
        ),
    ];
    let events = ok_events(run(&provider, req).await);
    assert_eq!(text(&events), "Paris 21°C.");
    assert_eq!(stop(&events), ProviderStop::EndTurn);
    assert_eq!(
        server.requests()[0].json()["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
            reasoning_item(),
            {"type": "message", "role": "assistant", "content": "Checking."},
            {"type": "function_call", "call_id": "call_a", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
            {"type": "function_call_output", "call_id": "call_a", "output": "21°C"}
        ])
    );
}

#[tokio::test]
async fn response_failed_carries_the_api_message() {
    let body = frames(&[
        ev("response.created", json!({"response": {"id": "r"}})),
        ev(
            "response.failed",
            json!({"response": {"id": "r", "status": "failed", "error": {"code": "server_error", "message": "The model crashed."}}}),
        ),
    ]);
    let server = MockModel::start(vec![sse(&body)]);
    let provider = OpenAiResponsesProvider::new(client(&server.v1(), "gpt-5.1"));
    let err = err_of(&run(&provider, request("gpt-5.1")).await);
    assert_eq!(err.kind, ProviderErrorKind::Server);
    assert!(err.message.contains("The model crashed."));
    assert_eq!(
        server.requests().len(),
        1,
        "no retry once the stream started"
    );
}

#[tokio::test]
async fn an_error_event_carries_the_api_message() {
    let body = frames(&[ev(
        "error",
        json!({"code": "rate_limit_exceeded", "message": "Slow down.", "param": null}),
    )]);
    let server = MockModel::start(vec![sse(&body)]);
    let provider = OpenAiResponsesProvider::new(client(&server.v1(), "gpt-5.1"));
    let err = err_of(&run(&provider, request("gpt-5.1")).await);
    assert_eq!(err.kind, ProviderErrorKind::RateLimited);
    assert!(err.message.contains("Slow down."));
}

#[tokio::test]
async fn incomplete_responses_stop_at_max_tokens() {
    let body = frames(&[
        ev(
            "response.output_text.delta",
            json!({"item_id": "m", "delta": "Trunc"}),
        ),
        ev(
            "response.incomplete",
            json!({"response": {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}}),
        ),
    ]);
    let server = MockModel::start(vec![sse(&body)]);
    let provider = OpenAiResponsesProvider::new(client(&server.v1(), "gpt-4.1"));
    let mut req = request("gpt-4.1");
    req.max_output_tokens = Some(5);
    let events = ok_events(run(&provider, req).await);
    assert_eq!(stop(&events), ProviderStop::MaxTokens);
    let sent = &server.requests()[0].json();
    assert_eq!(sent["max_output_tokens"], json!(5));
    assert_eq!(sent.get("reasoning"), None, "not a reasoning model");
}

#[tokio::test]
async fn http_401_carries_the_api_message() {
    let body = r#"{"error":{"message":"Missing bearer authentication in header","type":"invalid_request_error","param":null,"code":null}}"#;
    let server = MockModel::start(vec![Reply::json(401, body)]);
    let provider = OpenAiResponsesProvider::new(client(&server.v1(), "gpt-5.1"));
    let err = err_of(&run(&provider, request("gpt-5.1")).await);
    assert_eq!(err.kind, ProviderErrorKind::Auth);
    assert!(err.message.contains("Missing bearer authentication"));
}

#[tokio::test]
async fn one_openai_client_serves_chat_completions_and_responses() {
    use agent_core::Provider;
    use agent_providers::openai::OpenAiClient;

    let server = MockModel::start(
        Script::new()
            .route(
                |r| r.path.ends_with("/chat/completions"),
                [Reply::sse(vendor::chat::text("from chat"))],
            )
            .route(
                |r| r.path.ends_with("/responses"),
                [Reply::sse(vendor::responses::text("from responses"))],
            ),
    );
    let client = OpenAiClient::new(client(&server.v1(), "gpt-5.1").api_key("sk-shared"));
    let chat = client.chat();
    let responses = client.responses();
    assert_eq!((chat.id(), responses.id()), ("openai", "openai-responses"));
    assert_eq!(chat.config().base_url, responses.config().base_url);
    assert_eq!(
        text(&ok_events(run(&chat, request("gpt-5.1")).await)),
        "from chat"
    );
    assert_eq!(
        text(&ok_events(run(&responses, request("gpt-5.1")).await)),
        "from responses"
    );
    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[1].path, "/v1/responses");
    for sent in &requests {
        assert_eq!(sent.header("authorization"), Some("Bearer sk-shared"));
    }
    // The former path of the Responses provider still works.
    let old =
        agent_providers::openai_responses::OpenAiResponsesProvider::new(client.config().clone());
    assert_eq!(old.id(), "openai-responses");
}
