//! `adapter-stream-json mcp oauth login|logout|status NAME`: Zero's `zero mcp oauth` (its
//! texts, flags and exit codes) on agent-mcp's OAuth, the servers read from Zero's config
//! layers as `exec` reads them; and the OAuth settings of an `exec` run's MCP servers.
//!
//! Tokens live in Zero's data directory: `$XDG_DATA_HOME/zero/mcp-oauth` (default
//! `~/.local/share/zero/mcp-oauth`), one `0600` file per server.

use std::io::Write;
use std::path::PathBuf;

use agent_mcp::oauth::cli::{OAuthCommand, EXIT_USAGE};
use agent_mcp::oauth::OAuthOptions;

use super::capabilities::zero_mcp_servers;
use super::EnvLookup;

/// The command that logs in by hand, named when a run skips a server for want of a login.
pub const LOGIN_COMMAND: &str = "adapter-stream-json mcp oauth login";

/// Where `exec` keeps MCP OAuth tokens: `mcp-oauth` beside Zero's sessions.
pub fn token_dir(env: &EnvLookup) -> PathBuf {
    let sessions = agent_host::session::zero::default_root(&|name| env(name));
    sessions
        .parent()
        .map(|zero| zero.join("mcp-oauth"))
        .unwrap_or_else(|| PathBuf::from("mcp-oauth"))
}

/// The OAuth settings of a run's MCP servers (a login may start where a browser opens).
pub(super) fn oauth_options(env: &EnvLookup) -> OAuthOptions {
    OAuthOptions::default()
        .store(token_dir(env))
        .login_command(LOGIN_COMMAND)
}

/// Runs `mcp ARGS` (the words after `mcp`); returns the exit code. Only `mcp oauth` is
/// ours; Zero's other `mcp` commands manage its config files.
pub async fn run_mcp(
    args: &[String],
    env: EnvLookup,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    match args.first().map(String::as_str) {
        Some("oauth") => {}
        None => {
            let _ = writeln!(
                err,
                "[zero] mcp subcommand required. Use `zero mcp oauth status`."
            );
            return EXIT_USAGE;
        }
        Some("-h" | "--help" | "help") => {
            let _ = write!(
                out,
                "Usage:\n  zero mcp oauth <command>\n\nRun `zero mcp oauth --help` for the commands.\n"
            );
            return 0;
        }
        Some(other) => {
            let _ = writeln!(
                err,
                "[zero] unknown mcp subcommand {other:?} (this build has `mcp oauth` only)"
            );
            return EXIT_USAGE;
        }
    }
    let workspace = match std::env::current_dir() {
        Ok(dir) => dir,
        Err(e) => {
            let _ = writeln!(err, "[zero] failed to resolve workspace: {e}");
            return 1;
        }
    };
    // An invalid config only matters to a command that looks a server up.
    let (servers, config_error) = match zero_mcp_servers(&workspace, &env) {
        Ok(setup) => (setup.servers, None),
        Err(message) => (Vec::new(), Some(message)),
    };
    if let (Some(message), Some("login")) = (&config_error, args.get(1).map(String::as_str)) {
        let _ = writeln!(err, "[zero] {message}");
        return 1;
    }
    let command = OAuthCommand {
        program: "zero".to_string(),
        prefix: "[zero] ".to_string(),
        servers,
        options: oauth_options(&env),
        config_flags: false,
    };
    command.run(&args[1..], out, err).await
}
