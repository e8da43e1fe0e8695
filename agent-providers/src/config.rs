//! Choosing and configuring a provider: the ids every command line of this project
//! accepts (`--provider ID --model M --base-url URL --api-key KEY`).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use agent_core::Provider;
use secrecy::{ExposeSecret, SecretString};

use crate::headers::CustomHeader;
use crate::http::{ClientConfig, HttpConfig, SharedHttp};
use crate::scripted::ScriptedProvider;
use crate::{AnthropicProvider, OpenAiProvider, OpenAiResponsesProvider};

/// The provider ids, the same on every command line and config of this project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderId {
    /// OpenAI Chat Completions and every OpenAI-compatible server (`openai`).
    OpenAi,
    /// OpenAI Responses (`openai-responses`).
    OpenAiResponses,
    /// Anthropic Messages (`anthropic`).
    Anthropic,
    /// The Gemini API (`gemini`).
    Gemini,
    /// Azure OpenAI Chat Completions (`azure`).
    Azure,
    /// Azure OpenAI Responses (`azure-responses`).
    AzureResponses,
    /// Vertex AI: Gemini and Anthropic models in Google Cloud (`vertex`).
    Vertex,
    /// Amazon Bedrock's Converse API (`bedrock`).
    Bedrock,
    /// The scripted provider reading a script file (`scripted`).
    Scripted,
}

impl ProviderId {
    /// Every id.
    pub const ALL: [ProviderId; 9] = [
        Self::OpenAi,
        Self::OpenAiResponses,
        Self::Anthropic,
        Self::Gemini,
        Self::Azure,
        Self::AzureResponses,
        Self::Vertex,
        Self::Bedrock,
        Self::Scripted,
    ];

    /// The id as written on command lines.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::OpenAiResponses => "openai-responses",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
            Self::Azure => "azure",
            Self::AzureResponses => "azure-responses",
            Self::Vertex => "vertex",
            Self::Bedrock => "bedrock",
            Self::Scripted => "scripted",
        }
    }
}

impl fmt::Display for ProviderId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A provider id that is not one of [`ProviderId::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown provider {0:?}: expected {ids}", ids = expected_ids())]
pub struct ParseProviderIdError(pub String);

/// `a, b, … or z` of [`ProviderId::ALL`].
fn expected_ids() -> String {
    let names: Vec<&str> = ProviderId::ALL.iter().map(|id| id.as_str()).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.concat(),
    }
}

impl FromStr for ProviderId {
    type Err = ParseProviderIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|id| id.as_str() == s)
            .ok_or_else(|| ParseProviderIdError(s.to_string()))
    }
}

/// Everything needed to build a provider. Unset fields fall back to the standard
/// environment (`OPENAI_API_KEY`, `OPENAI_BASE_URL`, `ANTHROPIC_API_KEY`,
/// `ANTHROPIC_BASE_URL`; `ANTHROPIC_AUTH_TOKEN` is read from the environment only) and then
/// to the vendor defaults.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// Which API.
    pub id: ProviderId,
    /// Model id; `None` picks the provider's default.
    pub model: Option<String>,
    /// Base URL of the API (e.g. `http://127.0.0.1:8080/v1`).
    pub base_url: Option<String>,
    /// API key; never printed.
    pub api_key: Option<SecretString>,
    /// Script file for the `scripted` provider; `None` plays the built-in demo.
    pub script: Option<PathBuf>,
    /// Extra headers sent with every request (`--header 'Name: value'`); secret-looking
    /// values are registered for scrubbing when the provider is built.
    pub headers: Vec<CustomHeader>,
    /// OpenAI's `prompt_cache_key` (the session id): `Some(false)` never sends it
    /// (`--no-prompt-cache-key`), `Some(true)` always, `None` decides by server (see
    /// [`ClientConfig::prompt_cache_key`]).
    pub prompt_cache_key: Option<bool>,
    /// Azure OpenAI's `api-version` (`--api-version`).
    pub api_version: Option<String>,
    /// The Google Cloud project of Vertex AI (`--project`).
    pub project: Option<String>,
    /// The region: Vertex AI's location, Amazon Bedrock's AWS region (`--region`).
    pub region: Option<String>,
}

impl ProviderConfig {
    /// A config for `id` with everything else unset.
    pub fn new(id: ProviderId) -> Self {
        Self {
            id,
            model: None,
            base_url: None,
            api_key: None,
            script: None,
            headers: Vec::new(),
            prompt_cache_key: None,
            api_version: None,
            project: None,
            region: None,
        }
    }
}

