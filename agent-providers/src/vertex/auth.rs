//! Google Cloud credentials for Vertex AI: a given access token, a service account (an RS256
//! JWT signed with its key, exchanged at its `token_uri`, RFC 7523), or gcloud's user
//! credentials (a refresh token). Tokens are cached until a minute before they expire; one
//! exchange runs at a time.
//!
//! The key is parsed when the provider is built (a bad file fails at once); nothing is sent
//! until the first model call.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agent_core::provider::{ProviderError, ProviderErrorKind};
use base64::Engine;
use ring::signature::{RsaKeyPair, RSA_PKCS1_SHA256};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use crate::config::ConfigError;
use crate::http::{error_chain, truncate, HttpClient};

/// The OAuth scope Vertex AI needs.
pub const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
/// Google's token endpoint (gcloud user credentials carry none).
pub const GOOGLE_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
/// How long before its expiry a cached token is replaced.
const MARGIN: Duration = Duration::from_secs(60);

/// Google Cloud credentials: where Vertex AI's access tokens come from.
///
/// ```no_run
/// use agent_providers::vertex::auth::Credentials;
///
/// let credentials = Credentials::from_file("key.json".as_ref()).expect("a service account key");
/// assert_eq!(credentials.project(), Some("my-project"));
/// ```
pub struct Credentials {
    source: Source,
    /// The project the credentials file names.
    project: Option<String>,
    /// Secrets of the credentials, scrubbed from errors.
    pub(crate) secrets: Vec<SecretString>,
}

enum Source {
    /// A token given as is (`--api-key`, `GOOGLE_OAUTH_ACCESS_TOKEN`); never refreshed.
    Token(SecretString),
    /// A service account key, or gcloud's user credentials, exchanged for tokens.
    Exchange(Box<Exchange>, tokio::sync::Mutex<Option<Cached>>),
}

/// An access token and when it stops being used.
struct Cached {
    token: SecretString,
    until: Instant,
}

/// How tokens are obtained.
enum Exchange {
    /// A service account: an RS256 JWT bearer grant.
    ServiceAccount {
        email: String,
        key_id: Option<String>,
        key: Box<RsaKeyPair>,
        token_uri: String,
    },
    /// gcloud's `authorized_user` credentials: a refresh-token grant.
    User {
        client_id: String,
        client_secret: SecretString,
        refresh_token: SecretString,
        token_uri: String,
    },
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.source {
            Source::Token(_) => f.write_str("Credentials::Token([REDACTED])"),
            Source::Exchange(exchange, _) => match exchange.as_ref() {
                Exchange::ServiceAccount { email, .. } => {
                    write!(f, "Credentials::ServiceAccount({email})")
                }
                Exchange::User { client_id, .. } => write!(f, "Credentials::User({client_id})"),
            },
        }
    }
}

/// A credentials file, as Google's tools write it.
#[derive(Deserialize)]
struct CredentialsFile {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    project_id: Option<String>,
    #[serde(default)]
    quota_project_id: Option<String>,
    #[serde(default)]
    private_key_id: Option<String>,
    #[serde(default, deserialize_with = "secret")]
    private_key: Option<SecretString>,
    #[serde(default)]
    client_email: Option<String>,
    #[serde(default)]
    token_uri: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default, deserialize_with = "secret")]
    client_secret: Option<SecretString>,
    #[serde(default, deserialize_with = "secret")]
    refresh_token: Option<SecretString>,
}

/// The DER of a PEM block (`-----BEGIN PRIVATE KEY-----` …).
fn pem_der(pem: &str) -> Option<Vec<u8>> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("-----"))
        .collect();
    base64::engine::general_purpose::STANDARD.decode(body).ok()
}

impl Credentials {
    /// An access token used as is (never refreshed); registered for scrubbing.
    pub fn access_token(token: impl Into<SecretString>) -> Self {
        let token = token.into();
        agent_core::secrets::register_secret(token.expose_secret());
        Self {
            source: Source::Token(token.clone()),
            project: None,
            secrets: vec![token],
        }
    }

    /// The project the credentials file names (a service account's `project_id`, gcloud's
    /// `quota_project_id`).
    pub fn project(&self) -> Option<&str> {
        self.project.as_deref()
    }

