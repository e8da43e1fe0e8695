//! Tool catalogues: the names, argument shapes and descriptions each program offers its
//! model, as a table over the one implementation of each tool.
//!
//! - [`Catalogue::Sdk`]: this crate's own names (`read_file`, `list_dir`, `plan`, …); the
//!   ZCode and ACP servers offer it.
//! - [`Catalogue::Zero`]: `zero exec`'s (`list_directory`, `update_plan`, `ask_user`, …).
//! - [`Catalogue::Zut`]: `zut rpc`'s (`read`, `write`, `edit`, `bash`, `grep`, `plan`, and
//!   its web capability: `web_search`, `web_open`, `web_find`, `web_click`, offered
//!   together when a search backend is configured — [`Catalogue::group`]).
//!
//! A catalogue entry renames an SDK tool and, where the program's arguments differ, gives
//! its schema and the translation of its arguments into the SDK tool's (and of the result,
//! where the program words it differently). A call made with the SDK name of a renamed
//! tool (a transcript recorded before the catalogue, an old script) still reaches it
//! ([`agent_core::Tool::answers_to`]).
//!
//! Names the programs have that belong to other work are reserved in the table
//! ([`Catalogue::reserved`]): a tool of that name added to a set (`with`, `push`) takes its
//! place; none is built here.

use std::path::Path;
use std::sync::Arc;

use agent_core::tool::ToolWrapper;
use agent_core::{async_trait, permission::Assessment, Tool, ToolContext, ToolError, ToolOutput};
use serde_json::{json, Map, Value};

/// Which program's tool names and argument shapes a [`crate::ToolSet`] offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Catalogue {
    /// The SDK's own names (ZCode and ACP servers).
    #[default]
    Sdk,
    /// `zero exec`'s names.
    Zero,
    /// `zut rpc`'s names.
    Zut,
}

/// A catalogue entry: the program's name for an SDK tool and how its calls translate.
#[derive(Clone, Copy)]
pub(crate) struct Entry {
    /// The program's name.
    pub(crate) name: &'static str,
    /// The SDK tool it is.
    pub(crate) base: &'static str,
    /// The program's description, when it differs.
    pub(crate) description: Option<&'static str>,
    /// The program's argument schema, when it differs.
    pub(crate) parameters: Option<fn() -> Value>,
    /// The program's arguments into the SDK tool's.
    pub(crate) args: Option<fn(Value) -> Result<Value, String>>,
    /// The SDK tool's result into the program's words.
    pub(crate) output: Option<fn(&Value, ToolOutput) -> ToolOutput>,
}

const fn same(name: &'static str) -> Entry {
    Entry {
        name,
        base: name,
        description: None,
        parameters: None,
        args: None,
        output: None,
    }
}

const fn renamed(name: &'static str, base: &'static str) -> Entry {
    Entry {
        name,
        base,
        description: None,
        parameters: None,
        args: None,
        output: None,
    }
}

/// Zero's core tools (`internal/tools/registry.go`, `CoreToolsScoped`), in its order.
const ZERO: &[Entry] = &[
    same("read_file"),
    same("view_image"),
    renamed("list_directory", "list_dir"),
    Entry {
        parameters: Some(zero_glob_schema),
        args: Some(zero_glob_args),
        ..same("glob")
    },
    same("grep"),
    same("ask_user"),
    same("write_file"),
    same("edit_file"),
    same("apply_patch"),
    Entry {
        description: Some(
            "Create or update the plan for implementation or investigation. Pass the full \
             ordered list of steps each call; it replaces the previous plan. Each item needs a \
             `content` string; `status` is pending, in_progress, completed or failed (default \
             pending), and at most one item stays in_progress.",
        ),
        parameters: Some(zero_plan_schema),
        args: Some(zero_plan_args),
        output: Some(zero_plan_output),
        ..renamed("update_plan", "plan")
    },
    same("exec_command"),
    same("write_stdin"),
    same("bash"),
    same("web_fetch"),
    same("web_search"),
];

