//! zut's `lsp` tool (bnema/zut `packages/agent/tools/lsp.go`): its actions, arguments and
//! texts: each server's raw answer as indented JSON under its id, diagnostics as zut's
//! summary. Read-only here: `rename` and `code_actions` preview their edits
//! (`apply:false`), and `request` (a raw method, which may change files) is refused.

use std::path::Path;
use std::time::Duration;

use agent_core::permission::Assessment;
use agent_core::{async_trait, SideEffect, Tool, ToolContext, ToolError, ToolOutput};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::navigate::cancellable;
use super::{str_arg, Confine};
use crate::error::LspError;
use crate::format::{zut_summary, FileDiagnostic, ZUT_CAP};
use crate::manager::Lsp;
use crate::uri::file_uri_string;

/// zut's bound on the tool's text.
const MAX_OUTPUT: usize = 60 * 1024;

const SCHEMA: &str = r#"{"type":"object","properties":{"action":{"type":"string","enum":["diagnostics","definition","references","hover","symbols","rename","code_actions","type_definition","implementation","status","reload","capabilities","request"]},"path":{"type":"string","description":"File path relative to the workspace, required for document actions."},"line":{"type":"integer","minimum":1,"description":"1-based line for a document action."},"column":{"type":"integer","minimum":1,"description":"1-based column for a document action."},"query":{"type":"string","description":"Workspace symbol query; symbols uses document symbols when omitted."},"new_name":{"type":"string","description":"New identifier for rename."},"server":{"type":"string","description":"Optional server id for request or capabilities."},"method":{"type":"string","description":"Raw LSP method for request."},"params":{"type":"object","description":"Raw JSON-RPC params for request."},"apply":{"type":"boolean","description":"Apply a returned rename/code-action WorkspaceEdit. Only files inside the workspace are accepted."},"timeout_ms":{"type":"integer","minimum":1},"max":{"type":"integer","minimum":1,"maximum":50},"run_cli":{"type":"boolean","description":"Run configured CLI linters for diagnostics (default true)."}},"required":["action"]}"#;

/// zut's `lsp` tool.
#[derive(Debug, Clone)]
pub struct ZutLsp {
    lsp: Lsp,
    confine: Confine,
}

#[derive(Debug, Default, Deserialize)]
struct Args {
    #[serde(default)]
    action: String,
    #[serde(default)]
    path: String,
    #[serde(default)]
    line: i64,
    #[serde(default)]
    column: i64,
    #[serde(default)]
    query: String,
    #[serde(default)]
    new_name: String,
    #[serde(default)]
    server: String,
    #[serde(default)]
    method: String,
    #[serde(default)]
    apply: Option<bool>,
    #[serde(default)]
    timeout_ms: i64,
    #[serde(default)]
    max: i64,
    #[serde(default)]
    #[allow(dead_code)] // accepted; there are no CLI linters here
    run_cli: Option<bool>,
    #[serde(default)]
    #[allow(dead_code)] // only the refused `request` action reads it
    params: Option<Value>,
}

