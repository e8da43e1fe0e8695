//! Server configuration, and the shapes each host writes it in.
//!
//! [`McpServerConfig`] is what the manager connects. Hosts describe servers in their own
//! formats, and each deserializes straight into these types:
//!
//! - ACP `session/new` / `session/load` `mcpServers`: an array of named entries, stdio
//!   `{name, command, args, env: [{name, value}]}` or `{type: "http", name, url,
//!   headers: [{name, value}]}` → `Vec<McpServerConfig>` or [`McpServers`].
//! - Claude Code / Cursor / Claude Desktop `{"mcpServers": {name: {command, args, env} |
//!   {type: "http", url, headers}}}` → [`McpConfigFile`] ([`parse_mcp_config_file`]); the
//!   map alone (ZCode's `mcpServers` on `session/create`) → [`McpServers`], which takes the
//!   ACP array too.
//! - Zero's `config.json` (`mcp.servers`, also `mcpServers` / `mcp_servers`, with
//!   `disabled`) → [`ZeroMcpConfig`] ([`parse_zero_config`]), which merges a user and a
//!   project layer the way Zero does.
//!
//! An invalid entry is a [`ConfigError`] naming the server and what is wrong. Unknown
//! fields are ignored, so host extensions (`_meta`, `autoApprove`, `timeout`) pass.
//!
//! # The OS sandbox of a stdio server (our extension)
//!
//! A stdio entry in any of these shapes may carry `"sandbox"`: `"off"` (the default: the
//! server runs with the user's rights), `"read-only"` or `"workspace-write"`, and
//! `"sandboxNetwork"`: `"deny"` (the default in the confining modes) or `"allow"`. A
//! confined server is set up as the `bash` tool's commands are (Landlock and seccomp, see
//! `agent-sandbox`), with its working directory as the workspace: in `workspace-write` it
//! writes only under that directory and a private `$TMPDIR`, in `read-only` only under the
//! temp dir. A server that needs the network (a remote API, `npx` fetching a package) needs
//! `"sandboxNetwork": "allow"`. Where the kernel cannot enforce it, the server runs with
//! what the kernel does enforce and a warning is logged. [`crate::McpOptions::sandbox`] sets
//! a policy for the stdio servers that have none of their own.
//!
//! ```
//! use agent_core::sandbox::{NetworkAccess, SandboxMode};
//! use agent_mcp::McpTransport;
//!
//! let servers = agent_mcp::parse_mcp_config_file(r#"{"mcpServers": {
//!     "files": {"command": "mcp-files", "cwd": "/srv/project", "sandbox": "workspace-write"},
//!     "search": {"command": "mcp-search", "sandbox": "read-only", "sandboxNetwork": "allow"}
//! }}"#).unwrap();
//! let McpTransport::Stdio { sandbox: Some(files), .. } = &servers[0].transport else { panic!() };
//! assert_eq!((files.mode, files.network), (SandboxMode::WorkspaceWrite, NetworkAccess::Deny));
//! let McpTransport::Stdio { sandbox: Some(search), .. } = &servers[1].transport else { panic!() };
//! assert_eq!((search.mode, search.network), (SandboxMode::ReadOnly, NetworkAccess::Allow));
//! assert!(agent_mcp::parse_mcp_config_file(
//!     r#"{"mcpServers": {"x": {"command": "x", "sandbox": "everything"}}}"#
//! ).is_err());
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use agent_core::sandbox::{NetworkAccess, SandboxMode, SandboxPolicy};
use secrecy::{ExposeSecret, SecretString};

use crate::oauth::OAuthConfig;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};

mod entry;
mod hosts;
mod transport;

pub use entry::McpServerEntry;
pub use hosts::{
    parse_mcp_config_file, parse_zero_config, McpConfigFile, McpServers, ZeroMcpConfig,
};
pub(crate) use transport::url_secrets;
pub use transport::{redact_url, McpTransport, SecretMap, TransportKind};

/// Headers a configuration may not set: the transport owns them.
const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// Longest server name accepted.
pub const MAX_SERVER_NAME_LEN: usize = 128;

/// One MCP server: a unique name and how to reach it.
///
/// ```
/// use agent_mcp::McpServerConfig;
///
/// let files = McpServerConfig::stdio("files", "npx")
///     .args(["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]);
/// let remote = McpServerConfig::http("docs", "https://example.com/mcp")
///     .header("Authorization", "Bearer secret-token");
/// assert!(files.validate().is_ok() && remote.validate().is_ok());
/// assert!(!format!("{remote:?}").contains("secret-token"));
/// ```
///
/// It deserializes from one ACP-style entry (`{name, command, args, env}` or
/// `{type: "http", name, url, headers}`); see the [module docs](crate::config) for the
/// other host shapes.
#[derive(Debug, Clone)]
pub struct McpServerConfig {
    /// Unique name; its tools are offered as `mcp_<name>_<tool>`.
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
}