/// Zero's tools that other work builds (`read_minified_file`, `lsp_navigate`: issue 35's
/// agent-lsp; `skill`: issue 29; `request_permissions`).
const ZERO_RESERVED: &[&str] = &[
    "read_minified_file",
    "lsp_navigate",
    "skill",
    "request_permissions",
];

/// zut's built-in tools (`packages/agent/tools`), in its order.
const ZUT: &[Entry] = &[
    Entry {
        description: Some("Read a file. Images (png/jpg/gif/webp) return inline."),
        parameters: Some(zut_read_schema),
        ..renamed("read", "read_file")
    },
    Entry {
        description: Some("Write a file. Creates parent dirs. Overwrites."),
        parameters: Some(zut_write_schema),
        ..renamed("write", "write_file")
    },
    Entry {
        description: Some(
            "Apply exact substitutions to an existing file. Inspect that file before editing and \
             take every oldText directly from its current contents. Use a verbatim excerpt with \
             enough surrounding text to identify exactly one location; choose write when \
             replacing most or all of a file.",
        ),
        parameters: Some(zut_edit_schema),
        args: Some(zut_edit_args),
        ..renamed("edit", "edit_file")
    },
    Entry {
        parameters: Some(zut_bash_schema),
        args: Some(zut_bash_args),
        ..same("bash")
    },
    Entry {
        parameters: Some(zut_grep_schema),
        ..same("grep")
    },
    same("plan"),
    // zut's web capability (packages/agent/tools/web_page.go): built for this catalogue
    // under zut's names, arguments and texts (crate::web::browse).
    same("web_search"),
    same("web_open"),
    same("web_find"),
    same("web_click"),
];

/// zut's web capability (`WebCapabilityNames`): offered, allowed and denied as one;
/// `web_search` is the name that selects it.
const ZUT_WEB: &[&str] = &["web_search", "web_open", "web_find", "web_click"];

/// zut's tools that other work builds (`lsp`, `lsp_diagnostics`: issue 35's agent-lsp;
/// `skill`: issue 29, agent-core's skills).
const ZUT_RESERVED: &[&str] = &["lsp", "lsp_diagnostics", "skill"];

impl Catalogue {
    /// The catalogue's table; `None` for the SDK's own (every tool as it is).
    pub(crate) fn entries(self) -> Option<&'static [Entry]> {
        match self {
            Self::Sdk => None,
            Self::Zero => Some(ZERO),
            Self::Zut => Some(ZUT),
        }
    }

    /// The catalogue's names, in its order (the reserved ones not included).
    pub fn names(self) -> Vec<&'static str> {
        self.entries()
            .map(|e| e.iter().map(|e| e.name).collect())
            .unwrap_or_default()
    }

    /// Names the program has that tools built elsewhere provide (added to a set, they keep
    /// their names).
    pub fn reserved(self) -> &'static [&'static str] {
        match self {
            Self::Sdk => &[],
            Self::Zero => ZERO_RESERVED,
            Self::Zut => ZUT_RESERVED,
        }
    }

    /// The catalogue's name for SDK tool `base`, if it offers it.
    pub fn name_of(self, base: &str) -> Option<&'static str> {
        self.entries()?
            .iter()
            .find(|e| e.base == base)
            .map(|e| e.name)
    }

    /// The tools offered only together with `name` (itself included), if `name` is one of a
    /// capability the program offers whole: zut's web tools. Naming one of them in an
    /// allow- or deny-list names them all.
    pub fn group(self, name: &str) -> Option<&'static [&'static str]> {
        match self {
            Self::Zut if ZUT_WEB.contains(&name) => Some(ZUT_WEB),
            _ => None,
        }
    }

    /// Drops the tools of a [`group`](Self::group) that `tools` does not hold whole (a
    /// filter that kept some of them, as a read-only filter keeps `web_find` but not
    /// `web_open`).
    pub fn retain_whole_groups(self, tools: &mut Vec<Arc<dyn Tool>>) {
        let names: Vec<String> = tools.iter().map(|t| t.name().to_string()).collect();
        tools.retain(|t| {
            self.group(t.name())
                .is_none_or(|group| group.iter().all(|g| names.iter().any(|n| n == g)))
        });
    }

    /// The SDK name of the catalogue's tool `name`, if it is one of the table's.
    pub fn base_of(self, name: &str) -> Option<&'static str> {
        self.entries()?
            .iter()
            .find(|e| e.name == name)
            .map(|e| e.base)
    }
}

