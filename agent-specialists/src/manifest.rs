//! Specialist manifests: Zero's markdown format, parsed with line numbers for errors.
//!
//! ```markdown
//! ---
//! name: api-review
//! description: Reviews API changes for compatibility and missing tests.
//! extends: code-review        # optional base specialist
//! model: gpt-4.1              # optional; empty inherits the parent's model
//! reasoningEffort: high       # optional
//! tools:                      # categories or tool ids; default read-only
//!   - read-only
//!   - plan
//! ---
//!
//! Review API changes for behaviour regressions, compatibility breaks and missing tests.
//! ```
//!
//! The frontmatter is a flat `key: value` list (values may be quoted; `#` starts a comment
//! line); `tools` is a block list (`- item` lines) or an inline one (`[a, b]`). The body is
//! the system prompt; when it is empty the description stands in for it (with a warning).
//! Unknown keys are warnings, not errors.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_core::{ReasoningLevel, SideEffect, Tool};
use serde::{Deserialize, Serialize};

/// Tool names no specialist may be given: a child cannot start, read or stop other
/// specialists (unless a host allows nesting, see [`crate::TaskTools::max_depth`]).
pub const TASK_TOOL_NAMES: [&str; 3] = ["Task", "TaskOutput", "TaskStop"];

/// Names a manifest may not list in `tools` (Zero also forbids its `GenerateSpecialist`).
const FORBIDDEN_TOOLS: [&str; 4] = ["Task", "TaskOutput", "TaskStop", "GenerateSpecialist"];

/// Where a specialist comes from; a later scope overrides an earlier one of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Location {
    /// Compiled in: `worker`, `explorer`, `code-review`.
    Builtin,
    /// `$XDG_CONFIG_HOME/zero/specialists/*.md`.
    User,
    /// `<workspace>/.zero/specialists/*.md`.
    Project,
}

impl Location {
    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Builtin => "builtin",
            Self::User => "user",
            Self::Project => "project",
        }
    }
}

/// A group of tools a manifest can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ToolCategory {
    /// `read-only`: the tools that only read (side effect `read`): read_file, list_dir,
    /// glob, grep.
    #[serde(rename = "read-only")]
    ReadOnly,
    /// `edit`: the read-only tools plus those that write files (write_file, edit_file).
    #[serde(rename = "edit")]
    Edit,
    /// `execute`: the read-only tools plus those that run commands (bash).
    #[serde(rename = "execute")]
    Execute,
    /// `plan`: the plan checklist tool (`plan`, Zero's `update_plan`).
    #[serde(rename = "plan")]
    Plan,
}

impl ToolCategory {
    /// The manifest name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::Edit => "edit",
            Self::Execute => "execute",
            Self::Plan => "plan",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "read-only" => Self::ReadOnly,
            "edit" => Self::Edit,
            "execute" => Self::Execute,
            "plan" => Self::Plan,
            _ => return None,
        })
    }

    /// True when `tool` belongs to this category.
    pub fn contains(self, tool: &dyn Tool) -> bool {
        let effect = tool.side_effect();
        match self {
            Self::ReadOnly => effect == SideEffect::Read,
            Self::Edit => matches!(effect, SideEffect::Read | SideEffect::Write),
            Self::Execute => matches!(effect, SideEffect::Read | SideEffect::Shell),
            Self::Plan => matches!(tool.name(), "plan" | "update_plan"),
        }
    }
}

/// One entry of a manifest's `tools`: a category or a tool id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ToolSelector {
    /// All tools of a category.
    Category(ToolCategory),
    /// One tool by name (Zero's names `list_directory`, `update_plan` and `exec_command`
    /// also match `list_dir`, `plan` and `bash`).
    Tool(String),
}

impl ToolSelector {
    /// True when `tool` is selected.
    pub fn selects(&self, tool: &dyn Tool) -> bool {
        match self {
            Self::Category(category) => category.contains(tool),
            Self::Tool(id) => {
                let name = tool.name();
                name == id
                    || matches!(
                        (id.as_str(), name),
                        ("list_directory", "list_dir")
                            | ("update_plan", "plan")
                            | ("exec_command", "bash")
                    )
            }
        }
    }
}

