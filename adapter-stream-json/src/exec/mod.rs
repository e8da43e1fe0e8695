//! `exec`: one headless run, from the command line to the exit code.
//!
//! The order of checks follows Zero: flags, workspace, specialists (`specialist_error`),
//! permission mode, the output schema and hooks files, the MCP servers (`mcp_error`; they
//! are connected here, so `--list-tools` lists their tools), tool filters, `--list-tools`,
//! session preflight, the prompt (stream-json input or text), images, the provider, then
//! the session. Every failure before the agent starts gives exactly `error` then `run_end`
//! (under `-o stream-json`) with no `run_start`.
//!
//! - `capabilities`: MCP servers, hooks, specialists, the sandbox and the output schema, read
//!   from where Zero reads them and from the flags.
//! - `setup`: the steps before the run, each failing with Zero's message.
//! - `project`: the instructions and skills, where Zero reads them.
//! - `run`: the run itself, streamed through the [`crate::pipeline::ZeroFold`].

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use agent_core::{sandbox::SandboxSupport, CancellationToken, Provider, Tool};

use agent_host::output::Frames;

use crate::cli::{parse_exec_args, OutputFormat, Parsed, UsageError, HELP};
use crate::ids::run_id;
use crate::mapping::exit;
use crate::output::Renderer;
use crate::wire::json::{JsonLine, JsonToolInfo, JsonTools};
use crate::wire::{ErrorEvent, EventBody, FinalEvent, RunEnd, RunStart};
use agent_host::stdout::Stdout;

mod capabilities;
mod mcp_oauth;
mod project;
mod run;
mod setup;
#[cfg(test)]
mod tests;

pub use mcp_oauth::{run_mcp, token_dir};

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
/// tools, an interrupt, the environment, the working directory and what the kernel lets the
/// sandbox enforce.
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
    /// What the kernel lets the sandbox enforce, in place of the tools' own probe (a host
    /// that probed once; a test that simulates a kernel without Landlock).
    pub sandbox_support: Option<SandboxSupport>,
}

impl Default for ExecHooks {
    fn default() -> Self {
        Self {
            provider: None,
            tools: Vec::new(),
            interrupt: CancellationToken::new(),
            env: Arc::new(|k| std::env::var(k).ok()),
            cwd: None,
            sandbox_support: None,
        }
    }
}

/// Why a run could not start.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Failure {
    /// Bad flags, workspace, input, images or sessions: `usage_error`, exit 2.
    Usage(String),
    /// The provider could not be built: `provider_error`, exit 3.
    Provider(String),
    /// A capability could not be set up (`mcp_error`, `specialist_error`), exit 3.
    Capability(&'static str, String),
}

/// Where a run's output goes: the renderer, the burst being rendered, and the line writer
/// over stdout (which the text format, writing stdout itself, leaves idle).
struct Output {
    renderer: Renderer,
    frames: Frames,
    stdout: Stdout,
}

impl Output {
    fn start(
        format: OutputFormat,
        stdout: Box<dyn Write + Send>,
        stderr: Box<dyn Write + Send>,
    ) -> Self {
        let (text, lines): (Box<dyn Write + Send>, Box<dyn Write + Send>) = match format {
            OutputFormat::Text => (stdout, Box::new(std::io::sink())),
            _ => (Box::new(std::io::sink()), stdout),
        };
        Self {
            renderer: Renderer::new(format, run_id(chrono::Utc::now()), text, stderr),
            frames: Frames::new(),
            stdout: Stdout::start(lines),
        }
    }

    /// Renders `body` and hands it to the writer.
    fn write(&mut self, body: &EventBody) -> std::io::Result<()> {
        self.renderer.render(body, &mut self.frames)?;
        self.stdout.send(&mut self.frames)
    }

    /// Writes everything; the first error of stdout, if any.
    async fn close(mut self) -> std::io::Result<()> {
        self.stdout.close(&mut self.frames).await
    }
}

