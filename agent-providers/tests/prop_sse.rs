//! Property tests of the three SSE decoders, fed through a real HTTP server on 127.0.0.1:
//! valid frames, mutated frames (fields dropped, added, retyped), arbitrary bytes (invalid
//! UTF-8, NUL, U+2028), huge and deeply nested data, `\r` line ends, split anywhere into
//! chunks. Every stream ends in time, never panics, and is either well-formed (ending in one
//! stop) or ends with exactly one error.
//!
//! Runs `AGENT_SDK_PROPTEST_CASES` cases per API (default 256).

#[allow(dead_code)]
#[path = "providers/common.rs"]
mod common;

use agent_core::Provider;
use agent_providers::{AnthropicProvider, OpenAiProvider, OpenAiResponsesProvider};
use common::{client, err_of, ok_events, request, run, MockModel, Reply};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use test_support::prop::{cases, runner};
use test_support::Script;

#[derive(Debug, Clone, Copy)]
enum Api {
    Chat,
    Responses,
    Anthropic,
}

/// Valid `(event name, data)` frames of each API, in a plausible order.
fn valid_frames(api: Api) -> Vec<(Option<&'static str>, Value)> {
    match api {
        Api::Chat => vec![
            (
                None,
                json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}}]}),
            ),
            (
                None,
                json!({"choices": [{"index": 0, "delta": {"reasoning_content": "hmm"}}]}),
            ),
            (
                None,
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":"}}]}}]}),
            ),
            (
                None,
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}}]}),
            ),
            (
                None,
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            ),
            (
                None,
                json!({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}),
            ),
        ],
        Api::Responses => vec![
            (
                Some("response.created"),
                json!({"type": "response.created", "response": {"id": "r1", "status": "in_progress"}}),
            ),
            (
                Some("response.output_text.delta"),
                json!({"type": "response.output_text.delta", "item_id": "m1", "output_index": 0, "content_index": 0, "delta": "Hi"}),
            ),
            (
                Some("response.output_item.added"),
                json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "id": "fc1", "call_id": "c1", "name": "f", "arguments": ""}}),
            ),
            (
                Some("response.function_call_arguments.delta"),
                json!({"type": "response.function_call_arguments.delta", "item_id": "fc1", "output_index": 1, "delta": "{\"a\":1}"}),
            ),
            (
                Some("response.output_item.done"),
                json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "function_call", "id": "fc1", "call_id": "c1", "name": "f", "arguments": "{\"a\":1}"}}),
            ),
            (
                Some("response.completed"),
                json!({"type": "response.completed", "response": {"id": "r1", "status": "completed", "usage": {"input_tokens": 5, "output_tokens": 2}}}),
            ),
        ],
        Api::Anthropic => vec![
            (
                Some("message_start"),
                json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 5, "output_tokens": 1}}}),
            ),
            (
                Some("content_block_start"),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            (
                Some("content_block_delta"),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
            ),
            (
                Some("content_block_stop"),
                json!({"type": "content_block_stop", "index": 0}),
            ),
            (
                Some("content_block_start"),
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}}}),
            ),
            (
                Some("content_block_delta"),
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"a\":1}"}}),
            ),
            (
                Some("content_block_stop"),
                json!({"type": "content_block_stop", "index": 1}),
            ),
            (
                Some("message_delta"),
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
            ),
            (Some("message_stop"), json!({"type": "message_stop"})),
        ],
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "\\PC{0,12}".prop_map(Value::String),
        Just(json!("a\u{0}b\u{2028}c")),
        Just(json!("z".repeat(100_000))),
        Just(json!(-1)),
    ];
    leaf.prop_recursive(3, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map("\\PC{0,6}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Drops, adds or retypes one field somewhere in `value` (chosen by `pick`).
fn mutate(value: &mut Value, pick: usize, op: u8, replacement: Value) {
    let Value::Object(map) = value else {
        *value = replacement;
        return;
    };
    let keys: Vec<String> = map.keys().cloned().collect();
    if keys.is_empty() {
        map.insert("x".into(), replacement);
        return;
    }
    let key = &keys[pick % keys.len()];
    match op % 4 {
        0 => {
            map.remove(key);
        }
        1 => {
            map.insert(key.clone(), replacement);
        }
        2 => {
            if let Some(inner) = map.get_mut(key) {
                match inner {
                    Value::Array(items) if !items.is_empty() => {
                        let n = items.len();
                        mutate(&mut items[pick % n], pick / 3, op / 4, replacement)
                    }
                    other => mutate(other, pick / 3, op / 4, replacement),
                }
            }
        }
        _ => {
            map.insert(format!("{key}_extra"), replacement);
        }
    }
}

/// One raw frame (bytes, with its blank-line terminator most of the time).
fn frame(api: Api) -> impl Strategy<Value = Vec<u8>> {
    let valid = valid_frames(api);
    let n = valid.len();
    let encode = |name: Option<&str>, data: &str| {
        let mut out = String::new();
        if let Some(name) = name {
            out.push_str(&format!("event: {name}\n"));
        }
        out.push_str(&format!("data: {data}\n\n"));
        out.into_bytes()
    };
    let valid_a = valid.clone();
    let valid_b = valid.clone();
    prop_oneof![
        4 => (0..n).prop_map(move |i| encode(valid_a[i].0, &valid_a[i].1.to_string())),
        6 => (0..n, any::<usize>(), any::<u8>(), json_value()).prop_map(move |(i, pick, op, v)| {
            let (name, mut data) = valid_b[i].clone();
            mutate(&mut data, pick, op, v);
            encode(name, &data.to_string())
        }),
        1 => prop::collection::vec(any::<u8>(), 0..80),
        1 => json_value().prop_map(move |v| encode(Some("message"), &v.to_string())),
        1 => Just(b"data: [DONE]\n\n".to_vec()),
        1 => Just(b": keep-alive comment\n\n".to_vec()),
        1 => Just(b"event: error\ndata: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\n".to_vec()),
        1 => Just(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"cut".to_vec()),
        1 => (1usize..2000).prop_map(|d| format!("data: {}{}\r\n\r\n", "[".repeat(d), "]".repeat(d)).into_bytes()),
        1 => Just(vec![0xff, 0xfe, b'\n', 0x00, b'\n', b'\n']),
    ]
}

/// A body of frames split into chunks at arbitrary points.
fn body(api: Api) -> impl Strategy<Value = Vec<Vec<u8>>> {
    (
        prop::collection::vec(frame(api), 0..10),
        prop::collection::vec(1usize..64, 1..8),
    )
        .prop_map(|(frames, cuts)| {
            let bytes: Vec<u8> = frames.concat();
            let mut chunks = Vec::new();
            let mut at = 0;
            let mut i = 0;
            while at < bytes.len() {
                let size = if i < cuts.len() {
                    cuts[i]
                } else {
                    bytes.len() - at
                };
                let end = (at + size).min(bytes.len());
                chunks.push(bytes[at..end].to_vec());
                at = end;
                i += 1;
            }
            chunks
        })
}

fn provider(api: Api, server: &MockModel) -> Box<dyn Provider> {
    match api {
        Api::Chat => Box::new(OpenAiProvider::new(client(&server.v1(), "m"))),
        Api::Responses => Box::new(OpenAiResponsesProvider::new(client(&server.v1(), "m"))),
        Api::Anthropic => Box::new(AnthropicProvider::new(client(&server.url(), "m"))),
    }
}

fn check(api: Api) {
    check_with(api, None);
}

/// `check` with requests carrying `schema` (structured output).
fn check_with(api: Api, schema: Option<agent_core::provider::OutputSchema>) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut runner = runner(cases());
    // One server for every case; each case sets the body it plays.
    let current: Arc<Mutex<Vec<bytes::Bytes>>> = Arc::default();
    let playing = current.clone();
    let server = MockModel::start(Script::respond(move |_, _| Reply {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        chunks: playing.lock().expect("lock").clone(),
    }));
    let provider = provider(api, &server);
    let result = runner.run(&body(api), |chunks| {
        *current.lock().expect("lock") = chunks.iter().cloned().map(bytes::Bytes::from).collect();
        let mut req = request("m");
        req.output_schema = schema.clone();
        let items = rt.block_on(run(provider.as_ref(), req));
        match items.iter().any(Result::is_err) {
            true => {
                let err = err_of(&items);
                prop_assert!(!err.message.is_empty(), "an error without words");
            }
            false => {
                ok_events(items);
            }
        }
        Ok(())
    });
    if let Err(err) = result {
        panic!("{api:?}: {err}");
    }
}

#[test]
fn chat_completions_decoder_survives_arbitrary_streams() {
    check(Api::Chat);
}

#[test]
fn responses_decoder_survives_arbitrary_streams() {
    check(Api::Responses);
}

#[test]
fn anthropic_decoder_survives_arbitrary_streams() {
    check(Api::Anthropic);
}

/// The frames' tool `f` is the structured-output answer tool here: its input becomes text.
#[test]
fn anthropic_answer_tool_decoding_survives_arbitrary_streams() {
    check_with(
        Api::Anthropic,
        Some(agent_core::provider::OutputSchema {
            name: "f".into(),
            schema: json!({"type": "object"}),
            strict: false,
        }),
    );
}
