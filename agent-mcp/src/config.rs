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
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};

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

/// How a server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransportKind {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio,
    /// Streamable HTTP.
    Http,
    /// The legacy HTTP+SSE transport (protocol 2024-11-05).
    Sse,
}

impl TransportKind {
    /// The canonical name (`stdio`, `http`, `sse`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Http => "http",
            Self::Sse => "sse",
        }
    }
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Name → secret value pairs (environment variables, HTTP headers). Debug output shows
/// the names only.
#[derive(Clone, Default)]
pub struct SecretMap(pub BTreeMap<String, SecretString>);

impl SecretMap {
    /// Whether there is no entry.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// Sets `name` to `value`.
    pub fn insert(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.0.insert(name.into(), SecretString::from(value.into()));
    }
}

impl fmt::Debug for SecretMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|k| (k, "[REDACTED]")))
            .finish()
    }
}

impl<'de> Deserialize<'de> for SecretMap {
    /// A `{name: value}` map or an ACP-style `[{name, value}]` list (later entries win);
    /// `null` is empty.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct NameValue {
            name: String,
            value: String,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Shape {
            Map(BTreeMap<String, String>),
            List(Vec<NameValue>),
            Null(()),
        }
        let pairs: Vec<(String, String)> = match Shape::deserialize(deserializer).map_err(|_| {
            D::Error::custom("expected a {name: value} map or a [{name, value}] list of strings")
        })? {
            Shape::Map(map) => map.into_iter().collect(),
            Shape::List(list) => list.into_iter().map(|nv| (nv.name, nv.value)).collect(),
            Shape::Null(()) => Vec::new(),
        };
        let mut map = SecretMap::default();
        for (name, value) in pairs {
            map.insert(name, value);
        }
        Ok(map)
    }
}

/// How to reach one server. Debug output hides environment and header values and the
/// credentials and query of URLs.
#[derive(Clone)]
pub enum McpTransport {
    /// A child process speaking MCP on its stdin and stdout. It inherits this process's
    /// environment plus `env`, runs in its own process group and is killed with it.
    Stdio {
        /// The program (looked up in `PATH` when it has no slash).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: SecretMap,
        /// Working directory (default: the manager's, usually the workspace).
        cwd: Option<PathBuf>,
        /// The OS sandbox the server runs under, its working directory as the workspace
        /// (`None`: [`crate::McpOptions::sandbox`], which is off by default).
        sandbox: Option<SandboxPolicy>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint, `http` or `https`.
        url: String,
        /// Headers sent with every request (for example `Authorization`).
        headers: SecretMap,
    },
    /// The legacy HTTP+SSE transport. Accepted in configuration so that hosts' files
    /// parse, but not supported: connecting reports the server as failed.
    Sse {
        /// The SSE endpoint.
        url: String,
        /// Headers sent with every request.
        headers: SecretMap,
    },
}

impl fmt::Debug for McpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdio {
                command,
                args,
                env,
                cwd,
                sandbox,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", env)
                .field("cwd", cwd)
                .field("sandbox", sandbox)
                .finish(),
            Self::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", &redact_url(url))
                .field("headers", headers)
                .finish(),
            Self::Sse { url, headers } => f
                .debug_struct("Sse")
                .field("url", &redact_url(url))
                .field("headers", headers)
                .finish(),
        }
    }
}

/// `url` without user credentials, query or fragment values (for display).
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (authority, path) = match rest.find(['/', '?', '#']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((_, host)) => format!("[REDACTED]@{host}"),
        None => authority.to_string(),
    };
    let path = match path.find(['?', '#']) {
        Some(i) => format!("{}{}[REDACTED]", &path[..i], &path[i..=i]),
        None => path.to_string(),
    };
    match scheme.is_empty() {
        true => format!("{authority}{path}"),
        false => format!("{scheme}://{authority}{path}"),
    }
}

/// The secret parts of a URL: the password of its user info and the values of query
/// parameters with sensitive names (`key`, `token`, `api_key`, …).
pub(crate) fn url_secrets(url: &str) -> Vec<String> {
    let mut secrets = Vec::new();
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if let Some((userinfo, _)) = authority.rsplit_once('@') {
        if let Some((_, password)) = userinfo.split_once(':') {
            secrets.push(password.to_string());
        }
    }
    if let Some((_, query)) = rest.split_once('?') {
        let query = query.split('#').next().unwrap_or_default();
        for pair in query.split('&') {
            if let Some((key, value)) = pair.split_once('=') {
                if key.eq_ignore_ascii_case("key") || agent_core::secrets::is_sensitive_name(key) {
                    secrets.push(value.to_string());
                }
            }
        }
    }
    secrets
}

