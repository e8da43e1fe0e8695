//! `adapter-acp`: the ZCode app-server (`adapter-acp app-server --stdio`) and the Agent
//! Client Protocol agent (`adapter-acp acp`) on agent-core.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use adapter_acp::acp::{transport, AcpAgent, AcpOptions};
use adapter_acp::max_line_bytes;
use adapter_acp::zcode::{serve, ServerOptions};
use agent_client_protocol::ConnectTo;
use agent_host::backpressure::OutputGate;
use agent_host::capabilities::Capabilities;
use agent_host::cli::{CapabilityArgs, ProviderArgs, ProviderEnv, SessionStoreArgs};
use agent_host::context_files::{self, ProjectContext};
use agent_host::lines::{termination_signal, UntilStopped};
use agent_host::session::{AgentFactory, SessionStorage};
use agent_host::stdio;
use agent_store_postgres::StoreSpec;
use clap::{Args, Parser, Subcommand};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

#[derive(Parser)]
#[command(
    name = "adapter-acp",
    version,
    about = "ZCode app-server and ACP front ends for agent-core",
    after_help = "MCP OAuth logins: adapter-acp mcp oauth login|logout|status [server] \
                  [--mcp-config FILE | --url URL] [--data-dir DIR] (tokens in the data \
                  directory's mcp-oauth)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the ZCode app-server protocol (line-delimited JSON) on stdin/stdout.
    #[command(name = "app-server", alias = "agent-server")]
    AppServer(AppServerArgs),
    /// Serve the Agent Client Protocol (ACP v1, as Zed and other editors speak it) on
    /// stdin/stdout.
    Acp(AcpArgs),
}

#[derive(Args)]
struct AcpArgs {
    /// Tools never offered, space- or comma-separated. May be repeated.
    #[arg(long = "disallowed-tools", value_name = "NAMES")]
    disallowed_tools: Vec<String>,
    /// Directory sessions are stored in (shared with `app-server`; default: as there).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// `files` (under the data directory) or a PostgreSQL URL shared by a fleet.
    #[command(flatten)]
    store: SessionStoreArgs,
    #[command(flatten)]
    provider: ProviderArgs,
    /// Hooks, MCP servers (besides each session's `mcpServers`), the sandbox and the
    /// context budget, for every session.
    #[command(flatten)]
    capabilities: CapabilityArgs,
    /// Read no AGENTS.md / CLAUDE.md instructions into the sessions' system prompts.
    #[arg(long)]
    no_context_files: bool,
}

#[derive(Args)]
struct AppServerArgs {
    /// Use stdin/stdout (the only transport; accepted for compatibility).
    #[arg(long)]
    stdio: bool,
    /// Tools never offered, space- or comma-separated (ZCode names such as `Bash` map to
    /// ours; names of tools we don't have are ignored). May be repeated.
    #[arg(long = "disallowed-tools", value_name = "NAMES")]
    disallowed_tools: Vec<String>,
    /// Directory sessions are stored in (default: $ADAPTER_ACP_DATA_DIR, else
    /// $ZCODE_DATA_BASE_DIR/.zcode/adapter-acp, else $XDG_DATA_HOME/adapter-acp).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// `files` (under the data directory) or a PostgreSQL URL shared by a fleet.
    #[command(flatten)]
    store: SessionStoreArgs,
    #[command(flatten)]
    provider: ProviderArgs,
    /// Hooks, MCP servers, sandbox, context budget: applied to every session.
    #[command(flatten)]
    capabilities: CapabilityArgs,
    /// Read no AGENTS.md / CLAUDE.md instructions into the sessions' system prompts.
    #[arg(long)]
    no_context_files: bool,
}

/// Why the process ends unsuccessfully: its exit code and the line for stderr.
struct Failure {
    code: u8,
    message: String,
}

impl From<String> for Failure {
    /// A runtime failure (exit 1).
    fn from(message: String) -> Self {
        Self { code: 1, message }
    }
}

/// The variables of this binary that set the provider flags it leaves out.
const PROVIDER_ENV: ProviderEnv = ProviderEnv {
    provider: Some("ADAPTER_ACP_PROVIDER"),
    model: Some("ADAPTER_ACP_MODEL"),
    base_url: Some("ADAPTER_ACP_BASE_URL"),
    script: Some("ADAPTER_ACP_SCRIPT"),
};

