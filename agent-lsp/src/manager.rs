//! [`Lsp`]: the language servers of one session, started on first use per server and
//! project root, restarted once after a crash, and shut down with the session.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lsp_types::request::{
    GotoDefinition, GotoImplementation, GotoTypeDefinition, HoverRequest, References,
    WorkspaceSymbolRequest,
};
use lsp_types::{
    Diagnostic, GotoDefinitionParams, GotoDefinitionResponse, Hover, HoverContents, HoverParams,
    Location, MarkedString, OneOf, PartialResultParams, Position, ReferenceContext,
    ReferenceParams, SymbolKind, TextDocumentIdentifier, TextDocumentPositionParams,
    WorkDoneProgressParams, WorkspaceSymbolParams, WorkspaceSymbolResponse,
};
use serde_json::Value;

use crate::config::{extension, resolve_command, LspConfig, ServerSpec};
use crate::error::LspError;
use crate::server::Server;
use crate::uri::{file_uri, uri_path};

/// How long a server gets to answer `shutdown` and to exit before its group is killed.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// A position query: which one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PositionOp {
    /// Where the symbol is defined.
    Definition,
    /// Every reference to it (its declaration included).
    References,
    /// The implementations of an interface or abstract method.
    Implementation,
    /// Where its type is defined.
    TypeDefinition,
}

impl PositionOp {
    /// The LSP method.
    pub fn method(self) -> &'static str {
        match self {
            Self::Definition => "textDocument/definition",
            Self::References => "textDocument/references",
            Self::Implementation => "textDocument/implementation",
            Self::TypeDefinition => "textDocument/typeDefinition",
        }
    }
}

/// One workspace symbol.
#[derive(Debug, Clone, PartialEq)]
pub struct Symbol {
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: SymbolKind,
    /// Where it is (a range of 0 when the server gave only the file).
    pub location: Location,
}

/// A server of the session, as [`Lsp::running`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningServer {
    /// Its id in the configuration.
    pub id: String,
    /// The project root it serves.
    pub root: PathBuf,
    /// Its process id (the leader of its process group).
    pub pid: Option<u32>,
}

/// The server a file resolves to, before anything is started.
#[derive(Debug, Clone)]
pub(crate) struct Pick {
    pub(crate) spec: ServerSpec,
    pub(crate) program: PathBuf,
    pub(crate) root: PathBuf,
}

/// One (server, root) of the session.
#[derive(Default)]
struct Slot {
    server: Option<Arc<Server>>,
    /// Restarts after a crash so far (at most one).
    restarts: u32,
    /// Set when the server crashed again after its restart: it is not started any more.
    crashed: Option<String>,
}

type Key = (String, PathBuf);

/// The language servers of one session in one workspace. Cheap to clone (the clones share
/// the servers). Building one starts nothing: a server is started by the first query of a
/// file it handles, and ended by [`Lsp::shutdown`] or when the last clone is dropped.
#[derive(Clone)]
pub struct Lsp {
    inner: Arc<Inner>,
}

struct Inner {
    workspace: PathBuf,
    config: LspConfig,
    slots: Mutex<HashMap<Key, Arc<tokio::sync::Mutex<Slot>>>>,
    shut: AtomicBool,
    /// Per file, the issues already shown after an edit (zut's ledger).
    surfaced: Mutex<HashMap<PathBuf, HashSet<String>>>,
}

impl std::fmt::Debug for Lsp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lsp")
            .field("workspace", &self.inner.workspace)
            .field("running", &self.running())
            .finish()
    }
}

impl Lsp {
    /// The servers of `config` for the workspace `workspace` (made absolute); none started.
    pub fn new(workspace: impl Into<PathBuf>, config: LspConfig) -> Self {
        let workspace = workspace.into();
        let workspace = std::path::absolute(&workspace).unwrap_or(workspace);
        Self {
            inner: Arc::new(Inner {
                workspace,
                config,
                slots: Mutex::default(),
                shut: AtomicBool::new(false),
                surfaced: Mutex::default(),
            }),
        }
    }

