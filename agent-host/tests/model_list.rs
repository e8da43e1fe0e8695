//! The model list of a connection: an [`AgentFactory`] builds a provider per session, all
//! on one HTTP client, so the listing's connection carries the sessions' requests; a
//! [`ModelList::cached`] keeps the listing on disk for the next processes.

use std::time::Duration;

use agent_core::provider::{ProviderEvent, ProviderRequest, ProviderStop};
use agent_core::{Message, ReasoningLevel};
use agent_host::session::models::CACHE_TTL;
use agent_host::session::{AgentFactory, ModelList};
use agent_providers::{ProviderConfig, ProviderId};
use futures::StreamExt;
use test_support::{MockModel, Reply};

const WAIT: Duration = Duration::from_secs(20);

fn openai(server: &MockModel) -> AgentFactory {
    let mut config = ProviderConfig::new(ProviderId::OpenAi);
    config.base_url = Some(server.v1());
    config.model = Some("mock-model-small".into());
    config.api_key = Some("sk-cache-test-key".to_string().into());
    AgentFactory::new(config)
}

async fn ids(list: &ModelList, factory: &AgentFactory) -> Vec<String> {
    let listed = tokio::time::timeout(WAIT, list.get(factory))
        .await
        .expect("listed in time");
    listed.iter().map(|m| m.id.clone()).collect()
}

fn request() -> ProviderRequest {
    ProviderRequest {
        model: "mock-model-small".into(),
        system: None,
        messages: vec![Message::user_text("Hi")],
        tools: vec![],
        reasoning: ReasoningLevel::default(),
        max_output_tokens: None,
        output_schema: None,
        session_id: None,
    }
}

#[tokio::test]
async fn the_model_listing_and_a_sessions_provider_share_one_connection() {
    let server = MockModel::start(vec![Reply::chat_text("hello")]);
    let factory = openai(&server);
    assert_eq!(ids(&ModelList::new(), &factory).await, MockModel::MODELS);

    let provider = factory.provider().expect("builds");
    let events: Vec<_> = tokio::time::timeout(WAIT, provider.stream(request()).collect::<Vec<_>>())
        .await
        .expect("answered in time");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Ok(ProviderEvent::Stop(ProviderStop::EndTurn)))),
        "{events:?}"
    );
    assert_eq!(server.model_list_requests(), 1);
    assert_eq!(server.connections(), 1, "one connection for both");
}

#[tokio::test]
async fn a_cached_listing_serves_the_next_lists_of_the_same_endpoint_until_it_is_old() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("data").join("models-cache.json");
    let server = MockModel::start(Vec::<Reply>::new());
    server.set_models(["m-one", "m-two"]);
    let factory = openai(&server);

    assert_eq!(
        ids(&ModelList::cached(&path), &factory).await,
        ["m-one", "m-two"]
    );
    assert_eq!(server.model_list_requests(), 1);
    let kept = std::fs::read_to_string(&path).expect("the listing is kept");
    assert!(
        !kept.contains("sk-cache-test-key"),
        "no credentials on disk: {kept}"
    );

    // The next process (a new list on the same file) asks the server nothing.
    server.set_models(["m-three"]);
    assert_eq!(
        ids(&ModelList::cached(&path), &factory).await,
        ["m-one", "m-two"]
    );
    assert_eq!(server.model_list_requests(), 1);

    // Another endpoint is not served from it (and takes the file over).
    let other = MockModel::start(Vec::<Reply>::new());
    other.set_models(["elsewhere"]);
    assert_eq!(
        ids(&ModelList::cached(&path), &openai(&other)).await,
        ["elsewhere"]
    );
    assert_eq!(other.model_list_requests(), 1);

    // A listing older than the TTL is asked again.
    let mut cached: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    let old = cached["listedAtMs"].as_u64().expect("listedAtMs")
        - u64::try_from(CACHE_TTL.as_millis()).expect("ttl")
        - 1;
    cached["listedAtMs"] = old.into();
    std::fs::write(&path, serde_json::to_vec(&cached).expect("json")).expect("write");
    assert_eq!(
        ids(&ModelList::cached(&path), &openai(&other)).await,
        ["elsewhere"]
    );
    assert_eq!(other.model_list_requests(), 2);

    // An unreadable file costs only the listing.
    std::fs::write(&path, b"{not json").expect("write");
    assert_eq!(ids(&ModelList::cached(&path), &factory).await, ["m-three"]);
    assert_eq!(server.model_list_requests(), 2);

    // A provider without a server keeps nothing.
    let scripted = dir.path().join("scripted.json");
    let demo = AgentFactory::new(ProviderConfig::new(ProviderId::Scripted));
    assert!(!ids(&ModelList::cached(&scripted), &demo).await.is_empty());
    assert!(!scripted.exists());
}
