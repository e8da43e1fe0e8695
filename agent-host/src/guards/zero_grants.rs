//! Zero's persistent sandbox grants (`Gitlawb/zero` `internal/sandbox/grants.go`), read as
//! permission rules for `exec` and written in Zero's format.
//!
//! The file is `$ZERO_SANDBOX_GRANTS_PATH`, else `$XDG_CONFIG_HOME/zero/sandbox-grants.json`
//! (`~/.config/zero/…`): `{"schemaVersion": 3, "policyVersion": 2, "grants": {TOOL: [{toolName,
//! scope?, scopeKind? (file|dir|host), decision (allow|deny), approvedAt, reason?}]},
//! "commandPrefixes": {TOOL: [{toolName, prefix: [word…], approvedAt, reason?}]}}`.
//!
//! As rules ([`ZeroGrants::rules`], source `grants FILE`): a tool-wide grant is `TOOL`; a
//! file grant `TOOL(//abs/path)`; a directory grant `TOOL(//abs/dir)` (the directory and what
//! is in it); a host grant `TOOL(domain:host)`; a command prefix `TOOL(word word:*)`. A deny
//! grant is a deny rule, an allow grant an allow rule. A file of an older schema or sandbox
//! policy keeps only its deny grants, as Zero's migration does (the file is left as it is:
//! Zero migrates it when it next writes). [`ZeroGrants::grant`] and
//! [`ZeroGrants::grant_command_prefix`] add a grant the way Zero's "always allow" does:
//! under the `.lockfile` lock, the file rewritten whole (a temporary file renamed over it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_core::permission::rules::{Rule, RuleAction, RuleSet, RuleSource};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context_files::{user_config_dir, Env};

/// Zero's grants file schema version.
pub const SCHEMA_VERSION: u64 = 3;
/// Zero's sandbox policy version (`internal/execution/contracts.go`).
pub const POLICY_VERSION: u64 = 2;
/// How long a writer waits for the lock.
const LOCK_TIMEOUT: Duration = Duration::from_secs(5);

/// The grants file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum GrantsError {
    /// Zero's words: the file is not a grants file.
    #[error("invalid sandbox grants file at {}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Reading, locking or writing failed.
    #[error("sandbox grants file at {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A grant for a tool name Zero does not accept.
    #[error("invalid sandbox tool name {0:?}. Use letters, numbers, dots, dashes, or underscores")]
    ToolName(String),
}

/// One grant of a tool (Zero's `Grant`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    /// The tool.
    pub tool_name: String,
    /// An absolute path or a host; empty for a tool-wide grant.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scope: String,
    /// `file`, `dir`, `host`, or empty (tool-wide).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scope_kind: String,
    /// `allow` or `deny`.
    pub decision: String,
    /// RFC 3339, UTC.
    pub approved_at: String,
    /// Why.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Zero's session-only grants (never in the file).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub session: bool,
}

/// One command-prefix approval (Zero's `CommandPrefixGrant`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandPrefixGrant {
    /// The shell tool (`bash`, `exec_command`).
    pub tool_name: String,
    /// The approved leading words.
    pub prefix: Vec<String>,
    /// RFC 3339, UTC.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub approved_at: String,
    /// Why.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Zero's session-only approvals (never in the file).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub session: bool,
}

/// The file's contents (Zero's `grantFile`); unknown fields (`migration`) are kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantFile {
    /// 3.
    pub schema_version: u64,
    /// 2.
    pub policy_version: u64,
    /// Grants by tool.
    #[serde(default)]
    pub grants: BTreeMap<String, Vec<Grant>>,
    /// Command prefixes by tool.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub command_prefixes: BTreeMap<String, Vec<CommandPrefixGrant>>,
    /// Everything else, as it was.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

impl GrantFile {
    fn empty() -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            policy_version: POLICY_VERSION,
            ..Self::default()
        }
    }
}

/// Zero's grants file.
#[derive(Debug, Clone)]
pub struct ZeroGrants {
    path: PathBuf,
}

