//! The Bedrock provider: the Converse body, signed with SigV4 (or a Bedrock API key), sent
//! through the shared driver.

use std::sync::Arc;
use std::time::SystemTime;

use agent_core::{
    provider::{ModelInfo, ProviderError, ProviderErrorKind, ProviderRequest, ProviderStream},
    Provider,
};
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use secrecy::{ExposeSecret, SecretString};

use super::credentials::AwsCredentials;
use super::request::body;
use super::streaming::BedrockDecoder;
use super::SERVICE;
use crate::catalog::{self, Family};
use crate::http::{describe, secret_header, ClientConfig, HttpClient, PreparedRequest};
use crate::sse::drive;

/// How requests are authorised.
#[derive(Clone)]
pub(crate) enum Auth {
    /// SigV4 with these credentials.
    SigV4(AwsCredentials),
    /// A Bedrock API key as a bearer token.
    Bearer(SecretString),
}

/// Amazon Bedrock's Converse stream API in one region.
///
/// Built by [`crate::build_provider`] for `--provider bedrock`, or directly:
///
/// ```no_run
/// use agent_providers::bedrock::{self, credentials::AwsCredentials, BedrockProvider};
/// use agent_providers::ClientConfig;
///
/// let provider = BedrockProvider::new(
///     ClientConfig::new(bedrock::endpoint("us-east-1"), bedrock::DEFAULT_MODEL),
///     "us-east-1",
///     AwsCredentials::new("AKIA…", "secret…", None),
/// );
/// # let _ = provider;
/// ```
#[derive(Clone)]
pub struct BedrockProvider {
    config: Arc<ClientConfig>,
    http: Arc<HttpClient>,
    region: String,
    auth: Auth,
}

impl std::fmt::Debug for BedrockProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let auth = match &self.auth {
            Auth::SigV4(credentials) => format!("{credentials:?}"),
            Auth::Bearer(_) => "Bearer([REDACTED])".to_string(),
        };
        f.debug_struct("BedrockProvider")
            .field("config", &self.config)
            .field("region", &self.region)
            .field("auth", &auth)
            .finish()
    }
}

/// `model` as one URL path segment (`:` and every other reserved byte escaped, as the AWS
/// SDKs send a model id).
fn segment(model: &str) -> String {
    let mut out = String::with_capacity(model.len() + 8);
    for byte in model.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

impl BedrockProvider {
    /// A provider for `region` signing with `credentials`; `config.base_url` is the runtime
    /// endpoint ([`super::endpoint`] of the region, or a proxy's).
    pub fn new(
        config: ClientConfig,
        region: impl Into<String>,
        credentials: AwsCredentials,
    ) -> Self {
        credentials.register();
        Self::with_auth(config, region.into(), Auth::SigV4(credentials))
    }

    /// A provider authorised by a Bedrock API key (a bearer token) instead of SigV4.
    pub fn with_api_key(
        config: ClientConfig,
        region: impl Into<String>,
        key: SecretString,
    ) -> Self {
        agent_core::secrets::register_secret(key.expose_secret());
        Self::with_auth(config, region.into(), Auth::Bearer(key))
    }

    fn with_auth(config: ClientConfig, region: String, auth: Auth) -> Self {
        Self {
            http: HttpClient::of(&config),
            config: Arc::new(config),
            region,
            auth,
        }
    }

    /// The region.
    pub fn region(&self) -> &str {
        &self.region
    }

    fn model(&self, request: &ProviderRequest) -> String {
        match request.model.is_empty() {
            true => self.config.model.clone(),
            false => request.model.clone(),
        }
    }

    /// The signed request (SigV4 signs the body and the time, once: a retry within the
    /// signature's five minutes sends it again as is).
    fn prepare(&self, request: &ProviderRequest) -> Result<PreparedRequest, ProviderError> {
        let model = self.model(request);
        let url = self
            .config
            .url(&format!("model/{}/converse-stream", segment(&model)));
        let mut headers = HeaderMap::new();
        let mut secrets = Vec::new();
        self.config.apply_headers(&mut headers, &mut secrets);
        let mut prepared =
            PreparedRequest::json(url, headers, &body(request, &model), secrets)?.refine(refine);
        prepared.headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("application/vnd.amazon.eventstream"),
        );
        match &self.auth {
            Auth::Bearer(key) => {
                let (name, value) = secret_header("authorization", "Bearer ", key)?;
                prepared.headers.insert(name, value);
                prepared.secrets.push(key.clone());
            }
            Auth::SigV4(credentials) => {
                self.sign(&mut prepared, credentials)?;
                prepared.secrets.extend(credentials.secrets());
            }
        }
        Ok(prepared)
    }

    /// Adds SigV4's `authorization`, `x-amz-date` and `x-amz-security-token` headers.
    fn sign(
        &self,
        prepared: &mut PreparedRequest,
        credentials: &AwsCredentials,
    ) -> Result<(), ProviderError> {
        let failed = |what: String| {
            ProviderError::new(
                ProviderErrorKind::Auth,
                format!("cannot sign the request: {what}"),
            )
            .retryable(false)
        };
        let identity = aws_credential_types::Credentials::new(
            credentials.access_key_id.clone(),
            credentials.secret_access_key.expose_secret().to_string(),
            credentials
                .session_token
                .as_ref()
                .map(|t| t.expose_secret().to_string()),
            None,
            "agent-sdk",
        )
        .into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(SERVICE)
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| failed(e.to_string()))?
            .into();
        let host = reqwest::Url::parse(&prepared.url)
            .ok()
            .and_then(|u| {
                u.host_str().map(|h| match u.port() {
                    Some(port) => format!("{h}:{port}"),
                    None => h.to_string(),
                })
            })
            .ok_or_else(|| failed(format!("invalid URL {}", prepared.url)))?;
        let mut signed: Vec<(String, String)> = prepared
            .headers
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
            .collect();
        signed.push(("host".into(), host));
        let signable = SignableRequest::new(
            "POST",
            prepared.url.as_str(),
            signed.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            SignableBody::Bytes(&prepared.body),
        )
        .map_err(|e| failed(e.to_string()))?;
        let (instructions, _) = sign(signable, &params)
            .map_err(|e| failed(e.to_string()))?
            .into_parts();
        for (name, value) in instructions.headers() {
            let mut value = HeaderValue::from_str(value).map_err(|e| failed(e.to_string()))?;
            let sensitive = name == "authorization" || name == "x-amz-security-token";
            value.set_sensitive(sensitive);
            let name =
                HeaderName::from_bytes(name.as_bytes()).map_err(|e| failed(e.to_string()))?;
            prepared.headers.insert(name, value);
        }
        Ok(())
    }
}

