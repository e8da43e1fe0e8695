//! Skills: reusable instruction sets the model loads on demand.
//!
//! A skill is a directory holding a `SKILL.md`: optional frontmatter with `name` (default:
//! the directory's name) and `description`, then the body — the instructions. The system
//! prompt lists each skill's name and description only ([`Skills::prompt_section`]); the
//! model loads a body with the `skill` tool ([`SKILL_TOOL`], arguments `name` or its alias
//! `skill`), and an unknown name gets the list of names. Discovery
//! ([`Skills::discover`]) reads only the frontmatter of each `SKILL.md`; a body is read
//! when the model asks for it.
//!
//! An embedder gives an agent skills with [`crate::AgentBuilder::skills`], from roots or
//! made in memory ([`Skill::new`]):
//!
//! ```
//! use agent_core::skills::{Skill, Skills};
//!
//! let skills = Skills::new([Skill::new("release", "Cut a release", "1. Bump the version…")]);
//! let listing = skills.prompt_section().expect("one skill");
//! assert!(listing.contains("- release: Cut a release"));
//! ```
//!
//! The texts the model sees (the listing, the tool's description, schema and messages)
//! are Zero's.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::frontmatter::{self, is_text, read_bounded, text_prefix, Split};
use crate::tool::{SideEffect, Tool, ToolContext, ToolError, ToolOutput};

/// The name of the skill tool.
pub const SKILL_TOOL: &str = "skill";

/// The name of a skill's file in its directory.
pub const SKILL_FILE: &str = "SKILL.md";

/// The most bytes of a `SKILL.md` read for its frontmatter at discovery.
pub const MAX_FRONTMATTER_BYTES: usize = 16 * 1024;

/// The most bytes of a skill's file the `skill` tool returns; a longer body is cut with a
/// note.
pub const MAX_SKILL_BYTES: usize = 256 * 1024;

/// The skill tool's description unless [`Skills::with_tool_description`] sets another.
pub const DEFAULT_TOOL_DESCRIPTION: &str = "Load a named skill and return its instructions as \
the tool output. Skills are reusable, on-demand instruction sets (e.g. project conventions or \
review checklists). Call this when a relevant skill exists; an unknown name returns the list of \
available skills.";

/// Zero's description of the skill tool (`zero exec`'s).
pub const ZERO_TOOL_DESCRIPTION: &str = "Load a named Zero skill and return its instructions as \
the tool output. Skills are reusable, on-demand instruction sets (including shared \
~/.agents/skills and any contributed by plugins). Call this when a relevant skill exists; an \
unknown name returns the list of available skills.";

/// Bytes of the prompt listing spent on skills before the rest are counted only.
const LIST_BUDGET: usize = 4096;
/// Characters of a description kept in the listing.
const MAX_DESCRIPTION_CHARS: usize = 200;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Body {
    /// Read from this `SKILL.md` on use.
    File(PathBuf),
    /// Given in memory.
    Text(String),
}

/// One skill: its name, description, and where its body is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    name: String,
    description: String,
    body: Body,
}

impl Skill {
    /// A skill made in memory.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        body: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into().trim().to_string(),
            description: description.into().trim().to_string(),
            body: Body::Text(body.into().trim().to_string()),
        }
    }

    /// The name the model loads it by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The one-line description listed in the system prompt (may be empty).
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Its `SKILL.md`, for a discovered skill.
    pub fn path(&self) -> Option<&Path> {
        match &self.body {
            Body::File(path) => Some(path),
            Body::Text(_) => None,
        }
    }

    /// The instructions: the text after the frontmatter, trimmed (read from the file now,
    /// for a discovered skill; cut to [`MAX_SKILL_BYTES`] with a note).
    pub fn body(&self) -> Result<String, SkillError> {
        let path = match &self.body {
            Body::Text(text) => return Ok(text.clone()),
            Body::File(path) => path,
        };
        let (bytes, longer) =
            read_bounded(path, MAX_SKILL_BYTES).map_err(|source| SkillError::Unreadable {
                path: path.clone(),
                source,
            })?;
        if !is_text(&bytes) {
            return Err(SkillError::NotText { path: path.clone() });
        }
        let text = text_prefix(&bytes).replace("\r\n", "\n");
        let body = match frontmatter::split(&text) {
            Split::Closed { body, .. } => body,
            Split::None(body) => body,
            Split::Unclosed => return Err(SkillError::Unclosed { path: path.clone() }),
        };
        let mut body = body.trim().to_string();
        if longer {
            body.push_str(&format!(
                "\n\n[… truncated: {} is longer than {MAX_SKILL_BYTES} bytes]",
                path.display()
            ));
        }
        Ok(body)
    }
}

