//! The rest of a session's life on ACP: `session/resume` (active again, without replaying
//! its history), `session/close` (its running prompt cancelled, its MCP servers stopped,
//! the live session freed; it stays stored, to be loaded or resumed later), `session/delete`
//! (gone from `session/list` and from the store), and `session_info_update` with the
//! session's title once its first prompt gives it one.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    CloseSessionRequest, CloseSessionResponse, DeleteSessionRequest, DeleteSessionResponse,
    ResumeSessionRequest, ResumeSessionResponse, SessionInfoUpdate, SessionUpdate,
};
use agent_client_protocol::Error;
use agent_host::session::{ManagerError, Session};

use super::sessions::{activate, mode_state, servers_meta};
use super::{config, internal, session_not_found, Shared};

/// How long closing a session waits for its running turn to stop.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// The title last announced per session (or known when it became active here).
#[derive(Debug, Default)]
pub(crate) struct Titles(Mutex<HashMap<String, String>>);

impl Titles {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, String>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remembers `session`'s title as the client knows it.
    pub(crate) fn known(&self, session: &Session) {
        self.lock()
            .insert(session.id().to_string(), session.meta().title);
    }

    /// A `session_info_update` with `session`'s title, when it has one the client has not
    /// been told yet.
    pub(crate) fn update(&self, session: &Session) -> Option<SessionUpdate> {
        let meta = session.meta();
        if meta.title.is_empty() {
            return None;
        }
        let told = self
            .lock()
            .insert(meta.session_id.clone(), meta.title.clone());
        if told.as_deref() == Some(meta.title.as_str()) {
            return None;
        }
        let updated =
            chrono::DateTime::from_timestamp_millis(meta.updated_at).map(|t| t.to_rfc3339());
        Some(SessionUpdate::SessionInfoUpdate(
            SessionInfoUpdate::new()
                .title(meta.title)
                .updated_at(updated),
        ))
    }

    fn forget(&self, id: &str) {
        self.lock().remove(id);
    }
}

/// `session/resume`: the stored session active here (connecting the request's MCP
/// servers), answered with its modes and config options, without replaying its history.
pub(super) async fn resume_session(
    s: &Shared,
    req: ResumeSessionRequest,
) -> Result<ResumeSessionResponse, Error> {
    let id = req.session_id.0.to_string();
    let session = activate(s, &id, &req.mcp_servers, &req.cwd, "session/resume").await?;
    let meta = session.meta();
    s.titles.known(&session);
    Ok(ResumeSessionResponse::new()
        .modes(mode_state(meta.mode))
        .config_options(config::options(s, &session).await)
        .meta(servers_meta(&session)))
}

/// `session/close`: cancels the session's prompt (answered `cancelled`), ends it here
/// (`session_end` hooks, MCP servers stopped) and frees it; it stays stored. Closing a
/// session that is not active here is a no-op; one that does not exist is not found.
pub(super) async fn close_session(
    s: &Shared,
    req: CloseSessionRequest,
) -> Result<CloseSessionResponse, Error> {
    let id = req.session_id.0.to_string();
    if s.manager.get(&id).is_none() {
        return match s.manager.storage().load_meta(&id).await {
            Ok(_) => Ok(CloseSessionResponse::new()),
            Err(agent_host::session::StoreError::NotFound(_)) => Err(session_not_found(&id)),
            Err(err) => Err(internal(err)),
        };
    }
    super::prompt::cancel(s, &id);
    s.manager.close(&id, CLOSE_WAIT).await;
    s.titles.forget(&id);
    s.commands().remove(&id);
    Ok(CloseSessionResponse::new())
}

/// `session/delete`: closes the session when it is active, then removes it from the store
/// (it is no longer listed, loaded or resumed).
pub(super) async fn delete_session(
    s: &Shared,
    req: DeleteSessionRequest,
) -> Result<DeleteSessionResponse, Error> {
    let id = req.session_id.0.to_string();
    super::prompt::cancel(s, &id);
    match s.manager.delete(&id, CLOSE_WAIT).await {
        Ok(()) => {}
        Err(ManagerError::NotFound(_)) => return Err(session_not_found(&id)),
        Err(err) => return Err(internal(err)),
    }
    s.titles.forget(&id);
    s.commands().remove(&id);
    Ok(DeleteSessionResponse::new())
}
