//! Zero's native hooks: `hooks.json` files, where Zero looks for them, its workspace
//! trust gate, its audit log, and a [`ZeroHooks`] that runs them as Zero does.
//!
//! Zero reads the user layer `$XDG_CONFIG_HOME/zero/hooks.json` (default
//! `~/.config/zero/hooks.json`) and, only in a workspace the user trusted with
//! `zero trust`, the project layer `<workspace>/.zero/hooks.json`. A file is
//! `{"enabled": bool, "hooks": [{"id", "event", "matcher", "command", "args", "enabled"}]}`;
//! events are `beforeTool`, `afterTool`, `sessionStart`, `sessionEnd` (and
//! `specialistStart`/`specialistStop`, accepted and never fired until sub-agents exist).
//! The project layer overrides user hooks with the same id; a layer that is not valid is
//! skipped with a diagnostic, so a broken file never wedges the agent.
//!
//! Behaviour, as Zero's: a `beforeTool` hook that exits non-zero vetoes the call (its
//! stderr, else stdout, is the reason), and so does one that cannot start or times out
//! (fail closed: a hung policy hook is not an approval); the first veto stops the rest.
//! `afterTool` output (stdout, else stderr, of every hook) reaches the model under
//! `Hook output:`. Session hooks are advisory. In plan mode only `beforeTool` runs. Every
//! run is recorded in `$XDG_DATA_HOME/zero/hooks/audit.jsonl` (outputs scrubbed of known
//! secrets).

mod audit;
mod dispatch;
mod trust;
mod wire;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use dispatch::ZeroHooks;
pub use trust::is_trusted;

use crate::HookOptions;
use wire::{RawConfig, RawHook};

/// A Zero hook event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ZeroEvent {
    /// Before a tool call; a non-zero exit vetoes it.
    BeforeTool,
    /// After a tool ran; output reaches the model.
    AfterTool,
    /// When a session starts.
    SessionStart,
    /// When a session ends.
    SessionEnd,
    /// When a specialist (sub-agent) starts; never fired yet.
    SpecialistStart,
    /// When a specialist (sub-agent) stops; never fired yet.
    SpecialistStop,
}

impl ZeroEvent {
    /// The name used in `hooks.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BeforeTool => "beforeTool",
            Self::AfterTool => "afterTool",
            Self::SessionStart => "sessionStart",
            Self::SessionEnd => "sessionEnd",
            Self::SpecialistStart => "specialistStart",
            Self::SpecialistStop => "specialistStop",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        [
            Self::BeforeTool,
            Self::AfterTool,
            Self::SessionStart,
            Self::SessionEnd,
            Self::SpecialistStart,
            Self::SpecialistStop,
        ]
        .into_iter()
        .find(|e| e.as_str() == name)
    }

    fn takes_matcher(self) -> bool {
        matches!(self, Self::BeforeTool | Self::AfterTool)
    }
}

/// One validated hook definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    /// Unique id (letters, digits, `.`, `_`, `-`).
    pub id: String,
    /// Display name.
    pub name: Option<String>,
    /// What it is for.
    pub description: Option<String>,
    /// When it runs.
    pub event: ZeroEvent,
    /// Tool-name pattern (`beforeTool`/`afterTool` only); empty matches every tool.
    pub matcher: String,
    /// Program to run (no shell).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Whether it runs.
    pub enabled: bool,
}

/// A merged hook configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZeroConfig {
    /// Hooks run at all.
    pub enabled: bool,
    /// The definitions, sorted by id.
    pub hooks: Vec<Definition>,
}

impl Default for ZeroConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            hooks: Vec::new(),
        }
    }
}

impl ZeroConfig {
    /// Parses one `hooks.json` text; the error names the offending field.
    pub fn parse(json: &str) -> Result<Self, String> {
        parse_layer(json)
            .map(|layer| layer.config)
            .map_err(|(_, message)| message)
    }

    /// The enabled hooks for `event` whose matcher accepts `tool` (in id order).
    pub fn select<'a>(
        &'a self,
        event: ZeroEvent,
        tool: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Definition> + 'a {
        self.hooks.iter().filter(move |hook| {
            self.enabled
                && hook.enabled
                && hook.event == event
                && (hook.matcher.is_empty()
                    || tool.is_some_and(|t| {
                        !t.is_empty() && crate::matcher::zero_matches(&hook.matcher, t)
                    }))
        })
    }
}

