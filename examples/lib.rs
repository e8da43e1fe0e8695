//! In-process examples of the agent SDK; run one with `cargo run -p examples --example NAME`.
//!
//! - `demo`: an agent on the scripted demo provider, printing every event as JSON, offline.
//! - `custom_tool`: a tool of your own and an approver that answers permission prompts in code.