    /// Reads a service account key or gcloud's user credentials (`authorized_user`) from
    /// `path`; the key is checked at once, its secrets registered for scrubbing.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let loaded = Self::read(path)?;
        for secret in &loaded.secrets {
            agent_core::secrets::register_secret(secret.expose_secret());
        }
        Ok(loaded)
    }

    fn read(path: &Path) -> Result<Self, ConfigError> {
        let shown = path.display();
        let text = std::fs::read_to_string(path).map_err(|e| {
            ConfigError::Invalid(format!(
                "cannot read the Google credentials file {shown}: {e}"
            ))
        })?;
        let file: CredentialsFile = serde_json::from_str(&text).map_err(|e| {
            ConfigError::Invalid(format!(
                "the Google credentials file {shown} is not valid: {}",
                e.to_string().lines().next().unwrap_or_default()
            ))
        })?;
        let missing = |field: &str| {
            ConfigError::Invalid(format!(
                "the Google credentials file {shown} ({}) has no {field}",
                file.kind
            ))
        };
        match file.kind.as_str() {
            "service_account" => {
                let pem = file.private_key.as_ref().ok_or_else(|| missing("private_key"))?;
                let key = pem_der(pem.expose_secret())
                    .and_then(|der| RsaKeyPair::from_pkcs8(&der).ok())
                    .ok_or_else(|| {
                        ConfigError::Invalid(format!(
                            "the private_key of the Google credentials file {shown} is not an RSA key in PKCS#8 PEM"
                        ))
                    })?;
                let email = file.client_email.clone().ok_or_else(|| missing("client_email"))?;
                Ok(Self {
                    source: Self::exchange(Exchange::ServiceAccount {
                        email,
                        key_id: file.private_key_id.clone(),
                        key: Box::new(key),
                        token_uri: file
                            .token_uri
                            .clone()
                            .unwrap_or_else(|| GOOGLE_TOKEN_URI.to_string()),
                    }),
                    project: file.project_id,
                    secrets: file.private_key.into_iter().collect(),
                })
            }
            "authorized_user" => {
                let client_secret = file.client_secret.ok_or_else(|| missing("client_secret"))?;
                let refresh_token = file.refresh_token.ok_or_else(|| missing("refresh_token"))?;
                let secrets = vec![client_secret.clone(), refresh_token.clone()];
                Ok(Self {
                    source: Self::exchange(Exchange::User {
                        client_id: file.client_id.ok_or_else(|| missing("client_id"))?,
                        client_secret,
                        refresh_token,
                        token_uri: file.token_uri.unwrap_or_else(|| GOOGLE_TOKEN_URI.to_string()),
                    }),
                    project: file.quota_project_id,
                    secrets,
                })
            }
            other => Err(ConfigError::Invalid(format!(
                "the Google credentials file {shown} is of type {other:?}: expected service_account or authorized_user"
            ))),
        }
    }

    fn exchange(exchange: Exchange) -> Source {
        Source::Exchange(Box::new(exchange), tokio::sync::Mutex::new(None))
    }

    /// A valid access token: the given one, the cached one, or a new one from the token
    /// endpoint (through `http`'s client).
    pub(crate) async fn token(&self, http: &HttpClient) -> Result<SecretString, ProviderError> {
        let (exchange, cache) = match &self.source {
            Source::Token(token) => return Ok(token.clone()),
            Source::Exchange(exchange, cache) => (exchange, cache),
        };
        let mut cached = cache.lock().await;
        if let Some(c) = cached.as_ref().filter(|c| Instant::now() < c.until) {
            return Ok(c.token.clone());
        }
        let (token, lifetime) = exchange.fetch(http).await?;
        agent_core::secrets::register_secret(token.expose_secret());
        *cached = Some(Cached {
            token: token.clone(),
            until: Instant::now() + lifetime.saturating_sub(MARGIN),
        });
        Ok(token)
    }
}

/// A secret string of a credentials file or token answer.
fn secret<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<SecretString>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.map(SecretString::from))
}

/// The token endpoint's answer.
#[derive(Deserialize)]
struct TokenAnswer {
    #[serde(default, deserialize_with = "secret")]
    access_token: Option<SecretString>,
    #[serde(default)]
    expires_in: Option<u64>,
}

/// The token endpoint's refusal (RFC 6749 §5.2).
#[derive(Deserialize)]
struct TokenRefusal {
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    error_description: Option<String>,
}

fn auth_error(message: String) -> ProviderError {
    ProviderError::new(ProviderErrorKind::Auth, message).retryable(false)
}

fn base64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The JOSE header of a service account's JWT.
#[derive(Serialize)]
struct JwtHeader<'a> {
    alg: &'static str,
    typ: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    kid: Option<&'a str>,
}

/// The claims of a service account's JWT bearer grant (RFC 7523).
#[derive(Serialize)]
struct JwtClaims<'a> {
    iss: &'a str,
    scope: &'static str,
    aud: &'a str,
    iat: u64,
    exp: u64,
}

/// Base64url (unpadded) of `value`'s JSON.
fn base64url_json(value: &impl Serialize) -> Result<String, ProviderError> {
    let json = serde_json::to_vec(value).map_err(|e| {
        auth_error(format!(
            "cannot encode the service account's token request: {e}"
        ))
    })?;
    Ok(base64url(&json))
}

