//! The steps before a run starts, each failing with Zero's message: the workspace, the
//! permission mode, the tools, the prompt and images, and the provider settings.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_core::{Agent, PermissionMode, Provider, ReasoningLevel, SideEffect, Tool, UserInput};
use agent_host::cli::{build_provider, ProviderEnv};
use agent_providers::ProviderConfig;
use agent_tools::ToolSet;
use bytes::Bytes;

use super::{EnvLookup, ExecHooks, Failure};
use crate::checkpoint::{CheckpointTool, Snapshots};
use crate::cli::{invalid_autonomy, ExecOptions, InputFormat};
use crate::input::{go_quote, parse_input, resolve_images, resolve_prompt, MAX_IMAGE_BYTES};
use crate::mapping::MapperConfig;
use crate::record::{RecorderConfig, SessionRecorder};
use crate::session::{
    default_root, format_exec_prompt, preflight, prepare, session_title, NewSessionInfo,
    PreparedSession, SessionRequest, SessionStore,
};
use crate::wire::RunStart;

/// Zero's permission modes, mapped onto agent-core's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ZeroMode {
    /// Zero's name, reported on permission events.
    pub(super) name: &'static str,
    pub(super) core: PermissionMode,
    /// Why unsafe mode is on, for the warning line.
    pub(super) unsafe_reason: Option<&'static str>,
}

fn resolve_permission_mode(o: &ExecOptions) -> Result<ZeroMode, String> {
    let mode = |name, core| ZeroMode {
        name,
        core,
        unsafe_reason: None,
    };
    if o.plan {
        return Ok(mode("plan", PermissionMode::Plan));
    }
    if let Some(pm) = &o.permission_mode {
        return match pm.trim().to_ascii_lowercase().as_str() {
            "plan" => Ok(mode("plan", PermissionMode::Plan)),
            "spec-draft" | "spec_draft" => Ok(mode("spec-draft", PermissionMode::Plan)),
            "auto" => Ok(mode("auto", PermissionMode::Auto)),
            "member" | "member-auto" | "member_auto" => Ok(mode("member-auto", PermissionMode::Auto)),
            "ask" => Ok(mode("ask", PermissionMode::Ask)),
            "unsafe" | "high" => Ok(ZeroMode {
                name: "unsafe",
                core: PermissionMode::Unsafe,
                unsafe_reason: Some("--permission-mode unsafe"),
            }),
            _ => Err(format!(
                "Invalid permission mode {}. Expected plan, spec-draft, auto, member, ask, or unsafe.",
                go_quote(pm)
            )),
        };
    }
    let by_autonomy = match o.autonomy.trim().to_ascii_lowercase().as_str() {
        "" | "low" | "medium" => mode("auto", PermissionMode::Auto),
        "member" => mode("member-auto", PermissionMode::Auto),
        "high" => ZeroMode {
            name: "unsafe",
            core: PermissionMode::Unsafe,
            unsafe_reason: Some("--auto high"),
        },
        _ => return Err(invalid_autonomy(&o.autonomy)),
    };
    if o.skip_permissions_unsafe {
        return Ok(ZeroMode {
            name: "unsafe",
            core: PermissionMode::Unsafe,
            unsafe_reason: Some("--skip-permissions-unsafe"),
        });
    }
    Ok(by_autonomy)
}

fn valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The tools the model can see: the defaults plus the host's, filtered by the flags; in plan
/// mode only tools without side effects beyond reading.
fn build_tools(
    workspace: &Path,
    o: &ExecOptions,
    mode: &ZeroMode,
    extra: &[Arc<dyn Tool>],
) -> Result<Vec<Arc<dyn Tool>>, String> {
    let mut set = ToolSet::defaults(workspace);
    for tool in extra {
        set.push(tool.clone());
    }
    for name in o.enabled_tools.iter().chain(&o.disabled_tools) {
        if !valid_tool_name(name) {
            return Err(format!("Invalid tool name {}.", go_quote(name)));
        }
        if !set.names().contains(&name.as_str()) {
            return Err(format!("Unknown tool: {name}"));
        }
    }
    if let Some(name) = o
        .enabled_tools
        .iter()
        .find(|n| o.disabled_tools.contains(n))
    {
        return Err(format!("Tool cannot be both enabled and disabled: {name}"));
    }
    let enabled = (!o.enabled_tools.is_empty()).then_some(o.enabled_tools.as_slice());
    let set = set
        .filter(enabled, &o.disabled_tools)
        .map_err(|err| err.to_string())?;
    let mut tools = set.into_tools();
    if mode.core == PermissionMode::Plan {
        tools.retain(|t| matches!(t.side_effect(), SideEffect::Read | SideEffect::None));
    }
    tools.sort_by(|a, b| a.name().cmp(b.name()));
    Ok(tools)
}

