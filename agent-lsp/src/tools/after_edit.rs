//! [`AfterEdit`]: a file-writing tool whose results end with the changed files' new
//! errors from the language servers that cover them.

use std::path::Path;
use std::sync::Arc;

use agent_core::message::ContentBlock;
use agent_core::tool::ToolWrapper;
use agent_core::{async_trait, Tool, ToolContext, ToolError, ToolOutput};
use serde_json::Value;

use super::navigate::cancellable;
use super::{Confine, Dialect};
use crate::format::{zero_after_edit, zut_summary, FileDiagnostic, ZUT_WRITE_CAP};
use crate::manager::Lsp;

/// Most changed files of one call that are checked.
const MAX_FILES: usize = 5;

/// Wraps a tool that writes files (`write_file`, `edit_file`, `apply_patch`, …): after a
/// call that changed files, each changed file a running language server covers is synced
/// to it, and the result ends with the file's errors (Zero's block, or zut's summary of
/// the diagnostics not shown before), waiting for the server a bounded time. Nothing is
/// added when no server covers the file, the file has no errors, or the server is slow;
/// a failed call is left as it is. Every other method is the wrapped tool's.
pub struct AfterEdit {
    inner: Arc<dyn Tool>,
    lsp: Lsp,
    dialect: Dialect,
    confine: Confine,
}

impl std::fmt::Debug for AfterEdit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AfterEdit")
            .field("inner", &self.inner.name())
            .field("dialect", &self.dialect)
            .finish()
    }
}

impl AfterEdit {
    /// `inner`, its results followed by the changed files' errors from `lsp`'s servers.
    pub fn new(inner: Arc<dyn Tool>, lsp: Lsp, dialect: Dialect) -> Self {
        let confine = Confine::new(lsp.workspace(), &[]);
        Self {
            inner,
            lsp,
            dialect,
            confine,
        }
    }

    /// The text to append for one changed file (empty for nothing).
    async fn report(&self, path: &Path) -> String {
        let found = match self.lsp.changed(path).await {
            Ok(Some((_, diagnostics))) => diagnostics,
            Ok(None) => return String::new(),
            Err(err) => {
                tracing::debug!(path = %path.display(), "no diagnostics after the edit: {err}");
                return String::new();
            }
        };
        let shown = self.confine.display(path);
        match self.dialect {
            Dialect::Zut => {
                let fresh = self.lsp.unsurfaced(path, &found);
                if fresh.is_empty() {
                    return String::new();
                }
                let fresh: Vec<FileDiagnostic> = fresh
                    .into_iter()
                    .map(|diagnostic| FileDiagnostic {
                        path: shown.clone(),
                        diagnostic,
                    })
                    .collect();
                format!("\n\n{}\n", zut_summary(&fresh, ZUT_WRITE_CAP))
            }
            Dialect::Zero | Dialect::Sdk => {
                zero_after_edit(&shown, &found, self.lsp.config().max_diagnostics)
            }
        }
    }
}

#[async_trait]
impl ToolWrapper for AfterEdit {
    fn inner(&self) -> &dyn Tool {
        &*self.inner
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let cwd = ctx.cwd.clone();
        let mut output = self.inner.call(args, ctx.clone()).await?;
        if output.is_error || output.changed_files.is_empty() {
            return Ok(output);
        }
        let mut appended = String::new();
        for file in output.changed_files.iter().take(MAX_FILES) {
            let path = match Path::new(file).is_absolute() {
                true => Path::new(file).to_path_buf(),
                false => cwd.join(file),
            };
            let Ok(text) = cancellable(&ctx, self.report(&path)).await else {
                break;
            };
            appended.push_str(&text);
        }
        if appended.is_empty() {
            return Ok(output);
        }
        let text_block = output.content.iter_mut().find_map(|block| match block {
            ContentBlock::Text { text } => Some(text),
            _ => None,
        });
        match text_block {
            Some(text) => {
                if self.dialect == Dialect::Zut {
                    let kept = text.trim_end_matches('\n').len();
                    text.truncate(kept);
                }
                text.push_str(&appended);
            }
            None => output
                .content
                .push(ContentBlock::text(appended.trim_start())),
        }
        Ok(output)
    }
}
