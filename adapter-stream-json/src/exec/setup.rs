//! The steps before a run starts, each failing with Zero's message: the workspace, the
//! permission mode, the tools, the prompt and images, and the provider settings.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_core::{
    structured::OutputSpec, tool_source::ToolSource, Agent, PermissionMode, ReasoningLevel,
    SideEffect, Tool, UserInput,
};
use agent_host::capabilities::Capabilities;
use agent_host::cli::{build_provider, ProviderEnv};
use agent_host::lsp::Dialect;
use agent_host::session::{
    AgentFactory, AgentSpec, Recording, SessionStorage, ToolCheck, ToolFilter, ToolFilterError,
    ToolRequest,
};
use agent_mcp::ServerState;
use agent_providers::ProviderConfig;
use bytes::Bytes;

use super::capabilities::{self, FilteredTools, TrustSkip};
use super::{EnvLookup, ExecHooks, Failure};
use crate::checkpoint::{CheckpointTool, Snapshots};
use crate::cli::{invalid_autonomy, ExecOptions, InputFormat};
use crate::input::{go_quote, parse_input, resolve_images, resolve_prompt, MAX_IMAGE_BYTES};
use crate::mapping::MappingConfig;
use crate::record::{RecorderConfig, SessionRecorder};
use crate::session::{
    default_root, format_exec_prompt, preflight, prepare, session_title, NewSessionInfo,
    PreparedSession, SessionRequest, Transcripts, ZeroSessions as SessionStore, ZeroStorage,
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

/// The tools the model can see: the defaults (with the `--add-dir` roots) plus the host's
/// and the `Task` tools, filtered by the flags (whose names may also be `mcp_names`, the
/// MCP tools filtered elsewhere); in plan mode only tools without side effects beyond
/// reading. Sorted by name.
fn build_tools(
    workspace: &Path,
    o: &ExecOptions,
    mode: &ZeroMode,
    extra: Vec<Arc<dyn Tool>>,
    mcp_names: &[String],
) -> Result<Vec<Arc<dyn Tool>>, String> {
    // The `Task` tools run sub-agents through the calling run: added as they are.
    let (own, extra): (Vec<_>, Vec<_>) = extra
        .into_iter()
        .partition(|tool| agent_specialists::TASK_TOOL_NAMES.contains(&tool.name()));
    let mut filter = tool_filter(o);
    if mode.core == PermissionMode::Plan {
        filter = filter.read_only();
    }
    let request = ToolRequest {
        workspace: workspace.to_path_buf(),
        roots: o
            .capabilities
            .add_dir
            .iter()
            .map(|root| workspace.join(root))
            .collect(),
        extra,
        own,
        filter,
        check: Some(ToolCheck {
            also_known: mcp_names.to_vec(),
            valid_names: true,
        }),
        // Zero's tool names, argument shapes and texts (list_directory, update_plan, …),
        // and web_search when Zero's variables configure a backend.
        catalogue: agent_tools::Catalogue::Zero,
        web_search: agent_tools::SearchBackend::from_env(),
    };
    let mut tools = request.build().map_err(|err| match err {
        ToolFilterError::InvalidName(name) => format!("Invalid tool name {}.", go_quote(&name)),
        ToolFilterError::UnknownTool { name, .. } => format!("Unknown tool: {name}"),
        ToolFilterError::EnabledAndDisabled(name) => {
            format!("Tool cannot be both enabled and disabled: {name}")
        }
    })?;
    tools.sort_by(|a, b| a.name().cmp(b.name()));
    Ok(tools)
}

/// `--enabled-tools` (none: every tool) and `--disabled-tools`.
pub(super) fn tool_filter(o: &ExecOptions) -> ToolFilter {
    ToolFilter::lists(
        (!o.enabled_tools.is_empty()).then(|| o.enabled_tools.clone()),
        o.disabled_tools.clone(),
    )
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

/// Everything decided before the prompt is read: the workspace, the permission mode, the
/// tools (MCP servers connected), the capabilities (sandbox, hooks, context budget) and the
/// output schema. All `--list-tools` needs.
pub(super) struct Plan {
    /// Absolute workspace root.
    pub(super) workspace: PathBuf,
    /// The permission mode.
    pub(super) mode: ZeroMode,
    /// The agent's own tools the model can see, sorted by name (MCP tools are in `mcp`).
    pub(super) tools: Vec<Arc<dyn Tool>>,
    /// The connected MCP servers with the tool filters applied; `None` without servers
    /// (or in plan mode, where Zero starts none).
    pub(super) mcp: Option<Arc<FilteredTools>>,
    /// agent-host's capabilities: the sandbox, the hooks, the context settings.
    pub(super) caps: Capabilities,
    /// What the workspace-trust gate skipped (hooks and MCP).
    pub(super) trust: TrustSkip,
    /// The skills (their `skill` tool is among `tools` unless filtered out).
    pub(super) skills: Option<agent_core::skills::Skills>,
    /// Lines for stderr about what was skipped while loading.
    pub(super) notices: Vec<String>,
    /// `--output-schema`.
    pub(super) output: Option<OutputSpec>,
    /// The run's language servers (Zero's `lsp_navigate`; nothing started until used).
    pub(super) lsp: agent_host::lsp::Lsp,
}

impl Plan {
    /// Every tool the model can see, MCP tools included, sorted by name.
    pub(super) fn visible_tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools = self.tools.clone();
        if let Some(mcp) = &self.mcp {
            tools.extend(agent_core::tool_source::ToolSource::tools(&**mcp));
        }
        tools.sort_by(|a, b| a.name().cmp(b.name()));
        tools
    }

    /// The MCP servers that could not be used, as Zero words it.
    pub(super) fn mcp_warnings(&self) -> Vec<String> {
        let Some(mcp) = &self.mcp else {
            return Vec::new();
        };
        mcp.inner
            .status()
            .into_iter()
            .filter_map(|s| match s.state {
                ServerState::Failed { reason } => Some(format!(
                    "MCP server {} unavailable, skipped: {reason}",
                    s.name
                )),
                ServerState::Connected => None,
            })
            .collect()
    }

    /// Ends the MCP servers and the language servers (their processes exit, or their
    /// group is killed).
    pub(super) async fn shutdown(&self) {
        if let Some(mcp) = &self.mcp {
            mcp.inner.shutdown().await;
        }
        self.lsp.shutdown().await;
    }
}

/// Resolves the workspace, the specialists, the permission mode, the output schema, the
/// capability flags and files (hooks, sandbox, context) and the MCP servers (connecting
/// them), then the tools, in Zero's order.
pub(super) async fn plan(o: &ExecOptions, hooks: &ExecHooks) -> Result<Plan, Failure> {
    let workspace =
        resolve_workspace(o.cwd.as_deref(), hooks.cwd.as_deref()).map_err(Failure::Usage)?;
    let specialists = capabilities::specialists(o, &workspace, &hooks.env)?;
    let mode = resolve_permission_mode(o).map_err(Failure::Usage)?;
    let output = match &o.output_schema {
        Some(file) => Some(capabilities::output_spec(&workspace, file).map_err(Failure::Usage)?),
        None => None,
    };
    let transcripts = uses_session(o, &session_request(o)).then(|| default_root(&*hooks.env));
    let loaded = capabilities::load(o, &workspace, &hooks.env, specialists, transcripts)?;
    let mut trust = loaded.trust;
    let mcp = match mode.core {
        // Zero starts no MCP server in plan mode.
        PermissionMode::Plan => None,
        _ => {
            let (manager, skipped) =
                capabilities::connect_mcp(&loaded.caps, &workspace, &hooks.env).await?;
            trust = trust.or(skipped);
            manager.map(|inner| {
                Arc::new(FilteredTools {
                    inner,
                    filter: tool_filter(o),
                })
            })
        }
    };
    let mcp_names: Vec<String> = mcp
        .as_ref()
        .map(|m| {
            m.inner
                .tools()
                .iter()
                .map(|t| t.name().to_string())
                .collect()
        })
        .unwrap_or_default();
    let mut extra = hooks.tools.clone();
    extra.extend(loaded.caps.task_tools_under(SYSTEM_PROMPT));
    let mut skill_notices = Vec::new();
    let skills = super::project::skills(o, &workspace, &hooks.env, &mut skill_notices);
    extra.extend(skills.iter().map(|s| Arc::new(s.tool()) as Arc<dyn Tool>));
    let lsp = loaded.caps.lsp_session(&workspace);
    let roots: Vec<PathBuf> = o
        .capabilities
        .add_dir
        .iter()
        .map(|r| workspace.join(r))
        .collect();
    extra.extend(lsp.tools(Dialect::Zero, &roots));
    let tools = match build_tools(&workspace, o, &mode, extra, &mcp_names) {
        Ok(tools) => lsp.wrap_writers(tools, Dialect::Zero),
        Err(message) => {
            if let Some(mcp) = &mcp {
                mcp.inner.shutdown().await;
            }
            return Err(Failure::Usage(message));
        }
    };
    Ok(Plan {
        workspace,
        mode,
        tools,
        mcp,
        caps: loaded.caps,
        trust,
        skills,
        notices: loaded.notices.into_iter().chain(skill_notices).collect(),
        output,
        lsp,
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
    pub(super) mapping: MappingConfig,
    /// The session recorder, when the run has a session.
    pub(super) recorder: Option<SessionRecorder>,
    /// `--output-schema`: the run is structured, its answer checked.
    pub(super) output: Option<OutputSpec>,
    /// `warning` lines after `run_start` (MCP servers skipped).
    pub(super) warnings: Vec<String>,
    /// Zero's stderr notice about project files ignored in an untrusted workspace.
    pub(super) trust_notice: Option<&'static str>,
    /// Lines for stderr about what was skipped while loading.
    pub(super) notices: Vec<String>,
    /// The session was resumed (`session_start`'s source).
    pub(super) resumed: bool,
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

/// The agent, built by agent-host's factory: the provider, the tools (file writers wrapped
/// so their files are snapshotted first when `snapshots` is given), the MCP servers, the
/// hooks, the sandbox, the context settings, the mode and the model flags; recording to
/// `session` in its storage (which keeps no transcript: exec's session is the events the
/// recorder writes) and spilling tool output into its directory, when there is one.
async fn build_agent(
    o: &ExecOptions,
    hooks: &ExecHooks,
    factory: AgentFactory,
    plan: Plan,
    snapshots: Option<&Arc<Snapshots>>,
    session: Option<(&str, &ZeroStorage)>,
    instructions: Option<agent_core::instructions::Instructions>,
) -> Result<Agent, Failure> {
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
    // The skills are listed only where the filters left the tool that loads them.
    let skills = plan.skills.filter(|_| {
        tools
            .iter()
            .any(|t| t.name() == agent_core::skills::SKILL_TOOL)
    });
    let mut spec = AgentSpec::new(plan.workspace, tools);
    spec.instructions = instructions;
    spec.skills = skills;
    spec.permission_mode = plan.mode.core;
    spec.tool_source = plan.mcp.map(|mcp| mcp as Arc<dyn ToolSource>);
    spec.sandbox_support = hooks.sandbox_support.clone();
    if let Some((id, storage)) = session {
        spec.spill_dir = storage.local_dir(id).map(|dir| dir.join("tool-output"));
        spec.recording = Some(Recording {
            store: Arc::new(storage.clone()),
            session_id: id.to_string(),
            resume: false,
            messages: Vec::new(),
        });
    }
    spec.max_steps = o.max_turns;
    spec.reasoning = o.reasoning_effort.as_deref().map(reasoning_level);
    // The hooks, the sandbox and the context settings; the Task tools are among `tools`.
    factory
        .capabilities(plan.caps)
        .agent(spec)
        .await
        .map_err(|err| Failure::Provider(err.to_string()))
}

/// Everything after `--list-tools`, in Zero's order: provider settings, session preflight,
/// the prompt and images, the provider, the agent, then the session.
pub(super) async fn ready(
    o: &ExecOptions,
    hooks: &ExecHooks,
    plan: Plan,
    stdin: &mut dyn Read,
) -> Result<Ready, Failure> {
    let provider_config = provider_config(o, &hooks.env).map_err(Failure::Usage)?;
    // Buffered: the recorder syncs the session once, when the run has ended.
    let store = SessionStore::new(default_root(&*hooks.env)).buffered();
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
    let factory = AgentFactory::from_provider(provider.clone(), o.provider.model.clone())
        .system_prompt(SYSTEM_PROMPT);
    let model = factory.default_model(&*provider);
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
    let session_id = prepared
        .as_ref()
        .map(|p| p.meta.session_id.clone())
        .unwrap_or_default();
    let warnings = plan.mcp_warnings();
    let trust_notice = plan.trust.notice();
    let mut notices = plan.notices.clone();
    let instructions = super::project::instructions(o, &workspace, &hooks.env, &mut notices);
    let output = plan.output.clone();
    // Zero's exec keeps no transcript: the recorder writes the session from the events.
    let storage = ZeroStorage::new(store.clone()).transcripts(Transcripts::FromEvents);
    let session = prepared
        .as_ref()
        .map(|p| (p.meta.session_id.as_str(), &storage));
    let agent = build_agent(
        o,
        hooks,
        factory,
        plan,
        checkpoints.then_some(&snapshots),
        session,
        instructions,
    )
    .await?;
    let mut input = UserInput::text(match &prepared {
        Some(p) => format_exec_prompt(&prompt, p),
        None => prompt.clone(),
    });
    for (media, data) in images {
        input = input.with_image(media, data);
    }
    let mapping = MappingConfig {
        session_id: session_id.clone(),
        permission_mode: mode.name.to_string(),
        autonomy: match o.autonomy.trim() {
            "" => "low".into(),
            a => a.to_string(),
        },
    };
    let resumed = prepared
        .as_ref()
        .is_some_and(|p| p.mode == crate::session::ExecMode::Resume);
    let recorder = prepared.map(|p| {
        let config = RecorderConfig {
            mapping: mapping.clone(),
            cwd: workspace,
            checkpoints,
            snapshots,
            provider: kind.clone(),
            root_session_id: p.meta.root_session_id.clone(),
            depth: p.meta.depth,
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
        output,
        warnings,
        trust_notice,
        notices,
        resumed,
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
