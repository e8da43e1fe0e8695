//! The run's capabilities: agent-host's capability layer loaded from the flags
//! ([`Capabilities`]: the sandbox, `--mcp-config`, the context budget), with what Zero reads
//! itself added:
//!
//! - MCP servers: `$XDG_CONFIG_HOME/zero/config.json` (`mcp.servers`, `mcpServers`,
//!   `mcp_servers`), then the project's `.zero/config.json` only in a workspace the user
//!   trusted (`zero trust`); `disabled` servers are left out; `--mcp-config FILE` adds more.
//!   An invalid file is an `mcp_error`.
//! - Hooks: Zero's `hooks.json` layers ([`agent_hooks::zero`], with the same trust gate),
//!   then `--hooks FILE` in either format.
//! - Specialists: the built-ins, the user's and the project's manifests, only where Zero
//!   offers them ([`wants_specialists`]); a layer Zero refuses to run with is a
//!   `specialist_error`.
//! - `--output-schema FILE`: the check of the final answer.
//!
//! Files named on the command line resolve against the workspace (`-C`), as `--file` does.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_core::{
    async_trait, provider::OutputSchema, schema::StrictSchema, structured::OutputSpec,
    tool_source::ToolSource, Tool,
};
use agent_hooks::zero::ZeroPaths;
use agent_hooks::HookOptions;
use agent_host::capabilities::{Capabilities, CapabilityError};
use agent_host::session::ToolFilter;
use agent_mcp::{McpManager, McpServerConfig, ZeroMcpConfig};
use agent_specialists::{SpecialistPaths, SpecialistRegistry};
use serde_json::Value;

use super::{EnvLookup, Failure};
use crate::cli::ExecOptions;
use crate::input::go_quote;

/// Zero's one stderr line when project configuration was ignored in an untrusted
/// workspace.
const UNTRUSTED_NOTICE: &str =
    "zero: ignoring project hooks/plugins/MCP servers in an untrusted workspace. Run 'zero trust' to enable.";
/// The same when the trust store could not be read.
const TRUST_ERROR_NOTICE: &str = "zero: the workspace-trust store could not be read; ignoring project hooks/plugins/MCP servers (fail-closed). Run 'zero trust' to enable.";

/// What the workspace-trust gate skipped, for Zero's one notice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct TrustSkip {
    /// A project file exists but was ignored.
    pub(super) skipped: bool,
    /// The trust store could not be read.
    pub(super) store_error: bool,
}

impl TrustSkip {
    /// Both gates' skips together.
    pub(super) fn or(self, other: TrustSkip) -> TrustSkip {
        TrustSkip {
            skipped: self.skipped || other.skipped,
            store_error: self.store_error || other.store_error,
        }
    }

    /// Zero's stderr line, when something was skipped.
    pub(super) fn notice(self) -> Option<&'static str> {
        match (self.skipped, self.store_error) {
            (false, _) => None,
            (true, true) => Some(TRUST_ERROR_NOTICE),
            (true, false) => Some(UNTRUSTED_NOTICE),
        }
    }
}

/// The user's config directory as Go's `os.UserConfigDir` finds it (Zero uses it): an
/// absolute `$XDG_CONFIG_HOME`, else `$HOME/.config`.
fn user_config_dir(env: &EnvLookup) -> Option<PathBuf> {
    let nonempty = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    match nonempty("XDG_CONFIG_HOME") {
        Some(dir) => Some(PathBuf::from(dir.trim())).filter(|d| d.is_absolute()),
        None => nonempty("HOME").map(|home| PathBuf::from(home.trim()).join(".config")),
    }
}

/// Zero's paths (hooks files, audit log, trust store) for `workspace`.
fn zero_paths(workspace: &Path, env: &EnvLookup) -> ZeroPaths {
    ZeroPaths::resolve(workspace, |name| env(name))
}

