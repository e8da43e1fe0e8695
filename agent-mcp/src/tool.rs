//! One MCP tool as an [`agent_core::Tool`]: permission from its hints, results mapped to
//! content blocks, output scrubbed and capped like the built-in tools'.

use std::path::Path;
use std::sync::{Arc, Weak};
use std::time::Duration;

use agent_core::{
    async_trait,
    permission::{Assessment, Risk, RiskCategory},
    ContentBlock, Permission, SideEffect, Tool, ToolContext, ToolError, ToolOutput,
};
use base64::Engine;
use serde_json::Value;

use crate::client::{ClientError, RemoteContent, RemoteResult, RemoteTool};
use crate::manager::Shared;

/// Shown when a result has no content at all.
pub(crate) const EMPTY_RESULT: &str = "(empty MCP tool result)";

/// A tool of one MCP server.
pub(crate) struct McpTool {
    pub(crate) name: String,
    pub(crate) server: String,
    pub(crate) slot: usize,
    pub(crate) remote: RemoteTool,
    description: String,
    parameters: Value,
    shared: Weak<Shared>,
    cap: usize,
    call_timeout: Option<Duration>,
}

impl McpTool {
    pub(crate) fn new(
        name: String,
        server: &str,
        slot: usize,
        remote: RemoteTool,
        shared: Weak<Shared>,
        cap: usize,
        call_timeout: Option<Duration>,
    ) -> Self {
        let description = remote
            .description
            .clone()
            .filter(|d| !d.trim().is_empty())
            .or_else(|| remote.title.clone().filter(|t| !t.trim().is_empty()))
            .unwrap_or_else(|| format!("Call MCP tool {server}/{}", remote.name));
        let mut schema = remote.input_schema.clone();
        // Providers reject a function schema without a type; everything else passes
        // through as the server wrote it.
        schema
            .entry("type")
            .or_insert_with(|| Value::String("object".into()));
        Self {
            name,
            server: server.to_string(),
            slot,
            description,
            parameters: Value::Object(schema),
            remote,
            shared,
            cap,
            call_timeout,
        }
    }

    /// Read-only by the server's own hint.
    pub(crate) fn read_only(&self) -> bool {
        self.remote.hints.read_only == Some(true)
    }

    fn finish(&self, output: ToolOutput) -> ToolOutput {
        agent_tools::finish_output(output, self.cap)
    }

    fn failed(&self, what: &str) -> ToolOutput {
        self.finish(ToolOutput::error(format!(
            "Error: MCP tool {}/{} failed: {what}",
            self.server, self.remote.name
        )))
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    /// `readOnlyHint` makes it a read; anything else reaches the network through the
    /// server (Zero's classification of MCP tools).
    fn side_effect(&self) -> SideEffect {
        match self.read_only() {
            true => SideEffect::Read,
            false => SideEffect::Network,
        }
    }

    /// Read-only tools run without asking; the rest prompt.
    fn permission(&self) -> Permission {
        match self.read_only() {
            true => Permission::Allow,
            false => Permission::Prompt,
        }
    }

    fn assess(&self, _args: &Value, _cwd: &Path) -> Assessment {
        let categories = match (self.read_only(), self.remote.hints.destructive) {
            (true, _) => vec![RiskCategory::Read],
            (false, Some(false)) => vec![RiskCategory::Network],
            // Per the MCP spec a tool that is not read-only is destructive unless it says
            // otherwise.
            (false, _) => vec![RiskCategory::Network, RiskCategory::Destructive],
        };
        Assessment {
            risk: Risk::from_categories(categories),
            block: None,
            reason: Some(format!(
                "MCP tool {}/{} runs through the configured server.",
                self.server, self.remote.name
            )),
        }
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let arguments = match args {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(ToolError::InvalidArguments(format!(
                    "{}: arguments must be a JSON object, not {other}",
                    self.name
                )))
            }
        };
        let Some(shared) = self.shared.upgrade() else {
            return Ok(self.failed("the MCP manager was shut down"));
        };
        let connection = match shared.connection(self.slot) {
            Ok(connection) => connection,
            Err(reason) => {
                return Ok(self.failed(&format!("the server is not connected: {reason}")))
            }
        };
        drop(shared);
        let call = connection.call_tool(&self.remote.name, arguments, &ctx.cancel, &ctx.progress);
        let result = match self.call_timeout {
            Some(limit) => match tokio::time::timeout(limit, call).await {
                Ok(result) => result,
                Err(_) => {
                    return Ok(self.failed(&format!(
                        "no result within {} s; the server was sent notifications/cancelled",
                        limit.as_secs()
                    )))
                }
            },
            None => call.await,
        };
        match result {
            Ok(Some(result)) => Ok(self.finish(map_result(result))),
            Ok(None) => Err(ToolError::Cancelled(format!(
                "the run was cancelled; MCP server {} was sent notifications/cancelled",
                self.server
            ))),
            Err(ClientError::Closed(reason)) => {
                if let Some(shared) = self.shared.upgrade() {
                    shared.mark_closed(self.slot);
                }
                let detail = match reason.is_empty() {
                    true => String::new(),
                    false => format!(" ({reason})"),
                };
                Ok(self.failed(&format!(
                    "the server closed the connection{detail}; its tools are removed"
                )))
            }
            Err(ClientError::Failed(reason)) => Ok(self.failed(&reason)),
        }
    }
}

/// Content blocks being assembled: consecutive text joined with newlines.
#[derive(Default)]
struct Blocks {
    blocks: Vec<ContentBlock>,
    text: String,
}

