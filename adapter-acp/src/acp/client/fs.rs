//! The client's text files: `fs/read_text_file` (absolute path, `line` and `limit` when
//! asked) and `fs/write_text_file`, for the file tools of one session. A client that
//! advertises only one of the two gets the other from the local disk.

use std::path::Path;
use std::sync::Arc;

use agent_client_protocol::v1::schema::{ReadTextFileRequest, SessionId, WriteTextFileRequest};
use agent_core::editor::{EditorFiles, ReadText};
use agent_core::{async_trait, ToolContext, ToolError};

use super::{ClientSide, CLIENT_TIMEOUT};

/// The client's text files, for session `session`.
#[derive(Debug)]
pub(crate) struct ClientFiles {
    side: Arc<ClientSide>,
    session: SessionId,
}

impl ClientFiles {
    pub(crate) fn new(side: Arc<ClientSide>, session: &str) -> Self {
        Self {
            side,
            session: SessionId::new(session),
        }
    }
}

/// Lines `line..line+limit` (1-based) of `text`, as a client answers them.
fn lines(text: &str, line: Option<u32>, limit: Option<u32>) -> String {
    let skip = line.map_or(0, |l| l.max(1) as usize - 1);
    let take = limit.map_or(usize::MAX, |l| l as usize);
    text.split_inclusive('\n').skip(skip).take(take).collect()
}

fn disk_error(what: &str, path: &Path, err: std::io::Error) -> ToolError {
    match err.kind() {
        std::io::ErrorKind::NotFound => {
            ToolError::Failed(format!("file not found: {}", path.display()))
        }
        _ => ToolError::io(format!("{what} {}", path.display()), err),
    }
}

#[async_trait]
impl EditorFiles for ClientFiles {
    async fn read_text(&self, request: ReadText, _ctx: &ToolContext) -> Result<String, ToolError> {
        if !self.side.reads_files() {
            let text = tokio::fs::read_to_string(&request.path)
                .await
                .map_err(|e| disk_error("reading", &request.path, e))?;
            return Ok(lines(&text, request.line, request.limit));
        }
        let path = request.path.clone();
        let asked = ReadTextFileRequest::new(self.session.clone(), request.path)
            .line(request.line)
            .limit(request.limit);
        match self
            .side
            .request("fs/read_text_file", asked, CLIENT_TIMEOUT)
            .await
        {
            Ok(answer) => Ok(answer.content),
            Err(err) => Err(ToolError::Failed(format!(
                "cannot read {} through the editor: {err}",
                path.display()
            ))),
        }
    }

    async fn write_text(
        &self,
        path: &Path,
        content: &str,
        _ctx: &ToolContext,
    ) -> Result<(), ToolError> {
        if !self.side.writes_files() {
            if let Some(parent) = path.parent() {
                tokio::fs::create_dir_all(parent)
                    .await
                    .map_err(|e| disk_error("creating the folders for", path, e))?;
            }
            return tokio::fs::write(path, content)
                .await
                .map_err(|e| disk_error("writing", path, e));
        }
        let asked = WriteTextFileRequest::new(self.session.clone(), path, content);
        match self
            .side
            .request("fs/write_text_file", asked, CLIENT_TIMEOUT)
            .await
        {
            Ok(_) => Ok(()),
            Err(err) => Err(ToolError::Failed(format!(
                "cannot write {} through the editor: {err}",
                path.display()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::lines;

    #[test]
    fn a_local_read_takes_the_lines_asked_for() {
        let text = "a\nb\nc\n";
        assert_eq!(lines(text, None, None), text);
        assert_eq!(lines(text, Some(2), None), "b\nc\n");
        assert_eq!(lines(text, Some(2), Some(1)), "b\n");
        assert_eq!(lines(text, Some(9), Some(1)), "");
    }
}
