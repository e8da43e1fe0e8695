//! The Gemini API against a server answering as Google documents it.

use std::time::Duration;

use agent_core::{
    message::{Role, ToolCall},
    provider::{OutputSchema, ProviderErrorKind, ProviderEvent, ProviderStop},
    ContentBlock, Message, ReasoningLevel,
};
use agent_providers::GeminiProvider;
use serde_json::{json, Value};
use test_support::gemini;

use crate::common::*;

fn provider(server: &MockModel, model: &str) -> GeminiProvider {
    GeminiProvider::new(client(&server.url(), model).api_key("AIza-test-key-0123"))
}

#[tokio::test]
async fn text_thoughts_and_cached_usage() {
    let stream = gemini::Stream::new()
        .thought("Thinking about ")
        .thought("greetings.")
        .text("Hello there, friend.")
        .finish("STOP", (120, 7, 30, 100));
    let server = MockModel::start([Reply::sse(stream)]);
    let provider = provider(&server, "gemini-2.5-flash");
    let mut request = request("");
    request.reasoning = ReasoningLevel::High;
    request.max_output_tokens = Some(1000);
    let events = ok_events(run(&provider, request).await);

    assert_eq!(reasoning(&events), "Thinking about greetings.");
    assert_eq!(text(&events), "Hello there, friend.");
    // promptTokenCount includes the cached tokens; thoughts count as output.
    assert_eq!(usage(&events), Some(usage_of(20, 37, 100, 0, Some(30))));
    assert_eq!(stop(&events), ProviderStop::EndTurn);
    assert!(events.contains(&ProviderEvent::ReasoningEnd {
        signature: None,
        opaque: None
    }));

    let sent = &server.requests()[0];
    assert_eq!(
        sent.path,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(sent.header("x-goog-api-key"), Some("AIza-test-key-0123"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.json(),
        json!({
            "contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
            "systemInstruction": {"parts": [{"text": "You are terse."}]},
            "generationConfig": {
                "maxOutputTokens": 1000,
                "thinkingConfig": {"thinkingBudget": 16384, "includeThoughts": true}
            }
        })
    );
}

#[tokio::test]
async fn parallel_calls_and_their_signatures_go_back_on_the_next_turn() {
    let stream = gemini::Stream::new()
        .thought("Two cities.")
        .calls(&[
            ("get_weather", json!({"city": "Paris"}), Some("sig-A")),
            ("get_weather", json!({"city": "Oslo"}), None),
        ])
        .finish("STOP", (50, 20, 0, 0));
    let server = MockModel::start([Reply::sse(stream), gemini::text("Sunny and cold.")]);
    let provider = provider(&server, "gemini-3-pro-preview");
    let mut first = request("");
    first.tools = vec![weather_tool()];
    first.reasoning = ReasoningLevel::Low;
    let events = ok_events(run(&provider, first.clone()).await);
    assert_eq!(stop(&events), ProviderStop::ToolUse);
    let calls = calls(&events);
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].1.as_str(), calls[0].2.as_str()),
        ("get_weather", r#"{"city":"Paris"}"#)
    );
    assert_eq!(calls[1].2, r#"{"city":"Oslo"}"#);
    assert_ne!(calls[0].0, calls[1].0, "each call has its own id");
    let body = server.requests()[0].json();
    assert_eq!(
        body["tools"],
        json!([{"functionDeclarations": [{"name": "get_weather",
            "description": "Current weather of a city.",
            "parametersJsonSchema": weather_tool().parameters}]}])
    );
    assert_eq!(
        body["generationConfig"]["thinkingConfig"],
        json!({"thinkingLevel": "low", "includeThoughts": true})
    );

    // The agent keeps what the stream gave (as agent-core assembles it) and sends it back.
    let mut assistant = Vec::new();
    for event in &events {
        match event {
            ProviderEvent::ReasoningEnd { signature, opaque } => {
                assistant.push(ContentBlock::Reasoning {
                    text: String::new(),
                    signature: signature.clone(),
                    opaque: opaque.clone(),
                })
            }
            ProviderEvent::ToolCallStart { id, name } => {
                let args = calls.iter().find(|c| &c.0 == id).map(|c| c.2.clone());
                assistant.push(ContentBlock::ToolCall(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    args: serde_json::from_str(&args.unwrap_or_default()).unwrap_or(Value::Null),
                }))
            }
            _ => {}
        }
    }
    let results = calls
        .iter()
        .map(|(id, _, _)| ContentBlock::ToolResult {
            call_id: id.clone(),
            is_error: false,
            content: vec![ContentBlock::text("12 C")],
        })
        .collect();
    let mut second = first;
    second
        .messages
        .push(Message::new(Role::Assistant, assistant));
    second.messages.push(Message::new(Role::Tool, results));
    let events = ok_events(run(&provider, second).await);
    assert_eq!(text(&events), "Sunny and cold.");
    let body = server.requests()[1].json();
    assert_eq!(
        body["contents"][1],
        json!({"role": "model", "parts": [
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "sig-A"},
            {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}
        ]})
    );
    assert_eq!(
        body["contents"][2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"output": "12 C"}}},
            {"functionResponse": {"name": "get_weather", "response": {"output": "12 C"}}}
        ]})
    );
}

