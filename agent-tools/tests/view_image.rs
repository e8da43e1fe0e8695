//! `view_image` and `read_file` on images: the image reaches the model, in each provider
//! API's own form (Chat Completions, Responses, Anthropic), through the real provider
//! clients against the mock model server.

use std::time::Duration;

use agent_core::{Agent, ContentBlock, RunStatus, ToolContext, ToolError, ToolOutput};
use agent_providers::{build_provider, ProviderConfig, ProviderId};
use agent_tools::{ToolSet, MAX_IMAGE_BYTES};
use serde_json::{json, Value};
use test_support::{sse, MockModel, Reply};

const WAIT: Duration = Duration::from_secs(30);

fn workspace() -> (tempfile::TempDir, ToolSet) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("shot.png"), test_support::web::red_png()).expect("write");
    std::fs::write(dir.path().join("notes.txt"), "not an image\n").expect("write");
    let tools = ToolSet::defaults(dir.path());
    (dir, tools)
}

async fn call(tools: &ToolSet, name: &str, args: Value) -> Result<ToolOutput, ToolError> {
    let tool = tools.get(name).expect("tool");
    tokio::time::timeout(WAIT, tool.call(args, ToolContext::new(tools.workspace())))
        .await
        .expect("in time")
}

#[tokio::test]
async fn view_image_and_read_file_return_the_image() {
    let (dir, tools) = workspace();
    let png = test_support::web::red_png();
    for name in ["view_image", "read_file"] {
        let out = call(&tools, name, json!({"path": "shot.png"}))
            .await
            .expect("an image");
        assert_eq!(
            out.content,
            vec![
                ContentBlock::text("Viewing shot.png (image/png)."),
                ContentBlock::image("image/png", png.clone()),
            ],
            "{name}"
        );
    }
    let err = call(&tools, "view_image", json!({"path": "notes.txt"}))
        .await
        .expect_err("not an image");
    assert_eq!(
        err.to_string(),
        "Error viewing notes.txt: notes.txt is not a PNG, JPEG, GIF or WebP image"
    );
    // Over the cap: a PNG signature followed by more than 10 MiB.
    let mut big = png.clone();
    big.resize(usize::try_from(MAX_IMAGE_BYTES).expect("fits") + 1, 0);
    std::fs::write(dir.path().join("big.png"), big).expect("write");
    let err = call(&tools, "view_image", json!({"path": "big.png"}))
        .await
        .expect_err("too big");
    assert!(
        err.to_string().contains("over the 10485760-byte limit"),
        "{err}"
    );
    let err = call(&tools, "view_image", json!({"path": "../outside.png"}))
        .await
        .expect_err("outside");
    assert!(matches!(err, ToolError::Blocked(_)), "{err}");
}

/// Runs one prompt whose first model turn calls `view_image`, against `id`'s API, and
/// returns the second request's body (the one carrying the tool result).
async fn second_request(id: ProviderId, first: Reply, done: Reply) -> Value {
    let (_dir, tools) = workspace();
    let server = MockModel::start([first, done]);
    let mut config = ProviderConfig::new(id);
    config.base_url = Some(server.url());
    config.api_key = Some("test-key".to_string().into());
    config.model = Some("test-model".into());
    let provider = build_provider(&config).expect("provider");
    let agent = Agent::builder(provider)
        .model("test-model")
        .tools(tools.into_tools())
        .build();
    let outcome = tokio::time::timeout(WAIT, agent.run("Look at shot.png"))
        .await
        .expect("in time");
    assert_eq!(outcome.status, RunStatus::Success, "{id:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{id:?}");
    requests[1].json()
}

fn base64_png() -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(test_support::web::red_png())
}

#[tokio::test]
async fn a_png_reaches_chat_completions_as_an_image_part() {
    let body = second_request(
        ProviderId::OpenAi,
        Reply::chat_call("call_1", "view_image", json!({"path": "shot.png"})),
        Reply::sse(sse::chat::text("A red square.")),
    )
    .await;
    let url = format!("data:image/png;base64,{}", base64_png());
    let messages = body["messages"].as_array().expect("messages");
    let image_part = messages
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .find(|part| part["type"] == "image_url")
        .unwrap_or_else(|| panic!("no image part: {body}"));
    assert_eq!(image_part["image_url"]["url"], url);
}

#[tokio::test]
async fn a_png_reaches_responses_as_an_input_image() {
    let body = second_request(
        ProviderId::OpenAiResponses,
        Reply::sse(sse::responses::function_call(
            "view_image",
            r#"{"path":"shot.png"}"#,
        )),
        Reply::sse(sse::responses::text("A red square.")),
    )
    .await;
    let url = format!("data:image/png;base64,{}", base64_png());
    let text = body.to_string();
    assert!(text.contains("\"input_image\""), "{text}");
    assert!(text.contains(&url), "{text}");
}

#[tokio::test]
async fn a_png_reaches_anthropic_as_an_image_block_in_the_tool_result() {
    let body = second_request(
        ProviderId::Anthropic,
        Reply::sse(sse::anthropic::tool_use(
            "view_image",
            r#"{"path":"shot.png"}"#,
        )),
        Reply::sse(sse::anthropic::text("A red square.")),
    )
    .await;
    let messages = body["messages"].as_array().expect("messages");
    let result = messages
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .find(|block| block["type"] == "tool_result")
        .unwrap_or_else(|| panic!("no tool_result: {body}"));
    let image = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|b| b["type"] == "image")
        .unwrap_or_else(|| panic!("no image in the tool result: {result}"));
    assert_eq!(
        image["source"],
        json!({"type": "base64", "media_type": "image/png", "data": base64_png()})
    );
}