/// Which layer a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigSource {
    /// The user's `~/.config/zero/hooks.json`.
    User,
    /// The workspace's `.zero/hooks.json`.
    Project,
}

impl ConfigSource {
    fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Project => "project",
        }
    }
}

/// What kind of problem a diagnostic reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiagnosticKind {
    /// The file could not be read.
    Io,
    /// The file is not JSON.
    Json,
    /// The JSON is not a hooks config.
    Schema,
    /// A project hook overrides a user hook with the same id.
    Duplicate,
}

/// A problem found while loading the layers; the layer in question was skipped (or, for
/// a duplicate, overridden).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// What kind.
    pub kind: DiagnosticKind,
    /// Which layer.
    pub source: ConfigSource,
    /// Its file.
    pub path: PathBuf,
    /// The hook concerned, if any.
    pub hook_id: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} hooks {}: {}",
            self.source.as_str(),
            self.path.display(),
            self.message
        )
    }
}

/// Where Zero keeps its hook files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZeroPaths {
    /// `$XDG_CONFIG_HOME/zero/hooks.json` (none without a home directory).
    pub user_config: Option<PathBuf>,
    /// `<workspace>/.zero/hooks.json`.
    pub project_config: PathBuf,
    /// `$XDG_DATA_HOME/zero/hooks/audit.jsonl` (none without a home directory).
    pub audit: Option<PathBuf>,
    /// `<user config dir>/zero/trust.json` (none when it cannot be resolved: untrusted).
    pub trust_store: Option<PathBuf>,
}

impl ZeroPaths {
    /// The paths for `workspace` from this process's environment.
    pub fn from_env(workspace: &Path) -> Self {
        Self::resolve(workspace, |name| std::env::var(name).ok())
    }

    /// The paths for `workspace`, reading variables through `env` (`HOME`,
    /// `USERPROFILE`, `XDG_CONFIG_HOME`, `XDG_DATA_HOME`).
    pub fn resolve(workspace: &Path, env: impl Fn(&str) -> Option<String>) -> Self {
        let nonempty = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let home = nonempty("HOME")
            .or_else(|| nonempty("USERPROFILE"))
            .map(|h| PathBuf::from(h.trim()));
        // Zero's hooks paths: a relative XDG directory is taken relative to the workspace.
        let xdg_dir = |name: &str, fallback: Option<PathBuf>| match nonempty(name) {
            Some(dir) => {
                let dir = PathBuf::from(dir.trim());
                Some(match dir.is_absolute() {
                    true => dir,
                    false => workspace.join(dir),
                })
            }
            None => fallback,
        };
        let config_home = xdg_dir("XDG_CONFIG_HOME", home.as_ref().map(|h| h.join(".config")));
        let data_home = xdg_dir(
            "XDG_DATA_HOME",
            home.as_ref().map(|h| h.join(".local").join("share")),
        );
        // The trust store follows Go's os.UserConfigDir: a relative XDG_CONFIG_HOME is an
        // error (and an unreadable store means untrusted).
        let trust_dir = match env("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
            Some(dir) if Path::new(&dir).is_absolute() => Some(PathBuf::from(dir)),
            Some(_) => None,
            None => env("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".config")),
        };
        Self {
            user_config: config_home.map(|d| d.join("zero").join("hooks.json")),
            project_config: workspace.join(".zero").join("hooks.json"),
            audit: data_home.map(|d| d.join("zero").join("hooks").join("audit.jsonl")),
            trust_store: trust_dir.map(|d| d.join("zero").join("trust.json")),
        }
    }
}

/// Zero's hooks for a workspace, as loaded by [`load_workspace`].
pub struct ZeroLoad {
    /// The hooks to install ([`agent_core::AgentBuilder::hooks`]).
    pub hooks: Arc<ZeroHooks>,
    /// Problems with the files (each skipped layer or override).
    pub diagnostics: Vec<Diagnostic>,
    /// A project hooks file exists but was ignored because the workspace is not trusted.
    pub project_skipped: bool,
    /// The trust store could not be read (so the workspace counts as untrusted).
    pub trust_error: Option<String>,
}

impl ZeroLoad {
    /// The one stderr line Zero prints when it ignored project hooks, if it did.
    pub fn notice(&self) -> Option<&'static str> {
        match (self.project_skipped, &self.trust_error) {
            (false, _) => None,
            (true, Some(_)) => Some(
                "zero: the workspace-trust store could not be read; ignoring project hooks (fail-closed). Run 'zero trust' to enable.",
            ),
            (true, None) => Some(
                "zero: ignoring project hooks in an untrusted workspace. Run 'zero trust' to enable.",
            ),
        }
    }
}

