//! Model providers for [`agent_core`].
//!
//! - [`config`]: provider ids and [`build_provider`], shared by every command line.
//! - [`openai`]: one OpenAI client serving Chat Completions (and every OpenAI-compatible
//!   server: Ollama, llama.cpp, vLLM, LM Studio, OpenRouter, DeepSeek, Groq, …) and the
//!   Responses API ([`openai_responses`] keeps the Responses provider's former path).
//! - [`anthropic`]: the Anthropic Messages API.
//! - [`azure`]: Azure OpenAI (Chat Completions and Responses on the [`openai`] client).
//! - [`bedrock`]: Amazon Bedrock's Converse stream API (SigV4, binary event stream).
//! - [`gemini`]: the Gemini API (`streamGenerateContent`), whose formats Vertex AI shares.
//! - [`vertex`]: Vertex AI (Gemini and Anthropic models, Google Cloud credentials).
//! - [`scripted`]: replays a script of model turns; used by every test and the offline demo.
//! - [`http`]: the HTTP layer the three APIs share: timeouts, retries with jittered
//!   exponential backoff (before the first byte of a response only), error mapping.
//! - [`catalog`]: the model catalogue (context windows, output limits, prices).
//! - [`models`]: the models an API lists (`GET /models`) for a model picker
//!   ([`agent_core::Provider::list_models`]).
//!
//! [`build_provider`] reads four optional overrides of the HTTP settings from the
//! environment, so hosts and tests can tune the binaries without new flags:
//! `AGENT_SDK_IDLE_TIMEOUT_MS`, `AGENT_SDK_CONNECT_TIMEOUT_MS`, `AGENT_SDK_MAX_RETRIES` and
//! `AGENT_SDK_RETRY_BACKOFF_MS` (see [`http_config_from_env`]).
//! - [`replay`]: decoding recorded streaming bodies without HTTP (benchmarks, replays).
//!
//! Every adapter builds its provider with [`build_provider`]:
//!
//! ```no_run
//! use agent_providers::{build_provider, ProviderConfig, ProviderId};
//!
//! let mut config = ProviderConfig::new(ProviderId::OpenAi);
//! config.base_url = Some("http://127.0.0.1:8080/v1".into()); // a llama.cpp server, no key
//! config.model = Some("qwen3".into());
//! let provider = build_provider(&config).expect("valid config");
//! # let _ = provider;
//! ```

#![warn(missing_docs)]

pub mod anthropic;
pub mod azure;
pub mod bedrock;
pub mod catalog;
pub mod config;
pub mod gemini;
pub mod headers;
pub mod http;
pub mod models;
mod opaque;
pub mod openai;
pub mod openai_responses;
pub mod replay;
pub mod scripted;
mod sse;
mod transcript;
pub mod vertex;

pub use anthropic::AnthropicProvider;
pub use bedrock::BedrockProvider;
pub use config::{
    build_provider, build_provider_on, build_provider_with, http_config_from_env, http_for,
    ConfigError, ProviderConfig, ProviderId,
};
pub use gemini::GeminiProvider;
pub use headers::CustomHeader;
pub use http::{ClientConfig, HttpConfig, SharedHttp};
pub use openai::{OpenAiClient, OpenAiProvider, OpenAiResponsesProvider};
pub use scripted::ScriptedProvider;
pub use vertex::VertexProvider;