impl McpServerConfig {
    /// A stdio server running `command`.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            transport: McpTransport::Stdio {
                command: command.into(),
                args: Vec::new(),
                env: SecretMap::default(),
                cwd: None,
                sandbox: None,
            },
        }
    }

    /// A streamable-HTTP server at `url`.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            transport: McpTransport::Http {
                url: url.into(),
                headers: SecretMap::default(),
                oauth: None,
            },
        }
    }

    /// Adds an argument (stdio only; ignored otherwise).
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        if let McpTransport::Stdio { args, .. } = &mut self.transport {
            args.push(arg.into());
        }
        self
    }

    /// Adds arguments (stdio only; ignored otherwise).
    pub fn args<I, S>(mut self, more: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        if let McpTransport::Stdio { args, .. } = &mut self.transport {
            args.extend(more.into_iter().map(Into::into));
        }
        self
    }

    /// Sets an environment variable (stdio only; ignored otherwise).
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Stdio { env, .. } = &mut self.transport {
            env.insert(name, value);
        }
        self
    }

    /// Sets the working directory (stdio only; ignored otherwise).
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        if let McpTransport::Stdio { cwd, .. } = &mut self.transport {
            *cwd = Some(dir.into());
        }
        self
    }

    /// Sets the OS sandbox policy of the server process (stdio only; ignored otherwise).
    /// Its working directory is the workspace of a `workspace-write` policy.
    pub fn sandbox(mut self, policy: SandboxPolicy) -> Self {
        if let McpTransport::Stdio { sandbox, .. } = &mut self.transport {
            *sandbox = Some(policy);
        }
        self
    }

    /// Sets a header (HTTP only; ignored otherwise).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Http { headers, .. } | McpTransport::Sse { headers, .. } =
            &mut self.transport
        {
            headers.insert(name, value);
        }
        self
    }

    /// Declares the server as an OAuth one with `oauth`'s client settings (HTTP only;
    /// ignored otherwise). See [`crate::oauth`].
    pub fn oauth(mut self, oauth: OAuthConfig) -> Self {
        if let McpTransport::Http { oauth: own, .. } = &mut self.transport {
            *own = Some(oauth);
        }
        self
    }

    /// Checks the name, the command or URL, environment names and headers.
    pub fn validate(&self) -> Result<(), ConfigError> {
        validate_name(&self.name)?;
        let server = &self.name;
        match &self.transport {
            McpTransport::Stdio { command, env, .. } => {
                if command.trim().is_empty() {
                    return Err(ConfigError::MissingField {
                        server: server.clone(),
                        field: "command",
                        transport: TransportKind::Stdio,
                    });
                }
                if command.contains('\0') {
                    return Err(invalid(server, "command", "contains a NUL byte"));
                }
                for (name, value) in &env.0 {
                    if name.is_empty() || name.contains(['=', '\0']) {
                        return Err(invalid(
                            server,
                            "env",
                            format!("invalid variable name {name:?}"),
                        ));
                    }
                    if value.expose_secret().contains('\0') {
                        return Err(invalid(
                            server,
                            "env",
                            format!("the value of {name} contains a NUL byte"),
                        ));
                    }
                }
            }
            McpTransport::Http { url, headers, .. } | McpTransport::Sse { url, headers } => {
                validate_url(server, url)?;
                if let McpTransport::Http {
                    oauth: Some(oauth), ..
                } = &self.transport
                {
                    if headers
                        .names()
                        .any(|h| h.eq_ignore_ascii_case("authorization"))
                    {
                        return Err(invalid(
                            server,
                            "oauth",
                            "a server with its own Authorization header cannot use OAuth",
                        ));
                    }
                    for (field, url) in [
                        ("oauth.clientMetadataUrl", &oauth.client_metadata_url),
                        ("oauth.authorizationEndpoint", &oauth.authorization_endpoint),
                        ("oauth.tokenEndpoint", &oauth.token_endpoint),
                        ("oauth.registrationEndpoint", &oauth.registration_endpoint),
                        ("oauth.issuerURL", &oauth.issuer_url),
                    ] {
                        if let Some(url) = url {
                            if url::Url::parse(url).is_err() {
                                return Err(invalid(
                                    server,
                                    field,
                                    format!("{url:?} is not a URL"),
                                ));
                            }
                        }
                    }
                    if oauth.client_secret.is_some() && oauth.client_id.is_none() {
                        return Err(invalid(
                            server,
                            "oauth.clientSecret",
                            "needs oauth.clientId beside it",
                        ));
                    }
                }
                for (name, value) in &headers.0 {
                    let lower = name.to_ascii_lowercase();
                    if RESERVED_HEADERS.contains(&lower.as_str()) {
                        return Err(invalid(
                            server,
                            "headers",
                            format!("{name} is set by the transport and cannot be configured"),
                        ));
                    }
                    if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                        return Err(invalid(
                            server,
                            "headers",
                            format!("invalid header name {name:?}"),
                        ));
                    }
                    if http::HeaderValue::from_str(value.expose_secret()).is_err() {
                        return Err(invalid(
                            server,
                            "headers",
                            format!("the value of {name} is not a valid header value"),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for McpServerConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let entry = McpServerEntry::deserialize(deserializer)?;
        let name = entry
            .name
            .clone()
            .ok_or_else(|| D::Error::custom(ConfigError::MissingName { index: None }))?;
        match entry.into_config(&name) {
            Ok(Some(config)) => Ok(config),
            Ok(None) => Err(D::Error::custom(format!(
                "MCP server {name:?} is disabled; a list entry cannot be"
            ))),
            Err(err) => Err(D::Error::custom(err)),
        }
    }
}

/// What is wrong with a configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The text is not JSON of the expected shape.
    #[error("invalid MCP configuration at {path}: {message}")]
    Shape {
        /// Where in the document (`mcpServers.github.args`), or `.` for the root.
        path: String,
        /// What the parser expected.
        message: String,
    },
    /// A list entry has no name.
    #[error("MCP server entry{} has no name", match .index { Some(i) => format!(" {i}"), None => String::new() })]
    MissingName {
        /// Position in the list, when known.
        index: Option<usize>,
    },
    /// A server name is empty, too long or has control characters.
    #[error("invalid MCP server name {name:?}: {reason}")]
    InvalidName {
        /// The name.
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// Two servers have the same name.
    #[error("MCP server {name:?} is defined twice{}", .context.as_deref().map(|c| format!(" ({c})")).unwrap_or_default())]
    DuplicateName {
        /// The name.
        name: String,
        /// Where, when it helps (Zero's `mcpServers` and `mcp_servers`).
        context: Option<String>,
    },
    /// The `type` is not one of `stdio`, `http`, `sse`.
    #[error("MCP server {server:?} has unsupported type {kind:?} (expected stdio, http or sse)")]
    UnsupportedType {
        /// The server.
        server: String,
        /// The type given.
        kind: String,
    },
    /// A field the transport needs is missing.
    #[error("MCP server {server:?} requires {field} for the {transport} transport")]
    MissingField {
        /// The server.
        server: String,
        /// The field (`command`, `url`).
        field: &'static str,
        /// The transport.
        transport: TransportKind,
    },
    /// A field does not belong to the server's transport.
    #[error("MCP server {server:?}: {field} is not supported for the {transport} transport")]
    FieldNotAllowed {
        /// The server.
        server: String,
        /// The field.
        field: &'static str,
        /// The transport.
        transport: TransportKind,
    },
    /// A field has a value that cannot work.
    #[error("MCP server {server:?}: invalid {field}: {reason}")]
    InvalidField {
        /// The server.
        server: String,
        /// The field.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// A project configuration points a user's server elsewhere while inheriting the
    /// user's credentials.
    #[error("project MCP server {server:?} cannot change the command or url while inheriting the user's env or headers; set them explicitly or use a new server name")]
    InheritedCredentials {
        /// The server.
        server: String,
    },
}

fn invalid(server: &str, field: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError::InvalidField {
        server: server.to_string(),
        field,
        reason: reason.into(),
    }
}

fn validate_name(name: &str) -> Result<(), ConfigError> {
    let reason = if name.trim().is_empty() {
        "it is empty"
    } else if name.len() > MAX_SERVER_NAME_LEN {
        "it is longer than 128 bytes"
    } else if name.chars().any(char::is_control) {
        "it contains control characters"
    } else {
        return Ok(());
    };
    Err(ConfigError::InvalidName {
        name: name.to_string(),
        reason,
    })
}

fn validate_url(server: &str, url: &str) -> Result<(), ConfigError> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    let Some(rest) = rest else {
        return Err(invalid(server, "url", "must be an http or https URL"));
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit('@').next().unwrap_or_default();
    if host.is_empty() || host.starts_with(':') {
        return Err(invalid(server, "url", "has no host"));
    }
    if url.parse::<http::Uri>().is_err() {
        return Err(invalid(server, "url", "is not a valid URI"));
    }
    Ok(())
}
