//! Permission rules: `allow`, `ask` and `deny` lists in Claude Code's rule syntax, matched
//! against a tool call and its arguments before the permission mode decides.
//!
//! A rule is `Tool` or `Tool(specifier)`:
//!
//! | Rule | Matches |
//! |---|---|
//! | `Bash`, `Bash(*)` | every call of a shell tool (`bash`, `exec_command`) |
//! | `Bash(npm run build)` | exactly that command |
//! | `Bash(git status:*)`, `Bash(git status *)` | `git status` and `git status …` (not `git statusx`) |
//! | `Bash(git * main)`, `Bash(ls*)` | `*` stands for any text, spaces included |
//! | `Read(./src/**)`, `Read(src/*.rs)` | reads under the workspace (gitignore patterns) |
//! | `Read(/docs/**)` | relative to the project root (the workspace) |
//! | `Read(~/.ssh/**)`, `Read(//etc/**)` | under the home directory; an absolute path |
//! | `Edit(...)`, `Write(...)` | the same, for tools that write files |
//! | `WebFetch(domain:example.com)` | fetches of that host (`*.example.com`: its subdomains) |
//! | `WebSearch` | the web search tool |
//! | `mcp__github`, `mcp__github__*` | every tool of MCP server `github` |
//! | `mcp__github__create_issue` | that MCP tool |
//! | `read_file(./src/**)`, `exec_command(make:*)` | a tool by its own name; the specifier is read as the tool's kind (command, path or `domain:`) |
//!
//! A command line is split into its simple commands as the risk classifier splits it
//! ([`super::shell`]); process wrappers (`timeout`, `time`, `nice`, `nohup`, `stdbuf`) are
//! dropped before matching. An `allow` rule lets a command through only when **every** simple
//! command of it (substitutions included) matches an allow rule, so `Bash(git status:*)`
//! allows `git status -s` and not `git status; rm x`; a line that cannot be parsed matches no
//! allow rule but a bare `Bash`. An `ask` or `deny` rule applies when **any** simple command
//! (or the whole line) matches.
//!
//! Deny wins, then ask, then allow, then the permission mode ([`RuleSet::evaluate`],
//! [`apply`]): a deny rule refuses the call in every mode; an ask rule puts it to the approver
//! even when the mode would allow it (plan mode and the sandbox's hard refusals still deny);
//! an allow rule lets through a call the mode would have put to the approver (never one the
//! mode or the sandbox refuses, nor a request to run outside the sandbox).
//!
//! ```
//! use agent_core::permission::rules::{RuleAction, RuleSet, RuleSource};
//!
//! let mut rules = RuleSet::new();
//! rules
//!     .add_all(RuleAction::Allow, ["Bash(git status:*)", "Read(./src/**)"], &RuleSource::Sdk)
//!     .expect("valid rules");
//! assert!(rules.add(RuleAction::Deny, "Bash(:* rm)", &RuleSource::Sdk).is_err());
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::shell;
use super::target::{absolute, CallTarget};
use super::{PermissionAction, Verdict};
use crate::tool::{SideEffect, Tool};

/// What a rule does with the calls it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleAction {
    /// Refuse the call.
    Deny,
    /// Put the call to the approver.
    Ask,
    /// Run the call without asking.
    Allow,
}

impl RuleAction {
    /// The canonical name (`allow`, `ask`, `deny`: the settings file's list).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }
}

impl fmt::Display for RuleAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a rule came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RuleSource {
    /// Given to the agent builder ([`crate::AgentBuilder::permission_rules`]).
    Sdk,
    /// A settings file (`--settings FILE`, the project's `.claude/settings.json`).
    Settings(PathBuf),
    /// Zero's sandbox grants file.
    Grants(PathBuf),
    /// An "always allow" answer given in this session.
    Session,
}

impl fmt::Display for RuleSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sdk => f.write_str("sdk"),
            Self::Settings(path) => write!(f, "settings {}", path.display()),
            Self::Grants(path) => write!(f, "grants {}", path.display()),
            Self::Session => f.write_str("session"),
        }
    }
}