/// Whether the user trusted `workspace`; a store that cannot be read is untrusted.
fn trusted(paths: &ZeroPaths, workspace: &Path) -> (bool, bool) {
    match &paths.trust_store {
        None => (false, false),
        Some(store) => match agent_hooks::zero::is_trusted(store, workspace) {
            Ok(trusted) => (trusted, false),
            Err(_) => (false, true),
        },
    }
}

fn resolve_against(workspace: &Path, path: &str) -> PathBuf {
    match Path::new(path).is_absolute() {
        true => PathBuf::from(path),
        false => workspace.join(path),
    }
}

/// One Zero config layer's MCP part; a missing file has none.
fn read_zero_layer(path: &Path) -> Result<Option<ZeroMcpConfig>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(format!("inspect config {}: {err}", path.display())),
    };
    agent_mcp::parse_zero_config(&text)
        .map(Some)
        .map_err(|err| format!("{}: {err}", path.display()))
}

/// The MCP servers of a run.
#[derive(Debug, Default)]
pub(crate) struct McpSetup {
    /// The enabled servers, validated.
    pub(crate) servers: Vec<McpServerConfig>,
    /// What the trust gate skipped.
    pub(super) trust: TrustSkip,
}

/// Reads the MCP servers of Zero's config layers (see the module docs); an invalid file is
/// the message of an `mcp_error`.
pub(crate) fn zero_mcp_servers(workspace: &Path, env: &EnvLookup) -> Result<McpSetup, String> {
    let mut config = ZeroMcpConfig::default();
    if let Some(dir) = user_config_dir(env) {
        if let Some(user) = read_zero_layer(&dir.join("zero").join("config.json"))? {
            config.merge(user);
        }
    }
    let project = workspace.join(".zero").join("config.json");
    let (trusted, store_error) = trusted(&zero_paths(workspace, env), workspace);
    let mut trust = TrustSkip::default();
    if trusted {
        if let Some(layer) = read_zero_layer(&project)? {
            config
                .merge_project(layer)
                .map_err(|err| format!("{}: {err}", project.display()))?;
        }
    } else {
        trust = TrustSkip {
            skipped: project.is_file(),
            store_error,
        };
    }
    let servers = config.into_servers().map_err(|err| err.to_string())?;
    Ok(McpSetup { servers, trust })
}

/// The capabilities of a run.
pub(super) struct ExecCapabilities {
    /// agent-host's layer, with Zero's hooks and specialists in it.
    pub(super) caps: Capabilities,
    /// What the hooks' trust gate skipped.
    pub(super) trust: TrustSkip,
    /// Lines for stderr: what was skipped while loading (hook definitions, manifests).
    pub(super) notices: Vec<String>,
}

/// Zero offers its specialist tools only at `--auto medium` or `high` (or unsafe), and
/// never in a specialist's own run (`--tag specialist`).
pub(super) fn wants_specialists(o: &ExecOptions) -> bool {
    if o.tag
        .as_deref()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("specialist"))
    {
        return false;
    }
    let autonomy = o.autonomy.trim().to_ascii_lowercase();
    o.skip_permissions_unsafe || autonomy == "high" || autonomy == "medium"
}

/// The specialists for `workspace` where Zero offers them (else none); a layer Zero refuses
/// to run with is a `specialist_error`.
pub(super) fn specialists(
    o: &ExecOptions,
    workspace: &Path,
    env: &EnvLookup,
) -> Result<SpecialistRegistry, Failure> {
    if !wants_specialists(o) {
        return Ok(SpecialistRegistry::empty());
    }
    let registry = SpecialistRegistry::load(&SpecialistPaths::resolve(workspace, |n| env(n)));
    match registry.fatal_error() {
        Some(err) => Err(Failure::Capability("specialist_error", err.to_string())),
        None => Ok(registry),
    }
}

