//! The MCP connection, on the official SDK (`rmcp`).
//!
//! This is the only module that names `rmcp`: the rest of the crate sees the small
//! [`Connection`] trait and the plain types below, so a new rmcp version changes this module
//! only. `auth` is the HTTP client of servers that may ask for OAuth.

mod auth;

use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::sandbox::SandboxPolicy;
use agent_core::tool::ProgressSink;
use async_trait::async_trait;
use rmcp::model::{
    CallToolRequest, CancelledNotification, CancelledNotificationParam, ClientRequest, ServerResult,
};
use rmcp::model::{
    CallToolRequestParams, ClientConfig, ContentBlock, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, ErrorData, FormElicitationCapability,
    GetPromptRequestParams, Implementation, JsonRpcMessage, NumberOrString, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, ReadResourceRequestParams,
    ResourceContents, ServerNotification,
};
use rmcp::service::PeerRequestOptions;
// Logging is deprecated by a later spec (SEP-2577); 2025-11-25 servers still send it.
#[allow(deprecated)]
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::service::{RoleClient, RunningService, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::transport::{StreamableHttpClientTransport, Transport};
use rmcp::{ClientHandler, ServiceExt};
use secrecy::ExposeSecret;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::config::{McpServerConfig, McpTransport, SecretMap};
use crate::elicit::{ElicitationAnswer, ElicitationRequest, Elicitor};
use crate::oauth::Authorizer;
use crate::process::{self, ServerProcess};

/// Most `tools/list` pages followed for one listing (a server that keeps returning a
/// cursor is cut off there).
const MAX_PAGES: usize = 100;
/// How long a closing connection may take before its process group is killed.
const CLOSE_GRACE: Duration = Duration::from_millis(500);
/// How often a broken SSE stream is resumed before its requests fail.
const SSE_RETRIES: usize = 3;
/// How long a broken connection's server gets to exit and flush stderr for the error.
const SETTLE: Duration = Duration::from_millis(500);

/// Hints a server gives about a tool (all optional, none trusted for safety).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Hints {
    /// `readOnlyHint`.
    pub(crate) read_only: Option<bool>,
    /// `destructiveHint`.
    pub(crate) destructive: Option<bool>,
    /// `openWorldHint`.
    pub(crate) open_world: Option<bool>,
}

/// One tool as the server lists it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RemoteTool {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) input_schema: Map<String, Value>,
    pub(crate) hints: Hints,
}

/// One content block of a tool result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RemoteContent {
    Text(String),
    /// Base64 data.
    Image {
        mime_type: String,
        data: String,
    },
    Audio {
        mime_type: String,
    },
    /// An embedded resource: its text, or the fact it is binary.
    Resource {
        uri: String,
        mime_type: Option<String>,
        text: Option<String>,
    },
    Link {
        uri: String,
        name: String,
        description: Option<String>,
    },
    Unknown,
}

/// A tool result.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct RemoteResult {
    pub(crate) content: Vec<RemoteContent>,
    pub(crate) structured: Option<Value>,
    pub(crate) is_error: bool,
}

/// What a server offers besides tools (its `resources` and `prompts` capabilities).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Offers {
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
}

/// One argument of a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RemotePromptArgument {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) required: bool,
}

/// One prompt as the server lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RemotePrompt {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) arguments: Vec<RemotePromptArgument>,
}

/// One message of a rendered prompt.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RemotePromptMessage {
    /// Written as the assistant (else the user).
    pub(crate) assistant: bool,
    pub(crate) content: RemoteContent,
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ClientError {
    /// The connection is gone (the process exited, the HTTP session ended).
    #[error("the connection to the server is closed{}", details(.0))]
    Closed(String),
    /// The server answered with an error, or the exchange failed.
    #[error("{0}")]
    Failed(String),
}

fn details(text: &str) -> String {
    match text.is_empty() {
        true => String::new(),
        false => format!(" ({text})"),
    }
}

