//! The Chat Completions provider.

use std::sync::Arc;

use agent_core::{ModelInfo, Provider, ProviderError, ProviderRequest, ProviderStream};
use reqwest::header::HeaderMap;

use super::completion::{messages, ChatRequest, ChatTool, StreamOptions};
use super::streaming::ChatDecoder;
use crate::catalog::{self, Family, Reasoning};
use crate::http::{secret_header, ClientConfig, HttpClient, PreparedRequest};
use crate::sse::drive;

/// OpenAI Chat Completions and every OpenAI-compatible server.
///
/// ```no_run
/// use agent_providers::{ClientConfig, OpenAiProvider};
///
/// // A local llama.cpp or Ollama server needs no key.
/// let provider = OpenAiProvider::new(ClientConfig::new("http://127.0.0.1:11434/v1", "qwen3:8b"));
/// # let _ = provider;
/// ```
#[derive(Clone)]
pub struct OpenAiProvider {
    config: Arc<ClientConfig>,
    http: Arc<HttpClient>,
}

impl std::fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiProvider")
            .field("config", &self.config)
            .finish()
    }
}

impl OpenAiProvider {
    /// A provider talking to `config.base_url`.
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

    /// Whether this is OpenAI's own API (which names the output limit
    /// `max_completion_tokens`; compatible servers know `max_tokens`).
    fn is_openai(&self) -> bool {
        self.config.base_url.contains("api.openai.com")
    }

    /// The request body for `request`.
    pub(crate) fn body(&self, request: &ProviderRequest) -> ChatRequest {
        let model = match request.model.is_empty() {
            true => self.config.model.clone(),
            false => request.model.clone(),
        };
        let spec = catalog::lookup(&model).filter(|m| m.family == Family::OpenAi);
        let reasoning_effort = match spec.map(|s| s.reasoning) {
            Some(Reasoning::Effort(accepted)) => catalog::effort(request.reasoning, accepted),
            _ => None,
        };
        let (max_completion_tokens, max_tokens) = match request.max_output_tokens {
            Some(limit) if self.is_openai() => (Some(limit), None),
            Some(limit) => (None, Some(limit)),
            None => (None, None),
        };
        ChatRequest {
            model,
            messages: messages(request),
            stream: true,
            stream_options: Some(StreamOptions {
                include_usage: true,
            }),
            tools: request.tools.iter().map(ChatTool::from).collect(),
            max_completion_tokens,
            max_tokens,
            reasoning_effort,
        }
    }

    fn prepare(&self, request: &ProviderRequest) -> Result<PreparedRequest, ProviderError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.config.api_key {
            let (name, value) = secret_header("authorization", "Bearer ", key)?;
            headers.insert(name, value);
        }
        PreparedRequest::json(
            self.config.url("chat/completions"),
            headers,
            &self.body(request),
            self.config.api_key.clone(),
        )
    }
}

impl Provider for OpenAiProvider {
    fn id(&self) -> &str {
        "openai"
    }

    fn stream(&self, request: ProviderRequest) -> ProviderStream {
        drive(
            self.http.clone(),
            self.prepare(&request),
            ChatDecoder::new(),
        )
    }

    fn models(&self) -> Vec<ModelInfo> {
        catalog::list("openai", Family::OpenAi, &self.config.model)
    }

    fn model_info(&self, model: &str) -> Option<ModelInfo> {
        Some(catalog::model_info("openai", Family::OpenAi, model))
    }
}
