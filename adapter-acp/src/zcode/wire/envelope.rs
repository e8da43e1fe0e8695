//! The framing: ids, error objects, the incoming line before classification, every
//! outgoing message, the notifications' methods and the `data` of error replies.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::SessionEvent;

/// Name of the protocol in snapshots.
pub const PROTOCOL_NAME: &str = "ZCode Protocol";

/// Version of the protocol in snapshots.
pub const PROTOCOL_VERSION: u32 = 1;

/// Error codes used by the server.
pub mod codes {
    /// Unparseable JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a ZCode Protocol message (for example it carries `jsonrpc`).
    pub const INVALID_REQUEST: i64 = -32600;
    /// Unknown method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Parameters failed validation.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal or model error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// The session is not known, or not active in this process.
    pub const SESSION_UNAVAILABLE: i64 = -32004;
    /// A prompt is already running in the session.
    pub const PROMPT_RUNNING: i64 = -32010;
}

/// The id used in error replies to lines that are not valid messages.
pub const INVALID_MESSAGE_ID: &str = "invalid-message";

/// A request id: a string or an integer, echoed exactly as received.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id.
    Int(i64),
    /// A string id.
    Str(String),
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Int(n) => write!(f, "{n}"),
            Self::Str(s) => f.write_str(s),
        }
    }
}

/// The error object of an error reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// Error code (see [`codes`]).
    pub code: i64,
    /// Human-readable message; never empty.
    pub message: String,
    /// Structured details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// One incoming line, before classification. Unknown top-level keys are rejected like the
/// upstream server's strict envelope schemas do.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMessage {
    /// Request or response id.
    #[serde(default)]
    pub id: Option<RequestId>,
    /// Method of a request or notification.
    #[serde(default)]
    pub method: Option<String>,
    /// Parameters.
    #[serde(default)]
    pub params: Option<Value>,
    /// Result of a response.
    #[serde(default)]
    pub result: Option<Value>,
    /// Error of a response.
    #[serde(default)]
    pub error: Option<ErrorObject>,
    /// Trace context (accepted and ignored).
    #[serde(default)]
    pub trace: Option<Value>,
}

/// Everything this server writes to stdout, one per line.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Outgoing {
    /// A successful reply to a client request.
    Response {
        /// The request's id.
        id: RequestId,
        /// The result.
        result: Value,
    },
    /// An error reply.
    Error {
        /// The request's id (or [`INVALID_MESSAGE_ID`]).
        id: RequestId,
        /// The error.
        error: ErrorObject,
    },
    /// A server → client request (`interaction/*`).
    Request {
        /// `server-N`.
        id: RequestId,
        /// Method name.
        method: String,
        /// Parameters.
        params: Value,
    },
    /// A notification (`session/event`, `startup/storageState`).
    Notification {
        /// Method name.
        method: String,
        /// Parameters.
        params: Value,
    },
}

/// A `session/event` notification, serialised straight from the event: the same line as
/// [`Outgoing::Notification`] with the event as `params`, without building a [`Value`].
#[derive(Debug, Clone, Copy, Serialize)]
pub struct EventNotification<'a> {
    /// Always [`SESSION_EVENT`].
    pub method: &'static str,
    /// The event.
    pub params: &'a SessionEvent,
}

impl<'a> EventNotification<'a> {
    /// The notification carrying `event`.
    pub fn new(event: &'a SessionEvent) -> Self {
        Self {
            method: SESSION_EVENT,
            params: event,
        }
    }
}

/// A `session/event` notification of an event serialised already (as the event log stores
/// it): the same line as [`EventNotification`] of that event, its JSON copied verbatim.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct StoredEventNotification<'a> {
    /// Always [`SESSION_EVENT`].
    pub method: &'static str,
    /// The event's JSON.
    pub params: &'a serde_json::value::RawValue,
}

impl<'a> StoredEventNotification<'a> {
    /// The notification carrying the serialised `event`.
    pub fn new(event: &'a serde_json::value::RawValue) -> Self {
        Self {
            method: SESSION_EVENT,
            params: event,
        }
    }
}

/// Method of an event notification.
pub const SESSION_EVENT: &str = "session/event";

/// Method of the startup notification.
pub const STORAGE_STATE: &str = "startup/storageState";

/// The `data` of an invalid-params error, as the upstream server's zod validation reports
/// it: `{"name": "ZodError", "message": "<the issues, as a JSON string>"}`.
#[derive(Debug, Clone, Serialize)]
pub struct ZodErrorData {
    /// Always `ZodError`.
    pub name: &'static str,
    /// The [`ZodIssue`]s, serialised as a JSON array.
    pub message: String,
}

/// One issue of a [`ZodErrorData`].
#[derive(Debug, Clone, Serialize)]
pub struct ZodIssue<'a> {
    /// The failing path (`(root)` for the params themselves).
    pub path: &'a str,
    /// What is wrong.
    pub message: &'a str,
}

/// The `data` of a model error: `{"name": "ModelProtocolError", "code": …}`.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ModelErrorData {
    /// Always `ModelProtocolError`.
    pub name: &'static str,
    /// E.g. `model_not_found`.
    pub code: &'static str,
}

/// `startup/storageState` params (sent once, `phase: ready`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StorageStateParams {
    /// Always 1.
    pub schema_version: u32,
    /// Startup attempt id.
    pub attempt_id: String,
    /// Sequence of this notification.
    pub sequence: u32,
    /// Database id.
    pub database_id: String,
    /// Always `session`.
    pub database_kind: DatabaseKind,
    /// Always `ready`.
    pub phase: StartupPhase,
    /// Time since start, ms.
    pub elapsed_ms: u64,
}

/// The kind of database in `startup/storageState`: always `session`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DatabaseKind {
    /// The session store.
    Session,
}

/// The startup phase in `startup/storageState`: always `ready`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StartupPhase {
    /// Requests are served.
    Ready,
}
