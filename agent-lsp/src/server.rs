//! One running language server: its process (in a group of its own), the `initialize`
//! handshake, the documents it has open, and the diagnostics it published.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_sandbox::ProcessGroup;
use lsp_types::{Diagnostic, PublishDiagnosticsParams, WorkspaceFolder};
use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::config::{language_id, ServerSpec};
use crate::connection::{Connection, Handler};
use crate::error::LspError;
use crate::uri::{file_uri, file_uri_string, uri_path};

/// Bytes of a server's stderr kept for error messages (the most recent).
const STDERR_TAIL: usize = 4096;
/// After a file's first fresh diagnostics, how long the server must stay quiet about it
/// before they count as settled (servers publish in stages: syntax, then types).
const SETTLE: Duration = Duration::from_millis(300);

/// A running server's process; dropping it kills the process group.
struct Process {
    child: Child,
    group: ProcessGroup,
}

impl Drop for Process {
    fn drop(&mut self) {
        self.group.kill();
        let _ = self.child.start_kill();
        let _ = self.child.try_wait();
    }
}

/// A document the server has open.
struct Doc {
    version: i32,
    hash: u64,
}

/// What a [`Server::sync`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Synced {
    /// The document's version now.
    pub(crate) version: i32,
    /// Whether a `didOpen` or `didChange` was sent (the text was new to the server).
    pub(crate) sent: bool,
}

/// One publication of a file's diagnostics.
struct Published {
    version: Option<i32>,
    diagnostics: Vec<Diagnostic>,
    /// Its place in the order of all publications of this server.
    seq: u64,
}

/// What the reader task updates: the published diagnostics, and the answers to the
/// server's own requests.
struct Store {
    server: String,
    settings: Option<Value>,
    folders: Value,
    published: Mutex<HashMap<PathBuf, Published>>,
    /// The last publication's number.
    seq: AtomicU64,
    /// The last publication's number, announced after it is recorded (and touched when
    /// the connection ends).
    tick: watch::Sender<u64>,
}

