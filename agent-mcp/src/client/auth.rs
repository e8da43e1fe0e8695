//! The HTTP client of a server that may ask for OAuth: rmcp's reqwest client with the
//! server's bearer token on every request, and the [`Authorizer`] called when an answer is
//! `401` or `403 insufficient_scope`, after which the same request is sent again. rmcp's
//! transport never sees the refusal of a request that a new token then lets through.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use secrecy::ExposeSecret;
use sse_stream::Sse;

use crate::oauth::{Attempts, Authorizer, Challenge, Denied};

type Error = StreamableHttpError<reqwest::Error>;

/// rmcp's reqwest client, with OAuth for a server that may ask for it. Every HTTP server
/// goes through this one type (without an authorizer it only delegates), so rmcp's
/// transport is compiled once.
#[derive(Clone)]
pub(crate) struct OAuthHttp {
    pub(crate) inner: reqwest::Client,
    pub(crate) auth: Option<Arc<Authorizer>>,
}

/// Whether an error is a refusal the authorizer can act on.
fn denied(error: &Error) -> Option<(Denied, Challenge)> {
    match error {
        StreamableHttpError::AuthRequired(e) => Some((
            Denied::Unauthorized,
            Challenge::parse(&e.www_authenticate_header),
        )),
        StreamableHttpError::InsufficientScope(e) => {
            let challenge = Challenge::parse(&e.www_authenticate_header);
            match challenge.insufficient_scope() || e.required_scope.is_some() {
                true => Some((Denied::InsufficientScope, challenge)),
                // A 403 that is not about scope: nothing a new token changes.
                false => None,
            }
        }
        StreamableHttpError::HttpStatus(status) if status.status == 401 => {
            Some((Denied::Unauthorized, Challenge::default()))
        }
        _ => None,
    }
}

impl OAuthHttp {
    /// Sends with the current token until the answer is not a refusal the authorizer can
    /// fix.
    async fn with_token<T, F, Fut>(&self, send: F) -> Result<T, Error>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        let Some(auth) = &self.auth else {
            return send(None).await;
        };
        let mut attempts = Attempts::default();
        loop {
            let (token, generation) = auth.bearer().await;
            let had_token = token.is_some();
            let result = send(token.map(|t| t.expose_secret().to_string())).await;
            match &result {
                Err(error) => {
                    let Some((why, challenge)) = denied(error) else {
                        return result;
                    };
                    if !auth
                        .recover(generation, why, &challenge, &mut attempts)
                        .await
                    {
                        return result;
                    }
                }
                Ok(_) => {
                    if had_token {
                        auth.succeeded();
                    }
                    return result;
                }
            }
        }
    }
}

impl StreamableHttpClient for OAuthHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            None,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            None,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.with_token(|token| {
            self.inner.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        // Ending a session never starts a login.
        let token = match &self.auth {
            Some(auth) => auth.bearer().await.0,
            None => None,
        };
        self.inner
            .delete_session(
                uri,
                session_id,
                token.map(|t| t.expose_secret().to_string()),
                custom_headers,
            )
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            None,
            custom_headers,
            StreamableHttpResponseLimits::default().max_sse_event_size,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        self.with_token(|token| {
            self.inner.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}