/// Zero's tool names: `^[A-Za-z0-9._-]+$`.
fn valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A path as a rule's literal text: glob characters escaped.
fn literal(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl ZeroGrants {
    /// The grants file at `path`.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// Zero's grants file for the environment `env`: `$ZERO_SANDBOX_GRANTS_PATH` (relative to
    /// the process's directory), else `$XDG_CONFIG_HOME/zero/sandbox-grants.json`, else
    /// `$HOME/.config/zero/sandbox-grants.json`; `None` without a home.
    pub fn locate(env: Env<'_>) -> Option<Self> {
        if let Some(path) = env("ZERO_SANDBOX_GRANTS_PATH").filter(|p| !p.trim().is_empty()) {
            let path = PathBuf::from(path.trim());
            let path = match path.is_absolute() {
                true => path,
                false => std::env::current_dir().ok()?.join(path),
            };
            return Some(Self::at(path));
        }
        let dir = user_config_dir(env)?;
        Some(Self::at(dir.join("zero").join("sandbox-grants.json")))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's contents; a missing file is empty.
    pub fn read(&self) -> Result<GrantFile, GrantsError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(GrantFile::empty()),
            Err(source) => {
                return Err(GrantsError::Io {
                    path: self.path.clone(),
                    source,
                })
            }
        };
        let invalid = |message: String| GrantsError::Invalid {
            path: self.path.clone(),
            message,
        };
        let head: Value = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        let version = head.get("schemaVersion").and_then(Value::as_u64);
        match version {
            Some(1..=SCHEMA_VERSION) => {}
            _ => return Err(invalid("unsupported schemaVersion".into())),
        }
        if version == Some(1) {
            // v1 kept one grant per tool; only its denials outlive Zero's migration.
            let grants = head
                .get("grants")
                .and_then(Value::as_object)
                .map(|map| {
                    map.iter()
                        .filter_map(|(tool, grant)| {
                            let grant: Grant = serde_json::from_value(grant.clone()).ok()?;
                            (grant.decision == "deny").then(|| (tool.clone(), vec![grant]))
                        })
                        .collect()
                })
                .unwrap_or_default();
            return Ok(GrantFile {
                grants,
                ..GrantFile::empty()
            });
        }
        let mut file: GrantFile =
            serde_json::from_value(head).map_err(|e| invalid(e.to_string()))?;
        if file.schema_version != SCHEMA_VERSION || file.policy_version != POLICY_VERSION {
            // Zero's migration keeps the denials and drops every approval.
            for bucket in file.grants.values_mut() {
                bucket.retain(|g| g.decision.eq_ignore_ascii_case("deny"));
            }
            file.command_prefixes.clear();
        }
        Ok(file)
    }

    /// The grants as permission rules (see the module docs).
    pub fn rules(&self) -> Result<RuleSet, GrantsError> {
        let file = self.read()?;
        let source = RuleSource::Grants(self.path.clone());
        let mut rules = RuleSet::new();
        let invalid = |message: String| GrantsError::Invalid {
            path: self.path.clone(),
            message,
        };
        for (tool, bucket) in &file.grants {
            let tool = tool.trim();
            if !valid_tool_name(tool) {
                return Err(invalid(format!("invalid sandbox tool name {tool:?}")));
            }
            for grant in bucket.iter().filter(|g| !g.session) {
                let action = match grant.decision.trim().to_ascii_lowercase().as_str() {
                    "allow" => RuleAction::Allow,
                    "deny" => RuleAction::Deny,
                    other => return Err(invalid(format!("invalid grant decision {other:?}"))),
                };
                let scope = grant.scope.trim();
                let text = match grant.scope_kind.trim().to_ascii_lowercase().as_str() {
                    _ if scope.is_empty() => tool.to_string(),
                    "" => tool.to_string(),
                    "file" | "dir" => {
                        let abs = scope.trim_start_matches('/');
                        format!("{tool}(//{})", literal(abs))
                    }
                    "host" => format!("{tool}(domain:{})", scope.to_ascii_lowercase()),
                    other => return Err(invalid(format!("invalid sandbox scope kind {other:?}"))),
                };
                let rule = Rule::parse(&text).map_err(|e| invalid(e.to_string()))?;
                rules.push(action, rule, source.clone());
            }
        }
        for (tool, bucket) in &file.command_prefixes {
            let tool = tool.trim();
            if !valid_tool_name(tool) {
                return Err(invalid(format!("invalid sandbox tool name {tool:?}")));
            }
            for grant in bucket.iter().filter(|g| !g.session && !g.prefix.is_empty()) {
                let text = format!("{tool}({}:*)", grant.prefix.join(" "));
                // A prefix the rule syntax cannot hold is skipped, never widened.
                if let Ok(rule) = Rule::parse(&text) {
                    rules.push(RuleAction::Allow, rule, source.clone());
                }
            }
        }
        Ok(rules)
    }

    /// Adds (or replaces, for the same scope) an allow or deny grant of `tool`, as Zero's
    /// "always allow" does; `scope` is an absolute path (`file` or `dir`) or a host, empty
    /// for the whole tool.
    pub fn grant(
        &self,
        tool: &str,
        decision: RuleAction,
        scope: &str,
        scope_kind: &str,
        reason: &str,
    ) -> Result<Grant, GrantsError> {
        let tool = tool.trim();
        if !valid_tool_name(tool) {
            return Err(GrantsError::ToolName(tool.to_string()));
        }
        let (scope, scope_kind) = match scope.trim() {
            "" => (String::new(), String::new()),
            s => (s.to_string(), scope_kind.trim().to_string()),
        };
        let grant = Grant {
            tool_name: tool.to_string(),
            scope,
            scope_kind,
            decision: match decision {
                RuleAction::Deny => "deny",
                _ => "allow",
            }
            .to_string(),
            approved_at: now(),
            reason: reason.trim().to_string(),
            session: false,
        };
        self.update(|file| {
            let bucket = file.grants.entry(tool.to_string()).or_default();
            match bucket
                .iter_mut()
                .find(|g| g.scope == grant.scope && g.scope_kind == grant.scope_kind)
            {
                Some(existing) => *existing = grant.clone(),
                None => bucket.push(grant.clone()),
            }
        })?;
        Ok(grant)
    }

    /// Adds a command-prefix approval of shell tool `tool` (`["git", "status"]`).
    pub fn grant_command_prefix(
        &self,
        tool: &str,
        prefix: &[String],
        reason: &str,
    ) -> Result<CommandPrefixGrant, GrantsError> {
        let tool = tool.trim();
        if !valid_tool_name(tool) {
            return Err(GrantsError::ToolName(tool.to_string()));
        }
        let grant = CommandPrefixGrant {
            tool_name: tool.to_string(),
            prefix: prefix.iter().map(|w| w.trim().to_string()).collect(),
            approved_at: now(),
            reason: reason.trim().to_string(),
            session: false,
        };
        self.update(|file| {
            let bucket = file.command_prefixes.entry(tool.to_string()).or_default();
            match bucket.iter_mut().find(|g| g.prefix == grant.prefix) {
                Some(existing) => *existing = grant.clone(),
                None => bucket.push(grant.clone()),
            }
        })?;
        Ok(grant)
    }

    /// Reads, changes and rewrites the file under Zero's lock (`<file>.lockfile`).
    fn update(&self, change: impl FnOnce(&mut GrantFile)) -> Result<(), GrantsError> {
        let io = |source| GrantsError::Io {
            path: self.path.clone(),
            source,
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io)?;
        let lock_path = PathBuf::from(format!("{}.lockfile", self.path.display()));
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&lock_path)
            .map_err(io)?;
        lock_within(&lock, LOCK_TIMEOUT).map_err(io)?;
        let mut file = self.read()?;
        file.schema_version = SCHEMA_VERSION;
        file.policy_version = POLICY_VERSION;
        change(&mut file);
        let mut text =
            serde_json::to_vec_pretty(&file).map_err(|e| io(std::io::Error::other(e)))?;
        text.push(b'\n');
        crate::fs::write_atomic(&self.path, &text).map_err(io)?;
        drop(lock);
        Ok(())
    }
}