/// An open connection to one server.
#[async_trait]
pub(crate) trait Connection: Send + Sync + 'static {
    /// Every tool, following `nextCursor`.
    async fn list_tools(&self) -> Result<Vec<RemoteTool>, ClientError>;

    /// Calls a tool; `None` when `cancel` fired first (the server was sent
    /// `notifications/cancelled`).
    async fn call_tool(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        cancel: &CancellationToken,
        progress: &ProgressSink,
    ) -> Result<Option<RemoteResult>, ClientError>;

    /// What the server offers besides tools.
    fn offers(&self) -> Offers;

    /// One page of `resources/list`, as the server sent it (JSON).
    async fn list_resources(&self, cursor: Option<String>) -> Result<Value, ClientError>;

    /// One page of `resources/templates/list` (JSON).
    async fn list_resource_templates(&self, cursor: Option<String>) -> Result<Value, ClientError>;

    /// `resources/read` of `uri` (JSON: `{contents: [...]}`).
    async fn read_resource(&self, uri: &str) -> Result<Value, ClientError>;

    /// Every prompt, following `nextCursor`.
    async fn list_prompts(&self) -> Result<Vec<RemotePrompt>, ClientError>;

    /// `prompts/get` of `name` with `arguments`: its messages.
    async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Vec<RemotePromptMessage>, ClientError>;

    /// Whether the connection is gone.
    fn is_closed(&self) -> bool;

    /// Why it is gone, in words (exit status, the server's last stderr lines).
    fn closed_reason(&self) -> String;

    /// The server process id, for stdio servers.
    fn pid(&self) -> Option<u32>;

    /// Closes the connection and ends the server process.
    async fn close(&self);

    /// Ends the connection and kills the server's process group at once (for drop).
    fn kill(&self);
}

/// Called when the server announces `notifications/tools/list_changed`.
pub(crate) type OnListChanged = Arc<dyn Fn() + Send + Sync>;

/// What a connection reports to, and asks of, its manager.
#[derive(Clone)]
pub(crate) struct Hooks {
    /// Called on `notifications/tools/list_changed`.
    pub(crate) on_list_changed: OnListChanged,
    /// The OAuth state of an HTTP server that may ask for it.
    pub(crate) auth: Option<Arc<Authorizer>>,
    /// Where the server's questions go (`None`: nobody to ask; the capability is not
    /// advertised).
    pub(crate) elicitor: Option<Arc<dyn Elicitor>>,
    /// Called on `notifications/resources/list_changed` and `…/prompts/list_changed`.
    pub(crate) on_catalog_changed: Option<OnListChanged>,
}

