//! A session's `mcpServers` (`session/new`, `session/load`) as the MCP manager's server
//! configurations: stdio `{name, command, args, env}`, `http` `{name, url, headers}` (what
//! `initialize` advertises), and `sse`, which is passed on and reported as failed (the
//! client skips it: `mcpCapabilities.sse` is false). Invalid entries (an empty or repeated
//! name, a URL that is not http(s), a reserved header) are a [`ConfigError`] naming the
//! server; nothing is started then.

use agent_client_protocol::v1::schema::{EnvVariable, HttpHeader, McpServer};
use agent_mcp::{ConfigError, McpServerConfig, McpTransport, SecretMap};

fn pairs<'a>(items: impl Iterator<Item = (&'a str, &'a str)>) -> SecretMap {
    let mut map = SecretMap::default();
    for (name, value) in items {
        map.insert(name, value);
    }
    map
}

fn headers(list: &[HttpHeader]) -> SecretMap {
    pairs(list.iter().map(|h| (h.name.as_str(), h.value.as_str())))
}

fn env(list: &[EnvVariable]) -> SecretMap {
    pairs(list.iter().map(|v| (v.name.as_str(), v.value.as_str())))
}

/// The configuration of one ACP server entry.
pub fn mcp_server(server: &McpServer) -> Result<McpServerConfig, ConfigError> {
    let (name, transport) = match server {
        McpServer::Stdio(s) => (
            &s.name,
            McpTransport::Stdio {
                command: s.command.to_string_lossy().into_owned(),
                args: s.args.clone(),
                env: env(&s.env),
                cwd: None,
                sandbox: None,
            },
        ),
        McpServer::Http(s) => (
            &s.name,
            McpTransport::Http {
                url: s.url.clone(),
                headers: headers(&s.headers),
                // ACP has no OAuth settings; a server that asks is authorized all the same.
                oauth: None,
            },
        ),
        McpServer::Sse(s) => (
            &s.name,
            McpTransport::Sse {
                url: s.url.clone(),
                headers: headers(&s.headers),
            },
        ),
        other => {
            return Err(ConfigError::UnsupportedType {
                server: String::new(),
                kind: format!("{other:?}"),
            })
        }
    };
    let config = McpServerConfig {
        name: name.clone(),
        transport,
    };
    config.validate()?;
    Ok(config)
}

/// The configurations of a session's server list, in order; names must be unique.
pub fn mcp_servers(servers: &[McpServer]) -> Result<Vec<McpServerConfig>, ConfigError> {
    let mut out: Vec<McpServerConfig> = Vec::with_capacity(servers.len());
    for server in servers {
        let config = mcp_server(server)?;
        if out.iter().any(|c| c.name == config.name) {
            return Err(ConfigError::DuplicateName {
                name: config.name,
                context: Some("mcpServers".to_string()),
            });
        }
        out.push(config);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_mcp::TransportKind;
    use serde_json::json;

    fn parse(value: serde_json::Value) -> Vec<McpServer> {
        serde_json::from_value(value).unwrap_or_default()
    }

    #[test]
    fn stdio_and_http_entries_become_configs() {
        let servers = parse(json!([
            {"name": "files", "command": "/usr/bin/node", "args": ["server.js", "."],
             "env": [{"name": "TOKEN", "value": "s3cret"}]},
            {"type": "http", "name": "docs", "url": "http://127.0.0.1:9/mcp",
             "headers": [{"name": "Authorization", "value": "Bearer s3cret"}]},
            {"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []}
        ]));
        assert_eq!(servers.len(), 3);
        let configs = mcp_servers(&servers).unwrap_or_default();
        let kinds: Vec<(&str, TransportKind)> = configs
            .iter()
            .map(|c| (c.name.as_str(), c.transport.kind()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("files", TransportKind::Stdio),
                ("docs", TransportKind::Http),
                ("old", TransportKind::Sse)
            ]
        );
        match &configs[0].transport {
            McpTransport::Stdio {
                command, args, env, ..
            } => {
                assert_eq!(command, "/usr/bin/node");
                assert_eq!(args, &["server.js", "."]);
                assert_eq!(env.names().collect::<Vec<_>>(), ["TOKEN"]);
            }
            other => panic!("{other:?}"),
        }
        // Secrets stay out of Debug output.
        assert!(!format!("{configs:?}").contains("s3cret"));
    }

    #[test]
    fn invalid_lists_name_the_server() {
        let twice = parse(json!([
            {"name": "a", "command": "/bin/a", "args": [], "env": []},
            {"name": "a", "command": "/bin/b", "args": [], "env": []}
        ]));
        let err = mcp_servers(&twice)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("\"a\" is defined twice"), "{err}");
        let bad_url = parse(json!([
            {"type": "http", "name": "web", "url": "ftp://example.com", "headers": []}
        ]));
        let err = mcp_servers(&bad_url)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("\"web\"") && err.contains("url"), "{err}");
        let unnamed = parse(json!([{"name": "", "command": "/bin/a", "args": [], "env": []}]));
        assert!(mcp_servers(&unnamed).is_err());
        assert!(mcp_servers(&[]).is_ok_and(|c| c.is_empty()));
    }
}
