//! The `exec` command line, parsed the way Zero's hand-written parser does it.
//!
//! Zero's flag errors are specific ("`--model requires a value`", "`unknown exec flag
//! "--x"`"), its value rules are its own (a value starting with `-` that is not a number is
//! treated as a missing value; `--resume` takes an optional id) and a parse error reaches the
//! protocol only when `-o stream-json` was parsed before the failing token. A generic parser
//! cannot reproduce that, so this module walks the arguments by hand, like the original.

use agent_core::context::{parse_context_window, AutoCompact};
use agent_core::sandbox::{NetworkAccess, SandboxFallback, SandboxMode};
use agent_host::cli::{CapabilityArgs, ProviderArgs};
use secrecy::SecretString;

use crate::input::go_quote;

/// How the prompt is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InputFormat {
    /// Positional text, `-p` and `--file`.
    #[default]
    Text,
    /// JSONL events from stdin or `--file`.
    StreamJson,
}

/// How the run is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// The answer on stdout, diagnostics on stderr (Zero's default).
    #[default]
    Text,
    /// snake_case NDJSON without a schema version, ending in `done`.
    Json,
    /// The stream-json v2 protocol (`debug` is an alias).
    StreamJson,
}

/// A usage error with the output format known when it happened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct UsageError {
    /// Zero's message.
    pub message: String,
    /// The output format parsed before the failing token.
    pub format: OutputFormat,
}

/// Everything `exec` accepts.
#[derive(Debug, Clone, Default)]
pub struct ExecOptions {
    /// Positional and `-p/--prompt` text, in order.
    pub prompt_parts: Vec<String>,
    /// `-f/--file`.
    pub file: Option<String>,
    /// `--image`, repeatable.
    pub image_paths: Vec<String>,
    /// `-r/--reasoning-effort` (validated: low, medium or high).
    pub reasoning_effort: Option<String>,
    /// `--max-turns`.
    pub max_turns: Option<u32>,
    /// `-C/--cwd`.
    pub cwd: Option<String>,
    /// `-i/--input-format`.
    pub input_format: InputFormat,
    /// `-o/--output-format`.
    pub output_format: OutputFormat,
    /// `--auto` (default `low`).
    pub autonomy: String,
    /// `--permission-mode`.
    pub permission_mode: Option<String>,
    /// `--skip-permissions-unsafe`.
    pub skip_permissions_unsafe: bool,
    /// `--plan`.
    pub plan: bool,
    /// `--enabled-tools`.
    pub enabled_tools: Vec<String>,
    /// `--disabled-tools`.
    pub disabled_tools: Vec<String>,
    /// `--list-tools`.
    pub list_tools: bool,
    /// `--no-context-files`: no `AGENTS.md` / `ZERO.md` instructions in the system prompt
    /// (this SDK's extension; `zero exec` always reads them).
    pub no_context_files: bool,
    /// `--resume <id>`.
    pub resume: Option<String>,
    /// `--resume` without an id.
    pub resume_latest: bool,
    /// `--fork <id>`.
    pub fork: Option<String>,
    /// `--init-session-id`.
    pub init_session_id: Option<String>,
    /// `--session-title`.
    pub session_title: Option<String>,
    /// `--tag` (`specialist` marks a specialist's own run: no specialist tools).
    pub tag: Option<String>,
    /// `-m/--model` (in `provider.model`), `--provider`, `--base-url`, `--api-key` and
    /// `--script`: agent-host's provider flags, filled by this parser.
    pub provider: ProviderArgs,
    /// The capability flags agent-host's layer loads ([`CapabilityArgs`]): the sandbox flags
    /// (named as Codex names them; `--add-dir` is Zero's own), `--hooks`, `--mcp-config`,
    /// `--context-window` and `--auto-compact` (this SDK's extensions). This parser checks
    /// each value as it reads it, with Zero-style errors.
    pub capabilities: CapabilityArgs,
    /// `--output-schema FILE`: the final answer must be JSON matching this JSON Schema
    /// (Codex's flag).
    pub output_schema: Option<String>,
}

/// What the command line asks for.
#[derive(Debug, Clone)]
pub enum Parsed {
    /// `-h`, `--help` or `help`.
    Help,
    /// A run.
    Run(Box<ExecOptions>),
}

