//! [`ToolSet`]: the default tools, name filters, and custom tools.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_core::tool::ToolWrapper;
use agent_core::{async_trait, Tool, ToolContext, ToolError, ToolOutput};
use serde_json::Value;

use crate::ask::{AskUser, QuestionChannel};
use crate::bash::Bash;
use crate::catalogue::Catalogue;
use crate::common::ToolsConfig;
use crate::fs::{EditFile, ReadFile, WriteFile};
use crate::image::ViewImage;
use crate::patch::ApplyPatch;
use crate::plan::Plan;
use crate::scrub::finish_output;
use crate::search::{Glob, Grep, ListDir};
use crate::web::{Clients, SearchBackend, WebFetch, WebPages, WebSearch};

/// A name filter named a tool that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolSetError {
    /// The name is not a tool of this set.
    #[error("unknown tool {name:?}; available tools: {available}")]
    UnknownTool {
        /// The unknown name.
        name: String,
        /// Comma-separated names of the tools that exist.
        available: String,
    },
}

/// An ordered set of tools for one workspace.
///
/// ```
/// use agent_tools::ToolSet;
///
/// let tools = ToolSet::defaults("/tmp/project")
///     .filter(None, &["bash".to_string(), "exec_command".into(), "write_stdin".into()])
///     .unwrap();
/// assert_eq!(
///     tools.names(),
///     [
///         "read_file", "write_file", "edit_file", "apply_patch", "list_dir", "glob", "grep",
///         "view_image", "plan", "web_fetch"
///     ]
/// );
/// ```
#[derive(Clone)]
pub struct ToolSet {
    config: Arc<ToolsConfig>,
    tools: Vec<Arc<dyn Tool>>,
    /// Whose names the tools have (its capabilities are kept or dropped whole).
    catalogue: Catalogue,
    /// The live processes of `exec_command`, when the set has it.
    #[cfg(unix)]
    exec: Option<crate::exec::ExecSessions>,
}

impl Default for ToolSet {
    /// An empty set for the process's current directory.
    fn default() -> Self {
        Self::empty(".")
    }
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSet")
            .field("workspace", &self.config.workspace.root())
            .field("tools", &self.names())
            .finish()
    }
}

impl ToolSet {
    /// The default coding tools confined to `workspace`: read_file, write_file, edit_file,
    /// apply_patch, list_dir, glob, grep, view_image, bash, exec_command and write_stdin (on
    /// Unix), plan and web_fetch.
    pub fn defaults(workspace: impl Into<PathBuf>) -> Self {
        Self::with_config(ToolsConfig::new(workspace))
    }

    /// The default tools with explicit settings (output cap, extra roots, bash timeout).
    pub fn with_config(config: ToolsConfig) -> Self {
        Self::build_from(config, None)
    }

    /// Zero's catalogue ([`Catalogue::Zero`]) for `workspace`, with `web_search` when Zero's
    /// variables configure a backend.
    pub fn zero(workspace: impl Into<PathBuf>) -> Self {
        Self::builder(workspace)
            .catalogue(Catalogue::Zero)
            .web_search(SearchBackend::from_env())
            .build()
    }

    /// zut's catalogue ([`Catalogue::Zut`]) for `workspace`, with `web_search` when a backend
    /// is configured (Zero's variables).
    pub fn zut(workspace: impl Into<PathBuf>) -> Self {
        Self::builder(workspace)
            .catalogue(Catalogue::Zut)
            .web_search(SearchBackend::from_env())
            .build()
    }

    fn build_from(config: ToolsConfig, web_search: Option<SearchBackend>) -> Self {
        Self::build_catalogue(config, web_search, None, Catalogue::Sdk)
    }

