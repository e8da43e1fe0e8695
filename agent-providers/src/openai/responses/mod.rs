//! Responses (`POST {base_url}/responses`, streamed, `store: false`): the provider and the
//! request body; `request` holds the wire types and the transcript mapping, `streaming`
//! the response decoder.
//!
//! Each reasoning item (with its `encrypted_content`, requested through `include`) is handed
//! to the agent in [`agent_core::provider::ProviderEvent::ReasoningEnd`]'s `opaque` and sent back
//! verbatim in the next request, as the API requires for reasoning models calling tools.

use agent_core::{
    provider::{ModelInfo, ProviderRequest, ProviderStream},
    Provider,
};

use super::client::{Api, OpenAiClient};
use crate::http::ClientConfig;

pub(crate) mod request;
pub(crate) mod streaming;

use request::{input, FunctionTool, ReasoningParam, ResponsesRequest, TextParam};
use streaming::ResponsesDecoder;

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
#[derive(Clone, Debug)]
pub struct OpenAiResponsesProvider {
    client: OpenAiClient,
}

impl OpenAiClient {
    /// The Responses provider of this client.
    pub fn responses(&self) -> OpenAiResponsesProvider {
        OpenAiResponsesProvider::from_client(self.clone())
    }
}

impl OpenAiResponsesProvider {
    /// A provider talking to `config.base_url`.
    pub fn new(config: ClientConfig) -> Self {
        Self::from_client(OpenAiClient::new(config))
    }

    /// The Responses provider of `client` (see [`OpenAiClient::responses`]).
    fn from_client(client: OpenAiClient) -> Self {
        Self { client }
    }

    /// The configuration.
    pub fn config(&self) -> &ClientConfig {
        self.client.config()
    }

    /// The client this provider uses; its [`OpenAiClient::chat`] shares the connection pool.
    pub fn client(&self) -> &OpenAiClient {
        &self.client
    }

    /// The request body for `request`.
    pub(crate) fn body(&self, request: &ProviderRequest) -> ResponsesRequest {
        let model = self.client.model(request);
        let reasoning =
            self.client
                .effort(&model, request.reasoning)
                .map(|effort| ReasoningParam {
                    effort,
                    summary: "auto",
                });
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
            text: request.output_schema.as_ref().map(TextParam::from),
            prompt_cache_key: self.client.prompt_cache_key(request, Api::Responses),
        }
    }
}

impl Provider for OpenAiResponsesProvider {
    fn id(&self) -> &str {
        self.client.provider_id(Api::Responses)
    }

    fn endpoint(&self) -> Option<String> {
        Some(self.client.config().base_url.clone())
    }

    fn stream(&self, request: ProviderRequest) -> ProviderStream {
        let body = self.body(&request);
        self.client
            .stream(Api::Responses, &body.model, &body, ResponsesDecoder::new())
    }

    fn models(&self) -> Vec<ModelInfo> {
        self.client.models(self.client.provider_id(Api::Responses))
    }

    fn list_models(&self) -> agent_core::provider::ModelList<'_> {
        Box::pin(
            self.client
                .list_models(self.client.provider_id(Api::Responses)),
        )
    }

    fn model_info(&self, model: &str) -> Option<ModelInfo> {
        Some(
            self.client
                .model_info(self.client.provider_id(Api::Responses), model),
        )
    }
}
