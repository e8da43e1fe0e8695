//! `adapter-acp mcp oauth login|logout|status [NAME] [--mcp-config FILE | --url URL]
//! [--data-dir DIR]`: the MCP OAuth logins of the servers `app-server` and `acp` sessions
//! connect (Zero's command shape, on agent-mcp's OAuth), and the OAuth settings they connect
//! with.
//!
//! Tokens live in the data directory's `mcp-oauth` (see [`crate::default_data_dir`]), one
//! `0600` file per server, shared by both protocols.

use std::io::Write;
use std::path::{Path, PathBuf};

use agent_mcp::oauth::cli::{oauth_words, OAuthCommand, EXIT_USAGE};
use agent_mcp::oauth::OAuthOptions;

/// The command that logs in by hand, named when a server is skipped for want of a login.
pub const LOGIN_COMMAND: &str = "adapter-acp mcp oauth login";

/// Where the sessions of data directory `data_dir` keep MCP OAuth tokens.
pub fn token_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("mcp-oauth")
}

/// The OAuth settings of the MCP servers of data directory `data_dir`'s sessions.
pub fn oauth_options(data_dir: &Path) -> OAuthOptions {
    OAuthOptions::default()
        .store(token_dir(data_dir))
        .login_command(LOGIN_COMMAND)
}

/// Runs `mcp ARGS` (the words after `mcp`); returns the exit code.
pub async fn run_mcp(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let args = match oauth_words("adapter-acp", " [--data-dir DIR]", args, out, err) {
        Ok(args) => args,
        Err(code) => return code,
    };
    // `--data-dir DIR` is this binary's; the rest is the command's.
    let mut data_dir = None;
    let mut rest = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            "--data-dir" => match words.next() {
                Some(dir) => data_dir = Some(PathBuf::from(dir)),
                None => {
                    let _ = writeln!(err, "adapter-acp: --data-dir requires a value");
                    return EXIT_USAGE;
                }
            },
            other => match other.strip_prefix("--data-dir=") {
                Some(dir) => data_dir = Some(PathBuf::from(dir)),
                None => rest.push(word.clone()),
            },
        }
    }
    let data_dir = data_dir.unwrap_or_else(crate::default_data_dir);
    OAuthCommand::front_end("adapter-acp", oauth_options(&data_dir))
        .run(&rest, out, err)
        .await
}
