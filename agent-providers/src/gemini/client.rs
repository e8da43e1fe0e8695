//! The Gemini API provider.

use std::sync::Arc;

use agent_core::{
    provider::{ModelInfo, ProviderError, ProviderRequest, ProviderStream},
    Provider,
};
use reqwest::header::HeaderMap;

use super::request::{answer_tool, body, Dialect};
use super::streaming::GeminiDecoder;
use super::{errors, API_VERSION};
use crate::catalog::{self, Family};
use crate::http::{secret_header, ClientConfig, HttpClient, PreparedRequest};
use crate::sse::drive;

/// The Gemini API (Google AI Studio keys).
///
/// [`ClientConfig::api_key`] goes in `x-goog-api-key`; the base URL may end in `/v1beta`
/// (or `/v1`) or not.
///
/// ```no_run
/// use agent_providers::{ClientConfig, GeminiProvider};
///
/// let provider = GeminiProvider::new(
///     ClientConfig::new("https://generativelanguage.googleapis.com", "gemini-2.5-pro")
///         .api_key("AIza…"),
/// );
/// # let _ = provider;
/// ```
#[derive(Clone)]
pub struct GeminiProvider {
    config: Arc<ClientConfig>,
    http: Arc<HttpClient>,
}

impl std::fmt::Debug for GeminiProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeminiProvider")
            .field("config", &self.config)
            .finish()
    }
}

/// `models/{model}`, or the model's own resource path (`tunedModels/…`).
pub(crate) fn model_path(model: &str) -> String {
    match model.contains('/') {
        true => model.trim_start_matches('/').to_string(),
        false => format!("models/{model}"),
    }
}

impl GeminiProvider {
    /// A provider talking to `config.base_url`. The HTTP client is built on first use.
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

    fn model(&self, request: &ProviderRequest) -> String {
        match request.model.is_empty() {
            true => self.config.model.clone(),
            false => request.model.clone(),
        }
    }

    fn url(&self, model: &str) -> String {
        let base = self.config.base_url.trim_end_matches('/');
        let path = format!("{}:streamGenerateContent?alt=sse", model_path(model));
        match base.ends_with("/v1beta") || base.ends_with("/v1") {
            true => self.config.url(&path),
            false => self.config.url(&format!("{API_VERSION}/{path}")),
        }
    }

    fn prepare(&self, request: &ProviderRequest) -> Result<PreparedRequest, ProviderError> {
        let model = self.model(request);
        let mut headers = HeaderMap::new();
        let mut secrets = Vec::new();
        if let Some(key) = &self.config.api_key {
            let (name, value) = secret_header("x-goog-api-key", "", key)?;
            headers.insert(name, value);
            secrets.push(key.clone());
        }
        self.config.apply_headers(&mut headers, &mut secrets);
        let body = body(
            request,
            model.trim_start_matches("models/"),
            Dialect::Gemini,
        );
        Ok(
            PreparedRequest::json(self.url(&model), headers, &body, secrets)?
                .refine(errors::refine),
        )
    }
}

impl Provider for GeminiProvider {
    fn id(&self) -> &str {
        "gemini"
    }

    fn endpoint(&self) -> Option<String> {
        Some(self.config.base_url.clone())
    }

    fn stream(&self, request: ProviderRequest) -> ProviderStream {
        let model = self.model(&request);
        let answer = answer_tool(&request, model.trim_start_matches("models/"));
        drive(
            self.http.clone(),
            self.prepare(&request),
            GeminiDecoder::new(answer),
        )
    }

    fn models(&self) -> Vec<ModelInfo> {
        catalog::list("gemini", Family::Gemini, &self.config.model)
    }

    fn model_info(&self, model: &str) -> Option<ModelInfo> {
        Some(catalog::model_info("gemini", Family::Gemini, model))
    }
}
