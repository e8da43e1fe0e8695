//! OpenAI Responses (`POST {base_url}/responses`, streamed, `store: false`).
//!
//! Text, reasoning summaries, function calls with their `call_id`, and usage become
//! [`agent_core::ProviderEvent`]s. Each reasoning item (with its `encrypted_content`,
//! requested through `include`) is handed to the agent in
//! [`agent_core::ProviderEvent::ReasoningEnd`]'s `opaque` and sent back verbatim in the
//! next request, as the API requires for reasoning models calling tools.

mod client;
pub(crate) mod completion;
pub(crate) mod streaming;

pub use client::OpenAiResponsesProvider;
