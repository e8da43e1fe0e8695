//! [`SessionClient`]: what a front end's client lends each session — an editor's text
//! buffers and terminals for the tools ([`agent_core::editor`]), and a way to put the MCP
//! servers' questions and authorization URLs to the user. A front end that knows its
//! client's capabilities (ACP's `fs`, `terminal`, `elicitation`) implements it and gives it
//! to the factory ([`AgentFactory::session_client`](super::AgentFactory::session_client));
//! without one every session uses the local disk and processes, and the MCP defaults.

use std::sync::Arc;

use agent_core::editor::Editor;
use agent_mcp::oauth::AuthorizationPrompt;
use agent_mcp::Elicitor;

/// What the client lends the session `session_id`; every method has the "nothing lent"
/// default.
pub trait SessionClient: Send + Sync {
    /// The text buffers and terminals the session's tools use.
    fn editor(&self, session_id: &str) -> Editor {
        let _ = session_id;
        Editor::none()
    }

    /// Where the session's MCP servers' questions (`elicitation/create`) go; `None`: the
    /// capabilities' setting.
    fn elicitor(&self, session_id: &str) -> Option<Arc<dyn Elicitor>> {
        let _ = session_id;
        None
    }

    /// How an authorization URL of the session's MCP servers reaches the user; `None`: the
    /// capabilities' setting (a browser).
    fn authorization_prompt(&self, session_id: &str) -> Option<Arc<dyn AuthorizationPrompt>> {
        let _ = session_id;
        None
    }
}