/// Zero's `flagValueLooksLikeOption`: a dash-led word that is not a number.
pub(crate) fn looks_like_option(value: &str) -> bool {
    value.starts_with('-') && value.parse::<f64>().is_err()
}

fn parse_tool_list(value: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in value.split([',', ' ', '\t', '\n', '\r']) {
        let name = name.trim();
        if !name.is_empty() && !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
    }
    out
}

/// Parses `-o` values: `text`, `json`, `stream-json` or `debug` (case-insensitive).
pub fn parse_output_format(value: &str) -> Result<OutputFormat, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "" | "text" => Ok(OutputFormat::Text),
        "json" => Ok(OutputFormat::Json),
        "stream-json" | "debug" => Ok(OutputFormat::StreamJson),
        _ => Err(format!(
            "invalid output format {}. Expected text, json, stream-json, or debug.",
            go_quote(value)
        )),
    }
}

/// Parses `-i` values: `text` or `stream-json` (case-insensitive).
pub fn parse_input_format(value: &str) -> Result<InputFormat, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "" | "text" => Ok(InputFormat::Text),
        "stream-json" => Ok(InputFormat::StreamJson),
        _ => Err(format!(
            "Invalid input format {}. Expected text or stream-json.",
            go_quote(value)
        )),
    }
}

fn parse_max_turns(value: &str) -> Result<u32, String> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Err("--max-turns requires a value".into());
    }
    match trimmed.parse::<i64>() {
        Ok(n) if n > 0 => Ok(u32::try_from(n).unwrap_or(u32::MAX)),
        _ => Err(format!(
            "invalid --max-turns {}. Expected a positive integer.",
            go_quote(value)
        )),
    }
}

fn check_reasoning_effort(value: &str) -> Result<(), String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "low" | "medium" | "high" => Ok(()),
        _ => Err(format!(
            "invalid --reasoning-effort {}. Expected low, medium, or high.",
            go_quote(value)
        )),
    }
}

/// The autonomy error, shared by the parser and permission-mode resolution.
pub fn invalid_autonomy(value: &str) -> String {
    format!(
        "Invalid autonomy level {}. Expected low, medium, or high.",
        go_quote(value)
    )
}

/// The flag's value, checked with `check` (Zero-style error), as agent-host takes it.
fn checked<T>(value: &str, check: fn(&str) -> Result<T, String>) -> Result<String, String> {
    check(value)?;
    Ok(value.trim().to_ascii_lowercase())
}

fn parse_sandbox_mode(value: &str) -> Result<SandboxMode, String> {
    value.trim().to_ascii_lowercase().parse().map_err(|_| {
        format!(
            "Invalid sandbox mode {}. Expected read-only, workspace-write, or off.",
            go_quote(value)
        )
    })
}

fn parse_sandbox_network(value: &str) -> Result<NetworkAccess, String> {
    value.trim().to_ascii_lowercase().parse().map_err(|_| {
        format!(
            "Invalid sandbox network {}. Expected allow or deny.",
            go_quote(value)
        )
    })
}

fn parse_sandbox_fallback(value: &str) -> Result<SandboxFallback, String> {
    value.trim().to_ascii_lowercase().parse().map_err(|_| {
        format!(
            "Invalid sandbox fallback {}. Expected refuse, prompt, or allow.",
            go_quote(value)
        )
    })
}

fn parse_window(value: &str) -> Result<u64, String> {
    parse_context_window(value).map_err(|_| {
        format!(
            "invalid --context-window {}. Expected a token count such as 200000, 200k or 1m.",
            go_quote(value)
        )
    })
}

fn parse_auto_compact(value: &str) -> Result<AutoCompact, String> {
    value.parse().map_err(|_| {
        format!(
            "invalid --auto-compact {}. Expected a percentage from 1 to 100, or off.",
            go_quote(value)
        )
    })
}

struct Args<'a> {
    args: &'a [String],
    index: usize,
}

