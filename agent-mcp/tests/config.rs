//! Every host's configuration shape deserializes into `McpServerConfig`, and invalid
//! configurations are typed errors naming what is wrong.

use agent_mcp::{
    parse_mcp_config_file, parse_zero_config, ConfigError, McpServerConfig, McpServers,
    McpTransport, TransportKind,
};
use secrecy::ExposeSecret;
use serde_json::json;

fn env_of(config: &McpServerConfig) -> Vec<(String, String)> {
    match &config.transport {
        McpTransport::Stdio { env, .. } => env
            .0
            .iter()
            .map(|(k, v)| (k.clone(), v.expose_secret().to_string()))
            .collect(),
        _ => Vec::new(),
    }
}

fn headers_of(config: &McpServerConfig) -> Vec<(String, String)> {
    match &config.transport {
        McpTransport::Http { headers, .. } | McpTransport::Sse { headers, .. } => headers
            .0
            .iter()
            .map(|(k, v)| (k.clone(), v.expose_secret().to_string()))
            .collect(),
        _ => Vec::new(),
    }
}

#[test]
fn acp_session_new_list_deserializes_straight_into_configs() {
    // The shapes of agent-client-protocol's McpServer (stdio untagged, http/sse tagged).
    let list = json!([
        {"name": "files", "command": "/usr/bin/mcp-files", "args": ["--root", "/w"],
         "env": [{"name": "GITHUB_TOKEN", "value": "ghp_secretvalue123"}, {"name": "MODE", "value": "x"}]},
        {"type": "http", "name": "docs", "url": "https://example.com/mcp",
         "headers": [{"name": "Authorization", "value": "Bearer abc12345678"}], "_meta": {"k": 1}},
        {"type": "sse", "name": "legacy", "url": "http://127.0.0.1:9/sse", "headers": []}
    ]);
    let configs: Vec<McpServerConfig> = serde_json::from_value(list.clone()).unwrap();
    assert_eq!(configs.len(), 3);
    match &configs[0].transport {
        McpTransport::Stdio { command, args, .. } => {
            assert_eq!(command, "/usr/bin/mcp-files");
            assert_eq!(args, &["--root", "/w"]);
        }
        other => panic!("expected stdio, got {other:?}"),
    }
    assert_eq!(
        env_of(&configs[0]),
        [
            ("GITHUB_TOKEN".to_string(), "ghp_secretvalue123".to_string()),
            ("MODE".to_string(), "x".to_string())
        ]
    );
    assert_eq!(configs[1].transport.kind(), TransportKind::Http);
    assert_eq!(
        headers_of(&configs[1]),
        [(
            "Authorization".to_string(),
            "Bearer abc12345678".to_string()
        )]
    );
    assert_eq!(configs[2].transport.kind(), TransportKind::Sse);
    // Debug output never carries the values.
    let debug = format!("{configs:?}");
    assert!(debug.contains("GITHUB_TOKEN") && !debug.contains("ghp_secretvalue123"));
    assert!(!debug.contains("abc12345678"));
    // The same list through McpServers.
    let servers = McpServers::from_value(list).unwrap();
    assert_eq!(servers.0.len(), 3);
}

#[test]
fn claude_and_cursor_maps_deserialize() {
    let map = json!({
        "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                   "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "tok"}},
        "remote": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"X-Api-Key": "k"}},
        "cursor-style": {"url": "http://localhost:8000/mcp"},
        "off": {"command": "x", "disabled": true}
    });
    let servers: McpServers = serde_json::from_value(map).unwrap();
    // A json! map's order depends on serde_json's preserve_order feature; sort.
    let mut names: Vec<_> = servers.0.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["cursor-style", "github", "remote"]);
    let kind = |name: &str| {
        servers
            .0
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.transport.kind())
    };
    assert_eq!(kind("cursor-style"), Some(TransportKind::Http));
    assert_eq!(kind("github"), Some(TransportKind::Stdio));
    // Parsed from text, the file's order is kept.
    let ordered = parse_mcp_config_file(
        r#"{"mcpServers": {"z": {"command": "a"}, "a": {"command": "b"}, "m": {"url": "http://h/mcp"}}}"#,
    )
    .unwrap();
    let ordered: Vec<_> = ordered.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(ordered, ["z", "a", "m"]);

    let file = parse_mcp_config_file(
        r#"{"mcpServers": {"a": {"command": "mcp-a", "cwd": "/tmp"}}, "otherKey": 1}"#,
    )
    .unwrap();
    match &file[0].transport {
        McpTransport::Stdio { cwd, .. } => assert_eq!(cwd.as_deref(), Some("/tmp".as_ref())),
        other => panic!("expected stdio, got {other:?}"),
    }
    assert!(parse_mcp_config_file("{}").unwrap().is_empty());
    assert!(parse_mcp_config_file(r#"{"mcpServers": null}"#)
        .unwrap()
        .is_empty());
}

