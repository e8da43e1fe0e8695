//! `lsp_navigate`: definitions, references, implementations, workspace symbols and hover,
//! in Zero's words ([`Dialect::Zero`], Gitlawb/zero `internal/tools/lsp_navigate.go`) or the
//! SDK's (each location with its line of code).

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};

use agent_core::permission::Assessment;
use agent_core::{async_trait, SideEffect, Tool, ToolContext, ToolError, ToolOutput};
use lsp_types::{Location, Position, SymbolKind};
use serde_json::{json, Value};

use super::{Confine, Dialect};
use crate::error::LspError;
use crate::manager::{location_path, Lsp, PositionOp, Symbol};

/// Most locations or symbols listed in the SDK's results.
const MAX_RESULTS: usize = 200;

const ZERO_DESCRIPTION: &str =
    "Navigate code semantically via the language server: jump to a symbol's \
definition, find all references, find implementations of an interface/method, or \
search workspace symbols by name. Use this instead of grep when you need precise \
definition/reference/implementation results. Returns file:line:col locations.";

const SDK_DESCRIPTION: &str =
    "Navigate code semantically through the file type's language server: \
a symbol's definition, type definition, every reference, the implementations of an \
interface or method, its hover (type and documentation), or workspace symbols by name. \
More precise than grep for definition/reference questions. Returns path:line:col \
locations, each with its line of code. line and character are 1-based.";

/// The `lsp_navigate` tool, in Zero's or the SDK's dialect.
#[derive(Debug, Clone)]
pub struct LspNavigate {
    lsp: Lsp,
    confine: Confine,
    zero: bool,
}

/// The operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Position(PositionOp),
    Hover,
    WorkspaceSymbol,
}

impl Op {
    fn parse(op: &str, zero: bool) -> Option<Self> {
        Some(match op {
            "definition" => Self::Position(PositionOp::Definition),
            "references" => Self::Position(PositionOp::References),
            "implementation" => Self::Position(PositionOp::Implementation),
            "type_definition" if !zero => Self::Position(PositionOp::TypeDefinition),
            "workspace_symbol" => Self::WorkspaceSymbol,
            "hover" => Self::Hover,
            _ => return None,
        })
    }
}

impl LspNavigate {
    /// The tool over `lsp`, confined by `confine`, in `dialect` (Zut has its own tool:
    /// it gets the SDK's).
    pub(crate) fn new(lsp: Lsp, confine: Confine, dialect: Dialect) -> Self {
        Self {
            lsp,
            confine,
            zero: dialect == Dialect::Zero,
        }
    }

    fn ops(&self) -> &'static [&'static str] {
        match self.zero {
            true => &[
                "definition",
                "references",
                "implementation",
                "workspace_symbol",
                "hover",
            ],
            false => &[
                "definition",
                "references",
                "implementation",
                "type_definition",
                "workspace_symbol",
                "hover",
            ],
        }
    }

    /// An error result: Zero's `Error: …` text, or the SDK's invalid-arguments error.
    fn invalid(&self, zero_text: String, sdk_text: &str) -> Result<ToolOutput, ToolError> {
        match self.zero {
            true => Ok(ToolOutput::error(zero_text)),
            false => Err(ToolError::InvalidArguments(sdk_text.to_string())),
        }
    }
}

/// The path argument: `path`, else Zero's aliases `file` and `file_path`.
fn path_arg(args: &Value) -> Result<&str, String> {
    let mut present = false;
    for key in ["path", "file", "file_path"] {
        match args.get(key) {
            None | Some(Value::Null) => continue,
            Some(Value::String(s)) if s.is_empty() => present = true,
            Some(Value::String(s)) => return Ok(s),
            Some(_) => return Err("path must be a string".into()),
        }
    }
    Err(match present {
        true => "path must be a non-empty string".into(),
        false => "path is required".into(),
    })
}