/// AWS's reading of an error answer: the `x-amzn-errortype` header (or the body's
/// `__type`) names the exception; its message is kept.
fn refine(mut err: ProviderError, headers: &HeaderMap, body: &str) -> ProviderError {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body.trim()).ok();
    let kind_name = headers
        .get("x-amzn-errortype")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| {
            parsed
                .as_ref()
                .and_then(|v| v.get("__type"))
                .and_then(|v| v.as_str())
                .map(str::to_string)
        });
    let Some(kind_name) = kind_name else {
        return err;
    };
    // `ValidationException:http://internal.amazon.com/coral/…`, `com.amazon…#Throttling…`.
    let name = kind_name
        .split(':')
        .next()
        .unwrap_or("")
        .rsplit('#')
        .next()
        .unwrap_or("")
        .to_string();
    let message = parsed
        .as_ref()
        .and_then(|v| v.get("message").or_else(|| v.get("Message")))
        .and_then(|v| v.as_str())
        .unwrap_or("no message");
    let kind = match name.as_str() {
        "ExpiredTokenException"
        | "InvalidSignatureException"
        | "UnrecognizedClientException"
        | "AccessDeniedException"
        | "IncompleteSignatureException"
        | "MissingAuthenticationTokenException" => ProviderErrorKind::Auth,
        "ThrottlingException" | "ServiceQuotaExceededException" => ProviderErrorKind::RateLimited,
        "ServiceUnavailableException" | "ModelNotReadyException" => ProviderErrorKind::Overloaded,
        "ModelTimeoutException" => ProviderErrorKind::Timeout,
        "ResourceNotFoundException" => ProviderErrorKind::NotFound,
        "ValidationException" if crate::http::is_context_length(message) => {
            ProviderErrorKind::ContextLength
        }
        "ValidationException" => ProviderErrorKind::BadRequest,
        "InternalServerException" | "ModelErrorException" => ProviderErrorKind::Server,
        _ => err.kind,
    };
    if kind != err.kind {
        err.kind = kind;
        err.retryable = ProviderError::new(kind, "").retryable;
    }
    let status = err.status.unwrap_or(0);
    err.message = format!("{} (HTTP {status}, {name}): {message}", describe(kind));
    err
}

impl Provider for BedrockProvider {
    fn id(&self) -> &str {
        "bedrock"
    }

    fn endpoint(&self) -> Option<String> {
        Some(self.config.base_url.clone())
    }

    fn stream(&self, request: ProviderRequest) -> ProviderStream {
        let answer_tool = request.output_schema.as_ref().map(|s| s.name.clone());
        drive(
            self.http.clone(),
            self.prepare(&request),
            BedrockDecoder::new(answer_tool),
        )
    }

    fn models(&self) -> Vec<ModelInfo> {
        vec![self.model_info_of(&self.config.model)]
    }

    fn model_info(&self, model: &str) -> Option<ModelInfo> {
        Some(self.model_info_of(model))
    }
}

impl BedrockProvider {
    fn model_info_of(&self, model: &str) -> ModelInfo {
        match super::anthropic_id(model) {
            Some(id) => {
                let mut info = catalog::model_info("bedrock", Family::Anthropic, id);
                info.id = model.to_string();
                info.pricing = catalog::regional_pricing(info.pricing, id, super::regional(model));
                info
            }
            None => {
                let mut info =
                    catalog::model_info("bedrock", Family::Bedrock, super::without_geo(model));
                info.id = model.to_string();
                info
            }
        }
    }
}
