//! Azure OpenAI against a server answering as Azure documents it: the deployments and v1
//! URLs, the `api-key` header, and Azure's error bodies.

use agent_core::provider::{ProviderErrorKind, ProviderStop};
use agent_providers::{build_provider_with, ProviderConfig, ProviderId};
use serde_json::json;

use crate::common::*;

fn config(id: ProviderId, server: &MockModel) -> ProviderConfig {
    let mut config = ProviderConfig::new(id);
    config.base_url = Some(server.url());
    config.model = Some("gpt-4o-prod".into());
    config.api_key = Some("azure-key-0123456789".into());
    config
}

#[tokio::test]
async fn chat_goes_to_the_deployment_with_the_api_key_header() {
    let server = MockModel::start([Reply::chat_call(
        "call_1",
        "get_weather",
        json!({"city": "Oslo"}),
    )]);
    let mut config = config(ProviderId::Azure, &server);
    config.api_version = Some("2024-10-21".into());
    let provider = build_provider_with(&config, &fast_http()).expect("builds");
    assert_eq!(provider.id(), "azure");
    let mut request = request("");
    request.session_id = Some("ses_azure".into());
    request.max_output_tokens = Some(64);
    let events = ok_events(run(provider.as_ref(), request).await);
    assert_eq!(stop(&events), ProviderStop::ToolUse);
    assert_eq!(calls(&events)[0].2, r#"{"city":"Oslo"}"#);

    let sent = &server.requests()[0];
    assert_eq!(
        sent.path,
        "/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21"
    );
    assert_eq!(sent.header("api-key"), Some("azure-key-0123456789"));
    assert_eq!(sent.header("authorization"), None);
    let body = sent.json();
    assert_eq!(body["model"], "gpt-4o-prod");
    // Azure is OpenAI's own API: its parameter names and the prompt-cache key.
    assert_eq!(body["max_completion_tokens"], 64);
    assert_eq!(body["prompt_cache_key"], "ses_azure");
}

#[tokio::test]
async fn responses_use_the_v1_api_and_an_entra_token() {
    let server = MockModel::start([Reply::sse(vendor::responses::text("ok"))]);
    let token = "eyJ0eXAi.entra-token.0123456789";
    let provider = agent_providers::azure::client(
        client(&server.url(), "gpt-4o-prod").auth_token(token),
        "2024-10-21",
    )
    .responses();
    assert_eq!(agent_core::Provider::id(&provider), "azure-responses");
    let events = ok_events(run(&provider, request("")).await);
    assert_eq!(text(&events), "ok");
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/openai/v1/responses");
    assert_eq!(sent.json()["model"], "gpt-4o-prod");
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {token}").as_str())
    );
    assert_eq!(sent.header("api-key"), None);
}

#[tokio::test]
async fn an_unknown_deployment_and_a_rate_limit_keep_azures_words() {
    let server = MockModel::start([
        Reply::json(
            429,
            json!({"error": {"code": "429", "message": "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2025-04-01-preview have exceeded token rate limit of your current OpenAI S0 pricing tier."}}),
        )
        .header("retry-after", "0")
        .header("retry-after-ms", "10"),
        Reply::json(
            404,
            json!({"error": {"code": "DeploymentNotFound", "message": "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}}),
        ),
    ]);
    let provider =
        build_provider_with(&config(ProviderId::Azure, &server), &fast_http()).expect("builds");
    let items = run(provider.as_ref(), request("")).await;
    let err = err_of(&items);
    assert_eq!(err.kind, ProviderErrorKind::NotFound);
    assert!(
        err.message
            .contains("The API deployment for this resource does not exist"),
        "{}",
        err.message
    );
    assert_eq!(server.request_count(), 2, "the 429 was retried once");
    let path = &server.requests()[0].path;
    assert!(path.contains("api-version=2025-04-01-preview"), "{path}");
}

#[test]
fn azure_needs_an_endpoint_a_deployment_and_credentials() {
    let http = fast_http();
    let mut config = ProviderConfig::new(ProviderId::Azure);
    config.base_url = Some("http://127.0.0.1:9".into());
    config.api_key = Some("k-0123456789".into());
    let err = build_provider_with(&config, &http)
        .err()
        .expect("no deployment");
    assert!(err.to_string().contains("--model DEPLOYMENT"), "{err}");
    config.model = Some("d".into());
    config.api_key = None;
    let err = build_provider_with(&config, &http).err().expect("no key");
    assert!(err.to_string().contains("AZURE_OPENAI_API_KEY"), "{err}");
    // A setting of another provider is refused rather than ignored.
    let mut openai = ProviderConfig::new(ProviderId::OpenAi);
    openai.base_url = Some("http://127.0.0.1:9/v1".into());
    openai.api_version = Some("2024-10-21".into());
    let err = build_provider_with(&openai, &http)
        .err()
        .expect("azure only");
    assert!(err.to_string().contains("--api-version"), "{err}");
}
