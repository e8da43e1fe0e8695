//! The Vertex AI provider.

use std::sync::Arc;

use agent_core::{
    provider::{ModelInfo, ProviderError, ProviderRequest, ProviderStream},
    Provider,
};
use futures::StreamExt;
use reqwest::header::HeaderMap;
use secrecy::SecretString;
use serde::Serialize;

use super::auth::{Credentials, SharedCredentials};
use super::ANTHROPIC_VERSION;
use crate::anthropic::request::MessagesRequest;
use crate::anthropic::streaming::AnthropicDecoder;
use crate::catalog::{self, Family};
use crate::gemini::request::{body as gemini_body, Dialect};
use crate::gemini::streaming::GeminiDecoder;
use crate::gemini::{client::model_path, errors};
use crate::http::{secret_header, ClientConfig, HttpClient, PreparedRequest, SharedHttp};
use crate::sse::{drive, Decoder};
use crate::AnthropicProvider;

/// Vertex AI: Gemini and Anthropic models of one project and location.
///
/// Built by [`crate::build_provider`] for `--provider vertex`; see [`crate::vertex`] for the
/// URLs, credentials and settings.
#[derive(Clone)]
pub struct VertexProvider {
    config: Arc<ClientConfig>,
    http: Arc<HttpClient>,
    project: String,
    location: String,
    credentials: SharedCredentials,
    /// Builds the Messages bodies of Anthropic models.
    claude: AnthropicProvider,
    /// Secrets of the credentials file, scrubbed from errors.
    secrets: Vec<SecretString>,
}

impl std::fmt::Debug for VertexProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VertexProvider")
            .field("config", &self.config)
            .field("project", &self.project)
            .field("location", &self.location)
            .field("credentials", &self.credentials)
            .finish()
    }
}

/// The body of `:streamRawPredict`: the Messages body without `model`.
#[derive(Serialize)]
struct RawPredict {
    anthropic_version: &'static str,
    #[serde(flatten)]
    body: MessagesRequest,
}

impl VertexProvider {
    /// A provider of `project` in `location`: `config.base_url` is the service root
    /// ([`super::root`] of the location, or a proxy's); `config.api_key` is not used (an
    /// access token is [`Credentials::access_token`]).
    ///
    /// ```no_run
    /// use agent_providers::vertex::{self, auth::Credentials, VertexProvider};
    /// use agent_providers::ClientConfig;
    ///
    /// let credentials = Credentials::from_file("key.json".as_ref()).expect("a key file");
    /// let provider = VertexProvider::new(
    ///     ClientConfig::new(vertex::root("us-east5"), "claude-sonnet-4-5@20250929"),
    ///     "my-project",
    ///     "us-east5",
    ///     credentials,
    /// );
    /// # let _ = provider;
    /// ```
    pub fn new(
        config: ClientConfig,
        project: impl Into<String>,
        location: impl Into<String>,
        credentials: Credentials,
    ) -> Self {
        let secrets = credentials.secrets.clone();
        let (project, location) = (project.into(), location.into());
        // Claude's requests, Gemini's and the token exchange share one client.
        let config = match config.shared.is_some() {
            true => config,
            false => {
                let http = SharedHttp::new(config.http.clone());
                config.shared_http(&http)
            }
        };
        Self {
            claude: AnthropicProvider::new(config.clone()),
            http: HttpClient::of(&config),
            config: Arc::new(config),
            project,
            location,
            credentials: Arc::new(credentials),
            secrets,
        }
    }

    /// The project.
    pub fn project(&self) -> &str {
        &self.project
    }

    /// The location.
    pub fn location(&self) -> &str {
        &self.location
    }

    fn model(&self, request: &ProviderRequest) -> String {
        match request.model.is_empty() {
            true => self.config.model.clone(),
            false => request.model.clone(),
        }
    }

    fn is_claude(model: &str) -> bool {
        model.starts_with("claude")
    }

    /// `{root}/v1/projects/{project}/locations/{location}/publishers/{publisher}/models/
    /// {model}:{method}`.
    fn url(&self, model: &str, method: &str) -> String {
        let publisher = match Self::is_claude(model) {
            true => "anthropic",
            false => "google",
        };
        let model = model_path(model);
        let model = model.strip_prefix("models/").unwrap_or(&model);
        self.config.url(&format!(
            "v1/projects/{}/locations/{}/publishers/{publisher}/models/{model}:{method}",
            self.project, self.location
        ))
    }

    /// The request without its credentials, which the stream adds once it has a token.
    fn prepare(
        &self,
        request: &ProviderRequest,
        model: &str,
    ) -> Result<PreparedRequest, ProviderError> {
        let prepared = match Self::is_claude(model) {
            true => {
                let mut body = self.claude.body(request);
                body.model = String::new();
                PreparedRequest::json(
                    self.url(model, "streamRawPredict"),
                    HeaderMap::new(),
                    &RawPredict {
                        anthropic_version: ANTHROPIC_VERSION,
                        body,
                    },
                    self.secrets.clone(),
                )?
            }
            false => PreparedRequest::json(
                self.url(model, "streamGenerateContent?alt=sse"),
                HeaderMap::new(),
                &gemini_body(request, model, Dialect::Vertex),
                self.secrets.clone(),
            )?,
        };
        Ok(prepared.refine(errors::refine))
    }

    /// Streams `prepared` decoded by `decoder`, once the credentials gave a token.
    fn send<D: Decoder>(
        &self,
        prepared: Result<PreparedRequest, ProviderError>,
        decoder: D,
    ) -> ProviderStream {
        let (http, credentials, config) = (
            self.http.clone(),
            self.credentials.clone(),
            self.config.clone(),
        );
        let ready = async move {
            let mut prepared = prepared?;
            let token = credentials.token(&http).await?;
            let (name, value) = secret_header("authorization", "Bearer ", &token)?;
            prepared.headers.insert(name, value);
            prepared.secrets.push(token);
            // The user's headers win over ours, as on every provider.
            config.apply_headers(&mut prepared.headers, &mut prepared.secrets);
            Ok(prepared)
        };
        let http = self.http.clone();
        futures::stream::once(async move { drive(http, ready.await, decoder) })
            .flatten()
            .boxed()
    }
}

impl Provider for VertexProvider {
    fn id(&self) -> &str {
        "vertex"
    }

    fn endpoint(&self) -> Option<String> {
        Some(self.config.base_url.clone())
    }

    fn stream(&self, request: ProviderRequest) -> ProviderStream {
        let model = self.model(&request);
        let prepared = self.prepare(&request, &model);
        match Self::is_claude(&model) {
            true => {
                let answer_tool = request.output_schema.as_ref().map(|s| s.name.clone());
                self.send(prepared, AnthropicDecoder::new(answer_tool))
            }
            false => self.send(
                prepared,
                GeminiDecoder::new(crate::gemini::request::answer_tool(&request, &model)),
            ),
        }
    }

    fn models(&self) -> Vec<ModelInfo> {
        let mut out = vec![self.model_info_of(&self.config.model)];
        out.extend(
            catalog::models(Family::Gemini)
                .filter(|m| m.id != self.config.model)
                .map(|m| self.model_info_of(m.id)),
        );
        out
    }

    fn model_info(&self, model: &str) -> Option<ModelInfo> {
        Some(self.model_info_of(model))
    }
}

impl VertexProvider {
    fn model_info_of(&self, model: &str) -> ModelInfo {
        match Self::is_claude(model) {
            true => catalog::vertex_claude_info(model, &self.location),
            false => catalog::model_info("vertex", Family::Gemini, model),
        }
    }
}
