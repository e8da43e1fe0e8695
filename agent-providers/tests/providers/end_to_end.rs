//! The agent loop of agent-core over each HTTP API: a two-step tool-using conversation.

use std::sync::Arc;

use agent_core::{
    async_trait, Agent, AgentEvent, Provider, RunStatus, SideEffect, Tool, ToolContext, ToolError,
    ToolOutput,
};
use agent_providers::{AnthropicProvider, OpenAiProvider, OpenAiResponsesProvider};
use serde_json::{json, Value};

use crate::common::*;

struct Weather;

#[async_trait]
impl Tool for Weather {
    fn name(&self) -> &str {
        "get_weather"
    }
    fn description(&self) -> &str {
        "Current weather of a city."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    }
    fn side_effect(&self) -> SideEffect {
        SideEffect::None
    }
    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let city = args["city"].as_str().unwrap_or("nowhere");
        Ok(ToolOutput::text(format!("{city}: 21°C, sunny")))
    }
}

async fn converse(provider: Arc<dyn Provider>, model: &str) -> (Vec<AgentEvent>, Agent) {
    let agent = Agent::builder(provider)
        .model(model)
        .tool(Weather)
        .system_prompt("You are terse.")
        .build();
    let events = tokio::time::timeout(WAIT, agent.prompt("Weather in Paris?").collect_events())
        .await
        .expect("the run finished in time");
    (events, agent)
}

fn check_run(events: &[AgentEvent]) {
    assert!(
        matches!(events.last(), Some(AgentEvent::RunFinished { status: RunStatus::Success, final_text: Some(t) }) if t == "It is 21°C and sunny in Paris."),
        "{:?}",
        events.last()
    );
    let result = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolResult { id, content, .. } => Some((id.clone(), content.clone())),
            _ => None,
        })
        .expect("the tool ran");
    assert_eq!(result.0, "call_1");
    assert_eq!(
        result.1,
        vec![agent_core::ContentBlock::text("Paris: 21°C, sunny")]
    );
    let usages = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::Usage { .. }))
        .count();
    assert_eq!(usages, 2, "one usage per model call");
}

#[tokio::test]
async fn openai_chat_two_step_tool_conversation() {
    let first = frames(&[
        (
            None,
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":"}}]}}]}),
        ),
        (
            None,
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "\"Paris\"}"}}]}}]}),
        ),
        (
            None,
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        ),
        (
            None,
            json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 10, "prompt_tokens_details": {"cached_tokens": 40}}}),
        ),
    ]) + "data: [DONE]\n\n";
    let second = frames(&[
        (
            None,
            json!({"choices": [{"index": 0, "delta": {"content": "It is 21°C and sunny in Paris."}, "finish_reason": "stop"}]}),
        ),
        (
            None,
            json!({"choices": [], "usage": {"prompt_tokens": 130, "completion_tokens": 9}}),
        ),
    ]) + "data: [DONE]\n\n";
    let server = MockModel::start(vec![sse(&first), sse(&second)]);
    let provider = Arc::new(OpenAiProvider::new(client(&server.v1(), "gpt-4.1")));
    let (events, agent) = converse(provider, "gpt-4.1").await;
    check_run(&events);
    // Cost comes from the catalogue price of gpt-4.1 (2 / 8 / 0.5 per million).
    let cost = events.iter().find_map(|e| match e {
        AgentEvent::Usage { turn, .. } => turn.cost_usd,
        _ => None,
    });
    let expected = (60.0 * 2.0 + 10.0 * 8.0 + 40.0 * 0.5) / 1_000_000.0;
    assert!(
        cost.is_some_and(|c| (c - expected).abs() < 1e-12),
        "{cost:?}"
    );
    assert_eq!(agent.messages().len(), 4);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].json()["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "Paris: 21°C, sunny"}
        ])
    );
}

