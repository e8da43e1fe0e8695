//! Helpers to run a provider against the `test-support` servers and check its event stream.

use std::time::Duration;

use agent_core::{
    message::ToolCall,
    provider::{ProviderError, ProviderEvent, ProviderRequest, ProviderStop, ToolSpec},
    ContentBlock, Message, Provider, ReasoningLevel, Usage,
};
use agent_providers::{ClientConfig, HttpConfig};
use futures::StreamExt;
use serde_json::{json, Value};
#[allow(unused_imports)]
pub use test_support::{
    refused_url, sse as vendor, End, Fault, FaultServer, MockModel, Reply, Script, Sse,
};

/// Upper bound for any single wait in these tests.
pub const WAIT: Duration = Duration::from_secs(20);

/// A 200 event stream of the raw SSE `body`, one chunk per frame.
pub fn sse(body: &str) -> Reply {
    Reply::sse(Sse::raw(body))
}

/// HTTP settings for tests: tiny backoff, short idle timeout.
pub fn fast_http() -> HttpConfig {
    HttpConfig::default()
        .backoff(Duration::from_millis(1), Duration::from_millis(5))
        .idle_timeout(Duration::from_secs(5))
        .connect_timeout(Duration::from_secs(5))
}

/// A client config for `base` with fast retries.
pub fn client(base: &str, model: &str) -> ClientConfig {
    ClientConfig::new(base, model).http(fast_http())
}

/// A request with one user message.
pub fn request(model: &str) -> ProviderRequest {
    ProviderRequest {
        model: model.into(),
        system: Some("You are terse.".into()),
        messages: vec![Message::user_text("Hi")],
        tools: vec![],
        reasoning: ReasoningLevel::default(),
        max_output_tokens: None,
        output_schema: None,
        session_id: None,
    }
}

/// The weather tool spec used throughout.
pub fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Current weather of a city.".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    }
}

pub type Item = Result<ProviderEvent, ProviderError>;

/// Runs one provider call to its end (bounded by [`WAIT`]).
pub async fn run(provider: &dyn Provider, request: ProviderRequest) -> Vec<Item> {
    tokio::time::timeout(WAIT, provider.stream(request).collect::<Vec<_>>())
        .await
        .expect("the provider stream ended in time")
}

/// The events of a stream that must have succeeded; checks the stream is well-formed:
/// attempts first, one response start, calls started before their deltas and ended once,
/// at most one usage, and exactly one stop, last.
pub fn ok_events(items: Vec<Item>) -> Vec<ProviderEvent> {
    let events: Vec<ProviderEvent> = items
        .into_iter()
        .map(|i| i.unwrap_or_else(|e| panic!("unexpected error: {e:?}")))
        .collect();
    let mut started = 0;
    let mut open: Vec<String> = Vec::new();
    let mut ended: Vec<String> = Vec::new();
    let mut usage = 0;
    for (i, event) in events.iter().enumerate() {
        match event {
            ProviderEvent::RequestStarted { .. } | ProviderEvent::RetryScheduled { .. } => {
                assert_eq!(started, 0, "attempt events come before the response")
            }
            ProviderEvent::ResponseStarted => started += 1,
            ProviderEvent::ToolCallStart { id, .. } => {
                assert!(
                    !open.contains(id) && !ended.contains(id),
                    "call {id} started twice"
                );
                open.push(id.clone());
            }
            ProviderEvent::ToolCallDelta { id, .. } => {
                assert!(open.contains(id), "delta for a call that is not open: {id}")
            }
            ProviderEvent::ToolCallEnd { id } => {
                assert!(open.contains(id), "end of a call that is not open: {id}");
                open.retain(|o| o != id);
                ended.push(id.clone());
            }
            ProviderEvent::Usage(_) => usage += 1,
            ProviderEvent::Stop(_) => assert_eq!(i, events.len() - 1, "stop is last"),
            _ => {}
        }
    }
    assert_eq!(started, 1, "one response start: {events:?}");
    assert!(open.is_empty(), "calls never ended: {open:?}");
    assert!(usage <= 1, "at most one usage event");
    assert!(
        matches!(events.last(), Some(ProviderEvent::Stop(_))),
        "ends with a stop: {events:?}"
    );
    events
}

/// The error a stream ended with, checking that nothing follows it.
pub fn err_of(items: &[Item]) -> ProviderError {
    let errors: Vec<&ProviderError> = items.iter().filter_map(|i| i.as_ref().err()).collect();
    assert_eq!(errors.len(), 1, "exactly one error: {items:?}");
    assert!(
        items.last().is_some_and(Result::is_err),
        "the error is last"
    );
    errors[0].clone()
}

/// Concatenated text deltas.
pub fn text(events: &[ProviderEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// Concatenated reasoning deltas.
pub fn reasoning(events: &[ProviderEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::ReasoningDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// Tool calls as `(id, name, argument text)`, in start order.
pub fn calls(events: &[ProviderEvent]) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = Vec::new();
    for event in events {
        match event {
            ProviderEvent::ToolCallStart { id, name } => {
                out.push((id.clone(), name.clone(), String::new()))
            }
            ProviderEvent::ToolCallDelta { id, delta } => {
                if let Some(call) = out.iter_mut().find(|c| &c.0 == id) {
                    call.2.push_str(delta);
                }
            }
            _ => {}
        }
    }
    out
}

/// The calls `call_a` and `call_b` of `get_weather` with the arguments `paris` and `oslo`,
/// as [`calls`] lists them.
pub fn weather_calls(paris: &str, oslo: &str) -> Vec<(String, String, String)> {
    vec![
        ("call_a".into(), "get_weather".into(), paris.into()),
        ("call_b".into(), "get_weather".into(), oslo.into()),
    ]
}

/// A `get_weather` call `id` for `city`, as a message holds it.
pub fn weather_call(id: &str, city: &str) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall {
        id: id.into(),
        name: "get_weather".into(),
        args: json!({ "city": city }),
    })
}

/// The usage event, if any.
pub fn usage(events: &[ProviderEvent]) -> Option<Usage> {
    events.iter().find_map(|e| match e {
        ProviderEvent::Usage(u) => Some(*u),
        _ => None,
    })
}

/// The stop reason.
pub fn stop(events: &[ProviderEvent]) -> ProviderStop {
    match events.last() {
        Some(ProviderEvent::Stop(stop)) => *stop,
        other => panic!("no stop: {other:?}"),
    }
}

/// Builds an SSE body from `(event name, JSON data)` frames; `None` names send data only.
pub fn frames(frames: &[(Option<&str>, Value)]) -> String {
    let mut out = String::new();
    for (name, data) in frames {
        if let Some(name) = name {
            out.push_str(&format!("event: {name}\n"));
        }
        out.push_str(&format!("data: {data}\n\n"));
    }
    out
}

/// A usage value for assertions.
pub fn usage_of(
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    reasoning: Option<u64>,
) -> Usage {
    Usage {
        input,
        output,
        reasoning,
        cache_read,
        cache_write,
        cost_usd: None,
    }
}