fn factory(
    provider: &ProviderArgs,
    disallowed: &[String],
    no_context_files: bool,
) -> Result<AgentFactory, String> {
    let config = provider
        .config_from_env(&PROVIDER_ENV)
        .map_err(|e| format!("{e}"))?;
    // Each session reads its workspace's AGENTS.md / CLAUDE.md and skills when it starts;
    // ACP lists and expands its commands.
    let mut project = ProjectContext::editor(&context_files::process_env);
    if no_context_files {
        project = project.without_instructions();
    }
    Ok(AgentFactory::new(config)
        .disallowed_tools(split_names(disallowed))
        .project_context(project))
}

/// Logs to stderr (`ADAPTER_ACP_LOG` filters them), and the agent's spans to an OTLP
/// collector when `OTEL_EXPORTER_OTLP_ENDPOINT` is set ([`agent_otel::layer`]; nothing
/// otherwise). Keep the guard until the end of `main`: dropping it flushes the spans.
fn init_logging() -> Option<agent_otel::OtelGuard> {
    let filter = tracing_subscriber::EnvFilter::try_from_env("ADAPTER_ACP_LOG")
        // The ACP SDK logs every error response it sends at warn; those are answers, not
        // faults.
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,agent_client_protocol=error"));
    // The filter is the log layer's own: the span export sees the agent's INFO spans
    // whatever the log level.
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_filter(filter);
    let (otel, guard) = match agent_otel::layer("adapter-acp") {
        Ok(Some((layer, guard))) => (Some(layer), Some(guard)),
        Ok(None) => (None, None),
        Err(err) => {
            let _ = writeln!(
                std::io::stderr(),
                "adapter-acp: warning: tracing export disabled: {err}"
            );
            (None, None)
        }
    };
    tracing_subscriber::registry().with(otel).with(logs).init();
    guard
}

/// The sessions' storage `args` name: the files under `data_dir` (the default), or a
/// connected PostgreSQL store. A bad value is a usage error (exit 2); a database that cannot
/// be reached, a runtime failure (exit 1). The URL never shows in the messages.
async fn open_storage(
    args: &SessionStoreArgs,
    data_dir: &std::path::Path,
) -> Result<Arc<dyn SessionStorage>, Failure> {
    let spec = StoreSpec::from_args(args).map_err(|err| Failure {
        code: 2,
        message: err.to_string(),
    })?;
    let storage = spec
        .open_or_files(data_dir)
        .await
        .map_err(|err| Failure::from(format!("cannot open the session store: {err}")))?;
    match spec.is_postgres() {
        true => tracing::info!("sessions are kept in PostgreSQL"),
        false => tracing::info!(data_dir = %data_dir.display(), "sessions are kept in files"),
    }
    Ok(storage)
}

fn split_names(lists: &[String]) -> Vec<String> {
    lists
        .iter()
        .flat_map(|list| list.split(|c: char| c.is_whitespace() || c == ','))
        .filter(|name| !name.is_empty())
        .map(str::to_string)
        .collect()
}

async fn acp(args: AcpArgs) -> Result<(), Failure> {
    // Sessions have workspaces of their own: relative paths of the capability flags (and
    // the specialists' project manifests) are resolved against the directory the editor
    // started us in; each session connects its MCP servers in its own workspace.
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let capabilities = Capabilities::load(&args.capabilities, &cwd).map_err(|err| Failure {
        code: 2,
        message: err.to_string(),
    })?;
    for warning in capabilities.warnings() {
        tracing::warn!("{warning}");
    }
    // MCP servers that ask for OAuth: tokens in the data directory's `mcp-oauth`
    // (`adapter-acp mcp oauth login`).
    let mut capabilities = capabilities;
    capabilities.mcp_options.oauth = adapter_acp::mcp_oauth::oauth_options(
        &args
            .data_dir
            .clone()
            .unwrap_or_else(adapter_acp::default_data_dir),
    );
    let factory = factory(
        &args.provider,
        &args.disallowed_tools,
        args.no_context_files,
    )?
    .capabilities(capabilities);
    // A provider that cannot be built is reported now and, as a JSON-RPC error, on
    // session/new.
    if let Err(err) = factory.provider() {
        tracing::error!(error = %err, "the provider cannot be built; sessions will fail");
    }
    let data_dir = args.data_dir.unwrap_or_else(adapter_acp::default_data_dir);
    tracing::info!(data_dir = %data_dir.display(), ?factory, "acp agent starting");
    let storage = open_storage(&args.store, &data_dir).await?;
    let gate = Arc::new(OutputGate::default());
    // SIGTERM / SIGINT end the input like a closed stdin: running turns stop (and their
    // tool processes with them) before the process exits.
    let stdin = UntilStopped::new(stdio::stdin(), termination_signal());
    let io = transport::transport(stdin, stdio::stdout(), max_line_bytes(), gate.clone());
    let result = AcpAgent::new(AcpOptions {
        factory,
        data_dir,
        storage: Some(storage),
    })
    .with_output_gate(gate)
    .with_update_outbox(io.update_outbox())
    .connect_to(io)
    .await;
    match result {
        Ok(()) => Ok(()),
        // The client closed our stdout: it is gone, which ends the connection normally.
        Err(err) if is_broken_pipe(&err.to_string()) => {
            tracing::info!("stdout closed; exiting");
            Ok(())
        }
        Err(err) => Err(format!("acp connection failed: {err}").into()),
    }
}

