//! In-process examples of the agent SDK; run one with `cargo run -p examples --example NAME`.
//!
//! - `demo`: an agent on the scripted demo provider, printing every event as JSON, offline.
//! - `custom_tool`: a typed tool of your own made from an async function (`tool_fn`), and
//!   an approver that answers permission prompts in code.
//! - `structured_output`: typed answers with `Agent::prompt_as` (and its repair turn), and a
//!   run to the end without the stream with `Agent::run`.
