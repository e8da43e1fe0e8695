//! One server entry as hosts write it, validated into a [`McpServerConfig`].

use super::*;

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
    /// Zero's `"auth": "oauth"`: the HTTP server is authorized with OAuth (the only value).
    #[serde(default, deserialize_with = "null_as_none")]
    pub auth: Option<String>,
    /// The OAuth client of an HTTP server (see [`OAuthConfig`]); present, it declares OAuth
    /// as `"auth": "oauth"` does.
    #[serde(default)]
    pub oauth: Option<OAuthConfig>,
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
                if self.auth.is_some() {
                    return Err(ConfigError::FieldNotAllowed {
                        server,
                        field: "auth",
                        transport: kind,
                    });
                }
                if self.oauth.is_some() {
                    return Err(not_allowed("oauth"));
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
                let oauth = match self.auth.as_deref().map(str::trim) {
                    None | Some("") => self.oauth,
                    Some(auth) if auth.eq_ignore_ascii_case("oauth") => {
                        Some(self.oauth.unwrap_or_default())
                    }
                    Some(other) => {
                        return Err(invalid(
                            &server,
                            "auth",
                            format!("unsupported auth {other:?} (the only one is \"oauth\")"),
                        ))
                    }
                };
                match kind {
                    TransportKind::Http => McpTransport::Http {
                        url,
                        headers,
                        oauth,
                    },
                    _ => {
                        if oauth.is_some() {
                            return Err(not_allowed("oauth"));
                        }
                        McpTransport::Sse { url, headers }
                    }
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
    pub(super) fn merge(&mut self, next: McpServerEntry) {
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
            auth,
            oauth,
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
        if auth.as_deref().is_some_and(|a| !a.trim().is_empty()) {
            self.auth = auth;
        }
        if oauth.is_some() {
            self.oauth = oauth;
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
