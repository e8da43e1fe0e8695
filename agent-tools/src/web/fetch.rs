//! `web_fetch {url, max_bytes?, format?}`: one GET, HTML turned into Markdown.

use std::path::Path;
use std::sync::Arc;

use agent_core::{
    async_trait,
    permission::{Assessment, Block, BlockCode, PermissionAction, Risk},
    SideEffect, Tool, ToolContext, ToolError, ToolOutput,
};
use reqwest::Url;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{
    caused_by, check_url, error_chain, html_to_markdown, Clients, Reach, Refused, TooManyRedirects,
    MAX_REDIRECTS,
};
use crate::common::{parse_args, schema_for, str_arg, Config, ToolsConfig};
use crate::scrub::finish_output;

/// Raw body bytes read when the call gives no `max_bytes` (256 KiB).
pub const DEFAULT_WEB_FETCH_MAX_BYTES: u64 = 256 * 1024;
/// The largest `max_bytes` a call may ask for (2 MiB).
pub const MAX_WEB_FETCH_MAX_BYTES: u64 = 2 * 1024 * 1024;
/// Bytes of an error response's body shown.
const ERROR_BODY_BYTES: u64 = 4 * 1024;
/// The tool reason of `web_fetch`.
const REASON: &str = "Fetches remote URL content over the network.";

/// Arguments of `web_fetch`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WebFetchArgs {
    /// HTTP or HTTPS URL to fetch.
    pub url: String,
    /// Maximum raw response body bytes to download before conversion (default 262144, at
    /// most 2097152).
    #[serde(default)]
    #[schemars(range(min = 1, max = 2097152))]
    pub max_bytes: Option<u64>,
    /// auto (default): HTML responses are converted to compact Markdown, everything else is
    /// returned as-is. raw: never convert. markdown: force conversion.
    #[serde(default)]
    #[schemars(schema_with = "format_schema")]
    pub format: Option<String>,
}

fn format_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": ["auto", "raw", "markdown"],
        "description": "auto (default): HTML responses are converted to compact Markdown, everything else is returned as-is. raw: never convert. markdown: force conversion."
    })
}

/// Fetches a web page.
#[derive(Debug, Clone)]
pub struct WebFetch {
    config: Config,
    clients: Arc<Clients>,
}

impl WebFetch {
    /// The tool for `config`. No client is built until the first call.
    pub fn new(config: Arc<ToolsConfig>) -> Self {
        Self::with_clients(config, Arc::default())
    }

    /// The tool over `clients`, which other web tools of the set share.
    pub(crate) fn with_clients(config: Arc<ToolsConfig>, clients: Arc<Clients>) -> Self {
        Self { config, clients }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Auto,
    Raw,
    Markdown,
}

fn failed(message: impl Into<String>) -> ToolError {
    ToolError::Failed(message.into())
}

/// Whether a content type (or, without one, the body) is text the model can read.
fn is_text(content_type: &str, head: &[u8]) -> bool {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if mime.is_empty() {
        return !head.contains(&0);
    }
    mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
        || matches!(
            mime.as_str(),
            "application/json"
                | "application/xml"
                | "application/xhtml+xml"
                | "application/javascript"
                | "application/ecmascript"
                | "application/x-javascript"
                | "application/x-yaml"
                | "application/yaml"
                | "application/toml"
                | "application/x-sh"
                | "application/sql"
                | "application/graphql"
                | "application/x-ndjson"
        )
}

fn looks_like_html(content_type: &str, body: &str) -> bool {
    let lowered = content_type.to_ascii_lowercase();
    if lowered.contains("text/html") || lowered.contains("application/xhtml") {
        return true;
    }
    if !lowered.is_empty() && !lowered.contains("text/plain") {
        return false;
    }
    let head: String = body.trim_start().chars().take(512).collect();
    let head = head.to_ascii_lowercase();
    head.contains("<!doctype html") || head.contains("<html")
}

fn status_line(status: reqwest::StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}

/// Reads at most `cap` bytes of the body; true when there was more.
async fn read_capped(
    response: &mut reqwest::Response,
    cap: u64,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let cap = usize::try_from(cap).unwrap_or(usize::MAX);
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = cap - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
        if body.len() == cap {
            // One more chunk tells whether the body went on.
            let more = response.chunk().await?.is_some_and(|c| !c.is_empty());
            return Ok((body, more));
        }
    }
    Ok((body, false))
}

