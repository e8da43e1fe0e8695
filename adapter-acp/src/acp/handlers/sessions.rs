//! Session requests of the ACP agent: `initialize`, `session/new`, `session/load`,
//! `session/list` and `session/set_mode`, and the session modes offered.

use std::path::Path;
use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, Implementation, InitializeRequest, InitializeResponse, ListSessionsRequest,
    ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, McpCapabilities,
    NewSessionRequest, NewSessionResponse, PromptCapabilities, SessionCapabilities,
    SessionCloseCapabilities, SessionDeleteCapabilities, SessionId, SessionInfo,
    SessionListCapabilities, SessionMode as AcpMode, SessionModeState, SessionResumeCapabilities,
    SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::schema::{McpServer, Meta};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Client, Error};
use agent_host::session::{
    CreateOptions, FactoryError, ManagerError, ResumeOptions, Session, SessionMode,
};
use agent_mcp::{McpServerConfig, ServerState};

use super::{config, internal, invalid_params, notify, session_error, session_not_found, Shared};
use crate::acp::mapping;

/// The session modes offered, in order, as `(id, name, description)`. They are the ZCode
/// front end's modes (sessions are shared with it); `build` is the default.
pub const MODES: [(SessionMode, &str, &str); 5] = [
    (
        SessionMode::Build,
        "Build",
        "Asks before every call that changes files or runs commands",
    ),
    (
        SessionMode::Edit,
        "Accept edits",
        "Workspace edits run without asking; risky commands ask",
    ),
    (
        SessionMode::Auto,
        "Auto",
        "Reads, edits and low- or medium-risk commands run; high-risk calls ask",
    ),
    (
        SessionMode::Plan,
        "Plan",
        "Read-only: the agent explores and proposes a plan",
    ),
    (SessionMode::Yolo, "Yolo", "Everything runs without asking"),
];

/// The mode a `session/set_mode` id names: our ids, plus the common aliases `default` /
/// `ask` (build), `acceptEdits` (edit), `unsafe` / `bypassPermissions` (yolo).
pub fn parse_mode(id: &str) -> Option<SessionMode> {
    match id {
        "build" | "default" | "ask" => Some(SessionMode::Build),
        "edit" | "acceptEdits" | "accept_edits" => Some(SessionMode::Edit),
        "auto" => Some(SessionMode::Auto),
        "plan" => Some(SessionMode::Plan),
        "yolo" | "unsafe" | "bypassPermissions" => Some(SessionMode::Yolo),
        _ => None,
    }
}

/// The `modes` of a session in `current`.
pub fn mode_state(current: SessionMode) -> SessionModeState {
    SessionModeState::new(
        current.as_str(),
        MODES
            .iter()
            .map(|(mode, name, description)| {
                AcpMode::new(mode.as_str(), *name).description(description.to_string())
            })
            .collect(),
    )
}

fn absolute_cwd(cwd: &Path) -> Result<String, Error> {
    if !cwd.is_absolute() {
        return Err(invalid_params(format!(
            "cwd must be an absolute path, got {}",
            cwd.display()
        )));
    }
    Ok(cwd.to_string_lossy().into_owned())
}

pub(super) fn initialize(req: &InitializeRequest) -> InitializeResponse {
    tracing::debug!(version = ?req.protocol_version, "initialize");
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .prompt_capabilities(PromptCapabilities::new().image(true).embedded_context(true))
                // stdio servers always; streamable HTTP too (agent-mcp); not the legacy SSE.
                .mcp_capabilities(McpCapabilities::new().http(true))
                .session_capabilities(
                    SessionCapabilities::new()
                        .list(SessionListCapabilities::new())
                        .resume(SessionResumeCapabilities::new())
                        .close(SessionCloseCapabilities::new())
                        .delete(SessionDeleteCapabilities::new()),
                ),
        )
        .agent_info(
            Implementation::new("adapter-acp", env!("CARGO_PKG_VERSION"))
                .title("adapter-acp (agent-core)".to_string()),
        )
}

/// A session's `mcpServers` as server configurations; an invalid list is the request's
/// `invalid_params` error.
pub(super) fn session_servers(servers: &[McpServer]) -> Result<Vec<McpServerConfig>, Error> {
    mapping::mcp_servers(servers).map_err(|e| invalid_params(format!("mcpServers: {e}")))
}

/// A session that could not be made: an invalid MCP server list (the request's own or
/// with `--mcp-config`) is `invalid_params`, the rest as [`session_error`].
pub(super) fn activation_error(err: ManagerError, id: Option<&str>) -> Error {
    match err {
        ManagerError::Factory(FactoryError::Mcp(e)) => invalid_params(format!("mcpServers: {e}")),
        err => session_error(err, id),
    }
}

/// The `_meta` of a session's response: `{"mcpServers": [{name, transport, status, reason?,
/// tools}]}` when it has MCP servers (ACP has no field for their state; a server that
/// failed is listed with its reason), else none.
pub(super) fn servers_meta(session: &Session) -> Option<Meta> {
    let mcp = session.mcp();
    if mcp.is_empty() {
        return None;
    }
    let status = mcp.status();
    for server in &status {
        if let ServerState::Failed { reason } = &server.state {
            tracing::warn!(session = %session.id(), server = %server.name, %reason, "MCP server skipped");
        }
    }
    mapping::meta::meta("mcpServers", status)
}

