//! [`ToolSet`]: the default tools, name filters, and custom tools.

use std::path::PathBuf;
use std::sync::Arc;

use agent_core::Tool;

/// A name filter named a tool that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolSetError {
    /// The name is not a tool of this set.
    #[error("unknown tool {name:?}; available tools: {available}")]
    UnknownTool {
        /// The unknown name.
        name: String,
        /// Comma-separated names of the tools that exist.
        available: String,
    },
}

/// An ordered set of tools for one workspace.
#[derive(Clone, Default)]
pub struct ToolSet {
    workspace: PathBuf,
    tools: Vec<Arc<dyn Tool>>,
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSet")
            .field("workspace", &self.workspace)
            .field("tools", &self.names())
            .finish()
    }
}

impl ToolSet {
    /// The default coding tools confined to `workspace`.
    pub fn defaults(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            tools: Vec::new(),
        }
    }

    /// An empty set (for `--no-tools`).
    pub fn empty(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            tools: Vec::new(),
        }
    }

    /// Adds a tool of your own (replacing a tool of the same name).
    pub fn with(mut self, tool: impl Tool) -> Self {
        self.push(Arc::new(tool));
        self
    }

    /// Adds a shared tool (replacing a tool of the same name).
    pub fn push(&mut self, tool: Arc<dyn Tool>) {
        self.tools.retain(|t| t.name() != tool.name());
        self.tools.push(tool);
    }

    /// Keeps only the tools named in `enabled` (when given) and drops those in `disabled`.
    /// Unknown names are an error naming the tools that exist.
    pub fn filter(
        mut self,
        enabled: Option<&[String]>,
        disabled: &[String],
    ) -> Result<Self, ToolSetError> {
        for name in enabled.into_iter().flatten().chain(disabled) {
            if !self.tools.iter().any(|t| t.name() == name) {
                return Err(ToolSetError::UnknownTool {
                    name: name.clone(),
                    available: self.names().join(", "),
                });
            }
        }
        if let Some(enabled) = enabled {
            self.tools.retain(|t| enabled.iter().any(|n| n == t.name()));
        }
        self.tools
            .retain(|t| !disabled.iter().any(|n| n == t.name()));
        Ok(self)
    }

    /// Tool names in order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name()).collect()
    }

    /// The tools.
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    /// The tools, for [`agent_core::AgentBuilder::tools`].
    pub fn into_tools(self) -> Vec<Arc<dyn Tool>> {
        self.tools
    }

    /// The workspace root.
    pub fn workspace(&self) -> &std::path::Path {
        &self.workspace
    }
}