impl Exchange {
    fn token_uri(&self) -> &str {
        match self {
            Self::ServiceAccount { token_uri, .. } | Self::User { token_uri, .. } => token_uri,
        }
    }

    /// The signed JWT of a service account's bearer grant, valid for an hour from `now`.
    fn assertion(&self, now: u64) -> Result<String, ProviderError> {
        let Self::ServiceAccount {
            email,
            key_id,
            key,
            token_uri,
        } = self
        else {
            return Err(auth_error("no service account key to sign with".into()));
        };
        let header = JwtHeader {
            alg: "RS256",
            typ: "JWT",
            kid: key_id.as_deref(),
        };
        let claims = JwtClaims {
            iss: email,
            scope: SCOPE,
            aud: token_uri,
            iat: now,
            exp: now + 3600,
        };
        let signing_input = format!("{}.{}", base64url_json(&header)?, base64url_json(&claims)?);
        let mut signature = vec![0u8; key.public().modulus_len()];
        key.sign(
            &RSA_PKCS1_SHA256,
            &ring::rand::SystemRandom::new(),
            signing_input.as_bytes(),
            &mut signature,
        )
        .map_err(|_| auth_error("cannot sign the service account's token request".into()))?;
        Ok(format!("{signing_input}.{}", base64url(&signature)))
    }

    /// One exchange at the token endpoint: the token and how long it lives.
    async fn fetch(&self, http: &HttpClient) -> Result<(SecretString, Duration), ProviderError> {
        let uri = self.token_uri();
        let form: Vec<(&str, String)> = match self {
            Self::ServiceAccount { .. } => {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0);
                vec![
                    (
                        "grant_type",
                        "urn:ietf:params:oauth:grant-type:jwt-bearer".into(),
                    ),
                    ("assertion", self.assertion(now)?),
                ]
            }
            Self::User {
                client_id,
                client_secret,
                refresh_token,
                ..
            } => vec![
                ("grant_type", "refresh_token".into()),
                ("client_id", client_id.clone()),
                ("client_secret", client_secret.expose_secret().to_string()),
                ("refresh_token", refresh_token.expose_secret().to_string()),
            ],
        };
        let client = http.client()?;
        let send = client.post(uri).form(&form).send();
        let response = tokio::time::timeout(http.config.idle_timeout, send)
            .await
            .map_err(|_| {
                ProviderError::new(
                    ProviderErrorKind::Timeout,
                    format!("the token endpoint {uri} did not answer in time"),
                )
            })?
            .map_err(|e| {
                ProviderError::new(
                    ProviderErrorKind::Network,
                    format!("cannot reach the token endpoint {uri}: {}", error_chain(&e)),
                )
            })?;
        let status = response.status();
        let body = tokio::time::timeout(http.config.idle_timeout, response.text())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        if !status.is_success() {
            let detail = match serde_json::from_str::<TokenRefusal>(&body) {
                Ok(TokenRefusal {
                    error: Some(error),
                    error_description,
                }) => match error_description {
                    Some(description) => format!("{error}: {description}"),
                    None => error,
                },
                _ => truncate(body.trim(), 500),
            };
            return Err(auth_error(format!(
                "the token endpoint {uri} refused the credentials (HTTP {}): {detail}",
                status.as_u16()
            ))
            .with_status(status.as_u16()));
        }
        let answer = serde_json::from_str::<TokenAnswer>(&body).ok();
        let lifetime =
            Duration::from_secs(answer.as_ref().and_then(|a| a.expires_in).unwrap_or(3600));
        match answer.and_then(|a| a.access_token) {
            Some(token) => Ok((token, lifetime)),
            None => Err(auth_error(format!(
                "the token endpoint {uri} answered without an access_token"
            ))),
        }
    }
}

/// Shared by the provider and its streams.
pub(crate) type SharedCredentials = Arc<Credentials>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_of_an_unknown_type_or_a_bad_key_are_refused_by_name() {
        let dir = std::env::temp_dir().join(format!("vertex-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).expect("write");
            path
        };
        let err = Credentials::from_file(&write("a.json", r#"{"type": "external_account"}"#))
            .expect_err("unknown type");
        assert!(err.to_string().contains("external_account"), "{err}");
        let bad = write(
            "b.json",
            r#"{"type": "service_account", "client_email": "x@y", "private_key": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}"#,
        );
        let err = Credentials::from_file(&bad).expect_err("bad key");
        assert!(err.to_string().contains("not an RSA key"), "{err}");
        assert!(!err.to_string().contains("AAAA"));
        let err = Credentials::from_file(&dir.join("missing.json")).expect_err("missing file");
        assert!(err.to_string().contains("cannot read"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