impl McpTransport {
    /// Which transport this is.
    pub fn kind(&self) -> TransportKind {
        match self {
            Self::Stdio { .. } => TransportKind::Stdio,
            Self::Http { .. } => TransportKind::Http,
            Self::Sse { .. } => TransportKind::Sse,
        }
    }
}

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
            McpTransport::Http { url, headers } | McpTransport::Sse { url, headers } => {
                validate_url(server, url)?;
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

/// One server as configuration files and protocol messages write it: every field
/// optional, validated by [`McpServerEntry::into_config`].
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerEntry {
    /// The name (required in lists; map entries take the key).
    #[serde(default)]
    pub name: Option<String>,
    /// `stdio`, `http` (also `streamable-http`, `streamableHttp`) or `sse`; inferred from
    /// `url` (http) or `command` (stdio) when absent.
    #[serde(default, rename = "type", alias = "transport")]
    pub kind: Option<String>,
    /// Program of a stdio server.
    #[serde(default)]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, deserialize_with = "null_as_none")]
    pub args: Option<Vec<String>>,
    /// Its extra environment.
    #[serde(default)]
    pub env: Option<SecretMap>,
    /// Its working directory.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// Endpoint of an HTTP server.
    #[serde(default)]
    pub url: Option<String>,
    /// Its headers.
    #[serde(default)]
    pub headers: Option<SecretMap>,
    /// Skip this server (Zero, Claude Desktop).
    #[serde(default, deserialize_with = "null_as_none")]
    pub disabled: Option<bool>,
    /// The OS sandbox of a stdio server, our extension: `off`, `read-only` or
    /// `workspace-write` (see the [module docs](crate::config)).
    #[serde(default, deserialize_with = "null_as_none")]
    pub sandbox: Option<String>,
    /// Whether a confined stdio server may use the network: `deny` (default) or `allow`.
    #[serde(default, deserialize_with = "null_as_none")]
    pub sandbox_network: Option<String>,
}

fn null_as_none<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer)
}

impl McpServerEntry {
    /// The server this entry describes, named `name`; `None` when it is disabled.
    pub fn into_config(self, name: &str) -> Result<Option<McpServerConfig>, ConfigError> {
        validate_name(name)?;
        if self.disabled == Some(true) {
            return Ok(None);
        }
        let server = name.to_string();
        let command = self.command.filter(|c| !c.trim().is_empty());
        let url = self
            .url
            .map(|u| u.trim().to_string())
            .filter(|u| !u.is_empty());
        let kind = match self.kind.as_deref().map(str::trim) {
            None | Some("") if url.is_some() => TransportKind::Http,
            None | Some("") => TransportKind::Stdio,
            Some(kind) => match kind.to_ascii_lowercase().as_str() {
                "stdio" => TransportKind::Stdio,
                "http" | "streamable-http" | "streamable_http" | "streamablehttp" => {
                    TransportKind::Http
                }
                "sse" => TransportKind::Sse,
                _ => {
                    return Err(ConfigError::UnsupportedType {
                        server,
                        kind: kind.to_string(),
                    })
                }
            },
        };
        let not_allowed = |field| ConfigError::FieldNotAllowed {
            server: server.clone(),
            field,
            transport: kind,
        };
        let transport = match kind {
            TransportKind::Stdio => {
                if url.is_some() {
                    return Err(not_allowed("url"));
                }
                if self.headers.as_ref().is_some_and(|h| !h.is_empty()) {
                    return Err(not_allowed("headers"));
                }
                let Some(command) = command else {
                    return Err(ConfigError::MissingField {
                        server,
                        field: "command",
                        transport: kind,
                    });
                };
                let sandbox = sandbox_policy(
                    &server,
                    self.sandbox.as_deref(),
                    self.sandbox_network.as_deref(),
                )?;
                McpTransport::Stdio {
                    command: command.trim().to_string(),
                    args: self.args.unwrap_or_default(),
                    env: self.env.unwrap_or_default(),
                    cwd: self.cwd,
                    sandbox,
                }
            }
            TransportKind::Http | TransportKind::Sse => {
                if command.is_some() {
                    return Err(not_allowed("command"));
                }
                if self.args.as_ref().is_some_and(|a| !a.is_empty()) {
                    return Err(not_allowed("args"));
                }
                if self.env.as_ref().is_some_and(|e| !e.is_empty()) {
                    return Err(not_allowed("env"));
                }
                if self.cwd.is_some() {
                    return Err(not_allowed("cwd"));
                }
                if self.sandbox.is_some() {
                    return Err(not_allowed("sandbox"));
                }
                if self.sandbox_network.is_some() {
                    return Err(not_allowed("sandboxNetwork"));
                }
                let Some(url) = url else {
                    return Err(ConfigError::MissingField {
                        server,
                        field: "url",
                        transport: kind,
                    });
                };
                let headers = self.headers.unwrap_or_default();
                match kind {
                    TransportKind::Http => McpTransport::Http { url, headers },
                    _ => McpTransport::Sse { url, headers },
                }
            }
        };
        let config = McpServerConfig {
            name: name.to_string(),
            transport,
        };
        config.validate()?;
        Ok(Some(config))
    }