/// Opens a connection (spawning the process for stdio, under its own sandbox policy or
/// else `sandbox`) and performs the handshake. Dropping the returned future abandons the
/// attempt and kills a started process.
pub(crate) async fn connect(
    config: &McpServerConfig,
    cwd: &Path,
    sandbox: Option<&SandboxPolicy>,
    hooks: Hooks,
) -> Result<Arc<dyn Connection>, ClientError> {
    let Hooks {
        on_list_changed,
        auth,
        elicitor,
        on_catalog_changed,
    } = hooks;
    let progress = Progress::default();
    let handler = Handler {
        server: config.name.clone(),
        elicitor,
        on_catalog_changed,
    };
    match &config.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd: dir,
            sandbox: own,
        } => {
            let dir = dir.as_deref().unwrap_or(cwd);
            let sandbox = own.as_ref().or(sandbox);
            let spawned =
                process::spawn(&config.name, command, args, env, dir, sandbox).map_err(|e| {
                    ClientError::Failed(format!(
                        "failed to start `{command}` in {}: {e}",
                        dir.display()
                    ))
                })?;
            let mut process = spawned.process;
            let transport = Watched {
                inner: AsyncRwTransport::new_client(spawned.stdout, spawned.stdin),
                on_list_changed,
                progress: progress.clone(),
            };
            match handler.serve(transport).await {
                Ok(service) => Ok(Arc::new(RmcpConnection::new(
                    service,
                    Some(process),
                    None,
                    progress,
                ))),
                Err(err) => {
                    process.settle(SETTLE).await;
                    let mut reason = match process.exit_status() {
                        Some(status) => {
                            format!("the server exited with {status} before it initialized")
                        }
                        None => format!("initialize failed: {}", init_error(&err)),
                    };
                    let stderr = process.stderr_tail();
                    if !stderr.is_empty() {
                        reason.push_str(&format!("; stderr: {}", last_lines(&stderr, 5)));
                    }
                    Err(ClientError::Failed(reason))
                }
            }
        }
        McpTransport::Http { url, headers, .. } => {
            let client = http_client().map_err(ClientError::Failed)?;
            let mut transport_config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            transport_config.custom_headers = header_map(headers)?;
            // A broken event stream is resumed a few times, not forever: a server that went
            // away must end the calls waiting on it.
            let mut retry = ExponentialBackoff::default();
            retry.max_times = Some(SSE_RETRIES);
            retry.base_duration = Duration::from_millis(200);
            retry.max_delay = Some(Duration::from_secs(2));
            transport_config.retry_config = Arc::new(retry);
            let client = auth::OAuthHttp {
                inner: client,
                auth: auth.clone(),
            };
            let service = serve_http(
                handler,
                client,
                transport_config,
                on_list_changed,
                progress.clone(),
            )
            .await;
            let service = service.map_err(|err| {
                // An authorization that failed says why better than the refusal it left.
                match auth.as_ref().and_then(|a| a.take_error()) {
                    Some(reason) => ClientError::Failed(reason),
                    None => ClientError::Failed(format!("initialize failed: {}", init_error(&err))),
                }
            })?;
            Ok(Arc::new(RmcpConnection::new(service, None, auth, progress)))
        }
        McpTransport::Sse { .. } => Err(ClientError::Failed(
            "the legacy HTTP+SSE transport is not supported; use the server's streamable HTTP \
             endpoint (type \"http\")"
                .into(),
        )),
    }
}

/// Serves `handler` over streamable HTTP with `client`.
async fn serve_http(
    handler: Handler,
    client: auth::OAuthHttp,
    config: StreamableHttpClientTransportConfig,
    on_list_changed: OnListChanged,
    progress: Progress,
) -> Result<RunningService<RoleClient, Handler>, rmcp::service::ClientInitializeError> {
    let transport = Watched {
        inner: StreamableHttpClientTransport::with_client(client, config),
        on_list_changed,
        progress,
    };
    handler.serve(transport).await
}

/// An initialize error in words, without rmcp's transport type names.
fn init_error(err: &rmcp::service::ClientInitializeError) -> String {
    match err {
        rmcp::service::ClientInitializeError::TransportError { error, context } => {
            format!("{context}: {}", error_chain(error.error.as_ref()))
        }
        other => error_chain(other),
    }
}

/// An error and its sources, joined with `: ` (looking through rmcp's HTTP error wrapper,
/// which does not expose the reqwest error as a source).
pub(crate) fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut next = Some(err);
    while let Some(current) = next {
        next = match current.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            Some(StreamableHttpError::Client(inner)) => {
                Some(inner as &(dyn std::error::Error + 'static))
            }
            _ => current.source(),
        };
        if let Some(cause) = next {
            let cause_text = cause.to_string();
            if !text.contains(&cause_text) {
                text.push_str(": ");
                text.push_str(&cause_text);
            }
        }
    }
    text
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

/// The HTTP client for streamable-HTTP servers: rustls with ring and the webpki roots
/// (no process-wide crypto provider needed), no redirects (they would carry the
/// configured headers to another origin).
pub(crate) fn http_client() -> Result<reqwest::Client, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup failed: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| format!("HTTP client setup failed: {e}"))
}

