//! Google Gemini: the Gemini API (`POST {base_url}/v1beta/models/{model}:streamGenerateContent
//! ?alt=sse`, key in `x-goog-api-key`), whose request and stream formats Vertex AI shares
//! ([`crate::vertex`] reuses `request` and `streaming`).
//!
//! - Text, thought summaries (`thought: true` parts, asked for with `includeThoughts`) and
//!   function calls, several per turn (parallel). Gemini sends each call whole; a call
//!   without an `id` gets one of ours.
//! - Thought signatures: a `thoughtSignature` on any part is kept in the assistant message
//!   (a reasoning block whose `opaque` is `{"type": "gemini_signature", "thoughtSignature",
//!   "callId"?}`, or a thought summary's `{"type": "gemini_thought", "thoughtSignature"}`)
//!   and sent back on the same part of the next request, as Gemini 3 requires for function
//!   calls. Calls from another provider's history get Google's documented placeholder.
//! - Usage from `usageMetadata`: `cachedContentTokenCount` as cache reads (taken out of the
//!   prompt count, which includes it), `thoughtsTokenCount` as reasoning (inside output).
//! - Structured output: `generationConfig.responseMimeType: application/json` with the
//!   schema as `responseJsonSchema` (JSON Schema as given; `responseSchema` takes only an
//!   OpenAPI subset). Tools are declared with `parametersJsonSchema` for the same reason.
//! - Images as `inlineData`; tool results as `functionResponse` (`{"output": …}` or
//!   `{"error": …}`), images a tool returned following as `inlineData` parts.
//! - Reasoning: `thinkingConfig.thinkingLevel` (Gemini 3) or `thinkingBudget` (Gemini 2.5)
//!   from the catalogue, with `includeThoughts`.
//! - Errors: Google's `{"error": {"code", "message", "status", "details"}}`, read by status
//!   name (`RESOURCE_EXHAUSTED`, `UNAVAILABLE`, an `API_KEY_INVALID` reason, …) with the
//!   wait of a `RetryInfo` detail honoured like `retry-after`.

pub(crate) mod client;
pub(crate) mod errors;
pub(crate) mod request;
pub(crate) mod streaming;

pub use client::GeminiProvider;

/// Default base URL (`GEMINI_BASE_URL` overrides it in [`crate::build_provider`]).
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";

/// The API version path the Gemini API is called under.
pub const API_VERSION: &str = "v1beta";
