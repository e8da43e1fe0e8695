//! The engine of a coding agent.
//!
//! An [`Agent`] owns a transcript and runs the loop: a model turn through a [`Provider`],
//! the tool calls it asks for through the permission gate (with an optional [`Approver`]),
//! their results, and the next turn, until the model answers. Every step is reported as an
//! [`AgentEvent`] on the [`Run`] stream that [`Agent::prompt`] returns; that one event model
//! is what the protocol front ends of this project serialise.
//!
//! This crate depends on no provider, tool or protocol crate: models plug in through the
//! [`Provider`] trait, tools through [`Tool`], hosts answer permission prompts through
//! [`Approver`] and persist transcripts through [`session::SessionStore`].
//!
//! # Example
//!
//! An agent on the scripted provider (from `agent-providers`) with a typed tool made from
//! an async function ([`tool_fn`]): the model calls it, then answers.
//!
//! ```
//! use agent_core::{tool_fn, Agent, AgentEvent, ToolContext, ToolError};
//! use agent_providers::scripted::{ScriptedProvider, Turn};
//! use futures::StreamExt;
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! /// Arguments of `greet`; doc comments become the schema's descriptions.
//! #[derive(Deserialize, JsonSchema)]
//! struct GreetArgs {
//!     /// Who to greet.
//!     name: String,
//!     /// A title to put before the name, if any.
//!     title: Option<String>,
//! }
//!
//! async fn greet(args: GreetArgs, _ctx: ToolContext) -> Result<String, ToolError> {
//!     let title = args.title.map(|t| format!("{t} ")).unwrap_or_default();
//!     Ok(format!("Hello, {title}{}!", args.name))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let provider = ScriptedProvider::new([
//!     Turn::new().tool_call("call_1", "greet", r#"{"name":"Ada","title":null}"#),
//!     Turn::new().text("I greeted Ada."),
//! ]);
//! let agent = Agent::builder(provider)
//!     .tool(tool_fn("greet", "Greets someone by name.", greet))
//!     .build();
//!
//! // Stream the run's events…
//! let mut run = agent.prompt("Say hello to Ada.");
//! let mut answer = String::new();
//! while let Some(event) = run.next().await {
//!     match event {
//!         AgentEvent::TextDelta { delta } => answer.push_str(&delta),
//!         AgentEvent::ToolResult { content, .. } => println!("tool said {content:?}"),
//!         AgentEvent::RunFinished { status, .. } => println!("finished: {status:?}"),
//!         _ => {}
//!     }
//! }
//! assert_eq!(answer, "I greeted Ada.");
//! assert_eq!(agent.messages().len(), 4); // user, assistant (call), tool result, assistant
//! assert_eq!(agent.messages()[2].content[0], agent_core::ContentBlock::ToolResult {
//!     call_id: "call_1".into(),
//!     is_error: false,
//!     content: vec![agent_core::ContentBlock::text("Hello, Ada!")],
//! });
//! # }
//! ```
//!
//! A caller that only wants the answer uses [`Agent::run`] (or [`Run::finish`]); one that
//! wants typed data uses [`Agent::prompt_as`]. An agent can delegate to another as a
//! sub-agent ([`Agent::as_tool`], [`subagent`]).
//!
//! # Where things are
//!
//! What a newcomer needs first is at the root: [`Agent`], its [`AgentBuilder`] and the
//! [`Run`] a prompt returns (or its [`RunOutcome`]); the [`AgentEvent`]s a run streams;
//! the [`Provider`] a model plugs in through; [`Tool`] (with [`ToolContext`],
//! [`ToolOutput`], [`ToolError`], [`SideEffect`], [`Permission`], [`tool_fn`] and
//! [`macro@async_trait`] to implement it); [`Approver`] and [`PermissionMode`]; [`Message`],
//! [`ContentBlock`], [`UserInput`] and [`Usage`]. Builder methods that keep a trait object
//! take it owned or shared ([`IntoArc`]). A built agent's settings (model, reasoning,
//! permission mode, approver, hooks, …) change between runs through one
//! [`AgentUpdate`] ([`Agent::update`]).
//!
//! Everything else lives in the module of its area:
//!
//! | Module | What is there |
//! |---|---|
//! | [`event`] | the types inside [`AgentEvent`] ([`event::ToolStatus`], [`event::StopReason`], …) and the order of a run's events |
//! | [`provider`] | what implementing a [`Provider`] takes: [`provider::ProviderRequest`], [`provider::ProviderEvent`], [`provider::ProviderError`], model catalogue entries |
//! | [`tool`] | plans, progress reports ([`tool::ProgressSink`]), [`tool::ToolWrapper`] for a tool that wraps another, [`tool::FnTool`] |
//! | [`tool_source`] | [`tool_source::ToolSource`]: tools that change between model calls (MCP) |
//! | [`permission`] | the permission gate: assessments, risks, blocks, [`permission::ApprovalRequest`] and [`permission::Approval`]; allow / ask / deny rules ([`permission::rules`]) |
//! | [`budget`], [`fallback`], [`rewind`] | unattended runs: the spend cap, the fallback model, file checkpoints and rewinding to one |
//! | [`hooks`] | lifecycle hooks ([`hooks::Hooks`]) and their decisions |
//! | [`sandbox`] | the OS sandbox policy, its support and report |
//! | [`editor`] | the text buffers and terminals a client (an editor) lends the tools |
//! | [`session`] | transcripts persisted through [`session::SessionStore`] |
//! | [`subagent`] | sub-agents, foreground and background |
//! | [`context`], [`compaction`], [`spill`], [`notes`] | the context window, compaction, over-budget tool output, pinned notes |
//! | [`structured`], [`schema`] | structured answers and the strict JSON schemas of tools |
//! | [`secrets`], [`telemetry`], [`message`], [`usage`] | secret scrubbing, tracing spans, the rest of the transcript types |
//! | [`ids`] | the workspace's one id generator: random and per-process sequential uuid v4s, prefixed forms |
//! | [`instructions`], [`skills`], [`commands`] | what the agent knows of the project: `AGENTS.md`-style instructions, skills loaded on demand, slash commands |