/// Cuts `body` back to a UTF-8 boundary (a character cut by the cap is dropped).
pub(crate) fn utf8_lossy_capped(body: &[u8]) -> String {
    match std::str::from_utf8(body) {
        Ok(text) => text.to_string(),
        Err(err) if err.error_len().is_none() => {
            String::from_utf8_lossy(&body[..err.valid_up_to()]).into_owned()
        }
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    }
}

/// A successful response: where the redirects led, its status and content type, and its
/// body up to the cap.
pub(crate) struct Fetched {
    pub(crate) final_url: Url,
    pub(crate) status: reqwest::StatusCode,
    pub(crate) content_type: String,
    pub(crate) body: Vec<u8>,
    /// The body went on past the cap.
    pub(crate) truncated: bool,
}

/// Why [`get`] got no successful response.
pub(crate) enum FetchError {
    /// The HTTP client could not be built.
    Client(String),
    /// The request failed (connection, timeout, a refused redirect or destination).
    Request {
        /// The error's whole chain.
        text: String,
        /// The request timed out.
        timed_out: bool,
        /// A redirect past [`MAX_REDIRECTS`].
        too_many_redirects: bool,
        /// A redirect, or a name's address, the call may not reach.
        refused: bool,
    },
    /// A status other than 2xx, with the start of its body.
    Status {
        status: reqwest::StatusCode,
        content_type: String,
        body: Vec<u8>,
    },
    /// Reading the body failed.
    Read(String),
}

/// One GET of `url` (already checked with [`check_url`] for `reach`) through the shared
/// client for `reach`: at most [`MAX_REDIRECTS`] redirects, each checked like the first URL;
/// the body read up to `cap` bytes. The web tools' one way of fetching.
pub(crate) async fn get(
    clients: &Clients,
    url: Url,
    reach: Reach,
    accept: &str,
    cap: u64,
) -> Result<Fetched, FetchError> {
    let client = clients.get(reach).map_err(FetchError::Client)?;
    let request = client.get(url).header(reqwest::header::ACCEPT, accept);
    let mut response = request.send().await.map_err(|e| FetchError::Request {
        text: error_chain(&e),
        timed_out: e.is_timeout(),
        too_many_redirects: caused_by::<TooManyRedirects>(&e),
        refused: caused_by::<Refused>(&e),
    })?;
    let final_url = response.url().clone();
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    if !status.is_success() {
        let (body, _) = read_capped(&mut response, cap.min(ERROR_BODY_BYTES))
            .await
            .unwrap_or_default();
        return Err(FetchError::Status {
            status,
            content_type,
            body,
        });
    }
    let (body, truncated) = read_capped(&mut response, cap)
        .await
        .map_err(|e| FetchError::Read(error_chain(&e)))?;
    Ok(Fetched {
        final_url,
        status,
        content_type,
        body,
        truncated,
    })
}

#[async_trait]
impl Tool for WebFetch {
    fn name(&self) -> &str {
        "web_fetch"
    }

    fn description(&self) -> &str {
        "Fetch text from an HTTP or HTTPS URL after network permission is granted. HTML pages \
         come back as compact Markdown (headings, links, lists and code kept). While the \
         sandbox keeps commands off the network only public hosts can be fetched."
    }

    fn parameters(&self) -> Value {
        schema_for::<WebFetchArgs>()
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Network
    }

