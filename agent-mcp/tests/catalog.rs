//! What a server offers besides tools, against an in-process rmcp server over streamable
//! HTTP (127.0.0.1, port 0): resources as the `mcp_<server>_*_resource*` tools, prompts as
//! slash commands, elicitation (asked only when the host can answer), progress and
//! `notifications/prompts/list_changed`.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent_core::tool::ProgressSink;
use agent_core::{ContentBlock, ToolContext};
use agent_mcp::{
    ElicitationAnswer, ElicitationRequest, Elicitor, McpManager, McpOptions, McpServerConfig,
    PromptError, ServerState,
};
use async_trait::async_trait;
use common::*;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, GetPromptRequestParams,
    GetPromptResponse, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServerHandler;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("a valid MCP value")
}

#[derive(Clone, Default)]
struct Catalog {
    /// `more_prompts` was called: a third prompt is listed.
    more: Arc<AtomicBool>,
    /// Whether the client advertised elicitation, per `ask` call.
    advertised: Arc<Mutex<Vec<bool>>>,
}

const PNG: &str = "iVBORw0KGgo=";

impl ServerHandler for Catalog {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(from::<ServerCapabilities>(json!({
            "tools": {}, "resources": {}, "prompts": {"listChanged": true}
        })))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(from(json!({"tools": [
            {"name": "ask", "inputSchema": {"type": "object"}},
            {"name": "work", "inputSchema": {"type": "object"}},
            {"name": "more_prompts", "inputSchema": {"type": "object"}},
            // A tool of the server's own under a name the resource tools would take.
            {"name": "list_resources", "inputSchema": {"type": "object"}}
        ]})))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = |t: String| -> Result<CallToolResponse, ErrorData> {
            Ok(from::<CallToolResult>(json!({"content": [{"type": "text", "text": t}]})).into())
        };
        match request.name.as_ref() {
            "ask" => {
                let advertised = context
                    .peer
                    .peer_info()
                    .is_some_and(|info| info.capabilities.elicitation.is_some());
                self.advertised.lock().unwrap().push(advertised);
                let asked = context
                    .peer
                    .create_elicitation(from(json!({
                        "mode": "form",
                        "message": "Who are you?",
                        "requestedSchema": {"type": "object", "properties": {
                            "name": {"type": "string", "default": "Ada"},
                            "age": {"type": "integer"}
                        }}
                    })))
                    .await;
                match asked {
                    Ok(result) => text(serde_json::to_string(&result).unwrap()),
                    Err(err) => text(format!("elicitation failed: {err}")),
                }
            }
            "work" => {
                let Some(token) = context.meta.get_progress_token() else {
                    return text("no progress token".into());
                };
                for step in 1..=2 {
                    let _ = context
                        .peer
                        .notify_progress(from(json!({
                            "progressToken": token, "progress": step, "total": 2,
                            "message": format!("step {step}")
                        })))
                        .await;
                }
                text("worked".into())
            }
            "more_prompts" => {
                self.more.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_prompt_list_changed().await;
                text("more".into())
            }
            _ => text("own tool".into()),
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(match request.and_then(|r| r.cursor).as_deref() {
            None => from(json!({
                "resources": [{"uri": "file:///readme.md", "name": "readme", "mimeType": "text/markdown"}],
                "nextCursor": "page2"
            })),
            Some(_) => from(json!({
                "resources": [{"uri": "file:///logo.png", "name": "logo", "mimeType": "image/png"}]
            })),
        })
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(from(json!({"resourceTemplates": [
            {"uriTemplate": "file:///{path}", "name": "file"}
        ]})))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let contents = match request.uri.as_str() {
            "file:///readme.md" => {
                json!([{"uri": request.uri, "mimeType": "text/markdown", "text": "# Hello"}])
            }
            "file:///logo.png" => {
                json!([{"uri": request.uri, "mimeType": "image/png", "blob": PNG}])
            }
            _ => return Err(ErrorData::resource_not_found("no such resource", None)),
        };
        Ok(ReadResourceResponse::Complete(from(
            json!({"contents": contents}),
        )))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let mut prompts = vec![
            json!({"name": "greet", "description": "Greets someone", "arguments": [
                {"name": "name", "required": true}, {"name": "tone"}
            ]}),
            json!({"name": "simple"}),
        ];
        if self.more.load(Ordering::SeqCst) {
            prompts.push(json!({"name": "later"}));
        }
        Ok(from(json!({ "prompts": prompts })))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let arg = |name: &str| {
            args.get(name)
                .and_then(Value::as_str)
                .unwrap_or("-")
                .to_string()
        };
        let messages = match request.name.as_str() {
            "greet" => json!([
                {"role": "user", "content": {"type": "text", "text": format!("Greet {} ({})", arg("name"), arg("tone"))}},
                {"role": "assistant", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}}
            ]),
            _ => json!([{"role": "user", "content": {"type": "text", "text": "simple"}}]),
        };
        Ok(GetPromptResponse::Complete(from(
            json!({"messages": messages}),
        )))
    }
}