/// Building a provider failed.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The script file could not be loaded.
    #[error(transparent)]
    Script(#[from] crate::scripted::ScriptError),
    /// A required setting is missing.
    #[error("{0}")]
    Missing(String),
    /// A setting is invalid.
    #[error("{0}")]
    Invalid(String),
}

/// Environment variable holding an Anthropic bearer token, sent as `Authorization: Bearer`
/// (beside `x-api-key` when `ANTHROPIC_API_KEY` or `--api-key` is set too, as the official
/// SDKs do). Claude Code and the Anthropic SDKs read the same variable.
pub const ENV_ANTHROPIC_AUTH_TOKEN: &str = "ANTHROPIC_AUTH_TOKEN";

/// The Gemini API key (Google AI Studio), sent as `x-goog-api-key`.
pub const ENV_GEMINI_API_KEY: &str = "GEMINI_API_KEY";
/// The Gemini API key under the name Google's SDKs also read (after [`ENV_GEMINI_API_KEY`]).
pub const ENV_GOOGLE_API_KEY: &str = "GOOGLE_API_KEY";
/// The Gemini API's base URL (a gateway's; default `https://generativelanguage.googleapis.com`).
pub const ENV_GEMINI_BASE_URL: &str = "GEMINI_BASE_URL";

/// Environment variable overriding [`HttpConfig::idle_timeout`], in milliseconds.
pub const ENV_IDLE_TIMEOUT_MS: &str = "AGENT_SDK_IDLE_TIMEOUT_MS";
/// Environment variable overriding [`HttpConfig::connect_timeout`], in milliseconds.
pub const ENV_CONNECT_TIMEOUT_MS: &str = "AGENT_SDK_CONNECT_TIMEOUT_MS";
/// Environment variable overriding [`HttpConfig::max_retries`].
pub const ENV_MAX_RETRIES: &str = "AGENT_SDK_MAX_RETRIES";
/// Environment variable overriding [`HttpConfig::initial_backoff`], in milliseconds (the
/// backoff cap becomes 16 times that, at most the default cap).
pub const ENV_RETRY_BACKOFF_MS: &str = "AGENT_SDK_RETRY_BACKOFF_MS";

