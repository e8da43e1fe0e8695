//! `exec`: one headless run, from the command line to the exit code.
//!
//! The order of checks follows Zero: flags, workspace, permission mode, tool filters,
//! `--list-tools`, session preflight, the prompt (stream-json input or text), images, the
//! provider, then the session. Every failure before the agent starts gives exactly `error`
//! then `run_end` (under `-o stream-json`) with no `run_start`.
//!
//! - [`setup`]: the steps before the run, each failing with Zero's message.
//! - [`run`]: the run itself, streamed through the [`crate::pipeline::Pipeline`].

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use agent_core::{CancellationToken, Provider, Tool};

use crate::cli::{parse_exec_args, OutputFormat, Parsed, HELP};
use crate::ids::run_id;
use crate::mapping::exit;
use crate::output::Writer;
use crate::wire::json::{JsonLine, JsonToolInfo, JsonTools};
use crate::wire::{ErrorEvent, EventBody, FinalEvent, RunEnd, RunStart};

mod run;
mod setup;

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

/// Why a run could not start.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Failure {
    /// Bad flags, workspace, input, images or sessions: `usage_error`, exit 2.
    Usage(String),
    /// The provider could not be built: `provider_error`, exit 3.
    Provider(String),
}

/// Reports a failure before the run: `error` then `run_end` inside the protocol; under the
/// other formats a usage error is `[zero] …` on stderr, a provider error goes through the
/// format's writer. Returns the exit code.
fn report(writer: &mut Writer, failure: Failure) -> i32 {
    let (code, message, exit_code) = match failure {
        Failure::Usage(message) => {
            if writer.format() != OutputFormat::StreamJson {
                return finished(
                    writer.stderr_line(&format!("[zero] {message}")),
                    exit::USAGE,
                );
            }
            ("usage_error", message, exit::USAGE)
        }
        Failure::Provider(message) => ("provider_error", message, exit::PROVIDER),
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
    finished(lines.iter().try_for_each(|l| writer.write(l)), exit_code)
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
fn list_tools(writer: &mut Writer, plan: &setup::Plan) -> i32 {
    let text = setup::format_tool_list(&plan.tools);
    let written = match writer.format() {
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
        .try_for_each(|e| writer.write(e)),
        OutputFormat::Json => {
            let tools = plan
                .tools
                .iter()
                .map(|t| JsonToolInfo {
                    description: t.description().to_string(),
                    name: t.name().to_string(),
                    permission: t.permission().as_str().to_string(),
                    side_effect: t.side_effect().as_str().to_string(),
                })
                .collect();
            writer.write_json_line(&JsonLine::Tools(JsonTools { tools }))
        }
        OutputFormat::Text => writer.stdout_line(&text),
    };
    finished(written, exit::SUCCESS)
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
    let mut writer = Writer::new(format, run_id(chrono::Utc::now()), stdout, stderr, "");
    let options = match parsed {
        Ok(Parsed::Run(o)) => *o,
        Ok(Parsed::Help) => {
            return finished(writer.stdout_line(HELP.trim_end()), exit::SUCCESS);
        }
        Err(err) => return report(&mut writer, Failure::Usage(err.message)),
    };
    let plan = match setup::plan(&options, &hooks) {
        Ok(plan) => plan,
        Err(failure) => return report(&mut writer, failure),
    };
    writer.set_permission_mode(plan.mode.name);
    if options.list_tools {
        return list_tools(&mut writer, &plan);
    }
    let ready = match setup::ready(&options, &hooks, plan, &mut *stdin) {
        Ok(ready) => ready,
        Err(failure) => return report(&mut writer, failure),
    };
    run::run(ready, writer, &hooks.interrupt).await
}
