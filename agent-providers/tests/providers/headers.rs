//! Custom headers on every provider, and OpenAI's `prompt_cache_key`.

use agent_core::provider::ProviderErrorKind;
use agent_providers::{
    build_provider_with, AnthropicProvider, CustomHeader, OpenAiProvider, OpenAiResponsesProvider,
    ProviderConfig, ProviderId,
};
use serde_json::Value;

use crate::common::*;

fn header(line: &str) -> CustomHeader {
    line.parse().expect("a valid header")
}

#[tokio::test]
async fn custom_headers_reach_every_api_and_replace_the_providers_own() {
    let server = MockModel::start(
        Script::new()
            .route(
                |r| r.path.ends_with("/chat/completions"),
                [Reply::chat_text("ok")],
            )
            .route(
                |r| r.path.ends_with("/responses"),
                [Reply::sse(vendor::responses::text("ok"))],
            )
            .fallback([Reply::sse(vendor::anthropic::text("ok"))]),
    );
    let with = |config: agent_providers::ClientConfig| {
        config
            .header(header("X-Tenant: acme"))
            .header(header("X-Gateway-Key: gw-secret-0123456789"))
    };
    let chat = OpenAiProvider::new(with(client(&server.v1(), "m")).api_key("sk-test-1234"));
    let responses = OpenAiResponsesProvider::new(with(client(&server.v1(), "m")));
    // A gateway in front of Anthropic asks for its own API version.
    let anthropic = AnthropicProvider::new(
        with(client(&server.url(), "claude-sonnet-4-5"))
            .api_key("sk-ant-test")
            .header(header("anthropic-version: 2099-01-01")),
    );
    for provider in [&chat as &dyn agent_core::Provider, &responses, &anthropic] {
        let events = ok_events(run(provider, request("")).await);
        assert_eq!(text(&events), "ok");
    }
    let sent = server.requests();
    assert_eq!(sent.len(), 3);
    for request in &sent {
        assert_eq!(request.header("x-tenant"), Some("acme"), "{}", request.path);
        assert_eq!(
            request.header("x-gateway-key"),
            Some("gw-secret-0123456789")
        );
    }
    assert_eq!(sent[0].header("authorization"), Some("Bearer sk-test-1234"));
    assert_eq!(sent[2].header("anthropic-version"), Some("2099-01-01"));
    assert_eq!(sent[2].header("x-api-key"), Some("sk-ant-test"));
}

#[tokio::test]
async fn a_secret_header_is_scrubbed_from_errors_and_registered() {
    let server = MockModel::start([Reply::error(
        401,
        "authentication_error",
        "bad gateway key gw-echoed-secret-0123456789",
    )]);
    let mut config = ProviderConfig::new(ProviderId::OpenAi);
    config.base_url = Some(server.v1());
    config.headers = vec![header("X-Gateway-Key: gw-echoed-secret-0123456789")];
    assert!(!format!("{config:?}").contains("gw-echoed-secret"));
    let provider = build_provider_with(&config, &fast_http()).expect("builds");
    let items = run(provider.as_ref(), request("m")).await;
    let err = err_of(&items);
    assert_eq!(err.kind, ProviderErrorKind::Auth);
    assert!(err.message.contains("[REDACTED]"), "{}", err.message);
    assert!(!err.message.contains("gw-echoed-secret"), "{}", err.message);
    assert!(!err.raw.unwrap_or_default().contains("gw-echoed-secret"));
    assert!(agent_core::secrets::registered_secrets()
        .iter()
        .any(|s| s == "gw-echoed-secret-0123456789"));
}

/// The `prompt_cache_key` of the one request `provider` sent to `server`.
async fn cache_key_sent(provider: &dyn agent_core::Provider, server: &MockModel) -> Value {
    let mut request = request("gpt-5.1");
    request.session_id = Some("ses_0123".into());
    ok_events(run(provider, request).await);
    let sent = server.requests();
    sent.last().expect("a request").json()["prompt_cache_key"].clone()
}

#[tokio::test]
async fn the_session_id_is_the_prompt_cache_key() {
    // Responses: always, unless turned off.
    let server = MockModel::start([Reply::sse(vendor::responses::text("ok"))]);
    let responses = OpenAiResponsesProvider::new(client(&server.v1(), "gpt-5.1"));
    assert_eq!(cache_key_sent(&responses, &server).await, "ses_0123");
    let off = OpenAiResponsesProvider::new(client(&server.v1(), "gpt-5.1").prompt_cache_key(false));
    assert_eq!(cache_key_sent(&off, &server).await, Value::Null);

    // Chat Completions: compatible servers may reject the field, so only when asked (or on
    // OpenAI's own API, which a test cannot reach).
    let server = MockModel::start([Reply::chat_text("ok")]);
    let chat = OpenAiProvider::new(client(&server.v1(), "gpt-5.1"));
    assert_eq!(cache_key_sent(&chat, &server).await, Value::Null);
    let on = OpenAiProvider::new(client(&server.v1(), "gpt-5.1").prompt_cache_key(true));
    assert_eq!(cache_key_sent(&on, &server).await, "ses_0123");

    // No session, no key.
    let server = MockModel::start([Reply::sse(vendor::responses::text("ok"))]);
    let responses = OpenAiResponsesProvider::new(client(&server.v1(), "gpt-5.1"));
    ok_events(run(&responses, request("gpt-5.1")).await);
    assert_eq!(server.requests()[0].json().get("prompt_cache_key"), None);
}
