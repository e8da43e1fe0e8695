//! What front ends accept for `--session-store` (or `AGENT_SESSION_STORE`): `files` (the
//! default: the front end's own files) or a PostgreSQL URL.

use std::sync::Arc;

use agent_host::session::SessionStorage;
use secrecy::{ExposeSecret, SecretString};

use crate::error::ConnectError;
use crate::store::{is_postgres_url, PgStore};

/// The environment variable front ends read when `--session-store` is not given.
pub const SESSION_STORE_ENV: &str = "AGENT_SESSION_STORE";

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

    /// Whether sessions live in a database.
    pub fn is_postgres(&self) -> bool {
        matches!(self, Self::Postgres(_))
    }

    /// Opens the store: `files()` for [`StoreSpec::Files`], a connected [`PgStore`]
    /// (migrated, see [`PgStoreBuilder::connect`](crate::PgStoreBuilder::connect)) for a
    /// URL.
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