fn header_map(
    headers: &SecretMap,
) -> Result<std::collections::HashMap<http::HeaderName, http::HeaderValue>, ClientError> {
    let mut map = std::collections::HashMap::new();
    for (name, value) in &headers.0 {
        let name = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ClientError::Failed(format!("invalid header name {name:?}")))?;
        let mut value = http::HeaderValue::from_str(value.expose_secret())
            .map_err(|_| ClientError::Failed(format!("invalid value for header {name}")))?;
        value.set_sensitive(true);
        map.insert(name, value);
    }
    Ok(map)
}

/// Our side of the session: the client's identity and capabilities, the answers to the
/// server's requests (elicitation), and its notifications (progress, logging, the other
/// lists' changes).
struct Handler {
    server: String,
    elicitor: Option<Arc<dyn Elicitor>>,
    on_catalog_changed: Option<OnListChanged>,
}

/// Where a connection's `notifications/progress` go: the sinks of the calls in flight by
/// progress token, and what came for a token before its call registered (rmcp picks the
/// token as it sends the request; a fast server may report before the call knows it).
#[derive(Default)]
struct ProgressRoutes {
    sinks: HashMap<String, ProgressSink>,
    early: HashMap<String, Vec<String>>,
}

/// Most tokens, and lines per token, kept for calls that have not registered yet.
const EARLY_TOKENS: usize = 32;
const EARLY_LINES: usize = 16;

type Progress = Arc<Mutex<ProgressRoutes>>;

fn token_text(token: &ProgressToken) -> String {
    match &token.0 {
        NumberOrString::String(s) => s.to_string(),
        NumberOrString::Number(n) => n.to_string(),
    }
}

/// Passes a `notifications/progress` on to its call's progress sink, as a status line.
fn report(progress: &Progress, params: &ProgressNotificationParam) {
    let amount = match params.total {
        Some(total) => format!("{}/{}", params.progress, total),
        None => params.progress.to_string(),
    };
    let line = match &params.message {
        Some(message) => format!("{message} ({amount})"),
        None => amount,
    };
    let token = token_text(&params.progress_token);
    let mut routes = progress.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(sink) = routes.sinks.get(&token) {
        sink.status(line);
        return;
    }
    if routes.early.len() >= EARLY_TOKENS && !routes.early.contains_key(&token) {
        return;
    }
    let early = routes.early.entry(token).or_default();
    if early.len() < EARLY_LINES {
        early.push(line);
    }
}

/// Longest log message of a server passed on.
const MAX_LOG: usize = 2000;

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        // The handshake version; later versions replace `initialize` and deliver
        // list_changed only to explicit subscriptions.
        info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        info.client_info = Implementation::new("agent-sdk", env!("CARGO_PKG_VERSION"));
        // Advertised only where someone can answer.
        if self.elicitor.is_some() {
            info.capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        }
        info
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let decline = Ok(ElicitResult::new(ElicitationAction::Decline));
        let (
            Some(elicitor),
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            },
        ) = (&self.elicitor, request)
        else {
            // Nobody to ask, or URL mode (not advertised).
            return decline;
        };
        let schema = match serde_json::to_value(&requested_schema) {
            Ok(Value::Object(schema)) => schema,
            _ => return decline,
        };
        let question = ElicitationRequest {
            server: self.server.clone(),
            message,
            schema: schema.clone(),
        };
        match elicitor.elicit(question).await {
            ElicitationAnswer::Accept(content) => match crate::elicit::check(&schema, content) {
                Ok(content) => Ok(ElicitResult::new(ElicitationAction::Accept)
                    .with_content(Value::Object(content))),
                Err(why) => {
                    tracing::warn!(server = %self.server, %why, "MCP elicitation answer declined");
                    decline
                }
            },
            ElicitationAnswer::Decline => decline,
            ElicitationAnswer::Cancel => Ok(ElicitResult::new(ElicitationAction::Cancel)),
        }
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let text = match &params.data {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let text: String = text.chars().take(MAX_LOG).collect();
        let text = agent_tools::scrub_secrets_cow(&text).into_owned();
        let server = &self.server;
        let logger = params.logger.as_deref().unwrap_or("");
        match params.level {
            LoggingLevel::Debug => tracing::debug!(%server, logger, "{text}"),
            LoggingLevel::Info | LoggingLevel::Notice => tracing::info!(%server, logger, "{text}"),
            LoggingLevel::Warning => tracing::warn!(%server, logger, "{text}"),
            _ => tracing::error!(%server, logger, "{text}"),
        }
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(changed) = &self.on_catalog_changed {
            changed();
        }
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(changed) = &self.on_catalog_changed {
            changed();
        }
    }
}

