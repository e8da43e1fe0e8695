//! `mcp oauth login|logout|status` as Zero's `zero mcp oauth` has them (its texts, flags and
//! exit codes: 0 done, 1 failed, 2 usage), for every front end's binary.

use std::io::Write;

use super::{format_statuses, login, OAuthOptions, TokenStatus, TokenStore};
use crate::config::McpServerConfig;

/// Exit code of a usage error.
pub const EXIT_USAGE: i32 = 2;
/// Exit code of a failure.
pub const EXIT_FAILED: i32 = 1;

/// How one binary runs `mcp oauth`.
#[derive(Debug, Clone)]
pub struct OAuthCommand {
    /// The program name in usage texts (`zero` for the Zero drop-in).
    pub program: String,
    /// Before each error line on stderr (`[zero] `).
    pub prefix: String,
    /// The configured servers a name is looked up in.
    pub servers: Vec<McpServerConfig>,
    /// Where tokens are kept (its `store` must be set) and how the browser is opened.
    pub options: OAuthOptions,
    /// Whether `--mcp-config FILE` and `--url URL` may name the server (binaries whose
    /// servers come from elsewhere: a client's session, a flag).
    pub config_flags: bool,
}

/// Parsed flags and words.
#[derive(Default)]
struct Parsed {
    json: bool,
    help: bool,
    words: Vec<String>,
    config: Option<String>,
    url: Option<String>,
}

impl OAuthCommand {
    fn help(&self) -> String {
        let extra = match self.config_flags {
            true => "      --mcp-config FILE  Look the server up in this {\"mcpServers\": …} file\n      --url URL          The server's streamable-HTTP URL (a server of a client's session)\n",
            false => "",
        };
        format!(
            "Usage:\n  {} mcp oauth <command>\n\nCommands:\n  login <server>     Run the OAuth flow and store credentials for a server\n  logout <server>    Delete stored OAuth credentials for a server\n  status [server]    Show credential presence and expiry (never the token)\n\nFlags:\n      --json    Print command result as JSON\n{extra}  -h, --help    Show this help\n",
            self.program
        )
    }

