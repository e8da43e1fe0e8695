//! [`ModelList`]: the models a connection offers its sessions (a model picker: ACP's
//! `model` config option, ZCode's `settings.model.available`), listed once from the
//! provider ([`Provider::list_models`](agent_core::Provider::list_models): `GET /models`
//! where the API has it), bounded, and kept. When the list cannot be had it is empty and
//! each session offers its own model only.

use std::time::Duration;

use agent_core::provider::ModelInfo;

use super::factory::AgentFactory;

/// Bound on listing the provider's models (the provider bounds each request too).
pub const LIST_WAIT: Duration = Duration::from_secs(15);

/// The provider's models, listed on first use and kept.
#[derive(Debug, Default)]
pub struct ModelList(tokio::sync::OnceCell<Vec<ModelInfo>>);

impl ModelList {
    /// An empty list, not asked yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The models listed so far: none before the first [`get`](Self::get).
    pub fn listed(&self) -> &[ModelInfo] {
        self.0.get().map(Vec::as_slice).unwrap_or_default()
    }

    /// The provider's models, listed now (once) through `factory`'s provider; empty, with a
    /// warning, when they cannot be had within [`LIST_WAIT`].
    pub async fn get(&self, factory: &AgentFactory) -> &[ModelInfo] {
        self.0
            .get_or_init(|| async {
                let provider = match factory.provider() {
                    Ok(provider) => provider,
                    Err(err) => {
                        tracing::warn!(error = %err, "no provider to list the models of");
                        return Vec::new();
                    }
                };
                match tokio::time::timeout(LIST_WAIT, provider.list_models()).await {
                    Ok(Ok(models)) => models,
                    Ok(Err(err)) => {
                        tracing::warn!(error = %err, "cannot list the provider's models; offering each session's own");
                        Vec::new()
                    }
                    Err(_) => {
                        tracing::warn!("listing the provider's models took too long; offering each session's own");
                        Vec::new()
                    }
                }
            })
            .await
    }

    /// The model ids a session on model `current` is offered, and may switch to: the
    /// models listed so far, with `current` first when they do not name it (`current`
    /// alone when the list could not be had). A model picker offers these and refuses
    /// any other.
    pub fn offered(&self, current: &str) -> Vec<String> {
        let mut ids: Vec<String> = self.listed().iter().map(|m| m.id.clone()).collect();
        if !ids.iter().any(|id| id == current) {
            ids.insert(0, current.to_string());
        }
        ids
    }
}
