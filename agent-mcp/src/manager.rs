//! [`McpManager`]: connects servers, keeps their tool lists current, and offers the tools
//! to agents as an [`agent_core::tool_source::ToolSource`].

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent_core::sandbox::SandboxPolicy;
use agent_core::{async_trait, tool_source::ToolSource, Message, SideEffect, Tool};
use secrecy::ExposeSecret;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::client::{self, ClientError, Connection, RemotePrompt, RemoteTool};
use crate::config::{ConfigError, McpServerConfig, McpTransport, TransportKind};
use crate::elicit::Elicitor;
use crate::naming;
use crate::oauth::{Authorizer, OAuthOptions};
use crate::prompts::{self, McpPrompt, PromptError};
use crate::resources::{ResourceOp, ResourceTool};
use crate::tool::{as_dyn, McpTool};

/// Default bound on connecting one server and listing its tools.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default bound on one tool call.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(600);

/// How a manager connects and calls.
#[derive(Clone)]
pub struct McpOptions {
    /// Bound on starting one server, the handshake and the first `tools/list` (also on a
    /// later re-listing). A server that takes longer is skipped with a warning.
    pub connect_timeout: Duration,
    /// Bound on one tool call (`None`: unbounded; an abort still ends it).
    pub call_timeout: Option<Duration>,
    /// Working directory of stdio servers without their own `cwd` (the workspace).
    pub cwd: PathBuf,
    /// Output cap of a tool result in bytes, as for the built-in tools.
    pub output_cap: usize,
    /// The OS sandbox of stdio servers that have no policy of their own (their `sandbox`
    /// entry); `None` (the default) runs them unconfined. A server's working directory is
    /// the workspace of a `workspace-write` policy. See [`crate::config`].
    pub sandbox: Option<SandboxPolicy>,
    /// How servers that ask for OAuth are authorized, and where their tokens are kept
    /// (in memory by default). See [`crate::oauth`].
    pub oauth: OAuthOptions,
    /// Where servers' questions (`elicitation/create`) go; `None` (the default): nobody is
    /// asked, the capability is not advertised and a server that asks is declined. See
    /// [`crate::elicit`].
    pub elicitor: Option<Arc<dyn Elicitor>>,
}

impl std::fmt::Debug for McpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpOptions")
            .field("connect_timeout", &self.connect_timeout)
            .field("call_timeout", &self.call_timeout)
            .field("cwd", &self.cwd)
            .field("output_cap", &self.output_cap)
            .field("sandbox", &self.sandbox)
            .field("oauth", &self.oauth)
            .field("elicitor", &self.elicitor.as_ref().map(|_| "set"))
            .finish()
    }
}

impl Default for McpOptions {
    fn default() -> Self {
        Self {
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            call_timeout: Some(DEFAULT_CALL_TIMEOUT),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            output_cap: agent_tools::DEFAULT_OUTPUT_CAP,
            sandbox: None,
            oauth: OAuthOptions::default(),
            elicitor: None,
        }
    }
}

impl McpOptions {
    /// Defaults with stdio servers started in `cwd`.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        Self {
            cwd: cwd.into(),
            ..Self::default()
        }
    }

    /// Sets the per-server connect timeout.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the per-call timeout.
    pub fn call_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// Sets the OS sandbox of stdio servers without a policy of their own.
    pub fn sandbox(mut self, policy: SandboxPolicy) -> Self {
        self.sandbox = Some(policy);
        self
    }

    /// Sends servers' questions to `elicitor` (and advertises the capability).
    pub fn elicitor(mut self, elicitor: Arc<dyn Elicitor>) -> Self {
        self.elicitor = Some(elicitor);
        self
    }

    /// Sets how servers that ask for OAuth are authorized.
    pub fn oauth(mut self, oauth: OAuthOptions) -> Self {
        self.oauth = oauth;
        self
    }
}

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ServerState {
    /// Connected; its tools are offered.
    Connected,
    /// Not connected (it failed to start, timed out, or exited); it offers no tools.
    Failed {
        /// Why, in words (secrets scrubbed).
        reason: String,
    },
}