#[test]
fn zero_config_reads_every_alias_and_respects_disabled() {
    let layer = parse_zero_config(
        r#"{
            "activeProvider": "openai",
            "providers": [{"name": "x"}],
            "mcp": {"servers": {"a": {"command": "mcp-a"}, "b": {"command": "mcp-b"}}},
            "mcpServers": {"b": {"command": "mcp-b2"}, "c": {"url": "https://c.example/mcp"}},
            "mcp_servers": {"d": {"command": "mcp-d", "disabled": true}}
        }"#,
    )
    .unwrap();
    let servers = layer.into_servers().unwrap();
    let names: Vec<_> = servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    match &servers[1].transport {
        McpTransport::Stdio { command, .. } => assert_eq!(command, "mcp-b2"),
        other => panic!("expected stdio, got {other:?}"),
    }

    let both = parse_zero_config(
        r#"{"mcpServers": {"x": {"command": "a"}}, "mcp_servers": {"x": {"command": "b"}}}"#,
    );
    assert!(matches!(
        both,
        Err(ConfigError::DuplicateName { ref name, .. }) if name == "x"
    ));
}

#[test]
fn a_project_layer_cannot_override_the_users_decisions() {
    let mut user = parse_zero_config(
        r#"{"mcp": {"servers": {
            "off": {"command": "mcp-off", "disabled": true},
            "gh": {"command": "mcp-gh", "env": {"GITHUB_TOKEN": "user-token-123"}}
        }}}"#,
    )
    .unwrap();
    let project = parse_zero_config(
        r#"{"mcp": {"servers": {
            "off": {"disabled": false},
            "local": {"command": "./tools/mcp"}
        }}}"#,
    )
    .unwrap();
    user.merge_project(project).unwrap();
    let names: Vec<_> = user
        .clone()
        .into_servers()
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names, ["gh", "local"], "the user's disable stands");

    let steal =
        parse_zero_config(r#"{"mcp": {"servers": {"gh": {"command": "./evil"}}}}"#).unwrap();
    assert_eq!(
        user.merge_project(steal),
        Err(ConfigError::InheritedCredentials {
            server: "gh".into()
        })
    );
}

#[test]
fn invalid_configurations_name_the_problem() {
    let cases: Vec<(serde_json::Value, &str)> = vec![
        (json!([{"command": "x"}]), "entry 0 has no name"),
        (
            json!({"a": {"type": "websocket", "url": "ws://x"}}),
            "unsupported type \"websocket\"",
        ),
        (json!({"a": {"args": ["x"]}}), "requires command"),
        (json!({"a": {"type": "http"}}), "requires url"),
        (
            json!({"a": {"url": "ftp://example.com"}}),
            "must be an http or https URL",
        ),
        (
            json!({"a": {"command": "x", "url": "http://h/mcp"}}),
            "command is not supported for the http transport",
        ),
        (
            json!({"a": {"type": "stdio", "command": "x", "url": "http://h/mcp"}}),
            "url is not supported for the stdio transport",
        ),
        (
            json!({"a": {"url": "http://h/mcp", "env": {"K": "V"}}}),
            "env is not supported for the http transport",
        ),
        (
            json!({"a": {"url": "http://h/mcp", "headers": {"Mcp-Session-Id": "1"}}}),
            "set by the transport",
        ),
        (
            json!({"a": {"url": "http://h/mcp", "headers": {"bad header": "1"}}}),
            "invalid header name",
        ),
        (
            json!({"a": {"command": "x", "env": {"A=B": "1"}}}),
            "invalid variable name",
        ),
        (
            json!([{"name": "a", "command": "x"}, {"name": "a", "command": "y"}]),
            "defined twice",
        ),
        (json!({"": {"command": "x"}}), "it is empty"),
        (json!({"a\u{7}": {"command": "x"}}), "control characters"),
    ];
    for (value, expected) in cases {
        let err = McpServers::from_value(value.clone())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(expected),
            "{value}: {err:?} lacks {expected:?}"
        );
        // The serde path gives the same words.
        let serde_err = serde_json::from_value::<McpServers>(value)
            .unwrap_err()
            .to_string();
        assert!(serde_err.contains(expected), "{serde_err:?}");
    }
    // Wrong JSON types name the path.
    let err = parse_mcp_config_file(r#"{"mcpServers": {"a": {"command": "x", "args": "y"}}}"#)
        .unwrap_err();
    match err {
        ConfigError::Shape { path, .. } => assert_eq!(path, "mcpServers.a.args"),
        other => panic!("expected a shape error, got {other:?}"),
    }
    assert!(matches!(
        parse_zero_config("{not json"),
        Err(ConfigError::Shape { .. })
    ));
}

#[test]
fn builders_validate() {
    assert!(McpServerConfig::stdio("ok", "cmd").validate().is_ok());
    assert!(matches!(
        McpServerConfig::stdio("ok", " ").validate(),
        Err(ConfigError::MissingField {
            field: "command",
            ..
        })
    ));
    assert!(matches!(
        McpServerConfig::http("ok", "http://").validate(),
        Err(ConfigError::InvalidField { field: "url", .. })
    ));
}