/// A rule the syntax does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid permission rule {rule:?}: {reason}")]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// What is wrong with it.
    pub reason: String,
}

/// The rule that decided a call, as permission events report it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecidingRule {
    /// The rule as written (`Bash(git status:*)`).
    pub rule: String,
    /// The list it is in.
    pub action: RuleAction,
    /// Where it came from (`sdk`, `settings <file>`, `grants <file>`, `session`).
    pub source: String,
}

impl DecidingRule {
    /// `permission rule allow Bash(git status:*) (settings /p/.claude/settings.json)`.
    pub fn describe(&self) -> String {
        format!(
            "permission rule {} {} ({})",
            self.action, self.rule, self.source
        )
    }
}

/// Which tools a rule names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ToolName {
    /// `Bash`: shell tools.
    Bash,
    /// `Read`: tools that read files.
    Read,
    /// `Edit`, `Write`, `MultiEdit`, `NotebookEdit`: tools that write files.
    Edit,
    /// `WebFetch`: network tools that fetch a URL.
    WebFetch,
    /// `WebSearch`.
    WebSearch,
    /// `mcp__server` / `mcp__server__*` (tool `None`) or `mcp__server__tool`.
    Mcp {
        server: String,
        tool: Option<String>,
    },
    /// A tool by its own name.
    Named(String),
}

/// A rule's specifier.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Spec {
    Command(CommandPattern),
    Path(PathPattern),
    Domain(String),
    /// On a tool named by its own name: read by the tool's kind when matching.
    Raw(String),
}

/// One parsed rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    text: String,
    tool: ToolName,
    spec: Option<Spec>,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for Rule {
    type Err = RuleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Rule::parse(s)
    }
}

impl Rule {
    /// Parses one rule (see the [module docs](self)).
    pub fn parse(text: &str) -> Result<Self, RuleError> {
        let err = |reason: &str| RuleError {
            rule: text.to_string(),
            reason: reason.to_string(),
        };
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(err("a rule names a tool"));
        }
        let (name, spec) = match trimmed.find('(') {
            None => {
                if trimmed.contains(')') {
                    return Err(err("`)` without `(`"));
                }
                (trimmed, None)
            }
            Some(open) => {
                let Some(inner) = trimmed[open + 1..].strip_suffix(')') else {
                    return Err(err("the specifier must end the rule with `)`"));
                };
                let inner = inner.trim();
                if inner.is_empty() {
                    return Err(err("an empty specifier `()`: write the tool alone"));
                }
                let spec = (inner != "*").then_some(inner);
                (trimmed[..open].trim(), spec)
            }
        };
        if name.is_empty() {
            return Err(err("a rule names a tool before `(`"));
        }
        let tool = tool_name(name).map_err(|reason| err(&reason))?;
        let spec = match spec {
            None => None,
            Some(spec) => Some(specifier(&tool, spec).map_err(|reason| err(&reason))?),
        };
        Ok(Self {
            text: trimmed.to_string(),
            tool,
            spec,
        })
    }

    /// The rule as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the rule names `tool`, a call named `name` (which may differ from the tool's
    /// own name: a catalogue's or an earlier one).
    fn names(&self, tool: &dyn Tool, name: &str, target: &CallTarget) -> bool {
        let side_effect = tool.side_effect();
        match &self.tool {
            ToolName::Bash => side_effect == SideEffect::Shell,
            ToolName::Read => side_effect == SideEffect::Read,
            ToolName::Edit => side_effect == SideEffect::Write,
            ToolName::WebFetch => side_effect == SideEffect::Network && target.url.is_some(),
            ToolName::WebSearch => ["web_search", "WebSearch"]
                .iter()
                .any(|n| *n == name || *n == tool.name()),
            ToolName::Mcp { server, tool: one } => {
                mcp_matches(server, one.as_deref(), name)
                    || mcp_matches(server, one.as_deref(), tool.name())
            }
            ToolName::Named(named) => named == name || named == tool.name(),
        }
    }
}

