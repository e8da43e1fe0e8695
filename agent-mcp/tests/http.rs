//! The manager against an in-process rmcp server over streamable HTTP (127.0.0.1, port
//! 0): headers, pagination, a result reaching the model, list_changed, abort mid-call,
//! a server that goes away mid-call, refused and silent endpoints.

mod common;

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::{event::ToolStatus, Agent, AgentEvent, RunStatus};
use agent_mcp::{McpManager, McpOptions, McpServerConfig, ServerState, TransportKind};
use agent_providers::scripted::{ScriptedProvider, Turn};
use common::*;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServerHandler;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

const TOKEN: &str = "Bearer http-test-token-0123456789";

#[derive(Default)]
struct State {
    grown: AtomicBool,
    authorization: Mutex<Vec<String>>,
    slow_started: Notify,
    slow_cancelled: Notify,
}

#[derive(Clone, Default)]
struct TestServer {
    state: Arc<State>,
}

fn read_only(mut tool: Tool) -> Tool {
    let mut hints = ToolAnnotations::default();
    hints.read_only_hint = Some(true);
    tool.annotations = Some(hints);
    tool
}

impl TestServer {
    fn tools(&self) -> Vec<Tool> {
        let schema = |v: serde_json::Value| match v {
            serde_json::Value::Object(map) => Arc::new(map),
            _ => Arc::new(Default::default()),
        };
        let text = schema(json!({"type": "object", "properties": {"text": {"type": "string"}}}));
        let mut tools = vec![
            read_only(Tool::new("echo", "Echoes text.", text.clone())),
            read_only(Tool::new(
                "slow",
                "Waits until cancelled.",
                schema(json!({})),
            )),
            read_only(Tool::new("grow", "Adds `extra`.", schema(json!({})))),
        ];
        if self.state.grown.load(Ordering::SeqCst) {
            tools.push(read_only(Tool::new("extra", "Added later.", text)));
        }
        tools
    }

    fn record_authorization(&self, context: &RequestContext<RoleServer>) -> Result<(), ErrorData> {
        let header = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.headers.get("authorization"))
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let ok = header == TOKEN;
        self.state
            .authorization
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(header);
        match ok {
            true => Ok(()),
            false => Err(ErrorData::invalid_request("unauthorized: bad token", None)),
        }
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.record_authorization(&context)?;
        // Two tools per page.
        let start: usize = request
            .and_then(|r| r.cursor)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let tools = self.tools();
        let end = (start + 2).min(tools.len());
        Ok(ListToolsResult {
            tools: tools[start.min(end)..end].to_vec(),
            next_cursor: (end < tools.len()).then(|| end.to_string()),
            ..Default::default()
        })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.record_authorization(&context)?;
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(|t| t.as_str())
            .unwrap_or_default()
            .to_string();
        let reply = |t: String| Ok(CallToolResult::success(vec![ContentBlock::text(t)]).into());
        match request.name.as_ref() {
            "echo" | "extra" => reply(format!("{}: {text}", request.name)),
            "slow" => {
                self.state.slow_started.notify_one();
                context.ct.cancelled().await;
                self.state.slow_cancelled.notify_one();
                reply("cancelled".into())
            }
            "grow" => {
                self.state.grown.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                reply("grown".into())
            }
            other => Err(ErrorData::invalid_params(
                Cow::Owned(format!("no tool {other}")),
                None,
            )),
        }
    }
}

/// Serves `server` on 127.0.0.1; returns its `/mcp` URL and a token that stops it.
async fn serve(server: TestServer) -> (String, CancellationToken) {
    let stop = CancellationToken::new();
    let config = StreamableHttpServerConfig::default().with_cancellation_token(stop.clone());
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let until = stop.clone();
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                _ = until.cancelled() => return,
                accepted = listener.accept() => accepted,
            };
            let Ok((stream, _)) = accepted else { return };
            let service = hyper_util::service::TowerToHyperService::new(service.clone());
            let until = until.clone();
            tokio::spawn(async move {
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                tokio::select! {
                    _ = until.cancelled() => {}
                    _ = connection => {}
                }
            });
        }
    });
    (format!("http://{addr}/mcp"), stop)
}

fn options() -> McpOptions {
    McpOptions::new(std::env::temp_dir()).connect_timeout(WAIT)
}

