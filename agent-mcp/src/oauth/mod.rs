//! OAuth 2.1 for streamable-HTTP servers, per the MCP authorization spec (2025-11-25, with
//! the 2025-03-26 fallbacks). Our own implementation on the crate's reqwest client (rmcp's
//! `auth` feature pulls in the `oauth2` crate and its own HTTP stack; this needs nothing
//! the crate does not already link: `url`, `ring` for PKCE and randomness).
//!
//! Nothing of it runs until a server answers `401` (or, for a server whose configuration
//! has an `"oauth"` block or Zero's `"auth": "oauth"`, until its first request, which sends
//! the stored token): no listener, no file read. Then:
//!
//! 1. **Discovery.** The protected-resource metadata from the challenge's
//!    `resource_metadata`, else `/.well-known/oauth-protected-resource/<path>`, then the
//!    root one; its authorization server's metadata (RFC 8414, then OpenID Connect
//!    discovery, path-aware). A 2025-03-26 server without resource metadata is its own
//!    authorization server, with `/authorize`, `/token` and `/register` at its origin when
//!    it publishes no metadata either. Endpoints must be `https` (or loopback `http`).
//! 2. **The client's identity.** A pre-registered `clientId`/`clientSecret` from the
//!    configuration; else this client's Client ID Metadata Document URL where the server
//!    advertises support; else dynamic client registration (RFC 7591). The token endpoint
//!    is authenticated as the server supports (`client_secret_basic`,
//!    `client_secret_post` or `none`).
//! 3. **Authorization.** Authorization code with PKCE (S256) and the `resource` parameter;
//!    scopes from the challenge, else the configured ones, else the resource's
//!    `scopes_supported`, else none. The URL goes to the [`AuthorizationPrompt`] (by
//!    default `$BROWSER`, else `xdg-open` / `open`); a one-shot listener on 127.0.0.1
//!    takes the callback and checks its `state`. When no browser can be opened the URL is
//!    logged as a warning and the server is skipped until the user logs in
//!    ([`login`]; the front ends' `mcp oauth login NAME`).
//! 4. **Tokens.** Sent as `Authorization: Bearer`, refreshed a minute before they expire,
//!    kept per server (name and URL) in [`OAuthOptions::store`] (`0600` files), never in
//!    logs, events or sessions. A refused refresh means a new login, not an error. A
//!    `403 insufficient_scope` asks again with the scopes it names added (step-up), at most
//!    three authorizations in a row.
//!
//! A failure (malformed metadata, a failing token endpoint, a callback with the wrong
//! `state`, no callback in time) ends the attempt with an [`OAuthError`] naming the server;
//! nothing is stored, and the manager goes on without that server.

mod authorizer;
mod callback;
pub mod cli;
mod config;
mod discovery;
mod flow;
mod http;
mod present;
mod store;

use std::sync::Arc;

pub(crate) use authorizer::{Attempts, Authorizer, Denied};

/// The OAuth state of `server` when it may use OAuth: a streamable-HTTP server without its
/// own `Authorization` header. Creating it starts nothing.
pub(crate) fn authorizer_for(
    server: &McpServerConfig,
    options: &OAuthOptions,
) -> Option<Arc<Authorizer>> {
    match &server.transport {
        McpTransport::Http {
            url,
            headers,
            oauth,
        } if !headers
            .names()
            .any(|h| h.eq_ignore_ascii_case("authorization")) =>
        {
            Some(Authorizer::new(&server.name, url, oauth.as_ref(), options))
        }
        _ => None,
    }
}
pub use config::{OAuthConfig, OAuthOptions, DEFAULT_CALLBACK_TIMEOUT};
pub(crate) use discovery::Challenge;
pub use present::{AuthorizationPrompt, BrowserPrompt, Presented};
pub use store::{format_statuses, StoreError, TokenStatus, TokenStore};

use crate::config::{McpServerConfig, McpTransport};