#![warn(missing_docs)]

mod agent;
mod agent_sandbox;
pub mod budget;
mod checkpoint;
pub mod commands;
pub mod compaction;
pub mod context;
pub mod editor;
mod emit;
pub mod event;
pub mod fallback;
mod frontmatter;
mod grants;
mod guard;
mod hook_points;
pub mod hooks;
pub mod ids;
mod inner;
pub mod instructions;
mod into_arc;
pub mod message;
mod model_call;
pub mod notes;
mod outcome;
mod parent_run;
pub mod permission;
pub mod progress;
pub mod provider;
pub mod rewind;
mod run;
mod run_scope;
mod run_status;
pub mod sandbox;
pub mod schema;
pub mod secrets;
pub mod session;
pub mod skills;
pub mod spill;
pub mod structured;
pub mod subagent;
mod subagent_info;
pub mod telemetry;
#[cfg(any(test, feature = "test-util"))]
pub mod testing;
pub mod tool;
mod tool_fn;
mod tool_output;
pub mod tool_source;
mod tool_wrapper;
pub mod usage;

pub use agent::{
    AbortHandle, Agent, AgentBuilder, AgentState, AgentUpdate, Run, DEFAULT_COMPACT_KEEP_TAIL,
    DEFAULT_MAX_STEPS,
};
pub use async_trait::async_trait;
pub use event::{AgentEvent, RunStatus};
pub use into_arc::IntoArc;
pub use message::{ContentBlock, Message, UserInput};
pub use outcome::{AgentError, RunError, RunOutcome};
pub use permission::{Approver, PermissionMode};
pub use provider::{Provider, ReasoningLevel};
pub use run::RECOVERY_PROMPT;
pub use schemars;
pub use tokio_util::sync::CancellationToken;
pub use tool::{Permission, SideEffect, Tool, ToolContext, ToolError, ToolOutput};
pub use tool_fn::tool_fn;
pub use usage::Usage;