/// Reports a failure before the run: `error` then `run_end` inside the protocol; under the
/// other formats a usage error is `[zero] …` on stderr, a provider error goes through the
/// format's renderer. Returns the exit code.
fn report(out: &mut Output, failure: Failure) -> i32 {
    let (code, message, exit_code) = match failure {
        Failure::Usage(message) => {
            if out.renderer.format() != OutputFormat::StreamJson {
                return finished(
                    out.renderer.stderr_line(&format!("[zero] {message}")),
                    exit::USAGE,
                );
            }
            ("usage_error", message, exit::USAGE)
        }
        Failure::Provider(message) => ("provider_error", message, exit::PROVIDER),
        Failure::Capability(code, message) => (code, message, exit::PROVIDER),
    };
    let lines = [
        EventBody::Error(ErrorEvent {
            code: code.into(),
            message,
            recoverable: false,
        }),
        EventBody::RunEnd(RunEnd {
            exit_code,
            status: "error".into(),
        }),
    ];
    finished(lines.iter().try_for_each(|l| out.write(l)), exit_code)
}

/// `code` when the output was written, else a crash.
fn finished(written: std::io::Result<()>, code: i32) -> i32 {
    match written {
        Ok(()) => code,
        Err(_) => exit::CRASH,
    }
}

/// `--list-tools`: the tools the model can see, in the output format; the provider is never
/// built.
fn list_tools(out: &mut Output, plan: &setup::Plan) -> i32 {
    let tools = plan.visible_tools();
    let text = setup::format_tool_list(&tools);
    let written = match out.renderer.format() {
        OutputFormat::StreamJson => [
            EventBody::RunStart(RunStart {
                cwd: plan.workspace.display().to_string(),
                ..RunStart::default()
            }),
            EventBody::Final(FinalEvent { meta: None, text }),
            EventBody::RunEnd(RunEnd {
                exit_code: exit::SUCCESS,
                status: "success".into(),
            }),
        ]
        .iter()
        .try_for_each(|e| out.write(e)),
        OutputFormat::Json => {
            let tools = tools
                .iter()
                .map(|t| JsonToolInfo {
                    description: t.description().to_string(),
                    name: t.name().to_string(),
                    permission: t.permission().as_str().to_string(),
                    side_effect: t.side_effect().as_str().to_string(),
                })
                .collect();
            out.renderer
                .render_json(&JsonLine::Tools(JsonTools { tools }), &mut out.frames)
        }
        OutputFormat::Text => out.renderer.stdout_line(&text, &mut out.frames),
    };
    finished(written, exit::SUCCESS)
}

/// The steps of `exec` after the arguments are parsed; returns the exit code and `out`.
async fn exec(
    parsed: Result<Parsed, UsageError>,
    mut out: Output,
    hooks: &ExecHooks,
    stdin: &mut dyn Read,
) -> (i32, Output) {
    let options = match parsed {
        Ok(Parsed::Run(o)) => *o,
        Ok(Parsed::Help) => {
            let help = out.renderer.stdout_line(HELP.trim_end(), &mut out.frames);
            return (finished(help, exit::SUCCESS), out);
        }
        Err(err) => return (report(&mut out, Failure::Usage(err.message)), out),
    };
    let plan = match setup::plan(&options, hooks).await {
        Ok(plan) => plan,
        Err(failure) => return (report(&mut out, failure), out),
    };
    out.renderer.set_permission_mode(plan.mode.name);
    if options.list_tools {
        let code = list_tools(&mut out, &plan);
        plan.shutdown().await;
        return (code, out);
    }
    let mcp = plan.mcp.as_ref().map(|mcp| mcp.inner.clone());
    let lsp = plan.lsp.clone();
    let (code, out) = match setup::ready(&options, hooks, plan, stdin).await {
        Ok(ready) => {
            let servers = mcp.clone().unwrap_or_default();
            run::run(ready, servers, out, &hooks.interrupt).await
        }
        Err(failure) => (report(&mut out, failure), out),
    };
    // No MCP server outlives the run (the session shut them down, unless a signalled run's
    // `session_end` hooks took too long).
    if let Some(mcp) = mcp {
        mcp.shutdown().await;
    }
    // Nor a language server (`shutdown` and `exit`, then its group is killed).
    lsp.shutdown().await;
    (code, out)
}

/// Runs `exec` with the arguments after the word `exec`; returns the exit code.
pub async fn run_exec(args: &[String], io: ExecIo, hooks: ExecHooks) -> i32 {
    let ExecIo {
        mut stdin,
        stdout,
        stderr,
    } = io;
    let parsed = parse_exec_args(args);
    let format = match &parsed {
        Ok(Parsed::Run(o)) => o.output_format,
        Ok(Parsed::Help) => OutputFormat::Text,
        Err(err) => err.format,
    };
    let out = Output::start(format, stdout, stderr);
    let (code, out) = exec(parsed, out, &hooks, &mut *stdin).await;
    finished(out.close().await, code)
}
