//! `exec`: one headless run, from the command line to the exit code.
//!
//! The order of checks follows Zero: flags, workspace, permission mode, tool filters,
//! `--list-tools`, session preflight, the prompt (stream-json input or text), images, the
//! provider, then the session. Every failure before the agent starts gives exactly `error`
//! then `run_end` (under `-o stream-json`) with no `run_start`.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    Agent, AgentEvent, CancellationToken, PermissionMode, Provider, ReasoningLevel, RunStatus,
    SideEffect, Tool, UserInput,
};
use agent_providers::{build_provider, ProviderConfig, ProviderId};
use agent_tools::ToolSet;
use bytes::Bytes;
use serde_json::json;

use crate::cli::{
    invalid_autonomy, parse_exec_args, ExecOptions, InputFormat, OutputFormat, Parsed, HELP,
};
use crate::ids::run_id;
use crate::input::{go_quote, parse_input, resolve_images, resolve_prompt, MAX_IMAGE_BYTES};
use crate::output::Writer;
use crate::processor::{
    exit, CheckpointTool, EventProcessor, ProcessorConfig, SessionRecorder, Snapshots,
};
use crate::session::{
    default_root, format_exec_prompt, preflight, prepare, session_title, NewSessionInfo,
    SessionRequest, SessionStore,
};
use crate::wire::{ErrorEvent, EventBody, FinalEvent, RunEnd, RunStart, WarningEvent};

/// How long a signalled run may take to wind down before the terminal lines are written
/// anyway.
const INTERRUPT_GRACE: Duration = Duration::from_secs(5);

/// Most events queued before stdout is written, when more keep arriving.
const MAX_BATCH_EVENTS: usize = 1024;
/// Most bytes queued before stdout is written, when more keep arriving.
const MAX_BATCH_BYTES: usize = 32 * 1024;

/// Environment lookup (injectable for tests).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The process's standard streams.
pub struct ExecIo {
    /// Standard input (stream-json input).
    pub stdin: Box<dyn Read + Send>,
    /// Standard output (protocol lines only under stream-json).
    pub stdout: Box<dyn Write + Send>,
    /// Standard error (notices).
    pub stderr: Box<dyn Write + Send>,
}

impl ExecIo {
    /// The real standard streams.
    pub fn stdio() -> Self {
        Self {
            stdin: Box::new(std::io::stdin()),
            stdout: Box::new(std::io::stdout()),
            stderr: Box::new(std::io::stderr()),
        }
    }
}

/// What a host can inject into a run: a provider in place of the command line's, extra
/// tools, an interrupt, the environment and the working directory.
#[derive(Clone)]
pub struct ExecHooks {
    /// Use this provider instead of building one from `--provider`.
    pub provider: Option<Arc<dyn Provider>>,
    /// Tools added to the default set.
    pub tools: Vec<Arc<dyn Tool>>,
    /// Cancelled on SIGINT/SIGTERM: the run ends `interrupted` with exit code 130.
    pub interrupt: CancellationToken,
    /// Environment lookup.
    pub env: EnvLookup,
    /// Directory a relative `--cwd` resolves against (default: the process's).
    pub cwd: Option<PathBuf>,
}

impl Default for ExecHooks {
    fn default() -> Self {
        Self {
            provider: None,
            tools: Vec::new(),
            interrupt: CancellationToken::new(),
            env: Arc::new(|k| std::env::var(k).ok()),
            cwd: None,
        }
    }
}

/// Zero's permission modes, mapped onto agent-core's.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ZeroMode {
    /// Zero's name, reported on permission events.
    name: &'static str,
    core: PermissionMode,
    /// Why unsafe mode is on, for the warning line.
    unsafe_reason: Option<&'static str>,
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

