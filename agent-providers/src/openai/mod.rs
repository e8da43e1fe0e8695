//! OpenAI: one [`OpenAiClient`] serving two APIs.
//!
//! - [`chat`]: Chat Completions (`POST {base_url}/chat/completions`), which also serves every
//!   OpenAI-compatible server by base URL: Ollama, llama.cpp server, vLLM, LM Studio,
//!   OpenRouter, DeepSeek, Groq, LiteLLM. Text, reasoning (`reasoning_content` or
//!   `reasoning`), tool calls streamed by index, `finish_reason` and usage (with cached prompt
//!   and reasoning tokens, requested through `stream_options.include_usage`).
//! - [`responses`]: Responses (`POST {base_url}/responses`, `store: false`). Text, reasoning
//!   summaries, function calls with their `call_id`, usage, and reasoning items replayed
//!   verbatim.
//!
//! Both stream, send `Authorization: Bearer` only when a key is set (local servers need
//! none), take `reasoning_effort` for the catalogue's reasoning models, and ask for
//! structured output when the request carries an [`agent_core::provider::OutputSchema`] (Chat
//! `response_format: {type: "json_schema", json_schema: {name, schema, strict}}`, Responses
//! `text.format: {type: "json_schema", name, schema, strict}`).

pub mod chat;
pub(crate) mod client;
pub mod responses;

pub use chat::OpenAiProvider;
pub use client::OpenAiClient;
pub use responses::OpenAiResponsesProvider;

/// Default base URL (`OPENAI_BASE_URL` overrides it in [`crate::build_provider`]).
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
