//! Structured output: each API gets the request's output schema the way it takes one, and
//! the answer comes back as text.

use agent_core::{
    provider::{OutputSchema, ProviderEvent, ProviderStop},
    ReasoningLevel,
};
use agent_providers::{AnthropicProvider, OpenAiProvider, OpenAiResponsesProvider};
use serde_json::{json, Value};

use crate::common::*;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "temp_c": {"type": "number"}},
        "required": ["city", "temp_c"],
        "additionalProperties": false,
    })
}

fn output_schema() -> OutputSchema {
    OutputSchema {
        name: "weather_report".into(),
        schema: schema(),
        strict: true,
    }
}

const ANSWER: &str = r#"{"city":"Paris","temp_c":21}"#;

#[tokio::test]
async fn chat_completions_sends_a_json_schema_response_format() {
    let server = MockModel::start([Reply::sse(vendor::chat::text(ANSWER))]);
    let provider = OpenAiProvider::new(client(&server.v1(), "gpt-4.1").api_key("sk-chat"));
    let mut req = request("gpt-4.1");
    req.output_schema = Some(output_schema());
    let events = ok_events(run(&provider, req).await);
    assert_eq!(text(&events), ANSWER);
    assert_eq!(stop(&events), ProviderStop::EndTurn);
    let sent = server.requests()[0].json();
    assert_eq!(
        sent["response_format"],
        json!({"type": "json_schema",
               "json_schema": {"name": "weather_report", "schema": schema(), "strict": true}})
    );

    // Without a schema the field is absent.
    let server = MockModel::start([Reply::sse(vendor::chat::text("plain"))]);
    let provider = OpenAiProvider::new(client(&server.v1(), "gpt-4.1"));
    ok_events(run(&provider, request("gpt-4.1")).await);
    assert_eq!(server.requests()[0].json().get("response_format"), None);
}

#[tokio::test]
async fn responses_sends_a_json_schema_text_format() {
    let server = MockModel::start([Reply::sse(vendor::responses::text(ANSWER))]);
    let provider = OpenAiResponsesProvider::new(client(&server.v1(), "gpt-5.1").api_key("sk-r"));
    let mut req = request("gpt-5.1");
    req.output_schema = Some(OutputSchema {
        strict: false,
        ..output_schema()
    });
    let events = ok_events(run(&provider, req).await);
    assert_eq!(text(&events), ANSWER);
    let sent = server.requests()[0].json();
    assert_eq!(
        sent["text"],
        json!({"format": {"type": "json_schema", "name": "weather_report",
                          "schema": schema(), "strict": false}})
    );
    assert_eq!(sent.get("response_format"), None);
}

#[tokio::test]
async fn anthropic_forces_the_answer_tool_and_streams_its_input_as_text() {
    let stream = vendor::anthropic::Stream::new(12)
        .tool_use("toolu_answer", "weather_report", ANSWER)
        .stop("tool_use", 9);
    let server = MockModel::start([Reply::sse(stream)]);
    let provider =
        AnthropicProvider::new(client(&server.url(), "claude-sonnet-4-5").api_key("sk-ant"));
    let mut req = request("claude-sonnet-4-5");
    req.reasoning = ReasoningLevel::High;
    req.output_schema = Some(output_schema());
    let events = ok_events(run(&provider, req).await);
    assert_eq!(text(&events), ANSWER, "the tool input is the answer text");
    assert!(calls(&events).is_empty(), "no tool call reaches the agent");
    assert_eq!(stop(&events), ProviderStop::EndTurn);

    let sent = server.requests()[0].json();
    assert_eq!(
        sent["tools"],
        json!([{"name": "weather_report",
                "description": "Give the final answer: call this tool exactly once, with the answer as its input, matching the input schema.",
                "input_schema": schema()}])
    );
    assert_eq!(
        sent["tool_choice"],
        json!({"type": "tool", "name": "weather_report"})
    );
    assert_eq!(
        sent.get("thinking"),
        None,
        "forced tool use excludes extended thinking"
    );
}