fn format_tool_list(tools: &[Arc<dyn Tool>]) -> String {
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

/// The provider id: `--provider`, else `$ZERO_PROVIDER`, else `scripted`.
fn provider_config(o: &ExecOptions, env: &EnvLookup) -> Result<ProviderConfig, String> {
    let id = o
        .provider
        .clone()
        .or_else(|| env("ZERO_PROVIDER").filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| "scripted".into());
    let id: ProviderId = id
        .trim()
        .parse()
        .map_err(|err: agent_providers::config::ParseProviderIdError| err.to_string())?;
    let mut config = ProviderConfig::new(id);
    config.model = o.model.clone();
    config.base_url = o.base_url.clone();
    config.api_key = o.api_key.clone();
    config.script = o.script.as_ref().map(PathBuf::from);
    Ok(config)
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

fn error_pair(code: &str, message: &str, status: &str, exit_code: i32) -> [EventBody; 2] {
    [
        EventBody::Error(ErrorEvent {
            code: code.into(),
            message: message.into(),
            recoverable: false,
        }),
        EventBody::RunEnd(RunEnd {
            status: status.into(),
            exit_code,
        }),
    ]
}

/// Runs `exec` with the arguments after the word `exec`; returns the exit code.
pub async fn run_exec(args: &[String], io: ExecIo, hooks: ExecHooks) -> i32 {
    let ExecIo {
        mut stdin,
        stdout,
        stderr,
    } = io;
    let mut writer_parts = Some((stdout, stderr));
    // Builds the run's writer once; the streams move into it.
    let mut take_writer = |format: OutputFormat, mode: &str| {
        let (out, err) = writer_parts.take().unwrap_or_else(|| {
            (
                Box::new(std::io::sink()) as Box<dyn Write + Send>,
                Box::new(std::io::sink()) as Box<dyn Write + Send>,
            )
        });
        Writer::new(format, run_id(chrono::Utc::now()), out, err, mode)
    };
    // A usage error: inside the protocol for stream-json, else `[zero] …` on stderr.
    let usage = |writer: &mut Writer, format: OutputFormat, message: &str| -> i32 {
        let result = match format {
            OutputFormat::StreamJson => error_pair("usage_error", message, "error", exit::USAGE)
                .iter()
                .try_for_each(|e| writer.write(e)),
            _ => writer.stderr_line(&format!("[zero] {message}")),
        };
        match result {
            Ok(()) => exit::USAGE,
            Err(_) => exit::CRASH,
        }
    };
    let provider_error = |writer: &mut Writer, message: &str| -> i32 {
        match error_pair("provider_error", message, "error", exit::PROVIDER)
            .iter()
            .try_for_each(|e| writer.write(e))
        {
            Ok(()) => exit::PROVIDER,
            Err(_) => exit::CRASH,
        }
    };

    let o = match parse_exec_args(args) {
        Ok(Parsed::Run(o)) => *o,
        Ok(Parsed::Help) => {
            let mut w = take_writer(OutputFormat::Text, "");
            return match w.stdout_line(HELP.trim_end()) {
                Ok(()) => exit::SUCCESS,
                Err(_) => exit::CRASH,
            };
        }
        Err(err) => {
            let mut w = take_writer(err.format, "");
            return usage(&mut w, err.format, &err.message);
        }
    };
    let format = o.output_format;

    let workspace = match resolve_workspace(o.cwd.as_deref(), hooks.cwd.as_deref()) {
        Ok(w) => w,
        Err(message) => return usage(&mut take_writer(format, ""), format, &message),
    };
    let mode = match resolve_permission_mode(&o) {
        Ok(mode) => mode,
        Err(message) => return usage(&mut take_writer(format, ""), format, &message),
    };
    let tools = match build_tools(&workspace, &o, &mode, &hooks.tools) {
        Ok(tools) => tools,
        Err(message) => return usage(&mut take_writer(format, mode.name), format, &message),
    };
    let cwd_text = workspace.display().to_string();

    if o.list_tools {
        let mut w = take_writer(format, mode.name);
        let text = format_tool_list(&tools);
        let result = match format {
            OutputFormat::StreamJson => [
                EventBody::RunStart(RunStart {
                    cwd: cwd_text,
                    ..RunStart::default()
                }),
                EventBody::Final(FinalEvent { text, meta: None }),
                EventBody::RunEnd(RunEnd {
                    status: "success".into(),
                    exit_code: exit::SUCCESS,
                }),
            ]
            .iter()
            .try_for_each(|e| w.write(e)),
            OutputFormat::Json => {
                let infos: Vec<_> = tools
                    .iter()
                    .map(|t| {
                        json!({
                            "name": t.name(), "description": t.description(),
                            "side_effect": t.side_effect().as_str(),
                            "permission": t.permission().as_str(),
                        })
                    })
                    .collect();
                w.stdout_line(&json!({"type": "tools", "tools": infos}).to_string())
            }
            OutputFormat::Text => w.stdout_line(&text),
        };
        return match result {
            Ok(()) => exit::SUCCESS,
            Err(_) => exit::CRASH,
        };
    }

    let provider_config = match provider_config(&o, &hooks.env) {
        Ok(config) => config,
        Err(message) => return usage(&mut take_writer(format, mode.name), format, &message),
    };
    let store = SessionStore::new(default_root(&*hooks.env));
    let request = SessionRequest {
        resume: o.resume.clone(),
        resume_latest: o.resume_latest,
        fork: o.fork.clone(),
        init_session_id: o.init_session_id.clone(),
    };
    let use_session = format == OutputFormat::StreamJson
        || request.resume.is_some()
        || request.resume_latest
        || request.fork.is_some()
        || request.init_session_id.is_some();
    if use_session {
        if let Err(err) = preflight(&store, &request) {
            return usage(&mut take_writer(format, mode.name), format, &err.0);
        }
    }
    let (prompt, stream_images) = match resolve_exec_prompt(&o, &workspace, &mut *stdin) {
        Ok(p) => p,
        Err(message) => return usage(&mut take_writer(format, mode.name), format, &message),
    };
    let mut images = match load_images(&o.image_paths, &workspace) {
        Ok(images) => images,
        Err(message) => return usage(&mut take_writer(format, mode.name), format, &message),
    };
    images.extend(stream_images);

    let provider = match hooks.provider.clone() {
        Some(provider) => provider,
        None => match build_provider(&provider_config) {
            Ok(provider) => provider,
            Err(err) => {
                return provider_error(&mut take_writer(format, mode.name), &err.to_string())
            }
        },
    };

    let checkpoints = use_session
        && !(hooks.env)("ZERO_CHECKPOINTS").is_some_and(|v| v.trim().eq_ignore_ascii_case("off"));
    let snapshots = Arc::new(Snapshots::default());
    let tools: Vec<Arc<dyn Tool>> = tools
        .into_iter()
        .map(
            |tool| match checkpoints && tool.side_effect() == SideEffect::Write {
                true => Arc::new(CheckpointTool::new(tool, snapshots.clone())) as Arc<dyn Tool>,
                false => tool,
            },
        )
        .collect();
    let mut builder = Agent::builder_arc(provider.clone())
        .system_prompt(SYSTEM_PROMPT)
        .tools(tools)
        .permission_mode(mode.core)
        .cwd(workspace.clone());
    if let Some(model) = &o.model {
        builder = builder.model(model.clone());
    }
    if let Some(turns) = o.max_turns {
        builder = builder.max_steps(turns);
    }
    if let Some(effort) = &o.reasoning_effort {
        builder = builder.reasoning(reasoning_level(effort));
    }
    let agent = builder.build();
    let model = agent.state().model;
    let kind = provider_kind(provider.id());

    let mut prepared = None;
    if use_session {
        let info = NewSessionInfo {
            title: session_title(o.session_title.as_deref(), &prompt),
            cwd: cwd_text.clone(),
            model_id: model.clone(),
            provider: kind.clone(),
        };
        match prepare(&store, &request, info) {
            Ok(p) => prepared = Some(p),
            Err(err) => return usage(&mut take_writer(format, mode.name), format, &err.0),
        }
    }
    let agent_prompt = match &prepared {
        Some(p) => format_exec_prompt(&prompt, p),
        None => prompt.clone(),
    };
    let session_id = prepared
        .as_ref()
        .map(|p| p.meta.session_id.clone())
        .unwrap_or_default();

    let mut w = take_writer(format, mode.name);
    let start = EventBody::RunStart(RunStart {
        session_id: session_id.clone(),
        cwd: cwd_text,
        provider: kind,
        model: model.clone(),
        api_model: model,
    });
    if w.write(&start).is_err() {
        return exit::CRASH;
    }
    if let Some(reason) = mode.unsafe_reason {
        let warning = EventBody::Warning(WarningEvent {
            message: format!(
                "Unsafe permissions are active for this run because {reason} was passed."
            ),
        });
        if w.write(&warning).is_err() {
            return exit::CRASH;
        }
    }

    let recorder = prepared
        .as_ref()
        .map(|p| SessionRecorder::new(store.clone(), p.meta.session_id.clone()));
    let mut processor = EventProcessor::new(
        ProcessorConfig {
            session_id,
            permission_mode: mode.name.to_string(),
            autonomy: match o.autonomy.trim() {
                "" => "low".into(),
                a => a.to_string(),
            },
            cwd: workspace,
            checkpoints,
            snapshots,
        },
        recorder,
    );
    processor.record("message", json!({"role": "user", "content": prompt}));

    let mut input = UserInput::text(agent_prompt);
    for (media, data) in images {
        input = input.with_image(media, data);
    }
    let code = drive(&agent, input, &mut processor, &mut w, &hooks.interrupt).await;
    if let Some(failure) = processor.recorder().and_then(|r| r.failure()) {
        let _ = w.stderr_line(&format!(
            "[zero] WARNING: session not fully recorded: {failure}"
        ));
    }
    code
}

/// Streams the run to the writer and writes its terminal lines; returns the exit code.
async fn drive(
    agent: &Agent,
    input: UserInput,
    processor: &mut EventProcessor,
    w: &mut Writer,
    interrupt: &CancellationToken,
) -> i32 {
    let mut run = agent.prompt(input);
    let mut bodies = Vec::new();
    let mut events = Vec::with_capacity(MAX_BATCH_EVENTS);
    let mut interrupted = false;
    let mut deadline: Option<tokio::time::Instant> = None;
    let finished = loop {
        let grace = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let received = tokio::select! {
            biased;
            _ = interrupt.cancelled(), if !interrupted => {
                interrupted = true;
                run.abort();
                deadline = Some(tokio::time::Instant::now() + INTERRUPT_GRACE);
                continue;
            }
            _ = grace => break None,
            n = run.recv_many(&mut events, MAX_BATCH_EVENTS) => n,
        };
        if received == 0 {
            break None;
        }
        // Queue this event and every one already waiting, then flush once: a burst costs
        // one write, and the last line of it is on stdout before the loop waits again.
        let mut end = None;
        for event in events.drain(..) {
            if let AgentEvent::RunFinished { status, final_text } = event {
                end = Some((status, final_text));
                break;
            }
            processor.on_event_into(event, &mut bodies);
            for body in bodies.drain(..) {
                if w.queue(&body).is_err() {
                    run.abort();
                    return exit::CRASH;
                }
            }
            if w.queued_bytes() >= MAX_BATCH_BYTES && w.flush().is_err() {
                run.abort();
                return exit::CRASH;
            }
        }
        if w.flush().is_err() {
            run.abort();
            return exit::CRASH;
        }
        if end.is_some() {
            break end;
        }
    };
    let (status, final_text) = finished.unwrap_or((RunStatus::Aborted, None));
    let terminal = processor.finish(status, final_text, interrupted);
    for body in &terminal.events {
        if w.write(body).is_err() {
            return exit::CRASH;
        }
    }
    terminal.exit_code
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