pub(super) fn format_tool_list(tools: &[Arc<dyn Tool>]) -> String {
    let mut lines = vec!["Tools visible to model:".to_string()];
    for tool in tools {
        lines.push(format!(
            "  {} [{}/{}] - {}",
            tool.name(),
            tool.side_effect(),
            tool.permission().as_str(),
            tool.description()
        ));
    }
    if tools.is_empty() {
        lines.push("  (none)".into());
    }
    lines.join("\n")
}

fn resolve_workspace(cwd: Option<&str>, base: Option<&Path>) -> Result<PathBuf, String> {
    let current = match base {
        Some(dir) => dir.to_path_buf(),
        None => {
            std::env::current_dir().map_err(|err| format!("failed to resolve workspace: {err}"))?
        }
    };
    let root = match cwd.map(str::trim).filter(|c| !c.is_empty()) {
        None => current,
        Some(dir) if Path::new(dir).is_absolute() => PathBuf::from(dir),
        Some(dir) => current.join(dir),
    };
    let root = clean_path(&root);
    match root.is_dir() {
        true => Ok(root),
        false => Err(format!(
            "cwd must be an existing directory: {}",
            root.display()
        )),
    }
}

/// Lexically cleans a path (`.` and `..` components), like Go's `filepath.Clean`.
fn clean_path(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

fn resolve_against(workspace: &Path, path: &str) -> PathBuf {
    match Path::new(path).is_absolute() {
        true => PathBuf::from(path),
        false => workspace.join(path),
    }
}

/// The prompt text and stream-json images.
fn resolve_exec_prompt(
    o: &ExecOptions,
    workspace: &Path,
    stdin: &mut dyn Read,
) -> Result<(String, Vec<(String, Bytes)>), String> {
    if o.input_format == InputFormat::StreamJson {
        let input = match &o.file {
            Some(file) => {
                let path = resolve_against(workspace, file);
                std::fs::read(&path)
                    .map(|data| String::from_utf8_lossy(&data).into_owned())
                    .map_err(|_| format!("prompt file not found: {}", path.display()))?
            }
            None => {
                let mut data = Vec::new();
                stdin
                    .read_to_end(&mut data)
                    .map_err(|err| format!("failed to read stream-json input: {err}"))?;
                String::from_utf8_lossy(&data).into_owned()
            }
        };
        let events = parse_input(&input).map_err(|e| e.0)?;
        let images = resolve_images(&events).map_err(|e| e.0)?;
        let prompt = match resolve_prompt(&events) {
            Ok(prompt) => prompt,
            Err(_) if !images.is_empty() => String::new(),
            Err(err) => return Err(err.0),
        };
        let images = images.into_iter().map(|i| (i.media_type, i.data)).collect();
        return Ok((prompt, images));
    }
    let mut parts = Vec::new();
    let inline = o.prompt_parts.join(" ");
    if !inline.trim().is_empty() {
        parts.push(inline.trim().to_string());
    }
    if let Some(file) = &o.file {
        let path = resolve_against(workspace, file);
        let data = std::fs::read(&path)
            .map_err(|_| format!("prompt file not found: {}", path.display()))?;
        let text = String::from_utf8_lossy(&data).trim().to_string();
        if text.is_empty() {
            return Err(format!("prompt file is empty: {}", path.display()));
        }
        parts.push(text);
    }
    let prompt = parts.join("\n\n").trim().to_string();
    if prompt.is_empty() {
        return Err(crate::cli::prompt_required());
    }
    Ok((prompt, Vec::new()))
}

fn sniff_image(data: &[u8], path: &Path) -> Option<&'static str> {
    if data.starts_with(b"\x89PNG\r\n\x1a\n") {
        return Some("image/png");
    }
    if data.starts_with(&[0xff, 0xd8, 0xff]) {
        return Some("image/jpeg");
    }
    if data.starts_with(b"GIF87a") || data.starts_with(b"GIF89a") {
        return Some("image/gif");
    }
    if data.len() >= 12 && &data[..4] == b"RIFF" && &data[8..12] == b"WEBP" {
        return Some("image/webp");
    }
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    crate::input::normalize_media_type(&ext).map(|m| match m.as_str() {
        "image/png" => "image/png",
        "image/jpeg" => "image/jpeg",
        "image/gif" => "image/gif",
        _ => "image/webp",
    })
}