/// Parses a rule's tool name.
fn tool_name(name: &str) -> Result<ToolName, String> {
    if let Some(rest) = name.strip_prefix("mcp__") {
        let (server, tool) = match rest.split_once("__") {
            Some((server, tool)) => (server, Some(tool)),
            None => (rest, None),
        };
        let valid = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        };
        if !valid(server) {
            return Err("an MCP rule is mcp__<server> or mcp__<server>__<tool>".into());
        }
        let tool = match tool {
            None | Some("*") => None,
            Some(tool) if valid(tool) => Some(tool.to_string()),
            Some(_) => return Err("an MCP rule's tool is a name or `*`".into()),
        };
        return Ok(ToolName::Mcp {
            server: server.to_string(),
            tool,
        });
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
    {
        return Err("a tool name is letters, digits, `_`, `-`, `.` and `:`".into());
    }
    Ok(match name {
        "Bash" => ToolName::Bash,
        "Read" => ToolName::Read,
        "Edit" | "Write" | "MultiEdit" | "NotebookEdit" => ToolName::Edit,
        "WebFetch" => ToolName::WebFetch,
        "WebSearch" => ToolName::WebSearch,
        other => ToolName::Named(other.to_string()),
    })
}

/// Parses a specifier for `tool`.
fn specifier(tool: &ToolName, spec: &str) -> Result<Spec, String> {
    match tool {
        ToolName::Bash => CommandPattern::parse(spec).map(Spec::Command),
        ToolName::Read | ToolName::Edit => PathPattern::parse(spec).map(Spec::Path),
        ToolName::WebFetch => domain(spec).map(Spec::Domain),
        ToolName::WebSearch => Err("WebSearch takes no specifier".into()),
        ToolName::Mcp { .. } => Err("an MCP rule takes no specifier".into()),
        ToolName::Named(_) => {
            // Checked the way it will be read: `domain:` for a network tool, else as a
            // command (which accepts every text but a misplaced `:*`).
            match spec.strip_prefix("domain:") {
                Some(_) => domain(spec).map(|_| Spec::Raw(spec.to_string())),
                None => CommandPattern::parse(spec).map(|_| Spec::Raw(spec.to_string())),
            }
        }
    }
}

/// `domain:HOST` → the host, lower-cased.
fn domain(spec: &str) -> Result<String, String> {
    let Some(host) = spec.strip_prefix("domain:") else {
        return Err("a WebFetch specifier is domain:<host>".into());
    };
    let host = host.trim().trim_end_matches('.').to_ascii_lowercase();
    let bare = host.strip_prefix("*.").unwrap_or(&host);
    if bare.is_empty()
        || !bare
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
    {
        return Err("domain:<host> needs a host name (or *.<host>)".into());
    }
    Ok(host)
}

/// A command pattern: `*` stands for any text; `prefix:*` (only at the end) and a pattern
/// whose one `*` ends it after a space match the prefix alone or followed by a space.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CommandPattern {
    /// The pattern with `:*` written as ` *`.
    glob: String,
}

impl CommandPattern {
    fn parse(spec: &str) -> Result<Self, String> {
        let glob = match spec.strip_suffix(":*") {
            Some(prefix) => format!("{} *", prefix.trim_end()),
            None => spec.to_string(),
        };
        if glob.contains(":*") {
            return Err("`:*` is only allowed at the end of a command pattern".into());
        }
        let glob = glob.split_whitespace().collect::<Vec<_>>().join(" ");
        if glob.is_empty() || glob == "*" && spec.ends_with(":*") {
            return Err("a command pattern needs a command".into());
        }
        Ok(Self { glob })
    }

    fn matches(&self, command: &str) -> bool {
        if let Some(prefix) = self.glob.strip_suffix(" *") {
            if !prefix.contains('*') {
                return command == prefix
                    || command
                        .strip_prefix(prefix)
                        .is_some_and(|rest| rest.starts_with(' '));
            }
        }
        wildcard(self.glob.as_bytes(), command.as_bytes())
    }
}

