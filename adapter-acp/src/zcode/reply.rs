//! The answer to a client request: a result, or an error reply in the protocol's form.

use serde::Serialize;
use serde_json::Value;

use super::wire::{codes, ErrorObject, RequestError, ZodErrorData, ZodIssue};

/// An error reply.
#[derive(Debug, Clone)]
pub struct RpcError(pub(crate) ErrorObject);

impl RpcError {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Self {
        Self(ErrorObject {
            code,
            message: message.into(),
            data: None,
        })
    }

    pub(crate) fn with_data(mut self, data: impl Serialize) -> Self {
        self.0.data = serde_json::to_value(data).ok();
        self
    }

    pub(crate) fn invalid_params(path: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        let path = if path.is_empty() { "(root)" } else { path };
        Self::new(
            codes::INVALID_PARAMS,
            format!("Invalid params — {path}: {message}"),
        )
        .with_data(ZodErrorData {
            name: "ZodError",
            message: serde_json::to_string(&[ZodIssue {
                path,
                message: &message,
            }])
            .unwrap_or_default(),
        })
    }

    pub(crate) fn not_active(id: &str) -> Self {
        Self::new(
            codes::SESSION_UNAVAILABLE,
            format!("Session is not active: {id}"),
        )
    }

    pub(crate) fn not_found(id: &str) -> Self {
        Self::new(
            codes::SESSION_UNAVAILABLE,
            format!("Session not found: {id}"),
        )
    }

    pub(crate) fn internal(message: impl std::fmt::Display) -> Self {
        Self::new(codes::INTERNAL_ERROR, message.to_string())
    }

    pub(crate) fn running(message: impl Into<String>) -> Self {
        Self::new(codes::PROMPT_RUNNING, message)
    }
}

impl From<RequestError> for RpcError {
    fn from(err: RequestError) -> Self {
        match err {
            RequestError::UnknownMethod(method) => Self::new(
                codes::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            ),
            RequestError::InvalidParams { path, message } => Self::invalid_params(&path, message),
        }
    }
}

pub(crate) type Reply = Result<Value, RpcError>;

pub(crate) fn ok<T: Serialize>(value: T) -> Reply {
    serde_json::to_value(value).map_err(RpcError::internal)
}