    fn build_catalogue(
        config: ToolsConfig,
        web_search: Option<SearchBackend>,
        questions: Option<Arc<dyn QuestionChannel>>,
        catalogue: Catalogue,
    ) -> Self {
        let config = Arc::new(config);
        // One HTTP client for every web tool of the set, built on first use.
        let clients = Arc::<Clients>::default();
        let mut tools: Vec<Arc<dyn Tool>> = vec![
            Arc::new(ReadFile::new(config.clone())),
            Arc::new(WriteFile::new(config.clone())),
            Arc::new(EditFile::new(config.clone())),
            Arc::new(ApplyPatch::new(config.clone())),
            Arc::new(ListDir::new(config.clone())),
            Arc::new(Glob::new(config.clone())),
            Arc::new(Grep::new(config.clone())),
            Arc::new(ViewImage::new(config.clone())),
            Arc::new(Bash::new(config.clone())),
            Arc::new(Plan::new(config.clone())),
            Arc::new(WebFetch::with_clients(config.clone(), clients.clone())),
        ];
        #[cfg(unix)]
        let sessions = {
            let (exec, stdin) = crate::exec::exec_tools(config.clone());
            let sessions = exec.sessions().clone();
            let at = tools
                .iter()
                .position(|t| t.name() == "bash")
                .map_or(tools.len(), |i| i + 1);
            tools.insert(at, Arc::new(stdin));
            tools.insert(at, Arc::new(exec));
            sessions
        };
        match web_search {
            // zut's web capability: web_search with references, web_open, web_find and
            // web_click over one page store, together.
            Some(backend) if catalogue == Catalogue::Zut => tools.extend(crate::web::browse_tools(
                config.clone(),
                backend,
                WebPages::new(),
                clients,
            )),
            Some(backend) => tools.push(Arc::new(WebSearch::new(config.clone(), backend))),
            None => {}
        }
        // Zero always has ask_user (without a channel it tells the model nobody can answer).
        if questions.is_some() || catalogue == Catalogue::Zero {
            tools.push(Arc::new(AskUser::new(questions)));
        }
        let tools = crate::catalogue::arrange(catalogue, tools);
        Self {
            config,
            tools,
            catalogue,
            #[cfg(unix)]
            exec: Some(sessions),
        }
    }

    /// A builder for the default tools with non-default settings.
    pub fn builder(workspace: impl Into<PathBuf>) -> ToolSetBuilder {
        ToolSetBuilder {
            config: ToolsConfig::new(workspace),
            web_search: None,
            questions: None,
            catalogue: Catalogue::Sdk,
        }
    }

    /// An empty set (for `--no-tools`).
    pub fn empty(workspace: impl Into<PathBuf>) -> Self {
        Self {
            config: Arc::new(ToolsConfig::new(workspace)),
            tools: Vec::new(),
            catalogue: Catalogue::Sdk,
            #[cfg(unix)]
            exec: None,
        }
    }

    /// Adds a tool of your own (replacing a tool of the same name). Its output is scrubbed
    /// of secrets and capped at [`ToolsConfig::full_output_cap`] like `bash`'s: the agent
    /// loop cuts it for the model and spills the whole to a file.
    pub fn with(mut self, tool: impl Tool) -> Self {
        self.push(Arc::new(tool));
        self
    }

    /// Adds a shared tool (replacing a tool of the same name). Its output is scrubbed of
    /// secrets and capped like [`ToolSet::with`]'s.
    pub fn push(&mut self, tool: Arc<dyn Tool>) {
        self.tools.retain(|t| t.name() != tool.name());
        self.tools.push(Arc::new(Guarded {
            inner: tool,
            cap: self.config.full_output_cap,
        }));
    }

    /// Keeps only the tools named in `enabled` (when given) and drops those in `disabled`.
    /// Unknown names are an error naming the tools that exist. A tool of a capability the
    /// catalogue offers whole ([`Catalogue::group`]: zut's `web_search`, `web_open`,
    /// `web_find`, `web_click`) stands for all of it.
    pub fn filter(
        mut self,
        enabled: Option<&[String]>,
        disabled: &[String],
    ) -> Result<Self, ToolSetError> {
        for name in enabled.into_iter().flatten().chain(disabled) {
            if !self.tools.iter().any(|t| t.name() == name) {
                return Err(ToolSetError::UnknownTool {
                    name: name.clone(),
                    available: self.names().join(", "),
                });
            }
        }
        let catalogue = self.catalogue;
        let names = |name: &str, list: &[String]| {
            let group = catalogue.group(name).unwrap_or_default();
            list.iter()
                .any(|n| n == name || group.contains(&n.as_str()))
        };
        if let Some(enabled) = enabled {
            self.tools.retain(|t| names(t.name(), enabled));
        }
        self.tools.retain(|t| !names(t.name(), disabled));
        Ok(self)
    }