/// Reading a skill failed.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not text (a NUL byte, or not UTF-8).
    #[error("{} is not a text file", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
    },
    /// The frontmatter opens with `---` and never closes.
    #[error("{}: the frontmatter is not closed (no line `---` after the first)", path.display())]
    Unclosed {
        /// The file.
        path: PathBuf,
    },
    /// The name (from the frontmatter or the directory) is not one the model can call.
    #[error("{}: invalid skill name {name:?} (letters, digits, `.`, `_`, `-` and `:` only)", path.display())]
    InvalidName {
        /// The file.
        path: PathBuf,
        /// The name.
        name: String,
    },
}

/// A skill root's problem, or a `SKILL.md` skipped at discovery.
#[derive(Debug, thiserror::Error)]
pub enum SkillWarning {
    /// A `SKILL.md` that is malformed or could not be read was skipped.
    #[error("skipping skill {}: {error}", path.display())]
    Skipped {
        /// The `SKILL.md`.
        path: PathBuf,
        /// Why.
        error: SkillError,
    },
    /// A root that exists but is not a readable directory.
    #[error("skipping skills root {}: {source}", path.display())]
    Root {
        /// The root.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// What [`Skills::discover`] found.
#[derive(Debug, Default)]
#[must_use = "the warnings should be reported"]
pub struct DiscoveredSkills {
    /// The skills.
    pub skills: Skills,
    /// What was skipped, for the front end to report in its own way.
    pub warnings: Vec<SkillWarning>,
}

/// A set of skills, sorted by name, names unique. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Skills {
    list: Arc<[Skill]>,
    tool_description: Arc<str>,
}

impl Default for Skills {
    fn default() -> Self {
        Self {
            list: Arc::from(Vec::new()),
            tool_description: Arc::from(DEFAULT_TOOL_DESCRIPTION),
        }
    }
}

impl PartialEq for Skills {
    fn eq(&self, other: &Self) -> bool {
        self.list == other.list
    }
}

impl Skills {
    /// The skills given; of two with one name the first is kept.
    pub fn new(skills: impl IntoIterator<Item = Skill>) -> Self {
        let mut seen = HashSet::new();
        let mut list: Vec<Skill> = skills
            .into_iter()
            .filter(|s| !s.name.is_empty() && seen.insert(s.name.clone()))
            .collect();
        list.sort_by(|a, b| a.name.cmp(&b.name));
        Self {
            list: Arc::from(list),
            ..Self::default()
        }
    }

    /// The skills of `roots`: every `<root>/<dir>/SKILL.md`, reading only its frontmatter.
    /// Earlier roots win a name clash (and within a root, the first directory by name). A
    /// missing root holds nothing; a malformed or unreadable `SKILL.md`, a symlink leading
    /// out of its root, and a root that is not a directory are skipped with a warning.
    pub fn discover<P: AsRef<Path>>(roots: impl IntoIterator<Item = P>) -> DiscoveredSkills {
        let mut found = Vec::new();
        let mut warnings = Vec::new();
        for root in roots {
            discover_root(root.as_ref(), &mut found, &mut warnings);
        }
        DiscoveredSkills {
            skills: Skills::new(found),
            warnings,
        }
    }

    /// The same skills with `text` as the skill tool's description.
    #[must_use = "returns the changed value"]
    pub fn with_tool_description(mut self, text: impl Into<String>) -> Self {
        self.tool_description = Arc::from(text.into());
        self
    }

    /// Adds `other`'s skills whose names this set does not have.
    #[must_use = "returns the merged set"]
    pub fn merged(self, other: &Skills) -> Self {
        let description = self.tool_description.clone();
        let mut merged = Skills::new(self.list.iter().chain(other.list.iter()).cloned());
        merged.tool_description = description;
        merged
    }

    /// Whether there is no skill.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// How many skills there are.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// The skills, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.list.iter()
    }

    /// The skill called `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.list.iter().find(|s| s.name == name)
    }

    /// The names, comma-separated.
    fn names(&self) -> String {
        self.list
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The system prompt's list of skills (Zero's `<available_skills>` block: names and
    /// descriptions, never bodies; past 4 KiB the rest are counted); `None` without skills.
    pub fn prompt_section(&self) -> Option<String> {
        if self.list.is_empty() {
            return None;
        }
        let mut out = String::from(
            "<available_skills>\nReusable, on-demand instruction sets you can load with the skill \
             tool. Before acting on a request, scan this list; when the request matches a skill's \
             name or description, call skill with its exact name FIRST and follow the loaded \
             guidance — do not guess names, do not skip a matching skill, and do not substitute \
             your own approach for its instructions.\n",
        );
        let (mut listed, mut spent, mut omitted) = (0, 0, 0);
        for skill in self.list.iter() {
            let mut line = format!("- {}", skill.name);
            if !skill.description.is_empty() {
                line.push_str(": ");
                line.push_str(&short_description(&skill.description));
            }
            line.push('\n');
            if listed > 0 && spent + line.len() > LIST_BUDGET {
                omitted += 1;
                continue;
            }
            spent += line.len();
            listed += 1;
            out.push_str(&line);
        }
        if omitted > 0 {
            out.push_str(&format!(
                "- …and {omitted} more (call skill with a name; an unknown name lists them all)\n"
            ));
        }
        out.push_str("</available_skills>");
        Some(out)
    }

    /// The `skill` tool over these skills.
    pub fn tool(&self) -> SkillTool {
        SkillTool {
            skills: self.clone(),
        }
    }
}