/// Loads the capability flags with agent-host's layer, then adds Zero's hooks (before the
/// `--hooks` file's) and the specialists. A `--hooks` file that cannot be loaded is a usage
/// error, an `--mcp-config` file an `mcp_error`. `transcripts` is the session root (Claude
/// Code's `transcript_path` points into it).
pub(super) fn load(
    o: &ExecOptions,
    workspace: &Path,
    env: &EnvLookup,
    specialists: SpecialistRegistry,
    transcripts: Option<PathBuf>,
) -> Result<ExecCapabilities, Failure> {
    let mut args = o.capabilities.clone();
    let hooks_file = args.hooks.take().map(|p| workspace.join(p));
    args.mcp_config = args.mcp_config.map(|p| workspace.join(p));
    args.settings = args.settings.map(|p| workspace.join(p));
    args.add_dir = args.add_dir.iter().map(|d| workspace.join(d)).collect();
    let mut options = HookOptions::new(workspace);
    if let Some(root) = transcripts {
        options.transcript_path = Some(Arc::new(move |id: &str| {
            Some(root.join(id).join(crate::session::EVENTS_FILE))
        }));
    }
    let mut caps = Capabilities::load_with(&args, &options).map_err(|err| match err {
        CapabilityError::McpRead { .. } | CapabilityError::McpConfig { .. } => {
            Failure::Capability("mcp_error", err.to_string())
        }
        other => Failure::Usage(other.to_string()),
    })?;
    // The layer's own warnings are about the specialists it loaded, which Zero's replace.
    caps.warnings.clear();
    guards(&mut caps.guards, workspace, env)?;
    // MCP servers that ask for OAuth: tokens in Zero's data directory. A server's question
    // (elicitation) has nobody to answer in a headless run, except under
    // --skip-permissions-unsafe, which accepts with the schema's defaults.
    caps.mcp_options.oauth = super::mcp_oauth::oauth_options(env);
    if o.skip_permissions_unsafe {
        caps.mcp_options.elicitor = Some(Arc::new(agent_mcp::AcceptDefaults));
    }
    let mut notices: Vec<String> = specialists
        .errors()
        .iter()
        .map(|e| format!("[zero] WARNING: skipped specialist manifest {e}"))
        .chain(
            specialists
                .warnings()
                .into_iter()
                .map(|w| format!("[zero] WARNING: specialists: {w}")),
        )
        .collect();
    caps.specialists = Arc::new(specialists);

    let zero = agent_hooks::zero::load_workspace_with(&options, &zero_paths(workspace, env));
    let trust = TrustSkip {
        skipped: zero.project_skipped,
        store_error: zero.trust_error.is_some(),
    };
    notices.extend(
        zero.diagnostics
            .iter()
            .map(|d| format!("[zero] WARNING: {d}")),
    );
    if !zero.hooks.config().hooks.is_empty() {
        caps.hooks.push(zero.hooks);
    }
    if let Some(path) = hooks_file {
        let loaded = agent_hooks::load_file(&path, &options)
            .map_err(|err| Failure::Usage(format!("--hooks: {err}")))?;
        notices.extend(
            loaded
                .diagnostics
                .iter()
                .map(|d| format!("[zero] WARNING: hooks file {}: {d}", path.display())),
        );
        caps.hooks.push(loaded.hooks);
    }
    Ok(ExecCapabilities {
        caps,
        trust,
        notices,
    })
}

/// Exec's part of the guards: the workspace's `.claude/settings.json` allows only where Zero
/// trusts the workspace (its deny and ask rules always apply; a bad file is a usage error
/// here, before anything runs), and Zero's sandbox grants are rules (a file Zero would
/// refuse is a `sandbox_error`).
fn guards(
    guards: &mut agent_host::guards::Guards,
    workspace: &Path,
    env: &EnvLookup,
) -> Result<(), Failure> {
    let (trusted, _) = trusted(&zero_paths(workspace, env), workspace);
    guards.project = Some(match trusted {
        true => agent_host::guards::ProjectTrust::Trusted,
        false => agent_host::guards::ProjectTrust::Untrusted,
    });
    guards
        .project_rules(workspace)
        .map_err(|err| Failure::Usage(format!("settings {err}")))?;
    if let Some(grants) = agent_host::guards::zero_grants::ZeroGrants::locate(&|n| env(n)) {
        let rules = grants
            .rules()
            .map_err(|err| Failure::Capability("sandbox_error", err.to_string()))?;
        guards.rules.extend(rules);
    }
    Ok(())
}