/// [`HttpConfig::default`] with the `AGENT_SDK_*` overrides of the environment applied:
/// [`ENV_IDLE_TIMEOUT_MS`], [`ENV_CONNECT_TIMEOUT_MS`], [`ENV_MAX_RETRIES`] and
/// [`ENV_RETRY_BACKOFF_MS`]. Unset or blank variables keep the default; a value that is not
/// a non-negative integer (or a zero timeout) is a [`ConfigError::Invalid`] naming the
/// variable.
pub fn http_config_from_env(
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<HttpConfig, ConfigError> {
    let number = |name: &str| -> Result<Option<u64>, ConfigError> {
        match env(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
        {
            None => Ok(None),
            Some(v) => v.parse::<u64>().map(Some).map_err(|_| {
                ConfigError::Invalid(format!(
                    "invalid {name} {v:?}: expected a non-negative integer"
                ))
            }),
        }
    };
    let timeout = |name: &str| -> Result<Option<Duration>, ConfigError> {
        match number(name)? {
            Some(0) => Err(ConfigError::Invalid(format!(
                "invalid {name} \"0\": a timeout must be at least 1 ms"
            ))),
            other => Ok(other.map(Duration::from_millis)),
        }
    };
    let mut http = HttpConfig::default();
    if let Some(idle) = timeout(ENV_IDLE_TIMEOUT_MS)? {
        http = http.idle_timeout(idle);
    }
    if let Some(connect) = timeout(ENV_CONNECT_TIMEOUT_MS)? {
        http = http.connect_timeout(connect);
    }
    if let Some(retries) = number(ENV_MAX_RETRIES)? {
        http = http.max_retries(u32::try_from(retries).unwrap_or(u32::MAX));
    }
    if let Some(ms) = number(ENV_RETRY_BACKOFF_MS)? {
        let initial = Duration::from_millis(ms);
        let cap = initial.saturating_mul(16).min(http.max_backoff);
        http = http.backoff(initial, cap);
    }
    Ok(http)
}

/// Builds the provider `config` describes, with default timeouts and retries adjusted by
/// the `AGENT_SDK_*` environment variables (see [`http_config_from_env`]; tests use them
/// to shorten the idle timeout and the retry budget of the binaries).
///
/// Unset fields fall back to the environment: `OPENAI_API_KEY` and `OPENAI_BASE_URL` for
/// `openai` and `openai-responses`, `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL` for
/// `anthropic` (which also sends [`ENV_ANTHROPIC_AUTH_TOKEN`] as a bearer token), then to the
/// vendor's URL and default model
/// ([`crate::catalog::DEFAULT_OPENAI_MODEL`], [`crate::catalog::DEFAULT_ANTHROPIC_MODEL`]).
/// A key is required only by the vendors' own endpoints: an OpenAI-compatible server at
/// another base URL works without one.
pub fn build_provider(config: &ProviderConfig) -> Result<Arc<dyn Provider>, ConfigError> {
    build_provider_on(config, &http_for(config)?)
}

/// The HTTP client [`build_provider`] gives a provider of `config`, not built yet: the
/// default timeouts and retries adjusted by the `AGENT_SDK_*` environment variables
/// ([`http_config_from_env`]). A host building many providers of one config keeps it and
/// builds them with [`build_provider_on`], so that they share its connections.
pub fn http_for(config: &ProviderConfig) -> Result<SharedHttp, ConfigError> {
    let http = match config.id {
        // The scripted provider makes no HTTP calls: its builds never fail on these.
        ProviderId::Scripted => HttpConfig::default(),
        _ => http_config_from_env(&|name| std::env::var(name).ok())?,
    };
    Ok(SharedHttp::new(http))
}

/// [`build_provider`] with explicit timeouts and retry policy.
pub fn build_provider_with(
    config: &ProviderConfig,
    http: &HttpConfig,
) -> Result<Arc<dyn Provider>, ConfigError> {
    build_provider_on(config, &SharedHttp::new(http.clone()))
}

/// [`build_provider`] on a client other providers share ([`SharedHttp`]: its timeouts and
/// retries, its pooled connections): what a host building a provider per session uses, so
/// that a session's first request reuses the connection an earlier one (or the model
/// listing) opened instead of connecting and handshaking again.
pub fn build_provider_on(
    config: &ProviderConfig,
    http: &SharedHttp,
) -> Result<Arc<dyn Provider>, ConfigError> {
    resolve(config, http, &|name| std::env::var(name).ok())
}

/// The environment-independent core of [`build_provider_with`].
fn resolve(
    config: &ProviderConfig,
    http: &SharedHttp,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Provider>, ConfigError> {
    let env = |name: &str| {
        env(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    check_settings(config)?;
    let (key_vars, url_var, default_url, default_model) = match config.id {
        ProviderId::Scripted => {
            let provider = match &config.script {
                Some(path) => ScriptedProvider::from_file(path)?,
                None => ScriptedProvider::demo(),
            };
            return Ok(Arc::new(provider));
        }
        ProviderId::Azure | ProviderId::AzureResponses => return resolve_azure(config, http, &env),
        ProviderId::Vertex => return resolve_vertex(config, http, &env),
        ProviderId::Bedrock => return resolve_bedrock(config, http, &env),
        ProviderId::OpenAi | ProviderId::OpenAiResponses => (
            &["OPENAI_API_KEY"][..],
            "OPENAI_BASE_URL",
            crate::openai::DEFAULT_BASE_URL,
            crate::catalog::DEFAULT_OPENAI_MODEL,
        ),
        ProviderId::Anthropic => (
            &["ANTHROPIC_API_KEY"][..],
            "ANTHROPIC_BASE_URL",
            crate::anthropic::DEFAULT_BASE_URL,
            crate::catalog::DEFAULT_ANTHROPIC_MODEL,
        ),
        ProviderId::Gemini => (
            &[ENV_GEMINI_API_KEY, ENV_GOOGLE_API_KEY][..],
            ENV_GEMINI_BASE_URL,
            crate::gemini::DEFAULT_BASE_URL,
            crate::catalog::DEFAULT_GEMINI_MODEL,
        ),
    };
    let key_var = key_vars.join(" or ");
    let base_url = checked_url(
        config,
        given(&config.base_url)
            .or_else(|| env(url_var))
            .unwrap_or_else(|| default_url.to_string()),
    )?;
    let api_key = given_key(config).or_else(|| {
        key_vars
            .iter()
            .find_map(|var| env(var))
            .map(SecretString::from)
    });
    // Anthropic also takes a bearer token (gateways, OAuth), sent beside any key.
    let auth_token = match config.id {
        ProviderId::Anthropic => env(ENV_ANTHROPIC_AUTH_TOKEN).map(SecretString::from),
        _ => None,
    };
    if api_key.is_none() && auth_token.is_none() && base_url == default_url {
        let token = match config.id {
            ProviderId::Anthropic => format!(" (or {ENV_ANTHROPIC_AUTH_TOKEN})"),
            _ => String::new(),
        };
        return Err(ConfigError::Missing(format!(
            "provider {} needs an API key for {default_url}: pass --api-key or set {key_var}{token}",
            config.id
        )));
    }
    let model = given(&config.model).unwrap_or_else(|| default_model.to_string());
    let client = client_config(config, http, base_url, model, api_key, auth_token);
    Ok(match config.id {
        ProviderId::OpenAi => Arc::new(OpenAiProvider::new(client)),
        ProviderId::OpenAiResponses => Arc::new(OpenAiResponsesProvider::new(client)),
        ProviderId::Gemini => Arc::new(crate::GeminiProvider::new(client)),
        _ => Arc::new(AnthropicProvider::new(client)),
    })
}

/// A non-blank setting, trimmed.
pub(crate) fn given(value: &Option<String>) -> Option<String> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

/// The key of the config, when it is not blank.
pub(crate) fn given_key(config: &ProviderConfig) -> Option<SecretString> {
    config
        .api_key
        .clone()
        .filter(|k| !k.expose_secret().trim().is_empty())
}

/// `url` without a trailing `/`, refused unless it is http(s).
pub(crate) fn checked_url(config: &ProviderConfig, url: String) -> Result<String, ConfigError> {
    let url = url.trim().trim_end_matches('/').to_string();
    match url.starts_with("http://") || url.starts_with("https://") {
        true => Ok(url),
        false => Err(ConfigError::Invalid(format!(
            "invalid base URL {url:?} for provider {}: it must start with http:// or https://",
            config.id
        ))),
    }
}

/// The settings only some providers take must not be given to others (a flag that would
/// silently do nothing).
fn check_settings(config: &ProviderConfig) -> Result<(), ConfigError> {
    let takes = |setting: &Option<String>, flag: &str, ids: &[ProviderId]| match given(setting)
        .is_some()
        && !ids.contains(&config.id)
    {
        true => {
            let names: Vec<&str> = ids.iter().map(|id| id.as_str()).collect();
            Err(ConfigError::Invalid(format!(
                "{flag} is a setting of provider {}, not of {}",
                names.join(" and "),
                config.id
            )))
        }
        false => Ok(()),
    };
    takes(
        &config.api_version,
        "--api-version",
        &[ProviderId::Azure, ProviderId::AzureResponses],
    )?;
    takes(&config.project, "--project", &PROJECT_PROVIDERS)?;
    takes(&config.region, "--region", &REGION_PROVIDERS)?;
    Ok(())
}

/// The providers that take a project.
const PROJECT_PROVIDERS: [ProviderId; 1] = [ProviderId::Vertex];
/// The providers that take a region (location).
const REGION_PROVIDERS: [ProviderId; 2] = [ProviderId::Vertex, ProviderId::Bedrock];

/// The [`ClientConfig`] of `config` with these resolved settings; registers every secret
/// (keys, tokens, secret-looking headers) for scrubbing: a key passed as `--api-key` is
/// visible to tools in /proc/<pid>/cmdline.
pub(crate) fn client_config(
    config: &ProviderConfig,
    http: &SharedHttp,
    base_url: String,
    model: String,
    api_key: Option<SecretString>,
    auth_token: Option<SecretString>,
) -> ClientConfig {
    for secret in api_key.iter().chain(&auth_token) {
        agent_core::secrets::register_secret(secret.expose_secret());
    }
    crate::headers::register_secrets(&config.headers);
    ClientConfig {
        base_url,
        api_key,
        auth_token,
        model,
        http: http.config().clone(),
        headers: config.headers.clone(),
        prompt_cache_key: config.prompt_cache_key,
        shared: Some(http.clone()),
    }
}

/// `azure` and `azure-responses`: endpoint, deployment and credentials are all required.
fn resolve_azure(
    config: &ProviderConfig,
    http: &SharedHttp,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Provider>, ConfigError> {
    use crate::azure;
    let id = config.id;
    let endpoint = given(&config.base_url)
        .or_else(|| env(azure::ENV_ENDPOINT))
        .ok_or_else(|| {
            ConfigError::Missing(format!(
                "provider {id} needs the resource endpoint: pass --base-url \
                 https://RESOURCE.openai.azure.com or set {}",
                azure::ENV_ENDPOINT
            ))
        })?;
    let endpoint = checked_url(config, endpoint)?;
    let deployment = given(&config.model)
        .or_else(|| env(azure::ENV_DEPLOYMENT))
        .ok_or_else(|| {
            ConfigError::Missing(format!(
                "provider {id} needs a deployment: pass --model DEPLOYMENT or set {}",
                azure::ENV_DEPLOYMENT
            ))
        })?;
    let api_key = given_key(config).or_else(|| env(azure::ENV_API_KEY).map(SecretString::from));
    let token = env(azure::ENV_AD_TOKEN).map(SecretString::from);
    if api_key.is_none() && token.is_none() {
        return Err(ConfigError::Missing(format!(
            "provider {id} needs credentials: pass --api-key or set {} (or {}, an Entra ID token)",
            azure::ENV_API_KEY,
            azure::ENV_AD_TOKEN
        )));
    }
    let api_version = given(&config.api_version)
        .or_else(|| env(azure::ENV_API_VERSION))
        .or_else(|| env(azure::ENV_AZURE_API_VERSION))
        .unwrap_or_else(|| azure::DEFAULT_API_VERSION.to_string());
    let client = azure::client(
        client_config(config, http, endpoint, deployment, api_key, token),
        api_version,
    );
    Ok(match id {
        ProviderId::AzureResponses => Arc::new(client.responses()),
        _ => Arc::new(client.chat()),
    })
}

/// `vertex`: location, credentials, then the project (which a credentials file may name).
fn resolve_vertex(
    config: &ProviderConfig,
    http: &SharedHttp,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Provider>, ConfigError> {
    use crate::vertex::{self, auth::Credentials};
    let location = given(&config.region)
        .or_else(|| env(vertex::ENV_LOCATION))
        .or_else(|| env("CLOUD_ML_REGION"))
        .unwrap_or_else(|| vertex::DEFAULT_LOCATION.to_string());
    if !vertex::valid_location(&location) {
        return Err(ConfigError::Invalid(format!(
            "invalid Vertex AI location {location:?}: expected a Google Cloud region such as \
             us-central1, or global"
        )));
    }
    let token = given_key(config).or_else(|| env(vertex::ENV_ACCESS_TOKEN).map(SecretString::from));
    let file = env(vertex::ENV_CREDENTIALS).map(PathBuf::from).or_else(|| {
        let dir = env("CLOUDSDK_CONFIG")
            .map(PathBuf::from)
            .or_else(|| env("HOME").map(|home| PathBuf::from(home).join(".config/gcloud")))?;
        Some(dir.join("application_default_credentials.json")).filter(|f| f.is_file())
    });
    let credentials = match (token, file) {
        (Some(token), _) => Credentials::access_token(token),
        (None, Some(file)) => Credentials::from_file(&file)?,
        (None, None) => {
            return Err(ConfigError::Missing(format!(
                "provider vertex needs Google Cloud credentials: set {} to a service account \
                 key file, run `gcloud auth application-default login`, or pass an access token \
                 with --api-key (or {})",
                vertex::ENV_CREDENTIALS,
                vertex::ENV_ACCESS_TOKEN
            )))
        }
    };
    let project = given(&config.project)
        .or_else(|| {
            [
                vertex::ENV_PROJECT,
                "GCLOUD_PROJECT",
                "CLOUDSDK_CORE_PROJECT",
                "ANTHROPIC_VERTEX_PROJECT_ID",
            ]
            .iter()
            .find_map(|var| env(var))
        })
        .or_else(|| credentials.project().map(str::to_string))
        .ok_or_else(|| {
            ConfigError::Missing(format!(
                "provider vertex needs a Google Cloud project: pass --project or set {}",
                vertex::ENV_PROJECT
            ))
        })?;
    if !project
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b':' | b'_'))
    {
        return Err(ConfigError::Invalid(format!(
            "invalid Google Cloud project {project:?}"
        )));
    }
    let root = match given(&config.base_url) {
        Some(url) => checked_url(config, url)?,
        None => vertex::root(&location),
    };
    let model =
        given(&config.model).unwrap_or_else(|| crate::catalog::DEFAULT_GEMINI_MODEL.to_string());
    let client = client_config(config, http, root, model, None, None);
    Ok(Arc::new(crate::VertexProvider::new(
        client,
        project,
        location,
        credentials,
    )))
}

/// `bedrock`: region and credentials from the flags, the environment or the AWS profile.
fn resolve_bedrock(
    config: &ProviderConfig,
    http: &SharedHttp,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Provider>, ConfigError> {
    use crate::bedrock::{self, credentials};
    let resolved = credentials::resolve(env)?;
    let region = given(&config.region)
        .or(resolved.region.clone())
        .ok_or_else(|| {
            ConfigError::Missing(format!(
                "provider bedrock needs an AWS region: pass --region or set AWS_REGION (or a \
                 region in the profile {} of {})",
                resolved.profile,
                credentials::files_hint(env)
            ))
        })?;
    if !bedrock::valid_region(&region) {
        return Err(ConfigError::Invalid(format!(
            "invalid AWS region {region:?}: expected a region such as us-east-1"
        )));
    }
    let base = match given(&config.base_url) {
        Some(url) => checked_url(config, url)?,
        None => bedrock::endpoint(&region),
    };
    let model = given(&config.model).unwrap_or_else(|| bedrock::DEFAULT_MODEL.to_string());
    let client = client_config(config, http, base, model, None, None);
    let key = given_key(config).or_else(|| env(bedrock::ENV_BEARER_TOKEN).map(SecretString::from));
    Ok(match (key, resolved.credentials) {
        (Some(key), _) => Arc::new(crate::BedrockProvider::with_api_key(client, region, key)),
        (None, Some(credentials)) => {
            Arc::new(crate::BedrockProvider::new(client, region, credentials))
        }
        (None, None) => {
            return Err(ConfigError::Missing(format!(
                "provider bedrock needs AWS credentials: set AWS_ACCESS_KEY_ID and \
                 AWS_SECRET_ACCESS_KEY, give the profile {} keys in {}, or pass a Bedrock API \
                 key with --api-key (or {})",
                resolved.profile,
                credentials::files_hint(env),
                bedrock::ENV_BEARER_TOKEN
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_unknown_ids_are_rejected() {
        for id in ProviderId::ALL {
            assert_eq!(id.as_str().parse::<ProviderId>(), Ok(id));
        }
        let err = "gemeni".parse::<ProviderId>().expect_err("unknown id");
        assert!(err.to_string().contains("unknown provider \"gemeni\""));
    }

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn http_providers_build_from_config_and_environment() {
        let http = SharedHttp::new(HttpConfig::default());
        let env = env_of(&[
            ("OPENAI_API_KEY", "sk-env-openai"),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/"),
        ]);
        for (id, expected) in [
            (ProviderId::OpenAi, "openai"),
            (ProviderId::OpenAiResponses, "openai-responses"),
            (ProviderId::Anthropic, "anthropic"),
        ] {
            let provider = resolve(&ProviderConfig::new(id), &http, &env).expect("builds");
            assert_eq!(provider.id(), expected);
            let first = provider.models().into_iter().next().expect("a model");
            let default = match id {
                ProviderId::Anthropic => crate::catalog::DEFAULT_ANTHROPIC_MODEL,
                _ => crate::catalog::DEFAULT_OPENAI_MODEL,
            };
            assert_eq!(first.id, default, "the default model is listed first");
        }
    }

    #[test]
    fn the_vendor_endpoint_needs_a_key_but_compatible_servers_do_not() {
        let http = SharedHttp::new(HttpConfig::default());
        let none = env_of(&[]);
        let err = resolve(&ProviderConfig::new(ProviderId::Anthropic), &http, &none)
            .err()
            .expect("no key for api.anthropic.com");
        assert!(err.to_string().contains("ANTHROPIC_API_KEY"));
        let err = resolve(&ProviderConfig::new(ProviderId::OpenAi), &http, &none)
            .err()
            .expect("no key for api.openai.com");
        assert!(err.to_string().contains("OPENAI_API_KEY"));

        let mut local = ProviderConfig::new(ProviderId::OpenAi);
        local.base_url = Some("http://127.0.0.1:8080/v1".into());
        local.model = Some("qwen3".into());
        let provider = resolve(&local, &http, &none).expect("no key needed");
        assert_eq!(provider.models()[0].id, "qwen3");

        let env = env_of(&[("OPENAI_BASE_URL", "http://localhost:11434/v1")]);
        resolve(
            &ProviderConfig::new(ProviderId::OpenAiResponses),
            &http,
            &env,
        )
        .expect("env base URL, no key");

        local.base_url = Some("localhost:8080".into());
        let err = resolve(&local, &http, &none).err().expect("no scheme");
        assert!(matches!(err, ConfigError::Invalid(_)));
    }

    #[test]
    fn keys_never_show_in_debug_output() {
        let mut config = ProviderConfig::new(ProviderId::OpenAi);
        config.api_key = Some(SecretString::from("sk-very-secret-key"));
        assert!(!format!("{config:?}").contains("sk-very-secret-key"));
        let provider = resolve(
            &config,
            &SharedHttp::new(HttpConfig::default()),
            &env_of(&[]),
        )
        .expect("builds");
        let debug = format!(
            "{:?}",
            OpenAiProvider::new(
                ClientConfig::new("https://x.invalid", "m").api_key("sk-very-secret-key")
            )
        );
        assert!(!debug.contains("sk-very-secret-key"));
        assert_eq!(provider.id(), "openai");
        // Building registered the key for tool-output scrubbing.
        assert!(agent_core::secrets::registered_secrets()
            .iter()
            .any(|k| k == "sk-very-secret-key"));
    }

    #[test]
    fn http_settings_come_from_the_environment() {
        let http = http_config_from_env(&env_of(&[])).expect("defaults");
        assert_eq!(http, HttpConfig::default());
        let http = http_config_from_env(&env_of(&[
            ("AGENT_SDK_IDLE_TIMEOUT_MS", " 250 "),
            ("AGENT_SDK_CONNECT_TIMEOUT_MS", "100"),
            ("AGENT_SDK_MAX_RETRIES", "0"),
            ("AGENT_SDK_RETRY_BACKOFF_MS", "10"),
        ]))
        .expect("overrides");
        assert_eq!(http.idle_timeout, Duration::from_millis(250));
        assert_eq!(http.connect_timeout, Duration::from_millis(100));
        assert_eq!(http.max_attempts(), 1);
        assert_eq!(http.initial_backoff, Duration::from_millis(10));
        assert_eq!(http.max_backoff, Duration::from_millis(160));
        let err = http_config_from_env(&env_of(&[("AGENT_SDK_MAX_RETRIES", "-1")]))
            .expect_err("negative");
        assert!(err.to_string().contains("AGENT_SDK_MAX_RETRIES"), "{err}");
        let err = http_config_from_env(&env_of(&[("AGENT_SDK_IDLE_TIMEOUT_MS", "0")]))
            .expect_err("zero timeout");
        assert!(err.to_string().contains("at least 1 ms"), "{err}");
    }

    #[test]
    fn anthropic_sends_the_auth_token_from_the_environment() {
        use futures::StreamExt;
        use test_support::{sse, MockModel, Reply};

        let server = MockModel::start([Reply::sse(sse::anthropic::text("ok"))]);
        let url = server.url();
        let env = move |name: &str| match name {
            "ANTHROPIC_AUTH_TOKEN" => Some("tok-env-777".to_string()),
            "ANTHROPIC_BASE_URL" => Some(url.clone()),
            _ => None,
        };
        let provider = resolve(
            &ProviderConfig::new(ProviderId::Anthropic),
            &SharedHttp::new(HttpConfig::default()),
            &env,
        )
        .expect("a token is enough");
        let request = agent_core::provider::ProviderRequest {
            model: String::new(),
            system: None,
            messages: vec![agent_core::Message::user_text("hi")],
            tools: vec![],
            reasoning: Default::default(),
            max_output_tokens: None,
            output_schema: None,
            session_id: None,
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let items: Vec<_> = rt.block_on(async {
            tokio::time::timeout(
                Duration::from_secs(20),
                provider.stream(request).collect::<Vec<_>>(),
            )
            .await
            .expect("in time")
        });
        assert!(items.iter().all(Result::is_ok), "{items:?}");
        let sent = &server.requests()[0];
        assert_eq!(sent.header("authorization"), Some("Bearer tok-env-777"));
        assert_eq!(sent.header("x-api-key"), None);
        assert!(agent_core::secrets::registered_secrets()
            .iter()
            .any(|k| k == "tok-env-777"));

        // The vendor endpoint takes the token instead of a key; OpenAI ignores it.
        let token = env_of(&[("ANTHROPIC_AUTH_TOKEN", "tok-env-777")]);
        let http = SharedHttp::new(HttpConfig::default());
        resolve(&ProviderConfig::new(ProviderId::Anthropic), &http, &token)
            .expect("token instead of key");
        let err = resolve(&ProviderConfig::new(ProviderId::OpenAi), &http, &token)
            .err()
            .expect("OpenAI needs its key");
        assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");
        let err = resolve(
            &ProviderConfig::new(ProviderId::Anthropic),
            &http,
            &env_of(&[]),
        )
        .err()
        .expect("neither key nor token");
        assert!(err.to_string().contains("ANTHROPIC_AUTH_TOKEN"), "{err}");
    }

    #[test]
    fn gemini_takes_either_googles_key_variable() {
        let http = SharedHttp::new(HttpConfig::default());
        let err = resolve(
            &ProviderConfig::new(ProviderId::Gemini),
            &http,
            &env_of(&[]),
        )
        .err()
        .expect("no key for Google");
        assert!(
            err.to_string().contains("GEMINI_API_KEY or GOOGLE_API_KEY"),
            "{err}"
        );
        for var in ["GEMINI_API_KEY", "GOOGLE_API_KEY"] {
            let env = move |name: &str| (name == var).then(|| "AIza-env-0123456789".to_string());
            let provider =
                resolve(&ProviderConfig::new(ProviderId::Gemini), &http, &env).expect(var);
            assert_eq!(provider.id(), "gemini");
            assert_eq!(
                provider.models()[0].id,
                crate::catalog::DEFAULT_GEMINI_MODEL
            );
        }
    }

    #[test]
    fn azure_reads_its_conventional_variables() {
        let env = env_of(&[
            ("AZURE_OPENAI_ENDPOINT", "https://r.openai.azure.com/"),
            ("AZURE_OPENAI_AD_TOKEN", "entra-token-0123456789"),
            ("AZURE_OPENAI_DEPLOYMENT", "prod-4o"),
            ("AZURE_OPENAI_API_VERSION", "2024-10-21"),
        ]);
        let http = SharedHttp::new(HttpConfig::default());
        for (id, name) in [
            (ProviderId::Azure, "azure"),
            (ProviderId::AzureResponses, "azure-responses"),
        ] {
            let provider = resolve(&ProviderConfig::new(id), &http, &env).expect("builds");
            assert_eq!(provider.id(), name);
            assert_eq!(provider.models()[0].id, "prod-4o");
        }
        assert!(agent_core::secrets::registered_secrets()
            .iter()
            .any(|s| s == "entra-token-0123456789"));
        let err = resolve(&ProviderConfig::new(ProviderId::Azure), &http, &env_of(&[]))
            .err()
            .expect("no endpoint");
        assert!(err.to_string().contains("AZURE_OPENAI_ENDPOINT"), "{err}");
    }

    #[test]
    fn vertex_takes_the_project_from_the_key_file_and_the_location_from_the_environment() {
        let key = include_str!("../tests/providers/keys/service-account-test.pem");
        let path = std::env::temp_dir().join(format!("vertex-config-{}.json", std::process::id()));
        let shown = path.display().to_string();
        let env = move |name: &str| match name {
            "GOOGLE_APPLICATION_CREDENTIALS" => Some(shown.clone()),
            "CLOUD_ML_REGION" => Some("us-east5".to_string()),
            _ => None,
        };
        let http = SharedHttp::new(HttpConfig::default());
        let vertex = ProviderConfig::new(ProviderId::Vertex);
        // Without a project anywhere, the file's is missing too.
        let file = serde_json::json!({"type": "service_account",
            "private_key": key, "client_email": "a@b.iam.gserviceaccount.com"});
        std::fs::write(&path, file.to_string()).expect("write");
        let err = resolve(&vertex, &http, &env).err().expect("no project");
        assert!(err.to_string().contains("--project"), "{err}");
        let mut file = file;
        file["project_id"] = "from-file".into();
        std::fs::write(&path, file.to_string()).expect("write");
        let provider = resolve(&vertex, &http, &env).expect("the file's project");
        assert_eq!(provider.id(), "vertex");
        let _ = std::fs::remove_file(&path);
        let err = resolve(
            &ProviderConfig::new(ProviderId::Vertex),
            &http,
            &env_of(&[("HOME", "/nonexistent")]),
        )
        .err()
        .expect("no credentials");
        assert!(
            err.to_string().contains("GOOGLE_APPLICATION_CREDENTIALS"),
            "{err}"
        );
    }

    #[test]
    fn bedrock_names_what_is_missing() {
        let http = SharedHttp::new(HttpConfig::default());
        let bedrock = ProviderConfig::new(ProviderId::Bedrock);
        let err = resolve(&bedrock, &http, &env_of(&[("HOME", "/nonexistent")]))
            .err()
            .expect("no region");
        assert!(err.to_string().contains("AWS_REGION"), "{err}");
        let env = env_of(&[("HOME", "/nonexistent"), ("AWS_REGION", "us-west-2")]);
        let err = resolve(&bedrock, &http, &env)
            .err()
            .expect("no credentials");
        assert!(err.to_string().contains("AWS_ACCESS_KEY_ID"), "{err}");
        let err = resolve(
            &bedrock,
            &http,
            &env_of(&[("AWS_REGION", "us-west-2"), ("AWS_ACCESS_KEY_ID", "AKID")]),
        )
        .err()
        .expect("half a key");
        assert!(err.to_string().contains("AWS_SECRET_ACCESS_KEY"), "{err}");
        let env = env_of(&[
            ("HOME", "/nonexistent"),
            ("AWS_DEFAULT_REGION", "eu-north-1"),
            ("AWS_ACCESS_KEY_ID", "AKID"),
            ("AWS_SECRET_ACCESS_KEY", "secret-0123456789"),
        ]);
        let provider = resolve(&bedrock, &http, &env).expect("keys and a region");
        assert_eq!(provider.id(), "bedrock");
        assert!(agent_core::secrets::registered_secrets()
            .iter()
            .any(|s| s == "secret-0123456789"));
    }

    #[test]
    fn scripted_without_a_script_plays_the_demo() {
        let provider = build_provider(&ProviderConfig::new(ProviderId::Scripted)).expect("demo");
        assert_eq!(provider.id(), "scripted");
    }
}