impl Args<'_> {
    /// The value after flag `flag` in separate-token form.
    fn next_value(&mut self, flag: &str) -> Result<String, String> {
        let requires = || format!("{flag} requires a value");
        let Some(next) = self.args.get(self.index + 1) else {
            return Err(requires());
        };
        let next = next.trim();
        if next.is_empty() || looks_like_option(next) {
            return Err(requires());
        }
        match flag {
            "--auto"
                if !matches!(
                    next.to_ascii_lowercase().as_str(),
                    "low" | "medium" | "high" | "member"
                ) =>
            {
                return Err(invalid_autonomy(next));
            }
            "-o" | "--output-format" => {
                parse_output_format(next)?;
            }
            "-i" | "--input-format" => {
                parse_input_format(next)?;
            }
            "-r" | "--reasoning-effort" => check_reasoning_effort(next)?,
            "--max-turns" if next.parse::<i64>().is_err() => {
                return Err(format!(
                    "invalid --max-turns {}. Expected a positive integer.",
                    go_quote(next)
                ));
            }
            _ => {}
        }
        self.index += 1;
        Ok(next.to_string())
    }
}

/// `--session-store`: exec keeps Zero's sessions in Zero's on-disk layout, so only `files`
/// is accepted; a database URL is refused (without repeating it: it may hold a password).
/// The fleet's variable `AGENT_SESSION_STORE` is not read by exec.
fn check_session_store(value: &str) -> Result<(), String> {
    match value.trim() {
        v if v.eq_ignore_ascii_case("files") => Ok(()),
        v if v.starts_with("postgres://") || v.starts_with("postgresql://") => Err(
            "--session-store postgres is not supported by exec: Zero sessions stay in Zero's \
             on-disk layout ($XDG_DATA_HOME/zero/sessions). Sessions shared through \
             PostgreSQL are served by adapter-acp app-server and acp."
                .into(),
        ),
        _ => Err("invalid --session-store value. Expected files.".into()),
    }
}

/// A `--max-budget-usd` value, checked (Zero-style error).
fn checked_budget(value: String) -> Result<String, String> {
    match agent_host::guards::parse_budget(&value) {
        Ok(_) => Ok(value),
        Err(_) => Err(format!(
            "invalid --max-budget-usd {}. Expected a positive amount in USD.",
            go_quote(&value)
        )),
    }
}

/// Why `--allow-escalation` is refused.
pub const ALLOW_ESCALATION: &str = "--allow-escalation is not supported: this agent has no \
    escalate_model tool to switch to a stronger model mid-run. Use --fallback-model <model> \
    to retry an overloaded or failing model call with another model.";

/// `--header 'Name: value'`: a provider header (agent-host's `ProviderArgs::headers`).
fn parse_header(value: &str) -> Result<agent_providers::CustomHeader, String> {
    value.parse().map_err(|e| format!("--header: {e}"))
}

fn required_inline(value: &str, flag: &str) -> Result<String, String> {
    let value = value.trim();
    if value.is_empty() {
        return Err(format!("{flag} requires a value"));
    }
    Ok(value.to_string())
}