/// Loads Zero's hooks for `options.cwd` from the standard places in this process's
/// environment, with the project layer only in a trusted workspace, and the audit log on.
pub fn load_workspace(options: &HookOptions) -> ZeroLoad {
    load_workspace_with(options, &ZeroPaths::from_env(&options.cwd))
}

/// Like [`load_workspace`], with explicit paths.
pub fn load_workspace_with(options: &HookOptions, paths: &ZeroPaths) -> ZeroLoad {
    let (trusted, trust_error) = match &paths.trust_store {
        None => (false, None),
        Some(store) => match is_trusted(store, &options.cwd) {
            Ok(trusted) => (trusted, None),
            Err(err) => (false, Some(err)),
        },
    };
    let project_exists = paths.project_config.is_file();
    let mut diagnostics = Vec::new();
    let mut layers = Vec::new();
    if let Some(user) = &paths.user_config {
        layers.extend(read_layer(ConfigSource::User, user, &mut diagnostics));
    }
    if trusted {
        layers.extend(read_layer(
            ConfigSource::Project,
            &paths.project_config,
            &mut diagnostics,
        ));
    }
    let config = merge(layers, &mut diagnostics);
    for diagnostic in &diagnostics {
        tracing::warn!(%diagnostic, "zero hooks");
    }
    let mut options = options.clone();
    if options.audit.is_none() {
        options.audit = paths.audit.clone();
    }
    ZeroLoad {
        hooks: Arc::new(ZeroHooks::new(config, &options)),
        diagnostics,
        project_skipped: project_exists && !trusted,
        trust_error,
    }
}

/// One parsed layer, with what it set explicitly.
struct Layer {
    source: ConfigSource,
    path: PathBuf,
    config: ZeroConfig,
    enabled_set: bool,
    hook_enabled_set: BTreeMap<String, bool>,
}

fn read_layer(
    source: ConfigSource,
    path: &Path,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Layer> {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let diagnostic = |kind, message: String| Diagnostic {
        kind,
        source,
        path: path.clone(),
        hook_id: None,
        message,
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
        Err(err) => {
            diagnostics.push(diagnostic(DiagnosticKind::Io, err.to_string()));
            return None;
        }
    };
    match parse_layer(&text) {
        Ok(mut layer) => {
            layer.source = source;
            layer.path = path;
            Some(layer)
        }
        Err((kind, message)) => {
            diagnostics.push(diagnostic(kind, message));
            None
        }
    }
}

fn parse_layer(text: &str) -> Result<Layer, (DiagnosticKind, String)> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| (DiagnosticKind::Json, e.to_string()))?;
    if !value.is_object() && !value.is_null() {
        return Err((
            DiagnosticKind::Schema,
            "Expected hooks config to be a JSON object.".to_string(),
        ));
    }
    let raw: RawConfig = match value {
        serde_json::Value::Null => RawConfig::default(),
        value => {
            serde_json::from_value(value).map_err(|e| (DiagnosticKind::Schema, e.to_string()))?
        }
    };
    let mut hooks = Vec::new();
    let mut hook_enabled_set = BTreeMap::new();
    for (index, item) in raw.hooks.unwrap_or_default().into_iter().enumerate() {
        let field = format!("hooks.{index}");
        let definition = definition(item, &field).map_err(|m| (DiagnosticKind::Schema, m))?;
        hook_enabled_set.insert(definition.0.id.clone(), definition.1);
        hooks.push(definition.0);
    }
    hooks.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(Layer {
        source: ConfigSource::User,
        path: PathBuf::new(),
        config: ZeroConfig {
            enabled: raw.enabled.unwrap_or(true),
            hooks,
        },
        enabled_set: raw.enabled.is_some(),
        hook_enabled_set,
    })
}

