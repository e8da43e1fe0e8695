//! `Provider::list_models`: `GET /models` (OpenAI and compatible servers) and `GET /v1/models`
//! (Anthropic), with the provider's credentials; a failing listing is an error the host
//! falls back from.

use agent_core::provider::ProviderErrorKind;
use agent_core::Provider;
use agent_providers::{AnthropicProvider, OpenAiProvider};

use crate::common::*;

#[tokio::test]
async fn openai_compatible_servers_list_their_models() {
    let server = MockModel::start(Script::new());
    let provider = OpenAiProvider::new(client(&server.v1(), "mock-model-small").api_key("sk-list"));
    let listed = tokio::time::timeout(WAIT, provider.list_models())
        .await
        .expect("in time")
        .expect("listed");
    let ids: Vec<&str> = listed.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, MockModel::MODELS);
    assert!(listed.iter().all(|m| m.provider == "openai"));
    assert_eq!(server.model_list_requests(), 1);
    assert_eq!(server.request_count(), 0, "listing is not a model call");
}

#[tokio::test]
async fn anthropic_lists_its_models_with_its_key() {
    let server = MockModel::start(Script::new());
    server.set_models(["claude-sonnet-4-5", "claude-haiku-4-5"]);
    let provider =
        AnthropicProvider::new(client(&server.url(), "claude-sonnet-4-5").api_key("sk-ant-list"));
    let listed = tokio::time::timeout(WAIT, provider.list_models())
        .await
        .expect("in time")
        .expect("listed");
    let ids: Vec<&str> = listed.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["claude-sonnet-4-5", "claude-haiku-4-5"]);
    assert!(listed[0].context_window > 0, "catalogue figures kept");
}

#[tokio::test]
async fn a_server_without_a_model_list_is_an_error() {
    let provider = OpenAiProvider::new(client(&refused_url(), "m"));
    let err = tokio::time::timeout(WAIT, provider.list_models())
        .await
        .expect("in time")
        .expect_err("nothing listens");
    assert_eq!(err.kind, ProviderErrorKind::Network, "{err}");
}
