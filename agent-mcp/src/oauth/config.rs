//! What a server's configuration says about OAuth ([`OAuthConfig`]) and how a manager runs
//! authorizations ([`OAuthOptions`]).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Deserializer};

use super::present::AuthorizationPrompt;

/// Default bound on waiting for the browser's callback after the authorization URL was opened.
pub const DEFAULT_CALLBACK_TIMEOUT: Duration = Duration::from_secs(180);

/// The `"oauth"` block of a streamable-HTTP server (our extension of the hosts' formats;
/// Zero's `"auth": "oauth"` with its `oauth` block reads into it too). Every field is
/// optional: with none, the client discovers the authorization server and registers itself.
///
/// ```
/// let servers = agent_mcp::parse_mcp_config_file(r#"{"mcpServers": {"tracker": {
///     "type": "http", "url": "https://mcp.example.com/mcp",
///     "oauth": {"clientId": "agent-sdk", "clientSecret": "s3cr3t-value", "scopes": ["read"]}
/// }}}"#).unwrap();
/// let agent_mcp::McpTransport::Http { oauth: Some(oauth), .. } = &servers[0].transport else {
///     panic!()
/// };
/// assert_eq!(oauth.client_id.as_deref(), Some("agent-sdk"));
/// assert!(!format!("{oauth:?}").contains("s3cr3t"));
/// ```
#[derive(Clone, Default)]
pub struct OAuthConfig {
    /// A pre-registered client id (`clientId`, Zero's `clientID`); without one the client
    /// uses its Client ID Metadata Document URL where the server supports it, else
    /// dynamic client registration.
    pub client_id: Option<String>,
    /// The pre-registered client's secret (`clientSecret`), sent the way the token endpoint
    /// accepts (`client_secret_basic` or `client_secret_post`).
    pub client_secret: Option<SecretString>,
    /// Scopes to ask for when the server's challenge names none (`scopes`).
    pub scopes: Vec<String>,
    /// The URL of this client's Client ID Metadata Document (`clientMetadataUrl`), used as
    /// its client id by authorization servers that advertise
    /// `client_id_metadata_document_supported` (overrides [`OAuthOptions::client_metadata_url`]).
    pub client_metadata_url: Option<String>,
    /// The authorization endpoint, skipping discovery (Zero's `authorizationEndpoint`).
    pub authorization_endpoint: Option<String>,
    /// The token endpoint, skipping discovery (Zero's `tokenEndpoint`).
    pub token_endpoint: Option<String>,
    /// The registration endpoint (Zero's `registrationEndpoint`).
    pub registration_endpoint: Option<String>,
    /// The authorization server's issuer URL, skipping protected-resource discovery
    /// (Zero's `issuerURL`).
    pub issuer_url: Option<String>,
}

impl fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[REDACTED]"),
            )
            .field("scopes", &self.scopes)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("authorization_endpoint", &self.authorization_endpoint)
            .field("token_endpoint", &self.token_endpoint)
            .field("registration_endpoint", &self.registration_endpoint)
            .field("issuer_url", &self.issuer_url)
            .finish()
    }
}

impl PartialEq for OAuthConfig {
    fn eq(&self, other: &Self) -> bool {
        let secret = |s: &Option<SecretString>| s.as_ref().map(|s| s.expose_secret().to_string());
        self.client_id == other.client_id
            && secret(&self.client_secret) == secret(&other.client_secret)
            && self.scopes == other.scopes
            && self.client_metadata_url == other.client_metadata_url
            && self.authorization_endpoint == other.authorization_endpoint
            && self.token_endpoint == other.token_endpoint
            && self.registration_endpoint == other.registration_endpoint
            && self.issuer_url == other.issuer_url
    }
}

impl OAuthConfig {
    /// A pre-registered client.
    pub fn client(client_id: impl Into<String>) -> Self {
        Self {
            client_id: Some(client_id.into()),
            ..Self::default()
        }
    }

    /// Sets the pre-registered client's secret.
    pub fn secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(SecretString::from(secret.into()));
        self
    }

    /// Sets the scopes asked for when the server's challenge names none.
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Sets this client's Client ID Metadata Document URL.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }
}

