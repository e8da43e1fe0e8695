//! One server's OAuth state while connected: the bearer token sent with each request, and what
//! a `401` or `403` answer makes it do (read the stored token, refresh, authorize, step up),
//! one at a time, within the retry limit.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use secrecy::{ExposeSecret, SecretString};
use tokio::sync::watch;

use super::callback::Callback;
use super::discovery::{discover, Challenge, Discovery};
use super::flow::{
    authorization_url, client_identity, exchange_code, random_token, refresh, ClientIdentity,
    Credentials, Pkce,
};
use super::present::{AuthorizationPrompt, BrowserPrompt, Presented};
use super::store::TokenStore;
use super::{OAuthConfig, OAuthError, OAuthOptions};

/// Most authorizations in a row without an authorized answer (the step-up retry limit).
pub(crate) const MAX_AUTHORIZATIONS: u32 = 3;
/// A token expiring within this many seconds is refreshed before it is sent.
const REFRESH_MARGIN: u64 = 60;

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Denied {
    /// `401`: no token, or a token the server does not accept.
    Unauthorized,
    /// `403` with `insufficient_scope`: the token lacks a scope.
    InsufficientScope,
}

/// What one request has tried already.
#[derive(Debug, Default)]
pub(crate) struct Attempts {
    refreshed: bool,
    rounds: u32,
}

#[derive(Default)]
struct Current {
    credentials: Option<Arc<Credentials>>,
    /// Bumped whenever the credentials change.
    generation: u64,
    /// Whether the store was read.
    loaded: bool,
    /// The scopes the last authorization asked for.
    requested: Vec<String>,
}

/// A server's OAuth state.
pub(crate) struct Authorizer {
    server: String,
    url: String,
    config: OAuthConfig,
    /// The server's configuration asks for OAuth (its stored token is sent from the start);
    /// otherwise the store is read only after a `401`.
    declared: bool,
    options: OAuthOptions,
    /// Made on first use.
    http: std::sync::OnceLock<Result<reqwest::Client, String>>,
    store: Option<TokenStore>,
    current: Mutex<Current>,
    /// One refresh or authorization at a time.
    flow: tokio::sync::Mutex<()>,
    failures: AtomicU32,
    last_error: Mutex<Option<String>>,
    authorizing: watch::Sender<bool>,
    /// Called when a login left to the user (no browser) completes in the background.
    on_authorized: Mutex<Option<Arc<dyn Fn() + Send + Sync>>>,
}

/// Clears the "authorizing" flag when an authorization ends, however it ends.
struct Authorizing<'a>(&'a watch::Sender<bool>);

impl Drop for Authorizing<'_> {
    fn drop(&mut self) {
        self.0.send_replace(false);
    }
}

impl Authorizer {
    pub(crate) fn new(
        server: &str,
        url: &str,
        oauth: Option<&OAuthConfig>,
        options: &OAuthOptions,
    ) -> Arc<Self> {
        Arc::new(Self {
            server: server.to_string(),
            url: url.to_string(),
            config: oauth.cloned().unwrap_or_default(),
            declared: oauth.is_some(),
            store: options.store.clone().map(TokenStore::new),
            options: options.clone(),
            http: std::sync::OnceLock::new(),
            current: Mutex::default(),
            flow: tokio::sync::Mutex::new(()),
            failures: AtomicU32::new(0),
            last_error: Mutex::new(None),
            authorizing: watch::channel(false).0,
            on_authorized: Mutex::new(None),
        })
    }

    /// The HTTP client of the flow's requests.
    fn http(&self) -> Result<reqwest::Client, OAuthError> {
        self.http
            .get_or_init(crate::client::http_client)
            .clone()
            .map_err(OAuthError::Internal)
    }

