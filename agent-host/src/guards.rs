//! The guards of unattended runs, the same on every binary (their flags are in
//! [`crate::cli::CapabilityArgs`]; [`crate::capabilities::Capabilities`] loads and applies
//! them):
//!
//! - `--settings FILE`: a settings file in Claude Code's format, whose `permissions` block
//!   holds `allow`, `ask` and `deny` lists of permission rules
//!   ([`agent_core::permission::rules`]); other settings are not read.
//! - The project's `.claude/settings.json` and `.claude/settings.local.json`, read for each
//!   agent's workspace ([`Guards::project_rules`]): their `deny` and `ask` rules always
//!   (they only narrow), their `allow` rules where the workspace is trusted
//!   ([`ProjectTrust`]: a repository must not be able to grant itself a shell).
//! - Zero's sandbox grants file for `exec` ([`zero_grants`]).
//! - `--max-budget-usd USD`: the spend cap of each prompt run
//!   ([`agent_core::AgentBuilder::max_budget_usd`]).
//! - `--fallback-model ID`: the model an overloaded call is made again with
//!   ([`agent_core::AgentBuilder::fallback_model`]).
//!
//! A settings file that cannot be read, that is not a JSON object with the documented
//! shapes, or that holds a rule the syntax does not allow is an error naming the file, the
//! list and the rule ([`SettingsError`]); nothing is silently dropped.

use std::path::{Path, PathBuf};

use agent_core::permission::rules::{RuleAction, RuleError, RuleSet, RuleSource};
use agent_core::AgentBuilder;
use serde_json::Value;

pub mod zero_grants;

/// Where a project's settings files are, below its workspace.
pub const PROJECT_SETTINGS: [&str; 2] = [".claude/settings.json", ".claude/settings.local.json"];

/// A settings file, or one of its rules, is unusable.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not JSON, or a part of it has the wrong shape.
    #[error("{}: {message}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong and where (`permissions.allow[2]: expected a string`).
        message: String,
    },
    /// A rule the syntax does not allow.
    #[error("{}: permissions.{list}[{index}]: {source}", path.display())]
    Rule {
        /// The file.
        path: PathBuf,
        /// The list it is in (`allow`, `ask`, `deny`).
        list: &'static str,
        /// Its index in the list.
        index: usize,
        /// The rule and what is wrong with it.
        source: RuleError,
    },
}

/// Reads the permission rules of settings file `path`: its `permissions.allow`, `ask` and
/// `deny` lists (`source` names where they came from in permission events). A file without a
/// `permissions` block has none. With `allow` false, the allow list is checked but left out.
pub fn read_settings(
    path: &Path,
    source: RuleSource,
    allow: bool,
) -> Result<RuleSet, SettingsError> {
    let text = std::fs::read_to_string(path).map_err(|source| SettingsError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_settings(&text, path, source, allow)
}

/// [`read_settings`] of the text of file `path`.
pub fn parse_settings(
    text: &str,
    path: &Path,
    source: RuleSource,
    allow: bool,
) -> Result<RuleSet, SettingsError> {
    let malformed = |message: String| SettingsError::Malformed {
        path: path.to_path_buf(),
        message,
    };
    let value: Value =
        serde_json::from_str(text).map_err(|e| malformed(format!("not valid JSON: {e}")))?;
    let Value::Object(root) = value else {
        return Err(malformed("a settings file is a JSON object".into()));
    };
    let mut rules = RuleSet::new();
    let permissions = match root.get("permissions") {
        None | Some(Value::Null) => return Ok(rules),
        Some(Value::Object(permissions)) => permissions,
        Some(_) => return Err(malformed("permissions: expected an object".into())),
    };
    for (list, action) in [
        ("deny", RuleAction::Deny),
        ("ask", RuleAction::Ask),
        ("allow", RuleAction::Allow),
    ] {
        let entries = match permissions.get(list) {
            None | Some(Value::Null) => continue,
            Some(Value::Array(entries)) => entries,
            Some(_) => {
                return Err(malformed(format!(
                    "permissions.{list}: expected a list of rules"
                )))
            }
        };
        for (index, entry) in entries.iter().enumerate() {
            let Some(text) = entry.as_str() else {
                return Err(malformed(format!(
                    "permissions.{list}[{index}]: expected a rule (a string), got {entry}"
                )));
            };
            let rule = agent_core::permission::rules::Rule::parse(text).map_err(|source| {
                SettingsError::Rule {
                    path: path.to_path_buf(),
                    list,
                    index,
                    source,
                }
            })?;
            if action != RuleAction::Allow || allow {
                rules.push(action, rule, source.clone());
            }
        }
    }
    Ok(rules)
}

/// Whether a workspace's own settings may allow calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProjectTrust {
    /// The host vouches for the workspace (an editor or a client opened it): every rule of
    /// its settings applies.
    #[default]
    Trusted,
    /// The workspace is not trusted (Zero's trust store says so, for `exec`): its deny and
    /// ask rules apply, its allow rules do not.
    Untrusted,
}

