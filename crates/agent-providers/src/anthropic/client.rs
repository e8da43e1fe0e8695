//! The Messages provider.

use std::sync::Arc;

use agent_core::{ModelInfo, Provider, ProviderError, ProviderRequest, ProviderStream};
use reqwest::header::{HeaderMap, HeaderValue};

use super::request::{messages, system, MessagesRequest, Thinking, WireTool};
use super::streaming::AnthropicDecoder;
use super::API_VERSION;
use crate::catalog::{self, Family, Reasoning};
use crate::http::{secret_header, ClientConfig, HttpClient, PreparedRequest};
use crate::sse::drive;

/// Anthropic Messages.
///
/// ```no_run
/// use agent_providers::{AnthropicProvider, ClientConfig};
///
/// let provider = AnthropicProvider::new(
///     ClientConfig::new("https://api.anthropic.com", "claude-sonnet-4-5").api_key("sk-ant-…"),
/// );
/// # let _ = provider;
/// ```
#[derive(Clone)]
pub struct AnthropicProvider {
    config: Arc<ClientConfig>,
    http: Arc<HttpClient>,
}

impl std::fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicProvider")
            .field("config", &self.config)
            .finish()
    }
}

impl AnthropicProvider {
    /// A provider talking to `config.base_url` (with or without a trailing `/v1`).
    pub fn new(config: ClientConfig) -> Self {
        Self {
            http: Arc::new(HttpClient::new(config.http.clone())),
            config: Arc::new(config),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    fn url(&self) -> String {
        match self.config.base_url.trim_end_matches('/').ends_with("/v1") {
            true => self.config.url("messages"),
            false => self.config.url("v1/messages"),
        }
    }

    /// The request body for `request`.
    pub(crate) fn body(&self, request: &ProviderRequest) -> MessagesRequest {
        let model = match request.model.is_empty() {
            true => self.config.model.clone(),
            false => request.model.clone(),
        };
        let spec = catalog::lookup(&model).filter(|m| m.family == Family::Anthropic);
        let max_tokens = request
            .max_output_tokens
            .or(spec.map(|s| s.max_output))
            .unwrap_or(catalog::UNKNOWN_MAX_OUTPUT)
            .max(1);
        let thinking =
            match spec.map(|s| s.reasoning) {
                Some(Reasoning::Budget) => catalog::thinking_budget(request.reasoning, max_tokens)
                    .map(|budget_tokens| Thinking {
                        kind: "enabled",
                        budget_tokens,
                    }),
                _ => None,
            };
        MessagesRequest {
            model,
            max_tokens,
            system: system(request),
            messages: messages(request),
            tools: request.tools.iter().map(WireTool::from).collect(),
            stream: true,
            thinking,
        }
    }

    fn prepare(&self, request: &ProviderRequest) -> Result<PreparedRequest, ProviderError> {
        let mut headers = HeaderMap::new();
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        let mut secrets = Vec::new();
        if let Some(key) = &self.config.api_key {
            let (name, value) = secret_header("x-api-key", "", key)?;
            headers.insert(name, value);
            secrets.push(key.clone());
        }
        PreparedRequest::json(self.url(), headers, &self.body(request), secrets)
    }
}

impl Provider for AnthropicProvider {
    fn id(&self) -> &str {
        "anthropic"
    }

    fn stream(&self, request: ProviderRequest) -> ProviderStream {
        drive(
            self.http.clone(),
            self.prepare(&request),
            AnthropicDecoder::new(),
        )
    }

    fn models(&self) -> Vec<ModelInfo> {
        catalog::list("anthropic", Family::Anthropic, &self.config.model)
    }

    fn model_info(&self, model: &str) -> Option<ModelInfo> {
        Some(catalog::model_info("anthropic", Family::Anthropic, model))
    }
}
