//! Choosing and configuring a provider: the ids every command line of this project
//! accepts (`--provider ID --model M --base-url URL --api-key KEY`).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use agent_core::Provider;
use secrecy::SecretString;

use crate::scripted::ScriptedProvider;

/// The provider ids, the same on every command line and config of this project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderId {
    /// OpenAI Chat Completions and every OpenAI-compatible server (`openai`).
    OpenAi,
    /// OpenAI Responses (`openai-responses`).
    OpenAiResponses,
    /// Anthropic Messages (`anthropic`).
    Anthropic,
    /// The scripted provider reading a script file (`scripted`).
    Scripted,
}

impl ProviderId {
    /// Every id.
    pub const ALL: [ProviderId; 4] = [
        Self::OpenAi,
        Self::OpenAiResponses,
        Self::Anthropic,
        Self::Scripted,
    ];

    /// The id as written on command lines.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::OpenAiResponses => "openai-responses",
            Self::Anthropic => "anthropic",
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
#[error("unknown provider {0:?}: expected openai, openai-responses, anthropic or scripted")]
pub struct ParseProviderIdError(pub String);

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
/// `ANTHROPIC_BASE_URL`) and then to the vendor defaults.
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

/// Builds the provider `config` describes.
pub fn build_provider(config: &ProviderConfig) -> Result<Arc<dyn Provider>, ConfigError> {
    match config.id {
        ProviderId::Scripted => {
            let provider = match &config.script {
                Some(path) => ScriptedProvider::from_file(path)?,
                None => ScriptedProvider::demo(),
            };
            Ok(Arc::new(provider))
        }
        other => Err(ConfigError::Invalid(format!(
            "provider {other} is not available in this build yet"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_unknown_ids_are_rejected() {
        for id in ProviderId::ALL {
            assert_eq!(id.as_str().parse::<ProviderId>(), Ok(id));
        }
        let err = "gemini".parse::<ProviderId>().expect_err("unknown id");
        assert!(err.to_string().contains("unknown provider \"gemini\""));
    }

    #[test]
    fn scripted_without_a_script_plays_the_demo() {
        let provider = build_provider(&ProviderConfig::new(ProviderId::Scripted)).expect("demo");
        assert_eq!(provider.id(), "scripted");
    }
}