impl<'de> Deserialize<'de> for OAuthConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Raw {
            #[serde(default, alias = "clientID", alias = "client_id")]
            client_id: Option<String>,
            #[serde(default, alias = "client_secret")]
            client_secret: Option<String>,
            #[serde(default)]
            scopes: Option<Scopes>,
            #[serde(default, alias = "clientMetadataURL", alias = "client_metadata_url")]
            client_metadata_url: Option<String>,
            #[serde(default)]
            authorization_endpoint: Option<String>,
            #[serde(default)]
            token_endpoint: Option<String>,
            #[serde(default)]
            registration_endpoint: Option<String>,
            #[serde(default, alias = "issuerURL", alias = "issuer")]
            issuer_url: Option<String>,
        }
        /// `["a", "b"]` or `"a b"`.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Scopes {
            List(Vec<String>),
            Text(String),
        }
        let trimmed = |v: Option<String>| v.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
        let raw = Option::<Raw>::deserialize(deserializer)?;
        let Some(raw) = raw else {
            return Ok(Self::default());
        };
        let scopes = match raw.scopes {
            None => Vec::new(),
            Some(Scopes::List(list)) => list,
            Some(Scopes::Text(text)) => text.split_whitespace().map(str::to_string).collect(),
        };
        Ok(Self {
            client_id: trimmed(raw.client_id),
            client_secret: raw
                .client_secret
                .filter(|s| !s.is_empty())
                .map(SecretString::from),
            scopes: scopes
                .into_iter()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            client_metadata_url: trimmed(raw.client_metadata_url),
            authorization_endpoint: trimmed(raw.authorization_endpoint),
            token_endpoint: trimmed(raw.token_endpoint),
            registration_endpoint: trimmed(raw.registration_endpoint),
            issuer_url: trimmed(raw.issuer_url),
        })
    }
}

/// How a manager authorizes the streamable-HTTP servers that ask for OAuth (part of
/// [`crate::McpOptions`]). Nothing of it runs for a server that does not answer `401`.
#[derive(Clone)]
pub struct OAuthOptions {
    /// The directory tokens are kept in, one `0600` file per server (`None`: in memory,
    /// for this manager only). Front ends use their data directory's `mcp-oauth`.
    pub store: Option<PathBuf>,
    /// Whether a server that needs a login may start one while connecting (opening the
    /// browser and waiting for its callback). When it may not, or no browser can be opened,
    /// the server is skipped with a message naming [`Self::login_command`].
    pub interactive: bool,
    /// How the authorization URL reaches the user: `None` opens it with `$BROWSER`, else
    /// `xdg-open` (or `open` on macOS). A front end with a way to show a URL (ACP's
    /// elicitation in URL mode) gives its own.
    pub prompt: Option<Arc<dyn AuthorizationPrompt>>,
    /// Bound on waiting for the browser's callback.
    pub callback_timeout: Duration,
    /// The `client_name` sent in dynamic client registration.
    pub client_name: String,
    /// This client's Client ID Metadata Document URL, for every server without its own.
    pub client_metadata_url: Option<String>,
    /// The command that logs in by hand, shown when a server is skipped for want of a login
    /// (`adapter-stream-json mcp oauth login`; the server's name is appended).
    pub login_command: Option<String>,
}

impl fmt::Debug for OAuthOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthOptions")
            .field("store", &self.store)
            .field("interactive", &self.interactive)
            .field("prompt", &self.prompt.as_ref().map(|_| "custom"))
            .field("callback_timeout", &self.callback_timeout)
            .field("client_name", &self.client_name)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("login_command", &self.login_command)
            .finish()
    }
}

impl Default for OAuthOptions {
    fn default() -> Self {
        Self {
            store: None,
            interactive: true,
            prompt: None,
            callback_timeout: DEFAULT_CALLBACK_TIMEOUT,
            client_name: "agent-sdk".to_string(),
            client_metadata_url: None,
            login_command: None,
        }
    }
}

impl OAuthOptions {
    /// Keeps tokens in `dir` (created `0700` when first written).
    pub fn store(mut self, dir: impl Into<PathBuf>) -> Self {
        self.store = Some(dir.into());
        self
    }

    /// Sets whether a login may start while connecting.
    pub fn interactive(mut self, interactive: bool) -> Self {
        self.interactive = interactive;
        self
    }

    /// Sets how the authorization URL reaches the user.
    pub fn prompt(mut self, prompt: Arc<dyn AuthorizationPrompt>) -> Self {
        self.prompt = Some(prompt);
        self
    }

    /// Sets the bound on waiting for the browser's callback.
    pub fn callback_timeout(mut self, timeout: Duration) -> Self {
        self.callback_timeout = timeout;
        self
    }

    /// Sets the command shown to log in by hand.
    pub fn login_command(mut self, command: impl Into<String>) -> Self {
        self.login_command = Some(command.into());
        self
    }

    /// Sets this client's Client ID Metadata Document URL.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }
}
