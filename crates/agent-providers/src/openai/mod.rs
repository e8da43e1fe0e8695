//! OpenAI Chat Completions (`POST {base_url}/chat/completions`, streamed), which also
//! serves every OpenAI-compatible server by base URL: Ollama, llama.cpp server, vLLM,
//! LM Studio, OpenRouter, DeepSeek, Groq, LiteLLM. No API key is sent when none is set.
//!
//! Text, reasoning (`reasoning_content` or `reasoning`), tool calls streamed by index,
//! `finish_reason` and usage (with cached prompt and reasoning tokens, requested through
//! `stream_options.include_usage`) become [`agent_core::ProviderEvent`]s.

mod client;
pub(crate) mod completion;
pub(crate) mod streaming;

pub use client::OpenAiProvider;

/// Default base URL (`OPENAI_BASE_URL` overrides it in [`crate::build_provider`]).
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