/// A description cut to 200 characters (with `…`).
fn short_description(description: &str) -> String {
    match description.char_indices().nth(MAX_DESCRIPTION_CHARS) {
        None => description.to_string(),
        Some((at, _)) => format!("{}…", description[..at].trim()),
    }
}

/// Whether `name` is one the model can call a skill by.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | ':'))
}

fn discover_root(root: &Path, found: &mut Vec<Skill>, warnings: &mut Vec<SkillWarning>) {
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return,
        Err(source) => {
            warnings.push(SkillWarning::Root {
                path: root.to_path_buf(),
                source,
            });
            return;
        }
    };
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let mut dirs: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    dirs.sort();
    for (dir_name, dir) in dirs {
        let manifest = dir.join(SKILL_FILE);
        let Ok(real) = std::fs::canonicalize(&manifest) else {
            continue;
        };
        if !real.starts_with(&real_root) {
            warnings.push(SkillWarning::Skipped {
                path: manifest,
                error: SkillError::Unreadable {
                    path: real,
                    source: std::io::Error::new(
                        std::io::ErrorKind::PermissionDenied,
                        "it leads out of the skills root",
                    ),
                },
            });
            continue;
        }
        match read_skill(&dir_name, &real) {
            Ok(skill) => found.push(skill),
            Err(error) => warnings.push(SkillWarning::Skipped {
                path: manifest,
                error,
            }),
        }
    }
}

/// The skill of `path` (a `SKILL.md` in directory `dir_name`), from its frontmatter.
fn read_skill(dir_name: &str, path: &Path) -> Result<Skill, SkillError> {
    let (bytes, _) =
        read_bounded(path, MAX_FRONTMATTER_BYTES).map_err(|source| SkillError::Unreadable {
            path: path.to_path_buf(),
            source,
        })?;
    if !is_text(&bytes) {
        return Err(SkillError::NotText {
            path: path.to_path_buf(),
        });
    }
    let text = text_prefix(&bytes).replace("\r\n", "\n");
    let (name, description) = match frontmatter::split(&text) {
        Split::None(_) => (None, None),
        Split::Closed { front, .. } => (
            frontmatter::value(front, "name"),
            frontmatter::value(front, "description"),
        ),
        // Also when the file goes on past the bytes read: frontmatter longer than that is
        // not a skill's.
        Split::Unclosed => {
            return Err(SkillError::Unclosed {
                path: path.to_path_buf(),
            })
        }
    };
    let name = name.unwrap_or_else(|| dir_name.to_string());
    if !valid_name(&name) {
        return Err(SkillError::InvalidName {
            path: path.to_path_buf(),
            name,
        });
    }
    Ok(Skill {
        name,
        description: description.unwrap_or_default(),
        body: Body::File(path.to_path_buf()),
    })
}

/// The `skill` tool: `{name}` (or `{skill}`) returns that skill's body; an unknown name is
/// an error listing the names there are. Read-only, allowed without asking.
#[derive(Debug, Clone)]
pub struct SkillTool {
    skills: Skills,
}

#[async_trait]
impl Tool for SkillTool {
    fn name(&self) -> &str {
        SKILL_TOOL
    }