impl fmt::Display for ToolSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Category(category) => f.write_str(category.as_str()),
            Self::Tool(id) => f.write_str(id),
        }
    }
}

/// What kind of problem a [`ManifestError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ManifestErrorKind {
    /// One manifest is invalid (or unreadable); Zero skips it with a warning.
    Manifest,
    /// A specialist directory exists but cannot be read; Zero fails to load specialists.
    Directory,
    /// An `extends` names a missing base or makes a cycle; Zero fails to load specialists.
    Extends,
}

/// A bad manifest: the file, the line (1-based) when one is to blame, and what is wrong.
/// Displayed as `path:line: message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ManifestError {
    /// The manifest file (or directory).
    pub path: PathBuf,
    /// The line at fault, when there is one.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
    /// What kind of problem it is.
    pub kind: ManifestErrorKind,
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

/// A named sub-agent: its prompt, tools and model settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Specialist {
    /// Lower-case id: letters, digits and dashes, starting with a letter.
    pub name: String,
    /// Short summary, shown to the model in the `Task` tool's description.
    pub description: String,
    /// The base specialist it was built on, if any (already applied in a registry).
    pub extends: Option<String>,
    /// The model to use; `None` inherits the parent's.
    pub model: Option<String>,
    /// The reasoning level; `None` inherits the parent's (unless `model` is set).
    pub reasoning: Option<ReasoningLevel>,
    /// The tools it may use, as the manifest names them; empty means `read-only`.
    pub tools: Vec<ToolSelector>,
    /// The system prompt.
    pub system_prompt: String,
    /// Where it comes from.
    pub location: Location,
    /// Its manifest file (`None` for a built-in).
    pub path: Option<PathBuf>,
    /// Things worth telling the user that did not stop it loading.
    pub warnings: Vec<String>,
    /// The line of `extends`, for errors found when it is resolved.
    pub(crate) extends_line: Option<usize>,
}

impl Specialist {
    /// A specialist made in code (for hosts that register their own): read-only tools,
    /// the parent's model.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        system_prompt: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            extends: None,
            model: None,
            reasoning: None,
            tools: Vec::new(),
            system_prompt: system_prompt.into(),
            location: Location::Builtin,
            path: None,
            warnings: Vec::new(),
            extends_line: None,
        }
    }

    /// Sets the tools.
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = ToolSelector>) -> Self {
        self.tools = tools.into_iter().collect();
        self
    }

    /// Sets the model.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sets the reasoning level.
    pub fn with_reasoning(mut self, reasoning: ReasoningLevel) -> Self {
        self.reasoning = Some(reasoning);
        self
    }

    /// The tools as selected: the manifest's, or `read-only` when it names none.
    pub fn selectors(&self) -> Vec<ToolSelector> {
        match self.tools.is_empty() {
            true => vec![ToolSelector::Category(ToolCategory::ReadOnly)],
            false => self.tools.clone(),
        }
    }

    /// The tools of `available` this specialist gets, in `available`'s order. The `Task`
    /// tools are never among them.
    pub fn select_tools(&self, available: &[Arc<dyn Tool>]) -> Vec<Arc<dyn Tool>> {
        let selectors = self.selectors();
        available
            .iter()
            .filter(|tool| !TASK_TOOL_NAMES.contains(&tool.name()))
            .filter(|tool| selectors.iter().any(|s| s.selects(tool.as_ref())))
            .cloned()
            .collect()
    }

    /// True when every tool it may select only reads (or keeps the plan): it cannot change
    /// the workspace or run commands.
    pub fn is_read_only(&self) -> bool {
        self.selectors().iter().all(|s| {
            matches!(
                s,
                ToolSelector::Category(ToolCategory::ReadOnly | ToolCategory::Plan)
            )
        })
    }
}

