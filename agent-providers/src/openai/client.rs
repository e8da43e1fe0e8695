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
    service: Service,
}

/// Whose API the client talks to: OpenAI's (and every compatible server), or Azure
/// OpenAI's, which differs only in its URLs and its `api-key` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Service {
    /// `{base_url}/chat/completions`, `{base_url}/responses`, `Authorization: Bearer`.
    OpenAi,
    /// Azure OpenAI (see [`crate::azure`]).
    Azure {
        /// The `api-version` of the deployments API.
        api_version: String,
    },
}

impl std::fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiClient")
            .field("config", &self.config)
            .field("service", &self.service)
            .finish()
    }
}

impl OpenAiClient {
    /// A client talking to `config.base_url`. The HTTP client (and its TLS setup) is built
    /// on first use.
    pub fn new(config: ClientConfig) -> Self {
        Self::with_service(config, Service::OpenAi)
    }

    pub(crate) fn with_service(config: ClientConfig, service: Service) -> Self {
        Self {
            http: HttpClient::of(&config),
            config: Arc::new(config),
            service,
        }
    }

    /// The provider id of `api` on this client's service.
    pub(crate) fn provider_id(&self, api: Api) -> &'static str {
        match (&self.service, api) {
            (Service::OpenAi, Api::Chat) => "openai",
            (Service::OpenAi, Api::Responses) => "openai-responses",
            (Service::Azure { .. }, Api::Chat) => "azure",
            (Service::Azure { .. }, Api::Responses) => "azure-responses",
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// Whether this is OpenAI's own API (or Azure's) rather than a compatible server.
    pub(crate) fn is_openai(&self) -> bool {
        matches!(self.service, Service::Azure { .. })
            || self.config.base_url.contains("api.openai.com")
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

    /// Streams one POST of `body` to `api` for `model`, decoded by `decoder`.
    pub(crate) fn stream<D: Decoder>(
        &self,
        api: Api,
        model: &str,
        body: &impl Serialize,
        decoder: D,
    ) -> ProviderStream {
        drive(self.http.clone(), self.prepare(api, model, body), decoder)
    }

    /// Where `api` is for `model`.
    fn url(&self, api: Api, model: &str) -> String {
        match (&self.service, api) {
            (Service::OpenAi, Api::Chat) => self.config.url("chat/completions"),
            (Service::OpenAi, Api::Responses) => self.config.url("responses"),
            (Service::Azure { api_version }, Api::Chat) => {
                crate::azure::chat_url(&self.config.base_url, model, api_version)
            }
            (Service::Azure { .. }, Api::Responses) => {
                crate::azure::responses_url(&self.config.base_url)
            }
        }
    }

    fn prepare(
        &self,
        api: Api,
        model: &str,
        body: &impl Serialize,
    ) -> Result<PreparedRequest, ProviderError> {
        let (headers, secrets) = self.auth_headers()?;
        PreparedRequest::json(self.url(api, model), headers, body, secrets)
    }

    /// The credentials and custom headers every request carries.
    fn auth_headers(&self) -> Result<(HeaderMap, Vec<secrecy::SecretString>), ProviderError> {
        let mut headers = HeaderMap::new();
        let mut secrets = Vec::new();
        let key_header = match self.service {
            Service::OpenAi => ("authorization", "Bearer "),
            Service::Azure { .. } => ("api-key", ""),
        };
        if let Some(key) = &self.config.api_key {
            let (name, value) = secret_header(key_header.0, key_header.1, key)?;
            headers.insert(name, value);
            secrets.push(key.clone());
        }
        // Azure's Microsoft Entra ID token.
        if let (Service::Azure { .. }, Some(token)) = (&self.service, &self.config.auth_token) {
            let (name, value) = secret_header("authorization", "Bearer ", token)?;
            headers.insert(name, value);
            secrets.push(token.clone());
        }
        self.config.apply_headers(&mut headers, &mut secrets);
        Ok((headers, secrets))
    }

    /// The models `GET {base}/models` lists (OpenAI's own API: its chat models only), as
    /// `provider`, each with its catalogue figures; Azure's deployments are not listed
    /// (the catalogue).
    pub(crate) async fn list_models(
        &self,
        provider: &str,
    ) -> Result<Vec<ModelInfo>, ProviderError> {
        if !matches!(self.service, Service::OpenAi) {
            return Ok(self.models(provider));
        }
        let (headers, secrets) = self.auth_headers()?;
        let ids =
            crate::models::fetch(&self.http, self.config.url("models"), headers, &secrets).await?;
        let openai = self.is_openai();
        Ok(ids
            .into_iter()
            .filter(|id| !openai || crate::models::openai_chat_model(id))
            .map(|id| self.model_info(provider, &id))
            .collect())
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