/// Parses the arguments after `exec`.
pub fn parse_exec_args(args: &[String]) -> Result<Parsed, UsageError> {
    let mut o = ExecOptions {
        autonomy: "low".into(),
        ..ExecOptions::default()
    };
    let fail = |o: &ExecOptions, message: String| UsageError {
        message,
        format: o.output_format,
    };
    if args.is_empty() {
        return Err(fail(&o, prompt_required()));
    }
    let mut a = Args { args, index: 0 };
    while a.index < args.len() {
        let arg = args[a.index].as_str();
        let inline = |prefix: &str| arg.strip_prefix(prefix).map(|v| v.trim().to_string());
        let step = (|| -> Result<bool, String> {
            match arg {
                "-h" | "--help" | "help" => return Ok(true),
                "--skip-permissions-unsafe" => o.skip_permissions_unsafe = true,
                "--list-tools" => o.list_tools = true,
                "--no-context-files" => o.no_context_files = true,
                "--plan" => o.plan = true,
                // Zero's mid-run switch to a stronger model (its `escalate_model` tool and model
                // registry's upgrade targets) is not built here: refused, not ignored.
                "--allow-escalation" => return Err(ALLOW_ESCALATION.to_string()),
                // Accepted for compatibility with Zero's command lines; they change nothing here.
                "--self-correct" | "--no-notify" | "--no-completion-gate" => {}
                "--notify"
                | "--profile"
                | "--calling-session-id"
                | "--calling-tool-use-id"
                | "--trace"
                | "--mode" => {
                    a.next_value(arg)?;
                }
                "--depth" => {
                    let v = a.next_value(arg)?;
                    if v.parse::<u32>().is_err() {
                        return Err(format!(
                            "invalid --depth {}. Expected a non-negative integer.",
                            go_quote(&v)
                        ));
                    }
                }
                "--tag" => o.tag = Some(a.next_value(arg)?),
                "--add-dir" => o.capabilities.add_dir.push(a.next_value(arg)?.into()),
                "--sandbox" => {
                    o.capabilities.sandbox = Some(checked(&a.next_value(arg)?, parse_sandbox_mode)?)
                }
                "--sandbox-network" => {
                    o.capabilities.sandbox_network =
                        Some(checked(&a.next_value(arg)?, parse_sandbox_network)?)
                }
                "--sandbox-fallback" => {
                    o.capabilities.sandbox_fallback =
                        Some(checked(&a.next_value(arg)?, parse_sandbox_fallback)?)
                }
                "--hooks" => o.capabilities.hooks = Some(a.next_value(arg)?.into()),
                "--mcp-config" => o.capabilities.mcp_config = Some(a.next_value(arg)?.into()),
                "--lsp-config" => o.capabilities.lsp_config = Some(a.next_value(arg)?.into()),
                "--no-lsp-diagnostics" => o.capabilities.no_lsp_diagnostics = true,
                "--output-schema" => o.output_schema = Some(a.next_value(arg)?),
                "--settings" => o.capabilities.settings = Some(a.next_value(arg)?.into()),
                "--max-budget-usd" => {
                    o.capabilities.max_budget_usd = Some(checked_budget(a.next_value(arg)?)?)
                }
                "--fallback-model" => o.capabilities.fallback_model = Some(a.next_value(arg)?),
                "--context-window" => {
                    o.capabilities.context_window =
                        Some(checked(&a.next_value(arg)?, parse_window)?)
                }
                "--auto-compact" => {
                    o.capabilities.auto_compact =
                        Some(checked(&a.next_value(arg)?, parse_auto_compact)?)
                }
                "--auto" => o.autonomy = a.next_value(arg)?,
                "--permission-mode" => o.permission_mode = Some(a.next_value(arg)?),
                "--enabled-tools" => o.enabled_tools = parse_tool_list(&a.next_value(arg)?),
                "--disabled-tools" => o.disabled_tools = parse_tool_list(&a.next_value(arg)?),
                "-f" | "--file" => o.file = Some(a.next_value(arg)?),
                "--image" => o.image_paths.push(a.next_value(arg)?),
                "-m" | "--model" => o.provider.model = Some(a.next_value(arg)?),
                "-r" | "--reasoning-effort" => o.reasoning_effort = Some(a.next_value(arg)?),
                "--max-turns" => o.max_turns = Some(parse_max_turns(&a.next_value(arg)?)?),
                "-C" | "--cwd" => o.cwd = Some(a.next_value(arg)?),
                "-i" | "--input-format" => {
                    o.input_format = parse_input_format(&a.next_value(arg)?)?
                }
                "-o" | "--output-format" => {
                    o.output_format = parse_output_format(&a.next_value(arg)?)?
                }
                "-p" | "--prompt" => o.prompt_parts.push(a.next_value(arg)?),
                "--resume" => match args.get(a.index + 1) {
                    Some(next) if !next.starts_with('-') && !next.trim().is_empty() => {
                        o.resume = Some(next.trim().to_string());
                        a.index += 1;
                    }
                    _ => o.resume_latest = true,
                },
                "--fork" => o.fork = Some(a.next_value(arg)?),
                "--session-store" => check_session_store(&a.next_value(arg)?)?,
                "--init-session-id" => o.init_session_id = Some(a.next_value(arg)?),
                "--session-title" => o.session_title = Some(a.next_value(arg)?),
                "--provider" => o.provider.provider = Some(a.next_value(arg)?),
                "--base-url" => o.provider.base_url = Some(a.next_value(arg)?),
                "--api-key" => {
                    o.provider.api_key = Some(SecretString::from(a.next_value(arg)?));
                }
                "--script" => o.provider.script = Some(a.next_value(arg)?.into()),
                "--header" => o.provider.headers.push(parse_header(&a.next_value(arg)?)?),
                "--no-prompt-cache-key" => o.provider.no_prompt_cache_key = true,
                "--api-version" => o.provider.api_version = Some(a.next_value(arg)?),
                "--project" => o.provider.project = Some(a.next_value(arg)?),
                "--region" | "--location" => o.provider.region = Some(a.next_value(arg)?),
                "--" => {
                    o.prompt_parts.extend(args[a.index + 1..].iter().cloned());
                    a.index = args.len();
                }
                _ => {
                    if let Some(v) = inline("--auto=") {
                        o.autonomy = v;
                    } else if let Some(v) = inline("--permission-mode=") {
                        o.permission_mode = Some(required_inline(&v, "--permission-mode")?);
                    } else if let Some(v) = inline("--enabled-tools=") {
                        o.enabled_tools = parse_tool_list(&v);
                    } else if let Some(v) = inline("--disabled-tools=") {
                        o.disabled_tools = parse_tool_list(&v);
                    } else if let Some(v) = inline("--file=") {
                        o.file = (!v.is_empty()).then_some(v);
                    } else if let Some(v) = inline("--image=") {
                        o.image_paths.push(required_inline(&v, "--image")?);
                    } else if let Some(v) = inline("--model=") {
                        o.provider.model = (!v.is_empty()).then_some(v);
                    } else if let Some(v) = inline("--reasoning-effort=") {
                        check_reasoning_effort(&v)?;
                        o.reasoning_effort = Some(v);
                    } else if let Some(v) = inline("--max-turns=") {
                        o.max_turns = Some(parse_max_turns(&v)?);
                    } else if let Some(v) = inline("--cwd=") {
                        o.cwd = (!v.is_empty()).then_some(v);
                    } else if let Some(v) = inline("--input-format=") {
                        o.input_format = parse_input_format(&v)?;
                    } else if let Some(v) = inline("--output-format=") {
                        o.output_format = parse_output_format(&v)?;
                    } else if let Some(v) = inline("--prompt=").or_else(|| inline("-p=")) {
                        o.prompt_parts.push(v);
                    } else if let Some(v) = inline("--resume=") {
                        match v.is_empty() {
                            true => o.resume_latest = true,
                            false => o.resume = Some(v),
                        }
                    } else if let Some(v) = inline("--fork=") {
                        o.fork = (!v.is_empty()).then_some(v);
                    } else if let Some(v) = inline("--session-store=") {
                        check_session_store(&required_inline(&v, "--session-store")?)?;
                    } else if let Some(v) = inline("--init-session-id=") {
                        o.init_session_id = Some(required_inline(&v, "--init-session-id")?);
                    } else if let Some(v) = inline("--session-title=") {
                        o.session_title = Some(required_inline(&v, "--session-title")?);
                    } else if let Some(v) = inline("--provider=") {
                        o.provider.provider = Some(required_inline(&v, "--provider")?);
                    } else if let Some(v) = inline("--base-url=") {
                        o.provider.base_url = Some(required_inline(&v, "--base-url")?);
                    } else if let Some(v) = inline("--api-key=") {
                        o.provider.api_key =
                            Some(SecretString::from(required_inline(&v, "--api-key")?));
                    } else if let Some(v) = inline("--script=") {
                        o.provider.script = Some(required_inline(&v, "--script")?.into());
                    } else if let Some(v) = inline("--header=") {
                        o.provider.headers.push(parse_header(&v)?);
                    } else if let Some(v) = inline("--api-version=") {
                        o.provider.api_version = Some(required_inline(&v, "--api-version")?);
                    } else if let Some(v) = inline("--project=") {
                        o.provider.project = Some(required_inline(&v, "--project")?);
                    } else if let Some(v) = inline("--region=").or_else(|| inline("--location=")) {
                        o.provider.region = Some(required_inline(&v, "--region")?);
                    } else if let Some(v) = inline("--tag=") {
                        o.tag = Some(v);
                    } else if let Some(v) = inline("--add-dir=") {
                        o.capabilities
                            .add_dir
                            .push(required_inline(&v, "--add-dir")?.into());
                    } else if let Some(v) = inline("--sandbox=") {
                        o.capabilities.sandbox = Some(checked(&v, parse_sandbox_mode)?);
                    } else if let Some(v) = inline("--sandbox-network=") {
                        o.capabilities.sandbox_network = Some(checked(&v, parse_sandbox_network)?);
                    } else if let Some(v) = inline("--sandbox-fallback=") {
                        o.capabilities.sandbox_fallback =
                            Some(checked(&v, parse_sandbox_fallback)?);
                    } else if let Some(v) = inline("--hooks=") {
                        o.capabilities.hooks = Some(required_inline(&v, "--hooks")?.into());
                    } else if let Some(v) = inline("--mcp-config=") {
                        o.capabilities.mcp_config =
                            Some(required_inline(&v, "--mcp-config")?.into());
                    } else if let Some(v) = inline("--lsp-config=") {
                        o.capabilities.lsp_config =
                            Some(required_inline(&v, "--lsp-config")?.into());
                    } else if let Some(v) = inline("--settings=") {
                        o.capabilities.settings = Some(required_inline(&v, "--settings")?.into());
                    } else if let Some(v) = inline("--max-budget-usd=") {
                        let v = required_inline(&v, "--max-budget-usd")?;
                        o.capabilities.max_budget_usd = Some(checked_budget(v)?);
                    } else if let Some(v) = inline("--fallback-model=") {
                        o.capabilities.fallback_model =
                            Some(required_inline(&v, "--fallback-model")?);
                    } else if let Some(v) = inline("--output-schema=") {
                        o.output_schema = Some(required_inline(&v, "--output-schema")?);
                    } else if let Some(v) = inline("--context-window=") {
                        o.capabilities.context_window = Some(checked(
                            &required_inline(&v, "--context-window")?,
                            parse_window,
                        )?);
                    } else if let Some(v) = inline("--auto-compact=") {
                        o.capabilities.auto_compact = Some(checked(
                            &required_inline(&v, "--auto-compact")?,
                            parse_auto_compact,
                        )?);
                    } else if let Some(v) = ["--notify=", "--profile=", "--trace=", "--mode="]
                        .iter()
                        .find_map(|p| inline(p))
                    {
                        let _ = v;
                    } else if arg.starts_with('-') {
                        return Err(format!("unknown exec flag {}", go_quote(arg)));
                    } else {
                        o.prompt_parts.push(arg.to_string());
                    }
                }
            }
            Ok(false)
        })();
        match step {
            Ok(true) => return Ok(Parsed::Help),
            Ok(false) => {}
            Err(message) => return Err(fail(&o, message)),
        }
        a.index += 1;
    }

    let resuming = o.resume.is_some() || o.resume_latest;
    let post = (|| -> Result<(), String> {
        if resuming && o.fork.is_some() {
            return Err("Use either --resume or --fork, not both.".into());
        }
        if o.init_session_id.is_some() && resuming {
            return Err("Use --init-session-id only when creating or forking a session.".into());
        }
        if let Some(id) = &o.init_session_id {
            if !crate::ids::valid_session_id(id) {
                return Err(format!("invalid --init-session-id {}", go_quote(id)));
            }
        }
        if o.plan && o.skip_permissions_unsafe {
            return Err("--plan cannot be combined with --skip-permissions-unsafe.".into());
        }
        if o.plan {
            if let Some(mode) = &o.permission_mode {
                if !mode.trim().eq_ignore_ascii_case("plan") {
                    return Err(
                        "--plan cannot be combined with a non-plan --permission-mode.".into(),
                    );
                }
            }
        }
        let inline_prompt = o.prompt_parts.join(" ");
        if o.input_format == InputFormat::StreamJson && !inline_prompt.trim().is_empty() {
            return Err(
                "Stream-json input does not accept positional prompt text. Pipe JSONL or use --file."
                    .into(),
            );
        }
        if !o.list_tools
            && o.file.is_none()
            && o.input_format != InputFormat::StreamJson
            && inline_prompt.trim().is_empty()
        {
            return Err(prompt_required());
        }
        Ok(())
    })();
    post.map_err(|message| fail(&o, message))?;
    Ok(Parsed::Run(Box::new(o)))
}