/// `*` matches any run of bytes (spaces included); everything else literally.
fn wildcard(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Where a path pattern is anchored.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Base {
    /// `./p` or `p`: the workspace.
    Cwd,
    /// `/p`: the project root (the workspace).
    Project,
    /// `~/p`: the home directory.
    Home,
    /// `//p`: the file system's root.
    Root,
}

/// A gitignore-style path pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PathPattern {
    base: Base,
    /// Segments of the pattern below its base (`**`, `*`, `?`, `[…]`, `\` escapes).
    segments: Vec<String>,
    /// No `/` inside the pattern: it matches a name at any depth below the base.
    floating: bool,
}

impl PathPattern {
    fn parse(spec: &str) -> Result<Self, String> {
        let (base, rest, anchored) = if let Some(rest) = spec.strip_prefix("//") {
            (Base::Root, rest, true)
        } else if let Some(rest) = spec.strip_prefix("~/") {
            (Base::Home, rest, true)
        } else if spec == "~" {
            (Base::Home, "", true)
        } else if let Some(rest) = spec.strip_prefix('/') {
            (Base::Project, rest, true)
        } else if let Some(rest) = spec.strip_prefix("./") {
            (Base::Cwd, rest, true)
        } else {
            (Base::Cwd, spec, false)
        };
        let rest = rest.trim_end_matches('/');
        let segments: Vec<String> = rest
            .split('/')
            .filter(|s| !s.is_empty() && *s != ".")
            .map(str::to_string)
            .collect();
        if segments.iter().any(|s| s == "..") {
            return Err("a path pattern may not climb out of its base with `..`".into());
        }
        if segments.iter().any(|s| !class_closed(s)) {
            return Err("a `[` character class is not closed".into());
        }
        let floating = !anchored && segments.len() == 1;
        if segments.is_empty() && !anchored {
            return Err("a path pattern needs a path".into());
        }
        Ok(Self {
            base,
            segments,
            floating,
        })
    }

    /// Whether `path` (absolute, clean) is matched: the pattern matches it, or one of its
    /// ancestors below the base (a directory's pattern covers what is in it).
    fn matches(&self, path: &Path, cwd: &Path, home: Option<&Path>) -> bool {
        let base = match self.base {
            Base::Cwd | Base::Project => cwd.to_path_buf(),
            Base::Home => match home {
                Some(home) => home.to_path_buf(),
                None => return false,
            },
            Base::Root => PathBuf::from("/"),
        };
        let Ok(rel) = path.strip_prefix(&base) else {
            return false;
        };
        let names: Vec<String> = rel
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let pattern: Vec<&str> = match self.floating {
            true => std::iter::once("**")
                .chain(self.segments.iter().map(String::as_str))
                .collect(),
            false => self.segments.iter().map(String::as_str).collect(),
        };
        (0..=names.len()).any(|end| glob_segments(&pattern, &names[..end]))
    }
}

fn class_closed(segment: &str) -> bool {
    let mut chars = segment.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '[' if !chars.by_ref().any(|c| c == ']') => return false,
            _ => {}
        }
    }
    true
}

/// Matches path segments against pattern segments; `**` spans any number of segments.
fn glob_segments(pattern: &[&str], names: &[&str]) -> bool {
    match pattern.split_first() {
        None => names.is_empty(),
        Some((&"**", rest)) => (0..=names.len()).any(|skip| glob_segments(rest, &names[skip..])),
        Some((first, rest)) => match names.split_first() {
            Some((name, names)) => {
                glob_name(first.as_bytes(), name.as_bytes()) && glob_segments(rest, names)
            }
            None => false,
        },
    }
}

/// Matches one name: `*` (any run), `?` (one character), `[…]` (`!` or `^` negates; ranges),
/// `\` escapes.
fn glob_name(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|skip| glob_name(rest, &name[skip..])),
        Some((b'?', rest)) => !name.is_empty() && glob_name(rest, &name[1..]),
        Some((b'[', rest)) => {
            let Some(close) = rest.iter().position(|&c| c == b']') else {
                return false;
            };
            let Some((&c, tail)) = name.split_first() else {
                return false;
            };
            let (negate, class) = match rest[..close].split_first() {
                Some((b'!' | b'^', class)) => (true, class),
                _ => (false, &rest[..close]),
            };
            let mut hit = false;
            let mut i = 0;
            while i < class.len() {
                if i + 2 < class.len() && class[i + 1] == b'-' {
                    hit |= class[i] <= c && c <= class[i + 2];
                    i += 3;
                } else {
                    hit |= class[i] == c;
                    i += 1;
                }
            }
            hit != negate && glob_name(&rest[close + 1..], tail)
        }
        Some((b'\\', rest)) if !rest.is_empty() => {
            name.first() == rest.first() && glob_name(&rest[1..], &name[1..])
        }
        Some((&p, rest)) => name.first() == Some(&p) && glob_name(rest, &name[1..]),
    }
}