/// One server as a host shows it (ZCode's `mcp/list`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatus {
    /// The configured name.
    pub name: String,
    /// How it is reached.
    pub transport: TransportKind,
    /// Connected or failed.
    #[serde(flatten)]
    pub state: ServerState,
    /// The names its tools are offered under.
    pub tools: Vec<String>,
    /// Process id of a stdio server while connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

/// What a host may want to know about an MCP tool (to pick an ACP `kind`, to list it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpToolInfo {
    /// The name the model calls.
    pub name: String,
    /// The server it belongs to.
    pub server: String,
    /// The tool's own name on that server.
    pub remote_name: String,
    /// Its title, if the server gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `readOnlyHint`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// `destructiveHint`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// `openWorldHint`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// The side effect the agent gives it (`read` or `network`).
    pub side_effect: SideEffect,
}

enum SlotState {
    Connected {
        connection: Arc<dyn Connection>,
        tools: Vec<RemoteTool>,
        /// Its prompts (listed when it has the capability).
        prompts: Vec<RemotePrompt>,
    },
    Failed(String),
}

/// One configured server.
struct Slot {
    name: String,
    kind: TransportKind,
    state: Mutex<SlotState>,
    /// The server announced `notifications/tools/list_changed`.
    list_changed: Arc<AtomicBool>,
    /// The server announced that its prompts (or resources) changed.
    catalog_changed: Arc<AtomicBool>,
    /// A call found the connection closed.
    closed: AtomicBool,
    /// How to connect an OAuth server again once a login left to the user completes.
    retry: Option<Retry>,
}

/// What reconnecting a server whose login completed later needs.
struct Retry {
    config: McpServerConfig,
    auth: Arc<Authorizer>,
    /// Set when the login completed (and the token was stored).
    authorized: Arc<AtomicBool>,
}

/// The hooks of one server's connection: its flags, the manager's dirty flag, its OAuth
/// state and the host's elicitor.
fn hooks(
    list_changed: &Arc<AtomicBool>,
    catalog_changed: &Arc<AtomicBool>,
    dirty: &Arc<AtomicBool>,
    auth: Option<Arc<Authorizer>>,
    elicitor: Option<Arc<dyn Elicitor>>,
) -> client::Hooks {
    let flag = |flag: &Arc<AtomicBool>| -> client::OnListChanged {
        let (flag, dirty) = (flag.clone(), dirty.clone());
        Arc::new(move || {
            flag.store(true, Ordering::SeqCst);
            dirty.store(true, Ordering::SeqCst);
        })
    };
    client::Hooks {
        on_list_changed: flag(list_changed),
        auth,
        elicitor,
        on_catalog_changed: Some(flag(catalog_changed)),
    }
}

/// What a connected server has when it is first listed.
type Listed = (Arc<dyn Connection>, Vec<RemoteTool>, Vec<RemotePrompt>);

/// Connects `server` and lists its tools (and prompts), bounded by the connect timeout
/// (outside an OAuth login waiting for the user).
async fn attempt(
    server: &McpServerConfig,
    options: &McpOptions,
    hooks: client::Hooks,
) -> Result<Listed, String> {
    let limit = options.connect_timeout;
    let authorizing = hooks.auth.as_ref().map(|a| a.authorizing());
    let work = async {
        let connection =
            client::connect(server, &options.cwd, options.sandbox.as_ref(), hooks).await?;
        let tools = match connection.list_tools().await {
            Ok(tools) => tools,
            Err(err) => {
                connection.close().await;
                return Err(err);
            }
        };
        // Prompts are extras: a server whose listing fails keeps its tools.
        let prompts = match connection.offers().prompts {
            false => Vec::new(),
            true => match connection.list_prompts().await {
                Ok(prompts) => prompts,
                Err(err) => {
                    tracing::warn!(server = %server.name, error = %scrub(&err.to_string()), "listing MCP prompts failed");
                    Vec::new()
                }
            },
        };
        Ok((connection, tools, prompts))
    };
    match bounded(limit, work, authorizing).await {
        Some(result) => result.map_err(|e| e.to_string()),
        None => Err(format!(
            "no answer within {} ms (connect and tools/list)",
            limit.as_millis()
        )),
    }
}