/// Connects the MCP servers of Zero's config and `--mcp-config` (none: nothing starts);
/// an invalid configuration is an `mcp_error`.
pub(super) async fn connect_mcp(
    caps: &Capabilities,
    workspace: &Path,
    env: &EnvLookup,
) -> Result<(Option<McpManager>, TrustSkip), Failure> {
    let setup =
        zero_mcp_servers(workspace, env).map_err(|m| Failure::Capability("mcp_error", m))?;
    if setup.servers.is_empty() && caps.mcp_servers.is_empty() {
        return Ok((None, setup.trust));
    }
    let manager = caps
        .connect_mcp(setup.servers)
        .await
        .map_err(|e| Failure::Capability("mcp_error", e.to_string()))?;
    Ok((Some(manager), setup.trust))
}

/// `--output-schema FILE`: the schema asked of the provider and the check of the final
/// answer; a file that cannot be read or is no JSON Schema is the message of a usage error.
pub(super) fn output_spec(workspace: &Path, file: &str) -> Result<OutputSpec, String> {
    let path = resolve_against(workspace, file);
    let text = std::fs::read_to_string(&path)
        .map_err(|_| format!("output schema file not found: {}", path.display()))?;
    let schema: Value = serde_json::from_str(&text)
        .map_err(|err| format!("invalid output schema {}: {err}", path.display()))?;
    let validator = jsonschema::validator_for(&schema)
        .map_err(|err| format!("invalid output schema {}: {err}", path.display()))?;
    // The provider gets the file's schema as it is; it is asked to enforce it strictly
    // only when the schema already follows the strict rules (an object root, every
    // property required, no additional properties).
    let strict = StrictSchema::from_schema(schema.clone());
    let strict = strict.strict && !strict.wrapped && strict.schema == schema;
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .map(schema_name)
        .unwrap_or_else(|| "output".to_string());
    let asked = OutputSchema {
        name,
        schema,
        strict,
    };
    Ok(OutputSpec::new(asked, move |answer| {
        check_answer(&validator, answer)
    }))
}

/// A schema name as the APIs accept it: `[A-Za-z0-9_-]`, 1 to 64 characters.
fn schema_name(raw: &str) -> String {
    let name: String = raw
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                true => c,
                false => '_',
            },
        )
        .take(64)
        .collect();
    match name.is_empty() {
        true => "output".to_string(),
        false => name,
    }
}

/// Checks an answer: JSON (a Markdown code fence around it is tolerated) valid against the
/// schema; the error names the first place it fails.
fn check_answer(validator: &jsonschema::Validator, answer: &str) -> Result<(), String> {
    let value: Value = serde_json::from_str(strip_fence(answer.trim()))
        .map_err(|err| format!("the answer is not JSON: {err}"))?;
    match validator.validate(&value) {
        Ok(()) => Ok(()),
        Err(err) => {
            let at = err.instance_path().to_string();
            Err(match at.is_empty() {
                true => err.to_string(),
                false => format!("at {}: {err}", go_quote(&at)),
            })
        }
    }
}

/// The body of a ```` ```json … ``` ```` fence, or the text itself.
fn strip_fence(text: &str) -> &str {
    let Some(body) = text
        .strip_prefix("```")
        .and_then(|rest| rest.strip_suffix("```"))
    else {
        return text;
    };
    match body.split_once('\n') {
        Some((info, rest)) if !info.contains('{') && !info.contains('[') => rest.trim(),
        _ => body.trim(),
    }
}

/// An MCP manager's tools with `--enabled-tools` / `--disabled-tools` applied.
pub(super) struct FilteredTools {
    /// The servers.
    pub(super) inner: McpManager,
    /// The flags' filter (by name).
    pub(super) filter: ToolFilter,
}