/// Zero's (and agent-mcp's) sanitised name part: lower-cased, `-` and runs of other
/// characters outside `[a-z0-9_]` as `_`, no leading or trailing `_`.
fn mcp_part(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut in_run = false;
    for c in value.trim().chars().map(|c| c.to_ascii_lowercase()) {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(if c == '-' { '_' } else { c });
            in_run = false;
        } else if !in_run {
            out.push('_');
            in_run = true;
        }
    }
    out.trim_matches('_').to_string()
}

/// Whether tool `name` is server `server`'s tool `tool` (any of its tools for `None`):
/// Claude Code's `mcp__server__tool`, or the `mcp_server_tool` agent-mcp names it.
fn mcp_matches(server: &str, tool: Option<&str>, name: &str) -> bool {
    match tool {
        Some(tool) => {
            name == format!("mcp__{server}__{tool}")
                || name == format!("mcp_{}_{}", mcp_part(server), mcp_part(tool))
        }
        None => {
            name.starts_with(&format!("mcp__{server}__"))
                || name.starts_with(&format!("mcp_{}_", mcp_part(server)))
        }
    }
}

/// Process wrappers dropped before a command is matched.
fn strip_wrappers(mut words: &[String]) -> &[String] {
    loop {
        let Some((first, rest)) = words.split_first() else {
            return words;
        };
        let program = first.rsplit('/').next().unwrap_or(first);
        let skip = match program {
            "nohup" => 0,
            "time" => usize::from(rest.first().is_some_and(|w| w == "-p")),
            "nice" => match rest.first().map(String::as_str) {
                Some("-n") => 2,
                Some(w) if w.starts_with('-') => 1,
                _ => 0,
            },
            "stdbuf" => rest
                .iter()
                .take_while(|w| w.starts_with('-'))
                .map(|w| match w.as_str() {
                    "-i" | "-o" | "-e" => 2,
                    _ => 1,
                })
                .sum(),
            "timeout" => {
                let mut i = 0;
                while let Some(w) = rest.get(i).filter(|w| w.starts_with('-')) {
                    i += match w.as_str() {
                        "-s" | "--signal" | "-k" | "--kill-after" => 2,
                        _ => 1,
                    };
                }
                i + 1 // the duration
            }
            _ => return words,
        };
        match rest.get(skip..) {
            Some(next) if !next.is_empty() => words = next,
            _ => return words,
        }
    }
}

/// A rule with its list and source.
#[derive(Debug, Clone)]
struct Entry {
    action: RuleAction,
    rule: Rule,
    source: RuleSource,
}

/// The permission rules of an agent, from every source, in the order they were added.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    entries: Vec<Entry>,
    home: Option<PathBuf>,
}

impl RuleSet {
    /// No rules; `~/` patterns resolve against `$HOME`.
    pub fn new() -> Self {
        Self {
            entries: Vec::new(),
            home: std::env::var_os("HOME").map(PathBuf::from),
        }
    }

