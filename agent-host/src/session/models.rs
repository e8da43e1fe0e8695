//! [`ModelList`]: the models a connection offers its sessions (a model picker: ACP's
//! `model` config option, ZCode's `settings.model.available`), listed once from the
//! provider ([`Provider::list_models`]: `GET /models`
//! where the API has it), bounded, and kept. When the list cannot be had it is empty and
//! each session offers its own model only. With a cache file ([`ModelList::cached`]) a
//! listing is kept on disk for [`CACHE_TTL`] and later processes on the same provider and
//! endpoint read it instead of asking the server again (as Codex keeps `models_cache.json`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_core::provider::ModelInfo;
use agent_core::Provider;
use serde::{Deserialize, Serialize};

use super::factory::{AgentFactory, FactoryError};
use super::types::now_ms;

/// Bound on listing the provider's models (the provider bounds each request too).
pub const LIST_WAIT: Duration = Duration::from_secs(15);

/// How long a listing kept in a cache file is used instead of asking the server.
pub const CACHE_TTL: Duration = Duration::from_secs(300);

/// The provider's models, listed on first use and kept.
#[derive(Debug, Default)]
pub struct ModelList {
    listed: Arc<tokio::sync::OnceCell<Vec<ModelInfo>>>,
    /// Where a listing is kept between processes, if anywhere.
    cache: Option<Arc<Path>>,
}

/// A listing kept on disk: what was listed, from where, and when.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CachedList {
    provider: String,
    endpoint: String,
    /// Unix time of the listing, in milliseconds.
    listed_at_ms: i64,
    models: Vec<ModelInfo>,
}

impl ModelList {
    /// An empty list, not asked yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty list that keeps each listing in the file `path` (created with its
    /// directory), and starts from the file when it holds a listing of the same provider
    /// and endpoint ([`Provider::endpoint`]) younger than [`CACHE_TTL`]. A file that
    /// cannot be read or written only costs the server's listing.
    pub fn cached(path: impl Into<PathBuf>) -> Self {
        Self {
            listed: Arc::default(),
            cache: Some(Arc::from(path.into())),
        }
    }

    /// The models listed so far: none before the first [`get`](Self::get).
    pub fn listed(&self) -> &[ModelInfo] {
        self.listed.get().map(Vec::as_slice).unwrap_or_default()
    }

    /// Starts listing the models on a task of its own, unless they are listed or being
    /// listed: a front end that answers with the list calls this before the rest of its
    /// work, and [`get`](Self::get) then waits for the same listing.
    pub fn prefetch(&self, factory: &AgentFactory) {
        if self.listed.initialized() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (cell, cache, provider) = (self.listed.clone(), self.cache.clone(), factory.provider());
        runtime.spawn(async move {
            cell.get_or_init(|| list(provider, cache)).await;
        });
    }

    /// The provider's models, listed now (once) through `factory`'s provider; empty, with a
    /// warning, when they cannot be had within [`LIST_WAIT`].
    pub async fn get(&self, factory: &AgentFactory) -> &[ModelInfo] {
        self.listed
            .get_or_init(|| list(factory.provider(), self.cache.clone()))
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

async fn list(
    provider: Result<Arc<dyn Provider>, FactoryError>,
    cache: Option<Arc<Path>>,
) -> Vec<ModelInfo> {
    let provider = match provider {
        Ok(provider) => provider,
        Err(err) => {
            tracing::warn!(error = %err, "no provider to list the models of");
            return Vec::new();
        }
    };
    // Only a provider that talks to a server has a listing worth keeping.
    let cache = cache.zip(provider.endpoint());
    if let Some((path, endpoint)) = &cache {
        if let Some(models) = read_cache(path, provider.id(), endpoint) {
            return models;
        }
    }
    match tokio::time::timeout(LIST_WAIT, provider.list_models()).await {
        Ok(Ok(models)) => {
            if let Some((path, endpoint)) = cache {
                write_cache(path, provider.id(), endpoint, &models).await;
            }
            models
        }
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

/// The listing kept at `path`, when it is `provider`'s at `endpoint` and younger than
/// [`CACHE_TTL`] (one from the future is not trusted). Read in place, on the listing's own
/// task: a file of a few kilobytes.
fn read_cache(path: &Path, provider: &str, endpoint: &str) -> Option<Vec<ModelInfo>> {
    let bytes = std::fs::read(path).ok()?;
    let cached: CachedList = match serde_json::from_slice(&bytes) {
        Ok(cached) => cached,
        Err(err) => {
            tracing::debug!(path = %path.display(), error = %err, "ignoring an unreadable model cache");
            return None;
        }
    };
    let age = u128::try_from(now_ms().checked_sub(cached.listed_at_ms)?).ok()?;
    let fresh = age < CACHE_TTL.as_millis();
    (fresh
        && cached.provider == provider
        && cached.endpoint == endpoint
        && !cached.models.is_empty())
    .then_some(cached.models)
}

/// Keeps `models` at `path` for the next processes (a miss costs this write once per
/// [`CACHE_TTL`]); a failure is logged and forgotten.
async fn write_cache(path: Arc<Path>, provider: &str, endpoint: String, models: &[ModelInfo]) {
    if models.is_empty() {
        return;
    }
    let cached = CachedList {
        provider: provider.to_string(),
        endpoint,
        listed_at_ms: now_ms(),
        models: models.to_vec(),
    };
    let written = tokio::task::spawn_blocking(move || {
        let json = serde_json::to_vec(&cached).map_err(std::io::Error::other)?;
        if let Some(dir) = path.parent() {
            crate::fs::create_dir_all_private(dir)?;
        }
        crate::fs::write_atomic_with(&path, &json, crate::fs::Durability::Buffered)
    })
    .await
    .unwrap_or_else(|err| Err(std::io::Error::other(err)));
    if let Err(err) = written {
        tracing::debug!(error = %err, "cannot keep the model list");
    }
}