    /// Folds a later layer into this one: every field the later layer sets replaces
    /// this one's (Zero's rule for its user, project and flag layers).
    fn merge(&mut self, next: McpServerEntry) {
        let McpServerEntry {
            name: _,
            kind,
            command,
            args,
            env,
            cwd,
            url,
            headers,
            disabled,
            sandbox,
            sandbox_network,
        } = next;
        if kind.as_deref().is_some_and(|k| !k.trim().is_empty()) {
            self.kind = kind;
        }
        if command.as_deref().is_some_and(|c| !c.trim().is_empty()) {
            self.command = command;
        }
        if args.is_some() {
            self.args = args;
        }
        if env.is_some() {
            self.env = env;
        }
        if cwd.is_some() {
            self.cwd = cwd;
        }
        if url.as_deref().is_some_and(|u| !u.trim().is_empty()) {
            self.url = url;
        }
        if headers.is_some() {
            self.headers = headers;
        }
        if disabled.is_some() {
            self.disabled = disabled;
        }
        if sandbox.is_some() {
            self.sandbox = sandbox;
        }
        if sandbox_network.is_some() {
            self.sandbox_network = sandbox_network;
        }
    }
}

/// The sandbox policy of a stdio entry's `sandbox` and `sandboxNetwork` values (`None`
/// when neither is set).
fn sandbox_policy(
    server: &str,
    mode: Option<&str>,
    network: Option<&str>,
) -> Result<Option<SandboxPolicy>, ConfigError> {
    if mode.is_none() && network.is_none() {
        return Ok(None);
    }
    let Some(mode) = mode.map(str::trim) else {
        return Err(invalid(
            server,
            "sandboxNetwork",
            "needs `sandbox` (read-only or workspace-write) beside it",
        ));
    };
    let mode = mode.parse::<SandboxMode>().map_err(|_| {
        invalid(
            server,
            "sandbox",
            format!("{mode:?} is not one of off, read-only, workspace-write"),
        )
    })?;
    let mut policy = SandboxPolicy::new(mode);
    if let Some(network) = network.map(str::trim) {
        policy.network = network.parse::<NetworkAccess>().map_err(|_| {
            invalid(
                server,
                "sandboxNetwork",
                format!("{network:?} is not one of allow, deny"),
            )
        })?;
    }
    Ok(Some(policy))
}

/// A list of servers the way hosts pass them: ACP's array of named entries, or a
/// `{name: entry}` map (Claude, Cursor, ZCode), in the order given. Disabled entries are
/// dropped; names are unique.
#[derive(Debug, Clone, Default)]
pub struct McpServers(pub Vec<McpServerConfig>);

impl McpServers {
    /// Parses a JSON value of either shape, with a typed error.
    pub fn from_value(value: serde_json::Value) -> Result<Self, ConfigError> {
        let raw: RawServers = from_value_with_path(value)?;
        raw.into_servers()
    }
}

impl<'de> Deserialize<'de> for McpServers {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        RawServers::deserialize(deserializer)?
            .into_servers()
            .map_err(D::Error::custom)
    }
}

impl From<McpServers> for Vec<McpServerConfig> {
    fn from(servers: McpServers) -> Self {
        servers.0
    }
}

/// Either server shape, before validation: list entries carry their name, map entries
/// take the key. `null` is empty.
enum RawServers {
    List(Vec<McpServerEntry>),
    Map(Vec<(String, McpServerEntry)>),
}

impl Default for RawServers {
    fn default() -> Self {
        RawServers::Map(Vec::new())
    }
}