    fn parse(&self, args: &[String]) -> Result<Parsed, String> {
        let mut parsed = Parsed::default();
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "-h" | "--help" | "help" => {
                    parsed.help = true;
                    return Ok(parsed);
                }
                "--json" => parsed.json = true,
                "--mcp-config" | "--url" if self.config_flags => {
                    let Some(value) = args.next() else {
                        return Err(format!("{arg} requires a value"));
                    };
                    match arg.as_str() {
                        "--url" => parsed.url = Some(value.clone()),
                        _ => parsed.config = Some(value.clone()),
                    }
                }
                flag if flag.starts_with('-') => {
                    return Err(format!("unknown mcp permissions flag {flag:?}"))
                }
                word => parsed.words.push(word.to_string()),
            }
        }
        Ok(parsed)
    }

    /// The server named `name`: `--url` makes one, else `--mcp-config`'s, else the configured.
    fn server(&self, name: &str, parsed: &Parsed) -> Result<McpServerConfig, String> {
        // The name alone, checked as a configuration's would be.
        McpServerConfig::http(name, "http://localhost")
            .validate()
            .map_err(|e| e.to_string())?;
        if let Some(url) = &parsed.url {
            let server = McpServerConfig::http(name, url.clone());
            server.validate().map_err(|e| e.to_string())?;
            return Ok(server);
        }
        let from_file;
        let servers = match &parsed.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("--mcp-config: reading {path}: {e}"))?;
                from_file = crate::parse_mcp_config_file(&text)
                    .map_err(|e| format!("--mcp-config {path}: {e}"))?;
                &from_file
            }
            None => &self.servers,
        };
        servers
            .iter()
            .find(|s| s.name == name)
            .cloned()
            .ok_or_else(|| format!("MCP server {name:?} is not configured"))
    }

    fn store(&self) -> Result<TokenStore, String> {
        self.options
            .store
            .clone()
            .map(TokenStore::new)
            .ok_or_else(|| "no token store directory".to_string())
    }

    /// Runs `mcp oauth ARGS` (the words after `oauth`); returns the exit code.
    pub async fn run(&self, args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
        let prefix = &self.prefix;
        let program = &self.program;
        let usage = |err: &mut dyn Write, message: &str| {
            let _ = writeln!(err, "{prefix}{message}");
            EXIT_USAGE
        };
        let failed = |err: &mut dyn Write, message: &str| {
            let _ = writeln!(err, "{prefix}{message}");
            EXIT_FAILED
        };
        let Some((verb, rest)) = args.split_first() else {
            return usage(
                err,
                &format!("mcp oauth subcommand required. Use `{program} mcp oauth status`."),
            );
        };
        if matches!(verb.as_str(), "-h" | "--help" | "help") {
            let _ = out.write_all(self.help().as_bytes());
            return 0;
        }
        if !matches!(verb.as_str(), "login" | "logout" | "status") {
            return usage(err, &format!("unknown mcp oauth subcommand {verb:?}"));
        }
        let parsed = match self.parse(rest) {
            Ok(parsed) => parsed,
            Err(message) => return usage(err, &message),
        };
        if parsed.help {
            let _ = out.write_all(self.help().as_bytes());
            return 0;
        }
        let store = match self.store() {
            Ok(store) => store,
            Err(message) => return failed(err, &message),
        };
        match verb.as_str() {
            "login" => {
                if parsed.json {
                    return usage(
                        err,
                        &format!("{program} mcp oauth login does not support --json"),
                    );
                }
                let [name] = parsed.words.as_slice() else {
                    return usage(err, &format!("usage: {program} mcp oauth login <server>"));
                };
                let server = match self.server(name, &parsed) {
                    Ok(server) => server,
                    Err(message) => return failed(err, &message),
                };
                // The URL is printed (it carries no token) so a headless user can open it.
                let (shown, mut to_print) = tokio::sync::mpsc::unbounded_channel::<String>();
                let print = move |url: &str| {
                    let _ = shown.send(format!(
                        "Open this URL in your browser to authorize {name}:\n\n  {url}\n\nWaiting for the authorization callback...\n"
                    ));
                };
                let mut options = self.options.clone();
                options.store = Some(store.dir().to_path_buf());
                let flow = login(&server, &options, &print);
                tokio::pin!(flow);
                let result = loop {
                    tokio::select! {
                        result = &mut flow => break result,
                        Some(text) = to_print.recv() => {
                            let _ = out.write_all(text.as_bytes());
                            let _ = out.flush();
                        }
                    }
                };
                while let Ok(text) = to_print.try_recv() {
                    let _ = out.write_all(text.as_bytes());
                }
                match result {
                    Ok(_) => {
                        let _ = writeln!(out, "Stored OAuth credentials for {name}.");
                        0
                    }
                    Err(e) => failed(err, &e.to_string()),
                }
            }
            "logout" => {
                let [name] = parsed.words.as_slice() else {
                    return usage(err, &format!("usage: {program} mcp oauth logout <server>"));
                };
                let removed = match store.remove(name) {
                    Ok(removed) => removed,
                    Err(e) => return failed(err, &e.to_string()),
                };
                if parsed.json {
                    /// Zero's `{serverName, removed}`, in its order.
                    #[derive(serde::Serialize)]
                    #[serde(rename_all = "camelCase")]
                    struct Removed<'a> {
                        server_name: &'a str,
                        removed: bool,
                    }
                    let payload = Removed {
                        server_name: name,
                        removed,
                    };
                    let _ = writeln!(out, "{}", pretty(&payload));
                } else if removed {
                    let _ = writeln!(out, "Removed OAuth credentials for {name}.");
                } else {
                    let _ = writeln!(out, "No OAuth credentials stored for {name}.");
                }
                0
            }
            _ => {
                if parsed.words.len() > 1 {
                    return usage(err, &format!("usage: {program} mcp oauth status [server]"));
                }
                let mut statuses: Vec<TokenStatus> = match store.status() {
                    Ok(statuses) => statuses,
                    Err(e) => return failed(err, &e.to_string()),
                };
                if let Some(name) = parsed.words.first() {
                    statuses.retain(|s| &s.server_name == name);
                }
                if parsed.json {
                    #[derive(serde::Serialize)]
                    struct Tokens<'a> {
                        tokens: &'a [TokenStatus],
                    }
                    let _ = writeln!(out, "{}", pretty(&Tokens { tokens: &statuses }));
                } else {
                    let _ = writeln!(out, "{}", format_statuses(&statuses));
                }
                0
            }
        }
    }
}