impl Slot {
    fn state(&self) -> MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The state a manager's handles and tools share.
pub(crate) struct Shared {
    slots: Vec<Slot>,
    generation: AtomicU64,
    tools: Mutex<Vec<Arc<McpTool>>>,
    /// The resource tools of the servers with resources.
    resource_tools: Mutex<Vec<Arc<ResourceTool>>>,
    options: McpOptions,
    refreshing: tokio::sync::Mutex<()>,
    /// Set by any slot's list_changed or closed flag: a refresh has work.
    dirty: Arc<AtomicBool>,
}

impl Shared {
    /// The connection of slot `index`, or why there is none.
    pub(crate) fn connection(&self, index: usize) -> Result<Arc<dyn Connection>, String> {
        let Some(slot) = self.slots.get(index) else {
            return Err("unknown server".into());
        };
        match &*slot.state() {
            SlotState::Connected { connection, .. } => Ok(connection.clone()),
            SlotState::Failed(reason) => Err(reason.clone()),
        }
    }

    /// A call found slot `index`'s connection closed: the next refresh drops its tools.
    pub(crate) fn mark_closed(&self, index: usize) {
        if let Some(slot) = self.slots.get(index) {
            slot.closed.store(true, Ordering::SeqCst);
            self.dirty.store(true, Ordering::SeqCst);
        }
    }

    fn resource_tools(&self) -> MutexGuard<'_, Vec<Arc<ResourceTool>>> {
        self.resource_tools
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn tools(&self) -> MutexGuard<'_, Vec<Arc<McpTool>>> {
        self.tools.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Rebuilds the offered tools from the connected slots and bumps the generation.
    fn rebuild(self: &Arc<Self>) {
        let mut tools: Vec<Arc<McpTool>> = Vec::new();
        for (index, slot) in self.slots.iter().enumerate() {
            let remote = match &*slot.state() {
                SlotState::Connected { tools, .. } => tools.clone(),
                SlotState::Failed(_) => continue,
            };
            for remote in remote {
                if remote.name.trim().is_empty() {
                    tracing::warn!(server = %slot.name, "MCP server listed a tool without a name; ignored");
                    continue;
                }
                let name = naming::tool_name(&slot.name, &remote.name, &|candidate| {
                    tools.iter().any(|t| t.name == candidate)
                });
                tools.push(Arc::new(McpTool::new(
                    name,
                    &slot.name,
                    index,
                    remote,
                    Arc::downgrade(self),
                    self.options.output_cap,
                    self.options.call_timeout,
                )));
            }
        }
        // The resource tools come after the servers' own, which keep their names.
        let mut resource_tools: Vec<Arc<ResourceTool>> = Vec::new();
        for (index, slot) in self.slots.iter().enumerate() {
            let offers = match &*slot.state() {
                SlotState::Connected { connection, .. } => connection.offers(),
                SlotState::Failed(_) => continue,
            };
            if !offers.resources {
                continue;
            }
            for op in ResourceOp::ALL {
                let name = naming::tool_name(&slot.name, op.suffix(), &|candidate| {
                    tools.iter().any(|t| t.name == candidate)
                        || resource_tools.iter().any(|t| t.name == candidate)
                });
                resource_tools.push(Arc::new(ResourceTool::new(
                    name,
                    &slot.name,
                    index,
                    op,
                    Arc::downgrade(self),
                    self.options.output_cap,
                    self.options.call_timeout,
                )));
            }
        }
        *self.tools() = tools;
        *self.resource_tools() = resource_tools;
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Connects again the servers skipped for want of a login that the user has since
    /// completed (the URL of the skip's warning); whether one connected.
    async fn reconnect_authorized(&self) -> bool {
        let due: Vec<usize> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| {
                slot.retry
                    .as_ref()
                    .is_some_and(|r| r.authorized.swap(false, Ordering::SeqCst))
                    && matches!(&*slot.state(), SlotState::Failed(_))
            })
            .map(|(index, _)| index)
            .collect();
        let attempts = due.iter().map(|&index| {
            let slot = &self.slots[index];
            let retry = slot
                .retry
                .as_ref()
                .map(|r| (r.config.clone(), r.auth.clone()));
            async move {
                let Some((config, auth)) = retry else {
                    return (index, Err(String::new()));
                };
                let hooks = hooks(
                    &slot.list_changed,
                    &slot.catalog_changed,
                    &self.dirty,
                    Some(auth),
                    self.options.elicitor.clone(),
                );
                (index, attempt(&config, &self.options, hooks).await)
            }
        });
        let mut connected = false;
        for (index, result) in futures::future::join_all(attempts).await {
            let slot = &self.slots[index];
            match result {
                Ok((connection, tools, prompts)) => {
                    tracing::info!(server = %slot.name, "MCP server connected after its OAuth login");
                    *slot.state() = SlotState::Connected {
                        connection,
                        tools,
                        prompts,
                    };
                    connected = true;
                }
                Err(reason) => {
                    *slot.state() = SlotState::Failed(scrub(&reason));
                }
            }
        }
        connected
    }

