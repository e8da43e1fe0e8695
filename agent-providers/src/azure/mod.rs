//! Azure OpenAI: the OpenAI client (`crate::openai`) with Azure's URLs and credentials, so
//! Chat Completions and Responses behave exactly as they do against OpenAI.
//!
//! - Chat Completions (`azure`): `POST {endpoint}/openai/deployments/{deployment}/chat/
//!   completions?api-version={version}`.
//! - Responses (`azure-responses`): the v1 API, `POST {endpoint}/openai/v1/responses` with the
//!   deployment as `model`.
//! - Credentials: an API key in the `api-key` header ([`ClientConfig::api_key`]), or a
//!   Microsoft Entra ID token as `Authorization: Bearer` ([`ClientConfig::auth_token`]).
//! - The model is the deployment name; its catalogue entry is the OpenAI model of that
//!   name (a deployment named otherwise runs with default limits and no price).
//!
//! Environment (in [`crate::build_provider`]): [`ENV_ENDPOINT`], [`ENV_API_KEY`],
//! [`ENV_AD_TOKEN`], [`ENV_DEPLOYMENT`], and the API version from [`ENV_API_VERSION`] (what
//! OpenAI's SDKs read for Azure) or [`ENV_AZURE_API_VERSION`].

use crate::http::ClientConfig;
use crate::openai::client::Service;
use crate::openai::OpenAiClient;

/// The resource endpoint, `https://RESOURCE.openai.azure.com`.
pub const ENV_ENDPOINT: &str = "AZURE_OPENAI_ENDPOINT";
/// The resource's API key.
pub const ENV_API_KEY: &str = "AZURE_OPENAI_API_KEY";
/// A Microsoft Entra ID access token (sent as a bearer token).
pub const ENV_AD_TOKEN: &str = "AZURE_OPENAI_AD_TOKEN";
/// The deployment name, when `--model` gives none.
pub const ENV_DEPLOYMENT: &str = "AZURE_OPENAI_DEPLOYMENT";
/// The API version, as OpenAI's SDKs name it.
pub const ENV_API_VERSION: &str = "OPENAI_API_VERSION";
/// The API version under Azure's own name (after [`ENV_API_VERSION`]).
pub const ENV_AZURE_API_VERSION: &str = "AZURE_OPENAI_API_VERSION";
/// The `api-version` used when none is given: one that takes `reasoning_effort`,
/// `max_completion_tokens` and `json_schema` response formats.
pub const DEFAULT_API_VERSION: &str = "2025-04-01-preview";

/// An Azure OpenAI client: [`OpenAiClient::chat`] gives the `azure` provider,
/// [`OpenAiClient::responses`] the `azure-responses` one.
///
/// ```no_run
/// use agent_providers::{azure, ClientConfig};
///
/// let client = azure::client(
///     ClientConfig::new("https://my-resource.openai.azure.com", "gpt-4o-prod").api_key("…"),
///     azure::DEFAULT_API_VERSION,
/// );
/// let chat = client.chat();
/// # let _ = chat;
/// ```
pub fn client(config: ClientConfig, api_version: impl Into<String>) -> OpenAiClient {
    OpenAiClient::with_service(
        config,
        Service::Azure {
            api_version: api_version.into(),
        },
    )
}

/// The resource's root: the endpoint without a trailing `/`, `/openai` or `/openai/v1`.
fn root(endpoint: &str) -> &str {
    let endpoint = endpoint.trim_end_matches('/');
    endpoint
        .strip_suffix("/openai/v1")
        .or_else(|| endpoint.strip_suffix("/openai"))
        .unwrap_or(endpoint)
}

/// `deployment` as one URL path segment.
fn segment(deployment: &str) -> String {
    let mut out = String::with_capacity(deployment.len());
    for byte in deployment.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// The Chat Completions URL of `deployment`.
pub(crate) fn chat_url(endpoint: &str, deployment: &str, api_version: &str) -> String {
    format!(
        "{}/openai/deployments/{}/chat/completions?api-version={}",
        root(endpoint),
        segment(deployment),
        segment(api_version)
    )
}

/// The v1 Responses URL.
pub(crate) fn responses_url(endpoint: &str) -> String {
    format!("{}/openai/v1/responses", root(endpoint))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_take_the_endpoint_in_any_of_its_written_forms() {
        for endpoint in [
            "https://r.openai.azure.com",
            "https://r.openai.azure.com/",
            "https://r.openai.azure.com/openai",
            "https://r.openai.azure.com/openai/v1/",
        ] {
            assert_eq!(
                chat_url(endpoint, "gpt-4o prod", "2024-10-21"),
                "https://r.openai.azure.com/openai/deployments/gpt-4o%20prod/chat/completions?api-version=2024-10-21"
            );
            assert_eq!(
                responses_url(endpoint),
                "https://r.openai.azure.com/openai/v1/responses"
            );
        }
    }
}
