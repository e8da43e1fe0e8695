//! Model providers for [`agent_core`].
//!
//! - [`config`]: provider ids and [`build_provider`], shared by every command line.
//! - [`scripted`]: replays a script of model turns; used by every test and the offline demo.
//!
//! The HTTP providers (OpenAI Chat Completions and every OpenAI-compatible server, OpenAI
//! Responses, Anthropic Messages) will live here too, one module each.

#![warn(missing_docs)]

pub mod config;
pub mod scripted;

pub use config::{build_provider, ConfigError, ProviderConfig, ProviderId};
pub use scripted::ScriptedProvider;