impl<'de> Deserialize<'de> for RawServers {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Shape;

        impl<'de> serde::de::Visitor<'de> for Shape {
            type Value = RawServers;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of named MCP servers or a {name: server} map")
            }

            fn visit_unit<E: serde::de::Error>(self) -> Result<RawServers, E> {
                Ok(RawServers::default())
            }

            fn visit_none<E: serde::de::Error>(self) -> Result<RawServers, E> {
                Ok(RawServers::default())
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<RawServers, A::Error> {
                let mut list = Vec::new();
                while let Some(entry) = seq.next_element::<McpServerEntry>()? {
                    list.push(entry);
                }
                Ok(RawServers::List(list))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<RawServers, A::Error> {
                let mut entries = Vec::new();
                while let Some((name, entry)) = map.next_entry::<String, McpServerEntry>()? {
                    entries.push((name, entry));
                }
                Ok(RawServers::Map(entries))
            }
        }

        deserializer.deserialize_any(Shape)
    }
}

impl RawServers {
    fn into_servers(self) -> Result<McpServers, ConfigError> {
        let named: Vec<(String, McpServerEntry)> = match self {
            RawServers::List(list) => list
                .into_iter()
                .enumerate()
                .map(|(i, entry)| match entry.name.clone() {
                    Some(name) => Ok((name, entry)),
                    None => Err(ConfigError::MissingName { index: Some(i) }),
                })
                .collect::<Result<_, _>>()?,
            RawServers::Map(entries) => entries,
        };
        let mut seen: Vec<&str> = Vec::with_capacity(named.len());
        for (name, _) in &named {
            if seen.contains(&name.as_str()) {
                return Err(ConfigError::DuplicateName {
                    name: name.clone(),
                    context: None,
                });
            }
            seen.push(name);
        }
        let mut servers = Vec::with_capacity(named.len());
        for (name, entry) in named {
            if let Some(config) = entry.into_config(&name)? {
                servers.push(config);
            }
        }
        Ok(McpServers(servers))
    }

    /// The entries by name, for Zero's layered files (a repeated key is an error).
    fn into_map(self) -> Result<BTreeMap<String, McpServerEntry>, ConfigError> {
        let mut map = BTreeMap::new();
        let entries = match self {
            RawServers::List(list) => list
                .into_iter()
                .enumerate()
                .map(|(i, entry)| match entry.name.clone() {
                    Some(name) => Ok((name, entry)),
                    None => Err(ConfigError::MissingName { index: Some(i) }),
                })
                .collect::<Result<Vec<_>, _>>()?,
            RawServers::Map(entries) => entries,
        };
        for (name, entry) in entries {
            if map.insert(name.clone(), entry).is_some() {
                return Err(ConfigError::DuplicateName {
                    name,
                    context: None,
                });
            }
        }
        Ok(map)
    }
}

/// A Claude Code / Cursor / Claude Desktop MCP file: `{"mcpServers": {name: entry}}`
/// (other keys ignored).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct McpConfigFile {
    /// The servers.
    #[serde(rename = "mcpServers", default)]
    pub mcp_servers: McpServers,
}

/// Parses a Claude-style MCP file (`--mcp-config FILE`).
///
/// ```
/// let servers = agent_mcp::parse_mcp_config_file(r#"{"mcpServers": {
///     "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]},
///     "docs": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer t"}}
/// }}"#).unwrap();
/// let names: Vec<_> = servers.iter().map(|s| s.name.as_str()).collect();
/// assert_eq!(names, ["files", "docs"]); // in the file's order
/// ```
pub fn parse_mcp_config_file(text: &str) -> Result<Vec<McpServerConfig>, ConfigError> {
    #[derive(Deserialize)]
    struct Raw {
        #[serde(rename = "mcpServers", default)]
        mcp_servers: RawServers,
    }
    let raw: Raw = from_str_with_path(text)?;
    Ok(raw.mcp_servers.into_servers()?.0)
}

/// The MCP part of one Zero `config.json` layer: `mcp.servers`, plus the `mcpServers` and
/// `mcp_servers` aliases (a name in both aliases is an error, as in Zero).
///
/// Zero reads the user file (`$XDG_CONFIG_HOME/zero/config.json`) and, in a trusted
/// workspace, the project file (`.zero/config.json`); fold the project layer in with
/// [`ZeroMcpConfig::merge_project`], then take [`ZeroMcpConfig::into_servers`].
#[derive(Debug, Clone, Default)]
pub struct ZeroMcpConfig {
    /// Server entries by name, disabled ones included (a later layer may override them).
    pub servers: BTreeMap<String, McpServerEntry>,
}