    fn description(&self) -> &str {
        &self.skills.tool_description
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The name of the skill to load."},
                "skill": {"type": "string", "description": "Alias for name; supply either name or skill."}
            },
            "additionalProperties": false
        })
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }

    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let name = ["name", "skill"]
            .iter()
            .filter_map(|key| args.get(key).and_then(Value::as_str))
            .map(str::trim)
            .find(|name| !name.is_empty());
        let Some(name) = name else {
            return Ok(ToolOutput::error(
                "Error: Invalid arguments for skill: name is required",
            ));
        };
        if self.skills.is_empty() {
            return Ok(ToolOutput::error("Error: no skills are available."));
        }
        let Some(skill) = self.skills.get(name) else {
            return Ok(ToolOutput::error(format!(
                "Error: unknown skill {}. Available skills: {}.",
                serde_json::to_string(name).unwrap_or_else(|_| format!("{name:?}")),
                self.skills.names()
            )));
        };
        match skill.body() {
            Ok(body) => Ok(ToolOutput::text(body)),
            Err(err) => Ok(ToolOutput::error(format!(
                "Error: failed to load skill {name}: {err}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(path, text).expect("write");
    }

    fn call(tool: &SkillTool, args: Value) -> ToolOutput {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        rt.block_on(tool.call(args, ToolContext::new(".")))
            .expect("call")
    }

    #[test]
    fn discovery_reads_frontmatter_first_root_wins_and_skips_malformed_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        write(
            &a.join("review/SKILL.md"),
            "---\nname: review\ndescription: Reviews a change\n---\n\nCheck the tests.\n",
        );
        write(&a.join("plain/SKILL.md"), "No frontmatter at all.");
        write(&a.join("broken/SKILL.md"), "---\nname: broken\nno end");
        write(&a.join("binary/SKILL.md"), "---\0");
        write(&a.join("no-manifest/README.md"), "not a skill");
        write(
            &b.join("review/SKILL.md"),
            "---\nname: review\ndescription: Shadowed\n---\nOther.",
        );
        write(
            &b.join("deploy/SKILL.md"),
            "---\ndescription: Ships it\n---\nShip.",
        );
        let found = Skills::discover([&a, &b, &dir.path().join("missing")]);
        let names: Vec<&str> = found.skills.iter().map(Skill::name).collect();
        assert_eq!(names, ["deploy", "plain", "review"]);
        assert_eq!(
            found.skills.get("review").expect("review").description(),
            "Reviews a change"
        );
        let warnings: Vec<String> = found.warnings.iter().map(|w| w.to_string()).collect();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings
            .iter()
            .any(|w| w.contains("broken/SKILL.md") && w.contains("frontmatter is not closed")));
        assert!(warnings
            .iter()
            .any(|w| w.contains("binary/SKILL.md") && w.contains("not a text file")));
        let review = found.skills.get("review").expect("review");
        assert_eq!(review.body().expect("body"), "Check the tests.");
    }

    #[test]
    fn the_listing_names_and_describes_only() {
        let skills = Skills::new([
            Skill::new("zeta", "", "Z body"),
            Skill::new("alpha", "First one", "A body"),
        ]);
        let section = skills.prompt_section().expect("section");
        assert!(section.starts_with("<available_skills>\nReusable, on-demand"));
        assert!(section.ends_with("- alpha: First one\n- zeta\n</available_skills>"));
        assert!(!section.contains("body"));
        assert_eq!(Skills::default().prompt_section(), None);
        let long = Skill::new("long", "d".repeat(300), "");
        let section = Skills::new([long]).prompt_section().expect("section");
        assert!(section.contains(&format!("- long: {}…\n", "d".repeat(200))));
    }

    #[test]
    fn the_listing_counts_what_is_past_its_budget() {
        let many = (0..100).map(|i| Skill::new(format!("s{i:03}"), "x".repeat(100), ""));
        let section = Skills::new(many).prompt_section().expect("section");
        assert!(section.contains("more (call skill with a name; an unknown name lists them all)"));
        assert!(section.len() < LIST_BUDGET + 1024);
    }

    #[test]
    fn the_tool_returns_a_body_or_the_list() {
        let skills = Skills::new([
            Skill::new("alpha", "A", "Alpha body"),
            Skill::new("beta", "B", "Beta body"),
        ]);
        let tool = skills.tool();
        assert_eq!(tool.name(), "skill");
        let out = call(&tool, json!({"name": "alpha"}));
        assert!(!out.is_error);
        assert_eq!(out.text_content(), "Alpha body");
        let out = call(&tool, json!({"skill": " beta "}));
        assert_eq!(out.text_content(), "Beta body");
        let out = call(&tool, json!({"name": "nope"}));
        assert!(out.is_error);
        assert_eq!(
            out.text_content(),
            "Error: unknown skill \"nope\". Available skills: alpha, beta."
        );
        let out = call(&tool, json!({}));
        assert_eq!(
            out.text_content(),
            "Error: Invalid arguments for skill: name is required"
        );
        let out = call(&Skills::default().tool(), json!({"name": "x"}));
        assert_eq!(out.text_content(), "Error: no skills are available.");
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_out_of_the_root_is_not_followed() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(
            &dir.path().join("secret/SKILL.md"),
            "---\nname: s\n---\nsecret",
        );
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("s")).expect("dir");
        std::os::unix::fs::symlink(dir.path().join("secret/SKILL.md"), root.join("s/SKILL.md"))
            .expect("ln");
        let found = Skills::discover([&root]);
        assert!(found.skills.is_empty());
        assert!(found.warnings[0]
            .to_string()
            .contains("leads out of the skills root"));
    }
}