/// Arranges `tools` (SDK names) as `catalogue` offers them: the table's tools in its order,
/// renamed and reshaped; the SDK tools it does not list are dropped.
pub(crate) fn arrange(catalogue: Catalogue, tools: Vec<Arc<dyn Tool>>) -> Vec<Arc<dyn Tool>> {
    let Some(entries) = catalogue.entries() else {
        return tools;
    };
    entries
        .iter()
        .filter_map(|entry| {
            let inner = tools.iter().find(|t| t.name() == entry.base)?.clone();
            Some(
                match entry.name == entry.base
                    && entry.args.is_none()
                    && entry.parameters.is_none()
                    && entry.description.is_none()
                    && entry.output.is_none()
                {
                    true => inner,
                    false => Arc::new(Listed {
                        entry: *entry,
                        inner,
                    }) as Arc<dyn Tool>,
                },
            )
        })
        .collect()
}

/// An SDK tool under a catalogue's name and argument shape.
struct Listed {
    entry: Entry,
    inner: Arc<dyn Tool>,
}

impl Listed {
    fn translate(&self, args: Value) -> Result<Value, ToolError> {
        match self.entry.args {
            Some(translate) => translate(args)
                .map_err(|e| ToolError::InvalidArguments(format!("{}: {e}", self.entry.name))),
            None => Ok(args),
        }
    }
}

#[async_trait]
impl ToolWrapper for Listed {
    fn inner(&self) -> &dyn Tool {
        &*self.inner
    }

    fn name(&self) -> &str {
        self.entry.name
    }

    fn description(&self) -> &str {
        self.entry
            .description
            .unwrap_or_else(|| self.inner.description())
    }

    fn parameters(&self) -> Value {
        match self.entry.parameters {
            Some(schema) => schema(),
            None => self.inner.parameters(),
        }
    }

    fn assess(&self, args: &Value, cwd: &Path) -> Assessment {
        let args = self
            .translate(args.clone())
            .unwrap_or_else(|_| args.clone());
        self.inner.assess(&args, cwd)
    }

    fn call_target(&self, args: &Value) -> agent_core::permission::CallTarget {
        let args = self
            .translate(args.clone())
            .unwrap_or_else(|_| args.clone());
        self.inner.call_target(&args)
    }

    fn sandbox_escalation(&self, args: &Value) -> Option<agent_core::sandbox::SandboxEscalation> {
        let args = self
            .translate(args.clone())
            .unwrap_or_else(|_| args.clone());
        self.inner.sandbox_escalation(&args)
    }

    fn answers_to(&self, name: &str) -> bool {
        name == self.entry.base || self.inner.answers_to(name)
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let translated = self.translate(args.clone())?;
        let output = self.inner.call(translated, ctx).await?;
        Ok(match self.entry.output {
            Some(render) => render(&args, output),
            None => output,
        })
    }
}

fn object(args: Value) -> Result<Map<String, Value>, String> {
    match args {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        _ => Err("the arguments must be a JSON object".to_string()),
    }
}

// ----------------------------------------------------------------------------------------
// Zero

fn zero_glob_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Glob pattern to match, for example \"**/*.go\"."},
            "cwd": {"type": "string", "description": "Directory to scan. Relative paths stay in the workspace. Defaults to workspace root.", "default": "."}
        },
        "required": ["pattern"],
        "additionalProperties": false
    })
}

fn zero_glob_args(args: Value) -> Result<Value, String> {
    let mut map = object(args)?;
    if let Some(cwd) = map.remove("cwd") {
        map.entry("path").or_insert(cwd);
    }
    Ok(Value::Object(map))
}

