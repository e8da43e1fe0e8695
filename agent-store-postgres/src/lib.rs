//! A PostgreSQL session store for agent-sdk fleets.
//!
//! [`PgStore`] implements agent-host's [`SessionStorage`](agent_host::session::SessionStorage)
//! (and through it agent-core's [`SessionStore`](agent_core::session::SessionStore)): session metadata,
//! the agent's transcript records and a front end's numbered event log live in one database
//! that every node of a fleet shares, so any node can resume, read, fork and replay any
//! session.
#![warn(missing_docs)]

mod error;
pub mod lease;
pub mod migrate;
mod presence;
mod shared;
mod spec;
mod store;
#[cfg(feature = "test-util")]
pub mod testing;

pub use error::ConnectError;
pub use lease::WriterLease;
pub use spec::{StoreSpec, SESSION_STORE_ENV};
pub use store::{is_postgres_url, PgStore, PgStoreBuilder, DEFAULT_SCHEMA};