/// Loads `--image` files (relative paths against the workspace).
fn load_images(paths: &[String], workspace: &Path) -> Result<Vec<(String, Bytes)>, String> {
    let mut images = Vec::new();
    for path in paths {
        let full = resolve_against(workspace, path);
        let data = std::fs::read(&full)
            .map_err(|_| format!("image file not found: {}", full.display()))?;
        if data.len() > MAX_IMAGE_BYTES {
            return Err(format!(
                "image {} exceeds the {MAX_IMAGE_BYTES} byte limit.",
                full.display()
            ));
        }
        let media = sniff_image(&data, &full)
            .ok_or_else(|| format!("unsupported image type: {}", full.display()))?;
        images.push((media.to_string(), Bytes::from(data)));
    }
    Ok(images)
}

fn reasoning_level(effort: &str) -> ReasoningLevel {
    match effort.trim().to_ascii_lowercase().as_str() {
        "low" => ReasoningLevel::Low,
        "high" => ReasoningLevel::High,
        _ => ReasoningLevel::Medium,
    }
}

/// The variables Zero reads for the provider flags it leaves out: `$ZERO_PROVIDER` names the
/// provider (then the providers' standard key and URL variables apply).
const ZERO_PROVIDER_ENV: ProviderEnv = ProviderEnv {
    provider: Some("ZERO_PROVIDER"),
    model: None,
    base_url: None,
    script: None,
};

/// The provider settings: `--provider`, else `$ZERO_PROVIDER`, else `scripted` (agent-host's
/// provider flags, with Zero's variable).
fn provider_config(o: &ExecOptions, env: &EnvLookup) -> Result<ProviderConfig, String> {
    o.provider
        .config(&ZERO_PROVIDER_ENV, &**env)
        .map_err(|err| err.to_string())
}

/// Zero's name for a provider kind.
fn provider_kind(id: &str) -> String {
    match id {
        "openai" => "openai-compatible".into(),
        other => other.into(),
    }
}

const SYSTEM_PROMPT: &str = "You are Zero, a coding agent running headless. Work in the \
workspace with the tools you are given, then answer the user concisely. Nobody can answer \
questions during this run: when something is ambiguous, proceed with your best assumption.";

/// The workspace, the permission mode and the tools: all `--list-tools` needs.
pub(super) struct Plan {
    /// Absolute workspace root.
    pub(super) workspace: PathBuf,
    /// The permission mode.
    pub(super) mode: ZeroMode,
    /// The tools the model can see, sorted by name.
    pub(super) tools: Vec<Arc<dyn Tool>>,
}

/// Resolves the workspace, the permission mode and the tools, in Zero's order.
pub(super) fn plan(o: &ExecOptions, hooks: &ExecHooks) -> Result<Plan, Failure> {
    let workspace =
        resolve_workspace(o.cwd.as_deref(), hooks.cwd.as_deref()).map_err(Failure::Usage)?;
    let mode = resolve_permission_mode(o).map_err(Failure::Usage)?;
    let tools = build_tools(&workspace, o, &mode, &hooks.tools).map_err(Failure::Usage)?;
    Ok(Plan {
        workspace,
        mode,
        tools,
    })
}

