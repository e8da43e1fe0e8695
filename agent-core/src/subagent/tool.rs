//! [`AgentTool`]: an agent as a tool of another ([`crate::Agent::as_tool`]).

use std::sync::OnceLock;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{new_task_id, SubagentRequest, MAX_SUBAGENT_DEPTH};
use crate::agent::Agent;
use crate::permission::SideEffect;
use crate::schema::StrictSchema;
use crate::tool::{Tool, ToolContext, ToolError, ToolOutput};

/// The arguments of an [`AgentTool`] call, as the model sends them.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AgentToolArgs {
    /// The task for the sub-agent, with everything it needs to know: it sees nothing of
    /// this conversation.
    prompt: String,
}

/// A tool that runs each call's prompt on a fresh copy of an agent, as a sub-agent of the
/// run that calls it ([`crate::Agent::as_tool`]).
///
/// The copy starts from the agent's configuration (provider, tools, system prompt, model,
/// reasoning, step limit, starting transcript) and takes the calling run's approver,
/// permission mode, hooks and sandbox. The call's result is the child's answer; a child
/// that fails or is aborted makes an error result, and the calling run goes on. The tool
/// itself has no side effect: the child's calls are gated one by one.
///
/// ```
/// use agent_core::{Agent, AgentEvent};
/// use agent_providers::scripted::{ScriptedProvider, Turn};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let researcher = Agent::builder(ScriptedProvider::new([Turn::new().text("42.")]))
///     .system_prompt("You answer questions briefly.")
///     .build();
/// let provider = ScriptedProvider::new([
///     Turn::new().tool_call("c1", "researcher", r#"{"prompt":"What is six times seven?"}"#),
///     Turn::new().text("The researcher says 42."),
/// ]);
/// let agent = Agent::builder(provider)
///     .tool(researcher.as_tool("researcher", "Answers a factual question."))
///     .build();
/// let events = agent.prompt("Ask the researcher.").collect_events().await;
/// assert!(events.iter().any(|e| matches!(
///     e,
///     AgentEvent::SubagentFinished { name, final_text: Some(t), .. } if name == "researcher" && t == "42."
/// )));
/// # }
/// ```
pub struct AgentTool {
    template: Agent,
    name: String,
    description: String,
    max_depth: u32,
    schema: OnceLock<StrictSchema>,
}

impl std::fmt::Debug for AgentTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentTool")
            .field("name", &self.name)
            .field("max_depth", &self.max_depth)
            .finish_non_exhaustive()
    }
}

impl AgentTool {
    pub(super) fn new(template: Agent, name: String, description: String) -> Self {
        Self {
            template,
            name,
            description,
            max_depth: 1,
            schema: OnceLock::new(),
        }
    }

    /// How deep the sub-agent may be nested (default 1: only a top-level agent may call
    /// this tool; a sub-agent that has it gets an error result). At most
    /// [`MAX_SUBAGENT_DEPTH`].
    #[must_use = "returns the changed value"]
    pub fn max_depth(mut self, depth: u32) -> Self {
        self.max_depth = depth.clamp(1, MAX_SUBAGENT_DEPTH);
        self
    }

    fn schema(&self) -> &StrictSchema {
        self.schema.get_or_init(StrictSchema::of::<AgentToolArgs>)
    }
}

#[async_trait]
impl Tool for AgentTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.schema().schema.clone()
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::None
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: AgentToolArgs = self
            .schema()
            .parse(args)
            .map_err(|err| ToolError::InvalidArguments(err.to_string()))?;
        let request = SubagentRequest::new(self.name.clone(), args.prompt)
            .task_id(new_task_id("subagent"))
            .max_depth(self.max_depth);
        let outcome = self.template.run_as_child(&ctx, request).await?;
        Ok(outcome.into_tool_output())
    }
}
