//! A server's resources as tools, in Codex's shape: `mcp_<server>_list_resources`
//! (`{cursor?}` → `{server, resources: [{server, uri, name, …}], nextCursor?}`),
//! `mcp_<server>_list_resource_templates` (`{cursor?}` → `{server, resourceTemplates, …}`) and
//! `mcp_<server>_read_resource` (`{uri}` → `{server, uri, contents: [...]}`), offered for each
//! server with the `resources` capability. They read, so they run without asking.

use std::path::Path;
use std::sync::Weak;
use std::time::Duration;

use agent_core::{
    async_trait,
    permission::{Assessment, Risk, RiskCategory},
    ContentBlock, Permission, SideEffect, Tool, ToolContext, ToolError, ToolOutput,
};
use base64::Engine;
use serde_json::{json, Map, Value};

use crate::client::ClientError;
use crate::manager::Shared;

/// Which resource request a tool makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResourceOp {
    /// `resources/list`.
    List,
    /// `resources/templates/list`.
    Templates,
    /// `resources/read`.
    Read,
}

impl ResourceOp {
    /// Every operation, in the order the tools are offered.
    pub(crate) const ALL: [ResourceOp; 3] = [Self::List, Self::Templates, Self::Read];

    /// The tool-name suffix (`mcp_<server>_<suffix>`).
    pub(crate) fn suffix(self) -> &'static str {
        match self {
            Self::List => "list_resources",
            Self::Templates => "list_resource_templates",
            Self::Read => "read_resource",
        }
    }

    /// The MCP method.
    pub(crate) fn method(self) -> &'static str {
        match self {
            Self::List => "resources/list",
            Self::Templates => "resources/templates/list",
            Self::Read => "resources/read",
        }
    }
}

/// One resource tool of one server.
pub(crate) struct ResourceTool {
    pub(crate) name: String,
    pub(crate) server: String,
    pub(crate) slot: usize,
    pub(crate) op: ResourceOp,
    description: String,
    shared: Weak<Shared>,
    cap: usize,
    timeout: Option<Duration>,
}

impl ResourceTool {
    pub(crate) fn new(
        name: String,
        server: &str,
        slot: usize,
        op: ResourceOp,
        shared: Weak<Shared>,
        cap: usize,
        timeout: Option<Duration>,
    ) -> Self {
        let list = crate::naming::zero_tool_name(server, ResourceOp::List.suffix());
        let description = match op {
            ResourceOp::List => format!(
                "Lists the resources MCP server {server} provides (files, database schemas, \
                 application data it shares as context). Returns JSON: {{\"server\", \
                 \"resources\": [{{\"uri\", \"name\", \"mimeType\", \"description\"}}], \
                 \"nextCursor\"}}; pass `cursor` for the next page. Read one with \
                 {}.",
                crate::naming::zero_tool_name(server, ResourceOp::Read.suffix())
            ),
            ResourceOp::Templates => format!(
                "Lists the resource templates of MCP server {server}: URI patterns \
                 (RFC 6570) of resources it can produce on demand. Returns JSON: \
                 {{\"server\", \"resourceTemplates\": [{{\"uriTemplate\", \"name\", …}}], \
                 \"nextCursor\"}}; pass `cursor` for the next page."
            ),
            ResourceOp::Read => format!(
                "Reads one resource of MCP server {server} by its URI (from {list} or a \
                 template). Returns JSON: {{\"server\", \"uri\", \"contents\": [{{\"uri\", \
                 \"mimeType\", \"text\"}}]}}; images come as images."
            ),
        };
        Self {
            name,
            server: server.to_string(),
            slot,
            op,
            description,
            shared,
            cap,
            timeout,
        }
    }

    fn finish(&self, output: ToolOutput) -> ToolOutput {
        agent_tools::finish_output(output, self.cap)
    }

    fn failed(&self, what: &str) -> ToolOutput {
        self.finish(ToolOutput::error(format!(
            "Error: {} on MCP server {} failed: {what}",
            self.op.method(),
            self.server
        )))
    }
}

/// A string argument: trimmed, `None` when absent or empty.
fn text_arg(args: &Map<String, Value>, name: &str) -> Result<Option<String>, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string()).filter(|s| !s.is_empty())),
        Some(other) => Err(format!("`{name}` must be a string, not {other}")),
    }
}

/// `items` with `"server": server` added to each object.
fn with_server(items: Option<&Value>, server: &str) -> Vec<Value> {
    let Some(Value::Array(items)) = items else {
        return Vec::new();
    };
    items
        .iter()
        .map(|item| match item {
            Value::Object(fields) => {
                let mut out = Map::with_capacity(fields.len() + 1);
                out.insert("server".into(), Value::String(server.to_string()));
                out.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
                Value::Object(out)
            }
            other => other.clone(),
        })
        .collect()
}

