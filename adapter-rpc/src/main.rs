//! `adapter-rpc rpc [flags]`: zut RPC over stdin/stdout.

use std::process::ExitCode;

use adapter_rpc::cli::{build, Built, Cli, Command};
use adapter_rpc::{serve_until, Ended};
use agent_host::signals::{self, Signal};
use agent_host::stdio;
use clap::Parser;

/// The name errors are reported under: the program's file name (`zut` through a link).
fn program() -> String {
    std::env::args_os()
        .next()
        .and_then(|arg| {
            std::path::Path::new(&arg)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "adapter-rpc".to_string())
}

/// How the server ended.
enum Exit {
    Code(i32),
    Signal(Signal),
}

/// `adapter-rpc mcp …` (MCP OAuth logins): its exit code.
fn mcp(args: &[String]) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("adapter-rpc: cannot start the runtime: {err}");
            return ExitCode::from(1);
        }
    };
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    let code = runtime.block_on(adapter_rpc::mcp_oauth::run_mcp(args, &mut out, &mut err));
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

fn main() -> ExitCode {
    let program = program();
    let words: Vec<String> = std::env::args().skip(1).collect();
    if words.first().map(String::as_str) == Some("mcp") {
        return mcp(&words[1..]);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let code = match err.use_stderr() {
                true => 1,
                false => 0,
            };
            let _ = err.print();
            return ExitCode::from(code);
        }
    };
    let Command::Rpc(args) = cli.command;
    let otel = agent_host::capabilities::init_otel("adapter-rpc");
    // Two workers: a stream's HTTP decoding runs beside its rendering (one thread streams
    // 100 k deltas a fifth slower; benches/README.md).
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("{program}: cannot start the runtime: {err}");
            return ExitCode::from(1);
        }
    };
    let exit = runtime.block_on(async {
        // Handlers first: a signal during start-up (MCP servers connecting) waits for the
        // server, which stops at once.
        let stop = signals::termination_or(|_| {
            eprintln!("adapter-rpc: warning: cannot install signal handlers");
        });
        let Built { agent, config, mcp } = match build(&args).await {
            Ok(built) => built,
            Err(err) => {
                eprintln!("{program}: {err}");
                return Exit::Code(1);
            }
        };
        let served = serve_until(agent, config, stdio::stdin(), stdio::stdout(), stop).await;
        // No MCP server outlives us.
        mcp.shutdown().await;
        match served {
            Ok(Ended::Input) => Exit::Code(0),
            Ok(Ended::Stopped(signal)) => Exit::Signal(signal),
            Err(err) => {
                eprintln!("{program}: {err}");
                Exit::Code(1)
            }
        }
    });
    // Export the last spans before going.
    drop(otel);
    match exit {
        Exit::Signal(signal) => signals::die_of(signal),
        // Do not wait for a blocking stdin reader (a file or a terminal as stdin): stdout
        // is already flushed.
        Exit::Code(code) => std::process::exit(code),
    }
}