/// One server's line of `status`, with zut's field names.
#[derive(Debug, Serialize)]
struct ServerStatus {
    id: String,
    kind: &'static str,
    command: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    root: String,
    state: &'static str,
    #[serde(skip_serializing_if = "String::is_empty")]
    error: String,
    #[serde(skip_serializing_if = "is_zero")]
    diagnostics: usize,
    #[serde(skip_serializing_if = "Value::is_null")]
    capabilities: Value,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What one server answered.
struct Response {
    server: String,
    result: Result<Value, LspError>,
}

impl ZutLsp {
    pub(crate) fn new(lsp: Lsp, confine: Confine) -> Self {
        Self { lsp, confine }
    }
}

/// Go's `json.MarshalIndent(v, "", "  ")`: two-space indents, sorted keys, and `<`, `>`,
/// `&`, U+2028 and U+2029 escaped (they occur only inside strings).
fn pretty(value: &Value) -> String {
    let text = serde_json::to_string_pretty(&sorted(value)).unwrap_or_default();
    text.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// `value` with every object's keys in byte order, as Go writes a decoded map. serde_json's
/// map is only sorted without its `preserve_order` feature, which another crate of a program
/// (agent-client-protocol, in this workspace) may turn on.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), sorted(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// zut's bound on the text (60 KiB, cut on a char boundary).
fn bound(text: String) -> String {
    if text.len() <= MAX_OUTPUT {
        return text;
    }
    let suffix = format!("\n... [truncated at {MAX_OUTPUT} bytes]");
    let mut cut = MAX_OUTPUT - suffix.len();
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{suffix}", &text[..cut])
}

fn format_responses(responses: &[Response]) -> (String, bool) {
    let mut out = String::new();
    let mut failed = false;
    for response in responses {
        match &response.result {
            Err(err) => {
                failed = true;
                out.push_str(&format!("{}: error: {err}\n", response.server));
            }
            Ok(value) => out.push_str(&format!("{}:\n{}\n", response.server, pretty(value))),
        }
    }
    match out.is_empty() {
        true => ("No results.".into(), failed),
        false => (out, failed),
    }
}

#[async_trait]
impl Tool for ZutLsp {
    fn name(&self) -> &str {
        "lsp"
    }

    fn description(&self) -> &str {
        "Query configured language servers and linters for diagnostics, navigation, refactors, symbols, capabilities, and raw LSP requests."
    }

    fn parameters(&self) -> Value {
        serde_json::from_str(SCHEMA).unwrap_or_else(|_| json!({"type": "object"}))
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }

    fn assess(&self, args: &Value, _cwd: &Path) -> Assessment {
        let path = str_arg(args, "path").filter(|p| !p.is_empty() && *p != "*");
        self.confine.assess(self.name(), path)
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let mut args: Args = serde_json::from_value(args)
            .map_err(|e| ToolError::Failed(format!("invalid lsp args: {e}")))?;
        args.action = args.action.trim().to_ascii_lowercase();
        if args.action.is_empty() {
            return Err(ToolError::Failed("action is required".into()));
        }
        let path = match args.path.as_str() {
            "" | "*" => None,
            raw => Some(self.confine.resolve(self.name(), raw)?.path),
        };
        let work = self.action(&args, path.as_deref());
        let outcome = match args.timeout_ms {
            ms if ms > 0 => {
                let limit = Duration::from_millis(ms.unsigned_abs());
                match cancellable(&ctx, tokio::time::timeout(limit, work)).await? {
                    Ok(outcome) => outcome,
                    Err(_) => Err(ToolError::Failed("context deadline exceeded".into())),
                }
            }
            _ => cancellable(&ctx, work).await?,
        };
        let (text, failed) = outcome?;
        let text = bound(text);
        Ok(match failed {
            true => ToolOutput::error(text),
            false => ToolOutput::text(text),
        })
    }
}

impl ZutLsp {
    /// The action's text and whether it failed.
    async fn action(&self, args: &Args, path: Option<&Path>) -> Result<(String, bool), ToolError> {
        match args.action.as_str() {
            "diagnostics" => Ok(self.diagnostics(args, path).await),
            "status" => Ok((pretty(&json!(self.status(path))), false)),
            "reload" => {
                self.lsp.reload().await;
                Ok((
                    "Reloaded LSP and linter processes and configuration.".into(),
                    false,
                ))
            }
            "capabilities" => self.capabilities(args, path).await,
            "request" if args.method.trim().is_empty() => {
                Err(ToolError::Failed("method is required for request".into()))
            }
            "request" => Err(ToolError::Failed(format!(
                "the request action ({}) is not available: this lsp tool is read-only",
                args.method.trim()
            ))),
            "definition" | "references" | "hover" | "symbols" | "rename" | "code_actions"
            | "type_definition" | "implementation" => self.language_action(args, path).await,
            other => Err(ToolError::Failed(format!("unknown lsp action {other:?}"))),
        }
    }

    async fn diagnostics(&self, args: &Args, path: Option<&Path>) -> (String, bool) {
        let max = match args.max {
            n if n <= 0 || n > ZUT_CAP as i64 => ZUT_CAP,
            n => n as usize,
        };
        let mut found = Vec::new();
        let mut failed = false;
        let mut first_error = String::new();
        match path {
            Some(path) => match self.lsp.diagnostics(path).await {
                Ok((_, diagnostics)) => {
                    let shown = self.confine.display(path);
                    found.extend(diagnostics.into_iter().map(|diagnostic| FileDiagnostic {
                        path: shown.clone(),
                        diagnostic,
                    }));
                }
                Err(LspError::NoServer(_)) => {}
                Err(err) => {
                    failed = true;
                    first_error = err.to_string();
                }
            },
            None => {
                for (_, file, diagnostics) in self.lsp.published_diagnostics() {
                    let shown = self.confine.display(&file);
                    found.extend(diagnostics.into_iter().map(|diagnostic| FileDiagnostic {
                        path: shown.clone(),
                        diagnostic,
                    }));
                }
            }
        }
        let text = zut_summary(&found, max);
        match failed && found.is_empty() {
            true => (format!("{text}\n{first_error}"), true),
            false => (text, failed),
        }
    }

    fn status(&self, path: Option<&Path>) -> Vec<ServerStatus> {
        let running = self.lsp.running_servers();
        self.lsp
            .specs_for(path)
            .into_iter()
            .map(|spec| {
                let server = running.iter().find(|s| s.id == spec.id);
                let installed = self.lsp.resolves(&spec);
                let (state, error) = match (server, installed) {
                    (Some(_), _) => ("ready", String::new()),
                    (None, true) => ("stopped", String::new()),
                    (None, false) => (
                        "missing",
                        format!(
                            "command {:?} not found in node_modules/.bin, .venv/bin, bin, or PATH",
                            spec.command
                        ),
                    ),
                };
                let root = match (server, path) {
                    (Some(server), _) => self.confine.display(&server.root),
                    (None, Some(path)) => self.confine.display(&self.lsp.root_of(path, &spec)),
                    (None, None) => ".".into(),
                };
                ServerStatus {
                    diagnostics: server.map_or(0, |s| {
                        s.all_diagnostics().iter().map(|(_, d)| d.len()).sum()
                    }),
                    capabilities: server.map_or(Value::Null, |s| s.capabilities.clone()),
                    id: spec.id.clone(),
                    kind: "lsp",
                    command: spec.command.clone(),
                    root,
                    state,
                    error,
                }
            })
            .collect()
    }

    async fn capabilities(
        &self,
        args: &Args,
        path: Option<&Path>,
    ) -> Result<(String, bool), ToolError> {
        let answer = match (args.server.as_str(), path) {
            ("", Some(path)) => self.lsp.capabilities(path).await,
            ("", None) => {
                return Err(ToolError::Failed(
                    "capabilities needs a path or a server".into(),
                ))
            }
            (server, _) => self.lsp.capabilities_of(server).await,
        };
        match answer {
            Ok((id, caps)) => Ok((pretty(&json!({ id: caps })), false)),
            Err(err) => Err(ToolError::Failed(err.to_string())),
        }
    }

    async fn language_action(
        &self,
        args: &Args,
        path: Option<&Path>,
    ) -> Result<(String, bool), ToolError> {
        let action = args.action.as_str();
        if path.is_none() && (action != "symbols" || args.query.is_empty()) {
            return Err(ToolError::Failed(format!("path is required for {action}")));
        }
        if action != "symbols" && (args.line < 1 || args.column < 1) {
            return Err(ToolError::Failed(format!(
                "line and column (1-based) are required for {action}"
            )));
        }
        let position = json!({"line": args.line - 1, "character": args.column - 1});
        let uri = path.map(file_uri_string).unwrap_or_default();
        let document = json!({"uri": uri});
        let (method, params) = match action {
            "symbols" if !args.query.is_empty() => {
                ("workspace/symbol", json!({"query": args.query}))
            }
            "symbols" => (
                "textDocument/documentSymbol",
                json!({"textDocument": document}),
            ),
            "references" => (
                "textDocument/references",
                json!({"textDocument": document, "position": position, "context": {"includeDeclaration": true}}),
            ),
            "code_actions" => {
                if args.apply == Some(true) {
                    return Err(read_only(action));
                }
                (
                    "textDocument/codeAction",
                    json!({"textDocument": document, "range": {"start": position, "end": position}, "context": {"diagnostics": []}}),
                )
            }
            "rename" => {
                if args.new_name.trim().is_empty() {
                    return Err(ToolError::Failed("new_name is required for rename".into()));
                }
                if args.apply != Some(false) {
                    return Err(read_only(action));
                }
                (
                    "textDocument/rename",
                    json!({"textDocument": document, "position": position, "newName": args.new_name}),
                )
            }
            other => {
                let method = match other {
                    "definition" => "textDocument/definition",
                    "hover" => "textDocument/hover",
                    "type_definition" => "textDocument/typeDefinition",
                    _ => "textDocument/implementation",
                };
                (
                    method,
                    json!({"textDocument": document, "position": position}),
                )
            }
        };
        let responses = match path {
            Some(path) => match self.lsp.request(path, method, &params).await {
                Ok((server, value)) => vec![Response {
                    server,
                    result: Ok(value),
                }],
                Err(LspError::NoServer(_)) => Vec::new(),
                Err(err) => vec![Response {
                    server: self.lsp.first_server_for(path).unwrap_or_default(),
                    result: Err(err),
                }],
            },
            None => {
                let mut responses = Vec::new();
                for server in self.lsp.running_servers() {
                    responses.push(Response {
                        server: server.id.clone(),
                        result: server.request(method, &params).await,
                    });
                }
                responses
            }
        };
        Ok(format_responses(&responses))
    }
}

/// `lsp_diagnostics`, for zut's catalogue: the `lsp` tool's `diagnostics` action as a tool
/// of its own (zut's summary of a file's diagnostics, or of every file the running servers
/// reported).
#[derive(Debug, Clone)]
pub struct ZutDiagnostics {
    lsp: ZutLsp,
}

impl ZutDiagnostics {
    pub(crate) fn new(lsp: Lsp, confine: Confine) -> Self {
        Self {
            lsp: ZutLsp::new(lsp, confine),
        }
    }
}

#[async_trait]
impl Tool for ZutDiagnostics {
    fn name(&self) -> &str {
        "lsp_diagnostics"
    }

    fn description(&self) -> &str {
        "Show language-server diagnostics for a file (it is synced and checked first), or for every file the running servers reported when path is omitted. Errors first, repeated issues grouped."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path relative to the workspace; omit for every file the running servers reported."},
                "max": {"type": "integer", "minimum": 1, "maximum": 50}
            }
        })
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }

    fn assess(&self, args: &Value, cwd: &Path) -> Assessment {
        self.lsp.assess(args, cwd)
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let mut args: Args = serde_json::from_value(args)
            .map_err(|e| ToolError::Failed(format!("invalid lsp_diagnostics args: {e}")))?;
        args.action = "diagnostics".into();
        let path = match args.path.as_str() {
            "" | "*" => None,
            raw => Some(self.lsp.confine.resolve(self.name(), raw)?.path),
        };
        let (text, failed) =
            cancellable(&ctx, self.lsp.diagnostics(&args, path.as_deref())).await?;
        let text = bound(text);
        Ok(match failed {
            true => ToolOutput::error(text),
            false => ToolOutput::text(text),
        })
    }
}

fn read_only(action: &str) -> ToolError {
    ToolError::Failed(format!(
        "{action} with apply is not available: this lsp tool is read-only (pass apply:false for a preview)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_indented_and_escaped_as_go_does() {
        let value = json!({"b": "<a & b>", "a": [1]});
        assert_eq!(
            pretty(&value),
            "{\n  \"a\": [\n    1\n  ],\n  \"b\": \"\\u003ca \\u0026 b\\u003e\"\n}"
        );
        let long = "é".repeat(MAX_OUTPUT);
        let cut = bound(long);
        assert!(cut.ends_with("\n... [truncated at 61440 bytes]"));
        assert!(cut.len() <= MAX_OUTPUT);
        let (text, failed) = format_responses(&[]);
        assert_eq!((text.as_str(), failed), ("No results.", false));
    }

    #[test]
    fn the_schema_is_zuts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let tool = ZutLsp::new(
            Lsp::new(dir.path(), crate::LspConfig::builtin()),
            Confine::new(dir.path(), &[]),
        );
        let schema = tool.parameters();
        assert_eq!(schema["required"], json!(["action"]));
        assert_eq!(
            schema["properties"]["action"]["enum"]
                .as_array()
                .map(Vec::len),
            Some(13)
        );
    }
}