async fn connect(url: &str) -> McpManager {
    McpManager::connect(
        vec![McpServerConfig::http("web", url).header("Authorization", TOKEN)],
        options(),
    )
    .await
    .expect("valid config")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_over_http_reaches_the_model_with_the_configured_headers() {
    let server = TestServer::default();
    let (url, stop) = serve(server.clone()).await;
    let manager = connect(&url).await;
    let status = &manager.status()[0];
    assert_eq!(status.state, ServerState::Connected, "{status:?}");
    assert_eq!(status.transport, TransportKind::Http);
    assert_eq!(status.pid, None);
    // Three tools over pages of two.
    assert_eq!(
        status.tools,
        ["mcp_web_echo", "mcp_web_slow", "mcp_web_grow"]
    );

    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "mcp_web_echo", r#"{"text":"over http"}"#),
        Turn::new().text("done"),
    ]);
    let agent = Agent::builder(provider.clone())
        .tool_source(manager.clone())
        .build();
    let events = collect(agent.prompt("go")).await;
    assert_eq!(
        tool_results(&events),
        [(
            "mcp_web_echo".to_string(),
            ToolStatus::Ok,
            "echo: over http".to_string()
        )]
    );
    assert_eq!(finished(&events).map(|f| f.0), Some(RunStatus::Success));
    let seen = server.state.authorization.lock().unwrap().clone();
    assert!(
        seen.len() >= 3 && seen.iter().all(|h| h == TOKEN),
        "{seen:?}"
    );
    manager.shutdown().await;
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_header_makes_the_server_fail_without_leaking_it() {
    let (url, stop) = serve(TestServer::default()).await;
    let manager = McpManager::connect(
        vec![McpServerConfig::http("web", &url)
            .header("Authorization", "Bearer wrong-token-abcdefgh")],
        options(),
    )
    .await
    .expect("valid config");
    match &manager.status()[0].state {
        ServerState::Failed { reason } => {
            assert!(reason.contains("unauthorized"), "{reason}");
            assert!(!reason.contains("wrong-token-abcdefgh"), "{reason}");
        }
        other => panic!("expected failed, got {other:?}"),
    }
    assert!(manager.tools().is_empty());
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_over_http_refreshes_before_the_next_model_call() {
    let (url, stop) = serve(TestServer::default()).await;
    let manager = connect(&url).await;
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("g", "mcp_web_grow", "{}"),
        Turn::new().tool_call("x", "mcp_web_extra", r#"{"text":"fresh"}"#),
        Turn::new().text("done"),
    ]);
    let agent = Agent::builder(provider.clone())
        .tool_source(manager.clone())
        .build();
    let events = collect(agent.prompt("grow")).await;
    let requests = provider.requests();
    assert!(!requests[0].tools.iter().any(|t| t.name == "mcp_web_extra"));
    assert!(requests[1].tools.iter().any(|t| t.name == "mcp_web_extra"));
    assert_eq!(tool_results(&events)[1].2, "extra: fresh");
    manager.shutdown().await;
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborting_mid_call_cancels_the_request_on_the_server() {
    let server = TestServer::default();
    let (url, stop) = serve(server.clone()).await;
    let manager = connect(&url).await;
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("s", "mcp_web_slow", "{}"),
        Turn::new().text("never"),
    ]);
    let agent = Agent::builder(provider)
        .tool_source(manager.clone())
        .build();
    let run = agent.prompt("wait");
    tokio::time::timeout(WAIT, server.state.slow_started.notified())
        .await
        .expect("the call reached the server");
    run.abort();
    let rest = collect(run).await;
    assert_eq!(finished(&rest).map(|f| f.0), Some(RunStatus::Aborted));
    tokio::time::timeout(WAIT, server.state.slow_cancelled.notified())
        .await
        .expect("the server saw notifications/cancelled");
    // The connection still works.
    assert_eq!(
        call(&manager, "mcp_web_echo", json!({"text": "again"}))
            .await
            .text_content(),
        "echo: again"
    );
    manager.shutdown().await;
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_goes_away_mid_call_gives_an_error_result() {
    let server = TestServer::default();
    let (url, stop) = serve(server.clone()).await;
    let manager = connect(&url).await;
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("s", "mcp_web_slow", "{}"),
        Turn::new().text("carried on"),
    ]);
    let agent = Agent::builder(provider)
        .tool_source(manager.clone())
        .build();
    let run = agent.prompt("wait");
    tokio::time::timeout(WAIT, server.state.slow_started.notified())
        .await
        .expect("the call reached the server");
    stop.cancel();
    let events = collect(run).await;
    let results = tool_results(&events);
    assert_eq!(results[0].1, ToolStatus::Error, "{results:?}");
    assert!(
        results[0].2.contains("closed the connection"),
        "{results:?}"
    );
    assert!(matches!(
        manager.status()[0].state,
        ServerState::Failed { .. }
    ));
    assert_eq!(
        finished(&events),
        Some((RunStatus::Success, Some("carried on".into())))
    );
    assert!(events
        .iter()
        .any(|e| matches!(e, AgentEvent::ToolResult { name, .. } if name == "mcp_web_slow")));
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_and_silent_endpoints_are_skipped() {
    // Nothing listens on a port we bound and released.
    let refused = {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        drop(listener);
        format!("http://{addr}/mcp")
    };
    // Accepts connections and never answers.
    let silent = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let silent_url = format!("http://{}/mcp", silent.local_addr().expect("addr"));
    let hold = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            open.push(stream);
        }
    });
    let manager = McpManager::connect(
        vec![
            McpServerConfig::http("refused", refused),
            McpServerConfig::http("silent", silent_url),
        ],
        McpOptions::new(std::env::temp_dir()).connect_timeout(Duration::from_secs(2)),
    )
    .await
    .expect("valid config");
    let status = manager.status();
    let reason = |i: usize| match &status[i].state {
        ServerState::Failed { reason } => reason.to_lowercase(),
        other => panic!("expected failed, got {other:?}"),
    };
    assert!(
        reason(0).contains("refused") || reason(0).contains("connect"),
        "{}",
        reason(0)
    );
    assert!(reason(1).contains("no answer within"), "{}", reason(1));
    hold.abort();
}