    /// Lists again the prompts of the servers that said they changed.
    async fn relist_prompts(&self) {
        let due: Vec<(usize, Arc<dyn Connection>)> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| slot.catalog_changed.swap(false, Ordering::SeqCst))
            .filter_map(|(index, slot)| match &*slot.state() {
                SlotState::Connected { connection, .. } if connection.offers().prompts => {
                    Some((index, connection.clone()))
                }
                _ => None,
            })
            .collect();
        let limit = self.options.connect_timeout;
        let listed =
            futures::future::join_all(due.into_iter().map(|(index, connection)| async move {
                (
                    index,
                    tokio::time::timeout(limit, connection.list_prompts()).await,
                )
            }))
            .await;
        for (index, listed) in listed {
            let slot = &self.slots[index];
            match listed {
                Ok(Ok(fresh)) => {
                    if let SlotState::Connected { prompts, .. } = &mut *slot.state() {
                        *prompts = fresh;
                    }
                }
                Ok(Err(err)) => {
                    tracing::warn!(server = %slot.name, error = %scrub(&err.to_string()), "re-listing MCP prompts failed; keeping the old list");
                }
                Err(_) => {
                    tracing::warn!(server = %slot.name, "re-listing MCP prompts timed out; keeping the old list");
                }
            }
        }
    }

    async fn refresh(self: &Arc<Self>) {
        let _one_at_a_time = self.refreshing.lock().await;
        let mut changed = false;
        // A server whose process exited loses its tools.
        for slot in &self.slots {
            let mut state = slot.state();
            let SlotState::Connected { connection, .. } = &*state else {
                continue;
            };
            if slot.closed.swap(false, Ordering::SeqCst) || connection.is_closed() {
                let reason = scrub(&match connection.closed_reason() {
                    r if r.is_empty() => "the connection to the server closed".to_string(),
                    r => r,
                });
                tracing::warn!(server = %slot.name, %reason, "MCP server disconnected; its tools are removed");
                *state = SlotState::Failed(reason);
                changed = true;
            }
        }
        if self.dirty.swap(false, Ordering::SeqCst) {
            changed |= self.reconnect_authorized().await;
            self.relist_prompts().await;
            let relists = self.slots.iter().enumerate().filter_map(|(index, slot)| {
                if !slot.list_changed.swap(false, Ordering::SeqCst) {
                    return None;
                }
                match &*slot.state() {
                    SlotState::Connected { connection, .. } => Some((index, connection.clone())),
                    SlotState::Failed(_) => None,
                }
            });
            let relists: Vec<_> = relists.collect();
            let limit = self.options.connect_timeout;
            let results = futures::future::join_all(relists.into_iter().map(
                |(index, connection)| async move {
                    let listed = tokio::time::timeout(limit, connection.list_tools()).await;
                    (index, listed)
                },
            ))
            .await;
            for (index, listed) in results {
                let slot = &self.slots[index];
                let mut state = slot.state();
                match listed {
                    Ok(Ok(tools)) => {
                        if let SlotState::Connected { tools: current, .. } = &mut *state {
                            *current = tools;
                            changed = true;
                        }
                    }
                    Ok(Err(ClientError::Closed(reason))) => {
                        let reason = scrub(&match reason {
                            r if r.is_empty() => "the connection to the server closed".to_string(),
                            r => r,
                        });
                        tracing::warn!(server = %slot.name, %reason, "MCP server disconnected; its tools are removed");
                        *state = SlotState::Failed(reason);
                        changed = true;
                    }
                    Ok(Err(err)) => {
                        tracing::warn!(server = %slot.name, error = %scrub(&err.to_string()), "re-listing MCP tools failed; keeping the old list");
                    }
                    Err(_) => {
                        tracing::warn!(server = %slot.name, "re-listing MCP tools timed out; keeping the old list");
                    }
                }
            }
        }
        if changed {
            self.rebuild();
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Tools may outlive the manager in an agent's cache; they hold it weakly, so the
        // servers end here.
        for slot in &self.slots {
            let mut state = slot.state();
            if let SlotState::Connected { connection, .. } = &*state {
                connection.kill();
            }
            *state = SlotState::Failed("the manager was dropped".into());
        }
    }
}

/// Connects MCP servers and offers their tools to agents.
///
/// A cheap handle: clones share the servers. The servers' processes end when the last
/// handle is dropped (their process groups are killed) or at [`McpManager::shutdown`].
/// Tools handed to agents hold the manager weakly and fail cleanly after that.
///
/// Give it to an agent with [`agent_core::AgentBuilder::tool_source`]: the agent asks it
/// before every model call, so a server's `notifications/tools/list_changed` shows up in the
/// next request.
#[derive(Clone)]
pub struct McpManager {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpManager")
            .field("servers", &self.status())
            .finish()
    }
}

