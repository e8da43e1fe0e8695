//! A tool turn through the provider layer, with the assistant-prefill technique.

use super::*;

/// The prefill that makes the 135M model emit tool calls (with the Qwen2.5 template).
const PREFILL: &str = "<tool_call>\n";

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Get the current weather in a city.".into(),
        parameters: json!({
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city name."}},
            "required": ["city"]
        }),
    }
}

/// The test-only request option: the provider has no `tool_choice`, so the proxy adds the
/// API's "a tool is required" choice to the first request (the one ending in the prefill).
fn require_a_tool(api: Api) -> Rewrite {
    Arc::new(move |_path: &str, body: &mut Value, index: usize| {
        if index == 0 {
            body["tool_choice"] = match api {
                Api::Anthropic => json!({"type": "any"}),
                Api::Chat | Api::Responses => json!("required"),
            };
        }
    })
}

/// Streams one provider call, bounded, and returns its events.
async fn call(provider: &dyn agent_core::Provider, request: ProviderRequest) -> Vec<ProviderEvent> {
    let mut stream = provider.stream(request);
    let mut events = Vec::new();
    loop {
        let next = tokio::time::timeout(WAIT, stream.next())
            .await
            .expect("the provider stream went silent");
        match next {
            None => return events,
            Some(Ok(event)) => events.push(event),
            Some(Err(e)) => panic!("provider error: {e:?} after {events:#?}"),
        }
    }
}

/// The kinds of provider events, runs of deltas collapsed.
fn provider_shape(events: &[ProviderEvent]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for e in events {
        let k = match e {
            ProviderEvent::RequestStarted { .. } => "request_started",
            ProviderEvent::RetryScheduled { .. } => "retry_scheduled",
            ProviderEvent::ResponseStarted => "response_started",
            ProviderEvent::TextDelta(_) => "text",
            ProviderEvent::ReasoningDelta(_) => "reasoning",
            ProviderEvent::ReasoningEnd { .. } => "reasoning_end",
            ProviderEvent::ToolCallStart { .. } => "tool_call_start",
            ProviderEvent::ToolCallDelta { .. } => "tool_call_delta",
            ProviderEvent::ToolCallEnd { .. } => "tool_call_end",
            ProviderEvent::Usage(_) => "usage",
            ProviderEvent::Stop(_) => "stop",
        };
        if matches!(k, "text" | "tool_call_delta" | "reasoning") && out.last() == Some(&k) {
            continue;
        }
        out.push(k);
    }
    out
}

fn provider_usage(events: &[ProviderEvent]) -> agent_core::Usage {
    let usages: Vec<&agent_core::Usage> = events
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::Usage(u) => Some(u),
            _ => None,
        })
        .collect();
    assert_eq!(usages.len(), 1, "exactly one usage: {events:#?}");
    *usages[0]
}

fn assert_usage_matches(events: &[ProviderEvent], x: &Exchange) {
    let usage = provider_usage(events);
    let server = server_usage(x);
    assert_eq!(
        usage.prompt_tokens(),
        server.prompt,
        "{usage:?} vs {server:?}"
    );
    assert_eq!(usage.cache_read, server.cached, "{usage:?} vs {server:?}");
    assert_eq!(usage.output, server.output, "{usage:?} vs {server:?}");
}

/// The calls of a provider stream, checking each one's lifecycle: it starts once, its
/// argument deltas come between its start and its end, and it ends once before the usage.
/// Calls may interleave (Chat Completions ends them all at `finish_reason`).
fn call_lifecycle(events: &[ProviderEvent]) -> Vec<ToolCall> {
    let mut calls: Vec<ToolCall> = Vec::new();
    let mut args: Vec<String> = Vec::new();
    let mut ended: Vec<bool> = Vec::new();
    let find = |calls: &[ToolCall], id: &str| calls.iter().position(|c| c.id == id);
    for e in events {
        match e {
            ProviderEvent::ToolCallStart { id, name } => {
                assert!(find(&calls, id).is_none(), "call {id} started twice");
                calls.push(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    args: Value::Null,
                });
                args.push(String::new());
                ended.push(false);
            }
            ProviderEvent::ToolCallDelta { id, delta } => {
                let i = find(&calls, id).unwrap_or_else(|| panic!("delta before start: {id}"));
                assert!(!ended[i], "delta after the end of {id}");
                args[i].push_str(delta);
            }
            ProviderEvent::ToolCallEnd { id } => {
                let i = find(&calls, id).unwrap_or_else(|| panic!("end before start: {id}"));
                assert!(!ended[i], "call {id} ended twice");
                ended[i] = true;
            }
            ProviderEvent::Usage(_) | ProviderEvent::Stop(_) => {
                assert!(
                    ended.iter().all(|e| *e),
                    "usage/stop before every call ended"
                );
            }
            ProviderEvent::TextDelta(t) => {
                assert!(t.trim().is_empty(), "prose in a tool-call reply: {t:?}");
            }
            _ => {}
        }
    }
    for (call, a) in calls.iter_mut().zip(&args) {
        call.args = serde_json::from_str(a).unwrap_or_else(|e| panic!("arguments {a:?}: {e}"));
    }
    calls
}

