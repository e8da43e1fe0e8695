//! `lsp_diagnostics` (the SDK's): a file's errors and warnings from its language server.

use std::path::Path;

use agent_core::permission::Assessment;
use agent_core::{async_trait, SideEffect, Tool, ToolContext, ToolError, ToolOutput};
use serde_json::{json, Value};

use super::navigate::cancellable;
use super::{str_arg, Confine};
use crate::format::zero_line;
use crate::manager::Lsp;

/// Most diagnostics listed.
const MAX_SHOWN: usize = 50;

/// The `lsp_diagnostics` tool.
#[derive(Debug, Clone)]
pub struct LspDiagnostics {
    lsp: Lsp,
    confine: Confine,
}

impl LspDiagnostics {
    pub(crate) fn new(lsp: Lsp, confine: Confine) -> Self {
        Self { lsp, confine }
    }
}

#[async_trait]
impl Tool for LspDiagnostics {
    fn name(&self) -> &str {
        "lsp_diagnostics"
    }

    fn description(&self) -> &str {
        "Lists a file's compiler and linter diagnostics (errors, warnings, hints) from its \
         language server, as path:line:col: severity: message lines (1-based). Use it to \
         check a file compiles before and after changing it."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File to check, relative to the workspace root."}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }

    fn assess(&self, args: &Value, _cwd: &Path) -> Assessment {
        self.confine.assess(self.name(), str_arg(args, "path"))
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let Some(raw) = str_arg(&args, "path").filter(|p| !p.is_empty()) else {
            return Err(ToolError::InvalidArguments("path is required".into()));
        };
        let resolved = self.confine.resolve(self.name(), raw)?;
        let display = resolved.display;
        match cancellable(&ctx, self.lsp.diagnostics(&resolved.path)).await? {
            Ok((_, found)) if found.is_empty() => {
                Ok(ToolOutput::text(format!("No diagnostics in {display}.")))
            }
            Ok((server, found)) => {
                let mut lines = vec![format!(
                    "{} diagnostic(s) in {display} ({server}):",
                    found.len()
                )];
                lines.extend(found.iter().take(MAX_SHOWN).map(|d| zero_line(&display, d)));
                if found.len() > MAX_SHOWN {
                    lines.push(format!("… {} more", found.len() - MAX_SHOWN));
                }
                Ok(ToolOutput::text(lines.join("\n")))
            }
            Err(err) if err.is_unavailable() => Ok(ToolOutput::text(format!(
                "{err}: lsp_diagnostics is unavailable for this file type."
            ))),
            Err(err) => Err(ToolError::Failed(format!("lsp_diagnostics failed: {err}"))),
        }
    }
}
