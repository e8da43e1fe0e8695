//! An [`AgentFactory`] builds a provider per session, all on one HTTP client: the model
//! listing's connection carries the sessions' requests.

use std::time::Duration;

use agent_core::provider::{ProviderEvent, ProviderRequest, ProviderStop};
use agent_core::{Message, ReasoningLevel};
use agent_host::session::{AgentFactory, ModelList};
use agent_providers::{ProviderConfig, ProviderId};
use futures::StreamExt;
use test_support::{MockModel, Reply};

const WAIT: Duration = Duration::from_secs(20);

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
    let mut config = ProviderConfig::new(ProviderId::OpenAi);
    config.base_url = Some(server.v1());
    config.model = Some("mock-model-small".into());
    let factory = AgentFactory::new(config);
    let models = ModelList::new();
    let listed = tokio::time::timeout(WAIT, models.get(&factory))
        .await
        .expect("listed in time");
    assert_eq!(listed.len(), MockModel::MODELS.len());

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