    fn current(&self) -> MutexGuard<'_, Current> {
        self.current.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `true` while an authorization waits for the user (the manager's connect timeout does
    /// not run then).
    pub(crate) fn authorizing(&self) -> watch::Receiver<bool> {
        self.authorizing.subscribe()
    }

    /// Calls `hook` when a login left to the user completes in the background.
    pub(crate) fn on_authorized(&self, hook: Arc<dyn Fn() + Send + Sync>) {
        *self.on_authorized.lock().unwrap_or_else(|e| e.into_inner()) = Some(hook);
    }

    /// Why the last attempt to get a token failed, once.
    pub(crate) fn take_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    fn fail(&self, error: &OAuthError) {
        tracing::warn!(server = %self.server, error = %error, "MCP OAuth failed");
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(error.to_string());
    }

    fn set(&self, credentials: Option<Credentials>) {
        let mut current = self.current();
        current.credentials = credentials.map(Arc::new);
        current.generation += 1;
    }

    /// Stores fresh credentials (a failed write is a warning: the token still serves this
    /// run) and uses them.
    fn keep(&self, credentials: Credentials) {
        if let Some(store) = &self.store {
            if let Err(err) = store.save(&self.server, &self.url, &credentials) {
                tracing::warn!(server = %self.server, error = %err, "the MCP OAuth token was not stored");
            }
        }
        self.set(Some(credentials));
    }

    fn load(&self) {
        let Some(store) = &self.store else {
            self.current().loaded = true;
            return;
        };
        let loaded = match store.load(&self.server, &self.url) {
            Ok(loaded) => loaded,
            Err(err) => {
                tracing::warn!(server = %self.server, error = %err, "the stored MCP OAuth token is unreadable; logging in again");
                None
            }
        };
        if let Some(credentials) = &loaded {
            agent_core::secrets::register_secret(credentials.access_token.expose_secret());
        }
        let mut current = self.current();
        current.loaded = true;
        if let Some(credentials) = loaded {
            current.requested = credentials.scopes.clone();
            current.credentials = Some(Arc::new(credentials));
            current.generation += 1;
        }
    }

    /// The token to send now and the generation it belongs to. A declared server's stored
    /// token is read on first use; a token about to expire is refreshed first (a failed
    /// refresh drops it: the `401` that follows starts a new login).
    pub(crate) async fn bearer(&self) -> (Option<SecretString>, u64) {
        if self.declared && !self.current().loaded {
            let _one = self.flow.lock().await;
            if !self.current().loaded {
                self.load();
            }
        }
        let (credentials, generation) = {
            let current = self.current();
            (current.credentials.clone(), current.generation)
        };
        let Some(credentials) = credentials else {
            return (None, generation);
        };
        if !credentials.expires_within(REFRESH_MARGIN) || credentials.refresh_token.is_none() {
            return (Some(credentials.access_token.clone()), generation);
        }
        let _one = self.flow.lock().await;
        if self.current().generation == generation {
            self.refresh_now(&credentials).await;
        }
        let current = self.current();
        (
            current.credentials.as_ref().map(|c| c.access_token.clone()),
            current.generation,
        )
    }

    async fn refresh_now(&self, credentials: &Credentials) -> bool {
        let refreshed = match self.http() {
            Ok(http) => refresh(&http, &self.server, credentials).await,
            Err(err) => Err(err),
        };
        match refreshed {
            Ok(fresh) => {
                self.keep(fresh);
                true
            }
            Err(err) => {
                tracing::warn!(server = %self.server, error = %err, "refreshing the MCP OAuth token failed; logging in again");
                if let Some(store) = &self.store {
                    let _ = store.remove_exact(&self.server, &self.url);
                }
                self.set(None);
                false
            }
        }
    }

    /// An answer to a request that carried a token was not a refusal.
    pub(crate) fn succeeded(&self) {
        self.failures.store(0, Ordering::SeqCst);
    }

    /// A request sent with the credentials of generation `sent` was refused: gets new ones.
    /// `true`: send it again; `false`: give up (the refusal stands; [`Self::take_error`] says
    /// why when something failed).
    pub(crate) async fn recover(
        self: &Arc<Self>,
        sent: u64,
        denied: Denied,
        challenge: &Challenge,
        attempts: &mut Attempts,
    ) -> bool {
        attempts.rounds += 1;
        if attempts.rounds > MAX_AUTHORIZATIONS + 3 {
            return false;
        }
        let _one = self.flow.lock().await;
        let (generation, loaded, credentials) = {
            let current = self.current();
            (
                current.generation,
                current.loaded,
                current.credentials.clone(),
            )
        };
        if generation != sent {
            // Another request renewed the token meanwhile.
            return true;
        }
        if !loaded {
            self.load();
            if self.current().generation != sent {
                return true;
            }
        }
        if let (Denied::Unauthorized, Some(credentials)) = (denied, &credentials) {
            if credentials.refresh_token.is_some() && !attempts.refreshed {
                attempts.refreshed = true;
                if self.refresh_now(credentials).await {
                    return true;
                }
            }
        }
        if self.failures.load(Ordering::SeqCst) >= MAX_AUTHORIZATIONS {
            self.fail(&OAuthError::Denied {
                server: self.server.clone(),
                message: format!(
                    "the server refused the token after {MAX_AUTHORIZATIONS} authorizations{}",
                    match challenge.scopes.is_empty() {
                        true => String::new(),
                        false => format!(" (it asks for scope {:?})", challenge.scopes.join(" ")),
                    }
                ),
            });
            return false;
        }
        self.failures.fetch_add(1, Ordering::SeqCst);
        let scopes = match denied {
            Denied::Unauthorized => challenge.scopes.clone(),
            Denied::InsufficientScope => {
                // Step up: what was asked for before, plus what the server asks for now.
                let mut scopes = self.current().requested.clone();
                if let Some(credentials) = &credentials {
                    scopes.extend(credentials.scopes.iter().cloned());
                }
                scopes.extend(challenge.scopes.iter().cloned());
                let mut seen = std::collections::HashSet::new();
                scopes.retain(|s| seen.insert(s.clone()));
                scopes
            }
        };
        match self.authorize(Some(challenge), scopes).await {
            Ok(fresh) => {
                self.keep(fresh);
                true
            }
            Err(err) => {
                self.fail(&err);
                false
            }
        }
    }

    /// A full authorization: discovery, the client's identity, the browser, the callback,
    /// the code exchange.
    pub(crate) async fn authorize(
        self: &Arc<Self>,
        challenge: Option<&Challenge>,
        scopes: Vec<String>,
    ) -> Result<Credentials, OAuthError> {
        if !self.options.interactive {
            return Err(self.needs_login("a login is not started while connecting"));
        }
        let prompt: Arc<dyn AuthorizationPrompt> = self
            .options
            .prompt
            .clone()
            .unwrap_or_else(|| Arc::new(BrowserPrompt));
        self.authorize_with(challenge, scopes, prompt.as_ref(), true)
            .await
    }

    pub(crate) fn needs_login(&self, why: &str) -> OAuthError {
        self.needs_login_at(why, None)
    }

    /// [`Self::needs_login`], with the URL that still completes it for a while.
    fn needs_login_at(&self, why: &str, url: Option<&str>) -> OAuthError {
        OAuthError::NeedsLogin {
            server: self.server.clone(),
            why: why.to_string(),
            url: url.map(|u| (u.to_string(), self.options.callback_timeout.as_secs())),
            command: self
                .options
                .login_command
                .as_ref()
                .map(|c| format!("{c} {}", self.server)),
        }
    }

    /// [`Self::authorize`] with `prompt`; when `must_show`, a URL the prompt could not show
    /// ends the attempt.
    pub(crate) async fn authorize_with(
        self: &Arc<Self>,
        challenge: Option<&Challenge>,
        mut scopes: Vec<String>,
        prompt: &dyn AuthorizationPrompt,
        must_show: bool,
    ) -> Result<Credentials, OAuthError> {
        let http = self.http()?;
        let discovery = discover(&http, &self.server, &self.url, challenge, &self.config).await?;
        if scopes.is_empty() {
            scopes = match self.config.scopes.is_empty() {
                false => self.config.scopes.clone(),
                true => discovery.scopes_supported.clone().unwrap_or_default(),
            };
        }
        let callback = Callback::bind(&self.server).await?;
        let metadata_url = self
            .config
            .client_metadata_url
            .as_deref()
            .or(self.options.client_metadata_url.as_deref());
        let client = client_identity(
            &http,
            &self.server,
            &discovery,
            &self.config,
            metadata_url,
            &self.options.client_name,
            callback.redirect_uri(),
            &scopes,
        )
        .await?;
        let pkce = Pkce::new()?;
        let state = random_token(24)?;
        let url = authorization_url(
            &discovery,
            &client,
            callback.redirect_uri(),
            &state,
            &pkce,
            &scopes,
        )?;
        self.current().requested = scopes.clone();
        let _authorizing = {
            self.authorizing.send_replace(true);
            Authorizing(&self.authorizing)
        };
        let redeem = Redeem {
            http,
            server: self.server.clone(),
            discovery,
            client,
            redirect_uri: callback.redirect_uri().to_string(),
            pkce,
            scopes,
        };
        // The callback is awaited while the prompt shows the URL: a browser that follows the
        // redirect at once gets its answer before its opener returns.
        let mut code =
            Box::pin(callback.code(self.server.clone(), state, self.options.callback_timeout));
        let code = tokio::select! {
            presented = prompt.present(&self.server, &url) => match presented {
                Presented::NotShown(why) if must_show => {
                    // Shown where the front end shows warnings; the callback keeps waiting
                    // in the background, and a login completed there serves the server.
                    tracing::warn!(server = %self.server, %url, "MCP server needs OAuth authorization and {why}: open the URL to authorize it");
                    let this = self.clone();
                    tokio::spawn(async move {
                        match redeem.code(code.await).await {
                            Ok(credentials) => {
                                this.keep(credentials);
                                this.failures.store(0, Ordering::SeqCst);
                                let hook = this
                                    .on_authorized
                                    .lock()
                                    .unwrap_or_else(|e| e.into_inner())
                                    .clone();
                                if let Some(hook) = hook {
                                    hook();
                                }
                            }
                            Err(err) => {
                                tracing::debug!(server = %this.server, error = %err, "the login left to the user did not complete");
                            }
                        }
                    });
                    return Err(self.needs_login_at(&why, Some(&url)));
                }
                Presented::Shown | Presented::NotShown(_) => code.await,
            },
            code = &mut code => code,
        };
        let authorized = redeem.code(code).await;
        prompt
            .finished(&self.server, &url, authorized.is_ok())
            .await;
        authorized
    }
}

/// What redeems an authorization code at the token endpoint, owned, so that a login left to
/// the user can finish on a task of its own.
struct Redeem {
    http: reqwest::Client,
    server: String,
    discovery: Discovery,
    client: ClientIdentity,
    redirect_uri: String,
    pkce: Pkce,
    scopes: Vec<String>,
}

impl Redeem {
    /// The credentials for the callback's `code` (its error, when it brought none).
    async fn code(&self, code: Result<String, OAuthError>) -> Result<Credentials, OAuthError> {
        exchange_code(
            &self.http,
            &self.server,
            &self.discovery,
            &self.client,
            &code?,
            &self.redirect_uri,
            &self.pkce,
            &self.scopes,
        )
        .await
    }
}