/// Runs `get_weather` (the test's tool) on `args`.
fn get_weather(args: &Value) -> String {
    let city = args["city"].as_str().unwrap_or("an unknown city");
    format!("It is 18 degrees and sunny in {city}.")
}

async fn tool_turn(api: Api, test: &str) {
    let Some(root) = server(test) else { return };
    let proxy = Proxy::start(&root, Some(require_a_tool(api))).await;
    let mut config = ProviderConfig::new(api.id());
    config.base_url = Some(api.base_url(&proxy.url));
    config.model = Some(MODEL.into());
    let provider = build_provider(&config).expect("provider");
    let user = Message::user_text("What is the weather in Paris and in London?");
    let request = |messages: Vec<Message>| ProviderRequest {
        model: MODEL.into(),
        system: Some("You are a helpful assistant with tools.".into()),
        messages,
        tools: vec![weather_tool()],
        reasoning: ReasoningLevel::Off,
        max_output_tokens: Some(160),
        output_schema: None,
        session_id: None,
    };

    // 1. The prefilled request: two parallel calls.
    let first = call(
        provider.as_ref(),
        request(vec![user.clone(), Message::assistant_text(PREFILL)]),
    )
    .await;
    let shape = provider_shape(&first);
    assert_eq!(shape[0], "request_started", "{first:#?}");
    assert_eq!(
        &shape[shape.len() - 2..],
        ["usage", "stop"],
        "usage then stop end the stream: {first:#?}"
    );
    assert_eq!(
        first.last(),
        Some(&ProviderEvent::Stop(ProviderStop::ToolUse)),
        "{first:#?}"
    );
    let calls = call_lifecycle(&first);
    assert_eq!(calls.len(), 2, "two parallel calls: {first:#?}");
    assert_ne!(calls[0].id, calls[1].id, "distinct call ids");
    for c in &calls {
        assert_eq!(c.name, "get_weather");
        assert!(c.args["city"].is_string(), "{}", c.args);
    }
    let x1 = proxy.exchanges().first().cloned().expect("first exchange");
    assert_ok(&x1, api.path());
    assert_usage_matches(&first, &x1);
    // The prefill went out as the last message of the request, in the API's shape.
    let sent_last = match api {
        Api::Chat | Api::Anthropic => x1.request["messages"].as_array().and_then(|m| m.last()),
        Api::Responses => x1.request["input"].as_array().and_then(|m| m.last()),
    }
    .cloned()
    .expect("messages");
    assert_eq!(sent_last["role"], "assistant", "{sent_last}");
    assert!(sent_last.to_string().contains("<tool_call>"), "{sent_last}");

    // 2. Execute both calls and send the results back, paired with their calls.
    let results: Vec<ContentBlock> = calls
        .iter()
        .map(|c| ContentBlock::ToolResult {
            call_id: c.id.clone(),
            is_error: false,
            content: vec![ContentBlock::text(get_weather(&c.args))],
        })
        .collect();
    let assistant = Message::new(
        Role::Assistant,
        calls.iter().cloned().map(ContentBlock::ToolCall).collect(),
    );
    let second = call(
        provider.as_ref(),
        request(vec![user, assistant, Message::new(Role::Tool, results)]),
    )
    .await;
    let all = proxy.exchanges();
    assert_eq!(all.len(), 2, "{:#?}", summary(&all));
    let x2 = all[1].clone();
    assert_ok(&x2, api.path());
    assert!(
        x2.forwarded.get("tool_choice").is_none(),
        "only the first request is rewritten"
    );
    let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    assert_pairing(api, &x2.request, &ids);
    let shape = provider_shape(&second);
    assert!(
        !shape.contains(&"tool_call_start"),
        "the answer to the results is prose here: {second:#?}"
    );
    assert_eq!(shape.first(), Some(&"request_started"));
    assert_eq!(&shape[shape.len() - 2..], ["usage", "stop"], "{second:#?}");
    assert!(
        matches!(
            second.last(),
            Some(ProviderEvent::Stop(
                ProviderStop::EndTurn | ProviderStop::MaxTokens
            ))
        ),
        "{second:#?}"
    );
    let text: String = second
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, server_text(&x2), "text deltas are the server's text");
    assert_usage_matches(&second, &x2);
    assert!(
        server_usage(&x2).prompt > server_usage(&x1).prompt,
        "the results made the prompt longer"
    );
}

