//! `plan`: the session checklist.

use std::sync::Arc;

use agent_core::{
    async_trait,
    tool::{PlanItem, PlanStatus, PlanUpdate},
    SideEffect, Tool, ToolContext, ToolError, ToolOutput,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::common::{parse_args, schema_for, Config, ToolsConfig};
use crate::scrub::finish_output;

/// Status of a checklist item, as the model writes it.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlanItemStatus {
    /// Not started.
    Pending,
    /// Being worked on (at most one item at a time).
    InProgress,
    /// Done.
    Completed,
}

impl From<PlanItemStatus> for PlanStatus {
    fn from(s: PlanItemStatus) -> Self {
        match s {
            PlanItemStatus::Pending => PlanStatus::Pending,
            PlanItemStatus::InProgress => PlanStatus::InProgress,
            PlanItemStatus::Completed => PlanStatus::Completed,
        }
    }
}

/// One checklist item.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PlanStep {
    /// What to do, in a short sentence.
    pub step: String,
    /// Where it stands: pending, in_progress or completed.
    #[schemars(schema_with = "status_schema")]
    pub status: PlanItemStatus,
}

/// A plain string enum (rather than documented `oneOf` branches), which every provider's
/// tool-schema dialect accepts.
fn status_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": ["pending", "in_progress", "completed"]
    })
}

/// Arguments of `plan`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PlanArgs {
    /// Why the plan changed (optional).
    #[serde(default)]
    pub explanation: Option<String>,
    /// The whole checklist, in order; it replaces the previous one.
    pub plan: Vec<PlanStep>,
}

/// Updates the session checklist.
#[derive(Debug, Clone)]
pub struct Plan {
    config: Config,
}

impl Plan {
    /// The tool for `config`.
    pub fn new(config: Arc<ToolsConfig>) -> Self {
        Self { config }
    }
}

#[async_trait]
impl Tool for Plan {
    fn name(&self) -> &str {
        "plan"
    }

    fn description(&self) -> &str {
        "Records the task checklist for this session. Send the whole list every time: each item \
         has a short `step` and a `status` of pending, in_progress or completed (keep at most one \
         in_progress). Use it for multi-step work and update it as steps finish."
    }

    fn parameters(&self) -> Value {
        schema_for::<PlanArgs>()
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::None
    }

    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: PlanArgs = parse_args(self.name(), args)?;
        if let Some(i) = args.plan.iter().position(|s| s.step.trim().is_empty()) {
            return Err(ToolError::InvalidArguments(format!(
                "plan: item {} has an empty step",
                i + 1
            )));
        }
        let plan: Vec<PlanItem> = args
            .plan
            .into_iter()
            .map(|s| PlanItem {
                step: s.step.trim().to_string(),
                status: s.status.into(),
            })
            .collect();
        let count = |status| plan.iter().filter(|i| i.status == status).count();
        let summary = format!(
            "Plan updated: {} items ({} completed, {} in progress, {} pending).",
            plan.len(),
            count(PlanStatus::Completed),
            count(PlanStatus::InProgress),
            count(PlanStatus::Pending)
        );
        let mut output = ToolOutput::text(summary);
        output.plan = Some(PlanUpdate {
            explanation: args.explanation.filter(|e| !e.trim().is_empty()),
            plan,
        });
        Ok(finish_output(output, self.config.output_cap))
    }
}