/// The output of a `resources/read` result: the JSON payload, with image blobs as images.
pub(crate) fn read_output(server: &str, uri: &str, result: Value) -> ToolOutput {
    let mut images = Vec::new();
    let mut contents = match result.get("contents") {
        Some(Value::Array(contents)) => contents.clone(),
        _ => Vec::new(),
    };
    for content in &mut contents {
        let Value::Object(fields) = content else {
            continue;
        };
        let mime = fields
            .get("mimeType")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if !mime.starts_with("image/") {
            continue;
        }
        let Some(blob) = fields.get("blob").and_then(Value::as_str) else {
            continue;
        };
        if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(blob.trim()) {
            let size = bytes.len();
            images.push(ContentBlock::Image {
                mime_type: mime,
                data: bytes.into(),
            });
            fields.insert(
                "blob".into(),
                Value::String(format!("[the image below, {size} bytes]")),
            );
        }
    }
    let payload = json!({"server": server, "uri": uri, "contents": contents});
    let mut content = vec![ContentBlock::text(payload.to_string())];
    content.extend(images);
    ToolOutput {
        content,
        ..ToolOutput::default()
    }
}

#[async_trait]
impl Tool for ResourceTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        match self.op {
            ResourceOp::List | ResourceOp::Templates => json!({
                "type": "object",
                "properties": {"cursor": {
                    "type": "string",
                    "description": "The nextCursor of a previous call, for the next page."
                }}
            }),
            ResourceOp::Read => json!({
                "type": "object",
                "properties": {"uri": {
                    "type": "string",
                    "description": "The resource's URI, as listed."
                }},
                "required": ["uri"]
            }),
        }
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }

    fn permission(&self) -> Permission {
        Permission::Allow
    }

    fn assess(&self, _args: &Value, _cwd: &Path) -> Assessment {
        Assessment {
            risk: Risk::from_categories(vec![RiskCategory::Read]),
            block: None,
            reason: Some(format!(
                "{} on MCP server {} reads what the server shares.",
                self.op.method(),
                self.server
            )),
        }
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args = match args {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(ToolError::InvalidArguments(format!(
                    "{}: arguments must be a JSON object, not {other}",
                    self.name
                )))
            }
        };
        let invalid = |why: String| ToolError::InvalidArguments(format!("{}: {why}", self.name));
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
        let uri = match self.op {
            ResourceOp::Read => match text_arg(&args, "uri").map_err(invalid)? {
                Some(uri) => Some(uri),
                None => return Err(invalid("`uri` is required".into())),
            },
            _ => None,
        };
        let cursor = match self.op {
            ResourceOp::Read => None,
            _ => text_arg(&args, "cursor").map_err(invalid)?,
        };
        let request = match (self.op, &uri) {
            (ResourceOp::Read, Some(uri)) => connection.read_resource(uri),
            (ResourceOp::Templates, _) => connection.list_resource_templates(cursor),
            _ => connection.list_resources(cursor),
        };
        let answer = async {
            match self.timeout {
                Some(limit) => tokio::time::timeout(limit, request).await.map_err(|_| {
                    ClientError::Failed(format!("no answer within {} s", limit.as_secs()))
                })?,
                None => request.await,
            }
        };
        let result = tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => {
                return Err(ToolError::Cancelled(format!("{} was cancelled", self.op.method())))
            }
            result = answer => result,
        };
        let result = match result {
            Ok(result) => result,
            Err(ClientError::Closed(reason)) => {
                if let Some(shared) = self.shared.upgrade() {
                    shared.mark_closed(self.slot);
                }
                return Ok(self.failed(&format!("the server closed the connection ({reason})")));
            }
            Err(ClientError::Failed(reason)) => return Ok(self.failed(&reason)),
        };
        let output = match (self.op, uri) {
            (ResourceOp::Read, Some(uri)) => read_output(&self.server, &uri, result),
            (op, _) => {
                let (key, items) = match op {
                    ResourceOp::Templates => ("resourceTemplates", result.get("resourceTemplates")),
                    _ => ("resources", result.get("resources")),
                };
                let mut payload = Map::new();
                payload.insert("server".into(), Value::String(self.server.clone()));
                payload.insert(key.into(), Value::Array(with_server(items, &self.server)));
                if let Some(next) = result.get("nextCursor").filter(|c| !c.is_null()) {
                    payload.insert("nextCursor".into(), next.clone());
                }
                ToolOutput::text(Value::Object(payload).to_string())
            }
        };
        Ok(self.finish(output))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_results_keep_text_and_turn_image_blobs_into_images() {
        let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG");
        let output = read_output(
            "s",
            "file:///a",
            json!({"contents": [
                {"uri": "file:///a", "mimeType": "text/plain", "text": "hello"},
                {"uri": "file:///b", "mimeType": "image/png", "blob": png}
            ]}),
        );
        assert_eq!(output.content.len(), 2);
        let ContentBlock::Text { text } = &output.content[0] else {
            panic!("text first")
        };
        let payload: Value = serde_json::from_str(text).unwrap();
        assert_eq!(payload["server"], "s");
        assert_eq!(payload["contents"][0]["text"], "hello");
        assert_eq!(payload["contents"][1]["blob"], "[the image below, 4 bytes]");
        assert!(
            matches!(&output.content[1], ContentBlock::Image { mime_type, .. } if mime_type == "image/png")
        );
    }

    #[test]
    fn listed_items_carry_their_server() {
        let items = json!([{"uri": "u", "name": "n"}]);
        assert_eq!(
            with_server(Some(&items), "docs"),
            [json!({"server": "docs", "uri": "u", "name": "n"})]
        );
        assert!(with_server(None, "docs").is_empty());
    }
}