/// The guards the flags configure, loaded and checked.
#[derive(Debug, Clone, Default)]
pub struct Guards {
    /// The rules of `--settings FILE` (and any the host added: Zero's grants for `exec`).
    pub rules: RuleSet,
    /// `--max-budget-usd`.
    pub max_budget_usd: Option<f64>,
    /// `--fallback-model`.
    pub fallback_model: Option<String>,
    /// Whether the project's settings files are read, and how far they are trusted (`None`:
    /// not read).
    pub project: Option<ProjectTrust>,
}

/// A guard flag has a value it does not accept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuardFlagError {
    /// `--max-budget-usd` is not a positive amount.
    #[error("--max-budget-usd: expected a positive amount in USD (such as 0.50), got {0:?}")]
    Budget(String),
    /// `--fallback-model` is blank.
    #[error("--fallback-model: expected a model id")]
    FallbackModel,
}

/// Parses a `--max-budget-usd` value: a positive, finite amount (`0.5`, `$2`, `10`).
pub fn parse_budget(value: &str) -> Result<f64, GuardFlagError> {
    let trimmed = value.trim();
    let number = trimmed.strip_prefix('$').unwrap_or(trimmed);
    match number.parse::<f64>() {
        Ok(usd) if usd.is_finite() && usd > 0.0 => Ok(usd),
        _ => Err(GuardFlagError::Budget(value.to_string())),
    }
}

impl Guards {
    /// The guards of the flags: `settings` read (an error names the file and the rule),
    /// `max_budget_usd` and `fallback_model` checked. The project's settings are read per
    /// workspace, trusted ([`ProjectTrust::Trusted`]) unless the host says otherwise.
    pub fn load(
        settings: Option<&Path>,
        max_budget_usd: Option<&str>,
        fallback_model: Option<&str>,
    ) -> Result<Self, GuardsError> {
        let rules = match settings {
            Some(path) => read_settings(path, RuleSource::Settings(path.to_path_buf()), true)?,
            None => RuleSet::new(),
        };
        let max_budget_usd = max_budget_usd.map(parse_budget).transpose()?;
        let fallback_model = match fallback_model.map(str::trim) {
            Some("") => return Err(GuardFlagError::FallbackModel.into()),
            other => other.map(str::to_string),
        };
        Ok(Self {
            rules,
            max_budget_usd,
            fallback_model,
            project: Some(ProjectTrust::Trusted),
        })
    }

    /// The rules of `workspace`'s own settings files ([`PROJECT_SETTINGS`]; a missing file
    /// has none), as far as [`Self::project`] trusts them.
    pub fn project_rules(&self, workspace: &Path) -> Result<RuleSet, SettingsError> {
        let mut rules = RuleSet::new();
        let Some(trust) = self.project else {
            return Ok(rules);
        };
        for name in PROJECT_SETTINGS {
            let path = workspace.join(name);
            if !path.is_file() {
                continue;
            }
            let allow = trust == ProjectTrust::Trusted;
            rules.extend(read_settings(
                &path,
                RuleSource::Settings(path.clone()),
                allow,
            )?);
        }
        Ok(rules)
    }

    /// Puts the flags' guards on `builder`: their rules, the spend cap, the fallback model.
    /// A workspace's own rules ([`Self::project_rules`]) are added where the workspace is
    /// known.
    pub fn apply(&self, builder: AgentBuilder) -> AgentBuilder {
        let mut builder = match self.rules.is_empty() {
            true => builder,
            false => builder.permission_rules(self.rules.clone()),
        };
        if let Some(usd) = self.max_budget_usd {
            builder = builder.max_budget_usd(usd);
        }
        if let Some(model) = &self.fallback_model {
            builder = builder.fallback_model(model.clone());
        }
        builder
    }
}

/// The guard flags or files are unusable.
#[derive(Debug, thiserror::Error)]
pub enum GuardsError {
    /// `--settings FILE` (or a project's settings file).
    #[error("--settings {0}")]
    Settings(#[from] SettingsError),
    /// `--max-budget-usd` or `--fallback-model`.
    #[error(transparent)]
    Flag(#[from] GuardFlagError),
}

#[cfg(test)]
mod tests;