impl Store {
    fn published(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Published>> {
        self.published.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes the waiters without a new publication (the connection ended).
    fn bump(&self) {
        self.tick.send_modify(|_| {});
    }
}

impl Handler for Store {
    fn notification(&self, method: &str, params: Value) {
        match method {
            "textDocument/publishDiagnostics" => {
                let params: PublishDiagnosticsParams = match serde_json::from_value(params) {
                    Ok(p) => p,
                    Err(e) => {
                        tracing::debug!(server = %self.server, "bad publishDiagnostics: {e}");
                        return;
                    }
                };
                let Some(path) = uri_path(params.uri.as_str()) else {
                    return;
                };
                // Recorded first, announced after: a waiter woken by the tick finds it.
                let mut published = self.published();
                let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
                published.insert(
                    path,
                    Published {
                        version: params.version,
                        diagnostics: params.diagnostics,
                        seq,
                    },
                );
                drop(published);
                self.tick.send_replace(seq);
            }
            "window/logMessage" | "window/showMessage" => {
                tracing::debug!(server = %self.server, "{}", params["message"].as_str().unwrap_or_default());
            }
            _ => {}
        }
    }

    fn request(&self, method: &str, params: Value) -> Result<Value, (i64, String)> {
        match method {
            "workspace/configuration" => {
                let items = params["items"].as_array().cloned().unwrap_or_default();
                Ok(Value::Array(
                    items
                        .iter()
                        .map(|item| setting(self.settings.as_ref(), item["section"].as_str()))
                        .collect(),
                ))
            }
            "workspace/workspaceFolders" => Ok(self.folders.clone()),
            "window/workDoneProgress/create"
            | "client/registerCapability"
            | "client/unregisterCapability"
            | "window/showMessageRequest"
            | "window/showDocument"
            | "workspace/semanticTokens/refresh"
            | "workspace/inlayHint/refresh"
            | "workspace/inlineValue/refresh"
            | "workspace/codeLens/refresh"
            | "workspace/diagnostic/refresh" => Ok(Value::Null),
            "workspace/applyEdit" => Ok(serde_json::to_value(ApplyResult {
                applied: false,
                failure_reason: "the agent's language-server client does not apply edits",
            })
            .unwrap_or(Value::Null)),
            _ => Err((-32601, format!("{method} is not supported by this client"))),
        }
    }

    fn closed(&self) {
        self.bump();
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApplyResult {
    applied: bool,
    failure_reason: &'static str,
}

/// The value of `section` (dotted) in `settings`; all of them without a section.
fn setting(settings: Option<&Value>, section: Option<&str>) -> Value {
    let Some(settings) = settings else {
        return Value::Null;
    };
    let Some(section) = section.filter(|s| !s.is_empty()) else {
        return settings.clone();
    };
    if let Some(value) = settings.get(section) {
        return value.clone();
    }
    let mut value = settings;
    for part in section.split('.') {
        match value.get(part) {
            Some(inner) => value = inner,
            None => return Value::Null,
        }
    }
    value.clone()
}

/// A running, initialized language server.
pub(crate) struct Server {
    /// The id of its [`ServerSpec`].
    pub(crate) id: String,
    /// The root it was started for.
    pub(crate) root: PathBuf,
    /// The process id (the group's leader).
    pub(crate) pid: Option<u32>,
    /// The `capabilities` of its `initialize` result.
    pub(crate) capabilities: Value,
    /// Bound on one request.
    pub(crate) timeout: Duration,
    conn: Connection,
    store: Arc<Store>,
    docs: tokio::sync::Mutex<HashMap<PathBuf, Doc>>,
    process: Mutex<Option<Process>>,
    stderr: Arc<Mutex<String>>,
}

impl Server {
    /// Starts `program` for `spec` in `root` and runs the `initialize` handshake (bounded
    /// by `timeout`). On failure the process is gone.
    pub(crate) async fn start(
        spec: &ServerSpec,
        program: &Path,
        root: &Path,
        timeout: Duration,
    ) -> Result<Self, LspError> {
        let mut cmd = Command::new(program);
        cmd.args(&spec.args)
            .envs(&spec.env)
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        agent_sandbox::prepare_server(&mut cmd);
        let spawn_error = |source| LspError::Spawn {
            server: spec.id.clone(),
            command: program.display().to_string(),
            source,
        };
        let mut child = cmd.spawn().map_err(spawn_error)?;
        let group = ProcessGroup::of(&child);
        let pid = child.id();
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(spawn_error(std::io::Error::other("stdio was not piped")));
        };
        let stderr = Arc::new(Mutex::new(String::new()));
        if let Some(pipe) = child.stderr.take() {
            tokio::spawn(keep_tail(spec.id.clone(), pipe, stderr.clone()));
        }
        let folders = serde_json::to_value([WorkspaceFolder {
            uri: file_uri(root)?,
            name: root
                .file_name()
                .map_or_else(|| "/".into(), |n| n.to_string_lossy().into_owned()),
        }])
        .unwrap_or(Value::Null);
        let (tick, _) = watch::channel(0);
        let store = Arc::new(Store {
            server: spec.id.clone(),
            settings: spec.settings.clone(),
            folders,
            published: Mutex::default(),
            seq: AtomicU64::new(0),
            tick,
        });
        let conn = Connection::start(&spec.id, stdout, stdin, store.clone());
        let mut server = Self {
            id: spec.id.clone(),
            root: root.to_path_buf(),
            pid,
            capabilities: Value::Null,
            timeout,
            conn,
            store,
            docs: tokio::sync::Mutex::default(),
            process: Mutex::new(Some(Process { child, group })),
            stderr,
        };
        match server.initialize(spec).await {
            Ok(capabilities) => {
                server.capabilities = capabilities;
                Ok(server)
            }
            Err(err) => {
                let err = server.with_stderr(err).await;
                server.kill();
                Err(err)
            }
        }
    }

    async fn initialize(&self, spec: &ServerSpec) -> Result<Value, LspError> {
        let root = file_uri_string(&self.root);
        let params = crate::init::InitializeParams {
            process_id: std::process::id(),
            root_uri: &root,
            workspace_folders: &self.store.folders,
            initialization_options: spec.initialization_options.as_ref(),
            capabilities: crate::init::Capabilities::default(),
            client_info: crate::init::ClientInfo::default(),
        };
        let params = serde_json::to_value(params)
            .map_err(|e| LspError::Protocol(format!("encoding initialize: {e}")))?;
        let result = self
            .conn
            .request("initialize", &params, self.timeout)
            .await?;
        self.conn.notify("initialized", &serde_json::json!({}))?;
        Ok(result.get("capabilities").cloned().unwrap_or(Value::Null))
    }

    /// Whether the server still runs (its output has not ended).
    pub(crate) fn is_alive(&self) -> bool {
        !self.conn.is_closed()
    }

    /// The last lines the server wrote to stderr.
    pub(crate) fn stderr_tail(&self) -> String {
        let tail = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        tail.trim().to_string()
    }

    /// `err` with the server's last stderr lines when it says the server exited (waiting
    /// briefly for them: the pipe ends a moment after the output).
    pub(crate) async fn with_stderr(&self, err: LspError) -> LspError {
        match err {
            LspError::Exited { server, .. } => {
                let _ = self.conn.closed_within(Duration::from_millis(500)).await;
                LspError::Exited {
                    server,
                    stderr: self.stderr_tail(),
                }
            }
            other => other,
        }
    }

    /// A request with typed parameters and result, bounded by the server's timeout.
    pub(crate) async fn call<R: lsp_types::request::Request>(
        &self,
        params: R::Params,
    ) -> Result<R::Result, LspError> {
        self.conn.call::<R>(params, self.timeout).await
    }

    /// A request with raw parameters and result, bounded by the server's timeout.
    pub(crate) async fn request(&self, method: &str, params: &Value) -> Result<Value, LspError> {
        self.conn.request(method, params, self.timeout).await
    }

    /// Brings the server's copy of `path` up to `text`: `didOpen` the first time, then a
    /// full-text `didChange` when the text changed (and `didSave` when `saved` and the
    /// server wants it: the file on disk changed).
    pub(crate) async fn sync(
        &self,
        path: &Path,
        text: &str,
        saved: bool,
    ) -> Result<Synced, LspError> {
        let hash = {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            text.hash(&mut h);
            h.finish()
        };
        let uri = file_uri_string(path);
        let mut docs = self.docs.lock().await;
        let synced = match docs.get_mut(path) {
            Some(doc) if doc.hash == hash => {
                return Ok(Synced {
                    version: doc.version,
                    sent: false,
                })
            }
            Some(doc) => {
                let version = doc.version + 1;
                self.conn.notify(
                    "textDocument/didChange",
                    &serde_json::json!({
                        "textDocument": {"uri": uri, "version": version},
                        "contentChanges": [{"text": text}],
                    }),
                )?;
                doc.version = version;
                doc.hash = hash;
                Synced {
                    version,
                    sent: true,
                }
            }
            None => {
                let ext = crate::config::extension(path).unwrap_or_default();
                self.conn.notify(
                    "textDocument/didOpen",
                    &serde_json::json!({"textDocument": {
                        "uri": uri,
                        "languageId": language_id(&ext),
                        "version": 1,
                        "text": text,
                    }}),
                )?;
                docs.insert(path.to_path_buf(), Doc { version: 1, hash });
                Synced {
                    version: 1,
                    sent: true,
                }
            }
        };
        if saved && synced.sent && self.wants_save() {
            self.conn.notify(
                "textDocument/didSave",
                &serde_json::json!({"textDocument": {"uri": uri}}),
            )?;
        }
        Ok(synced)
    }

    /// Closes `path` if the server has it open (the file was deleted).
    pub(crate) async fn close(&self, path: &Path) -> Result<(), LspError> {
        if self.docs.lock().await.remove(path).is_some() {
            self.conn.notify(
                "textDocument/didClose",
                &serde_json::json!({"textDocument": {"uri": file_uri_string(path)}}),
            )?;
        }
        Ok(())
    }

    fn wants_save(&self) -> bool {
        match &self.capabilities["textDocumentSync"]["save"] {
            Value::Bool(b) => *b,
            Value::Object(_) => true,
            _ => false,
        }
    }

    /// The current publication mark: diagnostics published later are newer than it.
    pub(crate) fn mark(&self) -> u64 {
        self.store.seq.load(Ordering::Relaxed)
    }

    /// The diagnostics last published for `path`, if any were.
    pub(crate) fn diagnostics(&self, path: &Path) -> Option<Vec<Diagnostic>> {
        self.store
            .published()
            .get(path)
            .map(|p| p.diagnostics.clone())
    }

    /// Every file's last published diagnostics (files without any left out), by path.
    pub(crate) fn all_diagnostics(&self) -> Vec<(PathBuf, Vec<Diagnostic>)> {
        let mut all: Vec<_> = self
            .store
            .published()
            .iter()
            .filter(|(_, p)| !p.diagnostics.is_empty())
            .map(|(path, p)| (path.clone(), p.diagnostics.clone()))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// Waits (at most `bound`) for diagnostics of `path` published after `mark` for
    /// `version` or later: one that names exactly `version` is the answer; one without a
    /// version is followed until the server is quiet about the file for a moment (servers
    /// that do not version their diagnostics publish in stages). `None` when none came in
    /// time (or the server ended).
    pub(crate) async fn fresh_diagnostics(
        &self,
        path: &Path,
        mark: u64,
        version: i32,
        bound: Duration,
    ) -> Option<Vec<Diagnostic>> {
        let deadline = Instant::now() + bound;
        let mut ticks = self.store.tick.subscribe();
        let fresh = |store: &Store| {
            store
                .published()
                .get(path)
                .filter(|p| p.seq > mark && p.version.is_none_or(|v| v >= version))
                .map(|p| (p.seq, p.version == Some(version)))
        };
        let mut last = loop {
            match fresh(&self.store) {
                // Published for exactly this version: the server's answer for this text.
                Some((_, true)) => return self.diagnostics(path),
                Some((seq, false)) => break seq,
                None => {}
            }
            if !self.is_alive() {
                return None;
            }
            match tokio::time::timeout_at(deadline, ticks.changed()).await {
                Ok(Ok(())) => continue,
                _ => return None,
            }
        };
        let mut quiet_until = Instant::now() + SETTLE;
        loop {
            let until = quiet_until.min(deadline);
            match tokio::time::timeout_at(until, ticks.changed()).await {
                Ok(Ok(())) => {
                    if let Some((seq, _)) = fresh(&self.store).filter(|(s, _)| *s > last) {
                        last = seq;
                        quiet_until = Instant::now() + SETTLE;
                    }
                }
                _ => break,
            }
        }
        self.diagnostics(path)
    }

    /// Ends the server: `shutdown` and `exit` (each bounded by `grace`), its stdin
    /// closed, then waits up to `grace` for it to exit and kills its group.
    pub(crate) async fn shutdown(&self, grace: Duration) {
        if self.is_alive() {
            let _ = self.conn.request("shutdown", &Value::Null, grace).await;
            let _ = self.conn.notify("exit", &Value::Null);
        }
        self.conn.close_input();
        let process = self
            .process
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(mut process) = process {
            let _ = tokio::time::timeout(grace, process.child.wait()).await;
            // Helpers the server left in its group go too (Process's drop kills it).
            drop(process);
        }
    }

    /// Kills the server's process group at once.
    pub(crate) fn kill(&self) {
        let process = self
            .process
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        drop(process);
    }
}

async fn keep_tail(server: String, pipe: tokio::process::ChildStderr, tail: Arc<Mutex<String>>) {
    let mut lines = BufReader::new(pipe).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(target: "agent_lsp::server", server = %server, "{line}");
        let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
        tail.push_str(&line);
        tail.push('\n');
        if tail.len() > 2 * STDERR_TAIL {
            let mut cut = tail.len() - STDERR_TAIL;
            while !tail.is_char_boundary(cut) {
                cut += 1;
            }
            tail.drain(..cut);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn configuration_requests_are_answered_from_the_settings_by_section() {
        let settings = json!({"python": {"analysis": {"typeCheckingMode": "strict"}}, "a.b": 1});
        assert_eq!(
            setting(Some(&settings), Some("python.analysis")),
            json!({"typeCheckingMode": "strict"})
        );
        assert_eq!(setting(Some(&settings), Some("a.b")), json!(1));
        assert_eq!(setting(Some(&settings), Some("nope.x")), Value::Null);
        assert_eq!(setting(Some(&settings), None), settings);
        assert_eq!(setting(None, Some("python")), Value::Null);
    }
}
