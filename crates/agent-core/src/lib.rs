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
//! [`Approver`] and persist transcripts through [`SessionStore`].
//!
//! # Example
//!
//! An agent on the scripted provider (from `agent-providers`) that calls a tool, then
//! answers:
//!
//! ```
//! use agent_core::{async_trait, Agent, AgentEvent, SideEffect, Tool, ToolContext, ToolError, ToolOutput};
//! use agent_providers::scripted::{ScriptedProvider, Turn};
//! use futures::StreamExt;
//! use serde_json::{json, Value};
//!
//! struct Greet;
//!
//! #[async_trait]
//! impl Tool for Greet {
//!     fn name(&self) -> &str { "greet" }
//!     fn description(&self) -> &str { "Greets someone by name." }
//!     fn parameters(&self) -> Value {
//!         json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
//!     }
//!     fn side_effect(&self) -> SideEffect { SideEffect::None }
//!     async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
//!         let name = args["name"].as_str().unwrap_or("stranger");
//!         Ok(ToolOutput::text(format!("Hello, {name}!")))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let provider = ScriptedProvider::new([
//!     Turn::new().tool_call("call_1", "greet", r#"{"name":"Ada"}"#),
//!     Turn::new().text("I greeted Ada."),
//! ]);
//! let agent = Agent::builder(provider).tool(Greet).build();
//!
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
//! # }
//! ```

#![warn(missing_docs)]

mod agent;
mod emit;
pub mod event;
mod inner;
pub mod message;
pub mod permission;
pub mod provider;
mod run;
pub mod secrets;
pub mod session;
pub mod tool;
pub mod tool_source;
pub mod usage;

pub use agent::{
    AbortHandle, Agent, AgentBuilder, AgentState, Run, DEFAULT_COMPACT_KEEP_TAIL, DEFAULT_MAX_STEPS,
};
pub use async_trait::async_trait;
pub use event::{
    AgentEvent, ErrorCode, PermissionInfo, RecoveryReason, RequestScope, RunKind, RunStatus,
    StopReason, ToolStatus,
};
pub use message::{ContentBlock, Message, Role, ToolCall, UserInput};
pub use permission::{
    decide, Approval, ApprovalRequest, Approver, Assessment, Block, BlockCode, PermissionAction,
    PermissionMode, Risk, RiskCategory, RiskLevel, Verdict,
};
pub use provider::{
    ModelInfo, OutputSchema, Pricing, Provider, ProviderError, ProviderErrorKind, ProviderEvent,
    ProviderRequest, ProviderStop, ProviderStream, ReasoningLevel, ToolSpec,
};
pub use run::{COMPACTION_PREFIX, RECOVERY_PROMPT};
pub use secrets::register_secret;
pub use session::{MemorySessionStore, SessionError, SessionRecord, SessionStore};
pub use tokio_util::sync::CancellationToken;
pub use tool::{
    Permission, PlanItem, PlanStatus, PlanUpdate, Progress, ProgressSink, ProgressStream,
    SideEffect, Tool, ToolContext, ToolError, ToolOutput,
};
pub use tool_source::ToolSource;
pub use usage::Usage;
