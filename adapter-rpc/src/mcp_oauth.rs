//! `adapter-rpc mcp oauth login|logout|status [NAME] [--mcp-config FILE | --url URL]`: the
//! MCP OAuth logins of `rpc`'s servers (Zero's command shape, on agent-mcp's OAuth), and
//! the OAuth settings `rpc` connects its servers with.
//!
//! Tokens live in zut's home: `$ZUT_HOME/mcp-oauth` (else `$XDG_STATE_HOME/zut/mcp-oauth`,
//! else `~/.local/state/zut/mcp-oauth`), one `0600` file per server.

use std::io::Write;
use std::path::PathBuf;

use agent_mcp::oauth::cli::{OAuthCommand, EXIT_USAGE};
use agent_mcp::oauth::OAuthOptions;

/// The command that logs in by hand, named when a server is skipped for want of a login.
pub const LOGIN_COMMAND: &str = "adapter-rpc mcp oauth login";

/// Where `rpc` keeps MCP OAuth tokens: `mcp-oauth` in zut's home.
pub fn token_dir(env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    agent_host::context_files::zut_home(env)
        .unwrap_or_else(|| PathBuf::from(".zut"))
        .join("mcp-oauth")
}

/// The OAuth settings of `rpc`'s MCP servers.
pub fn oauth_options(env: &dyn Fn(&str) -> Option<String>) -> OAuthOptions {
    OAuthOptions::default()
        .store(token_dir(env))
        .login_command(LOGIN_COMMAND)
}

/// Runs `mcp ARGS` (the words after `mcp`); returns the exit code.
pub async fn run_mcp(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    match args.first().map(String::as_str) {
        Some("oauth") => {}
        Some("-h" | "--help" | "help") => {
            let _ = write!(
                out,
                "Usage:\n  adapter-rpc mcp oauth <command>\n\nRun `adapter-rpc mcp oauth --help` for the commands.\n"
            );
            return 0;
        }
        other => {
            let _ = writeln!(
                err,
                "adapter-rpc: {}",
                match other {
                    None => "mcp subcommand required. Use `adapter-rpc mcp oauth status`.".into(),
                    Some(word) => format!("unknown mcp subcommand {word:?}"),
                }
            );
            return EXIT_USAGE;
        }
    }
    let env = |name: &str| std::env::var(name).ok();
    let command = OAuthCommand {
        program: "adapter-rpc".to_string(),
        prefix: "adapter-rpc: ".to_string(),
        servers: Vec::new(),
        options: oauth_options(&env),
        config_flags: true,
    };
    command.run(&args[1..], out, err).await
}
