//! [`ModelList`]: the models a connection offers its sessions (a model picker: ACP's
//! `model` config option, ZCode's `settings.model.available`), listed once from the
//! provider ([`Provider::list_models`]: `GET /models`
//! where the API has it), bounded, and kept. When the list cannot be had it is empty and
//! each session offers its own model only.

use std::sync::Arc;
use std::time::Duration;

use agent_core::provider::ModelInfo;
use agent_core::Provider;

use super::factory::{AgentFactory, FactoryError};

/// Bound on listing the provider's models (the provider bounds each request too).
pub const LIST_WAIT: Duration = Duration::from_secs(15);

/// The provider's models, listed on first use and kept.
#[derive(Debug, Default)]
pub struct ModelList(Arc<tokio::sync::OnceCell<Vec<ModelInfo>>>);

impl ModelList {
    /// An empty list, not asked yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The models listed so far: none before the first [`get`](Self::get).
    pub fn listed(&self) -> &[ModelInfo] {
        self.0.get().map(Vec::as_slice).unwrap_or_default()
    }

    /// Starts listing the models on a task of its own, unless they are listed or being
    /// listed: a front end that answers with the list calls this before the rest of its
    /// work, and [`get`](Self::get) then waits for the same listing.
    pub fn prefetch(&self, factory: &AgentFactory) {
        if self.0.initialized() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (cell, provider) = (self.0.clone(), factory.provider());
        runtime.spawn(async move {
            cell.get_or_init(|| list(provider)).await;
        });
    }

    /// The provider's models, listed now (once) through `factory`'s provider; empty, with a
    /// warning, when they cannot be had within [`LIST_WAIT`].
    pub async fn get(&self, factory: &AgentFactory) -> &[ModelInfo] {
        self.0.get_or_init(|| list(factory.provider())).await
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

async fn list(provider: Result<Arc<dyn Provider>, FactoryError>) -> Vec<ModelInfo> {
    let provider = match provider {
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
            tracing::warn!(
                "listing the provider's models took too long; offering each session's own"
            );
            Vec::new()
        }
    }
}
