//! What front ends accept for `--session-store` (or `AGENT_SESSION_STORE`): `files` (the
//! default: the front end's own files) or a PostgreSQL URL.

use std::sync::Arc;

use agent_host::cli::SessionStoreArgs;
use agent_host::session::{FileStore, SessionStorage};
use secrecy::{ExposeSecret, SecretString};

use crate::error::ConnectError;
use crate::store::{is_postgres_url, PgStore};

/// The environment variable front ends read when `--session-store` is not given.
pub const SESSION_STORE_ENV: &str = agent_host::cli::SESSION_STORE_ENV;

/// Where a front end keeps its sessions.
#[derive(Clone)]
pub enum StoreSpec {
    /// The front end's files (its data directory): the default.
    Files,
    /// A PostgreSQL database shared by a fleet (the URL may hold a password: never shown).
    Postgres(SecretString),
}

impl std::fmt::Debug for StoreSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Files => f.write_str("Files"),
            Self::Postgres(_) => f.write_str("Postgres(..)"),
        }
    }
}

impl StoreSpec {
    /// Parses a `--session-store` value: empty or `files`, or a `postgres://` /
    /// `postgresql://` URL. The URL's password is registered with
    /// [`agent_core::secrets`], so tool output never shows it.
    pub fn parse(value: &str) -> Result<Self, ConnectError> {
        let value = value.trim();
        if value.is_empty() || value.eq_ignore_ascii_case("files") {
            return Ok(Self::Files);
        }
        if !is_postgres_url(value) {
            return Err(ConnectError::InvalidUrl(
                "--session-store takes `files` or a postgres:// URL".to_string(),
            ));
        }
        if let Some(password) = value
            .split_once("://")
            .and_then(|(_, rest)| rest.split_once('@'))
            .and_then(|(auth, _)| auth.split_once(':'))
            .map(|(_, password)| password)
        {
            agent_core::secrets::register_secret(password);
        }
        Ok(Self::Postgres(SecretString::from(value.to_string())))
    }

    /// The flag's value when given, else [`SESSION_STORE_ENV`], else [`StoreSpec::Files`].
    pub fn from_flag_or_env(flag: Option<&str>) -> Result<Self, ConnectError> {
        match flag {
            Some(value) => Self::parse(value),
            None => match std::env::var(SESSION_STORE_ENV) {
                Ok(value) => Self::parse(&value),
                Err(_) => Ok(Self::Files),
            },
        }
    }

    /// What a front end's [`SessionStoreArgs`] (`--session-store`, else
    /// [`SESSION_STORE_ENV`]) name.
    pub fn from_args(args: &SessionStoreArgs) -> Result<Self, ConnectError> {
        match args.value_from_env() {
            Some(value) => Self::parse(value.expose_secret()),
            None => Ok(Self::Files),
        }
    }

    /// Whether sessions live in a database.
    pub fn is_postgres(&self) -> bool {
        matches!(self, Self::Postgres(_))
    }

    /// Opens the store: `files()` for [`StoreSpec::Files`], a connected [`PgStore`]
    /// (migrated, see [`PgStoreBuilder::connect`](crate::PgStoreBuilder::connect)) for a
    /// URL. [`open_or_files`](Self::open_or_files) is the usual call.
    pub async fn open(
        &self,
        files: impl FnOnce() -> Arc<dyn SessionStorage>,
    ) -> Result<Arc<dyn SessionStorage>, ConnectError> {
        match self {
            Self::Files => Ok(files()),
            Self::Postgres(url) => Ok(Arc::new(PgStore::connect(url.expose_secret()).await?)),
        }
    }
}

impl StoreSpec {
    /// The session storage this spec names: a [`FileStore`] under `data_dir` for
    /// [`StoreSpec::Files`], else a connected, migrated [`PgStore`]. The one call a host
    /// needs to build its [`SessionManager`](agent_host::session::SessionManager) on either:
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use agent_host::session::{AgentFactory, SessionManager};
    /// use agent_providers::{ProviderConfig, ProviderId};
    /// use agent_store_postgres::StoreSpec;
    ///
    /// // `files`, or e.g. "postgres://agent:secret@db.internal/agents".
    /// let spec = StoreSpec::parse(&std::env::var("AGENT_SESSION_STORE").unwrap_or_default())?;
    /// let storage = spec.open_or_files("/var/lib/agent/sessions").await?;
    /// let (interactions, _requests) = tokio::sync::mpsc::unbounded_channel();
    /// let factory = AgentFactory::new(ProviderConfig::new(ProviderId::Scripted));
    /// let manager = SessionManager::with_storage(factory, storage, interactions);
    /// # let _ = manager;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn open_or_files(
        &self,
        data_dir: impl Into<std::path::PathBuf>,
    ) -> Result<Arc<dyn SessionStorage>, ConnectError> {
        let data_dir = data_dir.into();
        self.open(move || Arc::new(FileStore::new(data_dir))).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_or_a_postgres_url_and_the_password_stays_hidden() {
        assert!(matches!(StoreSpec::parse(""), Ok(StoreSpec::Files)));
        assert!(matches!(StoreSpec::parse(" Files "), Ok(StoreSpec::Files)));
        assert!(StoreSpec::parse("redis://x").is_err());
        assert!(StoreSpec::parse("/var/lib/sessions").is_err());
        let spec =
            StoreSpec::parse("postgresql://u:s3cret-pass-word@db:5432/agents").expect("postgres");
        assert!(spec.is_postgres());
        assert_eq!(format!("{spec:?}"), "Postgres(..)");
        assert!(agent_core::secrets::registered_secrets()
            .iter()
            .any(|s| s == "s3cret-pass-word"));
    }
}