    fn assess(&self, args: &Value, _cwd: &Path) -> Assessment {
        let risk = Risk::for_side_effect(SideEffect::Network);
        // What no sandbox could allow is refused before the permission gate.
        let refusal = match str_arg(args, "url").map(|u| Url::parse(u.trim())) {
            Some(Ok(url)) => check_url(&url, Reach::Any).err(),
            Some(Err(err)) => Some(format!("invalid URL: {err}")),
            None => None,
        };
        let block = refusal.map(|reason| Block {
            code: BlockCode::Network,
            tool_name: Some(self.name().to_string()),
            action: PermissionAction::Deny,
            risk: risk.clone(),
            path: None,
            reason: format!("Error: Unsafe URL for web_fetch: {reason}"),
            recoverable: true,
        });
        Assessment {
            reason: Some(match &block {
                Some(block) => block.reason.clone(),
                None => REASON.to_string(),
            }),
            risk,
            block,
        }
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: WebFetchArgs = parse_args(self.name(), args)?;
        let invalid = |e: &str| failed(format!("Error: Invalid arguments for web_fetch: {e}"));
        let max_bytes = match args.max_bytes {
            None => DEFAULT_WEB_FETCH_MAX_BYTES,
            Some(n) if (1..=MAX_WEB_FETCH_MAX_BYTES).contains(&n) => n,
            Some(_) => return Err(invalid("max_bytes must be between 1 and 2097152")),
        };
        let format = match args
            .format
            .as_deref()
            .map(|f| f.trim().to_ascii_lowercase())
        {
            None => Format::Auto,
            Some(f) if f.is_empty() || f == "auto" => Format::Auto,
            Some(f) if f == "raw" => Format::Raw,
            Some(f) if f == "markdown" => Format::Markdown,
            Some(_) => {
                return Err(invalid(
                    "format must be \"auto\", \"raw\", or \"markdown\".",
                ))
            }
        };
        let url = Url::parse(args.url.trim())
            .map_err(|e| failed(format!("Error: Unsafe URL for web_fetch: invalid URL: {e}")))?;
        let reach = Reach::of(&ctx.sandbox);
        check_url(&url, reach).map_err(|e| {
            ToolError::Blocked(Box::new(Block {
                code: BlockCode::Network,
                tool_name: Some("web_fetch".to_string()),
                action: PermissionAction::Deny,
                risk: Risk::for_side_effect(SideEffect::Network),
                path: None,
                reason: format!("Error: Unsafe URL for web_fetch: {e}"),
                recoverable: true,
            }))
        })?;
        let accept =
            "text/*, application/json, application/xhtml+xml, application/xml;q=0.9, */*;q=0.5";
        let work = async {
            let fetched = get(&self.clients, url, reach, accept, max_bytes)
                .await
                .map_err(|err| {
                    failed(match err {
                        FetchError::Client(e) => {
                            format!("Error fetching URL: cannot build the HTTP client: {e}")
                        }
                        FetchError::Request { text, too_many_redirects: true, .. } => format!(
                            "Error fetching URL: too many redirects (web_fetch follows at most {MAX_REDIRECTS}): {text}"
                        ),
                        FetchError::Request { text, .. } => format!("Error fetching URL: {text}"),
                        FetchError::Status { status, content_type, body } => {
                            let body = utf8_lossy_capped(&body);
                            let mut message =
                                format!("Error fetching URL: HTTP {}", status_line(status));
                            if !body.trim().is_empty() && is_text(&content_type, body.as_bytes()) {
                                message.push_str("\n\n");
                                message.push_str(body.trim());
                            }
                            message
                        }
                        FetchError::Read(text) => format!("Error reading response body: {text}"),
                    })
                })?;
            let Fetched {
                final_url,
                status,
                content_type,
                body,
                truncated,
            } = fetched;
            if !is_text(&content_type, &body[..body.len().min(8192)]) {
                return Err(failed(format!(
                    "Error fetching URL: {final_url} is {}, not text; web_fetch returns text and HTML pages only",
                    content_type.split(';').next().unwrap_or("binary content").trim()
                )));
            }
            let mut text = utf8_lossy_capped(&body);
            let mut converted = false;
            if format == Format::Markdown
                || (format == Format::Auto && looks_like_html(&content_type, &text))
            {
                let markdown = html_to_markdown(&text, Some(&final_url));
                if !markdown.is_empty() {
                    text = markdown;
                    converted = true;
                }
            }
            let mut lines = vec![
                format!("URL: {final_url}"),
                format!("Status: {}", status_line(status)),
                format!(
                    "Content-Type: {}",
                    if content_type.is_empty() {
                        "unknown"
                    } else {
                        &content_type
                    }
                ),
                format!("Bytes: {}", text.len()),
            ];
            if converted {
                lines.push(
                    "Converted: html -> markdown (pass format: \"raw\" for the original HTML)"
                        .to_string(),
                );
            }
            if truncated {
                lines.push(format!(
                    "Truncated: the body was cut at max_bytes={max_bytes}"
                ));
            }
            lines.push(String::new());
            lines.push(text);
            let mut output = ToolOutput::text(lines.join("\n"));
            output.truncated = truncated;
            Ok(output)
        };
        let output = tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => {
                return Err(ToolError::Cancelled("the request was cancelled".to_string()))
            }
            result = work => result?,
        };
        Ok(finish_output(output, self.config.full_output_cap))
    }
}