/// Takes `file`'s exclusive lock, trying until `timeout`.
fn lock_within(file: &std::fs::File, timeout: Duration) -> std::io::Result<()> {
    use fs4::fs_std::FileExt;
    let deadline = std::time::Instant::now() + timeout;
    loop {
        match FileExt::try_lock_exclusive(file) {
            Ok(true) => return Ok(()),
            Ok(false) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Ok(false) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "timed out waiting for the sandbox grants lock",
                ))
            }
            Err(err) => return Err(err),
        }
    }
}

/// Now, as Zero writes `approvedAt`: RFC 3339 in UTC, whole seconds.
fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn zeros_grants_are_rules_and_always_answers_are_written_in_zeros_format() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("zero").join("sandbox-grants.json");
        let grants = ZeroGrants::at(&path);
        assert!(grants.rules().expect("a missing file is empty").is_empty());
        grants
            .grant(
                "write_file",
                RuleAction::Allow,
                "/ws/src",
                "dir",
                "approved",
            )
            .expect("grants");
        grants
            .grant("web_fetch", RuleAction::Deny, "Evil.COM", "host", "")
            .expect("grants");
        grants
            .grant_command_prefix("bash", &["git".into(), "status".into()], "")
            .expect("grants");
        // A restart: the file as another process reads it.
        let written: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("written")).expect("json");
        assert_eq!(written["schemaVersion"], json!(3));
        assert_eq!(written["policyVersion"], json!(2));
        assert_eq!(
            written["grants"]["write_file"][0]["scopeKind"],
            json!("dir")
        );
        assert_eq!(
            written["grants"]["write_file"][0]["decision"],
            json!("allow")
        );
        assert!(written["grants"]["write_file"][0]["approvedAt"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')));
        assert_eq!(
            written["commandPrefixes"]["bash"][0]["prefix"],
            json!(["git", "status"])
        );
        let rules: Vec<(RuleAction, String, String)> = ZeroGrants::at(&path)
            .rules()
            .expect("reads")
            .iter()
            .map(|(a, r, s)| (a, r.text().to_string(), s.to_string()))
            .collect();
        let source = format!("grants {}", path.display());
        assert_eq!(
            rules,
            [
                (
                    RuleAction::Deny,
                    "web_fetch(domain:evil.com)".into(),
                    source.clone()
                ),
                (
                    RuleAction::Allow,
                    "write_file(//ws/src)".into(),
                    source.clone()
                ),
                (RuleAction::Allow, "bash(git status:*)".into(), source),
            ]
        );
    }

    #[test]
    fn an_older_policy_keeps_only_denials_and_a_bad_file_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("g.json");
        std::fs::write(
            &path,
            json!({"schemaVersion": 3, "policyVersion": 1, "grants": {
                "bash": [{"toolName": "bash", "decision": "allow", "approvedAt": "x"}],
                "rm": [{"toolName": "rm", "decision": "deny", "approvedAt": "x"}]}})
            .to_string(),
        )
        .expect("write");
        let rules = ZeroGrants::at(&path).rules().expect("reads");
        let texts: Vec<(RuleAction, &str)> = rules.iter().map(|(a, r, _)| (a, r.text())).collect();
        assert_eq!(texts, [(RuleAction::Deny, "rm")]);
        std::fs::write(&path, r#"{"schemaVersion": 9}"#).expect("write");
        let err = ZeroGrants::at(&path).rules().expect_err("unsupported");
        assert_eq!(
            err.to_string(),
            format!(
                "invalid sandbox grants file at {}: unsupported schemaVersion",
                path.display()
            )
        );
    }
}
