//! The OpenAI Responses provider under its former path; it lives in
//! [`crate::openai::responses`] beside Chat Completions, on the one [`crate::openai::OpenAiClient`].

pub use crate::openai::responses::OpenAiResponsesProvider;