/// A transport that reports `notifications/tools/list_changed` as it reads it, before the
/// messages that follow it (a tool result, say) are handled.
struct Watched<T> {
    inner: T,
    on_list_changed: OnListChanged,
    /// `notifications/progress` are passed on here too, before the result they precede.
    progress: Progress,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Watched<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        let on_list_changed = self.on_list_changed.clone();
        let progress = self.progress.clone();
        let next = self.inner.receive();
        async move {
            let message = next.await;
            if let Some(JsonRpcMessage::Notification(notification)) = &message {
                match &notification.notification {
                    ServerNotification::ToolListChangedNotification(_) => on_list_changed(),
                    ServerNotification::ProgressNotification(n) => report(&progress, &n.params),
                    _ => {}
                }
            }
            message
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

struct RmcpConnection {
    peer: rmcp::service::Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    process: Mutex<Option<ServerProcess>>,
    pid: Option<u32>,
    auth: Option<Arc<Authorizer>>,
    progress: Progress,
}

/// Removes a call's progress sink when the call ends, however it ends.
struct Tracked<'a> {
    progress: &'a Progress,
    token: String,
}

impl<'a> Tracked<'a> {
    /// Routes `token`'s progress to `sink`, with what came before.
    fn new(progress: &'a Progress, token: String, sink: &ProgressSink) -> Self {
        let mut routes = progress.lock().unwrap_or_else(|e| e.into_inner());
        for line in routes.early.remove(&token).unwrap_or_default() {
            sink.status(line);
        }
        routes.sinks.insert(token.clone(), sink.clone());
        drop(routes);
        Self { progress, token }
    }
}

impl Drop for Tracked<'_> {
    fn drop(&mut self) {
        let mut routes = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        routes.sinks.remove(&self.token);
        routes.early.remove(&self.token);
    }
}

impl RmcpConnection {
    fn new(
        service: RunningService<RoleClient, Handler>,
        process: Option<ServerProcess>,
        auth: Option<Arc<Authorizer>>,
        progress: Progress,
    ) -> Self {
        Self {
            peer: service.peer().clone(),
            pid: process.as_ref().and_then(ServerProcess::pid),
            service: tokio::sync::Mutex::new(Some(service)),
            process: Mutex::new(process),
            auth,
            progress,
        }
    }

    async fn failure(&self, err: rmcp::ServiceError) -> ClientError {
        if let Some(reason) = self.auth.as_ref().and_then(|a| a.take_error()) {
            return ClientError::Failed(reason);
        }
        let closed = matches!(err, rmcp::ServiceError::TransportClosed)
            || (matches!(err, rmcp::ServiceError::TransportSend(_)) && self.is_closed());
        if closed {
            let process = self
                .process
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            if let Some(mut process) = process {
                process.settle(SETTLE).await;
                *self.process.lock().unwrap_or_else(|e| e.into_inner()) = Some(process);
            }
            return ClientError::Closed(self.closed_reason());
        }
        match err {
            rmcp::ServiceError::McpError(data) => ClientError::Failed(format!(
                "the server answered with error {}: {}",
                data.code.0, data.message
            )),
            rmcp::ServiceError::TransportSend(error) => {
                ClientError::Failed(error_chain(error.error.as_ref()))
            }
            other => ClientError::Failed(error_chain(&other)),
        }
    }
}