#[tokio::test]
async fn anthropic_with_other_tools_lets_the_model_call_them_first() {
    let stream = vendor::anthropic::Stream::new(12)
        .tool_use("toolu_1", "get_weather", r#"{"city":"Paris"}"#)
        .stop("tool_use", 9);
    let server = MockModel::start([Reply::sse(stream)]);
    let provider =
        AnthropicProvider::new(client(&server.url(), "claude-haiku-4-5").api_key("sk-ant"));
    let mut req = request("claude-haiku-4-5");
    req.tools = vec![weather_tool()];
    req.output_schema = Some(output_schema());
    let events = ok_events(run(&provider, req).await);
    assert_eq!(
        calls(&events),
        [(
            "toolu_1".to_string(),
            "get_weather".to_string(),
            r#"{"city":"Paris"}"#.to_string()
        )]
    );
    assert_eq!(text(&events), "");
    assert_eq!(stop(&events), ProviderStop::ToolUse);
    let sent = server.requests()[0].json();
    let names: Vec<&str> = sent["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["get_weather", "weather_report"]);
    assert_eq!(
        sent["tool_choice"],
        json!({"type": "any", "disable_parallel_tool_use": true})
    );
}

#[tokio::test]
async fn anthropic_answers_in_a_whole_message_and_without_streamed_input() {
    // A server that ignores `stream: true` and sends the whole message.
    let whole = json!({"id": "msg_1", "type": "message", "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_9", "name": "weather_report",
                     "input": {"city": "Oslo", "temp_c": 4}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 3, "output_tokens": 7}});
    // A stream whose answer tool input never streams a delta.
    let empty = vendor::anthropic::Stream::new(3)
        .tool_use("toolu_8", "weather_report", "")
        .stop("tool_use", 1);
    let server = MockModel::start([Reply::json(200, whole), Reply::sse(empty)]);
    let provider = AnthropicProvider::new(client(&server.url(), "claude-haiku-4-5").api_key("k"));
    let mut req = request("claude-haiku-4-5");
    req.output_schema = Some(output_schema());

    let events = ok_events(run(&provider, req.clone()).await);
    let answer: Value = serde_json::from_str(&text(&events)).expect("the answer is JSON");
    assert_eq!(answer, json!({"city": "Oslo", "temp_c": 4}));
    assert_eq!(stop(&events), ProviderStop::EndTurn);
    assert!(!events
        .iter()
        .any(|e| matches!(e, ProviderEvent::ToolCallStart { .. })));

    let events = ok_events(run(&provider, req).await);
    assert_eq!(text(&events), "{}");
}

#[tokio::test]
async fn the_scripted_provider_answers_with_its_text_turn() {
    use agent_core::Provider;
    use agent_providers::scripted::{ScriptedProvider, Turn};
    let provider = ScriptedProvider::new([Turn::new().text(ANSWER)]);
    let mut req = request("scripted");
    req.output_schema = Some(output_schema());
    let events = ok_events(run(&provider, req).await);
    assert_eq!(text(&events), ANSWER);
    assert_eq!(
        provider.requests()[0].output_schema,
        Some(output_schema()),
        "the schema is recorded with the request"
    );
    assert_eq!(provider.id(), "scripted");
}

/// The agent's structured run over each API's HTTP stream: a first answer that does not
/// match gets exactly one repair turn, carrying the error and the same schema; a matching
/// second answer ends the run, a second bad one ends it with a clean error.
mod repair_over_http {
    use std::sync::Arc;

    use agent_core::{structured::OutputSpec, Agent, Provider, RunStatus};

    use super::*;

    const BAD: &str = r#"{"city":"Paris"}"#;

    fn spec() -> OutputSpec {
        OutputSpec::new(output_schema(), |answer| {
            let value: Value = serde_json::from_str(answer).map_err(|e| e.to_string())?;
            match value.get("temp_c") {
                Some(t) if t.is_number() => Ok(()),
                _ => Err("missing field `temp_c`".into()),
            }
        })
    }

    /// A reply in `api`'s shape that answers `answer`.
    fn reply(api: &str, answer: &str) -> Reply {
        match api {
            "chat" => Reply::sse(vendor::chat::text(answer)),
            "responses" => Reply::sse(vendor::responses::text(answer)),
            _ => Reply::sse(
                vendor::anthropic::Stream::new(12)
                    .tool_use("toolu_answer", "weather_report", answer)
                    .stop("tool_use", 9),
            ),
        }
    }

    fn provider(api: &str, server: &MockModel) -> Arc<dyn Provider> {
        match api {
            "chat" => Arc::new(OpenAiProvider::new(client(&server.v1(), "gpt-4.1"))),
            "responses" => Arc::new(OpenAiResponsesProvider::new(client(
                &server.v1(),
                "gpt-5.1",
            ))),
            _ => Arc::new(AnthropicProvider::new(
                client(&server.url(), "claude-sonnet-4-5").api_key("sk-ant"),
            )),
        }
    }

    #[tokio::test]
    async fn a_bad_answer_is_repaired_once_on_every_api() {
        for api in ["chat", "responses", "anthropic"] {
            let server = MockModel::start([reply(api, BAD), reply(api, ANSWER)]);
            let agent = Agent::builder(provider(api, &server)).build();
            let outcome = agent
                .prompt_structured("Weather in Paris?", spec())
                .finish()
                .await;
            assert_eq!(outcome.status, RunStatus::Success, "{api}: {outcome:?}");
            assert_eq!(outcome.text.as_deref(), Some(ANSWER), "{api}");
            let requests = server.requests();
            assert_eq!(requests.len(), 2, "{api}: exactly one repair turn");
            let repair = requests[1].text();
            assert!(repair.contains("missing field `temp_c`"), "{api}: {repair}");
            assert!(repair.contains("weather_report"), "{api}: {repair}");
            for (i, request) in requests.iter().enumerate() {
                let sent = request.json().to_string();
                assert!(
                    sent.contains("\"temp_c\""),
                    "{api}: request {i} asks for the schema"
                );
            }
        }
    }

    #[tokio::test]
    async fn a_second_bad_answer_ends_the_run_without_a_third_request_on_every_api() {
        for api in ["chat", "responses", "anthropic"] {
            let server = MockModel::start([reply(api, BAD), reply(api, BAD), reply(api, ANSWER)]);
            let agent = Agent::builder(provider(api, &server)).build();
            let outcome = agent
                .prompt_structured("Weather in Paris?", spec())
                .finish()
                .await;
            // The run ends on the answer it has; the host's final check (`prompt_as`,
            // exec's `--output-schema`) turns it into the typed error.
            assert_eq!(server.requests().len(), 2, "{api}: no third request");
            assert_eq!(outcome.text.as_deref(), Some(BAD), "{api}: {outcome:?}");
            let error = spec()
                .check(BAD)
                .expect_err("the final answer still does not match");
            assert!(error.contains("temp_c"), "{api}: {error}");
            assert!(!agent.state().busy, "{api}");
        }
    }
}

/// The schema `agent_core::tool_fn` derives for a tool with an optional field, an enum and a
/// nested struct (agent-core's recorded fixture, strict rules applied) reaches each API
/// unchanged, where that API takes a tool's parameters.
#[tokio::test]
async fn a_derived_tool_schema_reaches_every_api_unchanged() {
    let schema: Value = serde_json::from_str(include_str!(
        "../../../agent-core/tests/fixtures/weather_tool_schema.json"
    ))
    .expect("the fixture is JSON");
    let spec = agent_core::provider::ToolSpec {
        name: "weather".into(),
        description: "Looks up the weather forecast.".into(),
        parameters: schema.clone(),
    };

    let server = MockModel::start([Reply::sse(vendor::chat::text("ok"))]);
    let provider = OpenAiProvider::new(client(&server.v1(), "gpt-4.1"));
    let mut req = request("gpt-4.1");
    req.tools = vec![spec.clone()];
    ok_events(run(&provider, req).await);
    let sent = server.requests()[0].json();
    assert_eq!(sent["tools"][0]["function"]["parameters"], schema, "chat");

    let server = MockModel::start([Reply::sse(vendor::responses::text("ok"))]);
    let provider = OpenAiResponsesProvider::new(client(&server.v1(), "gpt-5.1"));
    let mut req = request("gpt-5.1");
    req.tools = vec![spec.clone()];
    ok_events(run(&provider, req).await);
    let sent = server.requests()[0].json();
    assert_eq!(sent["tools"][0]["parameters"], schema, "responses");

    let server = MockModel::start([Reply::sse(
        vendor::anthropic::Stream::new(12)
            .text("ok")
            .stop("end_turn", 1),
    )]);
    let provider =
        AnthropicProvider::new(client(&server.url(), "claude-sonnet-4-5").api_key("sk-ant"));
    let mut req = request("claude-sonnet-4-5");
    req.tools = vec![spec];
    ok_events(run(&provider, req).await);
    let sent = server.requests()[0].json();
    assert_eq!(sent["tools"][0]["input_schema"], schema, "anthropic");
}