/// A 1-based integer argument (Zero accepts whole numbers sent as floats or strings).
fn int_arg(args: &Value, key: &str) -> Result<Option<u32>, String> {
    let number = match args.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
        Some(Value::String(s)) => s.trim().parse::<i64>().ok(),
        Some(_) => None,
    };
    match number {
        None => Err(format!("{key} must be an integer")),
        Some(n) if n < 1 => Err(format!("{key} must be at least 1")),
        Some(n) => Ok(Some(u32::try_from(n - 1).unwrap_or(u32::MAX))),
    }
}

/// Runs `work` unless the call is cancelled first.
pub(crate) async fn cancellable<T>(
    ctx: &ToolContext,
    work: impl Future<Output = T>,
) -> Result<T, ToolError> {
    tokio::select! {
        _ = ctx.cancel.cancelled() => Err(ToolError::Cancelled("the language-server query was cancelled".into())),
        out = work => Ok(out),
    }
}

#[async_trait]
impl Tool for LspNavigate {
    fn name(&self) -> &str {
        "lsp_navigate"
    }

    fn description(&self) -> &str {
        match self.zero {
            true => ZERO_DESCRIPTION,
            false => SDK_DESCRIPTION,
        }
    }

    fn parameters(&self) -> Value {
        let ops = self.ops();
        let op_text = match self.zero {
            true => "Operation: definition, references, implementation, or workspace_symbol (hover: the symbol's type and documentation).",
            false => "Operation: definition, type_definition, references, implementation, hover, or workspace_symbol.",
        };
        json!({
            "type": "object",
            "properties": {
                "op": {"type": "string", "description": op_text, "enum": ops},
                "path": {"type": "string", "description": "File to anchor the query (required for all ops; for workspace_symbol it selects the language server)."},
                "line": {"type": "integer", "description": "1-based line of the symbol (definition/references/implementation).", "minimum": 1},
                "character": {"type": "integer", "description": "1-based column of the symbol (definition/references/implementation).", "minimum": 1},
                "query": {"type": "string", "description": "Symbol name to search for (workspace_symbol)."}
            },
            "required": ["op", "path"],
            "additionalProperties": false
        })
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }

    fn assess(&self, args: &Value, _cwd: &Path) -> Assessment {
        self.confine.assess(self.name(), path_arg(args).ok())
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let invalid_args = |e: String| format!("Error: Invalid arguments for lsp_navigate: {e}");
        let op = match args.get("op") {
            None | Some(Value::Null) => {
                return self.invalid(invalid_args("op is required".into()), "op is required")
            }
            Some(Value::String(s)) if s.is_empty() => {
                return self.invalid(
                    invalid_args("op must be a non-empty string".into()),
                    "op must be a non-empty string",
                )
            }
            Some(Value::String(s)) => s.trim().to_ascii_lowercase(),
            Some(_) => {
                return self.invalid(
                    invalid_args("op must be a string".into()),
                    "op must be a string",
                )
            }
        };
        let raw = match path_arg(&args) {
            Ok(raw) => raw,
            Err(e) => return self.invalid(invalid_args(e.clone()), &e),
        };
        let resolved = self.confine.resolve(self.name(), raw)?;
        let (path, display) = (resolved.path, resolved.display);
        let parsed = Op::parse(&op, self.zero);
        if parsed != Some(Op::WorkspaceSymbol) {
            if let Err(e) = tokio::fs::metadata(&path).await {
                let text = format!("Error: lsp_navigate could not read {display}: {e}");
                return match self.zero {
                    true => Ok(ToolOutput::error(text)),
                    false => Err(ToolError::io(format!("reading {display}"), e)),
                };
            }
        }
        let Some(op_kind) = parsed else {
            let known = self.ops().join(", ");
            return self.invalid(
                format!("Error: lsp_navigate unknown op {op} (use definition, references, implementation, workspace_symbol, or hover)."),
                &format!("unknown op {op:?} (use one of: {known})"),
            );
        };
        let lsp = &self.lsp;
        let outcome: Result<String, LspError> = match op_kind {
            Op::WorkspaceSymbol => {
                let query = match args.get("query").and_then(Value::as_str) {
                    Some(q) if !q.is_empty() => q.trim().to_string(),
                    _ => {
                        return self.invalid(
                            "Error: lsp_navigate workspace_symbol requires a query.".into(),
                            "workspace_symbol requires a query",
                        )
                    }
                };
                cancellable(&ctx, lsp.workspace_symbols(&path, &query))
                    .await?
                    .map(|(_, symbols)| self.format_symbols(&symbols))
            }
            Op::Position(_) | Op::Hover => {
                let (line, character) = (int_arg(&args, "line"), int_arg(&args, "character"));
                let (Ok(Some(line)), Ok(character)) = (line, character) else {
                    return self.invalid(
                        format!("Error: lsp_navigate {op} requires 1-based line and character."),
                        &format!("{op} requires 1-based line and character"),
                    );
                };
                let position = Position::new(line, character.unwrap_or(0));
                match op_kind {
                    Op::Position(kind) => cancellable(&ctx, lsp.locations(kind, &path, position))
                        .await?
                        .map(|(_, locations)| self.format_locations(&op, &locations)),
                    _ => cancellable(&ctx, lsp.hover(&path, position))
                        .await?
                        .map(|(_, text)| self.format_hover(&display, position, text)),
                }
            }
        };
        match outcome {
            Ok(text) => Ok(ToolOutput::text(text)),
            Err(err) if err.is_unavailable() => Ok(ToolOutput::text(self.unavailable(&path, &err))),
            Err(err) => match self.zero {
                true => Ok(ToolOutput::error(format!(
                    "Error: lsp_navigate failed: {err}"
                ))),
                false => Err(ToolError::Failed(format!("lsp_navigate failed: {err}"))),
            },
        }
    }
}

