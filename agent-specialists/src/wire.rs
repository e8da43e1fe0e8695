//! The arguments of the `Task`, `TaskOutput` and `TaskStop` tools, as the model sends them
//! (Zero's field names). Their JSON schemas are derived from these types.

use schemars::JsonSchema;
use serde::Deserialize;

/// `Task`: start a specialist.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TaskArgs {
    /// Specialist name to invoke, such as worker, explorer, or code-review.
    pub(crate) name: String,
    /// Short label for the child session.
    #[serde(default)]
    pub(crate) description: Option<String>,
    /// The focused task to give the specialist, with everything it needs to know: it sees
    /// nothing of this conversation.
    pub(crate) prompt: String,
    /// Run the specialist in the background and return a task_id immediately.
    #[serde(default)]
    pub(crate) run_in_background: Option<bool>,
}

/// `TaskOutput`: read (or wait for) a background task's output.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TaskOutputArgs {
    /// Background task id returned by Task.
    pub(crate) task_id: String,
    /// Wait for the task to finish before returning, up to timeout.
    #[serde(default)]
    pub(crate) block: Option<bool>,
    /// Maximum wait time in milliseconds when block is true (default 30000).
    #[serde(default)]
    pub(crate) timeout: Option<u64>,
}

/// `TaskStop`: stop a background task.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TaskStopArgs {
    /// Background task id returned by Task.
    pub(crate) task_id: String,
}