impl Blocks {
    fn text(&mut self, piece: &str) {
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        self.text.push_str(piece);
    }

    fn block(&mut self, block: ContentBlock) {
        if !self.text.is_empty() {
            self.blocks
                .push(ContentBlock::text(std::mem::take(&mut self.text)));
        }
        self.blocks.push(block);
    }

    fn finish(mut self) -> Vec<ContentBlock> {
        if !self.text.is_empty() {
            self.blocks.push(ContentBlock::text(self.text));
        }
        if self.blocks.is_empty() {
            self.blocks.push(ContentBlock::text(EMPTY_RESULT));
        }
        self.blocks
    }
}

/// Maps a result: text blocks joined with newlines, images as image blocks, other content
/// described in words, `structuredContent` as JSON text when no text block carries it,
/// `isError` as an error result.
pub(crate) fn map_result(result: RemoteResult) -> ToolOutput {
    let mut out = Blocks::default();
    let mut carried = false;
    for content in result.content {
        match content {
            RemoteContent::Text(piece) => {
                carried |= result.structured.as_ref().is_some_and(|structured| {
                    serde_json::from_str::<Value>(&piece).is_ok_and(|v| &v == structured)
                });
                out.text(&piece);
            }
            RemoteContent::Image { mime_type, data } => {
                match base64::engine::general_purpose::STANDARD.decode(data.trim()) {
                    Ok(bytes) => out.block(ContentBlock::Image {
                        mime_type,
                        data: bytes.into(),
                    }),
                    Err(_) => out.text(&format!(
                        "[an {mime_type} image with invalid base64 data was dropped]"
                    )),
                }
            }
            RemoteContent::Audio { mime_type } => out.text(&format!(
                "[{mime_type} audio content, which cannot be shown]"
            )),
            RemoteContent::Resource {
                uri,
                mime_type,
                text: Some(body),
            } => {
                let mime = mime_type.map(|m| format!(" ({m})")).unwrap_or_default();
                out.text(&format!("[resource {uri}{mime}]\n{body}"));
            }
            RemoteContent::Resource {
                uri,
                mime_type,
                text: None,
            } => {
                let mime = mime_type.unwrap_or_else(|| "binary".into());
                out.text(&format!(
                    "[resource {uri}: {mime} content, which cannot be shown]"
                ));
            }
            RemoteContent::Link {
                uri,
                name,
                description,
            } => {
                let description = description.map(|d| format!(": {d}")).unwrap_or_default();
                out.text(&format!("[resource link {name} <{uri}>{description}]"));
            }
            RemoteContent::Unknown => out.text("[a content block of an unknown type was dropped]"),
        }
    }
    if let Some(structured) = result.structured.filter(|_| !carried) {
        out.text(&structured.to_string());
    }
    ToolOutput {
        content: out.finish(),
        is_error: result.is_error,
        ..ToolOutput::default()
    }
}

/// The tools as the manager hands them to an agent.
pub(crate) fn as_dyn(tools: &[Arc<McpTool>]) -> Vec<Arc<dyn Tool>> {
    tools.iter().map(|t| t.clone() as Arc<dyn Tool>).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(output: &ToolOutput) -> String {
        output.text_content()
    }

    #[test]
    fn text_blocks_are_joined_and_images_kept() {
        let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG");
        let output = map_result(RemoteResult {
            content: vec![
                RemoteContent::Text("one".into()),
                RemoteContent::Text("two".into()),
                RemoteContent::Image {
                    mime_type: "image/png".into(),
                    data: png,
                },
                RemoteContent::Text("three".into()),
            ],
            structured: None,
            is_error: false,
        });
        assert_eq!(output.content.len(), 3);
        assert_eq!(output.content[0], ContentBlock::text("one\ntwo"));
        assert!(matches!(
            &output.content[1],
            ContentBlock::Image { mime_type, data } if mime_type == "image/png" && &data[..] == b"\x89PNG"
        ));
        assert_eq!(output.content[2], ContentBlock::text("three"));
        assert!(!output.is_error);
    }

    #[test]
    fn structured_content_becomes_json_text_once() {
        let value = serde_json::json!({"temperature": 21});
        let alone = map_result(RemoteResult {
            content: vec![],
            structured: Some(value.clone()),
            is_error: false,
        });
        assert_eq!(text(&alone), r#"{"temperature":21}"#);
        let echoed = map_result(RemoteResult {
            content: vec![RemoteContent::Text("{ \"temperature\": 21 }".into())],
            structured: Some(value),
            is_error: false,
        });
        assert_eq!(text(&echoed), "{ \"temperature\": 21 }");
    }

    #[test]
    fn errors_empty_results_and_other_content() {
        let error = map_result(RemoteResult {
            content: vec![RemoteContent::Text("no such city".into())],
            structured: None,
            is_error: true,
        });
        assert!(error.is_error);
        assert_eq!(text(&error), "no such city");
        let empty = map_result(RemoteResult::default());
        assert_eq!(text(&empty), EMPTY_RESULT);
        let other = map_result(RemoteResult {
            content: vec![
                RemoteContent::Audio {
                    mime_type: "audio/wav".into(),
                },
                RemoteContent::Link {
                    uri: "file:///a".into(),
                    name: "a".into(),
                    description: None,
                },
                RemoteContent::Image {
                    mime_type: "image/png".into(),
                    data: "not base64!".into(),
                },
            ],
            structured: None,
            is_error: false,
        });
        let other = text(&other);
        assert!(other.contains("audio/wav audio content"));
        assert!(other.contains("[resource link a <file:///a>]"));
        assert!(other.contains("invalid base64"));
    }
}