#[test]
fn urls_are_shown_without_credentials_or_query() {
    assert_eq!(
        agent_mcp::redact_url("https://user:pw@example.com/mcp?key=abc&x=1#frag"),
        "https://[REDACTED]@example.com/mcp?[REDACTED]"
    );
    assert_eq!(
        agent_mcp::redact_url("http://127.0.0.1:8080/mcp"),
        "http://127.0.0.1:8080/mcp"
    );
    let config = McpServerConfig::http("h", "https://example.com/mcp?api_key=very-secret-key");
    assert!(!format!("{config:?}").contains("very-secret-key"));
}

fn sandbox_of(config: &McpServerConfig) -> Option<agent_core::sandbox::SandboxPolicy> {
    match &config.transport {
        McpTransport::Stdio { sandbox, .. } => sandbox.clone(),
        _ => None,
    }
}

#[test]
fn a_stdio_server_may_carry_its_own_sandbox_policy() {
    use agent_core::sandbox::{NetworkAccess, SandboxMode};

    let servers = parse_mcp_config_file(
        r#"{"mcpServers": {
            "plain": {"command": "a"},
            "boxed": {"command": "b", "sandbox": "workspace-write"},
            "online": {"command": "c", "sandbox": "read-only", "sandboxNetwork": "allow"},
            "open": {"command": "d", "sandbox": "off"}
        }}"#,
    )
    .unwrap();
    let policies: Vec<Option<(SandboxMode, NetworkAccess)>> = servers
        .iter()
        .map(|s| sandbox_of(s).map(|p| (p.mode, p.network)))
        .collect();
    assert_eq!(
        policies,
        [
            None,
            Some((SandboxMode::WorkspaceWrite, NetworkAccess::Deny)),
            Some((SandboxMode::ReadOnly, NetworkAccess::Allow)),
            Some((SandboxMode::Off, NetworkAccess::Allow)),
        ]
    );
    // The ACP list shape and Zero's config take it too.
    let list: McpServers =
        serde_json::from_value(json!([{"name": "x", "command": "x", "sandbox": "read-only"}]))
            .unwrap();
    assert_eq!(
        sandbox_of(&list.0[0]).map(|p| p.mode),
        Some(SandboxMode::ReadOnly)
    );
    let zero = parse_zero_config(
        r#"{"mcp": {"servers": {"z": {"command": "z", "sandbox": "workspace-write"}}}}"#,
    )
    .unwrap()
    .into_servers()
    .unwrap();
    assert_eq!(
        sandbox_of(&zero[0]).map(|p| p.mode),
        Some(SandboxMode::WorkspaceWrite)
    );
}

#[test]
fn bad_sandbox_values_are_typed_errors_naming_the_field() {
    let cases = [
        (
            r#"{"mcpServers": {"x": {"command": "x", "sandbox": "everything"}}}"#,
            "sandbox",
        ),
        (
            r#"{"mcpServers": {"x": {"command": "x", "sandbox": "read-only", "sandboxNetwork": "maybe"}}}"#,
            "sandboxNetwork",
        ),
        (
            r#"{"mcpServers": {"x": {"command": "x", "sandboxNetwork": "allow"}}}"#,
            "sandboxNetwork",
        ),
    ];
    for (text, field) in cases {
        match parse_mcp_config_file(text) {
            Err(ConfigError::InvalidField {
                server, field: f, ..
            }) => {
                assert_eq!((server.as_str(), f), ("x", field), "{text}");
            }
            other => panic!("{text}: {other:?}"),
        }
    }
    let http = parse_mcp_config_file(
        r#"{"mcpServers": {"h": {"type": "http", "url": "http://127.0.0.1:9/mcp", "sandbox": "read-only"}}}"#,
    );
    assert!(
        matches!(
            http,
            Err(ConfigError::FieldNotAllowed {
                field: "sandbox",
                ..
            })
        ),
        "{http:?}"
    );
}

#[test]
fn a_project_layer_cannot_change_the_sandbox_the_user_set() {
    use agent_core::sandbox::SandboxMode;

    let mut user = parse_zero_config(
        r#"{"mcp": {"servers": {"fs": {"command": "mcp-fs", "sandbox": "workspace-write"}}}}"#,
    )
    .unwrap();
    let project = parse_zero_config(
        r#"{"mcp": {"servers": {"fs": {"command": "mcp-fs", "sandbox": "off"},
                                "own": {"command": "mcp-own", "sandbox": "read-only"}}}}"#,
    )
    .unwrap();
    user.merge_project(project).unwrap();
    let servers = user.into_servers().unwrap();
    let modes: Vec<(&str, Option<SandboxMode>)> = servers
        .iter()
        .map(|s| (s.name.as_str(), sandbox_of(s).map(|p| p.mode)))
        .collect();
    assert_eq!(
        modes,
        [
            ("fs", Some(SandboxMode::WorkspaceWrite)),
            ("own", Some(SandboxMode::ReadOnly))
        ]
    );
}