impl Default for McpManager {
    fn default() -> Self {
        Self::empty()
    }
}

impl McpManager {
    /// A manager with no servers (offers no tools, starts nothing).
    pub fn empty() -> Self {
        Self::from_slots(Vec::new(), McpOptions::default(), Arc::default())
    }

    fn from_slots(slots: Vec<Slot>, options: McpOptions, dirty: Arc<AtomicBool>) -> Self {
        let shared = Arc::new(Shared {
            slots,
            generation: AtomicU64::new(0),
            tools: Mutex::new(Vec::new()),
            resource_tools: Mutex::new(Vec::new()),
            options,
            refreshing: tokio::sync::Mutex::new(()),
            dirty,
        });
        shared.rebuild();
        Self { shared }
    }

    /// Validates `servers`, then connects them all at once, each bounded by
    /// [`McpOptions::connect_timeout`], and lists their tools.
    ///
    /// An invalid configuration (a bad entry, two servers with one name) is an error and
    /// starts nothing. A server that fails to start, to initialize or to list its tools
    /// in time is skipped with a warning and reported by [`McpManager::status`]; the
    /// others work. With no servers this returns at once.
    pub async fn connect(
        servers: Vec<McpServerConfig>,
        options: McpOptions,
    ) -> Result<Self, ConfigError> {
        for (i, server) in servers.iter().enumerate() {
            server.validate()?;
            if servers[..i].iter().any(|s| s.name == server.name) {
                return Err(ConfigError::DuplicateName {
                    name: server.name.clone(),
                    context: None,
                });
            }
        }
        for server in &servers {
            register_secrets(server);
        }
        let dirty = Arc::new(AtomicBool::new(false));
        let flag = || Arc::new(AtomicBool::new(false));
        let prepared: Vec<_> = servers
            .iter()
            .map(|server| {
                let (list_changed, catalog_changed) = (flag(), flag());
                let retry = crate::oauth::authorizer_for(server, &options.oauth).map(|auth| {
                    let authorized = flag();
                    let (done, dirty) = (authorized.clone(), dirty.clone());
                    auth.on_authorized(Arc::new(move || {
                        done.store(true, Ordering::SeqCst);
                        dirty.store(true, Ordering::SeqCst);
                    }));
                    Retry {
                        config: server.clone(),
                        auth,
                        authorized,
                    }
                });
                (list_changed, catalog_changed, retry)
            })
            .collect();
        let attempts = servers
            .iter()
            .zip(&prepared)
            .map(|(server, (list, catalog, retry))| {
                let hooks = hooks(
                    list,
                    catalog,
                    &dirty,
                    retry.as_ref().map(|r| r.auth.clone()),
                    options.elicitor.clone(),
                );
                attempt(server, &options, hooks)
            });
        let results = futures::future::join_all(attempts).await;
        let slots = servers
            .iter()
            .zip(results)
            .zip(prepared)
            .map(|((server, result), (list_changed, catalog_changed, retry))| {
                let state = match result {
                    Ok((connection, tools, prompts)) => SlotState::Connected {
                        connection,
                        tools,
                        prompts,
                    },
                    Err(reason) => {
                        let reason = scrub(&reason);
                        tracing::warn!(server = %server.name, transport = %server.transport.kind(), %reason, "MCP server skipped");
                        SlotState::Failed(reason)
                    }
                };
                Slot {
                    name: server.name.clone(),
                    kind: server.transport.kind(),
                    state: Mutex::new(state),
                    list_changed,
                    catalog_changed,
                    closed: AtomicBool::new(false),
                    retry,
                }
            })
            .collect();
        Ok(Self::from_slots(slots, options, dirty))
    }

