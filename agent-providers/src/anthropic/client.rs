//! The Messages provider.

use std::sync::Arc;

use agent_core::{
    provider::{ModelInfo, ProviderError, ProviderRequest, ProviderStream},
    Provider,
};
use reqwest::header::{HeaderMap, HeaderValue};

use super::request::{
    messages, system, MessagesRequest, OutputConfig, Thinking, ToolChoice, WireTool,
};
use super::streaming::AnthropicDecoder;
use super::API_VERSION;
use crate::catalog::{self, Family, Reasoning};
use crate::http::{secret_header, ClientConfig, HttpClient, PreparedRequest};
use crate::sse::drive;

/// Anthropic Messages.
///
/// Credentials: [`ClientConfig::api_key`] goes in `x-api-key`, [`ClientConfig::auth_token`]
/// in `Authorization: Bearer` (gateways and OAuth tokens); with both set both headers are
/// sent, as the official SDKs do.
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
            http: HttpClient::of(&config),
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
    ///
    /// - Reasoning: models with extended thinking get `thinking: {type: "enabled",
    ///   budget_tokens}` sized by the level (at least 1 024 and below `max_tokens`, as the
    ///   API requires; none when the level is off); models that take `output_config.effort`
    ///   get the level's effort as well.
    /// - Structured output: a tool named after the schema, with the schema as its
    ///   `input_schema`, and a `tool_choice` forcing it (`{type: "tool", name}`; with other
    ///   tools on offer `{type: "any", disable_parallel_tool_use: true}`, so the model may
    ///   still call them, one at a time, before answering). Forced tool use and extended
    ///   thinking exclude each other in the API, so thinking is left off for such requests.
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
        let reasoning = spec.map_or(Reasoning::None, |s| s.reasoning);
        let thinking = match (reasoning, &request.output_schema) {
            (Reasoning::Budget | Reasoning::BudgetAndEffort(_), None) => {
                catalog::thinking_budget(request.reasoning, max_tokens).map(|budget_tokens| {
                    Thinking {
                        kind: "enabled",
                        budget_tokens,
                    }
                })
            }
            _ => None,
        };
        let output_config = match reasoning {
            Reasoning::BudgetAndEffort(accepted) => {
                catalog::effort(request.reasoning, accepted).map(|effort| OutputConfig { effort })
            }
            _ => None,
        };
        let mut tools: Vec<WireTool> = request.tools.iter().map(WireTool::from).collect();
        let tool_choice = request.output_schema.as_ref().map(|schema| {
            let choice = match tools.is_empty() {
                true => ToolChoice::Tool {
                    name: schema.name.clone(),
                },
                false => ToolChoice::Any {
                    disable_parallel_tool_use: true,
                },
            };
            tools.push(WireTool::answer(schema));
            choice
        });
        MessagesRequest {
            model,
            max_tokens,
            system: system(request),
            messages: messages(request),
            tools,
            tool_choice,
            stream: true,
            thinking,
            output_config,
        }
    }

    fn prepare(&self, request: &ProviderRequest) -> Result<PreparedRequest, ProviderError> {
        let (headers, secrets) = self.auth_headers()?;
        PreparedRequest::json(self.url(), headers, &self.body(request), secrets)
    }

    /// The version, credentials and custom headers every request carries.
    fn auth_headers(&self) -> Result<(HeaderMap, Vec<secrecy::SecretString>), ProviderError> {
        let mut headers = HeaderMap::new();
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        let mut secrets = Vec::new();
        if let Some(key) = &self.config.api_key {
            let (name, value) = secret_header("x-api-key", "", key)?;
            headers.insert(name, value);
            secrets.push(key.clone());
        }
        if let Some(token) = &self.config.auth_token {
            let (name, value) = secret_header("authorization", "Bearer ", token)?;
            headers.insert(name, value);
            secrets.push(token.clone());
        }
        self.config.apply_headers(&mut headers, &mut secrets);
        Ok((headers, secrets))
    }

    /// The models `GET /v1/models` lists, each with its catalogue figures.
    async fn listed_models(&self) -> Result<Vec<ModelInfo>, ProviderError> {
        let (headers, secrets) = self.auth_headers()?;
        let url = match self.config.base_url.trim_end_matches('/').ends_with("/v1") {
            true => self.config.url("models"),
            false => self.config.url("v1/models"),
        };
        let ids = crate::models::fetch(&self.http, url, headers, &secrets).await?;
        Ok(ids
            .iter()
            .map(|id| catalog::model_info("anthropic", Family::Anthropic, id))
            .collect())
    }
}

impl Provider for AnthropicProvider {
    fn id(&self) -> &str {
        "anthropic"
    }

    fn endpoint(&self) -> Option<String> {
        Some(self.config.base_url.clone())
    }

    fn stream(&self, request: ProviderRequest) -> ProviderStream {
        let answer_tool = request.output_schema.as_ref().map(|s| s.name.clone());
        drive(
            self.http.clone(),
            self.prepare(&request),
            AnthropicDecoder::new(answer_tool),
        )
    }

    fn models(&self) -> Vec<ModelInfo> {
        catalog::list("anthropic", Family::Anthropic, &self.config.model)
    }

    fn model_info(&self, model: &str) -> Option<ModelInfo> {
        Some(catalog::model_info("anthropic", Family::Anthropic, model))
    }

    fn list_models(&self) -> agent_core::provider::ModelList<'_> {
        Box::pin(self.listed_models())
    }
}
