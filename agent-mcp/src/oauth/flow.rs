//! The authorization-code flow with PKCE: the client's identity (pre-registered, a Client ID
//! Metadata Document URL, or dynamic registration), the authorization URL, and the token
//! endpoint's grants (code exchange and refresh) with the client authentication it accepts.

use std::fmt;

use base64::Engine;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

use super::discovery::Discovery;
use super::http::{error_text, form, send};
use super::store::now;
use super::{OAuthConfig, OAuthError};

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AuthMethod {
    /// `client_secret_basic`: HTTP Basic with the id and secret.
    Basic,
    /// `client_secret_post`: the id and secret in the form.
    Post,
    /// `none`: a public client, its id in the form.
    None,
}

impl AuthMethod {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Basic => "client_secret_basic",
            Self::Post => "client_secret_post",
            Self::None => "none",
        }
    }

    pub(crate) fn parse(text: &str) -> Self {
        match text {
            "client_secret_basic" => Self::Basic,
            "client_secret_post" => Self::Post,
            _ => Self::None,
        }
    }

    /// The method for a client with (or without) a secret, among those the server supports
    /// (RFC 8414's default when it does not say: `client_secret_basic`).
    pub(crate) fn choose(supported: Option<&[String]>, has_secret: bool) -> Self {
        if !has_secret {
            return Self::None;
        }
        let Some(supported) = supported else {
            return Self::Basic;
        };
        let has = |m: &str| supported.iter().any(|s| s == m);
        if has("client_secret_basic") {
            Self::Basic
        } else if has("client_secret_post") {
            Self::Post
        } else if has("none") {
            Self::None
        } else {
            Self::Basic
        }
    }
}

/// Who the client is to the authorization server.
#[derive(Clone)]
pub(crate) struct ClientIdentity {
    pub(crate) client_id: String,
    pub(crate) client_secret: Option<SecretString>,
    pub(crate) auth_method: AuthMethod,
}

impl fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientIdentity")
            .field("client_id", &self.client_id)
            .field("auth_method", &self.auth_method)
            .finish_non_exhaustive()
    }
}

/// What a successful authorization yields, with what refreshing it needs.
#[derive(Clone)]
pub(crate) struct Credentials {
    pub(crate) access_token: SecretString,
    pub(crate) refresh_token: Option<SecretString>,
    pub(crate) token_type: String,
    pub(crate) scopes: Vec<String>,
    /// Unix time the access token expires at, when the server said.
    pub(crate) expires_at: Option<u64>,
    pub(crate) client: ClientIdentity,
    pub(crate) token_endpoint: String,
    pub(crate) resource: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("token_type", &self.token_type)
            .field("scopes", &self.scopes)
            .field("expires_at", &self.expires_at)
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// Whether the access token expires within `margin` seconds.
    pub(crate) fn expires_within(&self, margin: u64) -> bool {
        self.expires_at
            .is_some_and(|at| at <= now().saturating_add(margin))
    }
}

/// `n` random bytes, base64url without padding.
pub(crate) fn random_token(n: usize) -> Result<String, OAuthError> {
    use ring::rand::SecureRandom;
    let mut bytes = vec![0u8; n];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| OAuthError::Internal("the system random generator failed".into()))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// A PKCE verifier and its S256 challenge.
pub(crate) struct Pkce {
    pub(crate) verifier: SecretString,
    pub(crate) challenge: String,
}

impl Pkce {
    pub(crate) fn new() -> Result<Self, OAuthError> {
        let verifier = random_token(32)?;
        let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
        let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref());
        Ok(Self {
            verifier: SecretString::from(verifier),
            challenge,
        })
    }
}