impl LspNavigate {
    fn unavailable(&self, path: &Path, err: &LspError) -> String {
        match self.zero {
            true => {
                let base = path
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                format!("No language server available for {base} — lsp_navigate is unavailable for this file type. Fall back to grep/read_file.")
            }
            false => format!(
                "{err}: lsp_navigate is unavailable for this file type. Use grep and read_file instead."
            ),
        }
    }

    fn format_locations(&self, op: &str, locations: &[Location]) -> String {
        if locations.is_empty() {
            return format!("No {op} results.");
        }
        let mut lines = vec![format!("{} {op} result(s):", locations.len())];
        let mut context = Context::default();
        for (i, location) in locations.iter().enumerate() {
            if !self.zero && i == MAX_RESULTS {
                lines.push(format!("  … {} more", locations.len() - MAX_RESULTS));
                break;
            }
            let shown = self.confine.location(location);
            match self.zero {
                true => lines.push(format!("  {shown}")),
                false => lines.push(context.with_line(&self.confine, shown, location)),
            }
        }
        lines.join("\n")
    }

    fn format_symbols(&self, symbols: &[Symbol]) -> String {
        if symbols.is_empty() {
            return "No matching symbols.".into();
        }
        let mut lines = vec![format!("{} symbol(s):", symbols.len())];
        let mut context = Context::default();
        for (i, symbol) in symbols.iter().enumerate() {
            if !self.zero && i == MAX_RESULTS {
                lines.push(format!("  … {} more", symbols.len() - MAX_RESULTS));
                break;
            }
            let shown = self.confine.location(&symbol.location);
            let kind = match self.zero {
                true => zero_kind(symbol.kind),
                false => kind_name(symbol.kind),
            };
            let head = format!("{kind} {} — ", symbol.name);
            match self.zero {
                true => lines.push(format!("  {head}{shown}")),
                false => {
                    let line = context.with_line(&self.confine, shown, &symbol.location);
                    lines.push(format!("  {head}{}", line.trim_start()));
                }
            }
        }
        lines.join("\n")
    }

    fn format_hover(&self, display: &str, at: Position, text: Option<String>) -> String {
        match text {
            None => "No hover information.".into(),
            Some(text) => format!(
                "Hover at {display}:{}:{}:\n{text}",
                at.line + 1,
                at.character + 1
            ),
        }
    }
}