    /// The home directory `~/` patterns resolve against (`None`: they match nothing).
    #[must_use = "returns the changed value"]
    pub fn with_home(mut self, home: Option<PathBuf>) -> Self {
        self.home = home;
        self
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many rules there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Adds one parsed rule.
    pub fn push(&mut self, action: RuleAction, rule: Rule, source: RuleSource) {
        self.entries.push(Entry {
            action,
            rule,
            source,
        });
    }

    /// Parses and adds one rule.
    pub fn add(
        &mut self,
        action: RuleAction,
        rule: &str,
        source: &RuleSource,
    ) -> Result<(), RuleError> {
        self.push(action, Rule::parse(rule)?, source.clone());
        Ok(())
    }

    /// Parses and adds rules; the first bad one is the error and nothing is added.
    pub fn add_all<S: AsRef<str>>(
        &mut self,
        action: RuleAction,
        rules: impl IntoIterator<Item = S>,
        source: &RuleSource,
    ) -> Result<(), RuleError> {
        let parsed = rules
            .into_iter()
            .map(|r| Rule::parse(r.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        for rule in parsed {
            self.push(action, rule, source.clone());
        }
        Ok(())
    }

    /// Adds every rule of `other` after these.
    pub fn extend(&mut self, other: RuleSet) {
        self.entries.extend(other.entries);
    }

    /// The rules, each with its list and source, in order.
    pub fn iter(&self) -> impl Iterator<Item = (RuleAction, &Rule, &RuleSource)> {
        self.entries.iter().map(|e| (e.action, &e.rule, &e.source))
    }

    /// The rule that decides a call of `tool` named `name` with `target`, in a workspace
    /// `cwd`: the first deny rule that matches, else the first ask rule, else an allow rule
    /// (for a command, one that every simple command matches; the first command's is
    /// reported). `None` when no rule decides.
    pub fn evaluate(
        &self,
        tool: &dyn Tool,
        name: &str,
        target: &CallTarget,
        cwd: &Path,
    ) -> Option<DecidingRule> {
        if self.entries.is_empty() {
            return None;
        }
        let call = Call::new(tool, target, cwd);
        let named = |action| {
            self.entries
                .iter()
                .filter(move |e| e.action == action && e.rule.names(tool, name, target))
        };
        let hit = |e: &Entry| DecidingRule {
            rule: e.rule.text.clone(),
            action: e.action,
            source: e.source.to_string(),
        };
        for action in [RuleAction::Deny, RuleAction::Ask] {
            if let Some(entry) = named(action).find(|e| call.any(e, self.home.as_deref())) {
                return Some(hit(entry));
            }
        }
        let allow: Vec<&Entry> = named(RuleAction::Allow).collect();
        call.every(&allow, self.home.as_deref()).map(hit)
    }
}

/// A call as rules see it.
struct Call<'a> {
    side_effect: SideEffect,
    target: &'a CallTarget,
    /// The simple commands of the command, wrappers dropped, words joined by one space;
    /// `None` when it cannot be parsed.
    commands: Option<Vec<String>>,
    /// The paths, absolute; a reading tool naming none reads the workspace.
    paths: Vec<PathBuf>,
    host: Option<String>,
    cwd: &'a Path,
}

impl<'a> Call<'a> {
    fn new(tool: &dyn Tool, target: &'a CallTarget, cwd: &'a Path) -> Self {
        let commands = target.command.as_deref().and_then(|line| {
            shell::simple_commands(line).map(|commands| {
                commands
                    .iter()
                    .map(|words| strip_wrappers(words).join(" "))
                    .collect()
            })
        });
        let side_effect = tool.side_effect();
        let mut paths: Vec<PathBuf> = target
            .paths
            .iter()
            .map(|p| absolute(cwd, Path::new(p)))
            .collect();
        if paths.is_empty() && side_effect == SideEffect::Read && target.command.is_none() {
            paths.push(cwd.to_path_buf());
        }
        Self {
            side_effect,
            target,
            commands,
            paths,
            host: target.host(),
            cwd,
        }
    }

    /// Reads a specifier the way the called tool understands it.
    fn spec<'s>(&self, spec: &'s Spec) -> Option<std::borrow::Cow<'s, Spec>> {
        use std::borrow::Cow;
        match spec {
            Spec::Raw(raw) => {
                let parsed = if raw.starts_with("domain:") {
                    domain(raw).ok().map(Spec::Domain)
                } else if self.target.command.is_some() || self.side_effect == SideEffect::Shell {
                    CommandPattern::parse(raw).ok().map(Spec::Command)
                } else {
                    PathPattern::parse(raw).ok().map(Spec::Path)
                };
                parsed.map(Cow::Owned)
            }
            other => Some(Cow::Borrowed(other)),
        }
    }

