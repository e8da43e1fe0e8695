//! Chat Completions (`POST {base_url}/chat/completions`, streamed): the provider and the
//! request body; `request` holds the wire types and the transcript mapping, `streaming`
//! the response decoder.

use agent_core::{
    provider::{ModelInfo, ProviderRequest, ProviderStream},
    Provider,
};

use super::client::{Api, OpenAiClient};
use crate::http::ClientConfig;

pub(crate) mod request;
pub(crate) mod streaming;

use request::{messages, ChatRequest, ChatTool, ResponseFormat, StreamOptions};
use streaming::ChatDecoder;

/// OpenAI Chat Completions and every OpenAI-compatible server.
///
/// ```no_run
/// use agent_providers::{ClientConfig, OpenAiProvider};
///
/// // A local llama.cpp or Ollama server needs no key.
/// let provider = OpenAiProvider::new(ClientConfig::new("http://127.0.0.1:11434/v1", "qwen3:8b"));
/// # let _ = provider;
/// ```
#[derive(Clone, Debug)]
pub struct OpenAiProvider {
    client: OpenAiClient,
}

impl OpenAiClient {
    /// The Chat Completions provider of this client.
    pub fn chat(&self) -> OpenAiProvider {
        OpenAiProvider::from_client(self.clone())
    }
}

impl OpenAiProvider {
    /// A provider talking to `config.base_url`.
    pub fn new(config: ClientConfig) -> Self {
        Self::from_client(OpenAiClient::new(config))
    }

    /// The Chat Completions provider of `client` (see [`OpenAiClient::chat`]).
    fn from_client(client: OpenAiClient) -> Self {
        Self { client }
    }

    /// The configuration.
    pub fn config(&self) -> &ClientConfig {
        self.client.config()
    }

    /// The client this provider uses; its [`OpenAiClient::responses`] shares the connection
    /// pool.
    pub fn client(&self) -> &OpenAiClient {
        &self.client
    }

    /// The request body for `request`.
    pub(crate) fn body(&self, request: &ProviderRequest) -> ChatRequest {
        let model = self.client.model(request);
        let reasoning_effort = self.client.effort(&model, request.reasoning);
        // OpenAI's own API names the output limit `max_completion_tokens`; compatible
        // servers know `max_tokens`.
        let (max_completion_tokens, max_tokens) = match request.max_output_tokens {
            Some(limit) if self.client.is_openai() => (Some(limit), None),
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
            response_format: request.output_schema.as_ref().map(ResponseFormat::from),
            prompt_cache_key: self.client.prompt_cache_key(request, Api::Chat),
        }
    }
}

impl Provider for OpenAiProvider {
    fn id(&self) -> &str {
        self.client.provider_id(Api::Chat)
    }

    fn endpoint(&self) -> Option<String> {
        Some(self.client.config().base_url.clone())
    }

    fn stream(&self, request: ProviderRequest) -> ProviderStream {
        let body = self.body(&request);
        self.client
            .stream(Api::Chat, &body.model, &body, ChatDecoder::new())
    }

    fn models(&self) -> Vec<ModelInfo> {
        self.client.models(self.client.provider_id(Api::Chat))
    }

    fn list_models(&self) -> agent_core::provider::ModelList<'_> {
        Box::pin(self.client.list_models(self.client.provider_id(Api::Chat)))
    }

    fn model_info(&self, model: &str) -> Option<ModelInfo> {
        Some(
            self.client
                .model_info(self.client.provider_id(Api::Chat), model),
        )
    }
}
