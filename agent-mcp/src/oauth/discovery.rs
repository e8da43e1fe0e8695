//! Finding the authorization server of an MCP server: the `WWW-Authenticate` challenge, the
//! protected-resource metadata (RFC 9728), the authorization-server metadata (RFC 8414, then
//! OpenID Connect discovery), and the 2025-03-26 fallbacks.

use serde::Deserialize;
use url::Url;

use super::http::{get_json, Fetched};
use super::{OAuthConfig, OAuthError};

/// The `Bearer` challenge of a `401` or `403` answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// `resource_metadata`: where the protected-resource metadata is.
    pub(crate) resource_metadata: Option<String>,
    /// `scope`, split on spaces.
    pub(crate) scopes: Vec<String>,
    /// `error` (`invalid_token`, `insufficient_scope`).
    pub(crate) error: Option<String>,
}

impl Challenge {
    /// Parses the parameters of the `Bearer` challenge in a `WWW-Authenticate` value (the
    /// first challenge when none is `Bearer`).
    pub(crate) fn parse(header: &str) -> Self {
        let params = auth_params(header);
        let has_bearer = params
            .iter()
            .any(|(scheme, ..)| scheme.eq_ignore_ascii_case("bearer"));
        let first = params.first().map(|(scheme, ..)| scheme.clone());
        let mut challenge = Challenge::default();
        for (scheme, name, value) in params {
            let wanted = match has_bearer {
                true => scheme.eq_ignore_ascii_case("bearer"),
                false => Some(&scheme) == first.as_ref(),
            };
            if !wanted {
                continue;
            }
            match name.to_ascii_lowercase().as_str() {
                "resource_metadata" => challenge.resource_metadata = Some(value),
                "scope" => {
                    challenge.scopes = value.split_whitespace().map(str::to_string).collect()
                }
                "error" => challenge.error = Some(value),
                _ => {}
            }
        }
        challenge
    }

    /// Whether the server says the token lacks scope.
    pub(crate) fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// `(scheme, name, value)` of every auth-param in a `WWW-Authenticate` value.
fn auth_params(header: &str) -> Vec<(String, String, String)> {
    let chars: Vec<char> = header.chars().collect();
    let mut out = Vec::new();
    let mut scheme = String::new();
    let mut i = 0;
    let skip = |i: &mut usize, pred: &dyn Fn(char) -> bool| {
        while *i < chars.len() && pred(chars[*i]) {
            *i += 1;
        }
    };
    while i < chars.len() {
        skip(&mut i, &|c| c == ' ' || c == ',' || c == '\t');
        let start = i;
        skip(&mut i, &|c| !matches!(c, ' ' | ',' | '=' | '\t'));
        let token: String = chars[start..i].iter().collect();
        if token.is_empty() {
            break;
        }
        let mut j = i;
        while j < chars.len() && (chars[j] == ' ' || chars[j] == '\t') {
            j += 1;
        }
        if j < chars.len() && chars[j] == '=' {
            // An auth-param: name = token / quoted-string.
            i = j + 1;
            skip(&mut i, &|c| c == ' ' || c == '\t');
            let mut value = String::new();
            if i < chars.len() && chars[i] == '"' {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' && i + 1 < chars.len() {
                        i += 1;
                    }
                    value.push(chars[i]);
                    i += 1;
                }
                i += 1;
            } else {
                let start = i;
                skip(&mut i, &|c| c != ',' && c != ' ' && c != '\t');
                value = chars[start..i].iter().collect();
            }
            out.push((scheme.clone(), token, value));
        } else {
            // A new scheme (or a token68, which no parameter we read is).
            scheme = token;
        }
    }
    out
}

/// RFC 9728 protected-resource metadata (the fields the client uses).
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ResourceMetadata {
    #[serde(default)]
    pub(crate) resource: Option<String>,
    #[serde(default)]
    pub(crate) authorization_servers: Vec<String>,
    #[serde(default)]
    pub(crate) scopes_supported: Option<Vec<String>>,
}

/// RFC 8414 authorization-server metadata (the fields the client uses).
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ServerMetadata {
    #[serde(default)]
    pub(crate) authorization_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) token_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) registration_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) client_id_metadata_document_supported: Option<bool>,
}