#[async_trait]
impl Connection for RmcpConnection {
    async fn list_tools(&self) -> Result<Vec<RemoteTool>, ClientError> {
        // A server without the tools capability (resources or prompts only) has none.
        if self
            .peer
            .peer_info()
            .is_some_and(|info| info.capabilities.tools.is_none())
        {
            return Ok(Vec::new());
        }
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = cursor.take().map(|c| {
                let mut params = PaginatedRequestParams::default();
                params.cursor = Some(c);
                params
            });
            let page = self.peer.list_tools(params).await;
            let page = match page {
                Ok(page) => page,
                Err(err) => return Err(self.failure(err).await),
            };
            tools.extend(page.tools.into_iter().map(remote_tool));
            match page.next_cursor {
                Some(next) if !next.is_empty() => cursor = Some(next),
                _ => return Ok(tools),
            }
        }
        tracing::warn!(
            pages = MAX_PAGES,
            "tools/list kept paginating; the rest is ignored"
        );
        Ok(tools)
    }

    async fn call_tool(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        cancel: &CancellationToken,
        progress: &ProgressSink,
    ) -> Result<Option<RemoteResult>, ClientError> {
        let mut params = CallToolRequestParams::new(name.to_string());
        params.arguments = arguments;
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = match self
            .peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(err) => return Err(self.failure(err).await),
        };
        // The server's notifications/progress for this call become its progress lines.
        let _tracked = Tracked::new(&self.progress, token_text(&handle.progress_token), progress);
        let (id, peer) = (handle.id.clone(), handle.peer.clone());
        tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                let cancelled = CancelledNotification::new(CancelledNotificationParam::new(
                    Some(id),
                    Some("the run was cancelled".into()),
                ));
                let _ = peer.send_notification(cancelled.into()).await;
                Ok(None)
            }
            result = handle.await_response() => match result {
                Ok(ServerResult::CallToolResult(result)) => Ok(Some(RemoteResult {
                    content: result.content.into_iter().map(remote_content).collect(),
                    structured: result.structured_content,
                    is_error: result.is_error.unwrap_or(false),
                })),
                Ok(_) => Err(ClientError::Failed("the server answered tools/call with something other than a tool result".into())),
                Err(err) => Err(self.failure(err).await),
            },
        }
    }

    fn offers(&self) -> Offers {
        match self.peer.peer_info() {
            Some(info) => Offers {
                resources: info.capabilities.resources.is_some(),
                prompts: info.capabilities.prompts.is_some(),
            },
            None => Offers::default(),
        }
    }

    async fn list_resources(&self, cursor: Option<String>) -> Result<Value, ClientError> {
        match self.peer.list_resources(page(cursor)).await {
            Ok(result) => as_json(&result),
            Err(err) => Err(self.failure(err).await),
        }
    }

    async fn list_resource_templates(&self, cursor: Option<String>) -> Result<Value, ClientError> {
        match self.peer.list_resource_templates(page(cursor)).await {
            Ok(result) => as_json(&result),
            Err(err) => Err(self.failure(err).await),
        }
    }

    async fn read_resource(&self, uri: &str) -> Result<Value, ClientError> {
        match self
            .peer
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
        {
            Ok(result) => as_json(&result),
            Err(err) => Err(self.failure(err).await),
        }
    }

    async fn list_prompts(&self) -> Result<Vec<RemotePrompt>, ClientError> {
        let mut prompts = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let listed = self.peer.list_prompts(page(cursor.take())).await;
            let listed = match listed {
                Ok(listed) => listed,
                Err(err) => return Err(self.failure(err).await),
            };
            prompts.extend(listed.prompts.into_iter().map(|p| {
                RemotePrompt {
                    name: p.name,
                    title: p.title,
                    description: p.description,
                    arguments: p
                        .arguments
                        .unwrap_or_default()
                        .into_iter()
                        .map(|a| RemotePromptArgument {
                            name: a.name,
                            description: a.description,
                            required: a.required.unwrap_or(false),
                        })
                        .collect(),
                }
            }));
            match listed.next_cursor {
                Some(next) if !next.is_empty() => cursor = Some(next),
                _ => return Ok(prompts),
            }
        }
        Ok(prompts)
    }

    async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Vec<RemotePromptMessage>, ClientError> {
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = (!arguments.is_empty()).then_some(arguments);
        match self.peer.get_prompt(params).await {
            Ok(result) => Ok(result
                .messages
                .into_iter()
                .map(|m| RemotePromptMessage {
                    assistant: matches!(m.role, rmcp::model::Role::Assistant),
                    content: remote_content(m.content),
                })
                .collect()),
            Err(err) => Err(self.failure(err).await),
        }
    }

    fn is_closed(&self) -> bool {
        if self.peer.is_transport_closed() {
            return true;
        }
        let mut process = self.process.lock().unwrap_or_else(|e| e.into_inner());
        process.as_mut().is_some_and(|p| p.exit_status().is_some())
    }

    fn closed_reason(&self) -> String {
        let mut process = self.process.lock().unwrap_or_else(|e| e.into_inner());
        let Some(process) = process.as_mut() else {
            return String::new();
        };
        let mut reason = match process.exit_status() {
            Some(status) => format!("the server exited with {status}"),
            None => String::new(),
        };
        let stderr = process.stderr_tail();
        if !stderr.is_empty() {
            if !reason.is_empty() {
                reason.push_str("; ");
            }
            reason.push_str(&format!("stderr: {}", last_lines(&stderr, 5)));
        }
        reason
    }

    fn pid(&self) -> Option<u32> {
        self.pid
    }

    fn kill(&self) {
        // Dropping the process kills its group; dropping the service cancels its task.
        drop(
            self.process
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
        if let Ok(mut service) = self.service.try_lock() {
            drop(service.take());
        }
    }

    async fn close(&self) {
        let service = self.service.lock().await.take();
        if let Some(mut service) = service {
            let _ = service.close_with_timeout(CLOSE_GRACE).await;
        }
        let process = self
            .process
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(mut process) = process {
            process.shutdown(CLOSE_GRACE).await;
        }
    }
}