    /// The workspace.
    pub fn workspace(&self) -> &Path {
        &self.inner.workspace
    }

    /// The configuration.
    pub fn config(&self) -> &LspConfig {
        &self.inner.config
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Arc<tokio::sync::Mutex<Slot>>>> {
        self.inner.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The servers running now.
    pub fn running(&self) -> Vec<RunningServer> {
        let slots: Vec<_> = self.slots().values().cloned().collect();
        let mut out: Vec<RunningServer> = slots
            .iter()
            .filter_map(|slot| {
                let slot = slot.try_lock().ok()?;
                let server = slot.server.as_ref().filter(|s| s.is_alive())?;
                Some(RunningServer {
                    id: server.id.clone(),
                    root: server.root.clone(),
                    pid: server.pid,
                })
            })
            .collect();
        out.sort_by(|a, b| (&a.id, &a.root).cmp(&(&b.id, &b.root)));
        out
    }

    /// The server for `path` (absolute) and the root it would serve, without starting
    /// anything: an unavailable error when no configured server handles the file type or
    /// none of those that do is installed.
    pub(crate) fn pick(&self, path: &Path) -> Result<Pick, LspError> {
        let ext = extension(path);
        let Some(ext) = ext else {
            return Err(LspError::NoServer(None));
        };
        let candidates: Vec<&ServerSpec> = self.inner.config.servers_for(&ext).collect();
        if candidates.is_empty() {
            return Err(LspError::NoServer(Some(ext)));
        }
        for spec in &candidates {
            if let Some(program) = resolve_command(&spec.command, &self.inner.workspace) {
                return Ok(Pick {
                    root: self.root_for(path, spec),
                    spec: (*spec).clone(),
                    program,
                });
            }
        }
        Err(LspError::NotInstalled {
            ext: Some(ext),
            commands: candidates.iter().map(|s| s.command.clone()).collect(),
        })
    }

    /// The configured servers for `path`'s file type (all of them without a path).
    pub(crate) fn specs_for(&self, path: Option<&Path>) -> Vec<ServerSpec> {
        match path.map(extension) {
            None => self.inner.config.servers.clone(),
            Some(None) => Vec::new(),
            Some(Some(ext)) => self.inner.config.servers_for(&ext).cloned().collect(),
        }
    }

    /// Whether `spec`'s command is installed.
    pub(crate) fn resolves(&self, spec: &ServerSpec) -> bool {
        resolve_command(&spec.command, &self.inner.workspace).is_some()
    }

    /// The id of the first configured server for `path`'s file type.
    pub(crate) fn first_server_for(&self, path: &Path) -> Option<String> {
        self.specs_for(Some(path)).first().map(|s| s.id.clone())
    }

    /// The root `spec` would serve `path` from.
    pub(crate) fn root_of(&self, path: &Path, spec: &ServerSpec) -> PathBuf {
        self.root_for(path, spec)
    }

    /// The servers running now.
    pub(crate) fn running_servers(&self) -> Vec<Arc<Server>> {
        let slots: Vec<_> = self.slots().values().cloned().collect();
        slots
            .iter()
            .filter_map(|slot| {
                let slot = slot.try_lock().ok()?;
                slot.server.clone().filter(|s| s.is_alive())
            })
            .collect()
    }

    /// The `capabilities` of server `id` for the workspace root (starting it when needed).
    pub(crate) async fn capabilities_of(&self, id: &str) -> Result<(String, Value), LspError> {
        let Some(spec) = self.inner.config.server(id) else {
            return Err(LspError::Protocol(format!(
                "unknown or disabled server {id:?}"
            )));
        };
        let Some(program) = resolve_command(&spec.command, &self.inner.workspace) else {
            return Err(LspError::NotInstalled {
                ext: spec.extensions.first().cloned(),
                commands: vec![spec.command.clone()],
            });
        };
        let pick = Pick {
            spec: spec.clone(),
            program,
            root: self.inner.workspace.clone(),
        };
        let server = self.server(&pick, true).await?.ok_or(LspError::ShutDown)?;
        Ok((server.id.clone(), server.capabilities.clone()))
    }

    /// The nearest directory of `path` (inside the workspace) holding one of the server's
    /// root markers; else the workspace.
    fn root_for(&self, path: &Path, spec: &ServerSpec) -> PathBuf {
        let workspace = &self.inner.workspace;
        if !spec.root_markers.is_empty() && path.starts_with(workspace) {
            let mut dir = path.parent();
            while let Some(d) = dir {
                if !d.starts_with(workspace) {
                    break;
                }
                if spec.root_markers.iter().any(|m| d.join(m).exists()) {
                    return d.to_path_buf();
                }
                dir = d.parent();
            }
        }
        workspace.clone()
    }

    /// The running server for `pick`, restarting a crashed one once; with `start`, starts
    /// it when none runs (otherwise `None`).
    async fn server(&self, pick: &Pick, start: bool) -> Result<Option<Arc<Server>>, LspError> {
        if self.inner.shut.load(Ordering::Acquire) {
            return Err(LspError::ShutDown);
        }
        let key = (pick.spec.id.clone(), pick.root.clone());
        let slot = self.slots().entry(key).or_default().clone();
        let mut slot = slot.lock().await;
        if let Some(stderr) = &slot.crashed {
            return Err(LspError::Crashed {
                server: pick.spec.id.clone(),
                stderr: stderr.clone(),
            });
        }
        match slot.server.clone() {
            Some(server) if server.is_alive() => return Ok(Some(server)),
            Some(dead) => {
                let stderr = dead.stderr_tail();
                dead.kill();
                slot.server = None;
                if slot.restarts >= 1 {
                    slot.crashed = Some(stderr.clone());
                    return Err(LspError::Crashed {
                        server: pick.spec.id.clone(),
                        stderr,
                    });
                }
                slot.restarts += 1;
                tracing::warn!(server = %pick.spec.id, root = %pick.root.display(),
                    "language server exited; restarting it once: {stderr}");
            }
            None if !start => return Ok(None),
            None => {}
        }
        let server = Server::start(
            &pick.spec,
            &pick.program,
            &pick.root,
            self.inner.config.request_timeout,
        )
        .await?;
        tracing::debug!(server = %pick.spec.id, root = %pick.root.display(), pid = ?server.pid,
            "language server started");
        let server = Arc::new(server);
        if self.inner.shut.load(Ordering::Acquire) {
            server.kill();
            return Err(LspError::ShutDown);
        }
        slot.server = Some(server.clone());
        Ok(Some(server))
    }

    /// Runs `op` on the server of `path` with the file's current text synced (starting the
    /// server when needed; a file that cannot be read is an error only when `need_text`);
    /// when the server exits under it, once more on its restart.
    async fn with_file<T, F, Fut>(
        &self,
        path: &Path,
        need_text: bool,
        op: F,
    ) -> Result<(String, T), LspError>
    where
        F: Fn(Arc<Server>) -> Fut,
        Fut: std::future::Future<Output = Result<T, LspError>>,
    {
        let pick = self.pick(path)?;
        let text = match need_text {
            true => Some(read_text(path).await?),
            false => read_text(path).await.ok(),
        };
        let mut retried = false;
        loop {
            let server = self.server(&pick, true).await?.ok_or(LspError::ShutDown)?;
            let synced = match &text {
                Some(text) => server.sync(path, text, false).await.map(|_| ()),
                None => Ok(()),
            };
            let result = match synced {
                Ok(()) => op(server.clone()).await,
                Err(e) => Err(e),
            };
            match result {
                Err(LspError::Exited { .. }) if !retried && !server.is_alive() => retried = true,
                Err(err) => return Err(server.with_stderr(err).await),
                Ok(value) => return Ok((server.id.clone(), value)),
            }
        }
    }

    /// Definitions, references (declarations included), implementations or type
    /// definitions of the symbol at `position` (0-based, UTF-16 as the protocol counts) in
    /// `path` (absolute). Returns the server's id and the locations.
    pub async fn locations(
        &self,
        op: PositionOp,
        path: &Path,
        position: Position,
    ) -> Result<(String, Vec<Location>), LspError> {
        let at = at(path, position)?;
        self.with_file(path, true, |server| {
            let at = at.clone();
            async move {
                let work = WorkDoneProgressParams::default;
                let partial = PartialResultParams::default;
                let goto = || GotoDefinitionParams {
                    text_document_position_params: at.clone(),
                    work_done_progress_params: work(),
                    partial_result_params: partial(),
                };
                let response = match op {
                    PositionOp::Definition => server.call::<GotoDefinition>(goto()).await?,
                    PositionOp::Implementation => server.call::<GotoImplementation>(goto()).await?,
                    PositionOp::TypeDefinition => server.call::<GotoTypeDefinition>(goto()).await?,
                    PositionOp::References => {
                        let params = ReferenceParams {
                            text_document_position: at.clone(),
                            work_done_progress_params: work(),
                            partial_result_params: partial(),
                            context: ReferenceContext {
                                include_declaration: true,
                            },
                        };
                        let found = server.call::<References>(params).await?;
                        return Ok(found.unwrap_or_default());
                    }
                };
                Ok(flatten(response))
            }
        })
        .await
    }

    /// The workspace symbols matching `query`, from the server of `anchor` (absolute; the
    /// file is opened so the server has its project loaded).
    pub async fn workspace_symbols(
        &self,
        anchor: &Path,
        query: &str,
    ) -> Result<(String, Vec<Symbol>), LspError> {
        self.with_file(anchor, false, |server| async move {
            let params = WorkspaceSymbolParams {
                query: query.to_string(),
                ..WorkspaceSymbolParams::default()
            };
            let found = server.call::<WorkspaceSymbolRequest>(params).await?;
            Ok(symbols(found))
        })
        .await
    }

    /// The hover text at `position` in `path` (absolute); `None` when the server has
    /// nothing to say there.
    pub async fn hover(
        &self,
        path: &Path,
        position: Position,
    ) -> Result<(String, Option<String>), LspError> {
        let at = at(path, position)?;
        self.with_file(path, true, |server| {
            let at = at.clone();
            async move {
                let params = HoverParams {
                    text_document_position_params: at,
                    work_done_progress_params: WorkDoneProgressParams::default(),
                };
                let hover = server.call::<HoverRequest>(params).await?;
                Ok(hover.and_then(hover_text))
            }
        })
        .await
    }

    /// A request with raw parameters to the server of `path` (absolute, synced first);
    /// the server's id and its raw answer.
    pub async fn request(
        &self,
        path: &Path,
        method: &str,
        params: &Value,
    ) -> Result<(String, Value), LspError> {
        self.with_file(path, true, |server| async move {
            server.request(method, params).await
        })
        .await
    }

    /// The `capabilities` the server of `path` announced (starting it when needed).
    pub async fn capabilities(&self, path: &Path) -> Result<(String, Value), LspError> {
        let pick = self.pick(path)?;
        let server = self.server(&pick, true).await?.ok_or(LspError::ShutDown)?;
        Ok((server.id.clone(), server.capabilities.clone()))
    }

    /// The current diagnostics of `path` (absolute): the file is synced and the server's
    /// next publication for it awaited (at most the diagnostics timeout).
    pub async fn diagnostics(&self, path: &Path) -> Result<(String, Vec<Diagnostic>), LspError> {
        let bound = self.inner.config.diagnostics_timeout;
        let pick = self.pick(path)?;
        let text = read_text(path).await?;
        let server = self.server(&pick, true).await?.ok_or(LspError::ShutDown)?;
        let found = self.settled(&server, path, &text, false, bound).await?;
        Ok((server.id.clone(), found.unwrap_or_default()))
    }

    /// Every diagnostic the running servers last published, by file.
    pub fn published_diagnostics(&self) -> Vec<(String, PathBuf, Vec<Diagnostic>)> {
        let slots: Vec<_> = self.slots().values().cloned().collect();
        let mut out = Vec::new();
        for slot in slots {
            let Ok(slot) = slot.try_lock() else { continue };
            if let Some(server) = &slot.server {
                for (path, diagnostics) in server.all_diagnostics() {
                    out.push((server.id.clone(), path, diagnostics));
                }
            }
        }
        out
    }

    /// Syncs `text` and waits for the server's diagnostics of it; the last published ones
    /// when the text was not new to the server.
    async fn settled(
        &self,
        server: &Server,
        path: &Path,
        text: &str,
        saved: bool,
        bound: Duration,
    ) -> Result<Option<Vec<Diagnostic>>, LspError> {
        let mark = server.mark();
        let synced = server.sync(path, text, saved).await?;
        if !synced.sent {
            if let Some(known) = server.diagnostics(path) {
                return Ok(Some(known));
            }
        }
        Ok(server
            .fresh_diagnostics(path, mark, synced.version, bound)
            .await)
    }

    /// After a tool changed `path` (absolute): brings the server that handles it up to
    /// date (a deleted file is closed) and returns the file's diagnostics, waiting for them
    /// at most the diagnostics timeout. `Ok(None)` when no server runs for the file (and
    /// [`LspConfig::start_on_edit`] is off), or none came in time.
    pub async fn changed(
        &self,
        path: &Path,
    ) -> Result<Option<(String, Vec<Diagnostic>)>, LspError> {
        let Ok(pick) = self.pick(path) else {
            return Ok(None);
        };
        let start = self.inner.config.start_on_edit;
        let Some(server) = self.server(&pick, start).await? else {
            return Ok(None);
        };
        if !path.exists() {
            server.close(path).await?;
            return Ok(None);
        }
        let text = read_text(path).await?;
        if !self.inner.config.diagnostics_after_edits {
            server.sync(path, &text, true).await?;
            return Ok(None);
        }
        let bound = self.inner.config.diagnostics_timeout;
        let found = self.settled(&server, path, &text, true, bound).await?;
        Ok(found.map(|d| (server.id.clone(), d)))
    }

    /// The diagnostics of `path` not shown after an earlier edit (zut's ledger: an issue
    /// is the same wherever it moved; a clean file forgets what was shown).
    pub(crate) fn unsurfaced(&self, path: &Path, diagnostics: &[Diagnostic]) -> Vec<Diagnostic> {
        let mut ledger = self
            .inner
            .surfaced
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if diagnostics.is_empty() {
            ledger.remove(path);
            return Vec::new();
        }
        let previous = ledger.remove(path).unwrap_or_default();
        let current: HashSet<String> = diagnostics.iter().map(crate::format::issue_key).collect();
        let fresh = diagnostics
            .iter()
            .filter(|d| !previous.contains(&crate::format::issue_key(d)))
            .cloned()
            .collect();
        ledger.insert(path.to_path_buf(), current);
        fresh
    }

    /// Shuts every server down (`shutdown`, `exit`, then the process group is killed);
    /// later queries fail with [`LspError::ShutDown`].
    pub async fn shutdown(&self) {
        self.inner.shut.store(true, Ordering::Release);
        let servers = self.inner.take_servers().await;
        let all = servers.iter().map(|s| s.shutdown(SHUTDOWN_GRACE));
        futures::future::join_all(all).await;
    }

    /// Stops every server (as [`Self::shutdown`]) but keeps the manager usable: the next
    /// query starts them again, with a fresh restart allowance.
    pub async fn reload(&self) {
        let servers = self.inner.take_servers().await;
        let all = servers.iter().map(|s| s.shutdown(SHUTDOWN_GRACE));
        futures::future::join_all(all).await;
    }
}

impl Inner {
    async fn take_servers(&self) -> Vec<Arc<Server>> {
        let slots: Vec<_> = {
            let mut map = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            map.drain().map(|(_, slot)| slot).collect()
        };
        let mut servers = Vec::new();
        for slot in slots {
            if let Some(server) = slot.lock().await.server.take() {
                servers.push(server);
            }
        }
        servers
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let slots: Vec<_> = self
            .slots
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .map(|(_, slot)| slot)
            .collect();
        let servers: Vec<Arc<Server>> = slots
            .into_iter()
            .filter_map(|slot| slot.try_lock().ok().and_then(|mut s| s.server.take()))
            .collect();
        if servers.is_empty() {
            return;
        }
        // A graceful end on the runtime when there is one; the process groups are killed
        // either way (when the task ends, or at once when it cannot run).
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    futures::future::join_all(servers.iter().map(|s| s.shutdown(SHUTDOWN_GRACE)))
                        .await;
                });
            }
            Err(_) => servers.iter().for_each(|s| s.kill()),
        }
    }
}

