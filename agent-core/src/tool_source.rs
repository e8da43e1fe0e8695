//! [`ToolSource`]: tools that may change between model calls (MCP servers, plugins).
//!
//! An agent's own tools ([`crate::AgentBuilder::tool`]) are fixed when it is built. A tool
//! source is consulted before every model call instead: the loop awaits
//! [`ToolSource::refresh`], reads [`ToolSource::generation`], and rebuilds the tool specs it
//! offers the model only when a generation changed. An agent without sources pays nothing.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::provider::ToolSpec;
use crate::tool::Tool;

/// A set of tools that can change while an agent lives.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::{Arc, Mutex};
/// use agent_core::{async_trait, Tool, tool_source::ToolSource};
///
/// /// Tools a host swaps at runtime.
/// #[derive(Default)]
/// struct Swappable {
///     generation: AtomicU64,
///     tools: Mutex<Vec<Arc<dyn Tool>>>,
/// }
///
/// impl Swappable {
///     fn set(&self, tools: Vec<Arc<dyn Tool>>) {
///         *self.tools.lock().unwrap() = tools;
///         self.generation.fetch_add(1, Ordering::Release);
///     }
/// }
///
/// #[async_trait]
/// impl ToolSource for Swappable {
///     fn generation(&self) -> u64 {
///         self.generation.load(Ordering::Acquire)
///     }
///     fn tools(&self) -> Vec<Arc<dyn Tool>> {
///         self.tools.lock().unwrap().clone()
///     }
/// }
/// ```
#[async_trait]
pub trait ToolSource: Send + Sync + 'static {
    /// A number that changes whenever [`ToolSource::tools`] would return a different set.
    /// Read before every model call, so it must be cheap (an atomic load).
    fn generation(&self) -> u64;

    /// The current tools. Called only after the generation changed.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;

    /// Applies pending changes before a model call (for example, lists again the tools of
    /// a server that announced a change). The loop awaits it, so it must bound its own
    /// wait; an abort of the run stops waiting for it. The default does nothing.
    async fn refresh(&self) {}
}

/// The tools of an agent's sources, rebuilt only when a generation changed.
#[derive(Default)]
pub(crate) struct DynamicTools {
    sources: Vec<Arc<dyn ToolSource>>,
    cache: Mutex<Option<Snapshot>>,
}

/// The sources' tools as of `generations`.
#[derive(Clone)]
struct Snapshot {
    generations: Vec<u64>,
    tools: Arc<[Arc<dyn Tool>]>,
    specs: Arc<[ToolSpec]>,
}

impl DynamicTools {
    pub(crate) fn new(sources: Vec<Arc<dyn ToolSource>>) -> Self {
        Self {
            sources,
            cache: Mutex::new(None),
        }
    }

    /// The same sources with an empty cache (for a fork).
    pub(crate) fn fork(&self) -> Self {
        Self::new(self.sources.clone())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// Awaits every source's [`ToolSource::refresh`].
    pub(crate) async fn refresh(&self) {
        for source in &self.sources {
            source.refresh().await;
        }
    }

    /// The current snapshot; `is_static` tells names that belong to the agent's own tools
    /// (those win over a source's tool of the same name, and the first source wins over
    /// later ones).
    fn snapshot(&self, is_static: &dyn Fn(&str) -> bool) -> Snapshot {
        let generations: Vec<u64> = self.sources.iter().map(|s| s.generation()).collect();
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(snapshot) = cache.as_ref() {
            if snapshot.generations == generations {
                return snapshot.clone();
            }
        }
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        for tool in self.sources.iter().flat_map(|s| s.tools()) {
            let name = tool.name();
            if is_static(name) || tools.iter().any(|t| t.name() == name) {
                tracing::warn!(tool = %name, "a tool source's tool shadows another tool; ignored");
                continue;
            }
            tools.push(tool);
        }
        let specs = tools.iter().map(|t| t.spec()).collect();
        let snapshot = Snapshot {
            generations,
            tools: tools.into(),
            specs,
        };
        *cache = Some(snapshot.clone());
        snapshot
    }

    /// The sources' tool specs.
    pub(crate) fn specs(&self, is_static: &dyn Fn(&str) -> bool) -> Arc<[ToolSpec]> {
        self.snapshot(is_static).specs
    }

    /// The sources' tool called `name`.
    pub(crate) fn tool(
        &self,
        name: &str,
        is_static: &dyn Fn(&str) -> bool,
    ) -> Option<Arc<dyn Tool>> {
        self.snapshot(is_static)
            .tools
            .iter()
            .find(|t| t.name() == name)
            .cloned()
    }
}
