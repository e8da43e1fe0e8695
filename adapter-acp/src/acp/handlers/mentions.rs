//! What a prompt mentions: each `resource_link` block (an `@`-mentioned file, an MCP
//! resource) is read before the turn starts, so the model gets its content and not only
//! its name ([`prompt_input`](crate::acp::mapping::prompt_input) adds it as a
//! `<context ref="URI">` section):
//!
//! - a `file://` URI: confined to the session's workspace (a path outside it, or a
//!   symlink leading out, is refused as the file tools refuse it), read through the
//!   editor's `fs/read_text_file` when the client offers it (its unsaved buffer), else
//!   from the disk; a `file:` URI that is no file of the workspace may still be an MCP
//!   server's resource, asked for as below;
//! - any other URI (`mcp://…`, a server's own scheme): `resources/read` on the session's
//!   MCP servers ([`McpManager::read_resource`]); text contents as text, image blobs as
//!   images.
//!
//! A mention that cannot be read does not fail the prompt: the model is told why.

use std::collections::HashMap;
use std::path::PathBuf;

use agent_client_protocol::v1::schema::{ContentBlock as AcpBlock, ReadTextFileRequest, SessionId};
use agent_host::session::Session;
use agent_mcp::McpManager;
use agent_tools::{truncate_utf8, Workspace};
use base64::Engine as _;
use serde_json::Value;

use super::Shared;
use crate::acp::client::CLIENT_TIMEOUT;
use crate::acp::mapping::LinkRead;

/// The most of one mention's text the model gets (a whole source file fits).
pub(crate) const MENTION_CAP: usize = 256 * 1024;

/// Whether `blocks` mention something to read (a `resource_link`).
pub(super) fn any(blocks: &[AcpBlock]) -> bool {
    blocks
        .iter()
        .any(|b| matches!(b, AcpBlock::ResourceLink(_)))
}

/// Reads every `resource_link` of `blocks` for session `session`, by block index.
pub(super) async fn read_links(
    s: &Shared,
    session: &Session,
    blocks: &[AcpBlock],
) -> HashMap<usize, LinkRead> {
    let mut read = HashMap::new();
    for (index, block) in blocks.iter().enumerate() {
        let AcpBlock::ResourceLink(link) = block else {
            continue;
        };
        let content = match file_path(&link.uri) {
            Some(path) => match read_file(s, session, path).await {
                Ok(read) => Ok(read),
                // MCP servers name resources with `file:` URIs too.
                Err(why) => read_resource(session.mcp(), &link.uri)
                    .await
                    .map_err(|_| why),
            },
            None => read_resource(session.mcp(), &link.uri).await,
        };
        read.insert(index, content.unwrap_or_else(|why| unread(&why)));
    }
    read
}

fn unread(why: &str) -> LinkRead {
    LinkRead {
        text: format!("(not read: {why})"),
        images: Vec::new(),
    }
}

/// The local path of a `file:` URI (percent-decoded); `None` for another scheme.
fn file_path(uri: &str) -> Option<Result<PathBuf, String>> {
    let url = match url::Url::parse(uri) {
        Ok(url) if url.scheme() == "file" => url,
        Ok(_) => return None,
        // A bare absolute path is a file too.
        Err(_) if uri.starts_with('/') => return Some(Ok(PathBuf::from(uri))),
        Err(_) => return None,
    };
    Some(
        url.to_file_path()
            .map_err(|()| format!("{uri} is not a local file path")),
    )
}

/// `text` cut to [`MENTION_CAP`], saying so when cut.
fn capped(text: String) -> String {
    match truncate_utf8(&text, MENTION_CAP) {
        (_, false) => text,
        (kept, true) => format!(
            "{kept}\n[… cut: the first {MENTION_CAP} of {} bytes]",
            text.len()
        ),
    }
}

async fn read_file(
    s: &Shared,
    session: &Session,
    path: Result<PathBuf, String>,
) -> Result<LinkRead, String> {
    let path = path?;
    let meta = session.meta();
    let workspace = Workspace::new(&meta.workspace_path);
    let resolved = workspace
        .resolve("resource_link", &path.to_string_lossy())
        .map_err(|refused| refused.to_string())?;
    let text = if s.client.reads_files() {
        let asked = ReadTextFileRequest::new(
            SessionId::new(meta.session_id.as_str()),
            resolved.path.clone(),
        );
        s.client
            .request("fs/read_text_file", asked, CLIENT_TIMEOUT)
            .await
            .map(|answer| answer.content)
            .map_err(|err| err.to_string())?
    } else {
        tokio::fs::read_to_string(&resolved.path)
            .await
            .map_err(|err| format!("cannot read {}: {err}", resolved.display))?
    };
    Ok(LinkRead {
        text: capped(text),
        images: Vec::new(),
    })
}

async fn read_resource(mcp: &McpManager, uri: &str) -> Result<LinkRead, String> {
    let (server, result) = mcp.read_resource(uri).await?;
    let mut texts = Vec::new();
    let mut images = Vec::new();
    let contents = result.get("contents").and_then(Value::as_array);
    for content in contents.into_iter().flatten() {
        let mime = content.get("mimeType").and_then(Value::as_str);
        if let Some(text) = content.get("text").and_then(Value::as_str) {
            texts.push(text.to_string());
            continue;
        }
        let Some(blob) = content.get("blob").and_then(Value::as_str) else {
            continue;
        };
        let bytes = base64::engine::general_purpose::STANDARD.decode(blob.trim());
        match (mime, bytes) {
            (Some(mime), Ok(bytes)) if mime.starts_with("image/") => {
                images.push((mime.to_string(), bytes));
            }
            (mime, bytes) => texts.push(format!(
                "(binary content of {server}, {}{}, not shown)",
                mime.unwrap_or("no mime type"),
                bytes
                    .map(|b| format!(", {} bytes", b.len()))
                    .unwrap_or_default(),
            )),
        }
    }
    Ok(LinkRead {
        text: capped(texts.join("\n")),
        images,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_become_paths() {
        assert_eq!(
            file_path("file:///w/a%20b.rs"),
            Some(Ok(PathBuf::from("/w/a b.rs")))
        );
        assert_eq!(file_path("/w/a.rs"), Some(Ok(PathBuf::from("/w/a.rs"))));
        assert_eq!(file_path("mcp://docs/readme"), None);
        assert_eq!(file_path("https://example.com/a"), None);
    }

    #[test]
    fn long_text_is_cut_and_says_so() {
        let text = "x".repeat(MENTION_CAP + 10);
        let cut = capped(text);
        assert!(cut.ends_with(&format!(
            "[… cut: the first {MENTION_CAP} of {} bytes]",
            MENTION_CAP + 10
        )));
        assert_eq!(capped("short".into()), "short");
    }
}