/// Where and how to authorize, as discovered.
#[derive(Debug, Clone)]
pub(crate) struct Discovery {
    /// The `resource` parameter (the protected resource's identifier).
    pub(crate) resource: String,
    /// The scopes the protected-resource metadata lists, when it does (the authorization
    /// server's list is not used: the spec asks for the resource's).
    pub(crate) scopes_supported: Option<Vec<String>>,
    pub(crate) authorization_endpoint: String,
    pub(crate) token_endpoint: String,
    pub(crate) registration_endpoint: Option<String>,
    pub(crate) token_auth_methods: Option<Vec<String>>,
    pub(crate) client_id_metadata_documents: bool,
}

/// The canonical URI of an MCP server (RFC 8707): no fragment, and no trailing `/` on an
/// empty path.
pub(crate) fn canonical_resource(url: &Url) -> String {
    let mut url = url.clone();
    url.set_fragment(None);
    let text = url.to_string();
    match url.path() == "/" && url.query().is_none() {
        true => text.trim_end_matches('/').to_string(),
        false => text,
    }
}

/// `scheme://host[:port]` of `url`.
fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// Whether `resource` (from the metadata) names `server` or a prefix of it: same origin,
/// and a path that is `server`'s or one of its leading segments.
pub(crate) fn resource_matches(resource: &str, server: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    if origin(&resource) != origin(server) {
        return false;
    }
    let want = resource.path().trim_end_matches('/');
    let have = server.path().trim_end_matches('/');
    want.is_empty() || have == want || have.starts_with(&format!("{want}/"))
}

/// An endpoint the client may send credentials to: `https`, or `http` on a loopback host.
pub(crate) fn check_endpoint(server: &str, what: &str, url: &str) -> Result<Url, OAuthError> {
    let parsed = Url::parse(url).map_err(|e| OAuthError::Discovery {
        server: server.to_string(),
        message: format!("the {what} {url:?} is not a URL: {e}"),
    })?;
    let loopback = match parsed.host() {
        Some(url::Host::Domain(host)) => host.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" if loopback => Ok(parsed),
        _ => Err(OAuthError::Discovery {
            server: server.to_string(),
            message: format!(
                "the {what} {url} is not https (only a loopback address may use http)"
            ),
        }),
    }
}

/// The protected-resource metadata: from the challenge's `resource_metadata`, else the
/// path-based well-known URL, then the root one. `None` when the server has none (a
/// 2025-03-26 server).
async fn resource_metadata(
    http: &reqwest::Client,
    name: &str,
    server: &Url,
    challenge: Option<&Challenge>,
) -> Result<Option<ResourceMetadata>, OAuthError> {
    let mut candidates = Vec::new();
    if let Some(url) = challenge.and_then(|c| c.resource_metadata.as_deref()) {
        candidates.push(url.to_string());
    }
    let path = server.path().trim_end_matches('/');
    if !path.is_empty() {
        candidates.push(format!(
            "{}/.well-known/oauth-protected-resource{path}",
            origin(server)
        ));
    }
    candidates.push(format!(
        "{}/.well-known/oauth-protected-resource",
        origin(server)
    ));
    for url in candidates {
        match get_json::<ResourceMetadata>(http, &url).await {
            Fetched::Found(metadata) => {
                if metadata.authorization_servers.is_empty() {
                    return Err(OAuthError::Discovery {
                        server: name.to_string(),
                        message: format!(
                            "the protected-resource metadata at {url} names no authorization server"
                        ),
                    });
                }
                return Ok(Some(metadata));
            }
            Fetched::Missing => continue,
            Fetched::Malformed(why) => {
                return Err(OAuthError::Discovery {
                    server: name.to_string(),
                    message: format!("malformed protected-resource metadata at {url}: {why}"),
                })
            }
            Fetched::Failed(why) => {
                return Err(OAuthError::Discovery {
                    server: name.to_string(),
                    message: format!("fetching protected-resource metadata at {url}: {why}"),
                })
            }
        }
    }
    Ok(None)
}