    /// Every configured server: transport, connected or failed (with the reason), and the
    /// names of its tools.
    pub fn status(&self) -> Vec<ServerStatus> {
        let tools = self.shared.tools();
        let resource_tools = self.shared.resource_tools();
        self.shared
            .slots
            .iter()
            .enumerate()
            .map(|(index, slot)| {
                let (state, pid) = match &*slot.state() {
                    SlotState::Connected { connection, .. } => {
                        (ServerState::Connected, connection.pid())
                    }
                    SlotState::Failed(reason) => (
                        ServerState::Failed {
                            reason: reason.clone(),
                        },
                        None,
                    ),
                };
                ServerStatus {
                    name: slot.name.clone(),
                    transport: slot.kind,
                    state,
                    tools: tools
                        .iter()
                        .filter(|t| t.slot == index)
                        .map(|t| t.name.clone())
                        .chain(
                            resource_tools
                                .iter()
                                .filter(|t| t.slot == index)
                                .map(|t| t.name.clone()),
                        )
                        .collect(),
                    pid,
                }
            })
            .collect()
    }

    /// The tools of the connected servers, as the agent gets them.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools = as_dyn(&self.shared.tools());
        tools.extend(
            self.shared
                .resource_tools()
                .iter()
                .map(|t| t.clone() as Arc<dyn Tool>),
        );
        tools
    }

    /// What is known about the MCP tool the model calls `name`.
    pub fn tool_info(&self, name: &str) -> Option<McpToolInfo> {
        let tools = self.shared.tools();
        let Some(tool) = tools.iter().find(|t| t.name == name) else {
            let resources = self.shared.resource_tools();
            let tool = resources.iter().find(|t| t.name == name)?;
            return Some(McpToolInfo {
                name: tool.name.clone(),
                server: tool.server.clone(),
                remote_name: tool.op.method().to_string(),
                title: None,
                read_only_hint: Some(true),
                destructive_hint: Some(false),
                open_world_hint: None,
                side_effect: SideEffect::Read,
            });
        };
        Some(McpToolInfo {
            name: tool.name.clone(),
            server: tool.server.clone(),
            remote_name: tool.remote.name.clone(),
            title: tool.remote.title.clone(),
            read_only_hint: tool.remote.hints.read_only,
            destructive_hint: tool.remote.hints.destructive,
            open_world_hint: tool.remote.hints.open_world,
            side_effect: tool.side_effect(),
        })
    }

    /// Whether no server is configured.
    pub fn is_empty(&self) -> bool {
        self.shared.slots.is_empty()
    }

    /// Applies what happened since the last call: a server that exited loses its tools,
    /// and a server that announced `notifications/tools/list_changed` is listed again
    /// (bounded by the connect timeout). Agents call this before every model call.
    pub async fn refresh(&self) {
        self.shared.refresh().await;
    }

    /// The prompts of the connected servers, in server order, for a host's slash commands
    /// (`/mcp__<server>__<prompt>`); see [`crate::prompts`].
    pub fn prompts(&self) -> Vec<McpPrompt> {
        let mut out = Vec::new();
        for slot in &self.shared.slots {
            if let SlotState::Connected { prompts, .. } = &*slot.state() {
                out.extend(prompts.iter().map(|p| McpPrompt::new(&slot.name, p)));
            }
        }
        out
    }

    /// The prompt whose slash command is `command` (with or without its `/`).
    pub fn find_prompt(&self, command: &str) -> Option<McpPrompt> {
        let command = command.trim().trim_start_matches('/');
        self.prompts().into_iter().find(|p| p.command == command)
    }

    /// Renders prompt `name` of server `server` with `arguments` (`prompts/get`): its
    /// messages, as agent messages.
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Vec<Message>, PromptError> {
        let failed = |message: String| PromptError::Failed {
            server: server.to_string(),
            prompt: name.to_string(),
            message: scrub(&message),
        };
        let index = self
            .shared
            .slots
            .iter()
            .position(|s| s.name == server)
            .ok_or_else(|| PromptError::Unknown(format!("{server}/{name}")))?;
        let connection = self.shared.connection(index).map_err(failed)?;
        let limit = self.shared.options.connect_timeout;
        match tokio::time::timeout(limit, connection.get_prompt(name, arguments)).await {
            Ok(Ok(remote)) => Ok(prompts::messages(remote)),
            Ok(Err(err)) => Err(failed(err.to_string())),
            Err(_) => Err(failed(format!("no answer within {} ms", limit.as_millis()))),
        }
    }

    /// Expands a slash command line `/mcp__<server>__<prompt> words…` into the prompt's
    /// messages, its words filling the prompt's arguments in order (the last one takes the
    /// rest; quotes group words). `None` when the line is not an MCP prompt's command.
    pub async fn expand_slash_command(
        &self,
        line: &str,
    ) -> Option<Result<Vec<Message>, PromptError>> {
        let line = line.trim_start();
        let rest = line.strip_prefix('/')?;
        if !rest.starts_with("mcp__") {
            return None;
        }
        let (command, text) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        let Some(prompt) = self.find_prompt(command) else {
            return Some(Err(PromptError::Unknown(format!("/{command}"))));
        };
        let arguments = match prompt.bind(&prompts::split_arguments(text)) {
            Ok(arguments) => arguments,
            Err(err) => return Some(Err(err)),
        };
        Some(
            self.get_prompt(&prompt.server, &prompt.name, arguments)
                .await,
        )
    }

    /// Closes every connection and ends the server processes (each gets a moment to exit
    /// after its stdin closes, then its process group is killed). The servers report
    /// failed ("shut down") afterwards.
    pub async fn shutdown(&self) {
        let connections: Vec<Arc<dyn Connection>> = self
            .shared
            .slots
            .iter()
            .filter_map(|slot| {
                let mut state = slot.state();
                match std::mem::replace(&mut *state, SlotState::Failed("shut down".into())) {
                    SlotState::Connected { connection, .. } => Some(connection),
                    SlotState::Failed(reason) => {
                        *state = SlotState::Failed(reason);
                        None
                    }
                }
            })
            .collect();
        futures::future::join_all(connections.iter().map(|c| c.close())).await;
        self.shared.rebuild();
    }
}