fn zero_plan_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "plan": {
                "type": "array",
                "description": "Ordered list of plan items, replacing any previous plan.",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string", "description": "The plan step description."},
                        "status": {"type": "string", "description": "Status of this step.", "enum": ["pending", "in_progress", "completed", "failed"]},
                        "notes": {"type": "string", "description": "Optional notes for this step."}
                    },
                    "required": ["content"]
                }
            }
        },
        "required": ["plan"],
        "additionalProperties": false
    })
}

/// Zero's coercion of a free-form status to its four (failed is kept as Zero's word in the
/// text; the SDK checklist has no failed state and counts it completed).
fn zero_status(status: &str) -> &'static str {
    match status.trim().to_ascii_lowercase().as_str() {
        "completed" | "complete" | "done" | "finished" | "resolved" | "✓" | "x" | "[x]" => {
            "completed"
        }
        "in_progress" | "in-progress" | "inprogress" | "in progress" | "active" | "doing"
        | "started" | "current" | "wip" | "ongoing" | "running" => "in_progress",
        "failed" | "fail" | "error" | "errored" | "blocked" | "cancelled" | "canceled"
        | "abandoned" | "skipped" => "failed",
        _ => "pending",
    }
}

/// Zero's plan items: `content` (or the SDK's `step`), a coerced status, at most one
/// in_progress (the last).
fn zero_plan_items(args: &Value) -> Result<Vec<(String, &'static str, String)>, String> {
    let items = args
        .get("plan")
        .and_then(Value::as_array)
        .ok_or("plan must be an array")?;
    let mut plan = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let content = item
            .get("content")
            .or_else(|| item.get("step"))
            .and_then(Value::as_str)
            .filter(|c| !c.trim().is_empty())
            .ok_or(format!("plan item {} content is required", i + 1))?;
        let status = zero_status(item.get("status").and_then(Value::as_str).unwrap_or(""));
        let notes = item.get("notes").and_then(Value::as_str).unwrap_or("");
        plan.push((content.to_string(), status, notes.to_string()));
    }
    if let Some(last) = plan.iter().rposition(|(_, s, _)| *s == "in_progress") {
        for (i, item) in plan.iter_mut().enumerate() {
            if i != last && item.1 == "in_progress" {
                item.1 = "completed";
            }
        }
    }
    Ok(plan)
}

fn zero_plan_args(args: Value) -> Result<Value, String> {
    let plan = zero_plan_items(&args)?;
    let steps: Vec<Value> = plan
        .iter()
        .map(|(content, status, _)| {
            let status = if *status == "failed" {
                "completed"
            } else {
                status
            };
            json!({"step": content, "status": status})
        })
        .collect();
    Ok(json!({ "plan": steps }))
}

fn zero_plan_output(args: &Value, output: ToolOutput) -> ToolOutput {
    if output.is_error {
        return output;
    }
    let Ok(plan) = zero_plan_items(args) else {
        return output;
    };
    let text = match plan.is_empty() {
        true => "Plan is currently empty.".to_string(),
        false => {
            let lines: Vec<String> = plan
                .iter()
                .enumerate()
                .map(|(i, (content, status, notes))| match notes.is_empty() {
                    true => format!("{}. [{status}] {content}", i + 1),
                    false => format!("{}. [{status}] {content}\n   Notes: {notes}", i + 1),
                })
                .collect();
            format!("Current Plan:\n{}", lines.join("\n"))
        }
    };
    ToolOutput {
        content: vec![agent_core::ContentBlock::text(text)],
        ..output
    }
}

// ----------------------------------------------------------------------------------------
// zut

fn zut_read_schema() -> Value {
    json!({"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer"},"limit":{"type":"integer"}},"required":["path"]})
}

fn zut_write_schema() -> Value {
    json!({"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]})
}

fn zut_edit_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File to modify, given as an absolute path or one relative to the working directory."},
            "edits": {
                "type": "array",
                "description": "A set of non-overlapping substitutions, all located in the file content as it existed before this call.",
                "items": {
                    "type": "object",
                    "properties": {
                        "oldText": {"type": "string", "description": "A verbatim excerpt from the file being modified with enough surrounding text to identify exactly one location, without intersecting another edit."},
                        "newText": {"type": "string", "description": "Content that will replace the matched excerpt."}
                    },
                    "required": ["oldText", "newText"]
                }
            }
        },
        "required": ["path", "edits"]
    })
}