/// A run ready to start.
pub(super) struct Ready {
    /// The agent, with its tools (file writers wrapped for checkpoints).
    pub(super) agent: Agent,
    /// The model input: the prompt (with a resumed session's context) and the images.
    pub(super) input: UserInput,
    /// The prompt as given, recorded first.
    pub(super) prompt: String,
    /// The `run_start` line.
    pub(super) start: RunStart,
    /// Why unsafe mode is on, for the warning after `run_start`.
    pub(super) unsafe_reason: Option<&'static str>,
    /// The mapping's settings.
    pub(super) mapping: MapperConfig,
    /// The session recorder, when the run has a session.
    pub(super) recorder: Option<SessionRecorder>,
}

/// What the command line asks of sessions.
fn session_request(o: &ExecOptions) -> SessionRequest {
    SessionRequest {
        resume: o.resume.clone(),
        resume_latest: o.resume_latest,
        fork: o.fork.clone(),
        init_session_id: o.init_session_id.clone(),
    }
}

/// Zero records a session under stream-json, and whenever one is named.
fn uses_session(o: &ExecOptions, request: &SessionRequest) -> bool {
    o.output_format == crate::cli::OutputFormat::StreamJson
        || request.resume.is_some()
        || request.resume_latest
        || request.fork.is_some()
        || request.init_session_id.is_some()
}

/// The prompt and every image: stream-json images after the `--image` files.
fn read_input(
    o: &ExecOptions,
    workspace: &Path,
    stdin: &mut dyn Read,
) -> Result<(String, Vec<(String, Bytes)>), Failure> {
    let (prompt, stream_images) =
        resolve_exec_prompt(o, workspace, stdin).map_err(Failure::Usage)?;
    let mut images = load_images(&o.image_paths, workspace).map_err(Failure::Usage)?;
    images.extend(stream_images);
    Ok((prompt, images))
}

/// The agent: the provider, the tools (file writers wrapped so their files are snapshotted
/// first when `snapshots` is given), the mode and the model flags.
fn build_agent(
    o: &ExecOptions,
    provider: Arc<dyn Provider>,
    plan: Plan,
    snapshots: Option<&Arc<Snapshots>>,
) -> Agent {
    let tools: Vec<Arc<dyn Tool>> = plan
        .tools
        .into_iter()
        .map(|tool| match snapshots {
            Some(snapshots) if tool.side_effect() == SideEffect::Write => {
                Arc::new(CheckpointTool::new(tool, snapshots.clone())) as Arc<dyn Tool>
            }
            _ => tool,
        })
        .collect();
    let mut builder = Agent::builder_arc(provider)
        .system_prompt(SYSTEM_PROMPT)
        .tools(tools)
        .permission_mode(plan.mode.core)
        .cwd(plan.workspace);
    if let Some(model) = &o.provider.model {
        builder = builder.model(model.clone());
    }
    if let Some(turns) = o.max_turns {
        builder = builder.max_steps(turns);
    }
    if let Some(effort) = &o.reasoning_effort {
        builder = builder.reasoning(reasoning_level(effort));
    }
    builder.build()
}