/// The params of the page after `cursor`.
fn page(cursor: Option<String>) -> Option<PaginatedRequestParams> {
    cursor.map(|c| {
        let mut params = PaginatedRequestParams::default();
        params.cursor = Some(c);
        params
    })
}

fn as_json(value: &impl serde::Serialize) -> Result<Value, ClientError> {
    serde_json::to_value(value).map_err(|e| ClientError::Failed(format!("unexpected answer: {e}")))
}

fn remote_tool(tool: rmcp::model::Tool) -> RemoteTool {
    let hints = tool
        .annotations
        .as_ref()
        .map(|a| Hints {
            read_only: a.read_only_hint,
            destructive: a.destructive_hint,
            open_world: a.open_world_hint,
        })
        .unwrap_or_default();
    RemoteTool {
        name: tool.name.into_owned(),
        title: tool
            .title
            .or_else(|| tool.annotations.and_then(|a| a.title)),
        description: tool.description.map(|d| d.into_owned()),
        input_schema: Arc::unwrap_or_clone(tool.input_schema),
        hints,
    }
}

fn remote_content(block: ContentBlock) -> RemoteContent {
    match block {
        ContentBlock::Text(text) => RemoteContent::Text(text.text),
        ContentBlock::Image(image) => RemoteContent::Image {
            mime_type: image.mime_type,
            data: image.data,
        },
        ContentBlock::Audio(audio) => RemoteContent::Audio {
            mime_type: audio.mime_type,
        },
        ContentBlock::Resource(resource) => match resource.resource {
            ResourceContents::TextResourceContents {
                uri,
                mime_type,
                text,
                ..
            } => RemoteContent::Resource {
                uri,
                mime_type,
                text: Some(text),
            },
            ResourceContents::BlobResourceContents { uri, mime_type, .. } => {
                RemoteContent::Resource {
                    uri,
                    mime_type,
                    text: None,
                }
            }
            _ => RemoteContent::Unknown,
        },
        ContentBlock::ResourceLink(link) => RemoteContent::Link {
            uri: link.uri,
            name: link.name,
            description: link.description,
        },
        _ => RemoteContent::Unknown,
    }
}
