//! In-process examples of the agent SDK; run one with `cargo run -p examples --example NAME`.
//! All of them run offline on the scripted provider; `examples/README.md` lists them, and
//! `tests/examples.rs` runs each one.
//!
//! - `demo`: an agent on the scripted demo provider, printing every event as JSON, offline.
//! - `custom_tool`: a typed tool of your own made from an async function (`tool_fn`), and
//!   an approver that answers permission prompts in code.
//! - `structured_output`: typed answers with `Agent::prompt_as` (and its repair turn), and a
//!   run to the end without the stream with `Agent::run`.
//! - `run_to_end`: `Agent::run` and `Run::finish`, a `RunOutcome` with status, answer, usage
//!   and messages, and a failed run as an outcome.
//! - `mcp`: an MCP server's tools as agent tools (`agent-mcp`).
//! - `hooks`: a typed `Hooks` implementation vetoing a call, and command hooks from a
//!   `hooks.json` file (`agent-hooks`).
//! - `subagents`: a specialist from a markdown manifest, run through the `Task` tool
//!   (`agent-specialists`).
//! - `sandbox`: a `bash` call confined to the workspace by the OS sandbox.
//! - `context_budget`: context usage, automatic compaction, and pinned notes that survive it.

/// The Rust code blocks of every crate's `README.md`, compiled and run as doc tests
/// (`cargo test -p examples --doc`), so the READMEs stay true to the API.
#[cfg(doctest)]
mod readmes {
    #[doc = include_str!("../agent-core/README.md")]
    mod agent_core {}
    #[doc = include_str!("../agent-providers/README.md")]
    mod agent_providers {}
    #[doc = include_str!("../agent-tools/README.md")]
    mod agent_tools {}
    #[doc = include_str!("../agent-hooks/README.md")]
    mod agent_hooks {}
    #[doc = include_str!("../agent-specialists/README.md")]
    mod agent_specialists {}
    #[doc = include_str!("../agent-sandbox/README.md")]
    mod agent_sandbox {}
    #[doc = include_str!("../agent-mcp/README.md")]
    mod agent_mcp {}
    #[doc = include_str!("../agent-otel/README.md")]
    mod agent_otel {}
    #[doc = include_str!("../agent-host/README.md")]
    mod agent_host {}
    #[doc = include_str!("../adapter-stream-json/README.md")]
    mod adapter_stream_json {}
    #[doc = include_str!("../adapter-rpc/README.md")]
    mod adapter_rpc {}
    #[doc = include_str!("../adapter-acp/README.md")]
    mod adapter_acp {}
    #[doc = include_str!("README.md")]
    mod examples {}
}