async fn read_text(path: &Path) -> Result<String, LspError> {
    let bytes = tokio::fs::read(path)
        .await
        .map_err(|source| LspError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

fn at(path: &Path, position: Position) -> Result<TextDocumentPositionParams, LspError> {
    Ok(TextDocumentPositionParams {
        text_document: TextDocumentIdentifier {
            uri: file_uri(path)?,
        },
        position,
    })
}

fn flatten(response: Option<GotoDefinitionResponse>) -> Vec<Location> {
    match response {
        None => Vec::new(),
        Some(GotoDefinitionResponse::Scalar(location)) => vec![location],
        Some(GotoDefinitionResponse::Array(locations)) => locations,
        Some(GotoDefinitionResponse::Link(links)) => links
            .into_iter()
            .map(|l| Location {
                uri: l.target_uri,
                range: l.target_selection_range,
            })
            .collect(),
    }
}

fn symbols(found: Option<WorkspaceSymbolResponse>) -> Vec<Symbol> {
    match found {
        None => Vec::new(),
        Some(WorkspaceSymbolResponse::Flat(flat)) => flat
            .into_iter()
            .map(|s| Symbol {
                name: s.name,
                kind: s.kind,
                location: s.location,
            })
            .collect(),
        Some(WorkspaceSymbolResponse::Nested(nested)) => nested
            .into_iter()
            .map(|s| Symbol {
                name: s.name,
                kind: s.kind,
                location: match s.location {
                    OneOf::Left(location) => location,
                    OneOf::Right(file) => Location {
                        uri: file.uri,
                        range: lsp_types::Range::default(),
                    },
                },
            })
            .collect(),
    }
}

/// A hover's contents as text (Markdown kept as it is).
fn hover_text(hover: Hover) -> Option<String> {
    let marked = |m: MarkedString| match m {
        MarkedString::String(s) => s,
        MarkedString::LanguageString(l) => format!("```{}\n{}\n```", l.language, l.value),
    };
    let text = match hover.contents {
        HoverContents::Scalar(m) => marked(m),
        HoverContents::Array(items) => items
            .into_iter()
            .map(marked)
            .collect::<Vec<_>>()
            .join("\n\n"),
        HoverContents::Markup(m) => m.value,
    };
    let text = text.trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// The path of a location's URI (`None` for a URI that is not a file's).
pub(crate) fn location_path(location: &Location) -> Option<PathBuf> {
    uri_path(location.uri.as_str())
}