#[async_trait]
impl ToolSource for McpManager {
    fn generation(&self) -> u64 {
        self.shared.generation.load(Ordering::SeqCst)
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        McpManager::tools(self)
    }

    async fn refresh(&self) {
        McpManager::refresh(self).await;
    }
}

/// Registers a server's credentials (sensitive headers, sensitive environment values) so
/// that tool output, logs and error messages of this process hide them.
fn register_secrets(server: &McpServerConfig) {
    let register = |value: &str| {
        agent_core::secrets::register_secret(value);
        // `Bearer <token>`: the token alone too.
        if let Some((_, token)) = value.trim().split_once(' ') {
            agent_core::secrets::register_secret(token);
        }
    };
    match &server.transport {
        McpTransport::Stdio { env, .. } => {
            for (name, value) in &env.0 {
                if agent_core::secrets::is_sensitive_name(name) {
                    register(value.expose_secret());
                }
            }
        }
        McpTransport::Http { headers, url, .. } | McpTransport::Sse { headers, url } => {
            if let McpTransport::Http {
                oauth: Some(oauth), ..
            } = &server.transport
            {
                if let Some(secret) = &oauth.client_secret {
                    agent_core::secrets::register_secret(secret.expose_secret());
                }
            }
            for secret in crate::config::url_secrets(url) {
                agent_core::secrets::register_secret(&secret);
            }
            for (name, value) in &headers.0 {
                let lower = name.to_ascii_lowercase();
                if agent_core::secrets::is_sensitive_name(name)
                    || matches!(lower.as_str(), "cookie" | "proxy-authorization")
                    || lower.contains("key")
                {
                    register(value.expose_secret());
                }
            }
        }
    }
}