/// Zero's "Prompt required" message.
pub fn prompt_required() -> String {
    "Prompt required. Use `zero exec \"prompt\"` or `zero exec --file prompt.txt`.".into()
}

/// The `exec --help` text.
pub const HELP: &str = "Usage:
  adapter-stream-json exec [flags] [prompt]

Runs a one-shot prompt through the agent runtime (a drop-in for `zero exec`).

Flags:
  -f, --file <path>                  Read prompt text (or stream-json input) from a file
      --image <path>                 Attach a local image (repeatable)
  -m, --model <model>                Select the model
  -r, --reasoning-effort <effort>    Reasoning effort: low, medium or high
      --max-turns <number>           Override the maximum agent loop turns
  -C, --cwd <path>                   Set the workspace directory
  -i, --input-format <format>        text or stream-json (JSONL from stdin or --file)
  -o, --output-format <format>       text, json, stream-json or debug (= stream-json)
  -p, --prompt <prompt>              Provide prompt text as a flag
      --auto <low|medium|high>       Set exec autonomy; high enables unsafe tools
      --permission-mode <mode>       plan, spec-draft, auto, member, ask or unsafe
      --plan                         Read-only planning mode: write and shell tools are hidden
      --skip-permissions-unsafe      Allow prompt-gated tools without approval
      --enabled-tools <tools>        Only expose these comma- or space-separated tools
      --disabled-tools <tools>       Hide these comma- or space-separated tools
      --list-tools                   Print the tools the model can see and exit
      --resume [id]                  Resume a session (the latest when no id is given)
      --fork <id>                    Fork a session into a new one
      --init-session-id <id>         Create the new session with this id
      --session-title <title>        Title of a new session
      --session-store files          Where sessions live: only Zero's files (the default);
                                     a postgres:// URL is refused (see the README)
      --add-dir <path>               Extra writable root for the sandbox and file tools (repeatable)
  -h, --help                         Show this help

