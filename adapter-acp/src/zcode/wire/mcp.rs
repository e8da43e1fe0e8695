//! `mcp/list`: the MCP servers of the sessions.

use agent_mcp::ServerStatus;
use serde::{Deserialize, Serialize};

/// `mcp/list` parameters.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpListParams {
    /// The session whose servers to list; without it, the servers of every active session.
    #[serde(default)]
    pub session_id: Option<String>,
}

/// `mcp/list` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpListResult {
    /// The servers.
    pub servers: Vec<McpServerInfo>,
}

/// One MCP server in `mcp/list`: `{sessionId, name, transport, status: connected|failed,
/// reason?, tools, pid?}`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerInfo {
    /// The session it serves.
    pub session_id: String,
    /// Name, transport, status (with the reason of a failure), tools and pid.
    #[serde(flatten)]
    pub server: ServerStatus,
}