/// The client's identity for this authorization: the configured one, else its Client ID
/// Metadata Document URL where the server accepts those, else a dynamic registration.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn client_identity(
    http: &reqwest::Client,
    server: &str,
    discovery: &Discovery,
    config: &OAuthConfig,
    metadata_url: Option<&str>,
    client_name: &str,
    redirect_uri: &str,
    scopes: &[String],
) -> Result<ClientIdentity, OAuthError> {
    let methods = discovery.token_auth_methods.as_deref();
    if let Some(client_id) = &config.client_id {
        let secret = config.client_secret.clone();
        return Ok(ClientIdentity {
            client_id: client_id.clone(),
            auth_method: AuthMethod::choose(methods, secret.is_some()),
            client_secret: secret,
        });
    }
    if let Some(url) = metadata_url.filter(|_| discovery.client_id_metadata_documents) {
        return Ok(ClientIdentity {
            client_id: url.to_string(),
            client_secret: None,
            auth_method: AuthMethod::None,
        });
    }
    let Some(endpoint) = &discovery.registration_endpoint else {
        return Err(OAuthError::Registration {
            server: server.to_string(),
            message: "no client id is configured and the authorization server offers neither \
                      dynamic client registration nor client ID metadata documents; set \
                      \"oauth\": {\"clientId\": …} for the server"
                .into(),
        });
    };
    register(
        http,
        server,
        endpoint,
        methods,
        client_name,
        redirect_uri,
        scopes,
    )
    .await
}