/// Parses the MCP part of a Zero `config.json` layer.
///
/// ```
/// let layer = agent_mcp::parse_zero_config(r#"{
///     "activeProvider": "openai",
///     "mcp": {"servers": {"files": {"command": "mcp-files"}}},
///     "mcpServers": {"old": {"command": "mcp-old", "disabled": true}}
/// }"#).unwrap();
/// let servers = layer.into_servers().unwrap();
/// assert_eq!(servers.len(), 1);
/// assert_eq!(servers[0].name, "files");
/// ```
pub fn parse_zero_config(text: &str) -> Result<ZeroMcpConfig, ConfigError> {
    #[derive(Deserialize, Default)]
    struct Section {
        #[serde(default)]
        servers: RawServers,
    }
    #[derive(Deserialize)]
    struct Raw {
        #[serde(default)]
        mcp: Option<Section>,
        #[serde(rename = "mcpServers", default)]
        camel: RawServers,
        #[serde(rename = "mcp_servers", default)]
        snake: RawServers,
    }
    let raw: Raw = from_str_with_path(text)?;
    let mut servers = raw.mcp.unwrap_or_default().servers.into_map()?;
    for (name, entry) in raw.camel.into_map()? {
        servers.insert(name, entry);
    }
    for (name, entry) in raw.snake.into_map()? {
        if servers.contains_key(&name) {
            return Err(ConfigError::DuplicateName {
                name,
                context: Some("in both mcpServers and mcp_servers".into()),
            });
        }
        servers.insert(name, entry);
    }
    Ok(ZeroMcpConfig { servers })
}

impl ZeroMcpConfig {
    /// Folds a later layer of the same trust in (a flag or override file): each field it
    /// sets replaces the earlier one's.
    pub fn merge(&mut self, next: ZeroMcpConfig) {
        for (name, entry) in next.servers {
            self.servers.entry(name).or_default().merge(entry);
        }
    }

    /// Folds in a project layer, which has less trust than the user's: it cannot flip a
    /// server the user explicitly disabled or enabled, nor change the sandbox the user set
    /// for it, and it cannot point a user's server
    /// at another command or URL while inheriting the user's env or headers.
    pub fn merge_project(&mut self, project: ZeroMcpConfig) -> Result<(), ConfigError> {
        for (name, mut entry) in project.servers {
            let base = self.servers.entry(name.clone()).or_default();
            let retargets = (entry
                .command
                .as_deref()
                .is_some_and(|c| !c.trim().is_empty())
                && entry.command != base.command)
                || (entry.url.as_deref().is_some_and(|u| !u.trim().is_empty())
                    && entry.url != base.url);
            let inherits = (entry.env.is_none()
                && base.env.as_ref().is_some_and(|e| !e.is_empty()))
                || (entry.headers.is_none()
                    && base.headers.as_ref().is_some_and(|h| !h.is_empty()));
            if retargets && inherits {
                return Err(ConfigError::InheritedCredentials { server: name });
            }
            if base.disabled.is_some() {
                entry.disabled = None;
            }
            // Nor loosen (or change) the sandbox the user gave the server.
            if base.sandbox.is_some() || base.sandbox_network.is_some() {
                entry.sandbox = None;
                entry.sandbox_network = None;
            }
            base.merge(entry);
        }
        Ok(())
    }

    /// The enabled servers, validated, in name order.
    pub fn into_servers(self) -> Result<Vec<McpServerConfig>, ConfigError> {
        let mut out = Vec::with_capacity(self.servers.len());
        for (name, entry) in self.servers {
            if let Some(config) = entry.into_config(&name)? {
                out.push(config);
            }
        }
        Ok(out)
    }
}

fn from_str_with_path<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, ConfigError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut de).map_err(shape_error)?;
    de.end().map_err(|err| ConfigError::Shape {
        path: ".".into(),
        message: err.to_string(),
    })?;
    Ok(value)
}

fn from_value_with_path<T: serde::de::DeserializeOwned>(
    value: serde_json::Value,
) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(shape_error)
}

fn shape_error<E: fmt::Display>(err: serde_path_to_error::Error<E>) -> ConfigError {
    ConfigError::Shape {
        path: err.path().to_string(),
        message: err.inner().to_string(),
    }
}
