//! What a tool returns ([`ToolOutput`]) and the checklist a plan tool sets; re-exported by
//! [`crate::tool`].

use serde::{Deserialize, Serialize};

use crate::message::ContentBlock;
use crate::permission::Block;

/// Status of one plan item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// One item of the session checklist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanItem {
    /// What to do.
    pub step: String,
    /// Where it stands.
    pub status: PlanStatus,
}

/// A new version of the session checklist.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PlanUpdate {
    /// Why the plan changed.
    pub explanation: Option<String>,
    /// The whole checklist.
    pub plan: Vec<PlanItem>,
}

/// What a tool returns.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// Text and image blocks for the model.
    pub content: Vec<ContentBlock>,
    /// True when the tool failed; the model sees the content as an error.
    pub is_error: bool,
    /// The content was cut to fit the output cap.
    pub truncated: bool,
    /// Secrets were removed from the content.
    pub redacted: bool,
    /// Files the call created or modified, relative to the workspace where possible.
    pub changed_files: Vec<String>,
    /// A new session checklist, for the plan tool.
    pub plan: Option<PlanUpdate>,
    /// What the sandbox refused while the call ran (a denied path, a refused connection);
    /// reported as [`crate::AgentEvent::ToolBlocked`] before the result.
    pub block: Option<Block>,
}

impl ToolOutput {
    /// A successful text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![ContentBlock::text(text)],
            ..Self::default()
        }
    }

    /// A failed text result.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            content: vec![ContentBlock::text(text)],
            is_error: true,
            ..Self::default()
        }
    }

    /// The concatenated text content.
    pub fn text_content(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let ContentBlock::Text { text } = block {
                out.push_str(text);
            }
        }
        out
    }
}
