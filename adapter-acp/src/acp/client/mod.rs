//! What the ACP client lends the agent, by the capabilities it advertised in `initialize`:
//!
//! - `fs.readTextFile` / `fs.writeTextFile` ([`fs`]): the file tools read and write through
//!   the client's buffers (`fs/read_text_file`, `fs/write_text_file`), so a read sees unsaved
//!   changes and a write goes through the editor;
//! - `terminal` ([`terminal`]): `bash` runs in a terminal of the client (`terminal/create`,
//!   `terminal/wait_for_exit`, `terminal/output`, `terminal/kill`, `terminal/release`), shown
//!   in the call's content as `{type: "terminal", terminalId}`;
//! - `elicitation.form` / `elicitation.url` ([`elicit`]): `ask_user` questions and the MCP
//!   servers' questions go to the user as `elicitation/create` forms, and an MCP server's
//!   authorization URL in URL mode.
//!
//! Each is lent to a session through agent-host's
//! [`SessionClient`](agent_host::session::SessionClient) when the session's agent is built;
//! without the capability nothing changes (the local disk and processes, permission-style
//! questions, a browser). Every request to the client is bounded ([`CLIENT_TIMEOUT`] for
//! files and terminals, [`USER_TIMEOUT`] for a person's answer); a client that answers with
//! an error, or not in time, fails the one call with a message the model reads.

pub(crate) mod elicit;
pub(crate) mod fs;
pub(crate) mod terminal;

use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use agent_client_protocol::v1::schema::ClientCapabilities;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Client, JsonRpcRequest};
use agent_core::editor::Editor;
use agent_host::session::SessionClient;
use agent_mcp::oauth::AuthorizationPrompt;
use agent_mcp::Elicitor;

use super::handlers::Shared;

/// Bound on one file or terminal request (not on the command a terminal runs, which its
/// own timeout bounds).
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);
/// Bound on a question to the person at the client.
pub const USER_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// A request to the client that did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// The connection is not up (or is gone).
    #[error("the client is not connected")]
    NotConnected,
    /// No answer within the bound.
    #[error("the client did not answer {1} within {0:?}")]
    TimedOut(Duration, &'static str),
    /// The client answered with an error.
    #[error("the client answered {0} with an error: {1}")]
    Failed(&'static str, String),
}

/// The client's side of one connection: what it advertised and how to reach it.
#[derive(Default)]
pub(crate) struct ClientSide {
    capabilities: OnceLock<ClientCapabilities>,
    cx: OnceLock<ConnectionTo<Client>>,
    shared: OnceLock<Weak<Shared>>,
    /// The tool calls running in one of the client's terminals.
    pub(crate) terminals: terminal::TerminalCalls,
}

impl std::fmt::Debug for ClientSide {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSide")
            .field("capabilities", &self.capabilities.get())
            .field("connected", &self.cx.get().is_some())
            .finish()
    }
}

impl ClientSide {
    /// Records what the client advertised in `initialize` (the first time only).
    pub(crate) fn set_capabilities(&self, capabilities: &ClientCapabilities) {
        let _ = self.capabilities.set(capabilities.clone());
    }

    /// Records the connection to send requests on, and the connection's state.
    pub(crate) fn attach(&self, cx: &ConnectionTo<Client>, shared: &Arc<Shared>) {
        let _ = self.cx.set(cx.clone());
        let _ = self.shared.set(Arc::downgrade(shared));
    }

    fn capabilities(&self) -> Option<&ClientCapabilities> {
        self.capabilities.get()
    }

    /// `fs.readTextFile`.
    pub(crate) fn reads_files(&self) -> bool {
        self.capabilities().is_some_and(|c| c.fs.read_text_file)
    }

    /// `fs.writeTextFile`.
    pub(crate) fn writes_files(&self) -> bool {
        self.capabilities().is_some_and(|c| c.fs.write_text_file)
    }

    /// `terminal`.
    pub(crate) fn has_terminals(&self) -> bool {
        self.capabilities().is_some_and(|c| c.terminal)
    }

    /// `elicitation.form`.
    pub(crate) fn elicits_forms(&self) -> bool {
        self.capabilities()
            .and_then(|c| c.elicitation.as_ref())
            .is_some_and(|e| e.form.is_some())
    }

    /// `elicitation.url`.
    pub(crate) fn elicits_urls(&self) -> bool {
        self.capabilities()
            .and_then(|c| c.elicitation.as_ref())
            .is_some_and(|e| e.url.is_some())
    }

    /// The connection, once attached.
    pub(crate) fn connection(&self) -> Option<&ConnectionTo<Client>> {
        self.cx.get()
    }

    /// The connection's state, while it lives.
    pub(crate) fn shared(&self) -> Option<Arc<Shared>> {
        self.shared.get().and_then(Weak::upgrade)
    }

    /// Sends `request` and waits (at most `timeout`) for the answer; a request given up is
    /// withdrawn from the client (`$/cancel_request`).
    pub(crate) async fn request<R>(
        &self,
        method: &'static str,
        request: R,
        timeout: Duration,
    ) -> Result<R::Response, ClientError>
    where
        R: JsonRpcRequest,
        R::Response: Send + 'static,
    {
        let cx = self.connection().ok_or(ClientError::NotConnected)?;
        let answer = cx.send_request(request).block_task();
        match tokio::time::timeout(timeout, answer).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(err)) => {
                // The details a client gives beside its message say what went wrong.
                let message = match &err.data {
                    Some(serde_json::Value::String(data)) => format!("{} ({data})", err.message),
                    Some(data) if !data.is_null() => format!("{} ({data})", err.message),
                    _ => err.message,
                };
                Err(ClientError::Failed(method, message))
            }
            Err(_) => Err(ClientError::TimedOut(timeout, method)),
        }
    }
}

/// The [`SessionClient`] of a connection: lends each session what the client advertised.
#[derive(Debug, Clone)]
pub(crate) struct Lender(pub(crate) Arc<ClientSide>);

impl SessionClient for Lender {
    fn editor(&self, session_id: &str) -> Editor {
        let side = &self.0;
        let mut editor = Editor::none();
        if side.reads_files() || side.writes_files() {
            editor = editor.with_files(Arc::new(fs::ClientFiles::new(side.clone(), session_id)));
        }
        if side.has_terminals() {
            editor = editor.with_terminals(Arc::new(terminal::ClientTerminals::new(
                side.clone(),
                session_id,
            )));
        }
        editor
    }

    fn elicitor(&self, session_id: &str) -> Option<Arc<dyn Elicitor>> {
        self.0.elicits_forms().then(|| {
            Arc::new(elicit::McpQuestions::new(self.0.clone(), session_id)) as Arc<dyn Elicitor>
        })
    }

    fn authorization_prompt(&self, session_id: &str) -> Option<Arc<dyn AuthorizationPrompt>> {
        self.0.elicits_urls().then(|| {
            Arc::new(elicit::UrlPrompt::new(self.0.clone(), session_id))
                as Arc<dyn AuthorizationPrompt>
        })
    }
}
