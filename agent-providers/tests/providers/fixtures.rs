//! Every stream recorded from llama.cpp's server and a LiteLLM gateway
//! (`../shared/fixtures/sse/`), served over HTTP and decoded by the matching provider.

use std::path::PathBuf;

use agent_core::{
    provider::{ProviderErrorKind, ProviderStop},
    Provider,
};
use agent_providers::{AnthropicProvider, OpenAiProvider};
use serde_json::Value;

use crate::common::*;

fn fixture_files() -> Option<(PathBuf, Vec<PathBuf>)> {
    let Some(root) = test_support::fixtures::dir() else {
        eprintln!("note: ../shared/fixtures/sse is absent; skipping the recorded-stream tests");
        return None;
    };
    let mut files = Vec::new();
    for dir in ["llama-server-smollm2", "litellm-over-llama-server"] {
        let dir = root.join(dir);
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("dir entry").path();
            if path.is_file() {
                files.push(path);
            }
        }
    }
    files.sort();
    Some((root, files))
}

/// Exact usage of some recordings: `(file suffix, input, output, cache_read)`.
const USAGE: &[(&str, u64, u64, u64)] = &[
    // LiteLLM: message_start has zeros, message_delta the real counts.
    (
        "litellm-over-llama-server/smollm2.anthropic.stream.plain.sse",
        1,
        14,
        25,
    ),
    (
        "litellm-over-llama-server/smollm2.anthropic.stream.tool-result-turn.sse",
        66,
        21,
        212,
    ),
    // llama.cpp: input in message_start, output in message_delta.
    (
        "llama-server-smollm2/smollm2.anthropic.stream.plain.sse",
        1,
        14,
        25,
    ),
    (
        "llama-server-smollm2/smollm2.anthropic.stream.tools-any-prefill.sse",
        1,
        67,
        217,
    ),
    (
        "llama-server-smollm2/smollm2.anthropic.nonstream.tools-any.json",
        1,
        120,
        211,
    ),
    // OpenAI: input excludes cached tokens.
    (
        "litellm-over-llama-server/smollm2.openai.stream.plain.sse",
        1,
        14,
        25,
    ),
    (
        "llama-server-smollm2/smollm2.openai.stream.plain.sse",
        26,
        14,
        0,
    ),
    (
        "llama-server-smollm2/smollm2.openai.stream.tools-required-prefill.sse",
        1,
        67,
        217,
    ),
    (
        "litellm-over-llama-server/smollm2.openai.nonstream.tools-required.json",
        1,
        120,
        211,
    ),
];

#[tokio::test]
async fn every_recorded_stream_decodes_to_the_right_events() {
    let Some((root, files)) = fixture_files() else {
        return;
    };
    assert!(
        files.len() >= 30,
        "expected the 30 recordings, found {}",
        files.len()
    );
    let mut checked_usage = 0;
    for path in &files {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let label = path
            .strip_prefix(&root)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| name.clone());
        let raw = std::fs::read_to_string(path).expect("read fixture");
        let is_sse = raw.starts_with("event:") || raw.starts_with("data:");
        let reply = if name.contains(".error.") && !is_sse {
            Reply::json(400, &raw)
        } else if is_sse {
            sse(&raw)
        } else {
            Reply::json(200, &raw)
        };
        let server = MockModel::start(vec![reply]);
        let anthropic = name.contains(".anthropic.");
        let provider: Box<dyn Provider> = if anthropic {
            Box::new(AnthropicProvider::new(client(&server.url(), "smollm2")))
        } else {
            Box::new(OpenAiProvider::new(client(&server.v1(), "smollm2")))
        };
        let mut req = request("smollm2");
        req.tools = vec![weather_tool()];
        let items = run(provider.as_ref(), req).await;

        if name.contains(".error.") && !is_sse {
            let err = err_of(&items);
            let body: Value = serde_json::from_str(&raw).expect("error JSON");
            let api_message = body["error"]["message"].as_str().expect("message");
            assert_eq!(err.kind, ProviderErrorKind::BadRequest, "{label}");
            assert_eq!(err.status, Some(400), "{label}");
            assert!(
                err.message.contains(api_message),
                "{label}: {}",
                err.message
            );
            assert_eq!(server.requests().len(), 1, "{label}: 400 is not retried");
            continue;
        }

        let events = ok_events(items);
        let text = text(&events);
        let calls = calls(&events);
        let stop = stop(&events);
        let case = name.split('.').nth(3).unwrap_or_default();
        let litellm = label.starts_with("litellm");
        match case {
            "plain" => {
                assert_eq!(
                    text, "Hello, I'm here to help with any creative writing project.",
                    "{label}"
                );
                assert_eq!(stop, ProviderStop::EndTurn, "{label}");
            }
            "tool-result-turn" => {
                assert_eq!(
                    text, "<tool_response>\n{\"temp_c\":21, \"sky\":\"sunny\"}",
                    "{label}"
                );
                assert_eq!(stop, ProviderStop::EndTurn, "{label}");
            }
            "tools-any-prefill" | "tools-required-prefill" => {
                assert_eq!(text, "", "{label}");
                assert_eq!(calls.len(), 2, "{label}: two parallel calls");
                assert_ne!(calls[0].0, calls[1].0, "{label}: distinct ids");
                for (id, name, args) in &calls {
                    assert!(
                        raw.contains(&format!("\"{id}\"")),
                        "{label}: id {id} is the server's"
                    );
                    assert_eq!(name, "get_weather", "{label}");
                    let args: Value = serde_json::from_str(args).expect("arguments are JSON");
                    assert_eq!(args, serde_json::json!({"city": "Paris"}), "{label}");
                }
                assert_eq!(stop, ProviderStop::ToolUse, "{label}");
            }
            "tools-auto" | "tools-required" | "tools-any" => {
                assert!(
                    text.starts_with("The weather in Paris is")
                        || text.starts_with("You can use the get_weather"),
                    "{label}: {text:?}"
                );
                assert!(calls.is_empty(), "{label}");
                // LiteLLM reports the upstream max_tokens stop of the Anthropic route as end_turn.
                let expected = match litellm && anthropic {
                    true => ProviderStop::EndTurn,
                    false => ProviderStop::MaxTokens,
                };
                assert_eq!(stop, expected, "{label}");
            }
            "bad-request" => {
                // llama.cpp answered this malformed Anthropic request with a stream.
                assert_eq!(text, "I'm so glad you're having a great day", "{label}");
                assert_eq!(stop, ProviderStop::MaxTokens, "{label}");
            }
            other => panic!("{label}: unknown case {other}"),
        }
        let reported = usage(&events);
        assert_eq!(
            reported.is_some(),
            raw.contains("\"usage\""),
            "{label}: usage presence"
        );
        if let Some((_, input, output, cache_read)) =
            USAGE.iter().find(|(f, ..)| label.ends_with(f))
        {
            let usage = reported.expect("usage");
            assert_eq!(
                (
                    usage.input,
                    usage.output,
                    usage.cache_read,
                    usage.cache_write
                ),
                (*input, *output, *cache_read, 0),
                "{label}"
            );
            checked_usage += 1;
        }
    }
    assert_eq!(
        checked_usage,
        USAGE.len(),
        "every exact-usage row matched a file"
    );
}