/// The metadata URLs of issuer `issuer`, in the order the MCP authorization spec gives.
pub(crate) fn metadata_urls(issuer: &Url) -> Vec<String> {
    let base = origin(issuer);
    let path = issuer.path().trim_end_matches('/');
    match path.is_empty() {
        true => vec![
            format!("{base}/.well-known/oauth-authorization-server"),
            format!("{base}/.well-known/openid-configuration"),
        ],
        false => vec![
            format!("{base}/.well-known/oauth-authorization-server{path}"),
            format!("{base}/.well-known/openid-configuration{path}"),
            format!("{base}{path}/.well-known/openid-configuration"),
        ],
    }
}

async fn server_metadata(
    http: &reqwest::Client,
    name: &str,
    issuer: &Url,
) -> Result<Option<(String, ServerMetadata)>, OAuthError> {
    for url in metadata_urls(issuer) {
        match get_json::<ServerMetadata>(http, &url).await {
            Fetched::Found(metadata) => return Ok(Some((url, metadata))),
            Fetched::Missing => continue,
            Fetched::Malformed(why) => {
                return Err(OAuthError::Discovery {
                    server: name.to_string(),
                    message: format!("malformed authorization server metadata at {url}: {why}"),
                })
            }
            Fetched::Failed(why) => {
                return Err(OAuthError::Discovery {
                    server: name.to_string(),
                    message: format!("fetching authorization server metadata at {url}: {why}"),
                })
            }
        }
    }
    Ok(None)
}

