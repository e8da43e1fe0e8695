//! The language-server tools, in each front end's dialect ([`Dialect`]), and the wrapper
//! that appends a file's new errors to the result of a tool that changed it
//! ([`AfterEdit`]).

mod after_edit;
mod diagnostics;
mod navigate;
mod zut;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_core::permission::{Assessment, Risk, RiskCategory};
use agent_core::{Tool, ToolError};
use agent_tools::{ResolvedPath, Workspace};
use lsp_types::Location;

pub use after_edit::AfterEdit;
pub use diagnostics::LspDiagnostics;
pub use navigate::LspNavigate;
pub use zut::{ZutDiagnostics, ZutLsp};

use crate::manager::{location_path, Lsp};

/// Whose tool names, arguments and result texts the tools have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// The SDK's own: `lsp_navigate` (`definition`, `references`, `implementation`,
    /// `type_definition`, `workspace_symbol`, `hover`; each location with its line) and
    /// `lsp_diagnostics`; Zero's wording of the errors after an edit.
    Sdk,
    /// Zero's (`zero exec`): `lsp_navigate` with Zero's arguments and texts (and `hover`
    /// beside its four operations); Zero's block of errors after an edit.
    Zero,
    /// zut's (`zut rpc`): `lsp` with zut's actions, arguments and texts, and
    /// `lsp_diagnostics` (its `diagnostics` action as a tool); zut's diagnostics summary after
    /// an edit.
    Zut,
}

impl Dialect {
    /// The names of the tools [`Lsp::tools`] makes in this dialect.
    pub fn tool_names(self) -> &'static [&'static str] {
        match self {
            Self::Sdk => &["lsp_navigate", "lsp_diagnostics"],
            Self::Zero => &["lsp_navigate"],
            Self::Zut => &["lsp", "lsp_diagnostics"],
        }
    }
}

impl Lsp {
    /// The language-server tools in `dialect`, confined to the workspace and `extra_roots`
    /// (as the file tools are). Read-only: they change no file. Making them starts nothing.
    pub fn tools(&self, dialect: Dialect, extra_roots: &[PathBuf]) -> Vec<Arc<dyn Tool>> {
        let confine = Confine::new(self.workspace(), extra_roots);
        match dialect {
            Dialect::Sdk => vec![
                Arc::new(LspNavigate::new(
                    self.clone(),
                    confine.clone(),
                    Dialect::Sdk,
                )),
                Arc::new(LspDiagnostics::new(self.clone(), confine)),
            ],
            Dialect::Zero => vec![Arc::new(LspNavigate::new(
                self.clone(),
                confine,
                Dialect::Zero,
            ))],
            Dialect::Zut => vec![
                Arc::new(ZutLsp::new(self.clone(), confine.clone())),
                Arc::new(ZutDiagnostics::new(self.clone(), confine)),
            ],
        }
    }

    /// `tools` with every tool that writes files ([`agent_core::SideEffect::Write`])
    /// wrapped in [`AfterEdit`] (its results end with the changed files' new errors, in
    /// `dialect`'s words), followed by [`Self::tools`] (replacing tools of their names).
    pub fn attach(
        &self,
        tools: Vec<Arc<dyn Tool>>,
        dialect: Dialect,
        extra_roots: &[PathBuf],
    ) -> Vec<Arc<dyn Tool>> {
        let own = self.tools(dialect, extra_roots);
        let mut out: Vec<Arc<dyn Tool>> = tools
            .into_iter()
            .filter(|t| !own.iter().any(|o| o.name() == t.name()))
            .collect();
        out = self.wrap_writers(out, dialect);
        out.extend(own);
        out
    }

    /// `tools` with every tool that writes files ([`agent_core::SideEffect::Write`])
    /// wrapped in [`AfterEdit`], in order; for a host that adds [`Self::tools`] to its tool
    /// list itself (before its filter).
    pub fn wrap_writers(&self, tools: Vec<Arc<dyn Tool>>, dialect: Dialect) -> Vec<Arc<dyn Tool>> {
        tools
            .into_iter()
            .map(|t| match t.side_effect() {
                agent_core::SideEffect::Write => {
                    Arc::new(AfterEdit::new(t, self.clone(), dialect)) as Arc<dyn Tool>
                }
                _ => t,
            })
            .collect()
    }
}

/// Where the tools may look: the workspace and the extra roots.
#[derive(Debug, Clone)]
pub(crate) struct Confine {
    workspace: Workspace,
}

impl Confine {
    pub(crate) fn new(root: &Path, extra_roots: &[PathBuf]) -> Self {
        let mut workspace = Workspace::new(root);
        for extra in extra_roots {
            workspace = workspace.allow_root(extra.clone());
        }
        Self { workspace }
    }

    /// Resolves `raw` for `tool`, or the block that refuses it.
    pub(crate) fn resolve(&self, tool: &str, raw: &str) -> Result<ResolvedPath, ToolError> {
        self.workspace
            .resolve(tool, raw)
            .map_err(|c| ToolError::Blocked(Box::new(c.block)))
    }

    /// The risk of a call reading `raw` (default `.`), or the block that refuses it.
    pub(crate) fn assess(&self, tool: &str, raw: Option<&str>) -> Assessment {
        match self.workspace.resolve(tool, raw.unwrap_or(".")) {
            Ok(resolved) => Assessment {
                risk: Risk::from_categories(
                    std::iter::once(RiskCategory::Read).chain(resolved.categories),
                ),
                block: None,
                reason: None,
            },
            Err(confinement) => {
                let mut block = confinement.block;
                block.risk = Risk::from_categories(
                    std::iter::once(RiskCategory::Read)
                        .chain(block.risk.categories.iter().copied()),
                );
                Assessment {
                    risk: block.risk.clone(),
                    reason: Some(block.reason.clone()),
                    block: Some(block),
                }
            }
        }
    }

    /// `path` relative to the workspace when inside it (with `/`), else as it is.
    pub(crate) fn display(&self, path: &Path) -> String {
        let root = self.workspace.root();
        let canonical = self.workspace.canonical_root();
        for base in [root, canonical.as_path()] {
            if let Ok(rel) = path.strip_prefix(base) {
                let rel = rel.to_string_lossy().replace('\\', "/");
                return if rel.is_empty() { ".".into() } else { rel };
            }
        }
        path.to_string_lossy().into_owned()
    }

    /// Whether `path` is inside the workspace or an extra root.
    pub(crate) fn contains(&self, path: &Path) -> bool {
        std::iter::once(self.workspace.root())
            .chain(self.workspace.extra_roots().iter().map(PathBuf::as_path))
            .any(|r| path.starts_with(r))
            || path.starts_with(self.workspace.canonical_root())
    }

    /// A location as `path:line:col` (1-based), the path relative to the workspace.
    pub(crate) fn location(&self, location: &Location) -> String {
        let path = match location_path(location) {
            Some(path) => self.display(&path),
            None => location.uri.as_str().to_string(),
        };
        format!(
            "{path}:{}:{}",
            location.range.start.line + 1,
            location.range.start.character + 1
        )
    }
}

/// The `key` argument when it is a string.
pub(crate) fn str_arg<'a>(args: &'a serde_json::Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(serde_json::Value::as_str)
}
