//! The hosts' server lists: ACP arrays and `{name: entry}` maps, Claude-style MCP files and
//! Zero's `config.json` layers.

use super::*;

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
    /// at another command or URL while inheriting the user's env, headers or OAuth client
    /// secret.
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
                    && base.headers.as_ref().is_some_and(|h| !h.is_empty()))
                || (entry.oauth.is_none()
                    && base
                        .oauth
                        .as_ref()
                        .is_some_and(|o| o.client_secret.is_some()));
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