/// Validates one definition; returns it and whether it set `enabled`.
fn definition(item: serde_json::Value, field: &str) -> Result<(Definition, bool), String> {
    if !item.is_object() {
        return Err(format!(
            "{field}: Expected hook definition to be an object."
        ));
    }
    let raw: RawHook = serde_json::from_value(item).map_err(|e| format!("{field}: {e}"))?;
    let required = |value: Option<String>, name: &str| -> Result<String, String> {
        match value.as_deref().map(str::trim) {
            Some(v) if !v.is_empty() => Ok(v.to_string()),
            _ => Err(format!("{field}.{name}: Expected a non-empty string.")),
        }
    };
    let optional = |value: Option<String>, name: &str| -> Result<Option<String>, String> {
        match value {
            None => Ok(None),
            Some(v) if v.trim().is_empty() => {
                Err(format!("{field}.{name}: Expected a non-empty string."))
            }
            Some(v) => Ok(Some(v.trim().to_string())),
        }
    };
    let id = required(raw.id, "id")?;
    let valid_id = id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !valid_id {
        return Err(format!(
            "{field}.id: Use letters, numbers, dots, dashes, or underscores."
        ));
    }
    let event_name = raw.event.as_deref().map(str::trim).unwrap_or("");
    let Some(event) = ZeroEvent::parse(event_name) else {
        return Err(format!(
            "{field}.event: Expected beforeTool, afterTool, sessionStart, sessionEnd, specialistStart, or specialistStop."
        ));
    };
    let matcher = optional(raw.matcher, "matcher")?.unwrap_or_default();
    if !matcher.is_empty() && !event.takes_matcher() {
        return Err(format!(
            "{field}.matcher: matcher is only supported for beforeTool and afterTool hooks."
        ));
    }
    let definition = Definition {
        id,
        name: optional(raw.name, "name")?,
        description: optional(raw.description, "description")?,
        event,
        matcher,
        command: required(raw.command, "command")?,
        args: raw.args.unwrap_or_default(),
        enabled: raw.enabled.unwrap_or(true),
    };
    Ok((definition, raw.enabled.is_some()))
}

