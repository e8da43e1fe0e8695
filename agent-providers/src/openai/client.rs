//! The one OpenAI client behind both OpenAI APIs: base URL, credentials, HTTP settings and
//! connection pool, model resolution and the catalogue. Its providers are made where they
//! live: [`OpenAiClient::chat`] in `chat`, [`OpenAiClient::responses`] in `responses`.

use std::sync::Arc;

use agent_core::{
    provider::{ModelInfo, ProviderError, ProviderRequest, ProviderStream},
    ReasoningLevel,
};
use reqwest::header::HeaderMap;
use serde::Serialize;

use crate::catalog::{self, Family, Reasoning};
use crate::http::{secret_header, ClientConfig, HttpClient, PreparedRequest};
use crate::sse::{drive, Decoder};

/// Which of the two APIs a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    /// Chat Completions.
    Chat,
    /// Responses.
    Responses,
}

/// An OpenAI API client. It serves Chat Completions ([`OpenAiClient::chat`]) and Responses
/// ([`OpenAiClient::responses`]); providers made from one client share its configuration
/// and its HTTP connection pool.
///
/// ```no_run
/// use agent_providers::openai::OpenAiClient;
/// use agent_providers::ClientConfig;
///
/// let client = OpenAiClient::new(ClientConfig::new("https://api.openai.com/v1", "gpt-5.1").api_key("sk-…"));
/// let chat = client.chat();
/// let responses = client.responses();
/// # let _ = (chat, responses);
/// ```
#[derive(Clone)]
pub struct OpenAiClient {
    config: Arc<ClientConfig>,
    http: Arc<HttpClient>,
}

impl std::fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiClient")
            .field("config", &self.config)
            .finish()
    }
}

impl OpenAiClient {
    /// A client talking to `config.base_url`. The HTTP client (and its TLS setup) is built
    /// on first use.
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

    /// Whether this is OpenAI's own API rather than a compatible server.
    pub(crate) fn is_openai(&self) -> bool {
        self.config.base_url.contains("api.openai.com")
    }

    /// The `prompt_cache_key` of `request` on `api`: its session id, unless the config turns
    /// the key off, or (left to the server) Chat Completions talks to a compatible server,
    /// some of which reject the field (Zero sends it to OpenAI's own API only, for that
    /// reason).
    pub(crate) fn prompt_cache_key(&self, request: &ProviderRequest, api: Api) -> Option<String> {
        let send = self.config.prompt_cache_key.unwrap_or(match api {
            Api::Responses => true,
            Api::Chat => self.is_openai(),
        });
        request
            .session_id
            .clone()
            .filter(|id| send && !id.is_empty())
    }

    /// The model a request runs on: its own, else the configured one.
    pub(crate) fn model(&self, request: &ProviderRequest) -> String {
        match request.model.is_empty() {
            true => self.config.model.clone(),
            false => request.model.clone(),
        }
    }

    /// The `reasoning_effort` / `reasoning.effort` value for `level` on `model`, when the
    /// catalogue knows the model takes one.
    pub(crate) fn effort(&self, model: &str, level: ReasoningLevel) -> Option<&'static str> {
        match catalog::lookup(model)
            .filter(|m| m.family == Family::OpenAi)
            .map(|s| s.reasoning)
        {
            Some(Reasoning::Effort(accepted)) => catalog::effort(level, accepted),
            _ => None,
        }
    }

    /// Streams one POST of `body` to `path` (below the base URL), decoded by `decoder`.
    pub(crate) fn stream<D: Decoder>(
        &self,
        path: &str,
        body: &impl Serialize,
        decoder: D,
    ) -> ProviderStream {
        drive(self.http.clone(), self.prepare(path, body), decoder)
    }

    fn prepare(&self, path: &str, body: &impl Serialize) -> Result<PreparedRequest, ProviderError> {
        let mut headers = HeaderMap::new();
        let mut secrets = Vec::new();
        if let Some(key) = &self.config.api_key {
            let (name, value) = secret_header("authorization", "Bearer ", key)?;
            headers.insert(name, value);
            secrets.push(key.clone());
        }
        self.config.apply_headers(&mut headers, &mut secrets);
        PreparedRequest::json(self.config.url(path), headers, body, secrets)
    }

    /// The configured model first, then the rest of the OpenAI catalogue, as `provider`.
    pub(crate) fn models(&self, provider: &str) -> Vec<ModelInfo> {
        catalog::list(provider, Family::OpenAi, &self.config.model)
    }

    /// The catalogue entry of `model`, as `provider`.
    pub(crate) fn model_info(&self, provider: &str, model: &str) -> ModelInfo {
        catalog::model_info(provider, Family::OpenAi, model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_sends_the_cache_key_to_openai_itself_only_unless_told() {
        let mut request = ProviderRequest {
            model: "gpt-5.1".into(),
            system: None,
            messages: Vec::new(),
            tools: Vec::new(),
            reasoning: ReasoningLevel::Off,
            max_output_tokens: None,
            output_schema: None,
            session_id: Some("ses_1".into()),
        };
        let openai = OpenAiClient::new(ClientConfig::new("https://api.openai.com/v1", "m"));
        let local = OpenAiClient::new(ClientConfig::new("http://127.0.0.1:1/v1", "m"));
        assert_eq!(
            openai.prompt_cache_key(&request, Api::Chat).as_deref(),
            Some("ses_1")
        );
        assert_eq!(local.prompt_cache_key(&request, Api::Chat), None);
        assert_eq!(
            local.prompt_cache_key(&request, Api::Responses).as_deref(),
            Some("ses_1")
        );
        let off = OpenAiClient::new(
            ClientConfig::new("https://api.openai.com/v1", "m").prompt_cache_key(false),
        );
        assert_eq!(off.prompt_cache_key(&request, Api::Responses), None);
        request.session_id = None;
        assert_eq!(openai.prompt_cache_key(&request, Api::Chat), None);
    }
}