fn is_broken_pipe(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    lower.contains("broken pipe") || lower.contains("os error 32")
}

async fn app_server(args: AppServerArgs) -> Result<(), Failure> {
    let _ = args.stdio;
    // Relative paths of the capability flags (and the specialists' project manifests) are
    // resolved against the directory the host started us in.
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let capabilities = Capabilities::load(&args.capabilities, &cwd).map_err(|err| Failure {
        code: 2,
        message: err.to_string(),
    })?;
    for warning in capabilities.warnings() {
        tracing::warn!("{warning}");
    }
    // MCP servers that ask for OAuth: tokens in the data directory's `mcp-oauth`
    // (`adapter-acp mcp oauth login`).
    let mut capabilities = capabilities;
    capabilities.mcp_options.oauth = adapter_acp::mcp_oauth::oauth_options(
        &args
            .data_dir
            .clone()
            .unwrap_or_else(adapter_acp::default_data_dir),
    );
    let factory = factory(
        &args.provider,
        &args.disallowed_tools,
        args.no_context_files,
    )?
    .capabilities(capabilities);
    // A provider that cannot be built (e.g. no API key) is reported on stderr now and to
    // the client, in the protocol's own form, on session/create.
    if let Err(err) = factory.provider() {
        tracing::error!(error = %err, "the provider cannot be built; sessions will fail");
    }
    let data_dir = args.data_dir.unwrap_or_else(adapter_acp::default_data_dir);
    tracing::info!(data_dir = %data_dir.display(), ?factory, "app-server starting");
    let storage = open_storage(&args.store, &data_dir).await?;
    // SIGTERM / SIGINT end the input like a closed stdin (see `acp`).
    let stdin = UntilStopped::new(stdio::stdin(), termination_signal());
    match serve(
        ServerOptions {
            factory,
            data_dir,
            storage: Some(storage),
        },
        stdin,
        stdio::stdout(),
    )
    .await
    {
        Ok(()) => Ok(()),
        // The client closed our stdout: it is gone, which ends the session normally.
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {
            tracing::info!("stdout closed; exiting");
            Ok(())
        }
        Err(err) => Err(format!("app-server I/O failed: {err}").into()),
    }
}

/// Exit codes: 0 after stdin closed, SIGTERM/SIGINT or a closed stdout (every running turn
/// was stopped first); 1 on other failures; 2 on bad arguments (also a capability flag
/// whose file or value is unusable).
/// `adapter-acp mcp …` (MCP OAuth logins): its exit code.
fn mcp(args: &[String]) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            let _ = writeln!(std::io::stderr(), "adapter-acp: cannot start tokio: {err}");
            return ExitCode::FAILURE;
        }
    };
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    let code = runtime.block_on(adapter_acp::mcp_oauth::run_mcp(args, &mut out, &mut err));
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

fn main() -> ExitCode {
    // Started by an editor's terminal to run a command under the sandbox: confine, exec.
    agent_tools::launcher::run_if_launched();
    let words: Vec<String> = std::env::args().skip(1).collect();
    if words.first().map(String::as_str) == Some("mcp") {
        return mcp(&words[1..]);
    }
    let cli = Cli::parse();
    let _otel = init_logging();
    // One thread: the server waits on its client, the model and the disk, and whatever
    // blocks (file tools, searches, store syncs) runs on the blocking pool. Scheduling on one
    // thread spares the wake-ups between worker threads: a prompt's whole process 13–17 %
    // faster (benches/README.md, "One thread, and stdio through the reactor").
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            let _ = writeln!(std::io::stderr(), "adapter-acp: cannot start tokio: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::AppServer(args) => app_server(args).await,
            Command::Acp(args) => acp(args).await,
        }
    });
    // A read of stdin blocked in tokio's reader thread (a file or a terminal as stdin; a
    // pipe or socket is read without one) cannot be cancelled (after SIGTERM or a closed
    // stdout, stdin may still be open): do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(250));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure { code, message }) => {
            // Never panic on a closed stderr.
            let _ = writeln!(std::io::stderr(), "adapter-acp: {message}");
            ExitCode::from(code)
        }
    }
}
