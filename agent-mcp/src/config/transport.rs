//! How a server is reached: the transport, its secret maps, and URLs shown without secrets.

use super::*;

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
        /// The server's OAuth client configuration (`"oauth": {…}` or Zero's
        /// `"auth": "oauth"`): its stored token is sent from the first request. Without it a
        /// server that answers `401` is authorized all the same (see [`crate::oauth`]),
        /// unless `headers` has its own `Authorization`.
        oauth: Option<OAuthConfig>,
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
            Self::Http {
                url,
                headers,
                oauth,
            } => f
                .debug_struct("Http")
                .field("url", &redact_url(url))
                .field("headers", headers)
                .field("oauth", oauth)
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