/// Serves `server` on 127.0.0.1; returns its `/mcp` URL and a token that stops it.
async fn serve(server: Catalog) -> (String, CancellationToken) {
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

async fn connect(url: &str, options: McpOptions) -> McpManager {
    let manager = McpManager::connect(vec![McpServerConfig::http("lib", url)], options)
        .await
        .expect("valid config");
    assert_eq!(
        manager.status()[0].state,
        ServerState::Connected,
        "{:?}",
        manager.status()
    );
    manager
}

fn options() -> McpOptions {
    McpOptions::new(std::env::temp_dir()).connect_timeout(WAIT)
}

fn json_of(output: &agent_core::ToolOutput) -> Value {
    let ContentBlock::Text { text } = &output.content[0] else {
        panic!("a JSON text first: {output:?}")
    };
    serde_json::from_str(text).expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_are_tools_in_codexs_shape() {
    let (url, stop) = serve(Catalog::default()).await;
    let manager = connect(&url, options()).await;
    let tools = &manager.status()[0].tools;
    // The server's own list_resources keeps its name; ours steps aside.
    assert_eq!(
        tools,
        &[
            "mcp_lib_ask",
            "mcp_lib_work",
            "mcp_lib_more_prompts",
            "mcp_lib_list_resources",
            "mcp_lib_list_resources_2",
            "mcp_lib_list_resource_templates",
            "mcp_lib_read_resource",
        ]
    );
    let info = manager.tool_info("mcp_lib_read_resource").expect("info");
    assert_eq!(info.remote_name, "resources/read");
    assert_eq!(info.side_effect, agent_core::SideEffect::Read);
    let list = tool(&manager, "mcp_lib_list_resources_2");
    assert_eq!(list.permission(), agent_core::Permission::Allow);

    let first = json_of(&call(&manager, "mcp_lib_list_resources_2", json!({})).await);
    assert_eq!(
        first,
        json!({"server": "lib", "resources": [
            {"server": "lib", "uri": "file:///readme.md", "name": "readme", "mimeType": "text/markdown"}
        ], "nextCursor": "page2"})
    );
    let second = json_of(
        &call(
            &manager,
            "mcp_lib_list_resources_2",
            json!({"cursor": "page2"}),
        )
        .await,
    );
    assert_eq!(second["resources"][0]["uri"], "file:///logo.png");
    assert!(second.get("nextCursor").is_none());

    let templates = json_of(&call(&manager, "mcp_lib_list_resource_templates", json!({})).await);
    assert_eq!(
        templates["resourceTemplates"][0]["uriTemplate"],
        "file:///{path}"
    );

    let read = call(
        &manager,
        "mcp_lib_read_resource",
        json!({"uri": "file:///readme.md"}),
    )
    .await;
    assert_eq!(
        json_of(&read),
        json!({"server": "lib", "uri": "file:///readme.md", "contents": [
            {"uri": "file:///readme.md", "mimeType": "text/markdown", "text": "# Hello"}
        ]})
    );
    let image = call(
        &manager,
        "mcp_lib_read_resource",
        json!({"uri": "file:///logo.png"}),
    )
    .await;
    assert!(
        matches!(&image.content[1], ContentBlock::Image { mime_type, .. } if mime_type == "image/png")
    );

    let missing = call(
        &manager,
        "mcp_lib_read_resource",
        json!({"uri": "file:///nope"}),
    )
    .await;
    assert!(missing.is_error);
    assert!(missing
        .text_content()
        .contains("resources/read on MCP server lib failed"));
    let bad = tool(&manager, "mcp_lib_read_resource")
        .call(json!({}), ToolContext::new("."))
        .await;
    assert!(
        matches!(bad, Err(agent_core::ToolError::InvalidArguments(m)) if m.contains("`uri` is required"))
    );
    manager.shutdown().await;
    stop.cancel();
}

/// A front end's mention of a resource (ACP `resource_link`) is read by its URI alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_is_read_by_its_uri_for_a_mention() {
    let (url, stop) = serve(Catalog::default()).await;
    let manager = connect(&url, options()).await;
    let (server, read) = manager
        .read_resource("file:///readme.md")
        .await
        .expect("read");
    assert_eq!(server, "lib");
    assert_eq!(read["contents"][0]["text"], "# Hello");
    let missing = manager.read_resource("file:///nope").await;
    assert!(
        matches!(&missing, Err(why) if why.starts_with("lib: ")),
        "{missing:?}"
    );
    manager.shutdown().await;
    stop.cancel();
    let none = McpManager::empty().read_resource("file:///readme.md").await;
    assert_eq!(
        none,
        Err("no MCP server of the session offers resources".to_string())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_are_slash_commands_with_arguments_in_order() {
    let server = Catalog::default();
    let (url, stop) = serve(server.clone()).await;
    let manager = connect(&url, options()).await;
    let prompts = manager.prompts();
    let commands: Vec<&str> = prompts.iter().map(|p| p.command.as_str()).collect();
    assert_eq!(commands, ["mcp__lib__greet", "mcp__lib__simple"]);
    assert_eq!(prompts[0].arguments.len(), 2);
    assert!(prompts[0].arguments[0].required && !prompts[0].arguments[1].required);

    let messages = manager
        .expand_slash_command("/mcp__lib__greet Ada \"very warmly\"")
        .await
        .expect("an MCP command")
        .expect("rendered");
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0].role, agent_core::message::Role::User);
    assert_eq!(
        messages[0].content,
        [ContentBlock::text("Greet Ada (very warmly)")]
    );
    assert_eq!(messages[1].role, agent_core::message::Role::Assistant);
    assert!(matches!(
        &messages[1].content[0],
        ContentBlock::Image { .. }
    ));

    let missing = manager.expand_slash_command("/mcp__lib__greet").await;
    assert!(
        matches!(missing, Some(Err(PromptError::MissingArgument { ref argument, .. })) if argument == "name")
    );
    let unknown = manager.expand_slash_command("/mcp__lib__nope x").await;
    assert!(matches!(unknown, Some(Err(PromptError::Unknown(_)))));
    assert!(manager.expand_slash_command("/compact").await.is_none());
    assert!(manager.expand_slash_command("hello").await.is_none());

    // notifications/prompts/list_changed: the next refresh lists them again.
    call(&manager, "mcp_lib_more_prompts", json!({})).await;
    manager.refresh().await;
    assert!(
        manager.find_prompt("/mcp__lib__later").is_some(),
        "{:?}",
        manager.prompts()
    );
    manager.shutdown().await;
    stop.cancel();
}

/// Answers with a fixed answer and records the questions.
struct Scripted {
    answer: ElicitationAnswer,
    asked: Mutex<Vec<ElicitationRequest>>,
}

#[async_trait]
impl Elicitor for Scripted {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer {
        self.asked.lock().unwrap().push(request);
        self.answer.clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_reaches_the_hosts_elicitor_only_where_there_is_one() {
    let server = Catalog::default();
    let (url, stop) = serve(server.clone()).await;

    // Nobody to ask: not advertised, and declined.
    let manager = connect(&url, options()).await;
    let declined = call(&manager, "mcp_lib_ask", json!({})).await;
    assert_eq!(declined.text_content(), r#"{"action":"decline"}"#);
    manager.shutdown().await;

    // An elicitor: advertised, asked, answered (unknown fields dropped).
    let mut answer = serde_json::Map::new();
    answer.insert("name".into(), json!("Grace"));
    answer.insert("age".into(), json!(36));
    answer.insert("extra".into(), json!(true));
    let elicitor = Arc::new(Scripted {
        answer: ElicitationAnswer::Accept(answer),
        asked: Mutex::default(),
    });
    let manager = connect(&url, options().elicitor(elicitor.clone())).await;
    let accepted = call(&manager, "mcp_lib_ask", json!({})).await;
    let accepted: Value = serde_json::from_str(&accepted.text_content()).unwrap();
    assert_eq!(
        accepted,
        json!({"action": "accept", "content": {"name": "Grace", "age": 36}})
    );
    let asked = elicitor.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].server, "lib");
    assert_eq!(asked[0].message, "Who are you?");
    assert_eq!(asked[0].schema["properties"]["name"]["default"], "Ada");
    manager.shutdown().await;

    // A wrongly typed answer is declined, not sent.
    let mut wrong = serde_json::Map::new();
    wrong.insert("age".into(), json!("old"));
    let wrong = Arc::new(Scripted {
        answer: ElicitationAnswer::Accept(wrong),
        asked: Mutex::default(),
    });
    let manager = connect(&url, options().elicitor(wrong)).await;
    let declined = call(&manager, "mcp_lib_ask", json!({})).await;
    assert_eq!(declined.text_content(), r#"{"action":"decline"}"#);
    manager.shutdown().await;

    assert_eq!(*server.advertised.lock().unwrap(), [false, true, true]);
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_notifications_become_the_calls_progress_lines() {
    let (url, stop) = serve(Catalog::default()).await;
    let manager = connect(&url, options()).await;
    let (sink, mut receiver) = ProgressSink::channel();
    let mut ctx = ToolContext::new(".");
    ctx.progress = sink;
    let output = tokio::time::timeout(WAIT, tool(&manager, "mcp_lib_work").call(json!({}), ctx))
        .await
        .expect("in time")
        .expect("called");
    assert_eq!(output.text_content(), "worked");
    // Reported as they arrived, before the result.
    let mut lines = Vec::new();
    while let Ok(report) = receiver.try_recv() {
        lines.push(format!("{report:?}"));
    }
    let joined = lines.join("\n");
    assert!(
        joined.contains("step 1 (1/2)") && joined.contains("step 2 (2/2)"),
        "{joined}"
    );
    manager.shutdown().await;
    stop.cancel();
}