/// Two-space indented JSON, as Go's `json.MarshalIndent(v, "", "  ")`.
fn pretty(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// The `mcp` command of a front end whose MCP servers come from its clients' sessions
/// (`adapter-acp`, `adapter-rpc`): only `mcp oauth` is there.
impl OAuthCommand {
    /// `program`'s command: errors on stderr as `{program}: …`, the server named with
    /// `--mcp-config FILE` or `--url URL`, tokens where `options` keeps them.
    pub fn front_end(program: &str, options: OAuthOptions) -> Self {
        Self {
            program: program.to_string(),
            prefix: format!("{program}: "),
            servers: Vec::new(),
            options,
            config_flags: true,
        }
    }
}

/// The words after `oauth` of `program`'s `mcp ARGS` (the words after `mcp`), or the exit
/// code when there is nothing more to run: `mcp --help` printed (its usage line naming the
/// binary's own `flags`, e.g. ` [--data-dir DIR]`), a missing or unknown subcommand reported
/// on `err` as `{program}: …` (exit [`EXIT_USAGE`]).
pub fn oauth_words<'a>(
    program: &str,
    flags: &str,
    args: &'a [String],
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<&'a [String], i32> {
    match args.split_first() {
        Some((word, rest)) if word == "oauth" => Ok(rest),
        Some((word, _)) if matches!(word.as_str(), "-h" | "--help" | "help") => {
            let _ = write!(
                out,
                "Usage:\n  {program} mcp oauth <command>{flags}\n\nRun `{program} mcp oauth --help` for the commands.\n"
            );
            Err(0)
        }
        other => {
            let _ = writeln!(
                err,
                "{program}: {}",
                match other {
                    None => format!("mcp subcommand required. Use `{program} mcp oauth status`."),
                    Some((word, _)) => format!("unknown mcp subcommand {word:?}"),
                }
            );
            Err(EXIT_USAGE)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(args: &[&str]) -> (Result<Vec<String>, i32>, String, String) {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let result = oauth_words("adapter-x", " [--data-dir DIR]", &args, &mut out, &mut err)
            .map(<[String]>::to_vec);
        let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
        (result, text(out), text(err))
    }

    #[test]
    fn a_front_ends_mcp_command_is_oauth_only() {
        let (rest, out, err) = words(&["oauth", "status", "--json"]);
        assert_eq!(rest, Ok(vec!["status".to_string(), "--json".to_string()]));
        assert!(out.is_empty() && err.is_empty());
        let (code, out, _) = words(&["--help"]);
        assert_eq!(code, Err(0));
        assert!(out.starts_with("Usage:\n  adapter-x mcp oauth <command> [--data-dir DIR]\n"));
        let (code, _, err) = words(&[]);
        assert_eq!(code, Err(EXIT_USAGE));
        assert_eq!(
            err,
            "adapter-x: mcp subcommand required. Use `adapter-x mcp oauth status`.\n"
        );
        let (code, _, err) = words(&["add"]);
        assert_eq!(code, Err(EXIT_USAGE));
        assert_eq!(err, "adapter-x: unknown mcp subcommand \"add\"\n");
        let command = OAuthCommand::front_end("adapter-x", OAuthOptions::default());
        assert_eq!(command.prefix, "adapter-x: ");
        assert!(command.config_flags && command.servers.is_empty());
    }
}
