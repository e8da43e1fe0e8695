//! `adapter-rpc rpc [flags]`: zut RPC over stdin/stdout.

use std::process::ExitCode;

use adapter_rpc::cli::{build, Cli, Command};
use adapter_rpc::serve;
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

fn main() -> ExitCode {
    let program = program();
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
    let code = runtime.block_on(async {
        let (agent, config) = match build(&args) {
            Ok(built) => built,
            Err(err) => {
                eprintln!("{program}: {err}");
                return 1;
            }
        };
        match serve(agent, config, tokio::io::stdin(), tokio::io::stdout()).await {
            Ok(()) => 0,
            Err(err) => {
                eprintln!("{program}: {err}");
                1
            }
        }
    });
    // Do not wait for the runtime's blocking stdin reader: stdout is already flushed.
    std::process::exit(code)
}