/// RFC 7591 dynamic client registration.
async fn register(
    http: &reqwest::Client,
    server: &str,
    endpoint: &str,
    methods: Option<&[String]>,
    client_name: &str,
    redirect_uri: &str,
    scopes: &[String],
) -> Result<ClientIdentity, OAuthError> {
    #[derive(serde::Serialize)]
    struct Request<'a> {
        client_name: &'a str,
        redirect_uris: [&'a str; 1],
        grant_types: [&'a str; 2],
        response_types: [&'a str; 1],
        token_endpoint_auth_method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        scope: Option<String>,
    }
    #[derive(Deserialize)]
    struct Response {
        client_id: String,
        #[serde(default)]
        client_secret: Option<String>,
        #[serde(default)]
        token_endpoint_auth_method: Option<String>,
    }
    let wanted = match methods {
        None => AuthMethod::None,
        Some(list) if list.iter().any(|m| m == "none") => AuthMethod::None,
        Some(list) => AuthMethod::choose(Some(list), true),
    };
    let failed = |message: String| OAuthError::Registration {
        server: server.to_string(),
        message,
    };
    let body = Request {
        client_name,
        redirect_uris: [redirect_uri],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: wanted.as_str(),
        scope: (!scopes.is_empty()).then(|| scopes.join(" ")),
    };
    let (status, bytes) = send(http.post(endpoint).json(&body))
        .await
        .map_err(|why| failed(format!("registering at {endpoint}: {why}")))?;
    if !status.is_success() {
        return Err(failed(format!(
            "the registration endpoint {endpoint} answered {}",
            error_text(status, &bytes)
        )));
    }
    let response: Response = serde_json::from_slice(&bytes).map_err(|e| {
        failed(format!(
            "the registration endpoint {endpoint} answered with a malformed registration: {e}"
        ))
    })?;
    if response.client_id.trim().is_empty() {
        return Err(failed(format!(
            "the registration endpoint {endpoint} returned an empty client_id"
        )));
    }
    let secret = response
        .client_secret
        .filter(|s| !s.is_empty())
        .map(SecretString::from);
    let auth_method = match response.token_endpoint_auth_method.as_deref() {
        Some(method) => AuthMethod::parse(method),
        None => AuthMethod::choose(methods, secret.is_some()),
    };
    Ok(ClientIdentity {
        client_id: response.client_id,
        client_secret: secret,
        auth_method,
    })
}

/// The authorization request URL.
pub(crate) fn authorization_url(
    discovery: &Discovery,
    client: &ClientIdentity,
    redirect_uri: &str,
    state: &str,
    pkce: &Pkce,
    scopes: &[String],
) -> Result<String, OAuthError> {
    let mut url = url::Url::parse(&discovery.authorization_endpoint)
        .map_err(|e| OAuthError::Internal(format!("authorization endpoint: {e}")))?;
    {
        let mut query = url.query_pairs_mut();
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", &client.client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("state", state)
            .append_pair("code_challenge", &pkce.challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("resource", &discovery.resource);
        if !scopes.is_empty() {
            query.append_pair("scope", &scopes.join(" "));
        }
    }
    Ok(url.to_string())
}

/// The token endpoint's answer to a grant.
#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    expires_in: Option<serde_json::Value>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

/// Sends a grant to the token endpoint with the client's authentication; the new credentials.
async fn grant(
    http: &reqwest::Client,
    server: &str,
    token_endpoint: &str,
    client: &ClientIdentity,
    resource: &str,
    mut params: Vec<(&str, &str)>,
    asked_scopes: &[String],
) -> Result<Credentials, OAuthError> {
    let secret = client
        .client_secret
        .as_ref()
        .map(|s| s.expose_secret().to_string());
    let mut request = http.post(token_endpoint);
    match (client.auth_method, &secret) {
        (AuthMethod::Basic, Some(secret)) => {
            // RFC 6749 2.3.1: both form-encoded, then Basic.
            let encode =
                |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            let pair = format!("{}:{}", encode(&client.client_id), encode(secret));
            let basic = base64::engine::general_purpose::STANDARD.encode(pair);
            request = request.header(reqwest::header::AUTHORIZATION, format!("Basic {basic}"));
        }
        (AuthMethod::Post, Some(secret)) => {
            params.push(("client_id", &client.client_id));
            params.push(("client_secret", secret));
        }
        _ => params.push(("client_id", &client.client_id)),
    }
    params.push(("resource", resource));
    let body = SecretString::from(form(&params));
    let request = request
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(body.expose_secret().to_string());
    let failed = |message: String| OAuthError::Token {
        server: server.to_string(),
        message,
    };
    let (status, bytes) = send(request)
        .await
        .map_err(|why| failed(format!("the token endpoint {token_endpoint}: {why}")))?;
    if !status.is_success() {
        return Err(failed(format!(
            "the token endpoint {token_endpoint} answered {}",
            error_text(status, &bytes)
        )));
    }
    // Never quote this body: it holds the tokens.
    let response: TokenResponse = serde_json::from_slice(&bytes).map_err(|e| {
        failed(format!(
            "the token endpoint {token_endpoint} answered with a malformed token response \
             ({:?} error at line {} column {})",
            e.classify(),
            e.line(),
            e.column()
        ))
    })?;
    if response.access_token.is_empty() {
        return Err(failed(format!(
            "the token endpoint {token_endpoint} returned an empty access_token"
        )));
    }
    let token_type = response.token_type.unwrap_or_else(|| "Bearer".into());
    if !token_type.eq_ignore_ascii_case("bearer") {
        return Err(failed(format!(
            "the token endpoint {token_endpoint} returned a {token_type:?} token, not a Bearer one"
        )));
    }
    let expires_in = match &response.expires_in {
        Some(serde_json::Value::Number(n)) => n.as_u64(),
        Some(serde_json::Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    };
    agent_core::secrets::register_secret(&response.access_token);
    if let Some(refresh) = &response.refresh_token {
        agent_core::secrets::register_secret(refresh);
    }
    Ok(Credentials {
        access_token: SecretString::from(response.access_token),
        refresh_token: response
            .refresh_token
            .filter(|t| !t.is_empty())
            .map(SecretString::from),
        token_type,
        scopes: match response.scope {
            Some(scope) => scope.split_whitespace().map(str::to_string).collect(),
            None => asked_scopes.to_vec(),
        },
        expires_at: expires_in.map(|secs| now().saturating_add(secs)),
        client: client.clone(),
        token_endpoint: token_endpoint.to_string(),
        resource: resource.to_string(),
    })
}

/// Exchanges an authorization code (with its PKCE verifier) for tokens.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn exchange_code(
    http: &reqwest::Client,
    server: &str,
    discovery: &Discovery,
    client: &ClientIdentity,
    code: &str,
    redirect_uri: &str,
    pkce: &Pkce,
    scopes: &[String],
) -> Result<Credentials, OAuthError> {
    let params = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", redirect_uri),
        ("code_verifier", pkce.verifier.expose_secret()),
    ];
    grant(
        http,
        server,
        &discovery.token_endpoint,
        client,
        &discovery.resource,
        params,
        scopes,
    )
    .await
}

/// Refreshes `current`; the new credentials keep the refresh token when the server sends
/// none.
pub(crate) async fn refresh(
    http: &reqwest::Client,
    server: &str,
    current: &Credentials,
) -> Result<Credentials, OAuthError> {
    let Some(refresh_token) = &current.refresh_token else {
        return Err(OAuthError::Token {
            server: server.to_string(),
            message: "no refresh token is stored".into(),
        });
    };
    let params = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token.expose_secret()),
    ];
    let mut fresh = grant(
        http,
        server,
        &current.token_endpoint,
        &current.client,
        &current.resource,
        params,
        &current.scopes,
    )
    .await?;
    if fresh.refresh_token.is_none() {
        fresh.refresh_token = current.refresh_token.clone();
    }
    Ok(fresh)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_auth_method_follows_what_the_server_supports() {
        let list = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(AuthMethod::choose(None, true), AuthMethod::Basic);
        assert_eq!(AuthMethod::choose(None, false), AuthMethod::None);
        let post = list(&["client_secret_post"]);
        assert_eq!(AuthMethod::choose(Some(&post), true), AuthMethod::Post);
        let both = list(&["none", "client_secret_post", "client_secret_basic"]);
        assert_eq!(AuthMethod::choose(Some(&both), true), AuthMethod::Basic);
        for method in [AuthMethod::Basic, AuthMethod::Post, AuthMethod::None] {
            assert_eq!(AuthMethod::parse(method.as_str()), method);
        }
    }

    #[test]
    fn pkce_challenges_are_the_s256_of_their_verifier() {
        let pkce = Pkce::new().unwrap();
        let verifier = pkce.verifier.expose_secret();
        assert_eq!(verifier.len(), 43);
        assert!(verifier
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
        assert_eq!(
            pkce.challenge,
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref())
        );
        assert_ne!(Pkce::new().unwrap().challenge, pkce.challenge);
    }

    #[test]
    fn the_authorization_url_carries_pkce_resource_state_and_scopes() {
        let discovery = Discovery {
            resource: "https://mcp.example/mcp".into(),
            scopes_supported: None,
            authorization_endpoint: "https://as.example/authorize?tenant=1".into(),
            token_endpoint: "https://as.example/token".into(),
            registration_endpoint: None,
            token_auth_methods: None,
            client_id_metadata_documents: false,
        };
        let client = ClientIdentity {
            client_id: "c 1".into(),
            client_secret: None,
            auth_method: AuthMethod::None,
        };
        let pkce = Pkce::new().unwrap();
        let url = authorization_url(
            &discovery,
            &client,
            "http://127.0.0.1:5/callback",
            "st",
            &pkce,
            &["a".into(), "b".into()],
        )
        .unwrap();
        let parsed = url::Url::parse(&url).unwrap();
        let query: std::collections::HashMap<String, String> =
            parsed.query_pairs().into_owned().collect();
        assert_eq!(query["tenant"], "1");
        assert_eq!(query["client_id"], "c 1");
        assert_eq!(query["code_challenge"], pkce.challenge);
        assert_eq!(query["code_challenge_method"], "S256");
        assert_eq!(query["resource"], "https://mcp.example/mcp");
        assert_eq!(query["scope"], "a b");
        assert_eq!(query["state"], "st");
        let none = authorization_url(&discovery, &client, "r", "s", &pkce, &[]).unwrap();
        assert!(!none.contains("scope="));
    }
}