Sandbox (as Codex names it; commands run confined by Landlock and seccomp):
      --sandbox <mode>               read-only, workspace-write (default) or off
      --sandbox-network <access>     allow or deny (default deny; allow when the sandbox is off)
      --sandbox-fallback <policy>    refuse, prompt (default) or allow, when the kernel
                                     cannot enforce the sandbox

Extensions (Zero reads hooks and MCP servers from its own files, which work as well):
      --hooks <file>                 A hooks file (Zero's hooks.json or Claude Code's format)
      --mcp-config <file>            MCP servers in the {\"mcpServers\": {...}} format
      --lsp-config <file>            Language servers (JSON) merged onto the built-in table
      --no-lsp-diagnostics           Do not append a file's errors to the result of an edit
      --no-context-files             Read no AGENTS.md / ZERO.md instructions into the prompt
      --context-window <tokens>      Context window of the model (200000, 200k, 1m)
      --auto-compact <percent|off>   Compact the context at this fill level (default 85)
      --output-schema <file>         The final answer must be JSON matching this JSON Schema

Unattended runs (this SDK's extensions; Zero's sandbox grants are read as rules):
      --settings <file>              Claude Code settings: permissions.allow/ask/deny rules
                                     (the workspace's .claude/settings.json too, when trusted)
      --max-budget-usd <usd>         End the run before a model call once it cost this much
      --fallback-model <model>       Retry an overloaded or failing model call with this model

Provider selection (Zero keeps these in its config):
      --provider <id>                openai, openai-responses, anthropic, gemini, azure,
                                     azure-responses, vertex, bedrock or scripted
                                     (default: $ZERO_PROVIDER, else scripted)
      --base-url <url>               API base URL (default: OPENAI_BASE_URL / ANTHROPIC_BASE_URL)
      --api-key <key>                API key (default: OPENAI_API_KEY / ANTHROPIC_API_KEY)
      --script <file>                Script file for the scripted provider (default: the demo)
      --header 'Name: value'         Extra HTTP header for every provider request (repeatable)
      --no-prompt-cache-key          Never send the session id as OpenAI's prompt_cache_key
      --api-version <version>        Azure OpenAI API version (default: $OPENAI_API_VERSION)
      --project <id>                 Google Cloud project of Vertex AI
      --region <region>              Vertex AI location / AWS region of Bedrock (--location)

Sessions live in $XDG_DATA_HOME/zero/sessions (default ~/.local/share/zero/sessions).
";

#[cfg(test)]
mod tests;