fn zut_edit_args(args: Value) -> Result<Value, String> {
    let mut map = object(args)?;
    let Some(edits) = map.remove("edits") else {
        // The SDK's own shape (old_string/new_string) passes as it is.
        return Ok(Value::Object(map));
    };
    let edits = edits.as_array().ok_or("edits must be an array")?;
    if edits.is_empty() {
        return Err("at least one edit is required".to_string());
    }
    let mut ops = Vec::with_capacity(edits.len());
    for (i, edit) in edits.iter().enumerate() {
        let text = |key: &str| {
            edit.get(key)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or(format!("edit {}: {key} is required", i + 1))
        };
        ops.push(json!({"old_string": text("oldText")?, "new_string": text("newText")?}));
    }
    map.insert("edits".to_string(), Value::Array(ops));
    Ok(Value::Object(map))
}

fn zut_bash_schema() -> Value {
    json!({"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"integer","minimum":1,"maximum":600,"description":"Maximum command runtime in seconds."}},"required":["command","timeout"]})
}

fn zut_bash_args(args: Value) -> Result<Value, String> {
    let mut map = object(args)?;
    if let Some(timeout) = map.remove("timeout") {
        let seconds = timeout
            .as_u64()
            .filter(|s| (1..=600).contains(s))
            .ok_or("timeout must be between 1 and 600 seconds")?;
        map.insert("timeout_ms".to_string(), json!(seconds * 1000));
    }
    Ok(Value::Object(map))
}

fn zut_grep_schema() -> Value {
    json!({"type":"object","properties":{"pattern":{"type":"string","description":"Regular expression to search for."},"path":{"type":"string","description":"File or directory to search recursively."}},"required":["pattern","path"],"additionalProperties":false})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_plans_translate_and_render_as_zero_does() {
        let args = json!({"plan": [
            {"content": "read", "status": "done"},
            {"content": "write", "status": "in_progress", "notes": "carefully"},
            {"content": "test", "status": "blocked"},
            {"step": "ship"}
        ]});
        assert_eq!(
            zero_plan_args(args.clone()).expect("valid"),
            json!({"plan": [
                {"step": "read", "status": "completed"},
                {"step": "write", "status": "in_progress"},
                {"step": "test", "status": "completed"},
                {"step": "ship", "status": "pending"}
            ]})
        );
        let out = zero_plan_output(&args, ToolOutput::text("Plan updated"));
        assert_eq!(
            out.text_content(),
            "Current Plan:\n1. [completed] read\n2. [in_progress] write\n   Notes: carefully\n3. [failed] test\n4. [pending] ship"
        );
        assert!(zero_plan_args(json!({"plan": [{"status": "done"}]})).is_err());
    }

    #[test]
    fn zut_arguments_translate() {
        assert_eq!(
            zut_edit_args(json!({"path": "a", "edits": [{"oldText": "x", "newText": "y"}]}))
                .expect("valid"),
            json!({"path": "a", "edits": [{"old_string": "x", "new_string": "y"}]})
        );
        assert_eq!(
            zut_bash_args(json!({"command": "ls", "timeout": 5})).expect("valid"),
            json!({"command": "ls", "timeout_ms": 5000})
        );
        assert!(zut_bash_args(json!({"command": "ls", "timeout": 0})).is_err());
    }

    #[test]
    fn names_map_both_ways() {
        assert_eq!(Catalogue::Zero.name_of("list_dir"), Some("list_directory"));
        assert_eq!(Catalogue::Zero.base_of("update_plan"), Some("plan"));
        assert_eq!(Catalogue::Zut.name_of("read_file"), Some("read"));
        assert_eq!(Catalogue::Sdk.name_of("read_file"), None);
        assert!(Catalogue::Zero.reserved().contains(&"lsp_navigate"));
        assert_eq!(Catalogue::Zut.group("web_find"), Some(ZUT_WEB));
        assert_eq!(Catalogue::Zut.group("read"), None);
        assert_eq!(Catalogue::Zero.group("web_search"), None);
    }
}
