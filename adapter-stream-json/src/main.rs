//! `adapter-stream-json exec …`: Zero's `exec` command on agent-core.

use std::process::ExitCode;

use adapter_stream_json::{run_exec, run_mcp, run_sessions, ExecHooks, ExecIo};
use agent_core::CancellationToken;

const USAGE: &str = "Usage:
  adapter-stream-json exec [flags] [prompt]
  adapter-stream-json -p <prompt> [flags]
  adapter-stream-json mcp oauth login|logout|status [server]
  adapter-stream-json sessions rewind-plan|rewind <id> --sequence <n> [--json]

Run `adapter-stream-json exec --help` for the flags.";

/// Cancels `token` on SIGINT or SIGTERM (agent-host's handlers; none installed, nothing
/// cancels: the default actions end the process).
fn watch_signals(token: CancellationToken) {
    let signal = agent_host::signals::termination_or(|_| {});
    tokio::spawn(async move {
        signal.await;
        token.cancel();
    });
}

/// `mcp …` (Zero's `zero mcp oauth`): its exit code.
fn mcp(args: &[String]) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("[zero] failed to start the runtime: {err}");
            return ExitCode::from(1);
        }
    };
    let env: adapter_stream_json::exec::EnvLookup = std::sync::Arc::new(|k| std::env::var(k).ok());
    let code = runtime.block_on(run_mcp(
        args,
        env,
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    ));
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("mcp") {
        return mcp(&args[1..]);
    }
    if args.first().map(String::as_str) == Some("sessions") {
        let env = |k: &str| std::env::var(k).ok();
        let code = run_sessions(
            &args[1..],
            &env,
            &mut std::io::stdout(),
            &mut std::io::stderr(),
        );
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    let exec_args: Vec<String> = match args.first().map(String::as_str) {
        Some("exec") => args[1..].to_vec(),
        // `zero -p X …` is `zero exec --prompt=X …`.
        Some("-p") | Some("--prompt") if args.len() >= 2 => {
            let mut rest = vec![format!("--prompt={}", args[1])];
            rest.extend(args[2..].iter().cloned());
            rest
        }
        Some(a) if a.starts_with("--prompt=") || a.starts_with("-p=") => args.clone(),
        Some("-h") | Some("--help") | Some("help") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    // Spans go to an OTLP collector only when OTEL_EXPORTER_OTLP_ENDPOINT is set; stdout
    // stays protocol lines only.
    let _otel = agent_host::capabilities::init_otel("adapter-stream-json");
    // One thread: a run waits on the model, its tools and stdout, and whatever blocks (file
    // tools, searches, the stdout writer) runs on the blocking pool. A prompt's process is
    // 10–14 % faster than on two workers; 100 k streamed deltas a fifth slower, still twice
    // the mock's own rate (benches/README.md, "One thread, and stdio through the reactor").
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("[zero] failed to start the runtime: {err}");
            return ExitCode::from(1);
        }
    };
    let code = runtime.block_on(async move {
        let hooks = ExecHooks::default();
        watch_signals(hooks.interrupt.clone());
        run_exec(&exec_args, ExecIo::stdio(), hooks).await
    });
    // Do not wait for a tool task that ignores cancellation.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