/// Why an authorization failed. Each variant names the server; none carries a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthError {
    /// The server cannot use OAuth (stdio, or configured with its own `Authorization`
    /// header).
    #[error("MCP server {server:?} {reason}")]
    NotOAuth {
        /// The server.
        server: String,
        /// Why.
        reason: String,
    },
    /// Finding the authorization server failed (unreachable or malformed metadata, an
    /// endpoint that is not https, no S256).
    #[error("OAuth for MCP server {server:?}: {message}")]
    Discovery {
        /// The server.
        server: String,
        /// What failed.
        message: String,
    },
    /// The client has no identity at the authorization server (registration failed or is
    /// not offered).
    #[error("OAuth for MCP server {server:?}: {message}")]
    Registration {
        /// The server.
        server: String,
        /// What failed.
        message: String,
    },
    /// The loopback callback failed: wrong `state`, an error from the authorization server,
    /// no callback in time.
    #[error("OAuth for MCP server {server:?}: {message}")]
    Callback {
        /// The server.
        server: String,
        /// What failed.
        message: String,
    },
    /// The token endpoint refused or answered badly.
    #[error("OAuth for MCP server {server:?}: {message}")]
    Token {
        /// The server.
        server: String,
        /// What failed.
        message: String,
    },
    /// The server keeps refusing the tokens it got (the step-up retry limit).
    #[error("OAuth for MCP server {server:?}: {message}")]
    Denied {
        /// The server.
        server: String,
        /// What happened.
        message: String,
    },
    /// The server needs a login that could not start here (no browser, or logins are not
    /// started while connecting).
    #[error("MCP server {server:?} needs an OAuth login: {why}{}{}", .url.as_ref().map(|(u, secs)| format!("; open {u} within {secs} s")).unwrap_or_default(), .command.as_deref().map(|c| format!("; or run `{c}`")).unwrap_or_default())]
    NeedsLogin {
        /// The server.
        server: String,
        /// Why it could not start.
        why: String,
        /// The authorization URL that still completes the login, and for how many seconds
        /// its callback waits (the server is used once it completes).
        url: Option<(String, u64)>,
        /// The command that logs in by hand, when the front end has one.
        command: Option<String>,
    },
    /// The token store could not be written.
    #[error("{0}")]
    Store(String),
    /// Something that should not fail did (the random generator).
    #[error("OAuth: {0}")]
    Internal(String),
}

/// Shows the URL through `print`, then through the inner prompt, and waits whatever the
/// prompt says (the user has the printed URL).
struct PrintThen<'a> {
    print: &'a (dyn Fn(&str) + Send + Sync),
    inner: Arc<dyn AuthorizationPrompt>,
}

#[async_trait::async_trait]
impl AuthorizationPrompt for PrintThen<'_> {
    async fn present(&self, server: &str, url: &str) -> Presented {
        (self.print)(url);
        let _ = self.inner.present(server, url).await;
        Presented::Shown
    }

    async fn finished(&self, server: &str, url: &str, authorized: bool) {
        self.inner.finished(server, url, authorized).await;
    }
}

/// Logs in to `server` by hand (the front ends' `mcp oauth login NAME`): discovers its
/// authorization server, prints the authorization URL with `print` and tries to open it in
/// a browser, waits for the callback (at most [`OAuthOptions::callback_timeout`]) and stores
/// the tokens in [`OAuthOptions::store`]. Returns what is stored (never the token).
pub async fn login(
    server: &McpServerConfig,
    options: &OAuthOptions,
    print: &(dyn Fn(&str) + Send + Sync),
) -> Result<TokenStatus, OAuthError> {
    let (url, oauth) = match &server.transport {
        McpTransport::Http {
            url,
            headers,
            oauth,
        } => {
            if headers
                .names()
                .any(|h| h.eq_ignore_ascii_case("authorization"))
            {
                return Err(OAuthError::NotOAuth {
                    server: server.name.clone(),
                    reason: "has its own Authorization header".into(),
                });
            }
            (url, oauth.as_ref())
        }
        _ => {
            return Err(OAuthError::NotOAuth {
                server: server.name.clone(),
                reason: "does not declare auth: \"oauth\"".into(),
            })
        }
    };
    let Some(dir) = options.store.clone() else {
        return Err(OAuthError::Store(
            "no token store is configured for the login".into(),
        ));
    };
    let authorizer = Authorizer::new(&server.name, url, oauth, options);
    let inner = options
        .prompt
        .clone()
        .unwrap_or_else(|| Arc::new(BrowserPrompt));
    let prompt = PrintThen { print, inner };
    let credentials = authorizer
        .authorize_with(None, Vec::new(), &prompt, false)
        .await?;
    let store = TokenStore::new(dir);
    store
        .save(&server.name, url, &credentials)
        .map_err(|e| OAuthError::Store(e.to_string()))?;
    let status = store
        .status()
        .map_err(|e| OAuthError::Store(e.to_string()))?;
    status
        .into_iter()
        .find(|s| s.server_name == server.name && &s.url == url)
        .ok_or_else(|| OAuthError::Store("the stored token is not readable back".into()))
}
