//! Tool-name matchers of both formats.

use regex::Regex;

/// Zero's matcher: `*` (or empty) matches everything, a pattern without `*` matches the
/// name exactly, and `*` stands for any run of characters (`mcp_*`, `*_file`).
pub fn zero_matches(matcher: &str, name: &str) -> bool {
    if matcher.is_empty() || matcher == "*" {
        return true;
    }
    if !matcher.contains('*') {
        return matcher == name;
    }
    let mut segments: Vec<&str> = matcher.split('*').collect();
    let mut rest = name;
    // The first segment is anchored at the start, the last at the end.
    let first = segments.remove(0);
    let Some(after) = rest.strip_prefix(first) else {
        return false;
    };
    rest = after;
    let last = segments.pop().unwrap_or("");
    let Some(before) = rest.strip_suffix(last) else {
        return false;
    };
    // The prefix and suffix must not overlap.
    if name.len() < first.len() + last.len() {
        return false;
    }
    rest = before;
    for segment in segments.into_iter().filter(|s| !s.is_empty()) {
        match rest.find(segment) {
            Some(at) => rest = &rest[at + segment.len()..],
            None => return false,
        }
    }
    true
}

/// Claude Code's names for the built-in tools of this project, so that imported matchers
/// (`Bash`, `Edit|Write`) find them.
const CLAUDE_NAMES: &[(&str, &str)] = &[
    ("bash", "Bash"),
    ("read_file", "Read"),
    ("write_file", "Write"),
    ("edit_file", "Edit"),
    ("edit_file", "MultiEdit"),
    ("glob", "Glob"),
    ("grep", "Grep"),
    ("list_dir", "LS"),
    ("plan", "TodoWrite"),
];

/// The Claude Code names of one of our tools, if it has any.
pub fn claude_aliases(name: &str) -> impl Iterator<Item = &'static str> + '_ {
    CLAUDE_NAMES
        .iter()
        .filter(move |(ours, _)| *ours == name)
        .map(|(_, theirs)| *theirs)
}

/// A Claude Code matcher: empty or `*` matches everything; letters, digits, `_` and `|`
/// only mean one exact name or `|`-separated exact names; anything else is a regular
/// expression searched in the name. A tool matches under its own name or its Claude Code
/// name (`Bash` matches `bash`), and MCP patterns written for Claude Code
/// (`mcp__server__tool`) also match this project's names (`mcp_server_tool`).
#[derive(Debug, Clone)]
pub enum ClaudeMatcher {
    /// Matches every name.
    Any,
    /// Matches any of these names exactly.
    Names(Vec<String>),
    /// Matches names in which one of these expressions is found.
    Regex(Vec<Regex>),
}

impl ClaudeMatcher {
    /// Parses a matcher; an invalid regular expression is an error.
    pub fn parse(matcher: Option<&str>) -> Result<Self, regex::Error> {
        let matcher = matcher.map(str::trim).unwrap_or("");
        if matcher.is_empty() || matcher == "*" {
            return Ok(Self::Any);
        }
        let plain = matcher
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|');
        let mut variants = vec![matcher.to_string()];
        if matcher.contains("mcp__") {
            variants.push(matcher.replace("__", "_"));
        }
        if plain {
            let names = variants
                .iter()
                .flat_map(|v| v.split('|'))
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect();
            return Ok(Self::Names(names));
        }
        let regexes = variants
            .iter()
            .map(|v| Regex::new(v))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self::Regex(regexes))
    }

    /// Whether the tool `name` (or its Claude Code name) matches.
    pub fn matches(&self, name: &str) -> bool {
        let mut candidates: Vec<&str> = vec![name];
        for alias in claude_aliases(name) {
            candidates.push(alias);
        }
        match self {
            Self::Any => true,
            Self::Names(names) => candidates.iter().any(|c| names.iter().any(|n| n == c)),
            Self::Regex(regexes) => candidates
                .iter()
                .any(|c| regexes.iter().any(|r| r.is_match(c))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_globs() {
        assert!(zero_matches("", "bash"));
        assert!(zero_matches("*", "bash"));
        assert!(zero_matches("bash", "bash"));
        assert!(!zero_matches("bash", "bash2"));
        assert!(!zero_matches("bash|edit_file", "bash"));
        assert!(zero_matches("mcp_*", "mcp_github_create_issue"));
        assert!(!zero_matches("mcp_*", "bash"));
        assert!(zero_matches("*_file", "write_file"));
        assert!(zero_matches("mcp_*_issue", "mcp_github_create_issue"));
        assert!(zero_matches("a*b*c", "aXbYc"));
        assert!(!zero_matches("a*b*c", "aXcYb"));
        assert!(!zero_matches("ab*ba", "aba"));
        assert!(zero_matches("ab*ba", "abba"));
    }

    fn m(pattern: &str) -> ClaudeMatcher {
        ClaudeMatcher::parse(Some(pattern)).unwrap()
    }

    #[test]
    fn claude_matchers() {
        assert!(ClaudeMatcher::parse(None).unwrap().matches("anything"));
        assert!(m("*").matches("bash"));
        assert!(m("Bash").matches("bash"));
        assert!(m("bash").matches("bash"));
        assert!(!m("Bash").matches("read_file"));
        assert!(m("Edit|Write").matches("write_file"));
        assert!(m("Edit|Write").matches("edit_file"));
        assert!(!m("Edit|Write").matches("bash"));
        assert!(m("Notebook.*|Wri.e").matches("write_file"));
        assert!(m("mcp__github__.*").matches("mcp_github_create_issue"));
        assert!(m("mcp_.*").matches("mcp_memory_store"));
        assert!(!m("mcp_.*").matches("bash"));
        assert!(m("mcp__memory__store").matches("mcp_memory_store"));
        assert!(ClaudeMatcher::parse(Some("(")).is_err());
    }
}
