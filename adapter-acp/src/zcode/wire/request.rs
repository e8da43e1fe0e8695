//! Client → server requests: each method with its typed params, parsed before dispatch.
//!
//! [`ClientRequest`] has the wire's shape (`{"method": …, "params": …}`, as serde's
//! adjacently tagged form), and [`ClientRequest::parse`] is how the server reads one: a
//! method it does not know is [`RequestError::UnknownMethod`] ("method not found"), and
//! params that fail validation are [`RequestError::InvalidParams`] naming the failing path,
//! as the upstream server's validation does. Absent params are `{}`.

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

use super::{
    CancelBackgroundTaskParams, CreateParams, EventsParams, ForkParams, GoalParams, ListParams,
    McpListParams, MessagesParams, ReadParams, ResumeParams, RewindParams, SendParams,
    SessionParams, SetModeParams, SetModelParams, SetThoughtLevelParams, SteerParams,
    SubagentsParams, SubscribeParams,
};

/// Why a request could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// No such method.
    #[error("Method not found: {0}")]
    UnknownMethod(String),
    /// The params failed validation.
    #[error("Invalid params at `{path}`: {message}")]
    InvalidParams {
        /// The failing path (`a.b`; empty for the params themselves).
        path: String,
        /// What is wrong.
        message: String,
    },
}

macro_rules! client_requests {
    ($( $(#[$doc:meta])* $method:literal => $variant:ident($params:ty), )*) => {
        /// A request (or notification) of the client: its method and typed params.
        #[derive(Debug, Clone, Deserialize)]
        #[serde(tag = "method", content = "params")]
        pub enum ClientRequest {
            $( $(#[$doc])* #[serde(rename = $method)] $variant($params), )*
        }

        impl ClientRequest {
            /// Every method a client may call.
            pub const METHODS: &'static [&'static str] = &[$($method),*];

            /// The request's method.
            pub fn method(&self) -> &'static str {
                match self {
                    $( Self::$variant(_) => $method, )*
                }
            }

            /// Reads the request `method` with `params` (absent: `{}`).
            pub fn parse(method: &str, params: Option<Value>) -> Result<Self, RequestError> {
                match method {
                    $( $method => parse_params(params).map(Self::$variant), )*
                    _ => Err(RequestError::UnknownMethod(method.to_string())),
                }
            }
        }
    };
}

client_requests! {
    /// `session/create`.
    "session/create" => Create(CreateParams),
    /// `session/list`.
    "session/list" => List(ListParams),
    /// `session/resume`.
    "session/resume" => Resume(ResumeParams),
    /// `session/read`.
    "session/read" => Read(ReadParams),
    /// `session/messages`.
    "session/messages" => Messages(MessagesParams),
    /// `session/subscribe`.
    "session/subscribe" => Subscribe(SubscribeParams),
    /// `session/events`.
    "session/events" => Events(EventsParams),
    /// `session/send`.
    "session/send" => Send(SendParams),
    /// `session/stop`.
    "session/stop" => Stop(SessionParams),
    /// `session/steer`.
    "session/steer" => Steer(SteerParams),
    /// `session/fork`.
    "session/fork" => Fork(ForkParams),
    /// `session/compact`.
    "session/compact" => Compact(SessionParams),
    /// `session/rewind`.
    "session/rewind" => Rewind(RewindParams),
    /// `session/goal`.
    "session/goal" => Goal(GoalParams),
    /// `session/setMode`.
    "session/setMode" => SetMode(SetModeParams),
    /// `session/setThoughtLevel`.
    "session/setThoughtLevel" => SetThoughtLevel(SetThoughtLevelParams),
    /// `session/setModel`.
    "session/setModel" => SetModel(SetModelParams),
    /// `session/cancelBackgroundTask`.
    "session/cancelBackgroundTask" => CancelBackgroundTask(CancelBackgroundTaskParams),
    /// `session/subagents`.
    "session/subagents" => Subagents(SubagentsParams),
    /// `session/close`.
    "session/close" => Close(SessionParams),
    /// `mcp/list`.
    "mcp/list" => McpList(McpListParams),
}

/// Parses params into `T`; failures name the failing path (a missing field: the field
/// itself, not its parent).
fn parse_params<T: DeserializeOwned>(params: Option<Value>) -> Result<T, RequestError> {
    let value = params.unwrap_or_else(|| Value::Object(Default::default()));
    if !value.is_object() {
        return Err(RequestError::InvalidParams {
            path: String::new(),
            message: "expected an object".to_string(),
        });
    }
    serde_path_to_error::deserialize(value).map_err(|err| {
        let mut path = err.path().to_string();
        let message = err.inner().to_string();
        // serde reports a missing field at its parent; name the field itself.
        if let Some(field) = message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split('`').next())
        {
            path = match path.as_str() {
                "." | "" => field.to_string(),
                parent => format!("{parent}.{field}"),
            };
        }
        if path == "." {
            path.clear();
        }
        RequestError::InvalidParams { path, message }
    })
}
