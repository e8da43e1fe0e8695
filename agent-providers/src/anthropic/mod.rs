//! Anthropic Messages (`POST {base_url}/v1/messages`, streamed).
//!
//! Text, extended thinking (sent back with its signature on the next request; redacted
//! thinking is carried verbatim), `tool_use` with streamed JSON input, and usage with
//! `cache_read_input_tokens` and `cache_creation_input_tokens` (merged from
//! `message_start` and `message_delta` into one usage event). The system prompt and the
//! newest message carry prompt-cache breakpoints; images go as base64 blocks; `max_tokens`
//! comes from the request or the model catalogue.

mod client;
pub(crate) mod request;
pub(crate) mod streaming;

pub use client::AnthropicProvider;

/// Default base URL (`ANTHROPIC_BASE_URL` overrides it in [`crate::build_provider`]).
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header sent with every request.
pub const API_VERSION: &str = "2023-06-01";