/// Merges layers as Zero does: the last layer that sets `enabled` decides it; a later
/// layer's hook replaces an earlier one with the same id (keeping the earlier `enabled`
/// unless the later one sets it).
fn merge(layers: Vec<Layer>, diagnostics: &mut Vec<Diagnostic>) -> ZeroConfig {
    let mut enabled = true;
    let mut by_id: BTreeMap<String, (Definition, ConfigSource, PathBuf)> = BTreeMap::new();
    for layer in layers {
        if layer.enabled_set {
            enabled = layer.config.enabled;
        }
        for mut hook in layer.config.hooks {
            if let Some((previous, source, path)) = by_id.get(&hook.id) {
                diagnostics.push(Diagnostic {
                    kind: DiagnosticKind::Duplicate,
                    source: layer.source,
                    path: layer.path.clone(),
                    hook_id: Some(hook.id.clone()),
                    message: format!(
                        "Hook {:?} from {} overrides {} hook at {}.",
                        hook.id,
                        layer.source.as_str(),
                        source.as_str(),
                        path.display()
                    ),
                });
                if !layer
                    .hook_enabled_set
                    .get(&hook.id)
                    .copied()
                    .unwrap_or(false)
                {
                    hook.enabled = previous.enabled;
                }
            }
            by_id.insert(hook.id.clone(), (hook, layer.source, layer.path.clone()));
        }
    }
    ZeroConfig {
        enabled,
        hooks: by_id.into_values().map(|(hook, _, _)| hook).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_config_and_names_bad_fields() {
        let config = ZeroConfig::parse(
            r#"{"enabled": true, "hooks": [
                {"id": "veto", "event": "beforeTool", "matcher": "bash", "command": "guard", "args": ["-x"]},
                {"id": "audit", "event": "sessionStart", "command": "log", "enabled": false, "extra": 1}
            ]}"#,
        )
        .unwrap();
        assert_eq!(config.hooks.len(), 2);
        assert_eq!(config.hooks[0].id, "audit");
        assert!(!config.hooks[0].enabled);
        assert_eq!(config.hooks[1].args, vec!["-x".to_string()]);
        let selected: Vec<_> = config
            .select(ZeroEvent::BeforeTool, Some("bash"))
            .map(|d| d.id.as_str())
            .collect();
        assert_eq!(selected, vec!["veto"]);
        assert_eq!(
            config
                .select(ZeroEvent::BeforeTool, Some("read_file"))
                .count(),
            0
        );

        for (json, field) in [
            (
                r#"{"hooks": [{"event": "beforeTool", "command": "x"}]}"#,
                "hooks.0.id",
            ),
            (
                r#"{"hooks": [{"id": "-x", "event": "beforeTool", "command": "x"}]}"#,
                "hooks.0.id",
            ),
            (
                r#"{"hooks": [{"id": "a", "event": "nope", "command": "x"}]}"#,
                "hooks.0.event",
            ),
            (
                r#"{"hooks": [{"id": "a", "event": "sessionEnd", "matcher": "bash", "command": "x"}]}"#,
                "hooks.0.matcher",
            ),
            (
                r#"{"hooks": [{"id": "a", "event": "afterTool", "command": " "}]}"#,
                "hooks.0.command",
            ),
            (
                r#"{"hooks": [{"id": "a", "event": "afterTool", "command": "x", "enabled": "yes"}]}"#,
                "hooks.0",
            ),
            (r#"{"hooks": [1]}"#, "hooks.0"),
        ] {
            let err = ZeroConfig::parse(json).unwrap_err();
            assert!(err.starts_with(field), "{json}: {err}");
        }
        assert!(ZeroConfig::parse("[]").is_err());
        assert_eq!(ZeroConfig::parse("null").unwrap(), ZeroConfig::default());
    }

    #[test]
    fn disabled_config_selects_nothing() {
        let config = ZeroConfig::parse(
            r#"{"enabled": false, "hooks": [{"id": "a", "event": "afterTool", "command": "x"}]}"#,
        )
        .unwrap();
        assert_eq!(config.select(ZeroEvent::AfterTool, Some("bash")).count(), 0);
    }

    #[test]
    fn paths_follow_xdg_and_home() {
        let ws = Path::new("/work/ws");
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let paths = ZeroPaths::resolve(ws, env(&[("HOME", "/home/u")]));
        assert_eq!(
            paths.user_config.as_deref(),
            Some(Path::new("/home/u/.config/zero/hooks.json"))
        );
        assert_eq!(
            paths.audit.as_deref(),
            Some(Path::new("/home/u/.local/share/zero/hooks/audit.jsonl"))
        );
        assert_eq!(
            paths.trust_store.as_deref(),
            Some(Path::new("/home/u/.config/zero/trust.json"))
        );
        assert_eq!(paths.project_config, Path::new("/work/ws/.zero/hooks.json"));
        let paths = ZeroPaths::resolve(
            ws,
            env(&[
                ("HOME", "/home/u"),
                ("XDG_CONFIG_HOME", "/cfg"),
                ("XDG_DATA_HOME", "rel"),
            ]),
        );
        assert_eq!(
            paths.user_config.as_deref(),
            Some(Path::new("/cfg/zero/hooks.json"))
        );
        assert_eq!(
            paths.audit.as_deref(),
            Some(Path::new("/work/ws/rel/zero/hooks/audit.jsonl"))
        );
        assert_eq!(
            paths.trust_store.as_deref(),
            Some(Path::new("/cfg/zero/trust.json"))
        );
        let paths = ZeroPaths::resolve(ws, env(&[("XDG_CONFIG_HOME", "relative")]));
        assert_eq!(paths.trust_store, None);
    }

    #[test]
    fn project_layer_overrides_user_hooks_by_id() {
        let mut diagnostics = Vec::new();
        let user = parse_layer(
            r#"{"hooks": [{"id": "fmt", "event": "afterTool", "command": "user-fmt", "enabled": false},
                          {"id": "log", "event": "sessionEnd", "command": "log"}]}"#,
        )
        .ok()
        .unwrap();
        let mut project = parse_layer(
            r#"{"enabled": true, "hooks": [{"id": "fmt", "event": "afterTool", "command": "proj-fmt"}]}"#,
        )
        .ok()
        .unwrap();
        project.source = ConfigSource::Project;
        let merged = merge(vec![user, project], &mut diagnostics);
        assert_eq!(merged.hooks.len(), 2);
        let fmt = &merged.hooks[0];
        assert_eq!(fmt.command, "proj-fmt");
        // The project hook did not set `enabled`, so the user's `false` stands.
        assert!(!fmt.enabled);
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].kind, DiagnosticKind::Duplicate);
    }
}