/// Finds where to authorize MCP server `name` at `server_url`.
pub(crate) async fn discover(
    http: &reqwest::Client,
    name: &str,
    server_url: &str,
    challenge: Option<&Challenge>,
    config: &OAuthConfig,
) -> Result<Discovery, OAuthError> {
    let server = Url::parse(server_url).map_err(|e| OAuthError::Discovery {
        server: name.to_string(),
        message: format!("the server URL is not a URL: {e}"),
    })?;
    check_endpoint(name, "MCP server URL", server_url)?;
    let mut resource = canonical_resource(&server);
    let mut scopes_supported = None;
    // The authorization server: configured, else the resource's, else (2025-03-26) the
    // MCP server's origin.
    let prm = match &config.issuer_url {
        Some(_) => None,
        None => resource_metadata(http, name, &server, challenge).await?,
    };
    let legacy = config.issuer_url.is_none() && prm.is_none();
    let issuer = match (&config.issuer_url, &prm) {
        (Some(issuer), _) => issuer.clone(),
        (None, Some(prm)) => {
            if let Some(claimed) = &prm.resource {
                if !resource_matches(claimed, &server) {
                    return Err(OAuthError::Discovery {
                        server: name.to_string(),
                        message: format!(
                            "the protected-resource metadata is for {claimed}, not {server_url}"
                        ),
                    });
                }
                resource = claimed.clone();
            }
            scopes_supported = prm.scopes_supported.clone();
            prm.authorization_servers[0].clone()
        }
        (None, None) => origin(&server),
    };
    let issuer_url = check_endpoint(name, "authorization server", &issuer)?;
    let configured = (&config.authorization_endpoint, &config.token_endpoint);
    let (metadata, found_at) = match configured {
        (Some(_), Some(_)) => (ServerMetadata::default(), None),
        _ => match server_metadata(http, name, &issuer_url).await? {
            Some((url, metadata)) => (metadata, Some(url)),
            None if legacy => {
                // 2025-03-26: no metadata; the default endpoints at the server's origin.
                let base = origin(&server);
                let metadata = ServerMetadata {
                    authorization_endpoint: Some(format!("{base}/authorize")),
                    token_endpoint: Some(format!("{base}/token")),
                    registration_endpoint: Some(format!("{base}/register")),
                    ..ServerMetadata::default()
                };
                (metadata, None)
            }
            None => {
                return Err(OAuthError::Discovery {
                    server: name.to_string(),
                    message: format!(
                        "the authorization server {issuer} publishes no metadata (tried {})",
                        metadata_urls(&issuer_url).join(", ")
                    ),
                })
            }
        },
    };
    let at = found_at.as_deref().unwrap_or("the configuration");
    if let Some(methods) = &metadata.code_challenge_methods_supported {
        if !methods.iter().any(|m| m == "S256") {
            return Err(OAuthError::Discovery {
                server: name.to_string(),
                message: format!(
                    "the authorization server does not support PKCE with S256 ({at} lists {})",
                    methods.join(", ")
                ),
            });
        }
    }
    let pick = |configured: &Option<String>, discovered: &Option<String>| {
        configured.clone().or_else(|| discovered.clone())
    };
    let missing = |field: &str| OAuthError::Discovery {
        server: name.to_string(),
        message: format!("the authorization server metadata at {at} has no {field}"),
    };
    let authorization_endpoint = pick(
        &config.authorization_endpoint,
        &metadata.authorization_endpoint,
    )
    .ok_or_else(|| missing("authorization_endpoint"))?;
    let token_endpoint = pick(&config.token_endpoint, &metadata.token_endpoint)
        .ok_or_else(|| missing("token_endpoint"))?;
    let registration_endpoint = pick(
        &config.registration_endpoint,
        &metadata.registration_endpoint,
    );
    check_endpoint(name, "authorization endpoint", &authorization_endpoint)?;
    check_endpoint(name, "token endpoint", &token_endpoint)?;
    if let Some(registration) = &registration_endpoint {
        check_endpoint(name, "registration endpoint", registration)?;
    }
    Ok(Discovery {
        resource,
        scopes_supported,
        authorization_endpoint,
        token_endpoint,
        registration_endpoint,
        token_auth_methods: metadata.token_endpoint_auth_methods_supported,
        client_id_metadata_documents: metadata
            .client_id_metadata_document_supported
            .unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_challenge_is_parsed() {
        let c = Challenge::parse(
            r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp", error_description="a \"quoted\" word""#,
        );
        assert_eq!(c.scopes, ["mcp:basic", "mcp:write"]);
        assert!(c.insufficient_scope());
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp")
        );
        let plain = Challenge::parse("Bearer realm=mcp, error=invalid_token");
        assert_eq!(plain.error.as_deref(), Some("invalid_token"));
        assert!(plain.scopes.is_empty() && plain.resource_metadata.is_none());
        let two = Challenge::parse(r#"Basic realm="x", Bearer scope="a""#);
        assert_eq!(two.scopes, ["a"]);
        assert_eq!(Challenge::parse(""), Challenge::default());
        assert_eq!(Challenge::parse("Bearer"), Challenge::default());
    }

    #[test]
    fn metadata_urls_follow_the_spec_order() {
        let root = Url::parse("https://as.example").unwrap();
        assert_eq!(
            metadata_urls(&root),
            [
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration"
            ]
        );
        let tenant = Url::parse("https://as.example/tenant1/").unwrap();
        assert_eq!(
            metadata_urls(&tenant),
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn resources_match_by_origin_and_leading_segments() {
        let server = Url::parse("https://mcp.example/api/mcp").unwrap();
        assert!(resource_matches("https://mcp.example/api/mcp", &server));
        assert!(resource_matches("https://mcp.example/api", &server));
        assert!(resource_matches("https://mcp.example", &server));
        assert!(!resource_matches("https://mcp.example/ap", &server));
        assert!(!resource_matches("https://evil.example/api/mcp", &server));
        assert!(!resource_matches("http://mcp.example/api/mcp", &server));
        assert_eq!(
            canonical_resource(&Url::parse("https://Mcp.Example/#x").unwrap()),
            "https://mcp.example"
        );
        assert_eq!(
            canonical_resource(&Url::parse("https://mcp.example/mcp#x").unwrap()),
            "https://mcp.example/mcp"
        );
    }

    #[test]
    fn endpoints_must_be_https_unless_loopback() {
        assert!(check_endpoint("s", "token endpoint", "https://as.example/token").is_ok());
        assert!(check_endpoint("s", "token endpoint", "http://127.0.0.1:8/token").is_ok());
        assert!(check_endpoint("s", "token endpoint", "http://localhost:8/token").is_ok());
        assert!(check_endpoint("s", "token endpoint", "http://[::1]:8/token").is_ok());
        let err = check_endpoint("s", "token endpoint", "http://as.example/token").unwrap_err();
        assert!(err.to_string().contains("not https"), "{err}");
        assert!(check_endpoint("s", "token endpoint", "not a url").is_err());
    }
}
