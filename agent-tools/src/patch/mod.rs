//! `apply_patch`: applies a patch in the `*** Begin Patch` format (Codex's and Zero's: `***
//! Add File`, `*** Delete File`, `*** Update File` with `*** Move to`, `@@` hunks) or a
//! unified diff, to files inside the workspace. All files change or none: every hunk is
//! checked against the files before anything is written, and a failure names the hunk.

mod apply;
mod parse;

use std::path::Path;
use std::sync::Arc;

use agent_core::{
    async_trait,
    permission::{Assessment, Risk, RiskCategory},
    SideEffect, Tool, ToolContext, ToolError, ToolOutput,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

pub use apply::ApplyError;
pub(crate) use apply::Change;
pub use parse::ParseError;
pub(crate) use parse::{FileOp, OpKind};

use crate::common::{assess_path, blocking, parse_args, schema_for, str_arg, Config, ToolsConfig};
use crate::scrub::finish_output;

/// The tool reason of `apply_patch` (shown with permission prompts).
pub const APPLY_PATCH_REASON: &str = "Applies patch hunks that can create, edit, or delete files.";

/// Arguments of `apply_patch`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ApplyPatchArgs {
    /// A unified diff or a structured *** Begin Patch patch to apply.
    #[serde(alias = "diff")]
    pub patch: String,
    /// Directory where the patch should be applied, relative to the workspace root (default
    /// the root).
    #[serde(default)]
    pub cwd: Option<String>,
}

/// Applies a patch to files of the workspace, all or nothing.
#[derive(Debug, Clone)]
pub struct ApplyPatch {
    config: Config,
}

impl ApplyPatch {
    /// The tool for `config`.
    pub fn new(config: Arc<ToolsConfig>) -> Self {
        Self { config }
    }
}

/// The paths a patch touches (destinations of moves included), for the assessment.
fn patch_paths(patch: &str) -> Vec<String> {
    let Ok(ops) = parse::parse(patch) else {
        return Vec::new();
    };
    let mut paths = Vec::new();
    for op in ops {
        if let parse::OpKind::Update {
            move_to: Some(dest),
            ..
        } = &op.kind
        {
            paths.push(dest.clone());
        }
        paths.push(op.path);
    }
    paths
}

fn join(cwd: &str, path: &str) -> String {
    match cwd {
        "." | "" => path.to_string(),
        _ if Path::new(path).is_absolute() => path.to_string(),
        cwd => format!("{}/{path}", cwd.trim_end_matches('/')),
    }
}

#[async_trait]
impl Tool for ApplyPatch {
    fn name(&self) -> &str {
        "apply_patch"
    }

    fn description(&self) -> &str {
        "Apply a patch inside the workspace: a unified diff, or a structured patch that starts \
         with `*** Begin Patch`, has one `*** Add File: <path>` (lines starting with +), \
         `*** Delete File: <path>` or `*** Update File: <path>` (optionally `*** Move to: \
         <path>`, then `@@` hunks of ' ', '-' and '+' lines) section per file, and ends with \
         `*** End Patch`. All files change or none."
    }

    fn parameters(&self) -> Value {
        schema_for::<ApplyPatchArgs>()
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Write
    }

    fn assess(&self, args: &Value, _cwd: &Path) -> Assessment {
        let cwd = str_arg(args, "cwd").unwrap_or(".");
        let patch = str_arg(args, "patch")
            .or_else(|| str_arg(args, "diff"))
            .unwrap_or_default();
        let mut categories = vec![RiskCategory::Write];
        for raw in
            std::iter::once(cwd.to_string()).chain(patch_paths(patch).iter().map(|p| join(cwd, p)))
        {
            let assessment = assess_path(
                &self.config,
                self.name(),
                RiskCategory::Write,
                Some(&raw),
                Some(APPLY_PATCH_REASON),
            );
            if assessment.block.is_some() {
                return assessment;
            }
            categories.extend(assessment.risk.categories);
        }
        Assessment {
            risk: Risk::from_categories(categories),
            block: None,
            reason: Some(APPLY_PATCH_REASON.to_string()),
        }
    }

    /// Every file the patch adds, deletes, updates or moves to (for permission rules and
    /// file checkpoints).
    fn call_target(&self, args: &Value) -> agent_core::permission::CallTarget {
        let cwd = str_arg(args, "cwd").unwrap_or(".");
        let patch = str_arg(args, "patch")
            .or_else(|| str_arg(args, "diff"))
            .unwrap_or_default();
        agent_core::permission::CallTarget {
            paths: patch_paths(patch).iter().map(|p| join(cwd, p)).collect(),
            ..Default::default()
        }
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: ApplyPatchArgs = parse_args(self.name(), args)?;
        let cwd = args.cwd.unwrap_or_else(|| ".".to_string());
        let workspace = self.config.workspace.clone();
        let base = workspace
            .resolve(self.name(), &cwd)
            .map_err(|c| ToolError::Blocked(Box::new(c.block)))?;
        if !base.path.is_dir() {
            return Err(ToolError::Failed(format!(
                "Error applying patch: cwd {cwd} is not a directory"
            )));
        }
        // With the client's buffers, the files are read and written through them.
        let editor = crate::editor_io::files(&ctx).cloned();
        let sources = match &editor {
            Some(files) => match parse::parse(&args.patch) {
                Ok(ops) => {
                    crate::editor_io::patch_sources(files, &workspace, &base.display, &ops, &ctx)
                        .await?
                }
                Err(_) => Default::default(),
            },
            None => Default::default(),
        };
        let through_editor = editor.is_some();
        let (output, changes) = blocking(move || {
            let fail = |e: String| ToolError::Failed(format!("Error applying patch: {e}"));
            let ops = parse::parse(&args.patch).map_err(|e| fail(e.to_string()))?;
            let changes = apply::plan_with(&workspace, &base.display, &ops, &sources)
                .map_err(|e| fail(e.to_string()))?;
            if !through_editor {
                apply::commit(&changes).map_err(|e| fail(e.to_string()))?;
            }
            let summary = match base.display.as_str() {
                "." => "Patch applied successfully.".to_string(),
                dir => format!("Patch applied successfully in {dir}."),
            };
            let mut output = ToolOutput::text(summary);
            let mut changed: Vec<String> = Vec::new();
            for change in &changes {
                if !changed.iter().any(|c| c == change.display()) {
                    changed.push(change.display().to_string());
                }
            }
            output.changed_files = changed;
            Ok((output, changes))
        })
        .await?;
        if let Some(files) = &editor {
            crate::editor_io::commit_patch(files, &changes, &ctx).await?;
        }
        Ok(finish_output(output, self.config.output_cap))
    }
}