/// Asserts `body` carries the two calls and their results in the API's own pairing.
fn assert_pairing(api: Api, body: &Value, ids: &[&str]) {
    match api {
        Api::Chat => {
            let messages = body["messages"].as_array().expect("messages");
            let n = messages.len();
            assert!(n >= 4, "{body}");
            let assistant = &messages[n - 3];
            assert_eq!(assistant["role"], "assistant", "{assistant}");
            let call_ids: Vec<&str> = assistant["tool_calls"]
                .as_array()
                .expect("tool_calls")
                .iter()
                .map(|c| {
                    assert_eq!(c["type"], "function");
                    assert_eq!(c["function"]["name"], "get_weather");
                    let args: Value = serde_json::from_str(
                        c["function"]["arguments"]
                            .as_str()
                            .expect("arguments string"),
                    )
                    .expect("arguments JSON");
                    assert!(args["city"].is_string());
                    c["id"].as_str().expect("id")
                })
                .collect();
            assert_eq!(call_ids, ids);
            for (i, id) in ids.iter().enumerate() {
                let tool = &messages[n - 2 + i];
                assert_eq!(tool["role"], "tool", "{tool}");
                assert_eq!(tool["tool_call_id"], *id, "{tool}");
                assert!(tool["content"].to_string().contains("18 degrees"), "{tool}");
            }
        }
        Api::Anthropic => {
            let messages = body["messages"].as_array().expect("messages");
            let n = messages.len();
            assert!(n >= 3, "{body}");
            let assistant = &messages[n - 2];
            assert_eq!(assistant["role"], "assistant", "{assistant}");
            let uses: Vec<&str> = assistant["content"]
                .as_array()
                .expect("content blocks")
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| {
                    assert_eq!(b["name"], "get_weather");
                    assert!(b["input"]["city"].is_string(), "{b}");
                    b["id"].as_str().expect("id")
                })
                .collect();
            assert_eq!(uses, ids);
            let user = &messages[n - 1];
            assert_eq!(user["role"], "user", "{user}");
            let results: Vec<&str> = user["content"]
                .as_array()
                .expect("content blocks")
                .iter()
                .filter(|b| b["type"] == "tool_result")
                .map(|b| {
                    assert!(b["content"].to_string().contains("18 degrees"), "{b}");
                    b["tool_use_id"].as_str().expect("tool_use_id")
                })
                .collect();
            assert_eq!(
                results, ids,
                "one user message answers every call, in order"
            );
        }
        Api::Responses => {
            let input = body["input"].as_array().expect("input items");
            let calls: Vec<&str> = input
                .iter()
                .filter(|i| i["type"] == "function_call")
                .map(|i| {
                    assert_eq!(i["name"], "get_weather");
                    i["call_id"].as_str().expect("call_id")
                })
                .collect();
            assert_eq!(calls, ids);
            let outputs: Vec<&str> = input
                .iter()
                .filter(|i| i["type"] == "function_call_output")
                .map(|i| {
                    assert!(i["output"].to_string().contains("18 degrees"), "{i}");
                    i["call_id"].as_str().expect("call_id")
                })
                .collect();
            assert_eq!(outputs, ids);
            let last_call = input
                .iter()
                .rposition(|i| i["type"] == "function_call")
                .expect("calls");
            let first_output = input
                .iter()
                .position(|i| i["type"] == "function_call_output")
                .expect("outputs");
            assert!(last_call < first_output, "outputs follow their calls");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_tool_turn_openai() {
    tool_turn(Api::Chat, "provider_tool_turn_openai").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_tool_turn_anthropic() {
    tool_turn(Api::Anthropic, "provider_tool_turn_anthropic").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_tool_turn_openai_responses() {
    tool_turn(Api::Responses, "provider_tool_turn_openai_responses").await;
}