pub(super) async fn new_session(
    s: &Shared,
    req: NewSessionRequest,
) -> Result<NewSessionResponse, Error> {
    let cwd = absolute_cwd(&req.cwd)?;
    let mcp_servers = session_servers(&req.mcp_servers)?;
    // The provider's models are listed (the first time) while the session is made.
    config::prefetch_models(s);
    let session = s
        .manager
        .create(CreateOptions {
            workspace_path: cwd,
            mcp_servers,
            ..Default::default()
        })
        .await
        .map_err(|e| activation_error(e, None))?;
    let meta = session.meta();
    s.titles.known(&session);
    Ok(
        NewSessionResponse::new(SessionId::new(meta.session_id.as_str()))
            .modes(mode_state(meta.mode))
            .config_options(config::options(s, &session).await)
            .meta(servers_meta(&session)),
    )
}

/// The stored session `id` made active here for `method` (`session/load`, `session/resume`),
/// connecting `servers`; one active here already keeps its MCP servers and is brought up to
/// date if another node changed it since. A `cwd` other than the session's own is logged:
/// the session keeps its workspace.
pub(super) async fn activate(
    s: &Shared,
    id: &str,
    servers: &[McpServer],
    cwd: &Path,
    method: &str,
) -> Result<Arc<Session>, Error> {
    let mcp_servers = session_servers(servers)?;
    let (session, loaded) = s
        .manager
        .resume_with(id, ResumeOptions { mcp_servers })
        .await
        .map_err(|e| activation_error(e, Some(id)))?;
    let session = match loaded {
        true => session,
        false => {
            if !servers.is_empty() {
                tracing::info!(session = %id, "{method} of a session already active: it keeps its MCP servers");
            }
            (s.manager.refresh(id).await)
                .map_err(|e| activation_error(e, Some(id)))?
                .unwrap_or(session)
        }
    };
    let stored = session.meta().workspace_path;
    if Path::new(&stored) != cwd {
        tracing::info!(
            session = %id,
            %stored,
            requested = %cwd.display(),
            "{method}: keeping the session's own workspace"
        );
    }
    Ok(session)
}

pub(super) async fn load_session(
    s: &Shared,
    cx: &ConnectionTo<Client>,
    req: LoadSessionRequest,
) -> Result<LoadSessionResponse, Error> {
    let id = req.session_id.0.to_string();
    let session = activate(s, &id, &req.mcp_servers, &req.cwd, "session/load").await?;
    let meta = session.meta();
    // Notifications go out in order, before the response.
    let sid = SessionId::new(id.as_str());
    let mcp = Some(session.mcp()).filter(|m| !m.is_empty());
    for update in mapping::replay(&session.messages(), Path::new(&meta.workspace_path), mcp) {
        notify(s, cx, &sid, update);
    }
    if !meta.todos.is_empty() {
        notify(s, cx, &sid, mapping::plan_update(&meta.todos));
    }
    s.titles.known(&session);
    Ok(LoadSessionResponse::new()
        .modes(mode_state(meta.mode))
        .config_options(config::options(s, &session).await)
        .meta(servers_meta(&session)))
}

pub(super) async fn list_sessions(
    s: &Shared,
    req: ListSessionsRequest,
) -> Result<ListSessionsResponse, Error> {
    let metas = s.manager.list().await.map_err(internal)?;
    let sessions = metas
        .into_iter()
        .filter(|m| {
            req.cwd
                .as_ref()
                .is_none_or(|cwd| Path::new(&m.workspace_path) == cwd)
        })
        .map(|m| {
            let updated =
                chrono::DateTime::from_timestamp_millis(m.updated_at).map(|t| t.to_rfc3339());
            SessionInfo::new(
                SessionId::new(m.session_id.as_str()),
                m.workspace_path.clone(),
            )
            .title((!m.title.is_empty()).then(|| m.title.clone()))
            .updated_at(updated)
        })
        .collect();
    Ok(ListSessionsResponse::new(sessions))
}

pub(super) fn active(s: &Shared, id: &str) -> Result<Arc<Session>, Error> {
    s.manager.get(id).ok_or_else(|| session_not_found(id))
}

pub(super) async fn set_mode(
    s: &Shared,
    cx: &ConnectionTo<Client>,
    req: SetSessionModeRequest,
) -> Result<SetSessionModeResponse, Error> {
    let session = active(s, &req.session_id.0)?;
    let mode = parse_mode(&req.mode_id.0).ok_or_else(|| {
        let ids: Vec<&str> = MODES.iter().map(|(m, _, _)| m.as_str()).collect();
        invalid_params(format!(
            "unknown mode {:?}; expected one of {}",
            &*req.mode_id.0,
            ids.join(", ")
        ))
    })?;
    session.set_mode(mode).await.map_err(internal)?;
    // The `mode` config option changed with it.
    config::announce(s, cx, &session);
    Ok(SetSessionModeResponse::new())
}
