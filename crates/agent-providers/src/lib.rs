//! Model providers for [`agent_core`].
//!
//! - [`scripted`]: replays a script of model turns; used by every test and the offline demo.
//!
//! The HTTP providers (OpenAI Chat Completions and every OpenAI-compatible server, OpenAI
//! Responses, Anthropic Messages) will live here too, one module each.

#![warn(missing_docs)]

pub mod scripted;

pub use scripted::ScriptedProvider;