/// `^[a-z][a-z0-9-]{0,63}$`, Zero's rule for specialist names.
pub(crate) fn valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    match bytes.split_first() {
        Some((first, rest)) => {
            first.is_ascii_lowercase()
                && rest.len() <= 63
                && rest
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        }
        None => false,
    }
}

/// A tool id a manifest may name: what tool names are made of (MCP tools included).
fn valid_tool_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'))
}

/// Strips matching quotes; a double-quoted value may use JSON escapes.
fn unquote(value: &str) -> String {
    let value = value.trim();
    let bytes = value.as_bytes();
    if bytes.len() >= 2 && bytes[0] == bytes[bytes.len() - 1] && matches!(bytes[0], b'"' | b'\'') {
        if bytes[0] == b'"' {
            if let Ok(text) = serde_json::from_str::<String>(value) {
                return text.trim().to_string();
            }
        }
        return value[1..value.len() - 1].trim().to_string();
    }
    value.to_string()
}

/// A value of the frontmatter with the line it is on.
type Lined = (String, usize);

#[derive(Default)]
struct Frontmatter {
    name: Option<Lined>,
    description: Option<Lined>,
    extends: Option<Lined>,
    model: Option<Lined>,
    reasoning: Option<Lined>,
    tools: Option<Vec<Lined>>,
    warnings: Vec<String>,
}