#[tokio::test]
async fn structured_output_and_images() {
    let server = MockModel::start([gemini::text("{\"city\":\"Paris\"}")]);
    let provider = provider(&server, "gemini-2.0-flash");
    let mut request = request("");
    request.messages = vec![Message::new(
        Role::User,
        vec![
            ContentBlock::text("Where is this?"),
            ContentBlock::image("image/png", vec![0x89u8, 0x50, 0x4e, 0x47]),
        ],
    )];
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}},
                        "required": ["city"], "additionalProperties": false});
    request.output_schema = Some(OutputSchema {
        name: "place".into(),
        schema: schema.clone(),
        strict: true,
    });
    let events = ok_events(run(&provider, request).await);
    assert_eq!(text(&events), "{\"city\":\"Paris\"}");
    let body = server.requests()[0].json();
    assert_eq!(
        body["generationConfig"],
        json!({"responseMimeType": "application/json", "responseJsonSchema": schema})
    );
    assert_eq!(
        body["contents"][0]["parts"][1],
        json!({"inlineData": {"mimeType": "image/png", "data": "iVBORw=="}})
    );
}

#[tokio::test]
async fn a_rate_limit_waits_as_retry_info_says_and_overload_is_retried() {
    let server = MockModel::start([
        gemini::rate_limited("0.02s"),
        gemini::overloaded(),
        gemini::text("ok"),
    ]);
    let provider = provider(&server, "gemini-2.5-pro");
    let items = run(&provider, request("")).await;
    let delays: Vec<Duration> = items
        .iter()
        .filter_map(|i| match i {
            Ok(ProviderEvent::RetryScheduled { delay, .. }) => Some(*delay),
            _ => None,
        })
        .collect();
    assert_eq!(delays.len(), 2);
    assert_eq!(delays[0], Duration::from_millis(20), "RetryInfo's delay");
    assert_eq!(text(&ok_events(items)), "ok");
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn bad_keys_and_unknown_models_fail_at_once_with_googles_message() {
    let server = MockModel::start([gemini::invalid_key()]);
    let items = run(&provider(&server, "gemini-2.5-pro"), request("")).await;
    let err = err_of(&items);
    assert_eq!(err.kind, ProviderErrorKind::Auth);
    assert_eq!(err.status, Some(400));
    assert!(!err.retryable);
    assert!(err.message.contains("API key not valid"), "{}", err.message);
    assert!(!err.message.contains("AIza-test-key-0123"));
    assert_eq!(server.request_count(), 1, "never retried");

    let server = MockModel::start([gemini::error(
        404,
        "NOT_FOUND",
        "models/gemini-9 is not found for API version v1beta",
    )]);
    let err = err_of(&run(&provider(&server, "gemini-9"), request("")).await);
    assert_eq!(err.kind, ProviderErrorKind::NotFound);
    assert!(
        err.message.contains("gemini-9 is not found"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn a_cut_stream_and_an_error_chunk_are_errors() {
    // Cut before the chunk with the finishReason.
    let cut = gemini::Stream::new().text("Partial answer").sse();
    let server = MockModel::start([Reply::sse(cut)]);
    let items = run(&provider(&server, "gemini-2.5-pro"), request("")).await;
    let err = err_of(&items);
    assert_eq!(err.kind, ProviderErrorKind::Network);
    assert!(err.message.contains("finishReason"), "{}", err.message);

    let broken = gemini::Stream::new().text("Partial").sse().push(format!(
        "data: {}\r\n\r\n",
        json!({"error": {"code": 500, "message": "An internal error has occurred.", "status": "INTERNAL"}})
    ));
    let server = MockModel::start([Reply::sse(broken)]);
    let err = err_of(&run(&provider(&server, "gemini-2.5-pro"), request("")).await);
    assert_eq!(err.kind, ProviderErrorKind::Server);
    assert!(err.message.contains("internal error"), "{}", err.message);
}

#[tokio::test]
async fn a_whole_json_answer_and_a_blocked_prompt() {
    let whole = json!([
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "One "}]}}]},
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "piece."}]},
                         "finishReason": "MAX_TOKENS"}],
         "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2}}
    ]);
    let server = MockModel::start([Reply::json(200, whole)]);
    let events = ok_events(run(&provider(&server, "gemini-2.5-pro"), request("")).await);
    assert_eq!(text(&events), "One piece.");
    assert_eq!(stop(&events), ProviderStop::MaxTokens);
    assert_eq!(usage(&events), Some(usage_of(3, 2, 0, 0, None)));

    let blocked = Sse::raw(&format!(
        "data: {}\r\n\r\n",
        json!({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 4}})
    ));
    let server = MockModel::start([Reply::sse(blocked)]);
    let events = ok_events(run(&provider(&server, "gemini-2.5-pro"), request("")).await);
    assert_eq!(stop(&events), ProviderStop::Refusal);
}

#[tokio::test]
async fn structured_output_beside_tools_on_gemini_2_is_an_answer_function() {
    // Gemini 2.x refuses a JSON response type together with function calling.
    let answer = gemini::Stream::new()
        .calls(&[("place", json!({"city": "Paris"}), None)])
        .finish("STOP", (10, 5, 0, 0));
    let server = MockModel::start([Reply::sse(answer)]);
    let mut request = request("");
    request.tools = vec![weather_tool()];
    request.output_schema = Some(OutputSchema {
        name: "place".into(),
        schema: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        strict: true,
    });
    let events = ok_events(run(&provider(&server, "gemini-2.5-flash"), request).await);
    assert_eq!(text(&events), r#"{"city":"Paris"}"#);
    assert!(calls(&events).is_empty());
    assert_eq!(stop(&events), ProviderStop::EndTurn);
    let body = server.requests()[0].json();
    assert_eq!(
        body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY"}})
    );
    assert_eq!(body["tools"][0]["functionDeclarations"][1]["name"], "place");
    assert_eq!(body["generationConfig"].get("responseJsonSchema"), None);
}
