//! Integration tests of the HTTP providers against a real HTTP server on 127.0.0.1.

mod common;

mod anthropic;
mod azure;
mod bedrock;
mod end_to_end;
mod fixtures;
mod gemini;
mod headers;
mod http_behaviour;
mod models;
mod openai_chat;
mod openai_responses;
mod structured_output;
mod vertex;