/// Everything after `--list-tools`, in Zero's order: provider settings, session preflight,
/// the prompt and images, the provider, the agent, then the session.
pub(super) fn ready(
    o: &ExecOptions,
    hooks: &ExecHooks,
    plan: Plan,
    stdin: &mut dyn Read,
) -> Result<Ready, Failure> {
    let provider_config = provider_config(o, &hooks.env).map_err(Failure::Usage)?;
    let store = SessionStore::new(default_root(&*hooks.env));
    let request = session_request(o);
    let use_session = uses_session(o, &request);
    if use_session {
        preflight(&store, &request).map_err(|err| Failure::Usage(err.0))?;
    }
    let (prompt, images) = read_input(o, &plan.workspace, stdin)?;
    let provider = match hooks.provider.clone() {
        Some(provider) => provider,
        None => {
            build_provider(&provider_config).map_err(|err| Failure::Provider(err.to_string()))?
        }
    };

    let checkpoints = use_session
        && !(hooks.env)("ZERO_CHECKPOINTS").is_some_and(|v| v.trim().eq_ignore_ascii_case("off"));
    let snapshots = Arc::new(Snapshots::default());
    let workspace = plan.workspace.clone();
    let mode = plan.mode.clone();
    let agent = build_agent(o, provider.clone(), plan, checkpoints.then_some(&snapshots));
    let model = agent.state().model;
    let kind = provider_kind(provider.id());
    let cwd = workspace.display().to_string();

    let prepared: Option<PreparedSession> = match use_session {
        true => {
            let info = NewSessionInfo {
                title: session_title(o.session_title.as_deref(), &prompt),
                cwd: cwd.clone(),
                model_id: model.clone(),
                provider: kind.clone(),
            };
            Some(prepare(&store, &request, info).map_err(|err| Failure::Usage(err.0))?)
        }
        false => None,
    };
    let mut input = UserInput::text(match &prepared {
        Some(p) => format_exec_prompt(&prompt, p),
        None => prompt.clone(),
    });
    for (media, data) in images {
        input = input.with_image(media, data);
    }
    let session_id = prepared
        .as_ref()
        .map(|p| p.meta.session_id.clone())
        .unwrap_or_default();
    let mapping = MapperConfig {
        session_id: session_id.clone(),
        permission_mode: mode.name.to_string(),
        autonomy: match o.autonomy.trim() {
            "" => "low".into(),
            a => a.to_string(),
        },
    };
    let recorder = prepared.map(|p| {
        let config = RecorderConfig {
            mapping: mapping.clone(),
            cwd: workspace,
            checkpoints,
            snapshots,
        };
        SessionRecorder::new(store, p.meta.session_id, config)
    });
    Ok(Ready {
        agent,
        input,
        prompt,
        start: RunStart {
            api_model: model.clone(),
            cwd,
            model,
            provider: kind,
            session_id,
        },
        unsafe_reason: mode.unsafe_reason,
        mapping,
        recorder,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(f: impl FnOnce(&mut ExecOptions)) -> ExecOptions {
        let mut o = ExecOptions {
            autonomy: "low".into(),
            ..ExecOptions::default()
        };
        f(&mut o);
        o
    }

    #[test]
    fn permission_modes_resolve_like_zero() {
        let m = resolve_permission_mode(&opts(|_| {})).expect("default");
        assert_eq!((m.name, m.core), ("auto", PermissionMode::Auto));
        let m = resolve_permission_mode(&opts(|o| o.autonomy = "high".into())).expect("high");
        assert_eq!(m.unsafe_reason, Some("--auto high"));
        let m = resolve_permission_mode(&opts(|o| o.skip_permissions_unsafe = true)).expect("skip");
        assert_eq!(m.unsafe_reason, Some("--skip-permissions-unsafe"));
        let m = resolve_permission_mode(&opts(|o| o.permission_mode = Some("HIGH".into())))
            .expect("pm");
        assert_eq!(m.unsafe_reason, Some("--permission-mode unsafe"));
        assert_eq!(
            resolve_permission_mode(&opts(|o| o.permission_mode = Some("nope".into())))
                .expect_err("bad"),
            "Invalid permission mode \"nope\". Expected plan, spec-draft, auto, member, ask, or unsafe."
        );
        assert_eq!(
            resolve_permission_mode(&opts(|o| o.autonomy = "max".into())).expect_err("bad"),
            "Invalid autonomy level \"max\". Expected low, medium, or high."
        );
    }

    #[test]
    fn workspace_must_exist() {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path();
        assert_eq!(
            resolve_workspace(Some("sub/../"), Some(base)).expect("exists"),
            base.to_path_buf()
        );
        assert_eq!(
            resolve_workspace(Some("missing"), Some(base)).expect_err("missing"),
            format!(
                "cwd must be an existing directory: {}",
                base.join("missing").display()
            )
        );
    }
}