    /// Whether an ask or deny rule applies: any part of the call matches.
    fn any(&self, entry: &Entry, home: Option<&Path>) -> bool {
        let Some(spec) = &entry.rule.spec else {
            return true;
        };
        let Some(spec) = self.spec(spec) else {
            return false;
        };
        match &*spec {
            Spec::Command(pattern) => {
                let Some(line) = &self.target.command else {
                    return false;
                };
                let whole = line.split_whitespace().collect::<Vec<_>>().join(" ");
                pattern.matches(&whole)
                    || self.commands.iter().flatten().any(|c| pattern.matches(c))
            }
            Spec::Path(pattern) => self
                .paths
                .iter()
                .any(|p| pattern.matches(p, self.cwd, home)),
            Spec::Domain(domain) => self
                .host
                .as_deref()
                .is_some_and(|h| host_matches(domain, h)),
            Spec::Raw(_) => false,
        }
    }

    /// The allow rule that lets the whole call through, if any.
    fn every<'e>(&self, allow: &[&'e Entry], home: Option<&Path>) -> Option<&'e Entry> {
        if let Some(bare) = allow.iter().find(|e| e.rule.spec.is_none()) {
            return Some(bare);
        }
        let specs: Vec<(&Entry, std::borrow::Cow<'_, Spec>)> = allow
            .iter()
            .filter_map(|e| Some((*e, self.spec(e.rule.spec.as_ref()?)?)))
            .collect();
        let find = |part: &dyn Fn(&Spec) -> bool| {
            specs.iter().find(|(_, spec)| part(spec)).map(|(e, _)| *e)
        };
        if self.target.command.is_some() {
            let commands = self.commands.as_ref().filter(|c| !c.is_empty())?;
            let mut first = None;
            for command in commands {
                let entry = find(&|spec| matches!(spec, Spec::Command(p) if p.matches(command)))?;
                first.get_or_insert(entry);
            }
            return first;
        }
        if let Some(host) = &self.host {
            return find(&|spec| matches!(spec, Spec::Domain(d) if host_matches(d, host)));
        }
        if self.paths.is_empty() {
            return None;
        }
        let mut first = None;
        for path in &self.paths {
            let entry =
                find(&|spec| matches!(spec, Spec::Path(p) if p.matches(path, self.cwd, home)))?;
            first.get_or_insert(entry);
        }
        first
    }
}

/// `domain` (`example.com` or `*.example.com`) against a lower-case host.
fn host_matches(domain: &str, host: &str) -> bool {
    match domain.strip_prefix("*.") {
        Some(parent) => host
            .strip_suffix(parent)
            .is_some_and(|sub| sub.ends_with('.') && sub.len() > 1),
        None => host == domain,
    }
}

/// Applies the deciding rule (if any) to the mode's verdict and returns whether it took
/// effect: a deny rule always does; an ask rule puts a call the mode allows or prompts for to
/// the approver; an allow rule lets a prompted call run (and confirms an allowed one). A
/// verdict of `deny` (plan mode, the tool's own `deny`, the sandbox's hard refusal) stays
/// unless a deny rule decided; `escalation` (a call asking to run outside the sandbox) is
/// never allowed by a rule.
pub fn apply(verdict: &mut Verdict, rule: Option<&DecidingRule>, escalation: bool) -> bool {
    let Some(rule) = rule else {
        return false;
    };
    let reason = Some(rule.describe());
    let action = match (rule.action, verdict.action) {
        (RuleAction::Deny, _) => PermissionAction::Deny,
        (RuleAction::Ask, PermissionAction::Allow | PermissionAction::Prompt) => {
            PermissionAction::Prompt
        }
        (RuleAction::Allow, PermissionAction::Prompt) if !escalation => PermissionAction::Allow,
        (RuleAction::Allow, PermissionAction::Allow) => {
            verdict.reason = reason;
            return true;
        }
        _ => return false,
    };
    *verdict = Verdict {
        action,
        granted: action == PermissionAction::Allow,
        reason,
    };
    true
}

#[cfg(test)]
mod tests;