/// Parses one manifest. `path` names it in errors.
pub fn parse_manifest(
    text: &str,
    path: &Path,
    location: Location,
) -> Result<Specialist, ManifestError> {
    let err = |line: Option<usize>, message: String| ManifestError {
        path: path.to_path_buf(),
        line,
        message,
        kind: ManifestErrorKind::Manifest,
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let normalized = text.replace("\r\n", "\n");
    let lines: Vec<&str> = normalized.split('\n').collect();
    // Index of the closing `---` (0-based), when there is frontmatter.
    let (front, body, body_line) = match lines.first().map(|l| l.trim()) {
        Some("---") => match lines[1..].iter().position(|l| l.trim() == "---") {
            Some(i) => (&lines[1..=i], lines[i + 2..].join("\n"), i + 3),
            None => {
                return Err(err(
                    Some(1),
                    "the frontmatter opened here is never closed with a `---` line".into(),
                ))
            }
        },
        _ => (&lines[..0], normalized.clone(), 1),
    };
    let fm = parse_frontmatter(front).map_err(|(line, message)| err(Some(line), message))?;
    let Some((name, name_line)) = fm.name.clone().filter(|(n, _)| !n.is_empty()) else {
        return Err(err(
            Some(1),
            "the specialist has no name (add `name:` to the frontmatter)".into(),
        ));
    };
    if !valid_name(&name) {
        return Err(err(
            Some(name_line),
            format!(
                "invalid specialist name {name:?}: use lower-case letters, digits and dashes, \
                 starting with a letter (at most 64)"
            ),
        ));
    }
    let description = fm.description.clone().map(|(d, _)| d).unwrap_or_default();
    let extends = fm.extends.clone().filter(|(e, _)| !e.is_empty());
    if let Some((base, line)) = &extends {
        if !valid_name(base) {
            return Err(err(
                Some(*line),
                format!("invalid base specialist name {base:?} in `extends`"),
            ));
        }
    }
    if description.is_empty() && extends.is_none() {
        return Err(err(
            Some(1),
            format!("specialist {name:?} needs a `description:`"),
        ));
    }
    let reasoning = match &fm.reasoning {
        Some((value, _)) if value.is_empty() => None,
        Some((value, line)) => Some(value.parse::<ReasoningLevel>().map_err(|_| {
            err(
                Some(*line),
                format!(
                    "unknown reasoningEffort {value:?}: expected off, minimum, low, medium, \
                     high, xhigh or max"
                ),
            )
        })?),
        None => None,
    };
    let mut tools = Vec::new();
    for (item, line) in fm.tools.iter().flatten() {
        if FORBIDDEN_TOOLS.contains(&item.as_str()) {
            return Err(err(
                Some(*line),
                format!("specialists cannot be given {item:?}: a specialist cannot start, read or stop other specialists"),
            ));
        }
        let selector = match ToolCategory::parse(item) {
            Some(category) => ToolSelector::Category(category),
            None if valid_tool_id(item) => ToolSelector::Tool(item.clone()),
            None => {
                return Err(err(
                    Some(*line),
                    format!(
                        "unknown tool or category {item:?}: use read-only, edit, execute, plan \
                         or a tool name"
                    ),
                ))
            }
        };
        if !tools.contains(&selector) {
            tools.push(selector);
        }
    }
    let mut warnings = fm.warnings;
    let mut system_prompt = body.trim().to_string();
    if system_prompt.is_empty() {
        if !description.is_empty() && extends.is_none() {
            system_prompt = description.clone();
            warnings.push("the body is empty: the description is used as the system prompt".into());
        } else if extends.is_none() {
            return Err(err(
                Some(body_line.min(lines.len())),
                "the system prompt (the text after the frontmatter) is empty".into(),
            ));
        }
    }
    Ok(Specialist {
        name,
        description,
        model: fm.model.map(|(m, _)| m).filter(|m| !m.is_empty()),
        reasoning,
        tools,
        system_prompt,
        location,
        path: Some(path.to_path_buf()),
        warnings,
        extends_line: extends.as_ref().map(|(_, line)| *line),
        extends: extends.map(|(e, _)| e),
    })
}

/// Parses the frontmatter lines (`front[0]` is line 2 of the file). An error is its line
/// and message.
fn parse_frontmatter(front: &[&str]) -> Result<Frontmatter, (usize, String)> {
    let mut fm = Frontmatter::default();
    let mut seen: Vec<(String, usize)> = Vec::new();
    let mut j = 0;
    while j < front.len() {
        let line_no = j + 2;
        let line = front[j].trim();
        j += 1;
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err((line_no, format!("expected `key: value`, found {line:?}")));
        };
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() {
            return Err((line_no, "a frontmatter line has an empty key".into()));
        }
        if let Some((_, first)) = seen.iter().find(|(k, _)| k == key) {
            return Err((
                line_no,
                format!("duplicate key {key:?} (first on line {first})"),
            ));
        }
        seen.push((key.to_string(), line_no));
        if key == "tools" {
            fm.tools = Some(match value {
                "" => {
                    let mut items = Vec::new();
                    while j < front.len() {
                        let item = front[j].trim();
                        if item.is_empty() {
                            j += 1;
                            continue;
                        }
                        let Some(item) = item.strip_prefix('-') else {
                            break;
                        };
                        let item = unquote(item);
                        if item.is_empty() {
                            return Err((j + 2, "empty item in the `tools` list".into()));
                        }
                        items.push((item, j + 2));
                        j += 1;
                    }
                    items
                }
                inline => {
                    let Some(inner) = inline.strip_prefix('[').and_then(|v| v.strip_suffix(']'))
                    else {
                        return Err((
                            line_no,
                            "`tools` must be a list: `[read-only, plan]` or `- item` lines".into(),
                        ));
                    };
                    inner
                        .split(',')
                        .map(unquote)
                        .filter(|item| !item.is_empty())
                        .map(|item| (item, line_no))
                        .collect()
                }
            });
            continue;
        }
        let value = (unquote(value), line_no);
        match key {
            "name" => fm.name = Some(value),
            "description" => fm.description = Some(value),
            "extends" => fm.extends = Some(value),
            "model" => fm.model = Some(value),
            "reasoningEffort" => fm.reasoning = Some(value),
            other => fm.warnings.push(format!(
                "line {line_no}: unknown frontmatter key {other:?} (ignored)"
            )),
        }
    }
    Ok(fm)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Specialist, ManifestError> {
        parse_manifest(text, Path::new("/p/x.md"), Location::Project)
    }

    #[test]
    fn a_full_manifest_parses() {
        let spec = parse(
            "---\nname: api-review\ndescription: \"Reviews APIs\"\nextends: code-review\n\
             model: gpt-4.1\nreasoningEffort: HIGH\n# a comment\ntools:\n  - read-only\n\n  - plan\n  - 'web_fetch'\ncolor: blue\n---\n\nReview it.\n",
        )
        .expect("valid");
        assert_eq!(spec.name, "api-review");
        assert_eq!(spec.description, "Reviews APIs");
        assert_eq!(spec.extends.as_deref(), Some("code-review"));
        assert_eq!(spec.extends_line, Some(4));
        assert_eq!(spec.model.as_deref(), Some("gpt-4.1"));
        assert_eq!(spec.reasoning, Some(ReasoningLevel::High));
        assert_eq!(
            spec.tools,
            vec![
                ToolSelector::Category(ToolCategory::ReadOnly),
                ToolSelector::Category(ToolCategory::Plan),
                ToolSelector::Tool("web_fetch".into())
            ]
        );
        assert_eq!(spec.system_prompt, "Review it.");
        assert_eq!(spec.warnings.len(), 1, "{:?}", spec.warnings);
        assert!(spec.warnings[0].contains("line 13") && spec.warnings[0].contains("color"));
    }

    #[test]
    fn inline_lists_crlf_and_a_description_as_prompt() {
        let spec = parse(
            "---\r\nname: a1\r\ndescription: Does a.\r\ntools: [edit, \"execute\"]\r\n---\r\n",
        )
        .expect("valid");
        assert_eq!(spec.tools.len(), 2);
        assert_eq!(spec.system_prompt, "Does a.");
        assert_eq!(spec.warnings.len(), 1);
    }

    #[test]
    fn errors_name_the_line() {
        let cases: [(&str, usize, &str); 11] = [
            (
                "---\nname: a\ndescription b\n---\nx",
                3,
                "expected `key: value`",
            ),
            ("---\nname: a\nname: b\n---\nx", 3, "first on line 2"),
            (
                "---\nname: a\ndescription: d\ntools: read-only\n---\nx",
                4,
                "must be a list",
            ),
            (
                "---\nname: a\ndescription: d\ntools:\n  - read-only\n  - Task\n---\nx",
                6,
                "cannot be given \"Task\"",
            ),
            (
                "---\nname: a\ndescription: d\ntools:\n  - rm -rf\n---\nx",
                5,
                "unknown tool",
            ),
            (
                "---\nname: a\ndescription: d\ntools:\n  -\n---\nx",
                5,
                "empty item",
            ),
            (
                "---\nname: Bad_Name\ndescription: d\n---\nx",
                2,
                "invalid specialist name",
            ),
            (
                "---\nname: a\ndescription: d\nreasoningEffort: lots\n---\nx",
                4,
                "reasoningEffort",
            ),
            ("---\nname: a\ndescription: d\n", 1, "never closed"),
            ("---\ndescription: d\n---\nx", 1, "no name"),
            ("---\nname: a\n---\n\n", 1, "needs a `description:`"),
        ];
        for (text, line, message) in cases {
            let err = parse(text).expect_err(text);
            assert_eq!(err.line, Some(line), "{text:?}: {err}");
            assert!(err.message.contains(message), "{text:?}: {err}");
            assert!(err.to_string().starts_with(&format!("/p/x.md:{line}: ")));
        }
    }

    #[test]
    fn a_description_is_required_unless_the_manifest_extends_another() {
        let err =
            parse("---\nname: a\ndescription: \"\"\nextends: \"\"\n---\n").expect_err("empty");
        assert_eq!(err.line, Some(1));
        let ok = parse("---\nname: a\nextends: worker\n---\n").expect("extends fills the prompt");
        assert!(ok.system_prompt.is_empty());
    }

    #[test]
    fn names_follow_zero() {
        assert!(valid_name("code-review"));
        assert!(valid_name("a"));
        assert!(!valid_name("1a"));
        assert!(!valid_name("A"));
        assert!(!valid_name(""));
        assert!(!valid_name(&"a".repeat(65)));
        assert!(valid_name(&"a".repeat(64)));
    }
}
