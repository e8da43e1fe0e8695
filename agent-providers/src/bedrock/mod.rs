//! Amazon Bedrock: the Converse stream API (`POST {endpoint}/model/{modelId}/converse-stream`),
//! signed with SigV4 by the AWS signing crate (`aws-sigv4`), its binary event-stream answer
//! decoded by `aws-smithy-eventstream` (frame lengths and both CRCs checked).
//!
//! - Text, reasoning (`reasoningContent` text with its signature, or redacted content, sent
//!   back on the next turn as Claude requires), tool use with streamed JSON input, images,
//!   and usage with cache reads and writes.
//! - Reasoning for Claude models: `additionalModelRequestFields.thinking` with a budget from
//!   the catalogue (Bedrock's Claude ids, `us.anthropic.claude-sonnet-4-5-20250929-v1:0`,
//!   resolve to Anthropic's entries).
//! - Structured output: a tool named after the schema that the model is made to call, its
//!   input streamed out as the answer (as for Anthropic).
//! - Credentials ([`credentials`]): a Bedrock API key (`--api-key` or
//!   [`ENV_BEARER_TOKEN`]) as a bearer token; else `AWS_ACCESS_KEY_ID`,
//!   `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`; else the profile (`AWS_PROFILE`, else
//!   `default`) of the shared credentials and config files (`AWS_SHARED_CREDENTIALS_FILE`,
//!   `AWS_CONFIG_FILE`, else `~/.aws/credentials` and `~/.aws/config`).
//! - Region: `--region`, `AWS_REGION`, `AWS_DEFAULT_REGION`, else the profile's; the
//!   endpoint is `https://bedrock-runtime.{region}.amazonaws.com` unless a base URL is given.
//! - Errors: the `x-amzn-errortype` of an error answer (`ExpiredTokenException`,
//!   `InvalidSignatureException`, `ThrottlingException`, `ValidationException`,
//!   `ResourceNotFoundException`, …) with its message; exception messages inside the stream
//!   (`throttlingException`, `modelStreamErrorException`, …); a frame whose CRC is wrong, a
//!   stream cut before `messageStop`.

mod client;
pub mod credentials;
pub(crate) mod request;
pub(crate) mod streaming;

pub use client::BedrockProvider;

/// A Bedrock API key, sent as a bearer token instead of a SigV4 signature.
pub const ENV_BEARER_TOKEN: &str = "AWS_BEARER_TOKEN_BEDROCK";
/// The default model: Claude Sonnet 4.5 through the global cross-region inference profile.
pub const DEFAULT_MODEL: &str = "global.anthropic.claude-sonnet-4-5-20250929-v1:0";
/// The SigV4 service name of the Bedrock runtime.
pub const SERVICE: &str = "bedrock";

/// The runtime endpoint of `region`.
pub fn endpoint(region: &str) -> String {
    format!("https://bedrock-runtime.{region}.amazonaws.com")
}

/// Whether `region` is written as AWS regions are (`us-east-1`): it becomes a host name.
pub fn valid_region(region: &str) -> bool {
    crate::vertex::valid_location(region) && region != "global"
}

/// The Anthropic model id behind a Bedrock model id (`us.anthropic.claude-sonnet-4-5-
/// 20250929-v1:0` → `claude-sonnet-4-5-20250929`), if it is a Claude model.
pub fn anthropic_id(model: &str) -> Option<&str> {
    let start = model.find("anthropic.")? + "anthropic.".len();
    let id = &model[start..];
    let id = match id.rfind("-v") {
        Some(at)
            if id[at + 2..]
                .split(':')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())) =>
        {
            &id[..at]
        }
        _ => id,
    };
    id.starts_with("claude").then_some(id)
}

/// A model id without its cross-region inference profile prefix (`us.`, `eu.`, `apac.`,
/// `global.`, …: a short lower-case word before the provider's name).
pub(crate) fn without_geo(model: &str) -> &str {
    match model.split_once('.') {
        Some((geo, rest)) if geo.len() <= 6 && rest.contains('.') => rest,
        _ => model,
    }
}

/// Whether Bedrock's model id names a regional (not `global.`) endpoint.
pub(crate) fn regional(model: &str) -> bool {
    !model.starts_with("global.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bedrock_ids_resolve_to_anthropics() {
        assert_eq!(
            anthropic_id("us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
            Some("claude-sonnet-4-5-20250929")
        );
        assert_eq!(
            anthropic_id("anthropic.claude-3-5-haiku-20241022-v1:0"),
            Some("claude-3-5-haiku-20241022")
        );
        assert_eq!(
            anthropic_id("anthropic.claude-opus-4-1"),
            Some("claude-opus-4-1")
        );
        assert_eq!(anthropic_id("amazon.nova-pro-v1:0"), None);
        assert!(valid_region("eu-central-1"));
        assert!(!valid_region("eu central"));
        assert!(!valid_region("global"));
    }
}