/// The files read for lines of context, kept for one result.
#[derive(Default)]
struct Context {
    files: HashMap<PathBuf, Option<Vec<String>>>,
}

impl Context {
    /// `  shown: <the line>` (the line trimmed) when the location is a file inside the
    /// workspace that can be read; else `  shown`.
    fn with_line(&mut self, confine: &Confine, shown: String, location: &Location) -> String {
        let line = location_path(location)
            .filter(|p| confine.contains(p))
            .and_then(|path| {
                let lines = self.files.entry(path.clone()).or_insert_with(|| {
                    std::fs::read(&path).ok().map(|bytes| {
                        String::from_utf8_lossy(&bytes)
                            .lines()
                            .map(str::to_string)
                            .collect()
                    })
                });
                lines
                    .as_ref()?
                    .get(location.range.start.line as usize)
                    .map(|l| l.trim().to_string())
            })
            .filter(|l| !l.is_empty());
        match line {
            Some(line) => format!("  {shown}: {}", clip(&line, 200)),
            None => format!("  {shown}"),
        }
    }
}

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Zero's short names of symbol kinds.
fn zero_kind(kind: SymbolKind) -> &'static str {
    match kind {
        SymbolKind::CLASS => "class",
        SymbolKind::METHOD => "method",
        SymbolKind::FIELD => "field",
        SymbolKind::INTERFACE => "interface",
        SymbolKind::FUNCTION => "function",
        SymbolKind::VARIABLE => "variable",
        SymbolKind::CONSTANT => "constant",
        SymbolKind::STRUCT => "struct",
        _ => "symbol",
    }
}

/// The name of every symbol kind.
fn kind_name(kind: SymbolKind) -> &'static str {
    match kind {
        SymbolKind::FILE => "file",
        SymbolKind::MODULE => "module",
        SymbolKind::NAMESPACE => "namespace",
        SymbolKind::PACKAGE => "package",
        SymbolKind::PROPERTY => "property",
        SymbolKind::CONSTRUCTOR => "constructor",
        SymbolKind::ENUM => "enum",
        SymbolKind::STRING => "string",
        SymbolKind::NUMBER => "number",
        SymbolKind::BOOLEAN => "boolean",
        SymbolKind::ARRAY => "array",
        SymbolKind::OBJECT => "object",
        SymbolKind::KEY => "key",
        SymbolKind::NULL => "null",
        SymbolKind::ENUM_MEMBER => "enum member",
        SymbolKind::EVENT => "event",
        SymbolKind::OPERATOR => "operator",
        SymbolKind::TYPE_PARAMETER => "type parameter",
        other => zero_kind(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_read_the_way_zero_reads_them() {
        assert_eq!(path_arg(&json!({"file_path": "a.py"})), Ok("a.py"));
        assert_eq!(path_arg(&json!({})), Err("path is required".into()));
        assert_eq!(
            path_arg(&json!({"path": ""})),
            Err("path must be a non-empty string".into())
        );
        assert_eq!(
            path_arg(&json!({"path": 3})),
            Err("path must be a string".into())
        );
        assert_eq!(int_arg(&json!({"line": 3}), "line"), Ok(Some(2)));
        assert_eq!(int_arg(&json!({"line": "4"}), "line"), Ok(Some(3)));
        assert_eq!(int_arg(&json!({"line": 2.0}), "line"), Ok(Some(1)));
        assert_eq!(int_arg(&json!({}), "line"), Ok(None));
        assert!(int_arg(&json!({"line": 0}), "line").is_err());
        assert!(int_arg(&json!({"line": 1.5}), "line").is_err());
        assert_eq!(kind_name(SymbolKind::ENUM_MEMBER), "enum member");
        assert_eq!(zero_kind(SymbolKind::ENUM), "symbol");
        assert_eq!(clip("abcdef", 3), "abc…");
    }
}