#[async_trait]
impl ToolSource for FilteredTools {
    fn generation(&self) -> u64 {
        ToolSource::generation(&self.inner)
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.inner
            .tools()
            .into_iter()
            .filter(|t| self.filter.allows_name(t.name()))
            .collect()
    }

    async fn refresh(&self) {
        self.inner.refresh().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: Vec<(&'static str, String)>) -> EnvLookup {
        Arc::new(move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn mcp_servers_come_from_the_user_layer_and_a_trusted_project() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("ws");
        let config = dir.path().join("config");
        std::fs::create_dir_all(ws.join(".zero")).expect("ws");
        std::fs::create_dir_all(config.join("zero")).expect("config");
        std::fs::write(
            config.join("zero/config.json"),
            r#"{"mcp": {"servers": {"user": {"command": "u"}}},
                "mcpServers": {"off": {"command": "o", "disabled": true}}}"#,
        )
        .expect("user");
        std::fs::write(
            ws.join(".zero/config.json"),
            r#"{"mcp_servers": {"proj": {"command": "p"}}}"#,
        )
        .expect("project");
        let lookup = env(vec![("XDG_CONFIG_HOME", config.display().to_string())]);

        let setup = zero_mcp_servers(&ws, &lookup).expect("valid");
        let names: Vec<&str> = setup.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["user"], "untrusted: no project layer, no disabled");
        assert_eq!(
            setup.trust.notice(),
            Some(UNTRUSTED_NOTICE),
            "the skipped project file is noticed"
        );

        let root = std::fs::canonicalize(&ws).expect("canonical");
        std::fs::write(
            config.join("zero/trust.json"),
            serde_json::json!({"trusted": [root]}).to_string(),
        )
        .expect("trust");
        let setup = zero_mcp_servers(&ws, &lookup).expect("valid");
        let names: Vec<&str> = setup.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["proj", "user"]);
        assert_eq!(setup.trust.notice(), None);

        std::fs::write(config.join("zero/config.json"), "{not json").expect("broken");
        let err = zero_mcp_servers(&ws, &lookup).expect_err("invalid");
        assert!(err.contains("config.json"), "{err}");
    }

    #[test]
    fn output_schema_checks_the_answer() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("answer.json"),
            r#"{"type": "object", "properties": {"n": {"type": "integer"}},
                "required": ["n"], "additionalProperties": false}"#,
        )
        .expect("schema");
        let spec = output_spec(dir.path(), "answer.json").expect("valid schema");
        assert_eq!(spec.schema().name, "answer");
        assert!(spec.schema().strict);
        assert_eq!(spec.check(r#"{"n": 3}"#), Ok(()));
        assert_eq!(spec.check("```json\n{\"n\": 3}\n```"), Ok(()));
        let err = spec.check(r#"{"n": "three"}"#).expect_err("wrong type");
        assert!(err.contains("/n"), "{err}");
        assert!(spec.check("three").is_err());

        std::fs::write(dir.path().join("bad.json"), r#"{"type": 12}"#).expect("bad");
        assert!(output_spec(dir.path(), "bad.json")
            .expect_err("invalid schema")
            .starts_with("invalid output schema"));
        assert!(output_spec(dir.path(), "missing.json")
            .expect_err("missing")
            .starts_with("output schema file not found: "));
    }

    #[test]
    fn specialists_follow_zeros_autonomy_gate() {
        let mut o = ExecOptions {
            autonomy: "low".into(),
            ..ExecOptions::default()
        };
        assert!(!wants_specialists(&o));
        o.autonomy = "medium".into();
        assert!(wants_specialists(&o));
        o.tag = Some("specialist".into());
        assert!(!wants_specialists(&o));
        o.tag = None;
        o.autonomy = "low".into();
        o.skip_permissions_unsafe = true;
        assert!(wants_specialists(&o));
    }
}
