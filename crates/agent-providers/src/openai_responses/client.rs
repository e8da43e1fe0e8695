//! The Responses provider.

use std::sync::Arc;

use agent_core::{ModelInfo, Provider, ProviderError, ProviderRequest, ProviderStream};
use reqwest::header::HeaderMap;

use super::completion::{input, FunctionTool, ReasoningParam, ResponsesRequest};
use super::streaming::ResponsesDecoder;
use crate::catalog::{self, Family, Reasoning};
use crate::http::{secret_header, ClientConfig, HttpClient, PreparedRequest};
use crate::sse::drive;

/// OpenAI Responses.
///
/// ```no_run
/// use agent_providers::{ClientConfig, OpenAiResponsesProvider};
///
/// let provider = OpenAiResponsesProvider::new(
///     ClientConfig::new("https://api.openai.com/v1", "gpt-5.1").api_key("sk-…"),
/// );
/// # let _ = provider;
/// ```
#[derive(Clone)]
pub struct OpenAiResponsesProvider {
    config: Arc<ClientConfig>,
    http: Arc<HttpClient>,
}

impl std::fmt::Debug for OpenAiResponsesProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiResponsesProvider")
            .field("config", &self.config)
            .finish()
    }
}

impl OpenAiResponsesProvider {
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

    /// The request body for `request`.
    pub(crate) fn body(&self, request: &ProviderRequest) -> ResponsesRequest {
        let model = match request.model.is_empty() {
            true => self.config.model.clone(),
            false => request.model.clone(),
        };
        let spec = catalog::lookup(&model).filter(|m| m.family == Family::OpenAi);
        let reasoning = match spec.map(|s| s.reasoning) {
            Some(Reasoning::Effort(accepted)) => {
                catalog::effort(request.reasoning, accepted).map(|effort| ReasoningParam {
                    effort,
                    summary: "auto",
                })
            }
            _ => None,
        };
        ResponsesRequest {
            model,
            instructions: request.system.clone().filter(|s| !s.is_empty()),
            input: input(request),
            tools: request.tools.iter().map(FunctionTool::from).collect(),
            stream: true,
            store: false,
            include: match reasoning {
                Some(_) => vec!["reasoning.encrypted_content"],
                None => Vec::new(),
            },
            reasoning,
            max_output_tokens: request.max_output_tokens,
        }
    }

    fn prepare(&self, request: &ProviderRequest) -> Result<PreparedRequest, ProviderError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.config.api_key {
            let (name, value) = secret_header("authorization", "Bearer ", key)?;
            headers.insert(name, value);
        }
        PreparedRequest::json(
            self.config.url("responses"),
            headers,
            &self.body(request),
            self.config.api_key.clone(),
        )
    }
}

impl Provider for OpenAiResponsesProvider {
    fn id(&self) -> &str {
        "openai-responses"
    }

    fn stream(&self, request: ProviderRequest) -> ProviderStream {
        drive(
            self.http.clone(),
            self.prepare(&request),
            ResponsesDecoder::new(),
        )
    }

    fn models(&self) -> Vec<ModelInfo> {
        catalog::list("openai-responses", Family::OpenAi, &self.config.model)
    }

    fn model_info(&self, model: &str) -> Option<ModelInfo> {
        Some(catalog::model_info(
            "openai-responses",
            Family::OpenAi,
            model,
        ))
    }
}