#[tokio::test]
async fn openai_responses_two_step_tool_conversation() {
    let reasoning =
        json!({"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "ENC"});
    let ev = |kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        (None, data)
    };
    let first = frames(&[
        ev(
            "response.output_item.added",
            json!({"output_index": 0, "item": {"id": "rs_1", "type": "reasoning"}}),
        ),
        ev(
            "response.output_item.done",
            json!({"output_index": 0, "item": reasoning.clone()}),
        ),
        ev(
            "response.output_item.added",
            json!({"output_index": 1, "item": {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": ""}}),
        ),
        ev(
            "response.function_call_arguments.delta",
            json!({"item_id": "fc_1", "delta": "{\"city\":\"Paris\"}"}),
        ),
        ev(
            "response.output_item.done",
            json!({"output_index": 1, "item": {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}),
        ),
        ev(
            "response.completed",
            json!({"response": {"status": "completed", "usage": {"input_tokens": 100, "output_tokens": 20}}}),
        ),
    ]);
    let second = frames(&[
        ev(
            "response.output_text.delta",
            json!({"item_id": "msg_1", "delta": "It is 21°C and sunny in Paris."}),
        ),
        ev(
            "response.completed",
            json!({"response": {"status": "completed", "usage": {"input_tokens": 140, "output_tokens": 9}}}),
        ),
    ]);
    let server = MockModel::start(vec![sse(&first), sse(&second)]);
    let provider = Arc::new(OpenAiResponsesProvider::new(client(
        &server.v1(),
        "gpt-5.1",
    )));
    let (events, _) = converse(provider, "gpt-5.1").await;
    check_run(&events);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].json()["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
            reasoning,
            {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "Paris: 21°C, sunny"}
        ])
    );
}

#[tokio::test]
async fn anthropic_two_step_tool_conversation() {
    let ev = |kind: &'static str, mut data: Value| {
        data["type"] = json!(kind);
        (Some(kind), data)
    };
    let first = frames(&[
        ev(
            "message_start",
            json!({"message": {"usage": {"input_tokens": 100, "output_tokens": 1}}}),
        ),
        ev(
            "content_block_start",
            json!({"index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        ),
        ev(
            "content_block_delta",
            json!({"index": 0, "delta": {"type": "thinking_delta", "thinking": "Need the tool."}}),
        ),
        ev(
            "content_block_delta",
            json!({"index": 0, "delta": {"type": "signature_delta", "signature": "SIG"}}),
        ),
        ev("content_block_stop", json!({"index": 0})),
        ev(
            "content_block_start",
            json!({"index": 1, "content_block": {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {}}}),
        ),
        ev(
            "content_block_delta",
            json!({"index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"city\": \"Paris\"}"}}),
        ),
        ev("content_block_stop", json!({"index": 1})),
        ev(
            "message_delta",
            json!({"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 30}}),
        ),
        ev("message_stop", json!({})),
    ]);
    let second = frames(&[
        ev(
            "message_start",
            json!({"message": {"usage": {"input_tokens": 20, "cache_read_input_tokens": 110, "output_tokens": 1}}}),
        ),
        ev(
            "content_block_start",
            json!({"index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        ev(
            "content_block_delta",
            json!({"index": 0, "delta": {"type": "text_delta", "text": "It is 21°C and sunny in Paris."}}),
        ),
        ev("content_block_stop", json!({"index": 0})),
        ev(
            "message_delta",
            json!({"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}}),
        ),
        ev("message_stop", json!({})),
    ]);
    let server = MockModel::start(vec![sse(&first), sse(&second)]);
    let provider = Arc::new(AnthropicProvider::new(
        client(&server.url(), "claude-sonnet-4-5").api_key("k"),
    ));
    let (events, _) = converse(provider, "claude-sonnet-4-5").await;
    check_run(&events);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].json()["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Need the tool.", "signature": "SIG"},
                {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": [{"type": "text", "text": "Paris: 21°C, sunny"}], "cache_control": {"type": "ephemeral"}}
            ]}
        ])
    );
}

/// The cost of each turn of a one-turn run on `model`.
async fn turn_cost(model: &str) -> Option<f64> {
    let server = MockModel::start([Reply::sse(
        vendor::chat::Stream::new()
            .text("Hi.")
            .finish("stop")
            .usage(1_000_000, 1_000_000, 0)
            .done(),
    )]);
    let provider: Arc<dyn Provider> = Arc::new(OpenAiProvider::new(client(&server.v1(), model)));
    let (events, _) = converse(provider, model).await;
    let costs: Vec<Option<f64>> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Usage { turn, .. } => Some(turn.cost_usd),
            _ => None,
        })
        .collect();
    assert_eq!(costs.len(), 1, "{events:?}");
    costs[0]
}

#[tokio::test]
async fn a_known_model_is_priced_and_an_unknown_one_costs_nothing_at_all() {
    // gpt-4.1: $2 per million input tokens, $8 per million output tokens.
    assert_eq!(turn_cost("gpt-4.1").await, Some(10.0));
    // A local model, and a snapshot whose price the catalogue does not list: no guess.
    assert_eq!(turn_cost("qwen3:8b").await, None);
    assert_eq!(turn_cost("gpt-4o-2024-05-13").await, None);
}
