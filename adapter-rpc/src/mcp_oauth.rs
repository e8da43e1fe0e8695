//! `adapter-rpc mcp oauth login|logout|status [NAME] [--mcp-config FILE | --url URL]`: the
//! MCP OAuth logins of `rpc`'s servers (Zero's command shape, on agent-mcp's OAuth), and
//! the OAuth settings `rpc` connects its servers with.
//!
//! Tokens live in zut's home: `$ZUT_HOME/mcp-oauth` (else `$XDG_STATE_HOME/zut/mcp-oauth`,
//! else `~/.local/state/zut/mcp-oauth`), one `0600` file per server.

use std::io::Write;
use std::path::PathBuf;

use agent_mcp::oauth::cli::{oauth_words, OAuthCommand};
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
    let args = match oauth_words("adapter-rpc", "", args, out, err) {
        Ok(args) => args,
        Err(code) => return code,
    };
    let env = |name: &str| std::env::var(name).ok();
    OAuthCommand::front_end("adapter-rpc", oauth_options(&env))
        .run(args, out, err)
        .await
}