/// `work`, unless it runs longer than `limit` outside an OAuth authorization that waits for
/// the user (`authorizing` true): that wait, bounded by the callback timeout, does not count,
/// and `limit` starts again after it.
async fn bounded<T>(
    limit: Duration,
    work: impl std::future::Future<Output = T>,
    authorizing: Option<tokio::sync::watch::Receiver<bool>>,
) -> Option<T> {
    tokio::pin!(work);
    let mut deadline = tokio::time::Instant::now() + limit;
    loop {
        tokio::select! {
            result = &mut work => return Some(result),
            _ = tokio::time::sleep_until(deadline) => {}
        }
        let Some(flag) = &authorizing else {
            return None;
        };
        let mut flag = flag.clone();
        if !*flag.borrow_and_update() {
            return None;
        }
        loop {
            tokio::select! {
                result = &mut work => return Some(result),
                changed = flag.changed() => {
                    if changed.is_err() || !*flag.borrow_and_update() {
                        break;
                    }
                }
            }
        }
        deadline = tokio::time::Instant::now() + limit;
    }
}

fn scrub(text: &str) -> String {
    agent_tools::scrub_secrets_cow(text).into_owned()
}

/// Reading a resource by its URI, for a front end's mention of it (ACP `resource_link`).
impl McpManager {
    /// `resources/read` of `uri`, asked of each connected server that offers resources in
    /// turn (each bounded by [`McpOptions::call_timeout`]): the first that answers with
    /// contents gives `(server, result)`, the result as the server sent it
    /// (`{contents: [{uri, mimeType?, text | blob}]}`). Without such an answer, why: no
    /// server offers resources, or each server's error.
    pub async fn read_resource(&self, uri: &str) -> Result<(String, Value), String> {
        let readers: Vec<(String, usize)> = self
            .shared
            .resource_tools()
            .iter()
            .filter(|t| t.op == ResourceOp::Read)
            .map(|t| (t.server.clone(), t.slot))
            .collect();
        if readers.is_empty() {
            return Err("no MCP server of the session offers resources".to_string());
        }
        let mut failures = Vec::new();
        for (server, slot) in readers {
            let connection = match self.shared.connection(slot) {
                Ok(connection) => connection,
                Err(reason) => {
                    failures.push(format!("{server}: not connected ({reason})"));
                    continue;
                }
            };
            let read = connection.read_resource(uri);
            let answer = match self.shared.options.call_timeout {
                Some(limit) => match tokio::time::timeout(limit, read).await {
                    Ok(answer) => answer,
                    Err(_) => Err(ClientError::Failed(format!(
                        "no answer within {} s",
                        limit.as_secs()
                    ))),
                },
                None => read.await,
            };
            match answer {
                Ok(result)
                    if result
                        .get("contents")
                        .and_then(Value::as_array)
                        .is_some_and(|c| !c.is_empty()) =>
                {
                    return Ok((server, result))
                }
                Ok(_) => failures.push(format!("{server}: no contents")),
                Err(err) => {
                    if matches!(err, ClientError::Closed(_)) {
                        self.shared.mark_closed(slot);
                    }
                    failures.push(format!("{server}: {}", scrub(&err.to_string())));
                }
            }
        }
        Err(failures.join("; "))
    }
}