    /// Tool names in order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name()).collect()
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// The tools.
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    /// The tools, for [`agent_core::AgentBuilder::tools`].
    pub fn into_tools(self) -> Vec<Arc<dyn Tool>> {
        self.tools
    }

    /// The workspace root.
    pub fn workspace(&self) -> &Path {
        self.config.workspace.root()
    }

    /// The settings the built-in tools use.
    pub fn config(&self) -> &ToolsConfig {
        &self.config
    }

    /// The live processes of this set's `exec_command` (none when the set has no
    /// `exec_command`). They are killed, with their process groups, when the last tool
    /// sharing them is dropped, or by [`ExecSessions::stop_all`](crate::ExecSessions::stop_all).
    #[cfg(unix)]
    pub fn exec_sessions(&self) -> Option<&crate::exec::ExecSessions> {
        self.exec.as_ref()
    }
}

/// Builds a [`ToolSet`] of the default tools with non-default settings.
#[derive(Clone)]
pub struct ToolSetBuilder {
    config: ToolsConfig,
    web_search: Option<SearchBackend>,
    questions: Option<Arc<dyn QuestionChannel>>,
    catalogue: Catalogue,
}

impl std::fmt::Debug for ToolSetBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSetBuilder")
            .field("config", &self.config)
            .field("web_search", &self.web_search)
            .field("questions", &self.questions.is_some())
            .field("catalogue", &self.catalogue)
            .finish()
    }
}

impl ToolSetBuilder {
    /// Output cap in bytes of the tools that page (default 10240; see
    /// [`ToolsConfig::output_cap`]).
    pub fn output_cap(mut self, bytes: usize) -> Self {
        self.config.output_cap = bytes;
        self
    }

    /// Cap in bytes of the whole output of `bash` and custom tools (default 8 MiB; see
    /// [`ToolsConfig::full_output_cap`]).
    pub fn full_output_cap(mut self, bytes: usize) -> Self {
        self.config.full_output_cap = bytes;
        self
    }

    /// Also lets file tools touch paths under `root`.
    pub fn allow_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.config.workspace = self.config.workspace.allow_root(root);
        self
    }

    /// Default `bash` timeout (default 120 s).
    pub fn bash_timeout(mut self, timeout: Duration) -> Self {
        self.config.bash_timeout = timeout;
        self
    }

    /// Offers `web_search` over `backend` (none: `web_search` is not offered). Zero's
    /// variables configure one: [`SearchBackend::from_env`].
    pub fn web_search(mut self, backend: Option<SearchBackend>) -> Self {
        self.web_search = backend;
        self
    }

    /// Offers `ask_user`, asking through `channel`.
    pub fn questions(mut self, channel: Arc<dyn QuestionChannel>) -> Self {
        self.questions = Some(channel);
        self
    }

    /// Offers the tools under `catalogue`'s names and argument shapes (default
    /// [`Catalogue::Sdk`]).
    pub fn catalogue(mut self, catalogue: Catalogue) -> Self {
        self.catalogue = catalogue;
        self
    }

    /// The settings.
    pub fn config(self) -> ToolsConfig {
        self.config
    }

    /// The default tools.
    pub fn build(self) -> ToolSet {
        ToolSet::build_catalogue(self.config, self.web_search, self.questions, self.catalogue)
    }

    /// An empty set with these settings, for custom tools only.
    pub fn build_empty(self) -> ToolSet {
        ToolSet {
            config: Arc::new(self.config),
            tools: Vec::new(),
            catalogue: self.catalogue,
            #[cfg(unix)]
            exec: None,
        }
    }
}

/// Applies the tool-boundary rules (secret scrubbing, output cap) to a custom tool.
struct Guarded {
    inner: Arc<dyn Tool>,
    cap: usize,
}

#[async_trait]
impl ToolWrapper for Guarded {
    fn inner(&self) -> &dyn Tool {
        &*self.inner
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let output = self.inner.call(args, ctx).await?;
        Ok(finish_output(output, self.cap))
    }
}
